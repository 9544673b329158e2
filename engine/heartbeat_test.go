package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Flink's rule for noticing a killed TaskManager (heartbeat.go), checked
// on its own: requests every interval, the timeout from the last one
// answered, or the threshold-th failed request.
func TestHeartbeatNoticeRule(t *testing.T) {
	c := ClusterSpec{HeartbeatTimeout: Duration(2 * time.Second), HeartbeatInterval: Duration(200 * time.Millisecond)}
	for _, tc := range []struct {
		threshold int
		at        time.Duration
		after     time.Duration
		why       string
	}{
		{0, 1000 * time.Millisecond, 400 * time.Millisecond, "unreachable"}, // requests at 1200, 1400: the second fails
		{0, 1050 * time.Millisecond, 350 * time.Millisecond, "unreachable"},
		{0, 1199 * time.Millisecond, 201 * time.Millisecond, "unreachable"},
		{1, 1050 * time.Millisecond, 150 * time.Millisecond, "unreachable"},
		{-1, 1050 * time.Millisecond, 1950 * time.Millisecond, "timeout"}, // last heartbeat at 1000
		{-1, 1000 * time.Millisecond, 2000 * time.Millisecond, "timeout"},
		{20, 1050 * time.Millisecond, 1950 * time.Millisecond, "timeout"}, // 20 requests take longer than the timeout
	} {
		c.HeartbeatRPCFailureThreshold = tc.threshold
		after, why := heartbeatNotice(c, tc.at)
		assert.Equal(t, tc.after, after, "threshold %d, crash at %v", tc.threshold, tc.at)
		assert.Equal(t, tc.why, why, "threshold %d, crash at %v", tc.threshold, tc.at)
	}
	// Without an interval: StateLab's simplified rule, the timeout from the crash.
	after, why := heartbeatNotice(ClusterSpec{HeartbeatTimeout: Duration(100 * time.Millisecond)}, 1234*time.Millisecond)
	assert.Equal(t, 100*time.Millisecond, after)
	assert.Equal(t, "timeout", why)
}

func TestHeartbeatSpecValidation(t *testing.T) {
	for _, c := range []ClusterSpec{
		{TaskManagers: 2, SlotsPerTaskManager: 1, HeartbeatTimeout: Duration(500 * time.Millisecond), HeartbeatInterval: Duration(time.Second)}, // longer than the timeout
		{TaskManagers: 2, SlotsPerTaskManager: 1, HeartbeatInterval: Duration(-time.Millisecond)},
		{TaskManagers: 2, SlotsPerTaskManager: 1, HeartbeatTimeout: Duration(time.Second), HeartbeatInterval: Duration(time.Millisecond), HeartbeatRPCFailureThreshold: -2},
	} {
		spec := etlSpec(10)
		spec.Cluster = c
		assert.Error(t, spec.Validate(), "%+v", c)
	}
	spec := etlSpec(10)
	spec.Cluster = ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 1, HeartbeatTimeout: Duration(2 * time.Second), HeartbeatInterval: Duration(200 * time.Millisecond), HeartbeatRPCFailureThreshold: -1}
	assert.NoError(t, spec.Validate())
	// An interval without a timeout takes Flink's heartbeat.timeout (50 s)
	// with Flink's rule, not the simplified 100 ms.
	spec = etlSpec(10)
	spec.Cluster = ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 1, HeartbeatInterval: Duration(10 * time.Second)}
	require.NoError(t, spec.Validate())
	assert.Equal(t, 50*time.Second, spec.Cluster.HeartbeatTimeout.D())
	spec = etlSpec(10)
	spec.Cluster = ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 1}
	require.NoError(t, spec.Validate())
	assert.Equal(t, 100*time.Millisecond, spec.Cluster.HeartbeatTimeout.D(), "without an interval: the simplified default")
}

// The etl job with Flink's heartbeat settings of the conformance scenario
// taskmanager-killed-heartbeat (interval 200 ms, timeout 2 s): a crashed
// TaskManager's pipeline fails over when the second heartbeat request after
// the crash fails (Flink 2.3.0/1.20.5: 240-397 ms after a SIGKILL), or,
// with the threshold off, when the timeout runs out (1830-1954 ms); only
// its pipelined region restarts.
func TestKilledTaskManagerNoticedByHeartbeatRule(t *testing.T) {
	for _, tc := range []struct {
		threshold int
		min, max  time.Duration
		message   string
	}{
		{0, 200 * time.Millisecond, 400 * time.Millisecond, "TaskManager tm-2 is no longer reachable: 2 heartbeat requests in a row failed"},
		{-1, 1800 * time.Millisecond, 2000 * time.Millisecond, "the heartbeat of TaskManager tm-2 timed out"},
	} {
		spec := etlSpec(100000)
		spec.Cluster = ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 1, HeartbeatTimeout: Duration(2 * time.Second),
			HeartbeatInterval: Duration(200 * time.Millisecond), HeartbeatRPCFailureThreshold: tc.threshold}
		s, log := newTestStepper(t, spec)
		_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 2 && allRunning(s) }, 50000)
		require.NoError(t, err)
		require.Equal(t, "tm-2", subtaskView(t, s.Snapshot(), "map#1").TaskManager)
		crashSeq := s.c.seq.Load()
		require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-2"}))
		crashAt := s.Snapshot().At
		assert.Equal(t, JobRunning, s.Snapshot().Job.Status, "the JobManager does not know yet")
		_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRestarting }, 100000)
		require.NoError(t, err)
		var restarting Event
		for _, e := range log.kinds(EvJobStatus) {
			if e.Seq > crashSeq && e.Status == string(JobRestarting) && restarting.Seq == 0 {
				restarting = e
			}
		}
		require.NotZero(t, restarting.Seq, "the job failed over")
		assert.Contains(t, restarting.Message, tc.message)
		d := restarting.At - crashAt
		assert.True(t, d > tc.min && d <= tc.max, "threshold %d: noticed %v after the crash, want (%v, %v]", tc.threshold, d, tc.min, tc.max)
		for _, n := range []string{"source#0", "map#0", "sink#0"} {
			assert.Equal(t, TaskRunning, subtaskView(t, s.Snapshot(), n).Status, "%s keeps running", n)
		}
	}
}

// The crash event says how the JobManager will notice: StateLab's
// simplified timeout with Flink's rule beside it, or the rule it follows.
func TestHeartbeatRuleMessage(t *testing.T) {
	simple := heartbeatRule(ClusterSpec{HeartbeatTimeout: Duration(100 * time.Millisecond)}, 100*time.Millisecond, "timeout")
	assert.Contains(t, simple, "100ms here, simplified")
	assert.Contains(t, simple, "2 heartbeat requests in a row fail, one every heartbeat.interval of 10s, or after heartbeat.timeout 50s")
	c := ClusterSpec{HeartbeatTimeout: Duration(2 * time.Second), HeartbeatInterval: Duration(200 * time.Millisecond)}
	assert.Contains(t, heartbeatRule(c, 300*time.Millisecond, "unreachable"), "notices in 300ms, when its heartbeat requests (every 200ms) have failed 2 times in a row")
	assert.Contains(t, heartbeatRule(c, 1900*time.Millisecond, "timeout"), "notices in 1.9s, when the heartbeat timeout (2s) runs out")
}
