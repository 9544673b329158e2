package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// Sentinel errors of commands. The wrapped message says what to do.
var (
	ErrNotRunning   = errors.New("engine: job is not running")
	ErrUnknown      = errors.New("engine: unknown operator, subtask or TaskManager")
	ErrBadCommand   = errors.New("engine: bad command")
	ErrRescale      = errors.New("engine: cannot rescale")
	ErrCheckpoint   = errors.New("engine: cannot trigger checkpoint")
	ErrClosed       = errors.New("engine: closed")
	ErrJobTerminal  = errors.New("engine: job has reached a terminal state")
	ErrStepperLimit = errors.New("engine: step limit reached before the condition held")
)

// driver is what the core needs from the Stepper or the Live driver.
type driver interface {
	now() time.Duration
	// startTasks begins running a deployed execution (Live: goroutines).
	startTasks(ex *execution)
	// stopTasks stops an execution's subtasks and returns when none runs.
	stopTasks(ex *execution)
	// wake tells a subtask it has a control message.
	wake(t *subtask)
	// after fires tm in the JobManager's context d from now.
	after(d time.Duration, tm timer)
	// cancelTimer removes pending timers equal to tm (none: nothing happens).
	cancelTimer(tm timer)
	// sendJM delivers a subtask's message to the JobManager.
	sendJM(m jmMsg)
	// stopTask stops one subtask (a region failover) and returns when it
	// no longer runs; startTask runs a new attempt of one.
	stopTask(t *subtask)
	startTask(t *subtask)
}

// Options configure a driver.
type Options struct {
	// Dir holds the TaskManagers' local disks and the checkpoint directory
	// (fs and pebble backends). Empty: a temporary directory removed by Close.
	Dir string
	// Logger receives diagnostics (and Pebble's log); nil discards them.
	Logger *slog.Logger
	// RecordEvents, when set, receives every event synchronously, in order.
	RecordEvents func(Event)
	// FS is the file system of the checkpoint directory and the
	// TaskManagers' task-local state (nil: the real disk). Tests pass a
	// state.ErrorFS to inject disk faults.
	FS state.FileSystem
	// SnapshotStall, when set, is a fault for tests: how long the
	// synchronous part of task's snapshot for checkpoint id stalls (0: not
	// at all), so that the checkpoint can be made to expire. The Stepper
	// adds it to the snapshot's modelled duration, during which the subtask
	// does nothing else; Live sleeps on the subtask's goroutine. The
	// conformance tests stall the same subtask's snapshot as flinkref stalls
	// it inside Flink (AbstractStreamOperator.snapshotState).
	SnapshotStall func(task string, checkpoint int64) time.Duration
	// SkipCheckpoint, when set, is a fault for tests: a source subtask for
	// which it returns true takes no part in that checkpoint. Its trigger is
	// dropped: no snapshot, no barrier, no acknowledgement and no decline,
	// so downstream sees its barrier n+1 with no barrier n before it. Flink
	// does this with a source whose reader is an
	// ExternallyInducedSourceReader that never induces checkpoint n:
	// SourceOperatorStreamTask keeps n's trigger as untriggered and drops it
	// (cleanupOldCheckpoints) once the reader induced n+1. The conformance
	// tests skip the same checkpoint at the same source on both.
	SkipCheckpoint func(task string, checkpoint int64) bool
}

// core is the job and its cluster: the JobManager (scheduler, checkpoint
// coordinator, failover, rescale), the TaskManagers, the external topic and
// sink systems, and the current execution.
//
// Ownership, in one rule: core's fields belong to the JobManager, which is
// one caller at a time — the Stepper's goroutine under Stepper.mu, or on
// Live the JobManager loop, commands and snapshots under Live.mu — except
// the restore figures a subtask reports from its own goroutine, which
// restoreMu guards; everything else a subtask shares with the JobManager
// passes through its control mailbox (subtask.ctlMu), the JobManager's
// mailbox (Live.qmu) or atomics.
type core struct {
	spec    *JobSpec
	opIndex map[string]int
	topics  map[string]*topic
	sinks   map[string]*sinkStore
	storage state.CheckpointStorage
	logger  *slog.Logger
	dir     string
	ownDir  bool
	bus     *bus
	drv     driver
	seq     atomic.Int64
	verbose bool
	// restoreMu guards what subtasks report about their restore from their
	// own goroutines: counters.Restores, coord.counts.Restored,
	// coord.latestRestore and the execution's restore progress.
	restoreMu sync.Mutex
	// measure: durations are measured on the clock (Live) instead of modelled (Stepper).
	measure bool
	stepFn  func() int64

	status  JobStatus
	attempt int
	// restart is the effective restart strategy and rs its state.
	restart  RestartSpec
	rs       restartState
	cfm      checkpointFailureManager
	ex       *execution
	par      map[string]int
	tms      []*taskManager
	failures int
	counters Counters
	waiting  bool
	// slotDeadline is when a job waiting for slots fails.
	slotDeadline time.Duration
	coord        coordinator
	rescaling    *rescaleOp
	terminal     bool
	injected     map[string]int
	// batch and chanCap are the driver's batch size and channel capacity
	// unless the spec sets them.
	batch   int
	chanCap int
	cmdLog  []LoggedCommand
	// recoverable lists the savepoints failover may restore: those the job
	// was restored from.
	recoverable map[int64]bool
	// restoreOverride is the checkpoint a restore command asked for (0:
	// none); ignored are the checkpoints of the job before that restore,
	// which its failovers never use (a job run with -s starts its own
	// checkpoint history).
	restoreOverride int64
	ignored         map[int64]bool
	// regions are the region failovers waiting for their restart delay,
	// oldest first, and versions the subtasks' modification counts
	// (region.go; Flink's ExecutionVertexVersioner).
	regions     []*regionPending
	versions    map[string]int
	regionEpoch int
	// prevSlots are the slots the previous execution's subtasks held, by
	// subtask index, when a restart prefers them (local recovery, region.go).
	prevSlots map[int]prevSlot
	// fsys is Options.FS (nil: the real disk).
	fsys       state.FileSystem
	truthCache map[string]truth
	cmpCache   map[string]cmpEntry
	offCache   offsetsCache

	// snapshotStall is Options.SnapshotStall (nil: none).
	snapshotStall func(task string, checkpoint int64) time.Duration
	// skipCheckpoint is Options.SkipCheckpoint (nil: none).
	skipCheckpoint func(task string, checkpoint int64) bool
	// commits counts what two-phase-commit sinks committed (restore.go).
	commits commitLedger
}

// offsetsCache holds the source offsets of the newest retained checkpoint.
type offsetsCache struct {
	id  int64
	off map[string]map[int]int64
}

type rescaleOp struct {
	operator  string
	from, to  int
	phase     string // savepoint, stopping, restoring
	savepoint int64
	reactive  bool
	target    map[string]int
}

func newCore(spec *JobSpec, opts Options) (*core, error) {
	if spec == nil {
		return nil, fmt.Errorf("%w: no spec", ErrInvalidSpec)
	}
	s := spec.Clone()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	c := &core{spec: s, opIndex: map[string]int{}, topics: map[string]*topic{}, sinks: map[string]*sinkStore{},
		logger: opts.Logger, bus: newBus(), par: map[string]int{}, status: JobCreated, injected: map[string]int{},
		recoverable: map[int64]bool{}}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	c.bus.record = opts.RecordEvents
	c.restart = s.Effective()
	c.dir = opts.Dir
	if c.dir == "" {
		d, err := os.MkdirTemp("", "statelab-engine-")
		if err != nil {
			return nil, fmt.Errorf("create engine directory: %w", err)
		}
		c.dir, c.ownDir = d, true
	}
	for i, o := range s.Operators {
		c.opIndex[o.ID] = i
		c.par[o.ID] = o.Parallelism
		opts, _ := parseOptions(&s.Operators[i])
		switch o.Kind {
		case KindSource:
			c.topics[o.ID] = newTopic(o.ID, s.Seed+int64(i)*7919, opts)
		case KindSink:
			c.sinks[o.ID] = newSinkStore()
		}
	}
	// The job's name is for people and may hold anything (spaces, slashes);
	// its checkpoint directory gets a safe name derived from it, as Flink
	// names directories by the hex JobID and shows the name beside it.
	c.fsys = opts.FS
	c.snapshotStall = opts.SnapshotStall
	c.skipCheckpoint = opts.SkipCheckpoint
	cfg := state.StorageConfig{Kind: state.JobManagerStorage, JobID: state.SafeDirName(s.Name), Retained: s.Checkpointing.Retained,
		MaxStateSize: int64(s.Checkpointing.MaxStateBytes), FS: opts.FS}
	if s.Backend != BackendMemory {
		cfg.Kind = state.FileSystemStorage
		cfg.Dir = filepath.Join(c.dir, "checkpoints")
	}
	st, err := state.NewCheckpointStorage(cfg)
	if err != nil {
		c.cleanup()
		return nil, fmt.Errorf("create checkpoint storage: %w", err)
	}
	c.storage = st
	for range s.Cluster.TaskManagers {
		c.newTaskManager(s.Cluster.SlotsPerTaskManager)
	}
	c.coord.nextID = 1
	return c, nil
}

func (c *core) cleanup() {
	if c.ownDir {
		_ = os.RemoveAll(c.dir)
	}
}

func (c *core) newTaskManager(slots int) *taskManager {
	tm := &taskManager{id: fmt.Sprintf("tm-%d", len(c.tms)+1), slots: slots, alive: true}
	tm.localDir = filepath.Join(c.dir, "local", tm.id, "incarnation-0")
	c.tms = append(c.tms, tm)
	return tm
}

func (c *core) clock() time.Duration { return c.drv.now() }

func (c *core) nextSeq() int64 { return c.seq.Add(1) }

func (c *core) backendKind() state.BackendKind {
	switch c.spec.Backend {
	case BackendPebble:
		return state.Pebble
	case BackendFS:
		return state.FS
	}
	return state.Memory
}

// snapshotCost returns the synchronous and asynchronous durations of a
// snapshot: measured on the Live driver, modelled from the number of state
// writes since the last snapshot on the Stepper (never from byte sizes, which
// Pebble does not make deterministic).
func (c *core) snapshotCost(updates int64, start time.Duration) (sync, async time.Duration) {
	if c.measure {
		return c.clock() - start, 0
	}
	return 100*time.Microsecond + time.Duration(updates)*time.Microsecond,
		time.Millisecond + time.Duration(updates)*5*time.Microsecond
}

func (c *core) publish(e Event) {
	if e.At == 0 {
		e.At = c.clock()
	}
	if c.stepFn != nil {
		e.Step = c.stepFn()
	}
	c.commits.note(e)
	c.bus.publish(e)
}

// flushTaskEvents publishes the events a subtask produced.
func (c *core) flushTaskEvents(t *subtask) {
	for _, e := range t.events {
		c.publish(e)
	}
	clear(t.events)
	t.events = t.events[:0]
}

func (c *core) setJobStatus(s JobStatus, msg string) {
	if c.status == s {
		return
	}
	prev := c.status
	c.status = s
	if msg == "" {
		msg = fmt.Sprintf("job %s switched from %s to %s", c.spec.Name, prev, s)
	}
	c.publish(Event{Kind: EvJobStatus, Status: string(s), Previous: string(prev), Message: msg})
	if prev == JobRunning {
		// Flink's CheckpointCoordinatorDeActivator stops the checkpoint
		// scheduler when the job leaves RUNNING, which fails the queued
		// requests (CHECKPOINT_COORDINATOR_SUSPEND).
		c.dropQueuedRequests(fmt.Sprintf("the job is %s (CHECKPOINT_COORDINATOR_SUSPEND)", s))
	}
}

// --- scheduling ------------------------------------------------------------

// start schedules the job for the first time.
func (c *core) start() {
	c.publish(Event{Kind: EvJobStatus, Status: string(JobCreated), Message: fmt.Sprintf("job %s created (seed %d)", c.spec.Name, c.spec.Seed)})
	c.deploy()
	if iv := c.spec.Checkpointing.Interval.D(); iv > 0 {
		c.coord.nextPeriodic = c.clock() + iv
		c.drv.after(iv, timer{kind: timerPeriodic})
	}
}

func (c *core) aliveSlots() int {
	n := 0
	for _, tm := range c.tms {
		if tm.alive {
			n += tm.slots
		}
	}
	return n
}

// reactivePar is the parallelism reactive mode gives every operator.
func (c *core) reactivePar() map[string]int {
	slots := max(1, c.aliveSlots())
	out := map[string]int{}
	for _, o := range c.spec.Operators {
		out[o.ID] = min(slots, o.MaxParallelism)
	}
	return out
}

// deploy builds a new execution, restores it from the newest readable
// checkpoint (or the rescale's savepoint) and schedules it.
func (c *core) deploy() {
	if c.terminal {
		return
	}
	if c.spec.Cluster.Reactive && (c.rescaling == nil || c.rescaling.reactive) {
		c.par = c.reactivePar()
		if r := c.rescaling; r != nil {
			r.target, r.to = c.par, c.par[r.operator]
		}
	}
	c.prevSlots = nil
	if c.spec.Checkpointing.LocalRecovery && c.status == JobRestarting && c.ex != nil {
		c.prevSlots = previousSlots(c.ex)
	}
	if c.status == JobRestarting {
		// The restart the pending backoff led to happens now: a failure
		// from here on (a restore that fails, too) comes after it.
		c.rs.restarted = true
	}
	c.attempt++
	// A new execution: no region restart of the old one is pending.
	c.regions = nil
	ex := buildExecution(c, c.attempt, c.par)
	c.ex = ex
	for _, tp := range c.topics {
		tp.resetProgress()
	}
	// RESTARTING -> RUNNING before the state is restored, as Flink's
	// scheduler does: a restore that fails makes it RESTARTING (or FAILED)
	// again through the restart strategy.
	c.setJobStatus(JobRunning, "")
	restores, meta, err := c.planRestore(ex)
	if err != nil {
		c.restoreFailed(err)
		return
	}
	c.restoreOverride = 0
	if err := c.abortDanglingTransactions(meta, nil); err != nil {
		c.restoreFailed(err)
		return
	}
	for _, t := range ex.tasks {
		t.setStatus(TaskScheduled)
	}
	for _, t := range ex.tasks {
		t.pendingRestore = restores[t]
	}
	c.tryAllocate()
}

// tryAllocate places the execution's subtasks in slots once enough are free:
// subtask i of every operator goes to the same slot (slot sharing), the
// i-th free one, or with local recovery the one it held before (assignSlots).
func (c *core) tryAllocate() {
	ex := c.ex
	if ex == nil || c.terminal || (c.status != JobRunning && !c.regionRestarting()) {
		return
	}
	if ex.started {
		c.placeScheduled() // a restarted region (region.go)
		return
	}
	for _, t := range ex.tasks {
		if t.getStatus() != TaskScheduled {
			return
		}
	}
	need := slotsNeeded(c.par)
	var free []slotRef
	for _, tm := range c.tms {
		if tm.alive {
			for i := range tm.slots {
				free = append(free, slotRef{tm, i})
			}
		}
	}
	if len(free) < need {
		if !c.waiting {
			c.waiting = true
			// The default scheduler fails the job when its slot requests
			// are not fulfilled within slot.request.timeout; the restart
			// strategy decides what follows.
			to := c.spec.Cluster.SlotRequestTimeout.D()
			c.slotDeadline = c.clock() + to
			c.drv.after(to, timer{kind: timerSlotRequest, attempt: c.attempt})
			c.publish(Event{Kind: EvWaitingResources, Message: fmt.Sprintf("the job needs %d slots but the alive TaskManagers offer %d; it waits for resources (add or restart a TaskManager) at most %v (slot.request.timeout)", need, len(free), to)})
		}
		return
	}
	c.waiting = false
	slots := c.assignSlots(free, need)
	for _, t := range ex.tasks {
		s := slots[t.index]
		t.tm, t.slot = s.tm, s.idx
		t.verbose = c.verbose
		t.setStatus(TaskDeploying)
		t.sendCtl(control{kind: ctlDeploy, attempt: ex.attempt, restore: t.pendingRestore, seq: c.nextSeq(), localDir: t.tm.localDir})
		t.pendingRestore = nil
	}
	ex.started = true
	c.drv.startTasks(ex)
}

// planRestore picks the checkpoint to restore and computes every subtask's
// share: keyed state by key-group range intersection (rescale.NewPlan),
// operator state by Flink's round-robin repartitioner.
func (c *core) planRestore(ex *execution) (map[*subtask]*restoreSpec, *state.CheckpointMetadata, error) {
	meta, err := c.chooseCheckpoint()
	if err != nil {
		return nil, nil, err
	}
	if meta == nil {
		return nil, nil, nil
	}
	out, err := c.restoreSpecs(ex, meta)
	if err != nil {
		return nil, nil, err
	}
	if meta.Savepoint {
		c.recoverable[meta.CheckpointID] = true
	}
	// Counted when the subtasks have really restored it (restoreDone), not
	// now: a job waiting for slots has restored nothing yet.
	ex.restore = &RestoreStats{Checkpoint: meta.CheckpointID, Savepoint: meta.Savepoint}
	return out, meta, nil
}

// restoreSpecs computes every subtask's share of checkpoint meta: keyed
// state by key-group range intersection, operator state by Flink's
// round-robin repartitioner.
func (c *core) restoreSpecs(ex *execution, meta *state.CheckpointMetadata) (map[*subtask]*restoreSpec, error) {
	out := map[*subtask]*restoreSpec{}
	byOp, _ := mapStates(c.spec, meta)
	stats := &state.RecoveryStats{}
	c.restoreMu.Lock()
	ex.recovery = stats
	c.restoreMu.Unlock()
	for _, eo := range ex.ops {
		old := byOp[eo.spec.ID]
		if old == nil {
			continue // an operator the checkpoint does not know starts empty
		}
		if old.MaxParallelism != eo.maxPar {
			return nil, fmt.Errorf("operator %s: checkpoint %d has max parallelism %d, the job %d; max parallelism cannot change after the first checkpoint",
				eo.spec.ID, meta.CheckpointID, old.MaxParallelism, eo.maxPar)
		}
		oldOps := make([]*state.OperatorSnapshot, old.Parallelism)
		oldKeyed := make([]*state.KeyedStateHandle, old.Parallelism)
		for _, st := range old.Subtasks {
			if st.Subtask < old.Parallelism {
				oldOps[st.Subtask] = st.Operator
				oldKeyed[st.Subtask] = st.Keyed
			}
		}
		backends, err := state.RestoreOperatorBackends(oldOps, eo.parallelism)
		if err != nil {
			return nil, fmt.Errorf("operator %s: %w", eo.spec.ID, err)
		}
		var plan *rescale.Plan
		if eo.keyed() {
			p, err := rescale.NewPlan(eo.maxPar, old.Parallelism, eo.parallelism)
			if err != nil {
				return nil, fmt.Errorf("operator %s: %w", eo.spec.ID, err)
			}
			plan = &p
		}
		info := &RescaleInfo{Operator: eo.spec.ID, From: old.Parallelism, To: eo.parallelism, Plan: plan, Savepoint: meta.CheckpointID}
		for i, t := range eo.tasks {
			r := &restoreSpec{checkpoint: meta.CheckpointID, savepoint: meta.Savepoint, storage: c.storage, operator: backends[i]}
			if plan != nil {
				for _, rd := range plan.Subtasks[i].Reads {
					if h := oldKeyed[rd.OldSubtask]; h != nil {
						r.keyed = append(r.keyed, h)
						r.reads = append(r.reads, rd)
					}
				}
			}
			out[t] = r
			info.OperatorState = append(info.OperatorState, operatorStateStrings(backends[i]))
		}
		if old.Parallelism != eo.parallelism {
			c.publish(Event{Kind: EvRescalePlan, Operator: eo.spec.ID, Parallelism: eo.parallelism, Rescale: info,
				Message: rescalePlanMessage(info)})
		}
	}
	return out, nil
}

func rescalePlanMessage(info *RescaleInfo) string {
	msg := fmt.Sprintf("%s goes from %d to %d subtasks", info.Operator, info.From, info.To)
	if info.Plan != nil {
		msg += fmt.Sprintf("; %d of %d key groups move", len(info.Plan.Moved), info.Plan.MaxParallelism)
	}
	return msg
}

// abortDanglingTransactions aborts the sink transactions of the failed
// attempt that the restored checkpoint does not carry.
// Pending transactions that do not decode fail the restore
// (ErrCorruptCheckpoint) before anything is aborted.
func (c *core) abortDanglingTransactions(meta *state.CheckpointMetadata, only map[string]bool) error {
	keep := map[string]map[string]bool{}
	var byOp map[string]*state.OperatorState
	if meta != nil {
		byOp, _ = mapStates(c.spec, meta)
	}
	for _, o := range c.spec.Operators {
		if c.sinks[o.ID] == nil {
			continue
		}
		keep[o.ID] = map[string]bool{}
		if meta == nil {
			continue
		}
		if os := byOp[o.ID]; os != nil {
			err := decodeElements(meta, os, "pending-transactions", func(p pendingTxn) { keep[o.ID][p.ID] = true })
			if err != nil {
				return err
			}
		}
	}
	for _, o := range c.spec.Operators {
		store := c.sinks[o.ID]
		if store == nil {
			continue
		}
		for _, e := range store.abortAfterRestore(keep[o.ID], only) {
			e.Operator = o.ID
			c.publish(e)
		}
	}
	return nil
}

// --- messages from subtasks ----------------------------------------------------

// handleJM processes one message a subtask sent to the JobManager.
func (c *core) handleJM(m jmMsg) {
	if c.ex == nil || m.attempt != c.ex.attempt || c.terminal {
		return // from an execution that no longer exists
	}
	if m.task != nil && c.ex.byName[m.task.name] != m.task {
		return // from a subtask whose region has restarted since
	}
	switch m.kind {
	case jmRunning:
		if c.allTasks(TaskRunning) {
			c.onAllRunning()
		}
	case jmAck:
		c.coord.ack(c, m)
	case jmDecline:
		if p := c.coord.pending[m.id]; p != nil {
			why := m.failReason
			if why == "" {
				why = CheckpointDeclined
			}
			c.abortCheckpoint(p, why, fmt.Sprintf("%s declined: %s", m.task.name, m.reason))
		}
	case jmFailed:
		c.fail(m.task, m.reason)
	case jmFinished:
		if c.rescaling != nil && c.rescaling.phase == "stopping" && c.allTasks(TaskFinished) {
			c.finishStopWithSavepoint()
		}
	}
}

func (c *core) allTasks(s TaskStatus) bool {
	if c.ex == nil {
		return false
	}
	for _, t := range c.ex.tasks {
		if t.getStatus() != s {
			return false
		}
	}
	return true
}

// subtaskRestored is called by a subtask of ex (on its own goroutine on
// the Live driver) when it has opened its state. When the last subtask of an
// execution that restores a checkpoint has done so, the restore counts: the
// state is really back (Flink's "latest restore"). A job that waits for
// slots, or fails while initializing, has restored nothing.
func (c *core) subtaskRestored(ex *execution, now time.Duration) {
	c.restoreMu.Lock()
	defer c.restoreMu.Unlock()
	ex.initialized++
	if ex.restore == nil || ex.restoreCounted || ex.initialized < len(ex.tasks) {
		return
	}
	ex.restoreCounted = true
	r := *ex.restore
	r.RestoreTime = now
	if ex.recovery != nil {
		r.LocalBytes, r.RemoteBytes = ex.recovery.Local.Load(), ex.recovery.Remote.Load()
	}
	c.counters.Restores++
	c.coord.counts.Restored++
	c.coord.latestRestore = &r
}

func (c *core) onAllRunning() {
	if r := c.rescaling; r != nil && r.phase == "restoring" {
		c.rescaling = nil
		c.counters.Rescales++
		msg := fmt.Sprintf("rescale of %s from %d to %d subtasks completed", r.operator, r.from, r.to)
		if r.reactive {
			msg = "reactive mode rescaled the job to the available slots"
		}
		c.publish(Event{Kind: EvRescaleDone, Operator: r.operator, Parallelism: r.to, Message: msg})
	}
}

// taskFailed is called by a driver when a subtask's handler returned an error.
func (c *core) taskFailed(t *subtask, err error) {
	t.setFailure(err.Error())
	t.setStatus(TaskFailed)
	tm := ""
	if t.tm != nil {
		tm = t.tm.id
	}
	c.publish(Event{Kind: EvTaskFailed, Task: t.name, Operator: t.op.spec.ID, TaskManager: tm, Message: fmt.Sprintf("%s failed: %v", t.name, err)})
	c.failChain(t, err.Error())
}

// --- failover ---------------------------------------------------------------

// fail is a global failover: the job fails, every subtask is cancelled, and
// the restart strategy decides whether and when it restarts from the latest
// completed checkpoint.
func (c *core) fail(failed *subtask, reason string) {
	if c.terminal {
		return
	}
	if region := c.regionCandidate(failed); region != nil {
		c.failRegion(failed, region, "the pipelined region of "+failed.name, reason)
		return
	}
	c.failGlobal(failed, reason)
}

// failGlobal is a global failover (RestartAllFailoverStrategy): every
// subtask is cancelled and the job restarts as a whole.
func (c *core) failGlobal(failed *subtask, reason string) {
	c.regions = nil // a global failover takes the pending region restarts with it
	c.counters.Failovers++
	for _, p := range c.coord.pendingList() {
		c.abortCheckpoint(p, JobFailure, "the job failed: "+reason)
	}
	if r := c.rescaling; r != nil {
		switch r.phase {
		case "savepoint":
			c.rescaling = nil
			c.publish(Event{Kind: EvRescaleFailed, Operator: r.operator, Message: fmt.Sprintf("rescale of %s failed: the job failed before the savepoint completed", r.operator)})
		case "stopping":
			// The savepoint completed and holds the new parallelism's
			// starting point: the restart restores from it.
			r.phase = "restoring"
		}
	}
	c.cancelExecution(failed)
	c.failures++
	ok, delay := c.rs.notifyFailure(c.restart, c.clock(), c.spec.Seed)
	if !ok {
		c.giveUp(nil, reason)
		return
	}
	c.rs.lastDelay, c.rs.restartAt = delay, c.clock()+delay
	of := ""
	if m := c.restart.maxAttempts(); m > 0 {
		of = fmt.Sprintf(" of %d", m)
	}
	c.setJobStatus(JobRestarting, fmt.Sprintf("job %s restarts in %v (%s, restart %d%s): %s", c.spec.Name, delay, c.restart.Strategy, c.failures, of, reason))
	c.counters.Restarts++
	c.drv.after(delay, timer{kind: timerRestart, attempt: c.attempt})
}

// giveUp fails the job for good: the restart strategy refused. FAILING
// only on the way to FAILED, as Flink's scheduler does. failed is set when
// the execution still runs (it is cancelled here).
func (c *core) giveUp(failed *subtask, reason string) {
	c.setJobStatus(JobFailing, fmt.Sprintf("job %s is failing: %s", c.spec.Name, reason))
	if failed != nil {
		c.counters.Failovers++
		c.failures++
		for _, p := range c.coord.pendingList() {
			c.abortCheckpoint(p, JobFailure, "the job failed: "+reason)
		}
		c.cancelExecution(failed)
	}
	c.terminal = true
	c.rs.restartAt = 0
	c.setJobStatus(JobFailed, fmt.Sprintf("job %s failed: %s. Recovery is suppressed by %s: %s", c.spec.Name, reason, c.restart.className(), c.giveUpReason()))
}

// giveUpReason says why the restart strategy refused, naming the option a
// learner would change.
func (c *core) giveUpReason() string {
	r := c.restart
	switch r.Strategy {
	case RestartFixedDelay:
		return fmt.Sprintf("fixed-delay allows %d restart(s) (restart-strategy.fixed-delay.attempts)", r.Attempts)
	case RestartFailureRate:
		return fmt.Sprintf("more than %d failure(s) within %v (restart-strategy.failure-rate.max-failures-per-interval)", r.Attempts, r.Interval.D())
	case RestartExponentialDelay:
		return fmt.Sprintf("exponential-delay allows %d attempt(s) before the backoff resets (restart-strategy.exponential-delay.attempts-before-reset-backoff)", r.Attempts)
	}
	if c.spec.Restart.Strategy == RestartDefault {
		return "no restart strategy is configured and checkpointing is off, so Flink's default restart strategy is none (set restart-strategy.type, or enable periodic checkpoints for exponential-delay)"
	}
	return "the restart strategy is none"
}

// cancelExecution stops every subtask of the current execution and drops
// what is in flight.
func (c *core) cancelExecution(failed *subtask) {
	ex := c.ex
	if ex == nil {
		return
	}
	c.drv.stopTasks(ex)
	for _, t := range ex.tasks {
		switch t.getStatus() {
		case TaskFailed, TaskCanceled, TaskFinished:
		default:
			if t == failed {
				t.setStatus(TaskFailed)
			} else {
				t.setStatus(TaskCanceled)
			}
		}
		t.close()
		t.ctlMu.Lock()
		t.ctl = nil
		t.ctlMu.Unlock()
		c.flushTaskEvents(t)
		for _, a := range t.acks {
			if a.async != nil {
				a.async.Cancel()
			}
		}
		t.toJM, t.acks = nil, nil
	}
	for _, ch := range ex.channels {
		ch.drain()
		ch.blocked.Store(false)
	}
	c.waiting = false
	c.wipeLostDisks()
}

// --- commands ----------------------------------------------------------------

func (c *core) findTask(name string) (*subtask, error) {
	if c.ex != nil {
		if t := c.ex.byName[name]; t != nil {
			return t, nil
		}
	}
	return nil, fmt.Errorf("%w: no subtask %q (subtasks are named like count#0)", ErrUnknown, name)
}

func (c *core) findTM(id string) (*taskManager, error) {
	for _, tm := range c.tms {
		if tm.id == id {
			return tm, nil
		}
	}
	return nil, fmt.Errorf("%w: no TaskManager %q", ErrUnknown, id)
}

func live(s TaskStatus) bool {
	return s == TaskDeploying || s == TaskInitializing || s == TaskRunning
}

func (c *core) crashSubtask(name string) error {
	t, err := c.findTask(name)
	if err != nil {
		return err
	}
	if !live(t.getStatus()) {
		return fmt.Errorf("%w: %s is %s, only a deploying, initializing or running subtask can crash", ErrNotRunning, name, t.getStatus())
	}
	c.counters.Crashes++
	t.setFailure("crashed")
	c.publish(Event{Kind: EvTaskFailed, Task: t.name, Operator: t.op.spec.ID, TaskManager: t.tm.id, Message: fmt.Sprintf("%s crashed", t.name)})
	c.failChain(t, fmt.Sprintf("%s crashed", t.name))
	c.fail(t, fmt.Sprintf("%s crashed", t.name))
	return nil
}

func (c *core) crashTaskManager(id string) error {
	tm, err := c.findTM(id)
	if err != nil {
		return err
	}
	if !tm.alive {
		return fmt.Errorf("%w: %s is already lost; restart it first", ErrBadCommand, id)
	}
	c.counters.Crashes++
	tm.alive = false
	tm.lostDirs = append(tm.lostDirs, tm.localDir)
	hb, why := heartbeatNotice(c.spec.Cluster, c.clock())
	tm.notice = why
	var dead []string
	if c.ex != nil {
		for _, t := range c.ex.tasks {
			if t.tm == tm && live(t.getStatus()) {
				t.dead.Store(true)
				dead = append(dead, t.name)
			}
		}
	}
	if len(dead) == 0 {
		c.publish(Event{Kind: EvTaskManager, TaskManager: tm.id, Status: TMLost, Message: fmt.Sprintf("TaskManager %s crashed: its local disk is gone; it ran no subtask", tm.id)})
		c.wipeLostDisks()
		if c.spec.Cluster.Reactive {
			c.reactiveRescale()
		}
		return nil
	}
	c.publish(Event{Kind: EvTaskManager, TaskManager: tm.id, Status: TMLost, Message: fmt.Sprintf(
		"TaskManager %s crashed: %s stop and its local disk is gone; %s",
		tm.id, strings.Join(dead, ", "), heartbeatRule(c.spec.Cluster, hb, why))})
	c.drv.after(hb, timer{kind: timerHeartbeat, attempt: c.attempt, tm: tm.id})
	return nil
}

// heartbeatTimedOut is the JobManager noticing that TaskManager id is gone:
// its subtasks fail and the job fails over.
func (c *core) heartbeatTimedOut(id string) {
	if c.ex == nil || c.terminal {
		return
	}
	var lost []*subtask
	for _, t := range c.ex.tasks {
		if t.tm != nil && t.tm.id == id && t.dead.Load() && live(t.getStatus()) {
			lost = append(lost, t)
			t.setFailure("TaskManager " + id + " lost (" + lostHow(c.tms, id) + ")")
		}
	}
	if len(lost) == 0 {
		return
	}
	victim := lost[0]
	names := make([]string, len(lost))
	for i, t := range lost {
		names[i] = t.name
	}
	reason := fmt.Sprintf("the heartbeat of TaskManager %s timed out (it ran %s)", id, strings.Join(names, ", "))
	if tm, _ := c.findTM(id); tm != nil && tm.notice == "unreachable" {
		// DefaultHeartbeatMonitor.reportHeartbeatRpcFailure
		reason = fmt.Sprintf("TaskManager %s is no longer reachable: %d heartbeat requests in a row failed (it ran %s)", id, c.spec.Cluster.rpcFailureThreshold(), strings.Join(names, ", "))
	}
	// Every subtask the TaskManager ran fails; region failover restarts
	// the union of their pipelined regions and the other regions keep
	// running (RestartPipelinedRegionFailoverStrategy), else the whole job
	// fails over. No task-failed event: the crash was the TaskManager's,
	// reported when it happened; the job-status event says the JobManager
	// noticed now.
	region := c.regionsOf(lost)
	for _, t := range lost[1:] {
		t.setStatus(TaskFailed)
	}
	if region != nil {
		c.failRegion(victim, region, fmt.Sprintf("the pipelined region(s) of the subtasks TaskManager %s ran", id), reason)
		return
	}
	c.failGlobal(victim, reason)
}

// wipeLostDisks deletes the local disks of crashed TaskManager
// incarnations once no subtask runs on them.
func (c *core) wipeLostDisks() {
	for _, tm := range c.tms {
		for _, d := range tm.lostDirs {
			if err := state.RemoveLocalDirOn(c.fsys, d); err != nil {
				c.logger.Warn("wipe local disk", "tm", tm.id, "err", err)
			}
		}
		tm.lostDirs = nil
	}
}

func (c *core) restartTaskManager(id string) error {
	tm, err := c.findTM(id)
	if err != nil {
		return err
	}
	if tm.alive {
		return fmt.Errorf("%w: %s is alive; crash it first", ErrBadCommand, id)
	}
	tm.alive = true
	tm.incarnation++
	tm.localDir = filepath.Join(c.dir, "local", tm.id, fmt.Sprintf("incarnation-%d", tm.incarnation))
	c.publish(Event{Kind: EvTaskManager, TaskManager: tm.id, Status: TMAlive, Message: fmt.Sprintf("TaskManager %s restarted with an empty local disk and %d slots", tm.id, tm.slots)})
	c.resourcesChanged()
	return nil
}

// MaxSlotsPerTaskManager bounds the slots a command may give an added
// TaskManager (a typing slip should not schedule thousands of subtasks);
// the web protocol and the lessons' lint check the same bound.
const MaxSlotsPerTaskManager = 64

// addTaskManager adds a TaskManager with the given slots (0: the cluster's
// slots per TaskManager, whatever the job's spec says).
func (c *core) addTaskManager(slots int) (string, error) {
	if slots == 0 {
		slots = c.spec.Cluster.SlotsPerTaskManager
	} else if slots < 1 || slots > MaxSlotsPerTaskManager {
		return "", fmt.Errorf("%w: add-taskmanager slots %d: want 1..%d, or leave it out for the cluster's %d slots per TaskManager",
			ErrBadCommand, slots, MaxSlotsPerTaskManager, c.spec.Cluster.SlotsPerTaskManager)
	}
	tm := c.newTaskManager(slots)
	c.publish(Event{Kind: EvTaskManager, TaskManager: tm.id, Status: TMAlive, Message: fmt.Sprintf("TaskManager %s joined with %d slots", tm.id, tm.slots)})
	c.resourcesChanged()
	return tm.id, nil
}

func (c *core) resourcesChanged() {
	if c.waiting {
		c.tryAllocate()
		return
	}
	if c.spec.Cluster.Reactive {
		c.reactiveRescale()
	}
}

// reactiveRescale rescales every operator to the available slots as
// Flink's adaptive scheduler does in reactive mode: Executing ->
// Restarting -> CreatingExecutionGraph, restoring the latest completed
// checkpoint with the new parallelism. No savepoint: what the sources read
// after that checkpoint is read again.
func (c *core) reactiveRescale() {
	target := c.reactivePar()
	if c.rescaling != nil || c.status != JobRunning || !c.allTasks(TaskRunning) {
		return
	}
	same := true
	for id, p := range target {
		if c.par[id] != p {
			same = false
		}
	}
	if same {
		return
	}
	first := c.spec.Operators[0].ID
	r := &rescaleOp{operator: first, from: c.par[first], to: target[first], reactive: true, target: target, phase: "restoring"}
	c.rescaling = r
	from := "the latest completed checkpoint"
	if infos := c.storage.Checkpoints(); len(infos) > 0 {
		from = fmt.Sprintf("checkpoint %d, the latest completed one", infos[len(infos)-1].ID)
	}
	c.publish(Event{Kind: EvRescaleStarted, Operator: r.operator, Parallelism: r.to, Value: int64(r.from),
		Message: fmt.Sprintf("reactive mode: the slots changed, so the adaptive scheduler restarts the job with %d subtasks per operator from %s (no savepoint); records read since then are read again", r.to, from)})
	for _, p := range c.coord.pendingList() {
		c.abortCheckpoint(p, JobFailure, "the job restarts to rescale (reactive mode)")
	}
	c.cancelExecution(nil)
	c.setJobStatus(JobRestarting, fmt.Sprintf("job %s restarts with the new parallelism (reactive mode)", c.spec.Name))
	c.par = target
	c.deploy()
}

// rescale is Rescale(operator, p): stop with savepoint, then restore with the
// new parallelism.
func (c *core) rescale(op string, p int) error {
	o, ok := c.spec.Operator(op)
	if !ok {
		return fmt.Errorf("%w: no operator %q", ErrUnknown, op)
	}
	if err := rescale.CheckParallelism(p, o.MaxParallelism); err != nil {
		return fmt.Errorf("%w %s to %d: %w", ErrRescale, op, p, err)
	}
	for _, e := range c.spec.Edges {
		if e.Partitioner != Forward || (e.From != op && e.To != op) {
			continue
		}
		other := e.To
		if other == op {
			other = e.From
		}
		if c.par[other] != p {
			return fmt.Errorf("%w %s to %d: forward partitioning does not allow change of parallelism (%s -> %s is forward and %s has %d subtasks)",
				ErrRescale, op, p, e.From, e.To, other, c.par[other])
		}
	}
	if r := c.rescaling; r != nil && r.phase == "restoring" && c.ex != nil && !c.ex.started {
		return c.replanRescale(r, op, p)
	}
	if c.par[op] == p {
		return fmt.Errorf("%w %s: it already has %d subtasks", ErrRescale, op, p)
	}
	target := map[string]int{}
	for k, v := range c.par {
		target[k] = v
	}
	target[op] = p
	return c.startRescale(&rescaleOp{operator: op, from: c.par[op], to: p, target: target})
}

// replanRescale changes a rescale whose new execution still waits for
// slots. Nothing of that execution has run (no subtask was deployed), so it
// is cancelled and deployed again from the same savepoint with the new
// parallelism: what a Flink user does by cancelling the waiting job and
// resubmitting it from the savepoint (flink run -s SAVEPOINT -p P), since a
// job that waits for resources takes no further stop-with-savepoint.
func (c *core) replanRescale(r *rescaleOp, op string, p int) error {
	if op != r.operator {
		return fmt.Errorf("%w: the rescale of %s waits for slots; rescale %s again (or add a TaskManager) before rescaling %s",
			ErrRescale, r.operator, r.operator, op)
	}
	if p == r.to {
		return fmt.Errorf("%w %s: it is already being rescaled to %d subtasks and waits for slots; add a TaskManager or choose another parallelism",
			ErrRescale, op, p)
	}
	target := maps.Clone(c.par)
	target[op] = p
	r.target, r.to = target, p
	c.par = target
	c.cancelExecution(nil)
	c.waiting = false
	c.publish(Event{Kind: EvRescaleStarted, Operator: op, Parallelism: p, Value: int64(r.from),
		Message: fmt.Sprintf("rescale of %s changed to %d subtasks while it waited for slots: nothing had run yet, so the job is resubmitted from savepoint %d with %d subtasks (in Flink: cancel the waiting job, then flink run -s with -p)", op, p, r.savepoint, p)})
	c.deploy()
	return nil
}

func (c *core) startRescale(r *rescaleOp) error {
	if c.rescaling != nil {
		return fmt.Errorf("%w: a rescale of %s is in progress", ErrRescale, c.rescaling.operator)
	}
	if c.status != JobRunning || !c.allTasks(TaskRunning) {
		return fmt.Errorf("%w: stop-with-savepoint needs every subtask RUNNING (the job is %s); try again when it runs", ErrRescale, c.status)
	}
	r.phase = "savepoint"
	c.rescaling = r
	c.publish(Event{Kind: EvRescaleStarted, Operator: r.operator, Parallelism: r.to, Value: int64(r.from),
		Message: fmt.Sprintf("rescale of %s from %d to %d subtasks: stop with savepoint first", r.operator, r.from, r.to)})
	id, err := c.triggerCheckpoint(true, true)
	if err != nil {
		c.rescaling = nil
		return err
	}
	r.savepoint = id
	return nil
}

// finishStopWithSavepoint runs when every subtask finished after the
// rescale's savepoint: the new execution restores from it.
func (c *core) finishStopWithSavepoint() {
	r := c.rescaling
	r.phase = "restoring"
	c.cancelExecution(nil)
	c.setJobStatus(JobRestarting, fmt.Sprintf("job %s restarts from savepoint %d with the new parallelism", c.spec.Name, r.savepoint))
	c.deploy()
}

func (c *core) inject(op string, partition int, text string) error {
	tp := c.topics[op]
	if tp == nil {
		return fmt.Errorf("%w: %q is not a source", ErrUnknown, op)
	}
	// topic.typed is the one rule for where a typed record goes and what it
	// is: the Flink export (TopicRecordsWithTyped) replays the command log
	// through it, so the exported input cannot drift from the engine's.
	partition, r := tp.typed(c.injected[op], partition, text)
	if partition >= tp.partitions {
		return fmt.Errorf("%w: source %s has partitions 0..%d, not %d", ErrBadCommand, op, tp.partitions-1, partition)
	}
	c.injected[op]++
	off := tp.append(partition, r)
	if c.ex != nil {
		for _, t := range c.ex.ops[c.opIndex[op]].tasks {
			c.drv.wake(t)
		}
	}
	c.publish(Event{Kind: EvInjected, Operator: op, Partition: partition, Offset: off, Text: text,
		Message: fmt.Sprintf("%q appended to partition %d of %s at offset %d", text, partition, op, off)})
	return nil
}

// --- end of input --------------------------------------------------------------

// drained reports whether every source has read its whole topic and sent
// its last watermark, no element (record, watermark or barrier) is in
// flight, no checkpoint is pending, and every sink transaction has been
// committed: the point at which the sink output is final.
func (c *core) drained() bool {
	if c.ex == nil || c.status != JobRunning || !c.allTasks(TaskRunning) || c.rescaling != nil {
		return false
	}
	for _, t := range c.ex.tasks {
		if t.src != nil && t.src.pollable() {
			return false
		}
		t.ctlMu.Lock()
		n := len(t.ctl)
		t.ctlMu.Unlock()
		if n > 0 {
			return false
		}
	}
	// Every element must have arrived, not only every record: a watermark
	// still on its way (the sources' end-of-input watermark) has windows
	// to fire, and a barrier a checkpoint to finish.
	for _, ch := range c.ex.channels {
		if ch.len() > 0 {
			return false
		}
	}
	for _, t := range c.ex.tasks {
		for _, oe := range t.outs {
			for _, b := range oe.pending {
				if b != nil {
					return false
				}
			}
		}
	}
	// Every source must have read to the end of every partition (an idle
	// source with no partitions is fine), and all committed.
	for _, t := range c.ex.tasks {
		if t.src == nil {
			continue
		}
		for _, pc := range t.src.parts {
			if pc.offset < t.src.topic.end(pc.partition) {
				return false
			}
		}
	}
	for _, s := range c.sinks {
		if s.pendingTxns() > 0 {
			return false
		}
	}
	return len(c.coord.pending) == 0
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
