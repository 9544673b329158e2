package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// restartedSince lists the subtasks that were cancelled or failed after
// event seq.
func restartedSince(log *eventLog, seq int64) map[string]bool {
	out := map[string]bool{}
	for _, e := range log.kinds(EvTaskStatus) {
		if e.Seq > seq && (e.Status == string(TaskCanceled) || e.Status == string(TaskFailed)) {
			out[e.Task] = true
		}
	}
	return out
}

// A lost TaskManager under region failover, as Flink's
// RestartPipelinedRegionFailoverStrategy handles it: the JobManager fails
// every task deployed on the TaskManager when its heartbeat times out
// (DefaultScheduler.handleTaskFailure for each), and the tasks to restart
// are the union of their pipelined regions
// (RestartPipelinedRegionFailoverStrategy.getTasksNeedingRestart). In the
// etl job (forward edges, parallelism 2) tm-1 runs only pipeline 0, so only
// source#0, map#0 and sink#0 restart; pipeline 1 keeps RUNNING and keeps
// working. The region's slot is gone with the TaskManager: it waits for
// resources (the job stays RUNNING) until the TaskManager comes back, then
// restores the latest completed checkpoint; the output is exactly once.
func TestLostTaskManagerRestartsOnlyItsRegions(t *testing.T) {
	region := []string{"source#0", "map#0", "sink#0"}
	other := []string{"source#1", "map#1", "sink#1"}
	spec := etlSpec(8000)
	spec.Operators[0].Options["rate"] = 1000.0
	spec.Cluster.HeartbeatTimeout = Duration(50 * time.Millisecond)
	s, log := newTestStepper(t, spec)
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 2 && allRunning(s) }, 50000)
	require.NoError(t, err)
	for _, n := range region {
		require.Equal(t, "tm-1", subtaskView(t, s.Snapshot(), n).TaskManager, "%s runs on tm-1", n)
	}
	for _, n := range other {
		require.Equal(t, "tm-2", subtaskView(t, s.Snapshot(), n).TaskManager, "%s runs on tm-2", n)
	}
	crashSeq := s.c.seq.Load()
	attempt := s.Snapshot().Job.Attempt
	require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-1"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRestarting }, 100000)
	require.NoError(t, err)
	var restarting Event
	for _, e := range log.kinds(EvJobStatus) {
		if e.Seq > crashSeq && e.Status == string(JobRestarting) {
			restarting = e
		}
	}
	assert.Contains(t, restarting.Message, "heartbeat of TaskManager tm-1 timed out")
	assert.Contains(t, restarting.Message, "the other subtasks keep running")
	for _, n := range other {
		assert.Equal(t, TaskRunning, subtaskView(t, s.Snapshot(), n).Status, "%s keeps running", n)
	}

	// After the backoff the region asks for a slot; tm-2's only slot is
	// taken by pipeline 1, so it waits.
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.WaitingForResources }, 100000)
	require.NoError(t, err)
	snap := s.Snapshot()
	assert.Equal(t, JobRunning, snap.Job.Status)
	for _, n := range region {
		assert.Equal(t, TaskScheduled, subtaskView(t, snap, n).Status, "%s waits for a slot", n)
	}
	before := subtaskView(t, snap, "map#1").RecordsIn
	s.Steps(300)
	assert.Greater(t, subtaskView(t, s.Snapshot(), "map#1").RecordsIn, before, "pipeline 1 keeps working while region 0 waits")

	require.NoError(t, s.Do(Command{Name: CmdRestartTaskManager, TaskManager: "tm-1"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRunning && allRunning(s) }, 100000)
	require.NoError(t, err)
	snap = s.Snapshot()
	assert.Equal(t, attempt, snap.Job.Attempt, "a region restart is no new execution attempt of the job")
	assert.False(t, snap.Job.WaitingForResources)
	restarted := restartedSince(log, crashSeq)
	for _, n := range region {
		assert.True(t, restarted[n], "%s restarts", n)
		assert.Equal(t, "tm-1", subtaskView(t, snap, n).TaskManager, "%s is placed on the restarted tm-1", n)
		assert.Equal(t, snap.Checkpoints.LatestRestore.Checkpoint, subtaskView(t, snap, n).RestoredFrom, n)
	}
	for _, n := range other {
		assert.False(t, restarted[n], "%s never stops", n)
	}
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	for _, c := range cmp {
		assert.True(t, c.ExactlyOnce, "%+v", c)
	}
}

// With a free slot elsewhere, the region restarts there at once (Flink's
// scheduler asks the slot pool for new slots); a region that waits fails
// after slot.request.timeout like a whole job.
func TestLostTaskManagerRegionTakesAFreeSlot(t *testing.T) {
	spec := etlSpec(3000)
	spec.Cluster.TaskManagers = 3
	spec.Cluster.HeartbeatTimeout = Duration(50 * time.Millisecond)
	s, log := newTestStepper(t, spec)
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 1 && allRunning(s) }, 50000)
	require.NoError(t, err)
	crashSeq := s.c.seq.Load()
	require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-2"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRestarting }, 100000)
	require.NoError(t, err)
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRunning && allRunning(s) }, 100000)
	require.NoError(t, err)
	snap := s.Snapshot()
	for _, n := range []string{"source#1", "map#1", "sink#1"} {
		assert.Equal(t, "tm-3", subtaskView(t, snap, n).TaskManager, "%s moves to the free slot of tm-3", n)
	}
	restarted := restartedSince(log, crashSeq)
	for _, n := range []string{"source#0", "map#0", "sink#0"} {
		assert.False(t, restarted[n], "%s never stops", n)
	}
	assert.Empty(t, log.kinds(EvWaitingResources))
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	for _, c := range cmp {
		assert.True(t, c.ExactlyOnce, "%+v", c)
	}
}

// A keyBy job is one pipelined region, so a lost TaskManager restarts
// every subtask (as RestartPipelinedRegionFailoverStrategy does when the
// failed tasks' regions are the whole job); the same with failover full
// (RestartAllFailoverStrategy) on the etl job.
func TestLostTaskManagerRestartsEverythingInOneRegion(t *testing.T) {
	for name, spec := range map[string]*JobSpec{"keyBy": wordCount(100000, 2, 2, 0), "full": etlSpec(100000)} {
		t.Run(name, func(t *testing.T) {
			spec.Checkpointing.Interval = ms(50)
			spec.Cluster = ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 1, HeartbeatTimeout: Duration(50 * time.Millisecond)}
			if name == "full" {
				spec.Cluster.Failover = FailoverFull
			}
			s, log := newTestStepper(t, spec)
			_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 1 && allRunning(s) }, 50000)
			require.NoError(t, err)
			crashSeq := s.c.seq.Load()
			require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-2"}))
			_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRestarting }, 100000)
			require.NoError(t, err)
			restarted := restartedSince(log, crashSeq)
			for _, o := range s.Snapshot().Job.Operators {
				for _, st := range o.Subtasks {
					assert.True(t, restarted[st.Name], "%s restarts", st.Name)
				}
			}
		})
	}
}

// The same on the Live driver: after tm-1 is lost, pipeline 1 never stops,
// and once tm-1 is back the job runs to an exactly-once end.
func TestLostTaskManagerRegionLive(t *testing.T) {
	spec := etlSpec(6000)
	spec.Operators[0].Options["rate"] = 3000.0
	spec.Cluster.HeartbeatTimeout = Duration(50 * time.Millisecond)
	log := &eventLog{}
	l, err := NewLive(spec, Options{Dir: t.TempDir(), RecordEvents: log.add})
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, l.Start(ctx))
	waitLive(t, l, func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 1 && allRunning(s) })
	crashSeq := l.c.seq.Load()
	require.NoError(t, l.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-1"}))
	waitLive(t, l, func(s *Snapshot) bool { return s.Job.WaitingForResources })
	require.NoError(t, l.Do(Command{Name: CmdRestartTaskManager, TaskManager: "tm-1"}))
	waitLive(t, l, func(s *Snapshot) bool { return s.Job.Status == JobRunning && allRunning(s) })
	restarted := restartedSince(log, crashSeq)
	for _, n := range []string{"source#0", "map#0", "sink#0"} {
		assert.True(t, restarted[n], "%s restarts", n)
	}
	for _, n := range []string{"source#1", "map#1", "sink#1"} {
		assert.False(t, restarted[n], "%s never stops", n)
	}
	require.NoError(t, l.WaitDrained(ctx))
	cmp, err := l.Compare()
	require.NoError(t, err)
	for _, c := range cmp {
		assert.True(t, c.ExactlyOnce, "%+v", c)
	}
}

// Reactive mode is Flink's AdaptiveScheduler, which has no region
// failover: a lost TaskManager restarts the whole job (Executing ->
// Restarting), which then runs on the slots that are left, here one.
func TestLostTaskManagerInReactiveModeRestartsAll(t *testing.T) {
	spec := etlSpec(100000)
	spec.Cluster.Reactive = true
	spec.Cluster.HeartbeatTimeout = Duration(50 * time.Millisecond)
	s, log := newTestStepper(t, spec)
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 1 && allRunning(s) }, 50000)
	require.NoError(t, err)
	crashSeq := s.c.seq.Load()
	require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-1"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRestarting }, 100000)
	require.NoError(t, err)
	assert.True(t, restartedSince(log, crashSeq)["source#1"], "pipeline 1 restarts too")
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRunning && allRunning(s) }, 100000)
	require.NoError(t, err)
	for _, o := range s.Snapshot().Job.Operators {
		assert.Equal(t, 1, o.Parallelism, "%s runs on the one slot left", o.ID)
	}
}
