package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Periodic checkpoint requests and Flink's CheckpointRequestDecider: a tick
// of the checkpoint interval while max-concurrent-checkpoints are pending is
// not skipped but queued, one request per tick (up to 1000 requests), behind
// the requests asked for by hand; when a pending checkpoint ends
// (completePendingCheckpoint / abortPendingCheckpoint ->
// scheduleTriggerRequest -> executeQueuedRequest) the oldest queued request
// starts at once, so the ticks that came during a long checkpoint give
// checkpoints back to back after it. The trigger itself runs at a fixed
// rate (CheckpointCoordinator.ScheduledTrigger re-arms for
// nextCheckpointTriggeringRelativeTime += interval): ticks a late timer
// missed fire at once.

func queuedPeriodic(s *Stepper) (byHand, periodic int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.coord.queuedCounts()
}

// periodicSpec is the two-source job with periodic checkpoints every
// interval; no control reaches a source until the test delivers it, so a
// triggered checkpoint stays pending.
func periodicSpec(interval, minPause Duration, maxConcurrent int) *JobSpec {
	spec := alignSpec(ExactlyOnce)
	spec.Checkpointing.Interval = interval
	spec.Checkpointing.MinPause = minPause
	spec.Checkpointing.MaxConcurrent = maxConcurrent
	return spec
}

// The ticks while checkpoint 1 is pending are queued, one each, and told
// (periodic-checkpoint-queued); when 1 completes the oldest starts at
// once, not at the next tick, and the next one when that one completes.
func TestPeriodicTicksQueueWhilePending(t *testing.T) {
	s, log := newTestStepper(t, periodicSpec(ms(10), 0, 1))
	settle(t, s)
	advanceTimer(t, s) // 10 ms: checkpoint 1
	require.Equal(t, []int64{1}, pendingIDs(s))
	for range 3 {
		advanceTimer(t, s) // 20, 30, 40 ms: queued
	}
	assert.Equal(t, []int64{1}, pendingIDs(s), "never two pending")
	_, n := queuedPeriodic(s)
	assert.Equal(t, 3, n, "one request per tick while 1 is pending")
	q := log.kinds(EvPeriodicCheckpointQueued)
	require.Len(t, q, 3)
	assert.Equal(t, []int{1, 2, 3}, []int{q[0].Records, q[1].Records, q[2].Records})
	assert.Equal(t, int64(1), q[2].Checkpoint)
	assert.Equal(t, int64(1), q[2].Value)
	assert.Equal(t, "periodic checkpoint request queued: checkpoint 1 is still pending and max-concurrent-checkpoints is 1; 3 periodic request(s) wait, each starts when a pending checkpoint ends", q[2].Message)
	s.mu.Lock()
	view := s.c.checkpointsView()
	s.mu.Unlock()
	assert.Zero(t, view.Queued, "the view's queued counts the requests by hand")
	assert.Equal(t, 3, view.QueuedPeriodic)

	for id := int64(1); id <= 3; id++ {
		completeAll(t, s, id)
		startQueued(t, s)
		require.Equal(t, []int64{id + 1}, pendingIDs(s), "a queued request starts when %d ends", id)
		trig := log.kinds(EvCheckpointTrigger)
		done := log.kinds(EvCheckpointDone)
		last := done[len(done)-1]
		require.Equal(t, id, last.Checkpoint)
		assert.Equal(t, id+1, trig[len(trig)-1].Checkpoint)
		assert.Less(t, trig[len(trig)-1].At-last.At, ms(1).D(), "checkpoint %d starts as %d ends, not at the next tick", id+1, id)
	}
}

// The periodic trigger runs at a fixed rate: when the clock jumps past
// several ticks (a stalled snapshot on the Stepper is time that passes for
// the whole job), each missed tick fires at once and is queued, as Flink's
// ScheduledTrigger schedules itself max(0, due - now) ahead.
func TestPeriodicTriggerCatchesUpMissedTicks(t *testing.T) {
	s, log := newTestStepper(t, periodicSpec(ms(10), 0, 1))
	settle(t, s)
	advanceTimer(t, s) // 10 ms: checkpoint 1
	require.Equal(t, []int64{1}, pendingIDs(s))
	s.mu.Lock()
	s.clock += ms(35).D() // 45 ms: the ticks of 20, 30 and 40 ms are due
	s.mu.Unlock()
	startQueued(t, s)
	_, n := queuedPeriodic(s)
	assert.Equal(t, 3, n, "every missed tick is queued")
	assert.Len(t, log.kinds(EvPeriodicCheckpointQueued), 3)
	s.mu.Lock()
	next := s.timers[0].at
	s.mu.Unlock()
	assert.Equal(t, ms(50).D(), next, "the ticks keep the interval's grid")
}

// Before the min pause has passed since the last completed checkpoint the
// decider drops a periodic request (MINIMUM_TIME_BETWEEN_CHECKPOINTS) and
// reschedules the trigger for the pause's end (rescheduleTrigger): the next
// checkpoint starts exactly then, not at the next tick of the interval.
func TestPeriodicTriggerRescheduledForMinPause(t *testing.T) {
	s, log := newTestStepper(t, periodicSpec(ms(50), ms(120), 1))
	settle(t, s)
	advanceTimer(t, s) // 50 ms: checkpoint 1
	completeAll(t, s, 1)
	s.mu.Lock()
	end := s.c.coord.lastCompleted
	s.mu.Unlock()
	for i := 0; len(pendingIDs(s)) == 0; i++ {
		require.Less(t, i, 10)
		advanceTimer(t, s)
	}
	trig := log.kinds(EvCheckpointTrigger)
	require.Len(t, trig, 2)
	assert.Equal(t, end+ms(120).D(), trig[1].At, "checkpoint 2 starts when the min pause ends")
	assert.Empty(t, log.kinds(EvPeriodicCheckpointQueued), "a request dropped by the min pause is not queued")
	s.mu.Lock()
	next := s.c.coord.nextPeriodic
	s.mu.Unlock()
	assert.Equal(t, end+ms(170).D(), next, "the ticks go on at the interval from the rescheduled one")
}

// The queue puts requests by hand before periodic ones: a checkpoint asked
// for by hand after two ticks were queued starts first; the periodic
// requests start after it, oldest first. A queued periodic request whose
// turn comes within the min pause is dropped and the trigger rescheduled;
// those behind it wait on.
func TestQueuedPeriodicRequestsOrderAndMinPause(t *testing.T) {
	s, log := newTestStepper(t, periodicSpec(ms(10), ms(25), 1))
	settle(t, s)
	advanceTimer(t, s) // 10 ms: checkpoint 1
	advanceTimer(t, s) // 20 ms: queued
	advanceTimer(t, s) // 30 ms: queued
	requestCheckpoint(t, s)
	byHand, n := queuedPeriodic(s)
	require.Equal(t, 1, byHand)
	require.GreaterOrEqual(t, n, 2)
	completeAll(t, s, 1)
	startQueued(t, s)
	require.Equal(t, []int64{2}, pendingIDs(s), "the request by hand starts first, without the min pause")
	byHand, n2 := queuedPeriodic(s)
	assert.Zero(t, byHand)
	assert.GreaterOrEqual(t, n2, n, "the periodic requests wait on")
	completeAll(t, s, 2)
	startQueued(t, s)
	assert.Empty(t, pendingIDs(s), "within the min pause the oldest periodic request is dropped")
	_, n3 := queuedPeriodic(s)
	assert.Equal(t, n2-1, n3, "only the oldest is dropped")
	s.mu.Lock()
	end, next := s.c.coord.lastCompleted, s.c.coord.nextPeriodic
	s.mu.Unlock()
	assert.Equal(t, end+ms(25).D(), next, "the trigger is rescheduled for the pause's end")
	for i := 0; len(pendingIDs(s)) == 0; i++ {
		require.Less(t, i, 10)
		advanceTimer(t, s)
	}
	trig := log.kinds(EvCheckpointTrigger)
	assert.Equal(t, end+ms(25).D(), trig[len(trig)-1].At)
}

// CheckpointRequestDecider keeps at most 1000 requests: past it the newest
// periodic one is dropped; with 1000 requests by hand queued a new request
// is refused (TOO_MANY_CHECKPOINT_REQUESTS), periodic or by hand.
func TestQueuedRequestsLimit(t *testing.T) {
	s, _ := newTestStepper(t, periodicSpec(ms(10), 0, 1))
	settle(t, s)
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.c
	for i := range maxQueuedRequests {
		require.True(t, c.enqueueRequest(checkpointRequest{at: time.Duration(i), periodic: true}))
	}
	require.True(t, c.enqueueRequest(checkpointRequest{at: 5000}))
	byHand, n := c.coord.queuedCounts()
	assert.Equal(t, 1, byHand)
	assert.Equal(t, maxQueuedRequests-1, n, "the newest periodic request is dropped")
	assert.False(t, c.coord.queued[0].periodic, "the request by hand goes first")
	assert.Equal(t, time.Duration(maxQueuedRequests-2), c.coord.queued[len(c.coord.queued)-1].at)
	c.coord.queued = nil
	for i := range maxQueuedRequests {
		require.True(t, c.enqueueRequest(checkpointRequest{at: time.Duration(i)}))
	}
	assert.False(t, c.enqueueRequest(checkpointRequest{at: 5000}))
	assert.False(t, c.enqueueRequest(checkpointRequest{at: 5000, periodic: true}))
	assert.Len(t, c.coord.queued, maxQueuedRequests)
}
