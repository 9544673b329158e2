package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/state"
)

// slResult is what StateLab's engine did in a scenario, in the same terms as
// flinkref's trace.
type slResult struct {
	phases  []slPhase
	compare []engine.Comparison
}

type slPhase struct {
	// keyGroups per keyed operator, by subtask, once the phase runs
	keyGroups map[string]map[int]kgRange
	// restoredKeys: keyed state per keyed operator and subtask right after
	// the phase's restore (before new records); finalKeys at its end
	restoredKeys map[string]map[int]map[string]int64
	finalKeys    map[string]map[int]map[string]int64
	// restoredHeld: the keys each keyed subtask holds right after the
	// restore, expired TTL values too (sorted)
	restoredHeld map[string]map[int][]string
	// restores are the phase's restore events (one per subtask restored)
	restores []engine.Event
	// restoreRequested: the phase's restore-requested events (a restore
	// command: the records read again, the sink records written again)
	restoreRequested []engine.Event
	// after the phase's fault: job statuses entered, subtasks redeployed
	statusesAfterFault []string
	// why the job left RUNNING after the fault (its job-status events' messages)
	statusMessages []string
	restarted      []string
	// deploys: how many times each subtask was deployed after the first
	// fault (its restarts, as Flink's execution attempt number counts them)
	deploys map[string]int
	// deployOrder: the subtasks deployed after the first fault, in the order
	// their deployments began
	deployOrder []string
	// restartAttempt: the restart strategy's attempt count at the phase's end
	restartAttempt int
	finalStatus    string
	checkpoints    engine.CheckpointCounts
	// latestRestore: the job's last restore at the phase's end, with the
	// keyed bytes it read from local copies and from checkpoint storage
	latestRestore *engine.RestoreStats
	// failedCheckpoints: the phase's failed checkpoints, oldest first
	failedCheckpoints []failedCheckpoint
	// brokenCheckpoint: the checkpoint a breakLatest fault broke; restoreFailed:
	// the checkpoint each failed restore tried (from its event's message)
	brokenCheckpoint int64
	// restoreFailedMessages: the failed restores' messages
	restoreFailedMessages []string
	restoreFailed         []int64
	// channelStateCheckpoint: the first checkpoint completed unaligned with
	// channel state when an afterChannelState fault fired; replayed: the
	// records of channel state the restored subtasks replayed (events)
	channelStateCheckpoint int64
	replayed               int
	// afterFault*: with captureRestored, what the subtasks restored after
	// the crash: count's keyed state (read once every count subtask
	// restored), the records each count subtask had taken in then, and each
	// source subtask's restored partition offsets
	afterFaultKeys     map[string]map[int]map[string]int64
	afterFaultIn       map[string]int64
	afterFaultOffsets  map[string][]engine.PartitionOffset
	afterFaultRestored int64
	// restoredWatermarks (with captureRestored): each alerts subtask's
	// watermark right after the step in which it restored; ackWatermarks:
	// each alerts subtask's watermark when it acknowledged a checkpoint (its
	// last watermark event before the acknowledgement), by checkpoint
	restoredWatermarks map[string]int64
	ackWatermarks      map[int64]map[string]int64
	// placedAtFault and placedAtEnd: the TaskManager each subtask ran on
	// when the phase's first fault fired, and at the phase's end
	placedAtFault map[string]string
	placedAtEnd   map[string]string
	// refused is the error of a rescale or upgrade StateLab refused
	refused string
	// operatorIDs: each operator's ID (hex), by operator id, once the phase runs
	operatorIDs map[string]string
	// chains: the job's chains (operator ids, head first), once the phase runs
	chains []engine.ChainView
	// finalKeyGroups: the key-group ranges at the phase's end (after its steps)
	finalKeyGroups map[string]map[int]kgRange
	// pendingTimers: each keyed subtask's pending timers once the phase runs
	// (after its restore), by operator and subtask
	pendingTimers map[string]map[int][]state.Timer
	// alertsIn: the records the alerts subtasks had taken in when
	// pendingTimers was read (0: only what the restore brought back)
	alertsIn int64
	// timersFired: the phase's timer-fired events (alerts)
	timersFired []engine.Event
	// steps: the checkpoint or savepoint each of the phase's steps took
	// (0 for a read); retained: the completed checkpoints (not savepoints)
	// the checkpoint storage retains after the last step
	steps []int64
	// localAfterSteps (local recovery on): after each step, the
	// checkpoints each keyed subtask holds a local copy of ("count#0": [3])
	localAfterSteps []map[string][]int64
	retained        []int64
	// history: every checkpoint and savepoint of the run so far, oldest first
	history []cpEntry
	// notified: per sink subtask, each checkpoint it was notified of in the
	// phase and the transactions that committed (as flinkref's "notified")
	notified map[string][]notification
}

// cpEntry is a checkpoint or savepoint in the history.
type cpEntry struct {
	ID        int64  `json:"id"`
	Status    string `json:"status"`
	Savepoint bool   `json:"savepoint"`
	Unaligned bool   `json:"unaligned"`
	// ChannelState: the in-flight records it persisted (bytes)
	ChannelState int64 `json:"channelState"`
	// StateSize and CheckpointedSize: its full state and what it wrote
	// itself (an incremental checkpoint's new files), bytes
	StateSize        int64 `json:"stateSize"`
	CheckpointedSize int64 `json:"checkpointedSize"`
	// Alignment: each subtask's barrier alignment
	Alignment map[string]time.Duration `json:"-"`
	// Trigger and End: when it was triggered and when it completed or
	// failed (job time)
	Trigger, End time.Duration `json:"-"`
}

// notification is a sink subtask notified that checkpoint completed, and
// the transactions (by the checkpoint each was pre-committed in) it committed.
type notification struct {
	Checkpoint int64       `json:"checkpoint"`
	Committed  []txnCommit `json:"committed"`
}

// failedCheckpoint is a failed checkpoint, its reason named as Flink's
// CheckpointFailureReason names it.
type failedCheckpoint struct {
	ID      int64  `json:"id"`
	Reason  string `json:"reason"`
	Message string `json:"-"`
}

type kgRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// stepsPerPhase bounds each wait; a StateLab step is one delivery, so this
// is generous for the catalogue's few hundred records.
const stepsPerPhase = 400_000

// runStateLab runs sc on StateLab's Stepper (the deterministic driver).
func runStateLab(t *testing.T, sc *scenario) (*slResult, error) {
	t.Helper()
	spec := sc.specWithSources(true)
	b, _ := json.Marshal(spec)
	js, err := engine.LoadSpec(b)
	if err != nil {
		return nil, fmt.Errorf("StateLab refuses the job spec: %w", err)
	}
	// flinkref's JobBuilder runs a job without chaining: true with
	// env.disableOperatorChaining() (each operator its own task): StateLab's
	// side does the same (its default, said explicitly).
	if js.Chaining == nil {
		off := false
		js.Chaining = &off
	}
	var events []engine.Event
	opts := engine.Options{RecordEvents: func(e engine.Event) { events = append(events, e) }}
	// A stalled snapshot is set up front (engine.Options.SnapshotStall) and
	// fires once, as flinkref's stall-checkpoint fault does; stalledAt is
	// the event count when it fired (-1 before).
	stalledAt := -1
	var stalls []slFault
	for _, ph := range sc.phases {
		for _, f := range ph.statelabFaults {
			if f.cmd == stallSnapshot {
				stalls = append(stalls, f)
			}
		}
	}
	if len(stalls) > 0 {
		opts.SnapshotStall = func(task string, id int64) time.Duration {
			for _, f := range stalls {
				if stalledAt < 0 && f.task == task && f.checkpoint == id {
					stalledAt = len(events)
					return f.stall
				}
			}
			return 0
		}
	}
	// A source subtask that takes no part in a checkpoint is set up front
	// too (engine.Options.SkipCheckpoint), as flinkref's skip-checkpoint.
	var skips []slFault
	for _, ph := range sc.phases {
		for _, f := range ph.statelabFaults {
			if f.cmd == skipCheckpoint {
				skips = append(skips, f)
			}
		}
	}
	if len(skips) > 0 {
		opts.SkipCheckpoint = func(task string, id int64) bool {
			for _, f := range skips {
				if f.task == task && f.checkpoint == id {
					return true
				}
			}
			return false
		}
	}
	for _, ph := range sc.phases {
		for _, f := range ph.statelabFaults {
			if f.cmd == breakLatest || f.cmd == corruptPending {
				opts.Dir = t.TempDir() // checkpoint files the fault can delete or damage
			}
		}
	}
	if js.Checkpointing.LocalRecovery && opts.Dir == "" {
		opts.Dir = t.TempDir() // the TaskManagers' local disks, listed after each step
	}
	s, err := engine.NewStepper(js, opts)
	if err != nil {
		return nil, fmt.Errorf("start StateLab: %w", err)
	}
	defer s.Close()
	res := &slResult{}
	injected := map[string]int{}
	for src := range sc.lines {
		if len(sc.lines[src]) > 0 {
			injected[src] = len(sc.lines[src][0])
		}
	}
	var savepoint int64     // the savepoint upgrades start from, taken once
	chunk := len(sc.phases) // the next chunk a read step injects, over all phases
	for i, ph := range sc.phases {
		mark := len(events)
		var p slPhase
		if ph.pause > 0 {
			s.RunFor(ph.pause) // no input: only the clock (and periodic checkpoints) move on
		}
		if i > 0 && ph.restoreCheckpoint > 0 {
			// The user's act: start again from a retained checkpoint (as flink run -s does).
			if err := s.Do(engine.Command{Name: engine.CmdRestore, Checkpoint: ph.restoreCheckpoint}); err != nil {
				return res, fmt.Errorf("phase %d: restore checkpoint %d: %w", i, ph.restoreCheckpoint, err)
			}
			// What the subtasks restored, read as soon as they have (afterFault*).
			if err := captureRestored(t, s, &events, mark, &p); err != nil {
				return res, fmt.Errorf("phase %d: after the restore of checkpoint %d: %w", i, ph.restoreCheckpoint, err)
			}
		}
		if i > 0 && ph.upgrade != nil {
			if savepoint == 0 {
				before := s.Snapshot().Checkpoints.Counts.Completed
				if err := s.Do(engine.Command{Name: engine.CmdTriggerSavepoint}); err != nil {
					return res, fmt.Errorf("phase %d: savepoint: %w", i, err)
				}
				if _, err := s.RunUntil(func(sn *engine.Snapshot) bool { return sn.Checkpoints.Counts.Completed > before }, stepsPerPhase); err != nil {
					return res, fmt.Errorf("phase %d: waiting for the savepoint: %w", i, err)
				}
				h := s.Snapshot().Checkpoints.History
				savepoint = h[len(h)-1].ID
			}
			cmd := *ph.upgrade
			cmd.Name, cmd.Checkpoint = engine.CmdUpgrade, savepoint
			if err := s.Do(cmd); err != nil {
				if ph.refused {
					p.refused = err.Error()
					res.phases = append(res.phases, p)
					continue
				}
				return res, fmt.Errorf("phase %d: upgrade (%s %s): %w", i, cmd.Change, cmd.Operator, err)
			}
		}
		if i > 0 {
			ops := make([]string, 0, len(ph.rescale))
			for op := range ph.rescale {
				ops = append(ops, op)
			}
			sort.Strings(ops)
			for _, op := range ops {
				if err := s.Do(engine.Command{Name: engine.CmdRescale, Operator: op, Parallelism: ph.rescale[op]}); err != nil {
					if ph.refused {
						p.refused = err.Error()
						res.phases = append(res.phases, p)
						return res, nil
					}
					return res, fmt.Errorf("phase %d: rescale %s to %d: %w", i, op, ph.rescale[op], err)
				}
				if sc.continuous {
					// The input goes on: wait for the rescale, not for the end of it.
					if _, err := s.RunUntil(func(sn *engine.Snapshot) bool { return sn.Job.Rescale == nil && allRunning(sn) }, stepsPerPhase); err != nil {
						return res, fmt.Errorf("phase %d: rescale %s: %w", i, op, err)
					}
					continue
				}
				if _, err := s.RunUntilDrained(stepsPerPhase); err != nil {
					return res, fmt.Errorf("phase %d: after rescale %s: %w", i, op, err)
				}
			}
		}
		// The phase runs: ranges and the state restored, before new records.
		if _, err := s.RunUntil(func(sn *engine.Snapshot) bool { return allRunning(sn) }, stepsPerPhase); err != nil {
			return res, fmt.Errorf("phase %d: waiting for every subtask to run: %w", i, err)
		}
		snap := s.Snapshot()
		p.operatorIDs = map[string]string{}
		for _, o := range snap.Job.Operators {
			p.operatorIDs[o.ID] = o.OperatorID
		}
		p.chains = snap.Job.Chains
		p.keyGroups = keyGroupsOf(&snap)
		p.restoredKeys = keyedState(t, s, &snap)
		p.restoredHeld = heldKeys(t, s, &snap)
		p.pendingTimers = pendingTimers(t, s, &snap)
		for _, o := range snap.Job.Operators {
			if o.Kind == engine.KindAlerts {
				for _, st := range o.Subtasks {
					p.alertsIn += st.RecordsIn
				}
			}
		}
		if i > 0 && !sc.continuous {
			for _, src := range sc.sources() {
				if i >= len(sc.lines[src]) {
					continue
				}
				for _, l := range sc.lines[src][i] {
					part := injected[src] % sc.partitions[src]
					injected[src]++
					if err := s.Do(engine.Command{Name: engine.CmdInject, Operator: src, Partition: part, Text: l}); err != nil {
						return res, fmt.Errorf("phase %d: inject into %s: %w", i, src, err)
					}
				}
			}
		}
		faultMark := len(events)
		var lastFaultAt time.Duration // job time of the phase's last fault
		for k, f := range ph.statelabFaults {
			if (f.cmd == stallSnapshot && len(ph.steps) > 0) || f.cmd == skipCheckpoint {
				continue // the stalled checkpoint is one the steps trigger; a skip is set up front
			}
			if f.cmd == stallSnapshot {
				if _, err := s.RunUntil(func(*engine.Snapshot) bool { return stalledAt >= 0 }, stepsPerPhase); err != nil {
					return res, fmt.Errorf("phase %d: waiting for %s's snapshot of checkpoint %d: %w", i, f.task, f.checkpoint, err)
				}
				faultMark = stalledAt
				continue
			}
			// A crash waits for its subtask to run again (after an earlier
			// fault's restart), as Flink's throw fires in a running subtask.
			due := func(sn *engine.Snapshot) bool {
				if f.cmd == corruptPending && (sn.Checkpoints.Counts.Completed < 1 || sn.Checkpoints.Counts.InProgress > 0) {
					return false
				}
				if f.cmd == breakLatest && (sn.Checkpoints.Counts.Completed < 2 || sn.Checkpoints.Counts.InProgress > 0) {
					return false
				}
				if f.afterChannelState && channelStateCheckpoint(sn) == 0 {
					return false
				}
				if f.afterCompleted > 0 && sn.Checkpoints.Counts.Completed < f.afterCompleted {
					return false
				}
				if f.whileRestarting > 0 && (sn.Job.Status != engine.JobRestarting || sn.At-lastFaultAt < f.whileRestarting) {
					return false
				}
				return recordsIn(sn, f.task) >= f.afterRecords && ((f.cmd != engine.CmdCrashSubtask && f.cmd != breakLatest && f.cmd != corruptPending) || taskStatus(sn, f.task) == engine.TaskRunning)
			}
			if _, err := s.RunUntil(due, stepsPerPhase); err != nil {
				return res, fmt.Errorf("phase %d: waiting for %s to take in %d records: %w", i, f.task, f.afterRecords, err)
			}
			if f.afterChannelState {
				sn := s.Snapshot()
				p.channelStateCheckpoint = channelStateCheckpoint(&sn)
			}
			if k == 0 {
				sn := s.Snapshot()
				p.placedAtFault = placement(&sn)
				// Statuses and redeploys are counted from the first fault on (a
				// scenario with several faults sees every restart they cause).
				faultMark = len(events)
			}
			// A fault that damages the latest checkpoint, then crashes the
			// watched subtask so that the job restores it.
			if damage := checkpointDamage[f.cmd]; damage != nil {
				sn := s.Snapshot()
				id, err := damage(opts.Dir, &sn)
				if err != nil {
					return res, fmt.Errorf("phase %d: %w", i, err)
				}
				p.brokenCheckpoint = id
				if err := s.Do(engine.Command{Name: engine.CmdCrashSubtask, Task: f.task}); err != nil {
					return res, fmt.Errorf("phase %d: crash %s: %w", i, f.task, err)
				}
				lastFaultAt = s.Snapshot().At
				continue
			}
			tm := f.taskManager
			if tm == "" && f.cmd == engine.CmdCrashTaskManager {
				// The TaskManager the watched subtask runs on, as flinkref terminates.
				sn := s.Snapshot()
				tm = taskManagerOf(&sn, f.task)
			}
			if err := s.Do(engine.Command{Name: f.cmd, Task: f.task, TaskManager: tm}); err != nil {
				return res, fmt.Errorf("phase %d: %s: %w", i, f.cmd, err)
			}
			for _, then := range f.then {
				if err := s.Do(engine.Command{Name: then, TaskManager: tm}); err != nil {
					return res, fmt.Errorf("phase %d: %s: %w", i, then, err)
				}
			}
			lastFaultAt = s.Snapshot().At
			if f.captureRestored {
				if err := captureRestored(t, s, &events, len(events), &p); err != nil {
					return res, fmt.Errorf("phase %d: after %s: %w", i, f.cmd, err)
				}
			}
		}
		if len(ph.steps) > 0 {
			if _, err := s.RunUntil(func(sn *engine.Snapshot) bool { return caughtUp(sn, sc, injected) }, stepsPerPhase); err != nil {
				return res, fmt.Errorf("phase %d: before its steps: %w", i, err)
			}
			for _, st := range ph.steps {
				id, err := runStep(s, sc, st, chunk, injected)
				if err != nil {
					return res, fmt.Errorf("phase %d: step %s: %w", i, st, err)
				}
				if st == stepRead || st == stepReadInFlight || st == stepCheckpointDuringRead {
					chunk++
				}
				p.steps = append(p.steps, id)
				if js.Checkpointing.LocalRecovery {
					p.localAfterSteps = append(p.localAfterSteps, localCheckpoints(t, opts.Dir))
				}
			}
			for _, c := range s.Snapshot().Checkpoints.Retained {
				if !c.Savepoint {
					p.retained = append(p.retained, c.ID)
				}
			}
			sort.Slice(p.retained, func(a, b int) bool { return p.retained[a] < p.retained[b] })
		}
		var runErr error
		if sc.continuous && i < len(sc.phases)-1 {
			// The phase ends where the next one's lines begin (see scenario.continuous).
			read := map[string]int64{}
			for _, src := range sc.sources() {
				for _, ls := range sc.lines[src][:i+1] {
					read[src] += int64(len(ls))
				}
			}
			_, runErr = s.RunUntil(func(sn *engine.Snapshot) bool {
				for src, n := range read {
					if sourceRead(sn, src) < n {
						return false
					}
				}
				return true
			}, stepsPerPhase)
		} else if ph.holdInput {
			_, runErr = s.RunUntil(func(sn *engine.Snapshot) bool { return sn.Job.Status == engine.JobFailed }, stepsPerPhase)
		} else {
			_, runErr = s.RunUntilDrained(stepsPerPhase)
		}
		snap = s.Snapshot()
		p.finalStatus = string(snap.Job.Status)
		if runErr != nil && snap.Job.Status != engine.JobFailed {
			return res, fmt.Errorf("phase %d: run to the end of its input: %w", i, runErr)
		}
		p.placedAtEnd = placement(&snap)
		p.finalKeys = keyedState(t, s, &snap)
		p.finalKeyGroups = keyGroupsOf(&snap)
		p.checkpoints = snap.Checkpoints.Counts
		p.latestRestore = snap.Checkpoints.LatestRestore
		p.restartAttempt = snap.Job.Restart.Attempt
		for _, h := range snap.Checkpoints.History {
			if h.Status == engine.CheckpointFailed {
				p.failedCheckpoints = append(p.failedCheckpoints, failedCheckpoint{ID: h.ID, Reason: string(h.FailureReason), Message: h.FailureMessage})
			}
		}
		for _, h := range snap.Checkpoints.History {
			align := map[string]time.Duration{}
			for _, a := range h.Subtasks {
				align[a.Task] = a.AlignmentDuration
			}
			p.history = append(p.history, cpEntry{ID: h.ID, Status: h.Status, Savepoint: h.Savepoint, Unaligned: h.Unaligned, ChannelState: h.ChannelStateSize, Alignment: align,
				StateSize: h.StateSize, CheckpointedSize: h.CheckpointedSize,
				Trigger: h.TriggerTime, End: h.TriggerTime + h.EndToEndDuration})
		}
		p.notified = notifications(events[mark:])
		p.ackWatermarks = ackWatermarks(events[mark:])
		deployed := map[string]bool{}
		for k, e := range events[mark:] {
			if e.Kind == engine.EvRestore {
				p.restores = append(p.restores, e)
			}
			if e.Kind == engine.EvRestoreRequested {
				p.restoreRequested = append(p.restoreRequested, e)
			}
			if e.Kind == engine.EvRestoreFailed {
				var id int64
				if k := strings.Index(e.Message, "from checkpoint "); k >= 0 {
					fmt.Sscanf(e.Message[k+len("from checkpoint "):], "%d", &id)
				} else if k := strings.Index(e.Message, "corrupt checkpoint: checkpoint "); k >= 0 {
					// operator state that does not decode (engine's decodeElements)
					fmt.Sscanf(e.Message[k+len("corrupt checkpoint: checkpoint "):], "%d", &id)
				}
				p.restoreFailed = append(p.restoreFailed, id)
				p.restoreFailedMessages = append(p.restoreFailedMessages, e.Message)
			}
			if e.Kind == engine.EvUnalignedCheckpoint && strings.Contains(e.Message, "channel state before new input") {
				// "X replayed N record(s) of channel state before new input (…)"
				var n int
				if k := strings.Index(e.Message, " replayed "); k >= 0 {
					fmt.Sscanf(e.Message[k+len(" replayed "):], "%d", &n)
				}
				p.replayed += n
			}
			if e.Kind == engine.EvTimerFired {
				p.timersFired = append(p.timersFired, e)
			}
			if !ph.statusesFromStart && (mark+k < faultMark || len(ph.statelabFaults) == 0) {
				continue
			}
			switch e.Kind {
			case engine.EvJobStatus:
				p.statusesAfterFault = append(p.statusesAfterFault, e.Status)
				p.statusMessages = append(p.statusMessages, e.Message)
			case engine.EvTaskStatus:
				if e.Status == string(engine.TaskDeploying) {
					deployed[e.Task] = true
					p.deployOrder = append(p.deployOrder, e.Task)
					if p.deploys == nil {
						p.deploys = map[string]int{}
					}
					p.deploys[e.Task]++
				}
			}
		}
		for task := range deployed {
			p.restarted = append(p.restarted, task)
		}
		sort.Strings(p.restarted)
		res.phases = append(res.phases, p)
		if snap.Job.Status == engine.JobFailed {
			break
		}
	}
	cmp, err := s.Compare()
	if err != nil {
		return res, fmt.Errorf("compare StateLab's sink output with its ground truth: %w", err)
	}
	res.compare = cmp
	return res, nil
}

// captureRestored runs until every count and source subtask restored after the crash
// (the restore events from mark on) and reads what they and the sources
// restored into p: count's keyed state, the records each count subtask had
// taken in by then (0: the state is what it restored) and the sources'
// restored offsets. Each count subtask's state is read after the step it
// restored in, before any other step: a subtask that restored early may
// take in records before the last one restored, as the Stepper's schedule
// has it.
func captureRestored(t *testing.T, s *engine.Stepper, events *[]engine.Event, mark int, p *slPhase) error {
	restored := func() map[string]engine.Event {
		out := map[string]engine.Event{}
		for _, e := range (*events)[mark:] {
			if e.Kind == engine.EvRestore && e.Restore != nil && e.Restore.Checkpoint > 0 {
				out[e.Task] = e
			}
		}
		return out
	}
	want := 0
	for _, o := range s.Snapshot().Job.Operators {
		if o.Kind == engine.KindCount || o.Kind == engine.KindSource || o.Kind == engine.KindAlerts {
			want += len(o.Subtasks)
		}
	}
	p.afterFaultKeys = map[string]map[int]map[string]int64{}
	p.afterFaultIn = map[string]int64{}
	if _, err := s.RunUntil(func(sn *engine.Snapshot) bool {
		n := 0
		for task := range restored() {
			if strings.HasPrefix(task, "count#") || strings.HasPrefix(task, "source#") || strings.HasPrefix(task, "alerts#") {
				n++
			}
			if strings.HasPrefix(task, "alerts#") {
				// its event time as it restored: read after the step the
				// restore happened in, before any other step
				if _, ok := p.restoredWatermarks[task]; !ok {
					if p.restoredWatermarks == nil {
						p.restoredWatermarks = map[string]int64{}
					}
					p.restoredWatermarks[task] = subtaskWatermark(sn, task)
				}
			}
			if _, ok := p.afterFaultIn[task]; !ok {
				for _, o := range sn.Job.Operators {
					if o.Kind != engine.KindCount {
						continue
					}
					for _, st := range o.Subtasks {
						if st.Name == task {
							if p.afterFaultKeys[o.ID] == nil {
								p.afterFaultKeys[o.ID] = map[int]map[string]int64{}
							}
							p.afterFaultKeys[o.ID][st.Index] = subtaskKeys(t, s, st.Name, o.Kind)
							p.afterFaultIn[task] = st.RecordsIn
						}
					}
				}
			}
		}
		return n == want
	}, stepsPerPhase); err != nil {
		return fmt.Errorf("waiting for every count and source subtask to restore: %w", err)
	}
	p.afterFaultOffsets = map[string][]engine.PartitionOffset{}
	for task, e := range restored() {
		p.afterFaultRestored = e.Restore.Checkpoint
		if strings.HasPrefix(task, "source#") {
			p.afterFaultOffsets[task] = e.Restore.Offsets
		}
	}
	return nil
}

// subtaskWatermark is task's current watermark in sn.
func subtaskWatermark(sn *engine.Snapshot, task string) int64 {
	for _, o := range sn.Job.Operators {
		for _, st := range o.Subtasks {
			if st.Name == task {
				return st.Watermark
			}
		}
	}
	return engine.MinWatermark
}

// ackWatermarks is each alerts subtask's watermark when it acknowledged a
// checkpoint: its last watermark event before the acknowledgement
// (MinWatermark before any, and again from its restore on), by checkpoint.
func ackWatermarks(events []engine.Event) map[int64]map[string]int64 {
	wm := map[string]int64{}
	out := map[int64]map[string]int64{}
	for _, e := range events {
		if !strings.HasPrefix(e.Task, "alerts#") {
			continue
		}
		switch e.Kind {
		case engine.EvRestore:
			wm[e.Task] = engine.MinWatermark
		case engine.EvWatermark:
			wm[e.Task] = e.Watermark
		case engine.EvCheckpointAck:
			if out[e.Checkpoint] == nil {
				out[e.Checkpoint] = map[string]int64{}
			}
			w, ok := wm[e.Task]
			if !ok {
				w = engine.MinWatermark
			}
			out[e.Checkpoint][e.Task] = w
		}
	}
	return out
}

// placement is the TaskManager each subtask runs on.
func placement(sn *engine.Snapshot) map[string]string {
	out := map[string]string{}
	for _, o := range sn.Job.Operators {
		for _, st := range o.Subtasks {
			out[st.Name] = taskManagerOf(sn, st.Name)
		}
	}
	return out
}

// channelStateCheckpoint is the first checkpoint (not a savepoint) that
// completed unaligned with channel state, or 0.
func channelStateCheckpoint(sn *engine.Snapshot) int64 {
	for _, h := range sn.Checkpoints.History {
		if h.Status == engine.CheckpointCompleted && !h.Savepoint && h.Unaligned && h.ChannelStateSize > 0 {
			return h.ID
		}
	}
	return 0
}

// runStep runs one of a phase's steps on StateLab: a read injects the
// scenario's lines of chunk (dealt on over the partitions, as options.lines
// and flinkref's input are) and runs until they are processed; a checkpoint
// or savepoint is triggered by command and awaited. It returns the id of the
// checkpoint or savepoint taken (0 for a read).
func runStep(s *engine.Stepper, sc *scenario, step string, chunk int, injected map[string]int) (int64, error) {
	switch step {
	case stepRead, stepReadInFlight:
		for _, src := range sc.sources() {
			if chunk >= len(sc.lines[src]) {
				return 0, fmt.Errorf("no chunk %d of lines for %s", chunk, src)
			}
			for _, l := range sc.lines[src][chunk] {
				part := injected[src] % sc.partitions[src]
				injected[src]++
				if err := s.Do(engine.Command{Name: engine.CmdInject, Operator: src, Partition: part, Text: l}); err != nil {
					return 0, fmt.Errorf("inject into %s: %w", src, err)
				}
			}
		}
		if step == stepReadInFlight {
			_, err := s.RunUntil(func(sn *engine.Snapshot) bool { return sourcesRead(sn, injected) }, stepsPerPhase)
			return 0, err
		}
		_, err := s.RunUntil(func(sn *engine.Snapshot) bool { return caughtUp(sn, sc, injected) }, stepsPerPhase)
		return 0, err
	case stepAddTaskManager:
		before := s.Snapshot().Counters.Rescales
		if err := s.Do(engine.Command{Name: engine.CmdAddTaskManager}); err != nil {
			return 0, err
		}
		_, err := s.RunUntil(func(sn *engine.Snapshot) bool { return sn.Counters.Rescales > before && allRunning(sn) }, stepsPerPhase)
		return 0, err
	case stepCheckpointWhilePending:
		var last int64
		for _, h := range s.Snapshot().Checkpoints.History {
			last = max(last, h.ID)
		}
		// The first is pending as soon as the command returns.
		for range 2 {
			if err := s.Do(engine.Command{Name: engine.CmdTriggerCheckpoint}); err != nil {
				return 0, err
			}
		}
		_, err := s.RunUntil(func(sn *engine.Snapshot) bool {
			n := 0
			for _, h := range sn.Checkpoints.History {
				if h.ID > last && h.Status != engine.CheckpointInProgress {
					n++
				}
			}
			return n == 2
		}, stepsPerPhase)
		if err != nil {
			return 0, fmt.Errorf("waiting for the two checkpoints: %w", err)
		}
		for _, h := range s.Snapshot().Checkpoints.History {
			if h.ID > last && h.Status != engine.CheckpointCompleted {
				return last + 1, fmt.Errorf("checkpoint %d %s: %s", h.ID, h.Status, h.FailureMessage)
			}
		}
		return last + 1, nil
	case stepNewerWhilePending:
		return runNewerWhilePending(s)
	case stepCheckpointDuringRead:
		return runCheckpointDuringRead(s, sc, chunk, injected)
	case stepCheckpointFails:
		id, err := runStep(s, sc, stepCheckpoint, chunk, injected)
		if err == nil {
			return id, fmt.Errorf("checkpoint %d completed; the scenario expected it to fail", id)
		}
		if id == 0 {
			return 0, err
		}
		return id, nil
	case stepCheckpoint, stepSavepoint:
		var last int64
		for _, h := range s.Snapshot().Checkpoints.History {
			last = max(last, h.ID)
		}
		cmd := engine.CmdTriggerCheckpoint
		if step == stepSavepoint {
			cmd = engine.CmdTriggerSavepoint
		}
		if err := s.Do(engine.Command{Name: cmd}); err != nil {
			return 0, err
		}
		var id int64
		_, err := s.RunUntil(func(sn *engine.Snapshot) bool {
			for _, h := range sn.Checkpoints.History {
				if h.ID > last && h.Status != engine.CheckpointInProgress {
					id = h.ID
					return true
				}
			}
			return false
		}, stepsPerPhase)
		if err != nil {
			return 0, fmt.Errorf("waiting for the %s: %w", step, err)
		}
		for _, h := range s.Snapshot().Checkpoints.History {
			if h.ID == id && h.Status != engine.CheckpointCompleted {
				return id, fmt.Errorf("%s %d %s: %s", step, id, h.Status, h.FailureMessage)
			}
		}
		return id, nil
	}
	return 0, fmt.Errorf("unknown step %q", step)
}

// sourcesRead reports whether the sources have read every line given them
// (given, per source), by their partitions' offsets.
func sourcesRead(sn *engine.Snapshot, given map[string]int) bool {
	read := map[string]int64{}
	for _, sv := range sn.Sources {
		for _, pv := range sv.Partitions {
			read[sv.Operator] += pv.Offset
		}
	}
	for src, n := range given {
		if read[src] < int64(n) {
			return false
		}
	}
	return true
}

// caughtUp reports whether every subtask runs, the sources have read every
// line given them (given, per source) and every operator has taken in all
// its inputs sent: the records read so far have reached the sinks. (Stepper's
// RunUntilDrained also waits for the sinks' transactions to commit, which
// without periodic checkpoints they never do.)
func caughtUp(sn *engine.Snapshot, sc *scenario, given map[string]int) bool {
	if !allRunning(sn) {
		return false
	}
	in, out := map[string]int64{}, map[string]int64{}
	for _, o := range sn.Job.Operators {
		for _, st := range o.Subtasks {
			in[o.ID] += st.RecordsIn
			out[o.ID] += st.RecordsOut
		}
	}
	// The sources' offsets (a subtask's counters start again with each
	// execution; the offsets go on from the restored ones).
	read := map[string]int64{}
	for _, sv := range sn.Sources {
		for _, pv := range sv.Partitions {
			read[sv.Operator] += pv.Offset
		}
	}
	for src, n := range given {
		if read[src] < int64(n) {
			return false
		}
	}
	sent := map[string]int64{}
	for _, e := range sc.spec["edges"].([]any) {
		ed := e.(map[string]any)
		sent[ed["to"].(string)] += out[ed["from"].(string)]
	}
	for op, n := range sent {
		if in[op] < n {
			return false
		}
	}
	return true
}

// notifications reads, from StateLab's events, each sink subtask's
// checkpoint-complete notifications and the transactions committed on each
// (the sink commits, then the subtask's notification event follows).
// Transactions with no records are left out, as flinkref's are compared
// without them.
func notifications(events []engine.Event) map[string][]notification {
	out := map[string][]notification{}
	pending := map[string][]txnCommit{}
	for _, e := range events {
		if e.Operator != "sink" {
			continue
		}
		switch e.Kind {
		case engine.EvTxnCommitted:
			pending[e.Task] = append(pending[e.Task], txnCommit{Checkpoint: e.Checkpoint, Records: int(e.Records)})
		case engine.EvNotifyComplete:
			out[e.Task] = append(out[e.Task], notification{Checkpoint: e.Checkpoint, Committed: nonEmpty(pending[e.Task])})
			delete(pending, e.Task)
		}
	}
	return out
}

func nonEmpty(c []txnCommit) []txnCommit {
	out := []txnCommit{}
	for _, t := range c {
		if t.Records > 0 {
			out = append(out, t)
		}
	}
	return out
}

// deleteLatestCheckpointFiles deletes every state file (all but
// _metadata) of the latest retained checkpoint under dir and returns its id.
// checkpointDamage is how each checkpoint-damaging fault breaks the latest
// checkpoint in the job's directory; it returns the checkpoint's id.
var checkpointDamage = map[string]func(dir string, sn *engine.Snapshot) (int64, error){
	breakLatest:    deleteLatestCheckpointFiles,
	corruptPending: cutLatestPendingTransactions,
}

func deleteLatestCheckpointFiles(dir string, sn *engine.Snapshot) (int64, error) {
	var latest int64
	for _, c := range sn.Checkpoints.Retained {
		if !c.Savepoint && c.ID > latest {
			latest = c.ID
		}
	}
	if latest == 0 {
		return 0, fmt.Errorf("no retained checkpoint to break")
	}
	chk := filepath.Join(dir, "checkpoints", sn.Job.CheckpointDir, fmt.Sprintf("chk-%d", latest))
	entries, err := os.ReadDir(chk)
	if err != nil {
		return 0, fmt.Errorf("the latest checkpoint's directory: %w", err)
	}
	n := 0
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != "_metadata" {
			if err := os.Remove(filepath.Join(chk, e.Name())); err != nil {
				return 0, err
			}
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("checkpoint %d has no state file in %s", latest, chk)
	}
	return latest, nil
}

// cutLatestPendingTransactions cuts off the first "pending-transactions"
// element of every subtask in the latest retained checkpoint's metadata (a
// JSON value cut short) and rewrites the metadata's header with a CRC32C
// and length that match, so only decoding the element can find it. It
// returns the checkpoint's id.
func cutLatestPendingTransactions(dir string, sn *engine.Snapshot) (int64, error) {
	var latest int64
	for _, c := range sn.Checkpoints.Retained {
		if !c.Savepoint && c.ID > latest {
			latest = c.ID
		}
	}
	if latest == 0 {
		return 0, fmt.Errorf("no retained checkpoint to damage")
	}
	p := filepath.Join(dir, "checkpoints", sn.Job.CheckpointDir, fmt.Sprintf("chk-%d", latest), "_metadata")
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	nl := bytes.IndexByte(b, '\n')
	head := bytes.Fields(b[:max(nl, 0)])
	if nl < 0 || len(head) < 3 {
		return 0, fmt.Errorf("%s: no metadata header", p)
	}
	var m state.CheckpointMetadata
	if err := json.Unmarshal(b[nl+1:], &m); err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	cut := 0
	for i := range m.Operators {
		for _, st := range m.Operators[i].Subtasks {
			if st.Operator == nil {
				continue
			}
			for k := range st.Operator.States {
				if es := st.Operator.States[k].Elements; st.Operator.States[k].Name == "pending-transactions" && len(es) > 0 {
					es[0] = es[0][:len(es[0])/2]
					cut++
				}
			}
		}
	}
	if cut == 0 {
		return 0, fmt.Errorf("checkpoint %d holds no pending transaction", latest)
	}
	body, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		return 0, err
	}
	body = append(body, '\n')
	// The header: the magic (two words), then the body's CRC32C and length.
	hdr := fmt.Sprintf("%s %s crc32c=%08x length=%d\n", head[0], head[1], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)), len(body))
	return latest, os.WriteFile(p, append([]byte(hdr), body...), 0o644)
}

func allRunning(sn *engine.Snapshot) bool {
	if sn.Job.Status != engine.JobRunning {
		return false
	}
	for _, o := range sn.Job.Operators {
		for _, st := range o.Subtasks {
			if st.Status != engine.TaskRunning {
				return false
			}
		}
	}
	return true
}

func taskManagerOf(sn *engine.Snapshot, task string) string {
	for _, o := range sn.Job.Operators {
		for _, st := range o.Subtasks {
			if st.Name == task {
				return st.TaskManager
			}
		}
	}
	return ""
}

// taskStatus is task's status in the snapshot ("" if there is no such task).
func taskStatus(sn *engine.Snapshot, task string) engine.TaskStatus {
	for _, o := range sn.Job.Operators {
		for _, st := range o.Subtasks {
			if st.Name == task {
				return st.Status
			}
		}
	}
	return ""
}

func recordsIn(sn *engine.Snapshot, task string) int64 {
	for _, o := range sn.Job.Operators {
		for _, st := range o.Subtasks {
			if st.Name == task {
				return st.RecordsIn
			}
		}
	}
	return 0
}

// sourceRead is how many records source's subtasks have read.
func sourceRead(sn *engine.Snapshot, source string) int64 {
	var n int64
	for _, o := range sn.Job.Operators {
		if o.ID == source {
			for _, st := range o.Subtasks {
				n += st.RecordsIn
			}
		}
	}
	return n
}

// pendingTimers reads every alerts subtask's pending timers through the
// state inspector.
func pendingTimers(t *testing.T, s *engine.Stepper, sn *engine.Snapshot) map[string]map[int][]state.Timer {
	t.Helper()
	out := map[string]map[int][]state.Timer{}
	for _, o := range sn.Job.Operators {
		if o.Kind != engine.KindAlerts {
			continue
		}
		m := map[int][]state.Timer{}
		for _, st := range o.Subtasks {
			v, err := s.TaskState(st.Name, 1_000_000)
			if err != nil {
				t.Fatalf("StateLab's state inspector on %s: %v", st.Name, err)
			}
			m[st.Index] = v.Timers
		}
		out[o.ID] = m
	}
	return out
}

func keyGroupsOf(sn *engine.Snapshot) map[string]map[int]kgRange {
	out := map[string]map[int]kgRange{}
	for _, o := range sn.Job.Operators {
		if !o.Keyed {
			continue
		}
		m := map[int]kgRange{}
		for _, st := range o.Subtasks {
			if st.KeyGroups != nil {
				m[st.Index] = kgRange{st.KeyGroups.Start, st.KeyGroups.End}
			}
		}
		out[o.ID] = m
	}
	return out
}

// keyedState reads every count/sum subtask's ValueState through the state
// inspector.
func keyedState(t *testing.T, s *engine.Stepper, sn *engine.Snapshot) map[string]map[int]map[string]int64 {
	t.Helper()
	out := map[string]map[int]map[string]int64{}
	for _, o := range sn.Job.Operators {
		if o.Kind != "count" && o.Kind != "sum" {
			continue
		}
		m := map[int]map[string]int64{}
		for _, st := range o.Subtasks {
			m[st.Index] = subtaskKeys(t, s, st.Name, o.Kind)
		}
		out[o.ID] = m
	}
	return out
}

// subtaskKeys reads one count/sum subtask's ValueState (kind names it)
// through the state inspector.
func subtaskKeys(t *testing.T, s *engine.Stepper, task, kind string) map[string]int64 {
	t.Helper()
	v, err := s.TaskState(task, 1_000_000)
	if err != nil {
		t.Fatalf("StateLab's state inspector on %s: %v", task, err)
	}
	keys := map[string]int64{}
	for _, e := range v.Keyed {
		// An expired TTL value no read has cleared yet is not
		// returned (StateTtlConfig's NeverReturnExpired, what
		// flinkref's dump reads through ValueState.value()).
		if e.State != kind || e.Expired {
			continue
		}
		n, err := strconv.ParseInt(e.Value, 10, 64)
		if err != nil {
			t.Fatalf("StateLab's %s value of %q on %s is %q, not a number", e.State, e.Key, task, e.Value)
		}
		keys[e.Key] = n
	}
	return keys
}

// heldKeys is each count and sum subtask's keys, expired TTL values too
// (what flinkref's keyNames reads: KeyedStateBackend.getKeys).
func heldKeys(t *testing.T, s *engine.Stepper, sn *engine.Snapshot) map[string]map[int][]string {
	t.Helper()
	out := map[string]map[int][]string{}
	for _, o := range sn.Job.Operators {
		if o.Kind != "count" && o.Kind != "sum" {
			continue
		}
		m := map[int][]string{}
		for _, st := range o.Subtasks {
			v, err := s.TaskState(st.Name, 1_000_000)
			if err != nil {
				t.Fatalf("StateLab's state inspector on %s: %v", st.Name, err)
			}
			keys := []string{}
			for _, e := range v.Keyed {
				if e.State == o.Kind {
					keys = append(keys, e.Key)
				}
			}
			sort.Strings(keys)
			m[st.Index] = keys
		}
		out[o.ID] = m
	}
	return out
}

func deepCopy(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	return c
}

// StateLab's runs of the scenarios whose Flink side depends on them
// (scenario.cutAtStateLab), by name: run once, read twice.
var (
	slRunsMu sync.Mutex
	slRuns   = map[string]*slRun{}
)

type slRun struct {
	res *slResult
	err error
}

// runStateLabOnce is runStateLab, remembered for a cutAtStateLab scenario.
func runStateLabOnce(t *testing.T, sc *scenario) (*slResult, error) {
	t.Helper()
	if !sc.cutAtStateLab {
		return runStateLab(t, sc)
	}
	slRunsMu.Lock()
	defer slRunsMu.Unlock()
	if r := slRuns[sc.name]; r != nil {
		return r.res, r.err
	}
	res, err := runStateLab(t, sc)
	slRuns[sc.name] = &slRun{res, err}
	return res, err
}

// statelabCut is where StateLab's savepoint before phase 1 fell: the offset
// of each source partition that phase 1's source subtasks restored.
func statelabCut(t *testing.T, sc *scenario) (map[string][]int64, error) {
	t.Helper()
	res, err := runStateLabOnce(t, sc)
	if err != nil {
		return nil, err
	}
	if len(res.phases) < 2 {
		return nil, fmt.Errorf("StateLab ran %d phases, want 2", len(res.phases))
	}
	cut := map[string][]int64{}
	for _, src := range sc.sources() {
		offs := make([]int64, sc.partitions[src])
		seen := make([]bool, len(offs))
		for _, e := range res.phases[1].restores {
			if e.Restore == nil || !strings.HasPrefix(e.Task, src+"#") {
				continue
			}
			for _, po := range e.Restore.Offsets {
				if po.Partition >= 0 && po.Partition < len(offs) {
					offs[po.Partition], seen[po.Partition] = po.Offset, true
				}
			}
		}
		for p, ok := range seen {
			if !ok {
				return nil, fmt.Errorf("no subtask of %s restored partition %d", src, p)
			}
		}
		cut[src] = offs
	}
	return cut, nil
}

// localKeyedFile is a keyed snapshot file's path in a TaskManager's
// task-local store: chk-N/<operator>-<subtask>[-kg<first>-<last>].kgs.
var localKeyedFile = regexp.MustCompile(`(?:^|/)chk-(\d+)/([a-z][a-z0-9_]*)-(\d+)(?:-[^/]*)?\.kgs$`)

// localCheckpoints lists the checkpoints each keyed subtask holds a local
// copy of on any TaskManager's disk under dir (the engine's
// local/<tm>/<incarnation>/localState/<job>/ stores), sorted.
func localCheckpoints(t *testing.T, dir string) map[string][]int64 {
	out := map[string][]int64{}
	root := filepath.Join(dir, "local")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		m := localKeyedFile.FindStringSubmatch(filepath.ToSlash(p))
		if m == nil || !strings.Contains(filepath.ToSlash(p), "/localState/") {
			return nil
		}
		id, _ := strconv.ParseInt(m[1], 10, 64)
		task := m[2] + "#" + m[3]
		if !slices.Contains(out[task], id) {
			out[task] = append(out[task], id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("list the local disks: %v", err)
	}
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out
}
