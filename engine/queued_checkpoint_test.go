package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A checkpoint asked for by hand is Flink's
// CheckpointCoordinator.triggerCheckpoint(CheckpointType): not periodic, not
// forced. CheckpointRequestDecider queues it while
// max-concurrent-checkpoints are pending and runs it when one ends
// (completePendingCheckpoint and abortPendingCheckpoint call
// scheduleTriggerRequest), without the min-pause check a periodic request
// gets. Savepoints are forced and start at once.

// queuedSpec is the two-source job without periodic checkpoints: only the
// checkpoints asked for by hand start.
func queuedSpec(maxConcurrent int) *JobSpec {
	spec := alignSpec(ExactlyOnce)
	spec.Checkpointing.MaxConcurrent = maxConcurrent
	// A queued request by hand is not held back by the min pause.
	spec.Checkpointing.MinPause = ms(60_000)
	return spec
}

func requestCheckpoint(t *testing.T, s *Stepper) {
	t.Helper()
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
}

func queuedCount(s *Stepper) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.c.coord.queued)
}

func clockOf(s *Stepper) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clock
}

// startQueued fires the timers due now (the queued request's turn comes on
// the JobManager's timer, after the end of the pending checkpoint).
func startQueued(t *testing.T, s *Stepper) {
	t.Helper()
	now := clockOf(s)
	for i := 0; ; i++ {
		require.Less(t, i, 100)
		s.mu.Lock()
		due := len(s.timers) > 0 && s.timers[0].at <= now
		s.mu.Unlock()
		if !due {
			return
		}
		advanceTimer(t, s)
	}
}

func TestManualCheckpointWaitsForPending(t *testing.T) {
	s, log := newTestStepper(t, queuedSpec(1))
	settle(t, s)
	requestCheckpoint(t, s)
	require.Equal(t, []int64{1}, pendingIDs(s))

	requestCheckpoint(t, s) // neither started nor refused
	assert.Equal(t, []int64{1}, pendingIDs(s), "no second checkpoint while one is pending")
	assert.Equal(t, 1, queuedCount(s))
	q := log.kinds(EvCheckpointQueued)
	require.Len(t, q, 1)
	assert.Equal(t, "checkpoint requested: checkpoint 1 is still pending and max-concurrent-checkpoints is 1; it starts when 1 ends", q[0].Message)
	assert.Equal(t, int64(1), q[0].Checkpoint)
	assert.Equal(t, int64(1), q[0].Value)
	assert.Equal(t, 1, q[0].Records)

	requestCheckpoint(t, s) // a third waits behind the second
	q = log.kinds(EvCheckpointQueued)
	require.Len(t, q, 2)
	assert.Contains(t, q[1].Message, "it starts when 1 ends, after the 1 request(s) asked for before it")

	completeAll(t, s, 1)
	assert.Empty(t, pendingIDs(s), "the queued request starts after the completion, not inside it")
	startQueued(t, s)
	assert.Equal(t, []int64{2}, pendingIDs(s), "the queued request starts when 1 completed, the min pause notwithstanding")
	assert.Equal(t, 1, queuedCount(s), "the third waits for 2")
	trig := log.kinds(EvCheckpointTrigger)
	require.Len(t, trig, 2)
	done := log.kinds(EvCheckpointDone)
	require.Len(t, done, 1)
	assert.Greater(t, trig[1].Seq, done[0].Seq)
	assert.Less(t, trig[1].At-done[0].At, ms(5).D(), "at once, not after the 60 s min pause")

	completeAll(t, s, 2)
	startQueued(t, s)
	assert.Equal(t, []int64{3}, pendingIDs(s))
	assert.Zero(t, queuedCount(s))
}

// An aborted checkpoint ends too: the queued request starts after the
// timeout (Flink: abortPendingCheckpoint calls scheduleTriggerRequest).
func TestManualCheckpointStartsAfterAbort(t *testing.T) {
	spec := queuedSpec(1)
	spec.Checkpointing.Timeout = ms(50)
	spec.Checkpointing.TolerableFailed = 5
	s, log := newTestStepper(t, spec)
	settle(t, s)
	requestCheckpoint(t, s)
	requestCheckpoint(t, s)
	require.Equal(t, []int64{1}, pendingIDs(s))
	// No control is delivered: checkpoint 1 expires.
	advanceTimer(t, s)
	ab := log.kinds(EvCheckpointAbort)
	require.Len(t, ab, 1)
	assert.Equal(t, CheckpointExpired, ab[0].Stats.FailureReason)
	startQueued(t, s)
	assert.Equal(t, []int64{2}, pendingIDs(s), "the queued request starts when 1 is aborted")
	trig := log.kinds(EvCheckpointTrigger)
	require.Len(t, trig, 2)
	assert.Greater(t, trig[1].Seq, ab[0].Seq)
	assert.Less(t, trig[1].At-ab[0].At, ms(5).D(), "at once, not at a later tick")
	assert.Zero(t, queuedCount(s))
}

// A savepoint is forced (CheckpointProperties.forceCheckpoint): it starts
// at once while a checkpoint is pending and one waits.
func TestSavepointDoesNotWait(t *testing.T) {
	s, log := newTestStepper(t, queuedSpec(1))
	settle(t, s)
	requestCheckpoint(t, s)
	requestCheckpoint(t, s)
	require.NoError(t, s.Do(Command{Name: CmdTriggerSavepoint}))
	assert.Equal(t, []int64{1, 2}, pendingIDs(s))
	trig := log.kinds(EvCheckpointTrigger)
	require.Len(t, trig, 2)
	assert.True(t, trig[1].Savepoint)
	assert.Equal(t, 1, queuedCount(s), "the checkpoint by hand still waits")
}

// With max-concurrent-checkpoints 2 a request by hand starts at once while
// one is pending; a third waits.
func TestManualCheckpointMaxConcurrentTwo(t *testing.T) {
	s, log := newTestStepper(t, queuedSpec(2))
	settle(t, s)
	requestCheckpoint(t, s)
	requestCheckpoint(t, s)
	assert.Equal(t, []int64{1, 2}, pendingIDs(s))
	assert.Empty(t, log.kinds(EvCheckpointQueued))
	requestCheckpoint(t, s)
	assert.Equal(t, []int64{1, 2}, pendingIDs(s))
	q := log.kinds(EvCheckpointQueued)
	require.Len(t, q, 1)
	assert.Equal(t, "checkpoint requested: checkpoints 1 and 2 are still pending and max-concurrent-checkpoints is 2; it starts when one of them ends", q[0].Message)
}

// A failover drops the queued requests: the pending checkpoint is aborted,
// and when the request's turn comes not every subtask runs (Flink fails it
// with NOT_ALL_REQUIRED_TASKS_RUNNING, or CHECKPOINT_COORDINATOR_SUSPEND
// when the job leaves RUNNING). The restarted job does not start it.
func TestFailoverDropsQueuedCheckpoint(t *testing.T) {
	s, log := newTestStepper(t, queuedSpec(1))
	settle(t, s)
	requestCheckpoint(t, s)
	requestCheckpoint(t, s)
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "merge#0"}))
	for i := 0; queuedCount(s) > 0; i++ {
		require.Less(t, i, 100)
		advanceTimer(t, s)
	}
	f := log.kinds(EvCheckpointRequestFailed)
	require.Len(t, f, 1)
	assert.Equal(t, 1, f[0].Records)
	assert.Contains(t, f[0].Message, "1 checkpoint request(s) waiting to start were dropped")
	assert.Len(t, log.kinds(EvCheckpointTrigger), 1, "the dropped request never starts")
}
