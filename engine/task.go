package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// outEdge is one output edge of a subtask: its partitioner and the channels
// to the downstream subtasks, with the batch being filled for each.
type outEdge struct {
	edge    int
	part    Partitioner
	down    *execOperator
	chans   []*channel
	rr      int
	pending []*batch
}

// ctlKind is a message from the JobManager to a subtask.
type ctlKind uint8

const (
	ctlDeploy         ctlKind = iota // DEPLOYING -> INITIALIZING
	ctlInit                          // restore state, then RUNNING
	ctlTrigger                       // sources: take a snapshot, emit barrier
	ctlNotifyComplete                // checkpoint complete: commit
	ctlNotifyAborted                 // checkpoint aborted: stop aligning it
	ctlInspect                       // Live: read state for the inspector
)

type control struct {
	kind    ctlKind
	attempt int
	barrier barrier
	id      int64
	stop    bool // notify of a stop-with-savepoint: finish afterwards
	restore *restoreSpec
	reply   chan TaskStateView
	seq     int64
	// localDir (ctlDeploy, ctlInit) is the TaskManager's local disk when
	// the JobManager deployed the subtask: the subtask's goroutine must not
	// read it from the TaskManager, which a restart-taskmanager changes on
	// the JobManager's side meanwhile.
	localDir string
}

// jmKind is a message from a subtask to the JobManager.
type jmKind uint8

const (
	jmRunning  jmKind = iota // the subtask restored its state and runs
	jmAck                    // checkpoint acknowledged
	jmDecline                // checkpoint declined
	jmFailed                 // the subtask failed
	jmFinished               // the subtask finished after stop-with-savepoint
)

type jmMsg struct {
	kind    jmKind
	attempt int
	task    *subtask
	id      int64
	state   *state.SubtaskState
	ack     AckStats
	reason  string
	// failReason is a decline's CheckpointFailureReason (empty: declined).
	failReason CheckpointFailureReason
	seq        int64
}

// restoreSpec is what the JobManager hands a subtask to restore.
type restoreSpec struct {
	checkpoint int64
	savepoint  bool
	storage    state.CheckpointStorage
	keyed      []*state.KeyedStateHandle
	reads      []rescale.Read
	operator   *state.OperatorBackend
}

// pendingAck is an acknowledgement whose asynchronous part is still running
// (the Stepper delivers it after a modelled delay).
type pendingAck struct {
	msg   jmMsg
	delay time.Duration
	async state.AsyncSnapshot // the keyed snapshot's asynchronous part, if any
}

// subtask is one parallel instance of an operator. Its methods are the task
// state machine: they take one input (an element on an input channel, a
// control message, a source poll) and leave their outputs in the outbox,
// toJM, acks and events, which the driver moves on. They start no
// goroutine, read no clock (the driver sets now) and draw no random number.
type subtask struct {
	c     *core
	ex    *execution
	op    *execOperator
	index int
	name  string

	status atomic.Value // TaskStatus
	// dead is set when the subtask's TaskManager died: it does nothing
	// more, while the JobManager still believes it RUNNING until the
	// heartbeat timeout.
	dead atomic.Bool
	// incarnation counts the restarts of this subtask within one
	// execution (region failover); stop and done are its goroutine's on
	// the Live driver.
	incarnation int
	stop        func()
	done        chan struct{}
	tm          *taskManager
	slot        int

	inputs    []*channel
	inputEdge []int
	outs      []*outEdge

	// Barrier alignment (Flink's SingleCheckpointBarrierHandler).
	alignID    int64
	alignBar   barrier
	alignSeen  []bool
	alignCount int
	alignStart time.Duration
	// lastBarrier is the newest checkpoint this subtask has snapshotted or
	// given up; barriers up to it are ignored.
	lastBarrier int64
	// unal is the unaligned checkpoint in progress, replay the restored
	// channel state still to replay (unaligned.go); early holds what a
	// chain predecessor handed this subtask before it opened (chain.go).
	unal   *unalignedCP
	replay []channelEntry
	early  []element

	inWM []int64
	wm   atomic.Int64

	fn        operatorLogic
	src       *sourceLogic
	keyed     state.KeyedBackend
	opBackend *state.OperatorBackend
	localDir  string

	ctlMu sync.Mutex
	ctl   []control
	// wakeC wakes the subtask's goroutine (Live driver).
	wakeC chan struct{}

	// Outputs of the current input, moved on by the driver.
	outbox []outItem
	toJM   []jmMsg
	acks   []pendingAck
	events []Event
	cost   time.Duration // Stepper: virtual time the step took beyond its base cost

	now     time.Duration
	verbose bool

	recordsIn  atomic.Int64
	recordsOut atomic.Int64
	// emitted counts records emitted since the last flush, which adds them
	// to recordsOut: one atomic add per batch, not per record.
	emitted int64
	// linger is set by the Live driver, to the driver's batch size, while
	// the subtask handles an input element: its output batches stay open
	// after the element (a batch leaves as soon as it holds linger
	// records), as Flink's RecordWriter fills a
	// network buffer across records until it is full or flushed. The
	// driver flushes them when the subtask runs out of input, after at
	// most lingerFor, and before any other element (a barrier or a
	// watermark broadcast flushes first), so records never overtake what
	// follows them. holding says the driver counts such open batches as in
	// transit (since holdSince, wall-clock nanoseconds). The Stepper never
	// sets linger: every step sends its outputs.
	linger    int
	holding   bool
	holdSince int64
	// inKeyGroups are the key groups of the records being processed, when
	// they came over a hash edge (batch.kgs); nil otherwise.
	inKeyGroups []int32
	updates     int64 // keyed state writes since the last snapshot
	failure     atomic.Pointer[string]
	finished    bool
	pollSeq     int64
	// pendingRestore is handed to the subtask when it is deployed.
	pendingRestore *restoreSpec
	closed         bool
	restoredCP     atomic.Int64
	restoreInfo    *RestoreInfo

	// figures is what a running subtask of a Live run last published of
	// itself for snapshots, which must not read its fields while its
	// goroutine runs (publishFigures). pubAt, pubDirty and metricsEvery are
	// the task goroutine's own (times in wall-clock nanoseconds).
	figures      atomic.Pointer[taskFigures]
	pubAt        int64
	pubDirty     bool
	metricsEvery int64
}

// taskFigures are a Live subtask's published figures: what the Stepper's
// snapshots read from the subtask directly. They are never changed once
// published.
type taskFigures struct {
	offsets []PartitionOffset
	opState map[string][]string
	state   *state.BackendMetrics
	stateAt int64 // wall-clock nanoseconds when state was measured
}

// publishFigures publishes the subtask's source offsets, operator state and
// keyed state figures (Live: called by the subtask's goroutine). Keyed
// figures scan the state, so they are measured at most every second and
// never more often than keeps the scan under 5 % of the subtask's time;
// when it kept older ones, it returns how long until they may be measured
// again (0: all is fresh).
func (t *subtask) publishFigures(now int64) (stale int64) {
	if t.closed || t.getStatus() != TaskRunning {
		return 0
	}
	f := &taskFigures{}
	if t.src != nil {
		for _, pc := range t.src.parts {
			f.offsets = append(f.offsets, PartitionOffset{Partition: pc.partition, Offset: pc.offset})
		}
	}
	if t.opBackend != nil {
		if m := operatorStateStrings(t.opBackend); len(m) > 0 {
			f.opState = m
		}
	}
	if t.keyed != nil {
		if prev := t.figures.Load(); prev != nil && prev.state != nil && now-prev.stateAt < t.metricsEvery {
			f.state, f.stateAt = prev.state, prev.stateAt
			stale = prev.stateAt + t.metricsEvery - now
		} else {
			start := time.Now()
			if m, err := t.keyed.Metrics(); err == nil {
				f.state, f.stateAt = &m, now
			}
			t.metricsEvery = max(int64(time.Second), 20*int64(time.Since(start)))
		}
	}
	t.figures.Store(f)
	return stale
}

type outItem struct {
	ch *channel
	e  element
}

func newSubtask(c *core, ex *execution, eo *execOperator, index int) *subtask {
	t := &subtask{c: c, ex: ex, op: eo, index: index, name: taskName(eo.spec.ID, index)}
	t.status.Store(TaskCreated)
	t.wm.Store(MinWatermark)
	return t
}

func (t *subtask) initInputs() {
	t.alignSeen = make([]bool, len(t.inputs))
	t.inWM = make([]int64, len(t.inputs))
	for i := range t.inWM {
		t.inWM[i] = MinWatermark
	}
}

func (t *subtask) setFailure(s string) { t.failure.Store(&s) }

func (t *subtask) getFailure() string {
	if p := t.failure.Load(); p != nil {
		return *p
	}
	return ""
}

// Status returns the task status.
func (t *subtask) getStatus() TaskStatus { return t.status.Load().(TaskStatus) }

// setStatus changes the status and reports it.
func (t *subtask) setStatus(s TaskStatus) {
	prev := t.getStatus()
	if prev == s {
		return
	}
	t.status.Store(s)
	tm := ""
	if t.tm != nil {
		tm = t.tm.id
	}
	t.c.publish(Event{Kind: EvTaskStatus, Task: t.name, Operator: t.op.spec.ID, Status: string(s), Previous: string(prev),
		TaskManager: tm, Message: fmt.Sprintf("%s switched from %s to %s", t.name, prev, s)})
}

func (t *subtask) event(e Event) {
	if e.Task == "" {
		e.Task = t.name
	}
	if e.Operator == "" {
		e.Operator = t.op.spec.ID
	}
	t.events = append(t.events, e)
}

// sendCtl queues a control message for the subtask.
func (t *subtask) sendCtl(m control) {
	t.ctlMu.Lock()
	t.ctl = append(t.ctl, m)
	t.ctlMu.Unlock()
}

func (t *subtask) peekCtl() (control, bool) {
	t.ctlMu.Lock()
	defer t.ctlMu.Unlock()
	if len(t.ctl) == 0 {
		return control{}, false
	}
	return t.ctl[0], true
}

func (t *subtask) popCtl() (control, bool) {
	t.ctlMu.Lock()
	defer t.ctlMu.Unlock()
	if len(t.ctl) == 0 {
		return control{}, false
	}
	m := t.ctl[0]
	t.ctl = t.ctl[1:]
	return m, true
}

// hasOutputSpace reports whether every output channel can take an element:
// a subtask whose output is full is backpressured and takes no input.
func (t *subtask) hasOutputSpace() bool {
	for _, oe := range t.outs {
		for _, ch := range oe.chans {
			if ch.chained {
				// A chain has room when every operator of it has.
				if !ch.to.hasOutputSpace() {
					return false
				}
				continue
			}
			if ch.full() {
				return false
			}
		}
	}
	return true
}

// --- outputs -------------------------------------------------------------

// emit routes one record to every output edge by its partitioner.
func (t *subtask) emit(r Record) {
	t.emitted++
	for _, oe := range t.outs {
		switch oe.part {
		case Forward:
			if b := oe.add(0, r); t.linger > 0 && len(b.recs) >= t.linger {
				t.sendPending(oe, 0)
			}
		case Rebalance:
			if b := oe.add(oe.rr, r); t.linger > 0 && len(b.recs) >= t.linger {
				t.sendPending(oe, oe.rr)
			}
			oe.rr++
			if oe.rr == len(oe.chans) {
				oe.rr = 0
			}
		case Hash:
			kg := rescale.KeyGroupForString(r.Key, oe.down.maxPar)
			i := rescale.OperatorIndexForKeyGroup(oe.down.maxPar, oe.down.parallelism, kg)
			b := oe.add(i, r)
			b.kgs = append(b.kgs, int32(kg))
			if t.linger > 0 && len(b.recs) >= t.linger {
				t.sendPending(oe, i)
			}
		case Broadcast:
			for i := range oe.chans {
				if b := oe.add(i, r); t.linger > 0 && len(b.recs) >= t.linger {
					t.sendPending(oe, i)
				}
			}
		}
	}
}

// sendPending moves output batch oe.pending[i] into the outbox (emit, when
// it is full while the subtask lingers).
func (t *subtask) sendPending(oe *outEdge, i int) {
	b := oe.pending[i]
	oe.pending[i] = nil
	t.send(oe.chans[i], b)
}

// hasPending reports whether an output batch is open (not yet flushed).
func (t *subtask) hasPending() bool {
	for _, oe := range t.outs {
		for _, b := range oe.pending {
			if b != nil {
				return true
			}
		}
	}
	return false
}

// soleForward returns the subtask's output edge when it has exactly one
// and that edge is forward (one channel), else nil.
func (t *subtask) soleForward() *outEdge {
	if len(t.outs) == 1 && t.outs[0].part == Forward && len(t.outs[0].pending) == 1 {
		return t.outs[0]
	}
	return nil
}

func (oe *outEdge) add(i int, r Record) *batch {
	b := oe.pending[i]
	if b == nil {
		b = newBatch()
		oe.pending[i] = b
	}
	b.recs = append(b.recs, r)
	return b
}

// flush moves the batches being filled into the outbox, so that any element
// emitted next (a barrier, a watermark) stays behind the records.
func (t *subtask) flush() {
	if t.emitted > 0 {
		t.recordsOut.Add(t.emitted)
		t.emitted = 0
	}
	for _, oe := range t.outs {
		for i, b := range oe.pending {
			if b == nil {
				continue
			}
			oe.pending[i] = nil
			t.send(oe.chans[i], b)
		}
	}
}

// send puts a batch of records for ch into the outbox.
func (t *subtask) send(ch *channel, b *batch) {
	t.outbox = append(t.outbox, outItem{ch: ch, e: element{kind: elemRecords, batch: b}})
	if t.verbose {
		t.event(Event{Kind: EvRecordsSent, Channel: ch.name, From: t.name, To: ch.to.name, Edge: edgeRef(ch.edge),
			Records: len(b.recs), Message: fmt.Sprintf("%s sent %d records to %s", t.name, len(b.recs), ch.to.name)})
	}
}

// broadcastElement sends e on every output channel.
func (t *subtask) broadcastElement(e element) {
	t.flush()
	for _, oe := range t.outs {
		for _, ch := range oe.chans {
			t.outbox = append(t.outbox, outItem{ch: ch, e: e})
		}
	}
}

// --- inputs --------------------------------------------------------------

// handleElement processes the head element of input channel in.
func (t *subtask) handleElement(in int, e element) error {
	if err := t.checkAlignmentTimeout(); err != nil {
		return err
	}
	switch e.kind {
	case elemRecords:
		t.persistInFlight(in, e.batch.recs)
		n := len(e.batch.recs)
		t.recordsIn.Add(int64(n))
		if t.verbose {
			ch := t.inputs[in]
			t.event(Event{Kind: EvRecordsReceived, Channel: ch.name, From: ch.from.name, To: t.name, Edge: edgeRef(ch.edge), Records: n,
				Message: fmt.Sprintf("%s processed %d records from %s", t.name, n, ch.from.name)})
		}
		if len(e.batch.kgs) == n {
			t.inKeyGroups = e.batch.kgs
		}
		err := t.fn.process(t, t.inputIndexOfEdge(in), e.batch.recs)
		t.inKeyGroups = nil
		e.batch.release()
		if err != nil {
			return err
		}
		if t.linger > 0 {
			// Full batches left already (emit); the driver
			// flushes the rest.
			if t.emitted > 0 {
				t.recordsOut.Add(t.emitted)
				t.emitted = 0
			}
			return nil
		}
		t.flush()
		return nil
	case elemWatermark:
		return t.handleWatermark(in, e.watermark)
	case elemBarrier:
		return t.handleBarrier(in, e.barrier)
	}
	return nil
}

// inputIndexOfEdge turns an input channel into the index of its edge among
// the operator's input edges (0 for the first input, 1 for the second).
func (t *subtask) inputIndexOfEdge(in int) int {
	e := t.inputEdge[in]
	for i, ie := range t.op.inEdges {
		if ie == e {
			return i
		}
	}
	return 0
}

func (t *subtask) handleWatermark(in int, wm int64) error {
	if wm <= t.inWM[in] {
		return nil
	}
	t.inWM[in] = wm
	low := MaxWatermark
	for _, w := range t.inWM {
		low = min(low, w)
	}
	if low <= t.wm.Load() {
		return nil
	}
	t.wm.Store(low)
	if err := t.fn.watermark(t, low); err != nil {
		return err
	}
	t.broadcastElement(element{kind: elemWatermark, watermark: low})
	if t.verbose {
		t.event(Event{Kind: EvWatermark, Watermark: low, Message: fmt.Sprintf("%s advanced its watermark to %s", t.name, fmtWatermark(low))})
	}
	return nil
}

func fmtWatermark(w int64) string {
	switch w {
	case MinWatermark:
		return "-∞"
	case MaxWatermark:
		return "+∞ (end of input)"
	}
	return strconv.FormatInt(w, 10)
}

// handleBarrier is barrier alignment. In exactly-once mode each input that
// delivered barrier n is blocked until all inputs have; then the subtask
// snapshots its state and forwards the barrier. In at-least-once mode inputs
// are never blocked, so records behind the barrier on a fast input enter the
// snapshot. The mode is the one barriers are handled with (core.barrierMode):
// at-least-once for a job with no checkpoint interval, as in Flink.
func (t *subtask) handleBarrier(in int, b barrier) error {
	ch := t.inputs[in]
	if t.verbose {
		t.event(Event{Kind: EvBarrierReceived, Channel: ch.name, From: ch.from.name, To: t.name, Edge: edgeRef(ch.edge), Checkpoint: b.ID, Savepoint: b.Savepoint,
			Message: fmt.Sprintf("%s received barrier %d from %s", t.name, b.ID, ch.from.name)})
	}
	if done, err := t.unalignedBarrier(in, b); done {
		return err
	}
	if b.ID <= t.lastBarrier {
		return nil // a checkpoint this subtask already finished or gave up
	}
	if t.alignID != 0 && b.ID > t.alignID {
		// A newer barrier overtook the checkpoint being aligned: give that one up.
		t.abortAlignment(fmt.Sprintf("barrier %d arrived at %s before checkpoint %d was aligned", b.ID, t.name, t.alignID), true)
	}
	if t.alignID == 0 {
		t.alignID, t.alignBar, t.alignCount, t.alignStart = b.ID, b, 0, t.now
		clear(t.alignSeen)
	}
	if t.alignSeen[in] {
		return fmt.Errorf("barrier %d arrived twice on %s", b.ID, ch.name)
	}
	t.alignSeen[in] = true
	t.alignCount++
	if t.alignCount < len(t.inputs) {
		if t.c.barrierMode() == ExactlyOnce {
			ch.blocked.Store(true)
			ch.blockedFor.Store(b.ID)
			t.event(Event{Kind: EvChannelBlocked, Channel: ch.name, From: ch.from.name, To: t.name, Edge: edgeRef(ch.edge), Checkpoint: b.ID,
				Message: fmt.Sprintf("%s blocks %s until barrier %d has arrived on all %d inputs", t.name, ch.name, b.ID, len(t.inputs))})
		}
		return nil
	}
	alignment := t.now - t.alignStart
	id := t.alignID
	t.unblockAll(id)
	t.alignID = 0
	t.lastBarrier = id
	return t.checkpoint(b, alignment)
}

func (t *subtask) unblockAll(id int64) {
	for _, ch := range t.inputs {
		if ch.blocked.Load() {
			ch.blocked.Store(false)
			ch.blockedFor.Store(0)
			t.event(Event{Kind: EvChannelUnblocked, Channel: ch.name, From: ch.from.name, To: t.name, Edge: edgeRef(ch.edge), Checkpoint: id,
				Message: fmt.Sprintf("%s unblocks %s", t.name, ch.name)})
		}
	}
}

// abortAlignment gives up the checkpoint being aligned.
func (t *subtask) abortAlignment(reason string, decline bool) {
	id := t.alignID
	if id == 0 {
		return
	}
	t.unblockAll(id)
	t.alignID = 0
	t.lastBarrier = max(t.lastBarrier, id)
	if decline {
		t.toJM = append(t.toJM, jmMsg{kind: jmDecline, attempt: t.ex.attempt, task: t, id: id, reason: reason, failReason: CheckpointDeclinedSubsumed})
		t.event(Event{Kind: EvCheckpointDecline, Checkpoint: id, Message: fmt.Sprintf("%s declined checkpoint %d: %s", t.name, id, reason)})
	}
}

// checkpoint takes the snapshot for barrier b, forwards the barrier and
// acknowledges. Forwarding first is what Flink does: downstream can start
// aligning while this subtask writes its state.
func (t *subtask) checkpoint(b barrier, alignment time.Duration) error {
	t.broadcastElement(element{kind: elemBarrier, barrier: b})
	if t.verbose {
		for _, oe := range t.outs {
			for _, ch := range oe.chans {
				t.event(Event{Kind: EvBarrierSent, Channel: ch.name, From: t.name, To: ch.to.name, Edge: edgeRef(ch.edge), Checkpoint: b.ID, Savepoint: b.Savepoint,
					Message: fmt.Sprintf("%s forwarded barrier %d to %s", t.name, b.ID, ch.to.name)})
			}
		}
	}
	start := t.c.clock()
	st, async, err := t.snapshotState(b)
	if err != nil {
		t.decline(b.ID, err)
		return nil
	}
	if t.c.snapshotStall != nil {
		if d := t.c.snapshotStall(t.name, b.ID); d > 0 && t.c.measure {
			time.Sleep(d) // Live: the subtask's goroutine stalls, and the duration measured includes it
		} else if d > 0 {
			t.cost += d // Stepper: modelled, the subtask busy for d
		}
	}
	sync, asyncDur := t.c.snapshotCost(t.updates, start)
	t.cost += sync
	t.updates = 0
	ack := AckStats{Task: t.name, Operator: t.op.spec.ID, Subtask: t.index,
		SyncDuration: sync, AsyncDuration: asyncDur, AlignmentDuration: alignment,
		StartDelay: max(0, t.now-alignment-time.Duration(b.Time)), StateSize: st.Operator.Size(), CheckpointedSize: st.Operator.Size(), Unaligned: b.Unaligned}
	t.acks = append(t.acks, pendingAck{delay: asyncDur, async: async, msg: jmMsg{kind: jmAck, attempt: t.ex.attempt, task: t, id: b.ID, state: st, ack: ack}})
	return nil
}

func (t *subtask) decline(id int64, err error) {
	why := CheckpointDeclined
	if errors.Is(err, state.ErrStateTooLarge) {
		// Flink hits the jobmanager storage's cap while writing the state
		// stream, in the snapshot's asynchronous part.
		why = CheckpointAsyncException
	}
	t.toJM = append(t.toJM, jmMsg{kind: jmDecline, attempt: t.ex.attempt, task: t, id: id, reason: err.Error(), failReason: why})
	t.event(Event{Kind: EvCheckpointDecline, Checkpoint: id, Message: fmt.Sprintf("%s declined checkpoint %d: %v", t.name, id, err)})
}

// snapshotState runs the operator's snapshot hook, snapshots operator state
// and starts the keyed snapshot: its synchronous part runs now, at the
// barrier; the asynchronous part (writing, uploading) is returned.
func (t *subtask) snapshotState(b barrier) (*state.SubtaskState, state.AsyncSnapshot, error) {
	if err := t.fn.snapshot(t, b); err != nil {
		return nil, nil, err
	}
	st := &state.SubtaskState{Subtask: t.index, Operator: t.opBackend.Snapshot()}
	if t.keyed == nil {
		return st, nil, nil
	}
	target := state.SnapshotTarget{CheckpointID: b.ID, Savepoint: b.Savepoint}
	async, err := t.keyed.StartSnapshot(target, t.snapshotStorage(b.Savepoint))
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot keyed state: %w", err)
	}
	return st, async, nil
}

// finish runs the asynchronous part of a snapshot and completes the
// acknowledgement with the keyed handle and sizes; on failure it returns a
// decline instead.
func (p *pendingAck) finish() jmMsg {
	if p.async == nil {
		return p.msg
	}
	h, err := p.async.Finish()
	p.async = nil
	if err != nil {
		return jmMsg{kind: jmDecline, attempt: p.msg.attempt, task: p.msg.task, id: p.msg.id, failReason: CheckpointAsyncException,
			reason: fmt.Sprintf("%s could not finish its snapshot: %v", p.msg.task.name, err)}
	}
	m := p.msg
	st := *m.state
	st.Keyed = h
	m.state = &st
	m.ack.StateSize += h.StateSize
	m.ack.CheckpointedSize += h.CheckpointedSize
	return m
}

// --- control -------------------------------------------------------------

// handleControl processes one message from the JobManager.
func (t *subtask) handleControl(m control) error {
	if m.attempt != t.ex.attempt {
		return nil
	}
	switch m.kind {
	case ctlDeploy:
		if t.getStatus() != TaskDeploying {
			return nil
		}
		t.setStatus(TaskInitializing)
		t.sendCtl(control{kind: ctlInit, attempt: m.attempt, restore: m.restore, seq: t.c.nextSeq(), localDir: m.localDir})
	case ctlInit:
		if t.getStatus() != TaskInitializing {
			return nil
		}
		if err := t.open(m.restore, m.localDir); err != nil {
			return fmt.Errorf("restore %s: %w", t.name, err)
		}
		t.setStatus(TaskRunning)
		t.toJM = append(t.toJM, jmMsg{kind: jmRunning, attempt: t.ex.attempt, task: t})
		if err := t.replayChannelState(); err != nil {
			return err
		}
		if err := t.chainOpened(); err != nil {
			return err
		}
	case ctlTrigger:
		if t.getStatus() != TaskRunning || t.src == nil {
			t.toJM = append(t.toJM, jmMsg{kind: jmDecline, attempt: t.ex.attempt, task: t, id: m.barrier.ID, reason: t.name + " is not running", failReason: CheckpointDeclinedTaskNotReady})
			return nil
		}
		if t.c.skipCheckpoint != nil && t.c.skipCheckpoint(t.name, m.barrier.ID) {
			// Options.SkipCheckpoint: this source takes no part in the
			// checkpoint (Flink: an externally induced source whose reader
			// skipped it), and says nothing about it: a fault for tests,
			// with no event of its own.
			return nil
		}
		t.lastBarrier = max(t.lastBarrier, m.barrier.ID)
		if err := t.checkpoint(m.barrier, 0); err != nil {
			return err
		}
		if m.barrier.Stop {
			t.src.stopped = true
		}
	case ctlNotifyComplete:
		if t.getStatus() != TaskRunning {
			return nil
		}
		if t.keyed != nil {
			t.keyed.NotifyCheckpointComplete(m.id)
		}
		if err := t.fn.notifyComplete(t, m.id); err != nil {
			return err
		}
		if t.verbose {
			t.event(Event{Kind: EvNotifyComplete, Checkpoint: m.id, Message: fmt.Sprintf("%s was notified that checkpoint %d completed", t.name, m.id)})
		}
		if m.stop {
			t.flush()
			t.finished = true
			t.setStatus(TaskFinished)
			t.toJM = append(t.toJM, jmMsg{kind: jmFinished, attempt: t.ex.attempt, task: t})
		}
	case ctlNotifyAborted:
		if t.alignID == m.id {
			t.abortAlignment("checkpoint aborted", false)
		}
		if t.unal != nil && t.unal.id == m.id {
			t.abortUnaligned("checkpoint aborted", false)
		}
		if m.stop && t.src != nil {
			t.src.stopped = false // the stop-with-savepoint failed: keep reading
		}
		t.lastBarrier = max(t.lastBarrier, m.id)
		if t.keyed != nil {
			t.keyed.NotifyCheckpointAborted(m.id)
		}
	case ctlInspect:
		m.reply <- t.stateView()
	}
	return nil
}

// --- lifecycle -----------------------------------------------------------

// open creates the operator and its state, restoring from r if given.
func (t *subtask) open(r *restoreSpec, tmDir string) error {
	eo := t.op
	t.figures.Store(nil) // figures of an earlier attempt no longer hold
	t.fn = newOperatorLogic(t)
	if s, ok := t.fn.(*sourceLogic); ok {
		t.src = s
	}
	info := &RestoreInfo{}
	if r != nil {
		info.Checkpoint = r.checkpoint
		t.restoredCP.Store(r.checkpoint)
	}
	if eo.keyed() {
		kg := eo.keyGroupRange(t.index)
		info.KeyGroups = &kg
		cfg := state.KeyedBackendConfig{Kind: t.c.backendKind(), Name: t.name, MaxParallelism: eo.maxPar, KeyGroupRange: kg,
			Incremental: t.c.spec.Checkpointing.Incremental, Logger: t.c.logger,
			KeyRenderer: func(b []byte) string { return string(b) }}
		if cfg.Kind == state.Pebble {
			// An operator id is user input: its directory name is made
			// safe, so "../x" cannot leave the TaskManager's local disk.
			t.localDir = filepath.Join(tmDir, fmt.Sprintf("attempt-%d", t.ex.attempt),
				taskName(state.SafeDirName(eo.spec.ID), t.index))
			if t.incarnation > 0 {
				t.localDir += fmt.Sprintf(".%d", t.incarnation)
			}
			cfg.Dir = t.localDir
			cfg.FS = t.c.fsys
		}
		var err error
		if r != nil && len(r.keyed) > 0 {
			t.keyed, err = state.RestoreKeyedBackend(cfg, t.restoreStorage(r), r.keyed)
			info.Reads = r.reads
		} else {
			t.keyed, err = state.NewKeyedBackend(cfg)
		}
		if err != nil {
			return fmt.Errorf("open keyed state: %w", err)
		}
	}
	if r != nil && r.operator != nil {
		t.opBackend = r.operator
	} else {
		t.opBackend = state.NewOperatorBackend()
	}
	if err := t.takeChannelState(); err != nil {
		return err
	}
	// What was restored, before the operator rewrites its operator state.
	if r != nil && len(t.opBackend.Entries()) > 0 {
		info.OperatorState = operatorStateStrings(t.opBackend)
	}
	if err := t.fn.open(t, r, info); err != nil {
		return err
	}
	if r != nil {
		if m := operatorStateStrings(t.opBackend); len(m) > 0 {
			info.KeptOperatorState = m
		}
	}
	t.restoreInfo = info
	msg := fmt.Sprintf("%s started with empty state", t.name)
	if r != nil {
		msg = fmt.Sprintf("%s restored its state from checkpoint %d", t.name, r.checkpoint)
		if r.savepoint {
			msg = fmt.Sprintf("%s restored its state from savepoint %d", t.name, r.checkpoint)
		}
	}
	t.event(Event{Kind: EvRestore, Checkpoint: info.Checkpoint, Restore: info, Range: info.KeyGroups, Message: msg})
	t.c.subtaskRestored(t.ex, t.now)
	return nil
}

// close releases the subtask's state. With wipe the local directory is
// gone already (its TaskManager crashed); otherwise it is removed, as Flink
// removes a cancelled task's working directory.
func (t *subtask) close() {
	if t.closed {
		return
	}
	t.closed = true
	if t.fn != nil {
		t.fn.close()
	}
	for _, oe := range t.outs {
		for i, b := range oe.pending {
			b.release()
			oe.pending[i] = nil
		}
	}
	for _, it := range t.outbox {
		it.e.batch.release()
	}
	t.outbox = nil
	if t.keyed != nil {
		if err := t.keyed.Close(); err != nil && !errors.Is(err, state.ErrClosed) {
			t.c.logger.Warn("close keyed state", "task", t.name, "err", err)
		}
		t.keyed = nil
	}
	if t.localDir != "" {
		if err := state.RemoveLocalDir(t.localDir); err != nil {
			t.c.logger.Warn("remove local state directory", "task", t.name, "err", err)
		}
	}
}

func operatorStateStrings(o *state.OperatorBackend) map[string][]string {
	out := map[string][]string{}
	for _, e := range o.Entries() {
		v := e.Value
		if e.Key != "" {
			v = e.Key + "=" + e.Value
		}
		out[e.State] = append(out[e.State], v)
	}
	return out
}

// setKey scopes keyed state to r's key.
func (t *subtask) setKey(key string) (int, error) {
	return t.setKeyGroup(key, rescale.KeyGroupForString(key, t.op.maxPar))
}

// setKeyOf scopes keyed state to the key of recs[i], the records being
// processed: with the key group the hash edge computed for it when there
// is one (inKeyGroups), else computed here.
func (t *subtask) setKeyOf(recs []Record, i int) (int, error) {
	if len(t.inKeyGroups) == len(recs) {
		return t.setKeyGroup(recs[i].Key, int(t.inKeyGroups[i]))
	}
	return t.setKey(recs[i].Key)
}

func (t *subtask) setKeyGroup(key string, kg int) (int, error) {
	if err := t.keyed.SetCurrentKeyString(key, kg); err != nil {
		return kg, fmt.Errorf("set key %q (key group %d): %w", key, kg, err)
	}
	return kg, nil
}
