package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pendingIDs is the coordinator's pending checkpoints, oldest first.
func pendingIDs(s *Stepper) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	for _, p := range s.c.coord.pendingList() {
		ids = append(ids, p.id)
	}
	return ids
}

// dropTrigger removes the trigger of checkpoint id from a source's control
// queue: the source does not take part in that checkpoint, so its barrier
// for the next one is the first its downstream sees.
func dropTrigger(t *testing.T, s *Stepper, task string, id int64) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.c.ex.byName[task]
	st.ctlMu.Lock()
	defer st.ctlMu.Unlock()
	kept := st.ctl[:0]
	dropped := false
	for _, m := range st.ctl {
		if m.kind == ctlTrigger && m.barrier.ID == id {
			dropped = true
			continue
		}
		kept = append(kept, m)
	}
	st.ctl = kept
	require.True(t, dropped, "no trigger of checkpoint %d queued for %s", id, task)
}

// execution.checkpointing.max-concurrent-checkpoints: with the default 1 the
// periodic trigger starts nothing while a checkpoint is pending; with 2 it
// starts a second one (Flink's CheckpointRequestDecider compares the pending
// count with maxConcurrentCheckpointAttempts), never a third.
func TestMaxConcurrentCheckpointsPeriodic(t *testing.T) {
	for _, tc := range []struct {
		max  int
		want []int64
	}{{0, []int64{1}}, {1, []int64{1}}, {2, []int64{1, 2}}, {3, []int64{1, 2, 3}}} {
		spec := alignSpec(ExactlyOnce)
		spec.Checkpointing.Interval = ms(10)
		spec.Checkpointing.MaxConcurrent = tc.max
		s, _ := newTestStepper(t, spec)
		settle(t, s)
		// No control goes to a source: every checkpoint the timer starts
		// stays pending.
		for range 5 {
			s.mu.Lock()
			next := s.timers[0].at
			s.mu.Unlock()
			require.LessOrEqual(t, next, ms(10).D()*5, "only the periodic timer is due")
			advanceTimer(t, s)
		}
		assert.Equal(t, tc.want, pendingIDs(s), "maxConcurrent %d", tc.max)
	}
}

// The min pause still applies with more than one checkpoint allowed:
// measured from the end of the last checkpoint, as Flink's
// CheckpointRequestDecider.nextTriggerDelayMillis measures it.
func TestMaxConcurrentCheckpointsKeepsMinPause(t *testing.T) {
	spec := alignSpec(ExactlyOnce)
	spec.Checkpointing.Interval = ms(50)
	spec.Checkpointing.MinPause = ms(120)
	spec.Checkpointing.MaxConcurrent = 2
	s, _ := newTestStepper(t, spec)
	settle(t, s)
	advanceTimer(t, s) // 50 ms: checkpoint 1 (no checkpoint ended yet)
	require.Equal(t, []int64{1}, pendingIDs(s))
	completeAll(t, s, 1)
	require.Empty(t, pendingIDs(s))
	s.mu.Lock()
	end := s.c.coord.lastCompleted
	s.mu.Unlock()
	require.Positive(t, end)
	skipped := 0
	for ; ; skipped++ {
		advanceTimer(t, s)
		s.mu.Lock()
		now := s.clock
		s.mu.Unlock()
		if ids := pendingIDs(s); len(ids) > 0 {
			assert.GreaterOrEqual(t, now-end, ms(120).D(), "checkpoint %v started within the min pause", ids)
			assert.Equal(t, []int64{2}, ids)
			break
		}
		require.Less(t, now-end, ms(200).D(), "no checkpoint after the min pause")
	}
	assert.Positive(t, skipped, "a tick within the min pause started nothing")
	advanceTimer(t, s) // the next tick: the min pause has passed, one more may start
	assert.Equal(t, []int64{2, 3}, pendingIDs(s))
}

// completeAll delivers every control, JobManager message and barrier and
// fires the timers (the asynchronous parts' acknowledgements arrive by
// timer), with no source poll, until checkpoint id is no longer pending.
func completeAll(t *testing.T, s *Stepper, id int64) {
	t.Helper()
	step := func(cd candidate) bool {
		return cd.kind == candControl || cd.kind == candJM || cd.kind == candDeliver || cd.kind == candTimer
	}
	for i := 0; slices.Contains(pendingIDs(s), id); i++ {
		require.Less(t, i, 10000)
		if s.canStep(step) {
			s.stepWhere(t, "deliver", step)
		} else {
			advanceTimer(t, s)
		}
	}
}

// With two checkpoints pending, a subtask aligning checkpoint 1 that gets
// barrier 2 on another input gives 1 up (Flink:
// SingleCheckpointBarrierHandler.checkNewCheckpoint), the coordinator fails
// 1 with CHECKPOINT_DECLINED_SUBSUMED, which CheckpointFailureManager does
// not count: with tolerable-failed-checkpoints 0 the job keeps running, and
// checkpoint 2 completes.
func TestNewerBarrierSubsumesPendingCheckpoint(t *testing.T) {
	spec := alignSpec(ExactlyOnce)
	spec.Checkpointing.Interval = ms(10)
	spec.Checkpointing.MaxConcurrent = 2
	s, _ := newTestStepper(t, spec)
	settle(t, s)
	advanceTimer(t, s)
	advanceTimer(t, s)
	require.Equal(t, []int64{1, 2}, pendingIDs(s))

	// Source b does not take part in checkpoint 1.
	dropTrigger(t, s, "b#0", 1)
	sendControl(t, s, "a#0") // trigger 1
	deliverBarrier(t, s, "a#0->merge#0")
	assert.True(t, channelView(t, s.Snapshot(), "a#0->merge#0").Blocked, "merge aligns checkpoint 1")
	sendControl(t, s, "b#0") // trigger 2
	deliverBarrier(t, s, "b#0->merge#0")
	settleJM(t, s)

	snap := s.Snapshot()
	require.Equal(t, JobRunning, snap.Job.Status)
	cp := snap.Checkpoints.History[0]
	require.Equal(t, int64(1), cp.ID)
	assert.Equal(t, CheckpointFailed, cp.Status)
	assert.Equal(t, CheckpointDeclinedSubsumed, cp.FailureReason)
	assert.Contains(t, cp.FailureMessage, "barrier 2 arrived at merge#0 before checkpoint 1 was aligned")
	assert.Zero(t, snap.Job.FailedCheckpointsInARow, "not counted toward tolerable-failed-checkpoints")
	assert.Equal(t, []int64{2}, pendingIDs(s))

	completeAll(t, s, 2)
	snap = s.Snapshot()
	assert.Equal(t, JobRunning, snap.Job.Status)
	cp = snap.Checkpoints.History[1]
	assert.Equal(t, int64(2), cp.ID)
	assert.Equal(t, CheckpointCompleted, cp.Status)
	assert.Equal(t, 1, snap.Job.Attempt, "no failover")
}

// Chaos with two checkpoints allowed: exactly-once holds through crashes
// and rescales while checkpoints overlap (the run's spec does overlap them:
// checked on a fault-free run of the same spec).
func TestChaosConcurrentCheckpoints(t *testing.T) {
	cfg := ChaosConfig{Seed: 21, Records: 600, Backend: BackendMemory, Sink: SinkExactlyOnce, MaxConcurrent: 2}
	s, log := newTestStepper(t, cfg.jobSpec())
	runToEnd(t, s)
	pending, most := 0, 0
	log.mu.Lock()
	for _, e := range log.evs {
		switch e.Kind {
		case EvCheckpointTrigger:
			pending++
			most = max(most, pending)
		case EvCheckpointDone, EvCheckpointAbort:
			pending--
		}
	}
	log.mu.Unlock()
	require.Equal(t, 2, most, "the chaos spec has two checkpoints pending at times")

	for _, seed := range []int64{21, 22, 23, 24} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			cfg := cfg
			cfg.Seed, cfg.Crashes, cfg.Rescales, cfg.Dir = seed, 3, 2, t.TempDir()
			res, err := RunChaos(context.Background(), cfg)
			require.NoError(t, err)
			assert.True(t, res.OK, "%s\n%v\n%v", res.Summary(), res.Actions, res.Diff(10))
			assert.Equal(t, 3, res.Crashes)
			assert.Equal(t, 2, res.Rescales)
			assert.Empty(t, res.Comparison.Duplicates)
			assert.Empty(t, res.Comparison.Losses)
		})
	}
}

// Options.SkipCheckpoint: source b takes no part in checkpoint 1 (Flink:
// an externally induced source whose reader never induced it), so merge,
// aligning 1 on a's input, gets b's barrier 2 first and gives 1 up: 1 fails
// with CHECKPOINT_DECLINED_SUBSUMED, not counted (tolerable 0, no
// failover), and 2 completes. b neither acknowledges nor declines 1.
func TestSkippedCheckpointIsSubsumed(t *testing.T) {
	spec := alignSpec(ExactlyOnce)
	spec.Checkpointing.MaxConcurrent = 2
	s, err := NewStepper(spec, Options{Dir: t.TempDir(), SkipCheckpoint: func(task string, id int64) bool {
		return task == "b#0" && id == 1
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	settle(t, s)
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	sendControl(t, s, "a#0")
	sendControl(t, s, "b#0") // dropped: no barrier 1 from b
	deliverBarrier(t, s, "a#0->merge#0")
	assert.True(t, channelView(t, s.Snapshot(), "a#0->merge#0").Blocked, "merge aligns checkpoint 1")
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	_, err = s.RunUntil(func(sn *Snapshot) bool { return sn.Checkpoints.Counts.Completed == 1 }, 10000)
	require.NoError(t, err)

	snap := s.Snapshot()
	require.Equal(t, JobRunning, snap.Job.Status)
	require.Len(t, snap.Checkpoints.History, 2)
	cp := snap.Checkpoints.History[0]
	assert.Equal(t, CheckpointFailed, cp.Status)
	assert.Equal(t, CheckpointDeclinedSubsumed, cp.FailureReason)
	for _, a := range cp.Subtasks {
		assert.NotEqual(t, "b#0", a.Task, "b took no part in checkpoint 1")
	}
	assert.Zero(t, snap.Job.FailedCheckpointsInARow, "not counted toward tolerable-failed-checkpoints")
	assert.Equal(t, CheckpointCompleted, snap.Checkpoints.History[1].Status)
	assert.Equal(t, 1, snap.Job.Attempt, "no failover")
}
