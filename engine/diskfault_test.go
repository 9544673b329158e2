package engine

import (
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/state"
)

// diskJob is word count on the fs backend whose checkpoint directory sits on
// an ErrorFS.
func diskJob(t *testing.T, tolerable int) (*Stepper, *eventLog, *state.ErrorFS) {
	t.Helper()
	spec := wordCount(300, 2, 2, 0)
	spec.Backend = BackendFS
	spec.Checkpointing.TolerableFailed = tolerable
	efs := state.NewErrorFS(nil)
	log := &eventLog{}
	s, err := NewStepper(spec, Options{Dir: t.TempDir(), RecordEvents: log.add, FS: efs})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, log, efs
}

// failedCheckpoint triggers a checkpoint and waits until it failed.
func failedCheckpoint(t *testing.T, s *Stepper) {
	t.Helper()
	before := s.Snapshot().Checkpoints.Counts.Failed
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Failed > before }, 5000)
	require.NoError(t, err)
}

// A write error while a checkpoint's state is written declines that
// checkpoint; the job keeps running until the checkpoint failure manager
// decides (execution.checkpointing.tolerable-failed-checkpoints): with 1
// tolerated, the first failure is absorbed and the second in a row fails
// the job over. A full write and a short (partial) write alike; once the
// disk heals, checkpoints complete again.
func TestCheckpointWriteErrorIsDeclined(t *testing.T) {
	for name, fault := range map[string]error{"error": state.ErrInjected, "partial": state.PartialWrite{N: 7}} {
		t.Run(name, func(t *testing.T) {
			s, log, efs := diskJob(t, 1)
			s.Steps(150)
			completeCheckpoint(t, s)
			attempt := s.Snapshot().Job.Attempt
			efs.SetInjector(func(op state.Op, p string) error {
				if op == state.OpWrite && strings.Contains(filepath.ToSlash(p), "/chk-") {
					return fault
				}
				return nil
			})
			failedCheckpoint(t, s)
			snap := s.Snapshot()
			assert.Equal(t, JobRunning, snap.Job.Status, "one failure is tolerated")
			assert.Equal(t, attempt, snap.Job.Attempt)
			aborted := log.kinds(EvCheckpointAbort)
			require.NotEmpty(t, aborted)
			assert.Contains(t, aborted[len(aborted)-1].Message, "injected fault")

			failedCheckpoint(t, s)
			_, err := s.RunUntil(runningAgain(attempt+1), 5000)
			require.NoError(t, err, "the second failure in a row fails the job over")

			efs.SetInjector(nil)
			completeCheckpoint(t, s)
			runToEnd(t, s)
			cmp, err := s.Compare()
			require.NoError(t, err)
			assert.Empty(t, cmp[0].Losses)
			assert.Zero(t, cmp[0].DuplicateRecords)
		})
	}
}

// A read error while a subtask restores its keyed state fails that
// subtask with a message naming the file; the restart strategy retries,
// and once the disk reads again the job recovers.
func TestRestoreReadErrorNamesTheFile(t *testing.T) {
	s, log, efs := diskJob(t, 0)
	s.Steps(150)
	id := completeCheckpoint(t, s)
	attempt := s.Snapshot().Job.Attempt
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
	// The JobManager verifies the checkpoint's files when it plans the
	// restore; the fault starts once the subtasks are being deployed.
	_, err := s.RunUntil(func(s *Snapshot) bool {
		return s.Job.Attempt > attempt && subtaskView(t, *s, "count#0").Status == TaskDeploying
	}, 5000)
	require.NoError(t, err)
	var failedPath atomic.Value
	efs.SetInjector(func(op state.Op, p string) error {
		if op == state.OpRead && strings.HasPrefix(filepath.Base(p), "count") {
			failedPath.Store(p)
			return state.ErrInjected
		}
		return nil
	})
	_, err = s.RunUntil(func(s *Snapshot) bool { return len(log.kinds(EvTaskFailed)) > 1 }, 5000)
	require.NoError(t, err)
	failed := log.kinds(EvTaskFailed)
	msg := failed[len(failed)-1].Message
	p, _ := failedPath.Load().(string)
	require.NotEmpty(t, p, "a keyed state file was read")
	assert.Contains(t, msg, filepath.Base(p), "the failure names the file")
	assert.Contains(t, msg, "injected fault")

	efs.SetInjector(nil)
	_, err = s.RunUntil(func(s *Snapshot) bool {
		return allRunning(s) && s.Checkpoints.LatestRestore != nil && s.Checkpoints.LatestRestore.Checkpoint == id
	}, 20000)
	require.NoError(t, err)
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.Empty(t, cmp[0].Losses)
}

// ErrorFS itself: an injected fault is an *fs.PathError naming the file and
// wrapping ErrInjected; a partial write lets its bytes through first.
func TestErrorFSFaults(t *testing.T) {
	efs := state.NewErrorFS(nil)
	dir := t.TempDir()
	efs.SetInjector(func(op state.Op, p string) error {
		if op == state.OpWrite {
			return state.PartialWrite{N: 3}
		}
		return nil
	})
	f, err := efs.Create(filepath.Join(dir, "a"))
	require.NoError(t, err)
	n, err := f.Write([]byte("hello"))
	assert.Equal(t, 3, n)
	require.ErrorIs(t, err, state.ErrInjected)
	assert.Contains(t, err.Error(), filepath.Join(dir, "a"))
	require.NoError(t, f.Close())
	efs.SetInjector(func(op state.Op, p string) error {
		if op == state.OpOpen {
			return errors.New("disk gone")
		}
		return nil
	})
	_, err = efs.Open(filepath.Join(dir, "a"))
	assert.ErrorContains(t, err, "disk gone")
}
