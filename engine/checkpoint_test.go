package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// alignSpec: two sources feed one map (two input channels), then a sink.
// Source a has four lines, b two; batches of two records.
func alignSpec(mode CheckpointMode) *JobSpec {
	return &JobSpec{
		Name: "align", Seed: 1,
		Operators: []OperatorSpec{
			{ID: "a", Kind: KindSource, Options: map[string]any{"generator": "none", "lines": []any{"a1", "a2", "a3", "a4"}}},
			{ID: "b", Kind: KindSource, Options: map[string]any{"generator": "none", "lines": []any{"b1", "b2"}}},
			{ID: "merge", Kind: KindMap},
			{ID: "sink", Kind: KindSink},
		},
		Edges: []EdgeSpec{
			{From: "a", To: "merge", Partitioner: Forward},
			{From: "b", To: "merge", Partitioner: Forward},
			{From: "merge", To: "sink", Partitioner: Forward},
		},
		// An interval never reached: checkpointing is enabled, so barriers
		// are handled in mode (with none they are counted, as Flink's
		// CheckpointBarrierTracker does: barriermode.go); every checkpoint
		// here is still taken by hand.
		Checkpointing: CheckpointingSpec{Mode: mode, Interval: intervalNeverReached},
		// The crash tests need a restart: without periodic checkpoints
		// Flink's default strategy is none.
		Restart: RestartSpec{Strategy: RestartFixedDelay, Attempts: 10, Delay: ms(1)},
		Runtime: RuntimeSpec{BatchSize: 2, FIFO: true},
	}
}

func precommitted(log *eventLog, task string, checkpoint int64) (int, bool) {
	for _, e := range log.kinds(EvTxnPreCommitted) {
		if e.Task == task && e.Checkpoint == checkpoint {
			return e.Records, true
		}
	}
	return 0, false
}

// In exactly-once mode the merge blocks a's channel once barrier 1 arrived
// on it, so a3 and a4 (behind the barrier) stay out of checkpoint 1 while b's
// records still flow; the sink's transaction for checkpoint 1 holds exactly
// the four records before the barriers.
func TestBarrierAlignmentBlocksChannel(t *testing.T) {
	s, log := newTestStepper(t, alignSpec(ExactlyOnce))
	settle(t, s)
	poll(t, s, "a#0") // a1 a2
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	sendControl(t, s, "a#0") // barrier 1 behind a1 a2
	poll(t, s, "a#0")        // a3 a4, behind the barrier
	deliverBarrier(t, s, "a#0->merge#0")

	snap := s.Snapshot()
	ch := channelView(t, snap, "a#0->merge#0")
	assert.True(t, ch.Blocked)
	assert.Equal(t, int64(1), ch.BlockedBy)
	assert.Equal(t, int64(1), subtaskView(t, snap, "merge#0").Aligning)
	require.Equal(t, "records", ch.Queued[0].Kind, "a3 a4 wait in the blocked channel")
	require.Equal(t, 2, ch.Queued[0].Records)
	assert.False(t, s.canStep(func(cd candidate) bool { return cd.kind == candDeliver && cd.ch.name == "a#0->merge#0" }),
		"a blocked channel delivers nothing")

	poll(t, s, "b#0")
	deliver(t, s, "b#0->merge#0") // b1 b2 still flow
	assert.Equal(t, int64(4), subtaskView(t, s.Snapshot(), "merge#0").RecordsIn)
	sendControl(t, s, "b#0")
	deliverBarrier(t, s, "b#0->merge#0") // the last barrier: snapshot, forward, unblock
	snap = s.Snapshot()
	assert.False(t, channelView(t, snap, "a#0->merge#0").Blocked)
	assert.Zero(t, subtaskView(t, snap, "merge#0").Aligning)

	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed == 1 }, 1000)
	require.NoError(t, err)
	n, ok := precommitted(log, "sink#0", 1)
	require.True(t, ok)
	assert.Equal(t, 4, n, "checkpoint 1 holds a1 a2 b1 b2 and nothing after the barriers")

	blocked := log.kinds(EvChannelBlocked)
	require.Len(t, blocked, 1)
	assert.Equal(t, "a#0->merge#0", blocked[0].Channel)
	require.Len(t, log.kinds(EvChannelUnblocked), 1)

	cp := s.Snapshot().Checkpoints.History[0]
	assert.Equal(t, CheckpointCompleted, cp.Status)
	assert.Equal(t, 4, cp.Acknowledged)
	for _, a := range cp.Subtasks {
		if a.Task == "merge#0" {
			assert.Positive(t, a.AlignmentDuration, "merge waited for b's barrier")
		} else if a.Task == "a#0" || a.Task == "b#0" {
			assert.Zero(t, a.AlignmentDuration, "sources do not align")
		}
		assert.Positive(t, a.SyncDuration)
		assert.Positive(t, a.EndToEnd)
	}
	assert.Positive(t, cp.EndToEndDuration)
}

// In at-least-once mode the merge never blocks: a3 a4 overtake b's barrier
// and land in checkpoint 1, so a restore from it would replay b's records
// after them while keeping a3 a4 counted (the duplicates the mode allows).
func TestAtLeastOnceDoesNotBlock(t *testing.T) {
	s, log := newTestStepper(t, alignSpec(AtLeastOnce))
	settle(t, s)
	poll(t, s, "a#0")
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	sendControl(t, s, "a#0")
	poll(t, s, "a#0")
	deliverBarrier(t, s, "a#0->merge#0") // counted, not blocking
	assert.False(t, channelView(t, s.Snapshot(), "a#0->merge#0").Blocked)
	deliver(t, s, "a#0->merge#0") // a3 a4 go through
	drain(t, s, "merge#0->sink#0")
	poll(t, s, "b#0")
	deliver(t, s, "b#0->merge#0")
	sendControl(t, s, "b#0")
	deliverBarrier(t, s, "b#0->merge#0")
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed == 1 }, 1000)
	require.NoError(t, err)
	n, ok := precommitted(log, "sink#0", 1)
	require.True(t, ok)
	assert.Equal(t, 6, n, "a3 a4 entered checkpoint 1")
	assert.Empty(t, log.kinds(EvChannelBlocked))
}

// A checkpoint that times out is aborted; the coordinator tells every
// subtask, and the merge stops aligning it and unblocks its input. The
// barrier that arrives later is ignored, and the next checkpoint completes.
func TestCheckpointTimeoutUnblocks(t *testing.T) {
	spec := alignSpec(ExactlyOnce)
	spec.Checkpointing.Timeout = ms(5)
	// Tolerate it: with Flink's default of 0 the expiry would fail the job
	// over (TestExpiredCheckpointFailsJobOver).
	spec.Checkpointing.TolerableFailed = 5
	s, log := newTestStepper(t, spec)
	settle(t, s)
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	sendControl(t, s, "a#0")
	deliverBarrier(t, s, "a#0->merge#0")
	require.True(t, channelView(t, s.Snapshot(), "a#0->merge#0").Blocked)
	for s.Snapshot().Checkpoints.Counts.Failed == 0 {
		advanceTimer(t, s)
	}
	cp := s.Snapshot().Checkpoints.History[0]
	assert.Equal(t, CheckpointFailed, cp.Status)
	assert.Contains(t, cp.FailureMessage, "expired")
	settle(t, s) // b gets its (stale) trigger, merge the abort notification
	assert.False(t, channelView(t, s.Snapshot(), "a#0->merge#0").Blocked)
	deliverBarrier(t, s, "b#0->merge#0") // barrier 1 from b: ignored
	assert.Zero(t, subtaskView(t, s.Snapshot(), "merge#0").Aligning)
	assert.Len(t, log.kinds(EvChannelBlocked), 1)

	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed == 1 }, 1000)
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.Snapshot().Checkpoints.History[1].ID)
}

// Barrier n+1 reaching a subtask that still aligns n makes it give n up
// (decline) and align n+1, as Flink's SingleCheckpointBarrierHandler does.
func TestNewerBarrierAbortsAlignment(t *testing.T) {
	s, _ := newTestStepper(t, alignSpec(ExactlyOnce))
	settle(t, s)
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.c.ex.byName["merge#0"]
	require.NoError(t, m.handleBarrier(0, barrier{ID: 1}))
	assert.True(t, m.inputs[0].blocked.Load())
	require.NoError(t, m.handleBarrier(1, barrier{ID: 2}))
	require.Len(t, m.toJM, 1)
	assert.Equal(t, jmDecline, m.toJM[0].kind)
	assert.Equal(t, int64(1), m.toJM[0].id)
	assert.Contains(t, m.toJM[0].reason, "barrier 2")
	assert.False(t, m.inputs[0].blocked.Load(), "checkpoint 1 given up")
	assert.True(t, m.inputs[1].blocked.Load(), "aligning checkpoint 2")
	assert.Equal(t, int64(2), m.alignID)

	require.NoError(t, m.handleBarrier(0, barrier{ID: 1}), "a late barrier 1 is ignored")
	assert.Equal(t, int64(2), m.alignID)
	require.NoError(t, m.handleBarrier(0, barrier{ID: 2}))
	assert.Zero(t, m.alignID)
	assert.False(t, m.inputs[1].blocked.Load())
	require.Len(t, m.acks, 1)
	assert.Equal(t, int64(2), m.acks[0].msg.id)
	require.Len(t, m.outbox, 1)
	assert.Equal(t, elemBarrier, m.outbox[0].e.kind)
	assert.Equal(t, int64(2), m.outbox[0].e.barrier.ID)
}

// A failure aborts the pending checkpoint; the new execution starts with no
// blocked channel.
func TestFailureAbortsPendingCheckpoint(t *testing.T) {
	s, _ := newTestStepper(t, alignSpec(ExactlyOnce))
	settle(t, s)
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	sendControl(t, s, "a#0")
	deliverBarrier(t, s, "a#0->merge#0")
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "b#0"}))
	snap := s.Snapshot()
	assert.Equal(t, JobRestarting, snap.Job.Status)
	cp := snap.Checkpoints.History[0]
	assert.Equal(t, CheckpointFailed, cp.Status)
	assert.Contains(t, cp.FailureMessage, "b#0 crashed")
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRunning && s.Job.Attempt == 2 }, 1000)
	require.NoError(t, err)
	for _, ch := range s.Snapshot().Channels {
		assert.False(t, ch.Blocked, ch.Name)
	}
}

// An idle job's clock stops where the work stops. A completed checkpoint's
// timeout (execution.checkpointing.timeout, 10 minutes by default) is
// cancelled when it completes, as Flink's PendingCheckpoint cancels its
// canceller; left on the queue it was the next thing an idle Stepper
// advanced to, and a lesson's job clock jumped ten minutes ahead.
func TestCompletedCheckpointCancelsItsTimeout(t *testing.T) {
	spec := alignSpec(ExactlyOnce)
	spec.Checkpointing.Interval = 0 // no periodic timer to advance to
	s, log := newTestStepper(t, spec)
	_, err := s.RunUntil(func(*Snapshot) bool { return s.c.allTasks(TaskRunning) }, 100000)
	require.NoError(t, err)
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	_, err = s.RunUntil(func(*Snapshot) bool { return len(log.kinds(EvCheckpointDone)) == 1 }, 100000)
	require.NoError(t, err)
	// Run until nothing can happen any more (the sources are finite and
	// periodic checkpoints are off).
	for i := 0; i < 100000 && s.Step(); i++ {
	}
	_, at := s.Position()
	assert.Less(t, at, time.Minute, "idle job clock advanced to %v", at)
	assert.Empty(t, log.kinds(EvCheckpointAbort), "no checkpoint expired")
}
