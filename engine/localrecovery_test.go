package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// localRecoveryJob is word count on two TaskManagers of one slot each:
// subtask 0 of every operator runs on tm-1, subtask 1 on tm-2.
func localRecoveryJob(backend Backend, local bool) *JobSpec {
	spec := wordCount(300, 2, 2, 0)
	spec.Backend = backend
	spec.Cluster = ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 1}
	spec.Checkpointing.LocalRecovery = local
	spec.Checkpointing.Incremental = backend == BackendPebble
	return spec
}

func localStateDir(dir, tm string, incarnation int) string {
	return filepath.Join(dir, "local", tm, fmt.Sprintf("incarnation-%d", incarnation), "localState", "wordcount")
}

// restoredAgain waits until the job runs again after attempt and has
// counted a restore, and returns the restore's figures.
func restoredAgain(t *testing.T, s *Stepper, attempt int) *RestoreStats {
	t.Helper()
	_, err := s.RunUntil(func(s *Snapshot) bool {
		return runningAgain(attempt+1)(s) && s.Checkpoints.LatestRestore != nil && s.Checkpoints.Counts.Restored > 0
	}, 20000)
	require.NoError(t, err)
	return s.Snapshot().Checkpoints.LatestRestore
}

// A subtask that fails on a TaskManager that is still alive restores from
// the task-local copies on that TaskManager's disk: not one byte of keyed
// state comes from checkpoint storage. Every backend.
func TestLocalRecoveryReadsLocalCopy(t *testing.T) {
	for _, backend := range []Backend{BackendMemory, BackendFS, BackendPebble} {
		t.Run(string(backend), func(t *testing.T) {
			dir := t.TempDir()
			s, err := NewStepper(localRecoveryJob(backend, true), Options{Dir: dir})
			require.NoError(t, err)
			defer s.Close()
			s.Steps(150)
			id := completeCheckpoint(t, s)
			ents, err := os.ReadDir(localStateDir(dir, "tm-2", 0))
			require.NoError(t, err, "tm-2 keeps local copies")
			assert.NotEmpty(t, ents)

			attempt := s.Snapshot().Job.Attempt
			require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#1"}))
			r := restoredAgain(t, s, attempt)
			assert.Equal(t, id, r.Checkpoint)
			assert.Positive(t, r.LocalBytes, "read from the local copies")
			assert.Zero(t, r.RemoteBytes, "nothing from checkpoint storage")
			runToEnd(t, s)
			cmp, err := s.Compare()
			require.NoError(t, err)
			assert.Empty(t, cmp[0].Losses)
		})
	}
}

// A lost TaskManager's disk is gone: its subtasks, placed on the restarted
// (empty) TaskManager, read checkpoint storage, while the subtasks of the
// TaskManager that stayed read their local copies.
func TestLocalRecoveryLostTaskManagerFallsBackToCheckpointStorage(t *testing.T) {
	dir := t.TempDir()
	s, err := NewStepper(localRecoveryJob(BackendFS, true), Options{Dir: dir})
	require.NoError(t, err)
	defer s.Close()
	s.Steps(150)
	completeCheckpoint(t, s)
	attempt := s.Snapshot().Job.Attempt
	require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-2"}))
	require.NoError(t, s.Do(Command{Name: CmdRestartTaskManager, TaskManager: "tm-2"}))
	r := restoredAgain(t, s, attempt)
	assert.Positive(t, r.LocalBytes, "count#0 on tm-1 reads its local copy")
	assert.Positive(t, r.RemoteBytes, "count#1 on the new tm-2 reads checkpoint storage")
	_, err = os.Stat(localStateDir(dir, "tm-2", 0))
	assert.ErrorIs(t, err, os.ErrNotExist, "the lost disk was wiped")
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.Empty(t, cmp[0].Losses)
}

// A TaskManager whose local-state directory vanished (a disk fault) falls
// back to checkpoint storage for what it lost; nothing fails.
func TestLocalRecoveryLostLocalDirectory(t *testing.T) {
	dir := t.TempDir()
	s, err := NewStepper(localRecoveryJob(BackendFS, true), Options{Dir: dir})
	require.NoError(t, err)
	defer s.Close()
	s.Steps(150)
	completeCheckpoint(t, s)
	require.NoError(t, os.RemoveAll(localStateDir(dir, "tm-1", 0)))
	attempt := s.Snapshot().Job.Attempt
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
	r := restoredAgain(t, s, attempt)
	assert.Positive(t, r.RemoteBytes, "count#0's copy is gone: checkpoint storage")
	assert.Positive(t, r.LocalBytes, "count#1's is still on tm-2")
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.Empty(t, cmp[0].Losses)
}

// Without local recovery (Flink's default) nothing is copied and every
// byte comes from checkpoint storage; a rescale through a savepoint reads
// checkpoint storage even with it on (a savepoint has no local copy; an
// in-job rescale from a checkpoint may read one:
// TestLocalRecoveryReactiveRescale).
func TestLocalRecoveryOffAndRescaleReadRemote(t *testing.T) {
	dir := t.TempDir()
	s, err := NewStepper(localRecoveryJob(BackendFS, false), Options{Dir: dir})
	require.NoError(t, err)
	defer s.Close()
	s.Steps(150)
	completeCheckpoint(t, s)
	_, err = os.Stat(localStateDir(dir, "tm-1", 0))
	assert.ErrorIs(t, err, os.ErrNotExist)
	attempt := s.Snapshot().Job.Attempt
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
	r := restoredAgain(t, s, attempt)
	assert.Zero(t, r.LocalBytes)
	assert.Positive(t, r.RemoteBytes)

	spec := localRecoveryJob(BackendFS, true)
	spec.Cluster.TaskManagers = 3
	s2, _ := newTestStepper(t, spec)
	s2.Steps(150)
	completeCheckpoint(t, s2)
	require.NoError(t, s2.Do(Command{Name: CmdRescale, Operator: "count", Parallelism: 3}))
	_, err = s2.RunUntil(func(s *Snapshot) bool {
		return s.Job.Rescale == nil && allRunning(s) && s.Checkpoints.LatestRestore != nil
	}, 20000)
	require.NoError(t, err)
	r = s2.Snapshot().Checkpoints.LatestRestore
	assert.Zero(t, r.LocalBytes)
	assert.Positive(t, r.RemoteBytes)
}

// Only the newest completed checkpoint's local copies stay on a disk.
func TestLocalRecoveryKeepsOnlyTheLatestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s, err := NewStepper(localRecoveryJob(BackendFS, true), Options{Dir: dir})
	require.NoError(t, err)
	defer s.Close()
	s.Steps(100)
	first := completeCheckpoint(t, s)
	s.Steps(100)
	second := completeCheckpoint(t, s)
	ents, err := os.ReadDir(localStateDir(dir, "tm-1", 0))
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		if e.IsDir() && e.Name() != ".inprogress" && e.Name() != "shared" {
			names = append(names, e.Name())
		}
	}
	assert.Contains(t, names, fmt.Sprintf("chk-%d", second))
	assert.NotContains(t, names, fmt.Sprintf("chk-%d", first))
}

// A fork taken while a restore is on its way to the subtasks (their deploy
// messages in flight) restores on its own copy: the restore spec carries the
// job's storage, which the fork replaces with its copy, and the local-first
// reader is made when the subtask opens its state.
func TestForkDuringLocalRestore(t *testing.T) {
	s, err := NewStepper(localRecoveryJob(BackendFS, true), Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	s.Steps(150)
	completeCheckpoint(t, s)
	attempt := s.Snapshot().Job.Attempt
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
	_, err = s.RunUntil(func(s *Snapshot) bool {
		return s.Job.Attempt > attempt && subtaskView(t, *s, "count#0").Status == TaskDeploying
	}, 5000)
	require.NoError(t, err)
	fk, err := s.Fork(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer fk.Close()
	r := restoredAgain(t, fk, attempt)
	assert.Positive(t, r.LocalBytes+r.RemoteBytes)
	runToEnd(t, fk)
	cmp, err := fk.Compare()
	require.NoError(t, err)
	assert.Empty(t, cmp[0].Losses)
}
