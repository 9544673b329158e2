package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/statelab/statelab/state"
)

// maxHistory is how many checkpoints the statistics keep, as Flink's
// web.checkpoints.history (default 10) but larger for lessons.
const maxHistory = 50

// coordinator is the CheckpointCoordinator's bookkeeping; its logic lives in
// methods on core, which owns the execution it talks to.
type coordinator struct {
	nextID  int64
	pending map[int64]*pendingCheckpoint
	history []*CheckpointStats
	counts  CheckpointCounts
	// lastCompleted is when the last checkpoint or savepoint completed,
	// Flink's lastCheckpointCompletionRelativeTime: the min pause counts
	// from it (CheckpointRequestDecider.nextTriggerDelayMillis). Flink sets
	// it in cleanupAfterCompletedCheckpoint only, so an aborted checkpoint
	// leaves it as it was and the next one does not wait the pause after
	// the abort. 0: none yet.
	lastCompleted time.Duration
	latestRestore *RestoreStats
	// queued are the checkpoint requests that wait for a pending one to
	// end (CheckpointRequestDecider's queue): those asked for by hand,
	// oldest first, then the periodic ones, oldest first.
	queued []checkpointRequest
	// nextPeriodic is when the next periodic tick is due
	// (CheckpointCoordinator's nextCheckpointTriggeringRelativeTime).
	nextPeriodic time.Duration
}

// checkpointRequest is a checkpoint request that waits.
type checkpointRequest struct {
	at       time.Duration // when it was asked for
	periodic bool          // by the periodic trigger, not by hand
}

// maxQueuedRequests is CheckpointRequestDecider's DEFAULT_MAX_QUEUED_REQUESTS:
// with that many requests by hand queued a new one fails
// (TOO_MANY_CHECKPOINT_REQUESTS); past it the newest periodic one is dropped.
const maxQueuedRequests = 1000

type pendingCheckpoint struct {
	id        int64
	savepoint bool
	stop      bool
	trigger   time.Duration
	attempt   int
	states    map[*subtask]*state.SubtaskState
	stats     *CheckpointStats
}

func (co *coordinator) pendingList() []*pendingCheckpoint {
	out := make([]*pendingCheckpoint, 0, len(co.pending))
	for _, p := range co.pending {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *pendingCheckpoint) int { return int(a.id - b.id) })
	return out
}

func (co *coordinator) addHistory(s *CheckpointStats) {
	co.history = append(co.history, s)
	if len(co.history) > maxHistory {
		co.history = co.history[len(co.history)-maxHistory:]
	}
}

// periodicCheckpoint is the checkpoint timer, Flink's
// CheckpointCoordinator.ScheduledTrigger: it re-arms itself at a fixed
// rate, for the time the tick after it is due (nextCheckpointTriggering-
// RelativeTime += interval, scheduled max(0, due - now) ahead, so ticks a
// late timer missed fire at once, one after another), then hands a
// periodic request to the decider (CheckpointRequestDecider.
// chooseRequestToExecute): queued, started at once if fewer than
// max-concurrent-checkpoints are pending and the min pause has passed, or
// dropped with the trigger rescheduled for the pause's end. A periodic
// request that waits starts when a pending checkpoint ends
// (executeQueuedRequests), one per tick that came meanwhile.
func (c *core) periodicCheckpoint() {
	if c.terminal {
		return
	}
	now := c.clock()
	c.coord.nextPeriodic += c.spec.Checkpointing.Interval.D()
	c.drv.after(max(0, c.coord.nextPeriodic-now), timer{kind: timerPeriodic})
	// Flink's CheckpointCoordinatorDeActivator stops the scheduler while
	// the job is not RUNNING; a rescale (StateLab's stop-with-savepoint and
	// redeploy in one command) takes no periodic checkpoint either.
	if c.rescaling != nil || c.status != JobRunning || c.ex == nil {
		return
	}
	if !c.enqueueRequest(checkpointRequest{at: now, periodic: true}) {
		return
	}
	c.executeQueuedRequests()
	max := c.spec.Checkpointing.maxConcurrent()
	q := c.coord.queued
	if len(c.coord.pending) < max || len(q) == 0 || !q[len(q)-1].periodic || q[len(q)-1].at != now {
		return // started, failed, or dropped by the min pause
	}
	pending := c.coord.pendingList()
	_, n := c.coord.queuedCounts()
	c.publish(Event{Kind: EvPeriodicCheckpointQueued, Checkpoint: pending[0].id, Value: int64(max), Records: n,
		Message: fmt.Sprintf("periodic checkpoint request queued: %s and max-concurrent-checkpoints is %d; %d periodic request(s) wait, each starts when a pending checkpoint ends", stillPending(pending), max, n)})
}

// stillPending says which checkpoints are pending, for a queued request's
// event: "checkpoint 4 is still pending", "checkpoints 4 and 5 are …".
func stillPending(pending []*pendingCheckpoint) string {
	switch len(pending) {
	case 1:
		return fmt.Sprintf("checkpoint %d is still pending", pending[0].id)
	case 2:
		return fmt.Sprintf("checkpoints %d and %d are still pending", pending[0].id, pending[1].id)
	}
	return fmt.Sprintf("%d checkpoints are still pending", len(pending))
}

// queuedCounts is how many queued requests were asked for by hand and how
// many are periodic.
func (co *coordinator) queuedCounts() (byHand, periodic int) {
	for _, r := range co.queued {
		if r.periodic {
			periodic++
		} else {
			byHand++
		}
	}
	return byHand, periodic
}

// enqueueRequest adds r to the decider's queue in its order: requests by
// hand before periodic ones, each oldest first (CheckpointRequestDecider's
// comparator; savepoints are forced and never queued here). With
// maxQueuedRequests queued and none of them periodic, r is refused
// (TOO_MANY_CHECKPOINT_REQUESTS) and enqueueRequest returns false;
// otherwise r is added and, past the limit, the last request (the newest
// periodic one) is dropped.
func (c *core) enqueueRequest(r checkpointRequest) bool {
	q := c.coord.queued
	if len(q) >= maxQueuedRequests && !q[len(q)-1].periodic {
		return false
	}
	i := len(q)
	if !r.periodic {
		i = slices.IndexFunc(q, func(x checkpointRequest) bool { return x.periodic })
		if i < 0 {
			i = len(q)
		}
	}
	q = slices.Insert(q, i, r)
	if len(q) > maxQueuedRequests {
		q = q[:len(q)-1]
	}
	c.coord.queued = q
	return true
}

// requestCheckpoint is a checkpoint asked for by hand (CmdTriggerCheckpoint),
// Flink's CheckpointCoordinator.triggerCheckpoint(CheckpointType): a
// non-periodic request that is not forced. CheckpointRequestDecider runs it
// at once if fewer than max-concurrent-checkpoints are pending and no
// request by hand waits before it; otherwise it waits in the decider's
// queue, ahead of the periodic requests and without a min-pause check,
// until a pending checkpoint completes or is aborted
// (completePendingCheckpoint and abortPendingCheckpoint call
// scheduleTriggerRequest). Savepoints are forced and never wait
// (CmdTriggerSavepoint calls triggerCheckpoint directly).
func (c *core) requestCheckpoint() error {
	if c.status != JobRunning || c.ex == nil {
		return fmt.Errorf("%w: the job is %s", ErrCheckpoint, c.status)
	}
	if !c.allTasks(TaskRunning) {
		return fmt.Errorf("%w: not all subtasks are RUNNING yet", ErrCheckpoint)
	}
	max := c.spec.Checkpointing.maxConcurrent()
	byHand, _ := c.coord.queuedCounts()
	if len(c.coord.pending) < max && byHand == 0 {
		_, err := c.triggerCheckpoint(false, false)
		return err
	}
	if !c.enqueueRequest(checkpointRequest{at: c.clock()}) {
		return fmt.Errorf("%w: %d checkpoint requests already wait (TOO_MANY_CHECKPOINT_REQUESTS)", ErrCheckpoint, len(c.coord.queued))
	}
	byHand++
	pending := c.coord.pendingList()
	var oldest int64 // the event's Checkpoint: the oldest pending one
	if len(pending) > 0 {
		oldest = pending[0].id
	}
	var msg string
	switch ahead := byHand - 1; {
	case len(pending) < max:
		// A pending checkpoint has just ended and the requests before
		// this one have not started yet: they go first.
		msg = fmt.Sprintf("checkpoint requested: %d request(s) asked for before it start first; it starts right after them", ahead)
	default:
		when := "when one of them ends"
		if len(pending) == 1 {
			when = fmt.Sprintf("when %d ends", oldest)
		}
		msg = fmt.Sprintf("checkpoint requested: %s and max-concurrent-checkpoints is %d; it starts %s", stillPending(pending), max, when)
		if ahead > 0 {
			msg += fmt.Sprintf(", after the %d request(s) asked for before it", ahead)
		}
	}
	c.publish(Event{Kind: EvCheckpointQueued, Checkpoint: oldest, Value: int64(max), Records: byHand, Message: msg})
	return nil
}

// executeQueuedRequests starts the queued requests, first in the decider's
// order, while fewer than max-concurrent-checkpoints are pending, as
// CheckpointCoordinator's executeQueuedRequest does after a pending
// checkpoint ended (one request each time; it runs again after each
// trigger). A periodic request whose turn comes before the min pause has
// passed since the last completed checkpoint (an aborted one does not
// count) is dropped (MINIMUM_TIME_BETWEEN_CHECKPOINTS) and the periodic
// trigger rescheduled for the pause's end; the requests behind it wait
// on. A request whose turn comes while not every subtask runs fails, as
// Flink's does (NOT_ALL_REQUIRED_TASKS_RUNNING).
func (c *core) executeQueuedRequests() {
	for len(c.coord.queued) > 0 && len(c.coord.pending) < c.spec.Checkpointing.maxConcurrent() {
		if c.status != JobRunning || c.ex == nil || !c.allTasks(TaskRunning) {
			c.dropQueuedRequests("not all subtasks are RUNNING (NOT_ALL_REQUIRED_TASKS_RUNNING)")
			return
		}
		r := c.coord.queued[0]
		if r.periodic {
			if c.rescaling != nil {
				// StateLab's rescale takes no periodic checkpoint.
				c.coord.queued = c.coord.queued[1:]
				continue
			}
			if wait := c.coord.lastCompleted + c.spec.Checkpointing.MinPause.D() - c.clock(); c.coord.lastCompleted > 0 && wait > 0 {
				c.coord.queued = c.coord.queued[1:]
				c.reschedulePeriodic(wait)
				return
			}
		}
		c.coord.queued = c.coord.queued[1:]
		if _, err := c.triggerCheckpoint(false, false); err != nil && !r.periodic {
			c.publish(Event{Kind: EvCheckpointRequestFailed, Records: 1,
				Message: fmt.Sprintf("the checkpoint asked for at %v did not start: %v", r.at, err)})
		}
	}
}

// reschedulePeriodic moves the periodic trigger to d from now, Flink's
// CheckpointCoordinator.rescheduleTrigger: the pending tick is cancelled and
// the ticks after it follow at the interval from the new one.
func (c *core) reschedulePeriodic(d time.Duration) {
	c.drv.cancelTimer(timer{kind: timerPeriodic})
	c.coord.nextPeriodic = c.clock() + d
	c.drv.after(d, timer{kind: timerPeriodic})
}

// dropQueuedRequests fails every queued request. The event counts the
// requests by hand; a periodic request that fails is not told (Flink logs
// nothing for it either).
func (c *core) dropQueuedRequests(why string) {
	byHand, _ := c.coord.queuedCounts()
	c.coord.queued = nil
	if byHand == 0 {
		return
	}
	c.publish(Event{Kind: EvCheckpointRequestFailed, Records: byHand,
		Message: fmt.Sprintf("%d checkpoint request(s) waiting to start were dropped: %s", byHand, why)})
}

// triggerCheckpoint starts checkpoint (or savepoint) n at the sources.
func (c *core) triggerCheckpoint(savepoint, stop bool) (int64, error) {
	if c.status != JobRunning || c.ex == nil {
		return 0, fmt.Errorf("%w: the job is %s", ErrCheckpoint, c.status)
	}
	if !c.allTasks(TaskRunning) {
		return 0, fmt.Errorf("%w: not all subtasks are RUNNING yet", ErrCheckpoint)
	}
	id := c.coord.nextID
	c.coord.nextID++
	now := c.clock()
	p := &pendingCheckpoint{id: id, savepoint: savepoint, stop: stop, trigger: now, attempt: c.ex.attempt,
		states: map[*subtask]*state.SubtaskState{}}
	p.stats = &CheckpointStats{ID: id, Savepoint: savepoint, Stop: stop, Status: CheckpointInProgress, TriggerTime: now,
		Total: len(c.ex.tasks), Subtasks: []AckStats{}}
	if c.coord.pending == nil {
		c.coord.pending = map[int64]*pendingCheckpoint{}
	}
	c.coord.pending[id] = p
	c.coord.counts.Triggered++
	c.coord.addHistory(p.stats)
	what := "checkpoint"
	if savepoint {
		what = "savepoint"
		if stop {
			what = "stop-with-savepoint"
		}
	}
	c.publish(Event{Kind: EvCheckpointTrigger, Checkpoint: id, Savepoint: savepoint, Stats: copyStats(p.stats),
		Message: fmt.Sprintf("%s %d triggered at the sources", what, id)})
	b := barrier{ID: id, Savepoint: savepoint, Stop: stop, Time: int64(now), Unaligned: c.startsUnaligned(savepoint)}
	for _, t := range c.ex.tasks {
		if t.op.spec.Kind == KindSource {
			t.sendCtl(control{kind: ctlTrigger, attempt: c.ex.attempt, barrier: b, seq: c.nextSeq()})
			c.drv.wake(t)
		}
	}
	c.drv.after(c.spec.Checkpointing.Timeout.D(), timer{kind: timerTimeout, id: id, attempt: c.ex.attempt})
	return id, nil
}

// ack records one subtask's acknowledgement; the last one completes the checkpoint.
func (co *coordinator) ack(c *core, m jmMsg) {
	p := co.pending[m.id]
	if p == nil || p.attempt != m.attempt {
		return // aborted or from an old execution: its files are discarded with it
	}
	if _, dup := p.states[m.task]; dup {
		return
	}
	now := c.clock()
	p.states[m.task] = m.state
	a := m.ack
	a.AckTime = now
	a.EndToEnd = now - p.trigger
	p.stats.Subtasks = append(p.stats.Subtasks, a)
	p.stats.Acknowledged++
	p.stats.LatestAck = now
	c.publish(Event{Kind: EvCheckpointAck, Task: m.task.name, Operator: m.task.op.spec.ID, Checkpoint: m.id, Ack: &a,
		Message: fmt.Sprintf("%s acknowledged checkpoint %d (%d of %d)", m.task.name, m.id, p.stats.Acknowledged, p.stats.Total)})
	if p.stats.Acknowledged == p.stats.Total {
		c.completeCheckpoint(p)
	}
}

// completeCheckpoint writes the metadata, applies retention, and notifies
// every subtask: two-phase-commit sinks commit now.
func (c *core) completeCheckpoint(p *pendingCheckpoint) {
	meta := &state.CheckpointMetadata{JobID: c.storage.JobID(), CheckpointID: p.id, Savepoint: p.savepoint}
	ids := c.operatorIDs()
	for _, eo := range c.ex.ops {
		os := state.OperatorState{OperatorID: eo.spec.ID, Hash: ids[eo.spec.ID], UID: eo.spec.UID, Parallelism: eo.parallelism, MaxParallelism: eo.maxPar}
		for _, t := range eo.tasks {
			if st := p.states[t]; st != nil {
				os.Subtasks = append(os.Subtasks, *st)
			}
		}
		meta.Operators = append(meta.Operators, os)
	}
	subsumed, err := c.storage.CompleteCheckpoint(meta)
	if err != nil {
		c.abortCheckpoint(p, FinalizeCheckpointFailure, fmt.Sprintf("writing the checkpoint metadata failed: %v", err))
		return
	}
	c.forgetPending(p)
	now := c.clock()
	s := p.stats
	s.Status = CheckpointCompleted
	s.EndToEndDuration = now - p.trigger
	s.StateSize = meta.StateSize()
	s.CheckpointedSize = meta.CheckpointedSize()
	s.ChannelStateSize, s.Unaligned = channelStateTotals(s.Subtasks)
	c.coord.counts.Completed++
	c.coord.lastCompleted = now
	if !p.savepoint {
		c.cfm.onSuccess(p.id)
	}
	what := "checkpoint"
	if p.savepoint {
		what = "savepoint"
	}
	c.publish(Event{Kind: EvCheckpointDone, Checkpoint: p.id, Savepoint: p.savepoint, Stats: copyStats(s),
		Message: fmt.Sprintf("%s %d completed in %v (%s)", what, p.id, s.EndToEndDuration, fmtBytes(s.StateSize))})
	for _, id := range subsumed {
		for _, h := range c.coord.history {
			if h.ID == id {
				h.Discarded = true
			}
		}
		c.publish(Event{Kind: EvCheckpointSubsume, Checkpoint: id, Message: fmt.Sprintf("checkpoint %d was subsumed and deleted", id)})
	}
	// A completed checkpoint subsumes older pending ones.
	for _, q := range c.coord.pendingList() {
		if q.id < p.id {
			c.abortCheckpoint(q, CheckpointSubsumed, fmt.Sprintf("subsumed by checkpoint %d", p.id))
		}
	}
	c.confirmLocalState(meta)
	stop := p.stop && c.rescaling != nil && c.rescaling.savepoint == p.id
	if stop {
		r := c.rescaling
		r.phase = "stopping"
		c.par = r.target
	}
	if p.savepoint && !stop {
		// As in Flink 1.15+, an intermediate savepoint commits no side
		// effects: sinks commit its transactions with the next checkpoint.
		return
	}
	for _, t := range c.ex.tasks {
		t.sendCtl(control{kind: ctlNotifyComplete, attempt: c.ex.attempt, id: p.id, stop: stop, seq: c.nextSeq()})
		c.drv.wake(t)
	}
}

// forgetPending drops a checkpoint that completed or failed from the
// pending ones and cancels its timeout, as Flink's PendingCheckpoint cancels
// its canceller handle when it is disposed.
// A queued request may start now: as Flink's scheduleTriggerRequest, which
// hands executeQueuedRequest to the coordinator's timer thread, it runs after
// the completion or abort is done, not inside it.
func (c *core) forgetPending(p *pendingCheckpoint) {
	delete(c.coord.pending, p.id)
	c.drv.cancelTimer(timer{kind: timerTimeout, id: p.id, attempt: p.attempt})
	if len(c.coord.queued) > 0 {
		c.drv.after(0, timer{kind: timerQueuedCheckpoint})
	}
}

// abortCheckpoint fails a pending checkpoint and tells every subtask, so a
// subtask still aligning it unblocks its inputs.
func (c *core) abortCheckpoint(p *pendingCheckpoint, why CheckpointFailureReason, reason string) {
	if c.coord.pending[p.id] != p {
		return
	}
	c.forgetPending(p)
	if err := c.storage.AbortCheckpoint(p.id); err != nil {
		c.logger.Warn("abort checkpoint", "id", p.id, "err", err)
	}
	s := p.stats
	s.Status = CheckpointFailed
	s.FailureMessage = reason
	s.FailureReason = why
	s.EndToEndDuration = c.clock() - p.trigger
	c.coord.counts.Failed++
	// The min pause still counts from the last completed checkpoint
	// (coordinator.lastCompleted), not from this abort.
	c.publish(Event{Kind: EvCheckpointAbort, Checkpoint: p.id, Savepoint: p.savepoint, Stats: copyStats(s),
		Message: fmt.Sprintf("checkpoint %d aborted (%s): %s", p.id, why, reason)})
	if r := c.rescaling; r != nil && r.savepoint == p.id && r.phase == "savepoint" {
		c.rescaling = nil
		c.publish(Event{Kind: EvRescaleFailed, Operator: r.operator, Message: fmt.Sprintf("rescale of %s failed: savepoint %d was aborted (%s); the job keeps running with %d subtasks", r.operator, p.id, reason, r.from)})
	}
	if c.ex != nil && c.ex.attempt == p.attempt {
		for _, t := range c.ex.tasks {
			if live(t.getStatus()) {
				t.sendCtl(control{kind: ctlNotifyAborted, attempt: c.ex.attempt, id: p.id, stop: p.stop, seq: c.nextSeq()})
				c.drv.wake(t)
			}
		}
	}
	if why.Counts() {
		c.checkpointFailed(p, why)
	}
}

func copyStats(s *CheckpointStats) *CheckpointStats {
	c := *s
	c.Subtasks = slices.Clone(s.Subtasks)
	return &c
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
