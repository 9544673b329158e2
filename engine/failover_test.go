package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func completeCheckpoint(t *testing.T, s *Stepper) int64 {
	t.Helper()
	before := s.Snapshot().Checkpoints.Counts.Completed
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed > before }, 5000)
	require.NoError(t, err)
	h := s.Snapshot().Checkpoints.History
	return h[len(h)-1].ID
}

func restoreEvents(log *eventLog, attempt int) map[string]*RestoreInfo {
	out := map[string]*RestoreInfo{}
	for _, e := range log.kinds(EvRestore) {
		out[e.Task] = e.Restore
	}
	return out
}

func runningAgain(attempt int) func(s *Snapshot) bool {
	return func(s *Snapshot) bool {
		if s.Job.Status != JobRunning || s.Job.Attempt < attempt {
			return false
		}
		for _, o := range s.Job.Operators {
			for _, st := range o.Subtasks {
				if st.Status != TaskRunning {
					return false
				}
			}
		}
		return true
	}
}

// A crashed subtask fails the job; every subtask is cancelled and the job
// restarts from the latest completed checkpoint: sources seek back to the
// checkpointed offsets, keyed counts come back, and the two-phase-commit sink
// output ends up exactly once.
func TestFailoverRestoresLatestCheckpoint(t *testing.T) {
	s, log := newTestStepper(t, wordCount(300, 2, 2, 0))
	s.Steps(150)
	id := completeCheckpoint(t, s)
	cpOffsets := map[int]int64{}
	for _, p := range s.Snapshot().Sources[0].Partitions {
		cpOffsets[p.Partition] = p.Checkpointed
		require.GreaterOrEqual(t, p.Checkpointed, int64(0))
	}
	s.Steps(200) // read past the checkpoint
	for _, p := range s.Snapshot().Sources[0].Partitions {
		require.GreaterOrEqual(t, p.Offset, cpOffsets[p.Partition])
	}
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#1"}))

	snap := s.Snapshot()
	assert.Equal(t, JobRestarting, snap.Job.Status)
	assert.Equal(t, TaskFailed, subtaskView(t, snap, "count#1").Status)
	assert.Equal(t, TaskCanceled, subtaskView(t, snap, "count#0").Status)
	var jobStatuses []string
	for _, e := range log.kinds(EvJobStatus) {
		jobStatuses = append(jobStatuses, e.Status)
	}
	// DefaultScheduler: RUNNING -> RESTARTING on a restart; FAILING only on
	// the way to FAILED.
	assert.Equal(t, []string{"CREATED", "RUNNING", "RESTARTING"}, jobStatuses)

	_, err := s.RunUntil(runningAgain(2), 5000)
	require.NoError(t, err)
	assert.Equal(t, []string{"CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING", "FAILED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING"},
		append([]string{"CREATED"}, log.statuses(EvTaskStatus, "count#1")...))
	restored := restoreEvents(log, 2)
	for _, name := range []string{"source#0", "source#1"} {
		r := restored[name]
		require.NotNil(t, r, name)
		assert.Equal(t, id, r.Checkpoint)
		for _, po := range r.Offsets {
			assert.Equal(t, cpOffsets[po.Partition], po.Offset, "%s partition %d seeks to its checkpointed offset", name, po.Partition)
		}
	}
	assert.Equal(t, id, subtaskView(t, s.Snapshot(), "count#0").RestoredFrom)

	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
	assert.Equal(t, 1, s.Snapshot().Counters.Restores)
}

// Without any completed checkpoint a crash loses the state: the job starts
// over from offset 0 with empty counts. An at-least-once sink has already
// written what it saw, so its output holds duplicates (but loses nothing);
// the two-phase-commit sink had committed nothing, so it stays exactly once.
func TestCrashWithoutCheckpointStartsOver(t *testing.T) {
	for _, sink := range []string{SinkAtLeastOnce, SinkExactlyOnce} {
		t.Run(sink, func(t *testing.T) {
			spec := wordCount(200, 2, 2, 0)
			spec.Operators[3].Options = map[string]any{"semantics": sink}
			s, log := newTestStepper(t, spec)
			s.Steps(300)
			require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "tokenizer#0"}))
			_, err := s.RunUntil(runningAgain(2), 5000)
			require.NoError(t, err)
			for _, e := range log.kinds(EvRestore) {
				if e.Step > 300 {
					assert.Zero(t, e.Restore.Checkpoint, "%s starts empty", e.Task)
					for _, po := range e.Restore.Offsets {
						assert.Zero(t, po.Offset)
					}
				}
			}
			runToEnd(t, s)
			cmp, err := s.Compare()
			require.NoError(t, err)
			assert.Empty(t, cmp[0].Losses)
			if sink == SinkAtLeastOnce {
				assert.Positive(t, cmp[0].DuplicateRecords, "the replay writes counts again")
				assert.False(t, cmp[0].ExactlyOnce)
			} else {
				assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
			}
		})
	}
}

// A TaskManager crash kills its subtasks and wipes its local disk. With one
// slot fewer than the job needs, the restarted job waits for resources
// (subtasks SCHEDULED) until the TaskManager comes back; state comes from the
// checkpoint directory.
func TestTaskManagerCrashWaitsForResources(t *testing.T) {
	spec := wordCount(300, 2, 2, 0)
	spec.Backend = BackendPebble
	spec.Cluster = ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 1}
	s, log := newTestStepper(t, spec)
	s.Steps(150)
	completeCheckpoint(t, s)
	s.Steps(50)
	snap := s.Snapshot()
	var tm2 TaskManagerView
	for _, tm := range snap.TaskManagers {
		if tm.ID == "tm-2" {
			tm2 = tm
		}
	}
	require.Contains(t, tm2.Tasks, "count#1")
	_, err := os.Stat(tm2.LocalDir)
	require.NoError(t, err, "count#1 keeps its pebble files on tm-2's disk")

	require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-2"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.WaitingForResources }, 5000)
	require.NoError(t, err)
	_, err = os.Stat(tm2.LocalDir)
	assert.True(t, os.IsNotExist(err), "tm-2's local disk is wiped")
	snap = s.Snapshot()
	assert.Equal(t, JobRunning, snap.Job.Status)
	assert.Equal(t, 2, snap.Job.SlotsNeeded)
	assert.Equal(t, 1, snap.Job.SlotsAvailable)
	assert.Equal(t, TaskScheduled, subtaskView(t, snap, "count#0").Status)
	assert.Len(t, log.kinds(EvWaitingResources), 1)
	s.Steps(100)
	assert.Equal(t, TaskScheduled, subtaskView(t, s.Snapshot(), "count#0").Status, "still waiting")

	require.NoError(t, s.Do(Command{Name: CmdRestartTaskManager, TaskManager: "tm-2"}))
	_, err = s.RunUntil(runningAgain(2), 5000)
	require.NoError(t, err)
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
}

func TestRestartStrategy(t *testing.T) {
	tests := []struct {
		name    string
		restart RestartSpec
		crashes int // crashes before the job fails for good
	}{
		{"none", RestartSpec{Strategy: RestartNone}, 1},
		{"fixed-delay one attempt", RestartSpec{Strategy: RestartFixedDelay, Attempts: 1, Delay: ms(1)}, 2},
		{"fixed-delay three attempts", RestartSpec{Strategy: RestartFixedDelay, Attempts: 3, Delay: ms(1)}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := wordCount(100, 1, 1, 0)
			spec.Restart = tc.restart
			s, _ := newTestStepper(t, spec)
			for i := 1; i <= tc.crashes; i++ {
				_, err := s.RunUntil(runningAgain(i), 5000)
				require.NoError(t, err, "attempt %d runs", i)
				require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
			}
			snap := s.Snapshot()
			assert.Equal(t, JobFailed, snap.Job.Status)
			err := s.Do(Command{Name: CmdTriggerCheckpoint})
			assert.True(t, errors.Is(err, ErrJobTerminal), "%v", err)
			assert.False(t, s.Step() && s.Snapshot().Job.Status != JobFailed)
		})
	}
}

// A corrupt file in the newest checkpoint fails the restore, naming the
// file, and the restart strategy applies: each restart fails again until
// the strategy gives up (Flink's CheckpointCoordinator never falls back to
// an older checkpoint on its own). The restore command then starts the job
// from the older retained checkpoint, as `flink run -s` would.
func TestBrokenCheckpointFailsRestoreWithoutFallback(t *testing.T) {
	spec := wordCount(300, 2, 2, 0)
	spec.Backend = BackendFS
	spec.Checkpointing.Retained = 2
	spec.Restart = RestartSpec{Strategy: RestartFixedDelay, Attempts: 2, Delay: ms(10)}
	dir := t.TempDir()
	log := &eventLog{}
	s, err := NewStepper(spec, Options{Dir: dir, RecordEvents: log.add})
	require.NoError(t, err)
	defer s.Close()
	s.Steps(100)
	first := completeCheckpoint(t, s)
	s.Steps(100)
	second := completeCheckpoint(t, s)
	// Flip a byte in one of the second checkpoint's keyed state files.
	chk := filepath.Join(dir, "checkpoints", spec.Name, fmt.Sprintf("chk-%d", second))
	entries, err := os.ReadDir(chk)
	require.NoError(t, err)
	var victim string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "count") {
			victim = filepath.Join(chk, e.Name())
		}
	}
	require.NotEmpty(t, victim, "no keyed state file in %s: %v", chk, dirNames(entries))
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(victim, b, 0o644))

	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "sink#0"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobFailed }, 5000)
	require.NoError(t, err, "the strategy gives up after its 2 restarts")
	failed := log.kinds(EvRestoreFailed)
	require.Len(t, failed, 2, "each of the 2 restarts fails to restore")
	for _, e := range failed {
		assert.Contains(t, e.Message, filepath.Base(victim))
	}
	snap := s.Snapshot()
	assert.Nil(t, snap.Checkpoints.LatestRestore, "nothing was restored: no silent fallback to checkpoint %d", first)
	statuses := log.statuses(EvJobStatus, "")
	assert.Equal(t, []string{"FAILING", "FAILED"}, statuses[len(statuses)-2:])

	// The user restores the older checkpoint explicitly.
	require.NoError(t, s.Do(Command{Name: CmdRestore, Checkpoint: first}))
	req := log.kinds(EvRestoreRequested)
	require.Len(t, req, 1)
	assert.Equal(t, first, req[0].Checkpoint)
	_, err = s.RunUntil(func(s *Snapshot) bool { return runningAgain(1)(s) && s.Checkpoints.LatestRestore != nil }, 5000)
	require.NoError(t, err)
	snap = s.Snapshot()
	assert.Equal(t, first, snap.Checkpoints.LatestRestore.Checkpoint)
	assert.Equal(t, first, subtaskView(t, snap, "count#0").RestoredFrom)
	// Its failovers never go back to the old job's broken checkpoint.
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#1"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return runningAgain(snap.Job.Attempt + 1)(s) }, 5000)
	require.NoError(t, err)
	assert.Len(t, log.kinds(EvRestoreFailed), 2)
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.Empty(t, cmp[0].Losses)
}

// The restore command refuses a checkpoint that is not retained and says
// which are.
func TestRestoreCommandNeedsRetainedCheckpoint(t *testing.T) {
	s, _ := newTestStepper(t, wordCount(300, 2, 2, 0))
	s.Steps(100)
	id := completeCheckpoint(t, s)
	err := s.Do(Command{Name: CmdRestore, Checkpoint: id + 5})
	require.ErrorIs(t, err, ErrBadCommand)
	assert.Contains(t, err.Error(), fmt.Sprintf("retained: %d", id))
	err = s.Do(Command{Name: CmdRestore})
	require.ErrorIs(t, err, ErrBadCommand)
}

// A restore counts when the subtasks have really restored the checkpoint,
// not when the JobManager plans it: while the restarted job waits for slots
// nothing has been restored, however long it waits and however often it
// fails meanwhile.
func TestRestoreCountsWhenStateIsRestored(t *testing.T) {
	spec := wordCount(300, 2, 2, 0)
	spec.Cluster = ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 1}
	s, _ := newTestStepper(t, spec)
	s.Steps(150)
	id := completeCheckpoint(t, s)
	require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-2"}))
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Job.WaitingForResources }, 5000)
	require.NoError(t, err)
	snap := s.Snapshot()
	assert.Equal(t, TaskScheduled, subtaskView(t, snap, "count#0").Status)
	assert.Zero(t, snap.Counters.Restores, "waiting for slots restores nothing")
	assert.Zero(t, snap.Checkpoints.Counts.Restored)
	assert.Nil(t, snap.Checkpoints.LatestRestore)

	// A crash of the one alive TaskManager while waiting: still nothing restored.
	require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-1"}))
	require.NoError(t, s.Do(Command{Name: CmdRestartTaskManager, TaskManager: "tm-1"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.WaitingForResources }, 5000)
	require.NoError(t, err)
	assert.Zero(t, s.Snapshot().Counters.Restores)

	require.NoError(t, s.Do(Command{Name: CmdRestartTaskManager, TaskManager: "tm-2"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return allRunning(s) && s.Job.Status == JobRunning }, 5000)
	require.NoError(t, err)
	snap = s.Snapshot()
	assert.Equal(t, 1, snap.Counters.Restores, "counted once every subtask runs on its restored state")
	assert.Equal(t, 1, snap.Checkpoints.Counts.Restored)
	require.NotNil(t, snap.Checkpoints.LatestRestore)
	assert.Equal(t, id, snap.Checkpoints.LatestRestore.Checkpoint)
	assert.Equal(t, snap.At >= snap.Checkpoints.LatestRestore.RestoreTime, true)
}
