package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newLiveJob starts spec on the Live driver with a rate that keeps it
// running for a while.
func newLiveJob(t *testing.T, spec *JobSpec) (*Live, context.Context) {
	t.Helper()
	spec.Checkpointing.Interval = ms(20)
	spec.Operators[0].Options["rate"] = 2000.0
	l, err := NewLive(spec, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	require.NoError(t, l.Start(ctx))
	return l, ctx
}

// Local recovery on the Live driver: a crashed subtask on a TaskManager
// that kept its disk restores from the local copies only, and the job stays
// exactly-once.
func TestLocalRecoveryLive(t *testing.T) {
	spec := localRecoveryJob(BackendFS, true)
	spec.Operators[0].Options["records"] = 3000
	l, ctx := newLiveJob(t, spec)
	waitLive(t, l, func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 2 && allRunning(s) })
	require.NoError(t, l.Do(Command{Name: CmdCrashSubtask, Task: "count#1"}))
	waitLive(t, l, func(s *Snapshot) bool { return allRunning(s) && s.Checkpoints.LatestRestore != nil })
	r := l.Snapshot().Checkpoints.LatestRestore
	assert.Positive(t, r.LocalBytes)
	assert.Zero(t, r.RemoteBytes)
	require.NoError(t, l.WaitDrained(ctx))
	cmp, err := l.Compare()
	require.NoError(t, err)
	assert.Empty(t, cmp[0].Losses)
	assert.Zero(t, cmp[0].DuplicateRecords)
}

// An upgrade on the Live driver: a savepoint, then the same job with a
// map inserted (every operator has a uid), runs to the end with every
// count's state kept.
func TestUpgradeLive(t *testing.T) {
	spec := withUIDs(wordCount(3000, 2, 2, 0))
	l, ctx := newLiveJob(t, spec)
	waitLive(t, l, func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 1 && allRunning(s) })
	require.NoError(t, l.Do(Command{Name: CmdTriggerSavepoint}))
	var sp int64
	waitLive(t, l, func(s *Snapshot) bool {
		for _, c := range s.Checkpoints.Retained {
			if c.Savepoint {
				sp = c.ID
			}
		}
		return sp > 0
	})
	err := l.Do(Command{Name: CmdUpgrade, Checkpoint: sp, Change: ChangeRemoveOperator, Operator: "count"})
	require.ErrorIs(t, err, ErrNonRestoredState)
	require.NoError(t, l.Do(Command{Name: CmdUpgrade, Checkpoint: sp, Change: ChangeAddOperator, Operator: "tokenizer", Kind: KindMap, UID: "map"}))
	waitLive(t, l, func(s *Snapshot) bool { return len(s.Job.Operators) == 5 && allRunning(s) })
	require.NoError(t, l.WaitDrained(ctx))
	cmp, err := l.Compare()
	require.NoError(t, err)
	assert.Empty(t, cmp[0].Losses)
}
