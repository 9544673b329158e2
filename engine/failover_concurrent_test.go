package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// restartsPerTask counts, per subtask, how often it was cancelled or failed
// after event seq.
func restartsPerTask(log *eventLog, seq int64) map[string]int {
	out := map[string]int{}
	for _, e := range log.kinds(EvTaskStatus) {
		if e.Seq > seq && (e.Status == string(TaskCanceled) || e.Status == string(TaskFailed)) {
			out[e.Task]++
		}
	}
	return out
}

// Two failures in two pipelined regions, the second while the first
// region waits for its restart delay. Flink's DefaultScheduler handles every
// task failure on its own (handleTaskFailure -> ExecutionFailureHandler ->
// RestartPipelinedRegionFailoverStrategy.getTasksNeedingRestart ->
// restartTasksWithDelay): each failure cancels and restarts its own region
// after its own backoff, the job is RESTARTING while any region waits
// (verticesWaitingForRestart) and never fails over globally. In the etl job
// crashing source#0 and then source#1 restarts each pipeline once, from the
// latest completed checkpoint, within the same execution (no new attempt of
// the job), and the output stays exactly once.
func TestSecondRegionFailureWhileFirstWaitsRestartsOnlyItsRegion(t *testing.T) {
	pipeline := [][]string{{"source#0", "map#0", "sink#0"}, {"source#1", "map#1", "sink#1"}}
	spec := etlSpec(8000)
	spec.Operators[0].Options["rate"] = 1000.0
	// Fixed delay, so that region 0's restart comes first and region 1's
	// after its own delay (exponential-delay would merge the second failure
	// into the pending backoff and restart both at once).
	spec.Restart = RestartSpec{Strategy: RestartFixedDelay, Attempts: 10, Delay: Duration(time.Second)}
	s, log := newTestStepper(t, spec)
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 2 && allRunning(s) }, 50000)
	require.NoError(t, err)
	attempt := s.Snapshot().Job.Attempt
	crashSeq := s.c.seq.Load()
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "source#0"}))
	require.Equal(t, JobRestarting, s.Snapshot().Job.Status)
	s.Steps(50)
	snap := s.Snapshot()
	require.Equal(t, JobRestarting, snap.Job.Status, "region 0 still waits for its restart delay")
	for _, n := range pipeline[0] {
		require.Contains(t, []TaskStatus{TaskFailed, TaskCanceled}, subtaskView(t, snap, n).Status, "%s waits for its restart", n)
	}
	for _, n := range pipeline[1] {
		require.Equal(t, TaskRunning, subtaskView(t, snap, n).Status, "%s runs", n)
	}
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "source#1"}))
	snap = s.Snapshot()
	assert.Equal(t, attempt, snap.Job.Attempt, "no global failover: the execution is the same")
	for _, n := range pipeline[1] {
		assert.Contains(t, []TaskStatus{TaskFailed, TaskCanceled}, subtaskView(t, snap, n).Status, "%s is cancelled for its own region's restart", n)
	}

	// Region 0 restarts after its delay; the job stays RESTARTING while
	// region 1 waits for its own.
	_, err = s.RunUntil(func(s *Snapshot) bool {
		st := subtaskView(t, *s, "source#0").Status
		return st != TaskFailed && st != TaskCanceled
	}, 100000)
	require.NoError(t, err)
	snap = s.Snapshot()
	assert.Equal(t, JobRestarting, snap.Job.Status, "region 1 still waits")
	for _, n := range pipeline[1] {
		assert.Contains(t, []TaskStatus{TaskFailed, TaskCanceled}, subtaskView(t, snap, n).Status, "%s waits for its own delay", n)
	}

	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRunning && allRunning(s) }, 100000)
	require.NoError(t, err)
	snap = s.Snapshot()
	assert.Equal(t, attempt, snap.Job.Attempt, "never a global failover")
	latest := snap.Checkpoints.LatestRestore
	require.NotNil(t, latest)
	for _, p := range pipeline {
		for _, n := range p {
			assert.Positive(t, subtaskView(t, snap, n).RestoredFrom, "%s restored a checkpoint", n)
		}
	}
	for _, p := range pipeline {
		for _, n := range p {
			assert.Equal(t, 1, restartsPerTask(log, crashSeq)[n], "%s restarts once, with its own region", n)
		}
	}
	var statuses []string
	for _, e := range log.kinds(EvJobStatus) {
		if e.Seq > crashSeq {
			statuses = append(statuses, e.Status)
		}
	}
	assert.Equal(t, []string{"RESTARTING", "RUNNING"}, statuses, "RESTARTING until no region waits, then RUNNING")
	assert.Equal(t, 2, snap.Job.Restart.Attempt, "each failure counts toward the restart strategy")
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	for _, c := range cmp {
		assert.True(t, c.ExactlyOnce, "%+v", c)
	}
}

// The same on the Live driver, with Flink's default restart strategy when
// checkpointing is on (exponential-delay: the second failure within the
// pending backoff merges into that attempt): each pipeline restarts once,
// the job's execution is never replaced, and the output is exactly once.
func TestSecondRegionFailureWhileFirstWaitsLive(t *testing.T) {
	spec := etlSpec(6000)
	spec.Operators[0].Options["rate"] = 3000.0
	// A backoff long enough that the second crash surely comes while
	// region 0 waits, on a busy machine too.
	spec.Restart = RestartSpec{Strategy: RestartExponentialDelay, Delay: Duration(4 * time.Second)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The premise: region 0 has not restarted yet when source#1 crashes.
	// The Live job clock is not the wall clock (it may move on quickly
	// while the job idles), so on a rare run region 0's backoff has passed
	// between the two commands; that run shows nothing about the case,
	// and the scenario is run again (measured: 2 of 20 runs under -race).
	var (
		l        *Live
		log      *eventLog
		attempt  int
		crashSeq int64
	)
	for try := 0; ; try++ {
		require.Less(t, try, 5, "source#0 never still waited for its restart when source#1 crashed")
		log = &eventLog{}
		var err error
		l, err = NewLive(spec, Options{Dir: t.TempDir(), RecordEvents: log.add})
		require.NoError(t, err)
		require.NoError(t, l.Start(ctx))
		waitLive(t, l, func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 1 && allRunning(s) })
		attempt = l.Snapshot().Job.Attempt
		crashSeq = l.c.seq.Load()
		require.NoError(t, l.Do(Command{Name: CmdCrashSubtask, Task: "source#0"}))
		require.NoError(t, l.Do(Command{Name: CmdCrashSubtask, Task: "source#1"}))
		waited := true
		for _, e := range log.kinds(EvTaskStatus) {
			if e.Seq > crashSeq && e.Task == "source#0" && e.Status != string(TaskFailed) && e.Status != string(TaskCanceled) {
				waited = false
			}
		}
		if waited {
			break
		}
		t.Logf("try %d: source#0 had restarted before source#1 crashed; running the scenario again", try+1)
		l.Close()
	}
	defer l.Close()
	waitLive(t, l, func(s *Snapshot) bool { return s.Job.Status == JobRunning && allRunning(s) })
	assert.Equal(t, attempt, l.Snapshot().Job.Attempt, "never a global failover")
	for _, n := range []string{"source#0", "map#0", "sink#0", "source#1", "map#1", "sink#1"} {
		assert.Equal(t, 1, restartsPerTask(log, crashSeq)[n], "%s restarts once, with its own region", n)
	}
	require.NoError(t, l.WaitDrained(ctx))
	cmp, err := l.Compare()
	require.NoError(t, err)
	for _, c := range cmp {
		assert.True(t, c.ExactlyOnce, "%+v", c)
	}
}
