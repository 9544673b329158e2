package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of failure handling against Flink's classes and defaults, one per
// row of docs/flink-fidelity.md. Expected values come from Flink's sources
// (cited per test), not from StateLab's code.

// jobStatuses lists the job-status transitions the log saw, in order.
func jobStatuses(log *eventLog) []string {
	var out []string
	for _, e := range log.kinds(EvJobStatus) {
		out = append(out, e.Status)
	}
	return out
}

// Flink's defaults (CheckpointingOptions, JobManagerOptions,
// RestartStrategyOptions) fill what a spec leaves out.
func TestFlinkDefaultsFillSpec(t *testing.T) {
	spec := wordCount(10, 1, 1, 0)
	spec.Restart = RestartSpec{}
	spec.Checkpointing.Interval = ms(100)
	require.NoError(t, spec.Validate())
	c := spec.Checkpointing
	assert.Equal(t, 1, c.Retained, "state.checkpoints.num-retained")
	assert.Equal(t, 10*time.Minute, c.Timeout.D(), "execution.checkpointing.timeout")
	assert.Equal(t, time.Duration(0), c.MinPause.D(), "execution.checkpointing.min-pause")
	assert.Equal(t, 0, c.TolerableFailed, "execution.checkpointing.tolerable-failed-checkpoints")
	assert.Equal(t, "region", spec.Cluster.Failover, "jobmanager.execution.failover-strategy")
	assert.Equal(t, 5*time.Minute, spec.Cluster.SlotRequestTimeout.D(), "slot.request.timeout")
	assert.Nil(t, spec.Chaining)
	assert.True(t, spec.ChainingEnabled(), "pipeline.operator-chaining.enabled (PipelineOptions.OPERATOR_CHAINING) is true")
	assert.Equal(t, "Source: source -> tokenizer", spec.Chains(nil)[0].Name, "source -> tokenizer is forward at equal parallelism: one task")
	e := spec.Effective()
	assert.Equal(t, RestartSpec{Strategy: "exponential-delay", Attempts: 1<<31 - 1, Delay: Duration(time.Second),
		MaxBackoff: Duration(time.Minute), Multiplier: 1.5, Jitter: 0.1, ResetThreshold: Duration(time.Hour)}, e,
		"RestartBackoffTimeStrategyFactoryLoader.getDefaultRestartStrategyFactory with checkpointing on")
	spec.Checkpointing.Interval = 0
	assert.Equal(t, RestartSpec{Strategy: "none"}, spec.Effective(), "NoRestartBackoffTimeStrategy without checkpointing")
	assert.Equal(t, RestartSpec{Strategy: "fixed-delay", Attempts: 1, Delay: Duration(time.Second)},
		RestartSpec{Strategy: "fixed-delay"}.effective(true), "restart-strategy.fixed-delay.attempts 1, delay 1 s")
	assert.Equal(t, RestartSpec{Strategy: "failure-rate", Attempts: 1, Delay: Duration(time.Second), Interval: Duration(time.Minute)},
		RestartSpec{Strategy: "failure-rate"}.effective(false), "failure-rate: 1 failure per 1 min, delay 1 s")
}

// Without checkpointing and without a configured strategy, Flink restarts
// nothing (NoRestartBackoffTimeStrategy): the job goes FAILING then FAILED,
// on both drivers.
func TestNoCheckpointingNoRestart(t *testing.T) {
	spec := wordCount(3000, 1, 1, 0)
	spec.Restart = RestartSpec{}
	t.Run("step", func(t *testing.T) {
		s, log := newTestStepper(t, spec)
		s.Steps(50)
		require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
		snap := s.Snapshot()
		assert.Equal(t, JobFailed, snap.Job.Status)
		assert.Equal(t, RestartView{Strategy: "none", Default: true, Class: "NoRestartBackoffTimeStrategy", Description: "none"}, snap.Job.Restart)
		assert.Equal(t, []string{"CREATED", "RUNNING", "FAILING", "FAILED"}, jobStatuses(log))
		last := log.kinds(EvJobStatus)
		assert.Contains(t, last[len(last)-1].Message, "Recovery is suppressed by NoRestartBackoffTimeStrategy")
	})
	t.Run("live", func(t *testing.T) {
		log := &eventLog{}
		l, err := NewLive(spec, Options{Dir: t.TempDir(), RecordEvents: log.add})
		require.NoError(t, err)
		defer l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, l.Start(ctx))
		waitLive(t, l, func(s *Snapshot) bool { return s.Job.Status == JobRunning && allRunning(s) })
		require.NoError(t, l.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
		waitLive(t, l, func(s *Snapshot) bool { return s.Job.Status == JobFailed })
		assert.Equal(t, []string{"CREATED", "RUNNING", "FAILING", "FAILED"}, jobStatuses(log))
	})
}

// restartDelays crashes count#0 n times, each time once the job runs again,
// and returns how long each RESTARTING lasted on the virtual clock.
func restartDelays(t *testing.T, s *Stepper, log *eventLog, n int) []time.Duration {
	t.Helper()
	for i := 1; i <= n; i++ {
		_, err := s.RunUntil(runningAgain(i), 20000)
		require.NoError(t, err, "attempt %d runs", i)
		require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
	}
	_, err := s.RunUntil(runningAgain(n+1), 20000)
	require.NoError(t, err)
	var out []time.Duration
	var from time.Duration
	for _, e := range log.kinds(EvJobStatus) {
		switch {
		case e.Status == string(JobRestarting):
			from = e.At
		case e.Status == string(JobRunning) && e.Previous == string(JobRestarting):
			out = append(out, e.At-from)
		}
	}
	return out
}

// With checkpointing on and nothing configured, Flink 1.19+ restarts with
// ExponentialDelayRestartBackoffTimeStrategy: backoff initial * 1.5^attempt
// (whole ms) with jitter in [-0.1, +0.1] of it, never below the initial
// 1 s, capped at 1 min; the job goes RUNNING -> RESTARTING -> RUNNING and
// never FAILING (DefaultScheduler.addVerticesToRestartPending).
func TestDefaultExponentialDelayBackoff(t *testing.T) {
	spec := wordCount(100000, 1, 1, 0)
	spec.Restart = RestartSpec{}
	spec.Checkpointing.Interval = ms(500)
	s, log := newTestStepper(t, spec)
	delays := restartDelays(t, s, log, 12)
	require.Len(t, delays, 12)
	base := 1000.0
	for i, d := range delays {
		b := int64(base)
		lo, hi := min(60000, max(1000, b-int64(float64(b)*0.1))), min(60000, b+int64(float64(b)*0.1))
		assert.True(t, d >= time.Duration(lo)*time.Millisecond && d <= time.Duration(hi)*time.Millisecond,
			"restart %d: backoff %v outside [%dms, %dms]", i+1, d, lo, hi)
		base *= 1.5
	}
	assert.Equal(t, time.Minute, delays[11], "1.5^11 s is past the 1 min cap")
	for _, st := range jobStatuses(log) {
		assert.NotEqual(t, "FAILING", st, "a restart never passes through FAILING")
	}
	snap := s.Snapshot()
	assert.Equal(t, "exponential-delay", snap.Job.Restart.Strategy)
	assert.True(t, snap.Job.Restart.Default)
	assert.Equal(t, 12, snap.Job.Restart.Attempt)
	assert.Equal(t, -1, snap.Job.RestartsLeft, "unlimited")

	// Same seed, same jitter: a second run draws the same backoffs.
	s2, log2 := newTestStepper(t, spec)
	assert.Equal(t, delays, restartDelays(t, s2, log2, 12))
}

// Without jitter the exponential backoffs are exactly Flink's
// calculateActualBackoffTime: 1000, 1500, 2250, 3375, 5062 ms (truncated).
func TestExponentialDelayWithoutJitter(t *testing.T) {
	spec := wordCount(100000, 1, 1, 0)
	spec.Restart = RestartSpec{Strategy: RestartExponentialDelay, Jitter: -1}
	s, log := newTestStepper(t, spec)
	want := []time.Duration{1000, 1500, 2250, 3375, 5062}
	for i := range want {
		want[i] *= time.Millisecond
	}
	assert.Equal(t, want, restartDelays(t, s, log, 5))
}

// ExponentialDelayRestartBackoffTimeStrategy, step by step: failures during
// a pending backoff merge into one attempt; after reset-backoff-threshold
// of quiet the backoff starts at the initial value again;
// attempts-before-reset-backoff bounds the attempts.
func TestExponentialDelayStrategyState(t *testing.T) {
	r := RestartSpec{Strategy: RestartExponentialDelay, Delay: Duration(time.Second), Jitter: -1, Attempts: 3,
		ResetThreshold: Duration(10 * time.Second)}.effective(true)
	var st restartState
	ok, d := st.notifyFailure(r, 0, 1)
	assert.True(t, ok)
	assert.Equal(t, time.Second, d)
	ok, d = st.notifyFailure(r, 500*time.Millisecond, 1)
	assert.True(t, ok, "merged into the pending attempt")
	assert.Equal(t, 500*time.Millisecond, d, "the pending restart stays at 1 s")
	assert.Equal(t, 1, st.attempt)
	ok, d = st.notifyFailure(r, 2*time.Second, 1)
	assert.True(t, ok)
	assert.Equal(t, 1500*time.Millisecond, d)
	ok, _ = st.notifyFailure(r, 4*time.Second, 1)
	assert.True(t, ok, "attempt 3 of 3")
	ok, _ = st.notifyFailure(r, 8*time.Second, 1)
	assert.False(t, ok, "attempt 4 is past attempts-before-reset-backoff")
	// 10 s after the last scheduled restart the backoff resets.
	var st2 restartState
	st2.notifyFailure(r, 0, 1)
	st2.notifyFailure(r, 2*time.Second, 1) // 1.5 s, next restart at 3.5 s
	ok, d = st2.notifyFailure(r, 14*time.Second, 1)
	assert.True(t, ok)
	assert.Equal(t, time.Second, d, "quiet for 10.5 s >= threshold: back to the initial backoff")
}

// FailureRateRestartBackoffTimeStrategy: restart while at most N failures
// fall within the interval; the (N+1)-th within it fails the job.
func TestFailureRateStrategy(t *testing.T) {
	r := RestartSpec{Strategy: RestartFailureRate, Attempts: 2, Interval: Duration(time.Minute), Delay: ms(10)}.effective(false)
	var st restartState
	for i, at := range []time.Duration{0, 10 * time.Second} {
		ok, d := st.notifyFailure(r, at, 1)
		assert.True(t, ok, "failure %d", i+1)
		assert.Equal(t, 10*time.Millisecond, d)
	}
	ok, _ := st.notifyFailure(r, 20*time.Second, 1)
	assert.False(t, ok, "3 failures within 1 min")
	var slow restartState
	for _, at := range []time.Duration{0, 61 * time.Second, 122 * time.Second, 183 * time.Second} {
		ok, _ := slow.notifyFailure(r, at, 1)
		assert.True(t, ok, "at %v: one failure a minute stays under the rate", at)
	}

	// In a job: three quick crashes exhaust it; FAILING -> FAILED at the end.
	spec := wordCount(100000, 1, 1, 0)
	spec.Restart = RestartSpec{Strategy: RestartFailureRate, Attempts: 2, Interval: Duration(time.Minute), Delay: ms(10)}
	s, log := newTestStepper(t, spec)
	for i := 1; i <= 3; i++ {
		_, err := s.RunUntil(runningAgain(i), 5000)
		require.NoError(t, err)
		require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
	}
	assert.Equal(t, JobFailed, s.Snapshot().Job.Status)
	sts := jobStatuses(log)
	assert.Equal(t, []string{"RESTARTING", "RUNNING", "RESTARTING", "RUNNING", "FAILING", "FAILED"}, sts[2:])
}

// FixedDelayRestartBackoffTimeStrategy: attempts restarts, each after the
// delay; the next failure fails the job.
func TestFixedDelayStrategy(t *testing.T) {
	spec := wordCount(100000, 1, 1, 0)
	spec.Restart = RestartSpec{Strategy: RestartFixedDelay, Attempts: 3, Delay: Duration(2 * time.Second)}
	s, log := newTestStepper(t, spec)
	assert.Equal(t, []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second}, restartDelays(t, s, log, 3))
	assert.Equal(t, 0, s.Snapshot().Job.RestartsLeft)
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
	snap := s.Snapshot()
	assert.Equal(t, JobFailed, snap.Job.Status)
	last := log.kinds(EvJobStatus)
	assert.Contains(t, last[len(last)-1].Message, "Recovery is suppressed by FixedDelayRestartBackoffTimeStrategy")
}

// CheckpointFailureManager.checkFailureCounter: which
// CheckpointFailureReasons count toward tolerable-failed-checkpoints.
func TestCheckpointFailureReasonsThatCount(t *testing.T) {
	counts := map[CheckpointFailureReason]bool{
		CheckpointExpired: true, CheckpointDeclined: true, CheckpointAsyncException: true, IOException: true,
		FinalizeCheckpointFailure: false, CheckpointDeclinedSubsumed: false, CheckpointDeclinedTaskNotReady: false,
		CheckpointSubsumed: false, JobFailure: false, NotAllRequiredTasksRunning: false,
	}
	for r, want := range counts {
		assert.Equal(t, want, r.Counts(), string(r))
	}
	var m checkpointFailureManager
	assert.False(t, m.onFailure(1, CheckpointExpired, false, 1), "1 of 1 tolerated")
	assert.False(t, m.onFailure(1, CheckpointDeclined, false, 1), "one checkpoint counts once")
	assert.False(t, m.onFailure(2, CheckpointSubsumed, false, 1), "subsumed never counts")
	assert.False(t, m.onFailure(3, CheckpointExpired, true, 1), "an expired savepoint never counts")
	assert.True(t, m.onFailure(4, CheckpointExpired, false, 1), "2 > 1: fail over")
	assert.Zero(t, m.continuous, "the count starts again after the failover")
	m.onFailure(5, CheckpointExpired, false, 1)
	m.onSuccess(6)
	assert.Zero(t, m.continuous, "a completed checkpoint clears the count")
	assert.False(t, m.onFailure(5, CheckpointExpired, false, 0), "a failure older than the last success is ignored")
}

// An expired checkpoint with tolerable-failed-checkpoints 0 (Flink's
// default) fails the job over with Flink's message; the restart strategy
// restarts it.
func TestExpiredCheckpointFailsJobOver(t *testing.T) {
	for _, tolerable := range []int{0, 1} {
		t.Run(fmt.Sprint(tolerable), func(t *testing.T) {
			spec := alignSpec(ExactlyOnce)
			spec.Checkpointing.Timeout = ms(5)
			spec.Checkpointing.TolerableFailed = tolerable
			s, log := newTestStepper(t, spec)
			for i := 0; i <= tolerable; i++ {
				settle(t, s)
				require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
				sendControl(t, s, "a#0")
				deliverBarrier(t, s, "a#0->merge#0") // merge aligns; b's barrier never comes in time
				for s.Snapshot().Checkpoints.Counts.Failed == i {
					advanceTimer(t, s)
				}
				if i < tolerable {
					assert.Equal(t, JobRunning, s.Snapshot().Job.Status, "failure %d of %d tolerated", i+1, tolerable)
					assert.Equal(t, i+1, s.Snapshot().Job.FailedCheckpointsInARow)
				}
			}
			snap := s.Snapshot()
			assert.Equal(t, JobRestarting, snap.Job.Status)
			h := snap.Checkpoints.History
			assert.Equal(t, CheckpointExpired, h[len(h)-1].FailureReason)
			var msg string
			for _, e := range log.kinds(EvJobStatus) {
				if e.Status == string(JobRestarting) {
					msg = e.Message
				}
			}
			assert.Contains(t, msg, "Exceeded checkpoint tolerable failure threshold.")
			_, err := s.RunUntil(runningAgain(2), 1000)
			require.NoError(t, err)
		})
	}
}

// JobManager checkpoint storage over its cap: the subtask's asynchronous
// snapshot fails (CHECKPOINT_ASYNC_EXCEPTION, which counts), and with
// Flink's default tolerance the job fails over and restarts, again and
// again while the state stays too large.
func TestJobManagerStorageCapFailsJobOver(t *testing.T) {
	spec := wordCount(4000, 1, 1, 0)
	spec.Restart = RestartSpec{} // Flink's default with checkpointing: exponential-delay
	spec.Checkpointing.Interval = ms(200)
	spec.Checkpointing.MaxStateBytes = 200
	s, log := newTestStepper(t, spec)
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Counters.Restarts >= 2 }, 200000)
	require.NoError(t, err)
	var reasons []CheckpointFailureReason
	for _, e := range log.kinds(EvCheckpointAbort) {
		reasons = append(reasons, e.Stats.FailureReason)
	}
	require.NotEmpty(t, reasons)
	assert.Equal(t, CheckpointAsyncException, reasons[0])
	assert.Zero(t, s.Snapshot().Checkpoints.Counts.Completed)
}

// The default scheduler fails a job whose slot requests are not fulfilled
// within slot.request.timeout (JobManagerOptions.SLOT_REQUEST_TIMEOUT,
// 5 min): the restart strategy decides (here none: FAILED). The snapshot
// shows when it will fail while it waits.
func TestSlotRequestTimeout(t *testing.T) {
	spec := wordCount(300, 2, 2, 0)
	spec.Restart = RestartSpec{Strategy: RestartFixedDelay, Attempts: 1, Delay: ms(10)}
	spec.Cluster = ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 1}
	s, log := newTestStepper(t, spec)
	_, err := s.RunUntil(func(s *Snapshot) bool { return allRunning(s) }, 5000)
	require.NoError(t, err)
	require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-2"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.WaitingForResources }, 5000)
	require.NoError(t, err)
	w := s.Snapshot()
	require.True(t, w.Job.WaitingForResources)
	assert.Greater(t, w.Job.SlotRequestDeadline, w.At, "the deadline is ahead")
	assert.LessOrEqual(t, w.Job.SlotRequestDeadline, w.At+5*time.Minute)
	start := w.Job.SlotRequestDeadline - 5*time.Minute
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobFailed }, 100000)
	require.NoError(t, err, "the strategy's one restart went to the TaskManager loss: the timeout fails the job for good")
	var failedAt time.Duration
	for _, e := range log.kinds(EvJobStatus) {
		if e.Status == string(JobFailing) && strings.Contains(e.Message, "slot.request.timeout") {
			failedAt = e.At
		}
	}
	assert.Equal(t, 5*time.Minute, failedAt-start, "the wait fails after exactly slot.request.timeout")
}

// Reactive mode (the adaptive scheduler): a new TaskManager makes the job
// restart from the latest completed checkpoint with the new parallelism;
// no savepoint is taken.
func TestReactiveRestartsFromCheckpoint(t *testing.T) {
	spec := wordCount(400, 1, 1, 0)
	spec.Cluster = ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 2, Reactive: true}
	s, log := newTestStepper(t, spec)
	_, err := s.RunUntil(allRunning, 1000)
	require.NoError(t, err)
	s.Steps(100)
	id := completeCheckpoint(t, s)
	s.Steps(50)
	require.NoError(t, s.Do(Command{Name: CmdAddTaskManager}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Counters.Rescales == 1 && allRunning(s) }, 20000)
	require.NoError(t, err)
	snap := s.Snapshot()
	for _, o := range snap.Job.Operators {
		assert.Equal(t, 4, o.Parallelism, o.ID)
	}
	for _, h := range snap.Checkpoints.History {
		assert.False(t, h.Savepoint, "no savepoint: checkpoint %d", h.ID)
	}
	assert.Equal(t, id, subtaskView(t, snap, "count#3").RestoredFrom, "restored from the latest completed checkpoint")
	sts := jobStatuses(log)
	assert.Equal(t, []string{"RUNNING", "RESTARTING", "RUNNING"}, sts[len(sts)-3:])
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
}

// A killed TaskManager is noticed after the heartbeat timeout (Flink's
// heartbeat.timeout, HeartbeatManagerOptions; StateLab's default is
// shorter): until then its subtasks do nothing while the job stays
// RUNNING; then they fail and the job fails over.
func TestHeartbeatTimeout(t *testing.T) {
	spec := wordCount(100000, 2, 2, 0)
	spec.Cluster = ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 1, HeartbeatTimeout: Duration(3 * time.Second)}
	s, log := newTestStepper(t, spec)
	_, err := s.RunUntil(allRunning, 5000)
	require.NoError(t, err)
	s.Steps(200)
	require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-2"}))
	crashAt := s.Snapshot().At
	assert.Equal(t, JobRunning, s.Snapshot().Job.Status, "the JobManager does not know yet")
	before := subtaskView(t, s.Snapshot(), "count#1").RecordsIn
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRestarting }, 100000)
	require.NoError(t, err)
	var at time.Duration
	for _, e := range log.kinds(EvJobStatus) {
		if e.Status == string(JobRestarting) {
			at = e.At
			assert.Contains(t, e.Message, "heartbeat of TaskManager tm-2 timed out")
		}
	}
	assert.Equal(t, 3*time.Second, at-crashAt, "noticed exactly one heartbeat timeout later")
	assert.Equal(t, before, subtaskView(t, s.Snapshot(), "count#1").RecordsIn, "count#1 on the dead TaskManager processed nothing meanwhile")
}

// etlSpec: source (2 partitions) -> map -> sink, forward edges only,
// parallelism 2: two pipelined regions.
func etlSpec(records int) *JobSpec {
	return &JobSpec{
		Name: "etl", Seed: 11,
		Operators: []OperatorSpec{
			{ID: "source", Kind: KindSource, Parallelism: 2, Options: map[string]any{"partitions": 2, "records": records, "keys": 40}},
			{ID: "map", Kind: KindMap, Parallelism: 2, Options: map[string]any{"fn": "upper"}},
			{ID: "sink", Kind: KindSink, Parallelism: 2},
		},
		Edges: []EdgeSpec{
			{From: "source", To: "map", Partitioner: Forward},
			{From: "map", To: "sink", Partitioner: Forward},
		},
		Checkpointing: CheckpointingSpec{Interval: ms(50)},
		Cluster:       ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 1},
	}
}

// Pipelined regions as SchedulingPipelinedRegionComputeUtil computes them:
// a forward edge joins subtask i with i, an all-to-all edge joins all.
func TestPipelinedRegions(t *testing.T) {
	e := etlSpec(10)
	require.NoError(t, e.Validate())
	assert.Equal(t, [][]string{{"map#0", "sink#0", "source#0"}, {"map#1", "sink#1", "source#1"}},
		e.PipelinedRegions(map[string]int{"source": 2, "map": 2, "sink": 2}))
	w := wordCount(10, 2, 2, 0)
	require.NoError(t, w.Validate())
	regs := w.PipelinedRegions(map[string]int{"source": 2, "tokenizer": 2, "count": 2, "sink": 1})
	assert.Len(t, regs, 1, "keyBy joins every subtask into one region")
	assert.Len(t, regs[0], 7)
}

// Region failover (RestartPipelinedRegionFailoverStrategy, Flink's default
// jobmanager.execution.failover-strategy): crashing source#0 of the etl job
// restarts source#0, map#0 and sink#0 from the latest completed checkpoint;
// the index-1 pipeline stays RUNNING throughout. With failover full, every
// subtask restarts (RestartAllFailoverStrategy). Both drivers.
func TestRegionFailover(t *testing.T) {
	region := []string{"source#0", "map#0", "sink#0"}
	other := []string{"source#1", "map#1", "sink#1"}
	check := func(t *testing.T, log *eventLog, crashSeq int64, failover string) {
		restarted := map[string]bool{}
		for _, e := range log.kinds(EvTaskStatus) {
			if e.Seq > crashSeq && (e.Status == string(TaskCanceled) || e.Status == string(TaskFailed)) {
				restarted[e.Task] = true
			}
		}
		for _, n := range region {
			assert.True(t, restarted[n], "%s restarts", n)
		}
		for _, n := range other {
			assert.Equal(t, failover == FailoverFull, restarted[n], "%s restarts only with failover full", n)
		}
	}
	for _, failover := range []string{FailoverRegion, FailoverFull} {
		t.Run("step/"+failover, func(t *testing.T) {
			spec := etlSpec(4000)
			spec.Cluster.Failover = failover
			s, log := newTestStepper(t, spec)
			_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 2 && allRunning(s) }, 50000)
			require.NoError(t, err)
			crashSeq := s.c.seq.Load()
			require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "source#0"}))
			assert.Equal(t, JobRestarting, s.Snapshot().Job.Status)
			if failover == FailoverRegion {
				for _, n := range other {
					assert.Equal(t, TaskRunning, subtaskView(t, s.Snapshot(), n).Status, "%s keeps running", n)
				}
				before := subtaskView(t, s.Snapshot(), "map#1").RecordsIn
				s.Steps(200)
				assert.Greater(t, subtaskView(t, s.Snapshot(), "map#1").RecordsIn, before, "the index-1 pipeline keeps working while region 0 waits for its restart")
			}
			_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRunning && allRunning(s) }, 50000)
			require.NoError(t, err)
			snap := s.Snapshot()
			latest := snap.Checkpoints.LatestRestore
			require.NotNil(t, latest)
			for _, n := range region {
				assert.Equal(t, latest.Checkpoint, subtaskView(t, snap, n).RestoredFrom, n)
			}
			check(t, log, crashSeq, failover)
			runToEnd(t, s)
			cmp, err := s.Compare()
			require.NoError(t, err)
			for _, c := range cmp {
				assert.True(t, c.ExactlyOnce, "%+v", c)
			}
		})
	}
	t.Run("live", func(t *testing.T) {
		spec := etlSpec(6000)
		spec.Operators[0].Options["rate"] = 3000.0
		log := &eventLog{}
		l, err := NewLive(spec, Options{Dir: t.TempDir(), RecordEvents: log.add})
		require.NoError(t, err)
		defer l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		require.NoError(t, l.Start(ctx))
		waitLive(t, l, func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 1 && allRunning(s) })
		crashSeq := l.c.seq.Load()
		require.NoError(t, l.Do(Command{Name: CmdCrashSubtask, Task: "source#0"}))
		waitLive(t, l, func(s *Snapshot) bool { return s.Job.Status == JobRunning && allRunning(s) })
		check(t, log, crashSeq, FailoverRegion)
		require.NoError(t, l.WaitDrained(ctx))
		cmp, err := l.Compare()
		require.NoError(t, err)
		for _, c := range cmp {
			assert.True(t, c.ExactlyOnce, "%+v", c)
		}
	})
}

// What a restore of an older checkpoint costs, as the restore-requested
// event says: the sink records committed after it are written again, and
// the comparison against the ground truth counts exactly those as
// duplicates (flink run -s from an older checkpoint does the same to a
// two-phase-commit sink).
func TestRestoreCostMatchesDuplicates(t *testing.T) {
	spec := wordCount(600, 2, 2, 0)
	spec.Checkpointing.Retained = 2
	s, log := newTestStepper(t, spec)
	s.Steps(150)
	first := completeCheckpoint(t, s)
	s.Steps(150)
	completeCheckpoint(t, s)
	s.Steps(100)
	require.NoError(t, s.Do(Command{Name: CmdRestore, Checkpoint: first}))
	req := log.kinds(EvRestoreRequested)
	require.Len(t, req, 1)
	assert.Positive(t, req[0].Value, "the sink committed records after checkpoint %d", first)
	assert.Positive(t, req[0].Records, "the sources read records after checkpoint %d", first)
	sts := jobStatuses(log)
	assert.Equal(t, []string{"CANCELED", "CREATED", "RUNNING"}, sts[len(sts)-3:])
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.Empty(t, cmp[0].Losses)
	assert.Equal(t, int(req[0].Value), cmp[0].DuplicateRecords, "every record committed after the checkpoint appears twice, and nothing else")
}

// However many attempts have passed, an exponential backoff stays within
// [initial, max]: Java's (long) cast of a huge double saturates, so Flink's
// backoff sits at its cap; the multiplier's power must not overflow into a
// negative or a panic (it did after ~1,750 attempts at 1.5).
func TestExponentialDelayBackoffStaysCappedAfterManyAttempts(t *testing.T) {
	for _, jitter := range []float64{-1, 0.1} {
		r := RestartSpec{Strategy: RestartExponentialDelay, Delay: Duration(time.Second), Jitter: jitter}.effective(true)
		st := restartState{}
		for _, attempt := range []int{50, 1750, 5000, 1 << 20} {
			st.attempt = attempt
			d := st.backoff(r, 7)
			assert.Equal(t, r.MaxBackoff.D(), d, "attempt %d, jitter %v", attempt, jitter)
		}
	}
}

// The restore command on the Live driver: the same contract as on the
// Stepper (TestRestoreCostMatchesDuplicates).
func TestRestoreCommandLive(t *testing.T) {
	spec := wordCount(3000, 2, 2, 0)
	spec.Checkpointing.Interval = ms(20)
	spec.Checkpointing.Retained = 2
	spec.Operators[0].Options["rate"] = 2000.0
	log := &eventLog{}
	l, err := NewLive(spec, Options{Dir: t.TempDir(), RecordEvents: log.add})
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, l.Start(ctx))
	waitLive(t, l, func(s *Snapshot) bool { return len(s.Checkpoints.Retained) == 2 && s.Sinks[0].Committed > 0 })
	l.Pause()
	// Pause makes each subtask wait before its next input; an
	// acknowledgement already under way still completes its checkpoint,
	// which retires the oldest (retained: 2). Take the oldest that is
	// retained when the command lands.
	var oldest int64
	for attempt := 0; ; attempt++ {
		oldest = l.Snapshot().Checkpoints.Retained[0].ID
		err := l.Do(Command{Name: CmdRestore, Checkpoint: oldest})
		if err == nil {
			break
		}
		require.ErrorIs(t, err, ErrBadCommand)
		require.Less(t, attempt, 5, "checkpoints kept completing while paused: %v", err)
		require.NotEqual(t, oldest, l.Snapshot().Checkpoints.Retained[0].ID, "refused although retained: %v", err)
	}
	l.Resume()
	require.NoError(t, l.WaitDrained(ctx))
	req := log.kinds(EvRestoreRequested)
	require.Len(t, req, 1)
	cmp, err := l.Compare()
	require.NoError(t, err)
	assert.Empty(t, cmp[0].Losses)
	assert.Equal(t, int(req[0].Value), cmp[0].DuplicateRecords, "the records committed after checkpoint %d, and nothing else, appear twice", oldest)
	assert.Equal(t, oldest, l.Snapshot().Checkpoints.LatestRestore.Checkpoint)
}
