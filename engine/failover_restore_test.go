package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func retainedIDs(s Snapshot) []int64 {
	var out []int64
	for _, c := range s.Checkpoints.Retained {
		out = append(out, c.ID)
	}
	return out
}

// A job started again from checkpoint N numbers its checkpoints from N + 1,
// as Flink's CheckpointCoordinator.restoreSavepoint does
// (checkpointIdCounter.setCount(savepoint.getCheckpointID() + 1)); its
// completed checkpoint store starts with N alone. The old job's later
// checkpoints are not the new job's (in Flink they stay in the old job's
// directory; StateLab discards them, as their ids are the new job's now);
// its earlier ones stay retained for an explicit restore but no failover
// uses them. A failover of the new job restores the new job's own latest.
func TestRestoreNumbersCheckpointsFromTheRestoredOne(t *testing.T) {
	spec := wordCount(900, 2, 2, 0)
	spec.Checkpointing.Retained = 3
	s, log := newTestStepper(t, spec)
	var ids []int64
	for range 3 {
		s.Steps(100)
		ids = append(ids, completeCheckpoint(t, s))
	}
	require.Equal(t, []int64{1, 2, 3}, ids)
	s.Steps(50)
	require.NoError(t, s.Do(Command{Name: CmdRestore, Checkpoint: 2}))
	req := log.kinds(EvRestoreRequested)
	require.Len(t, req, 1)
	assert.Contains(t, req[0].Message, "numbers its checkpoints from 3")
	assert.Contains(t, req[0].Message, "checkpoint(s) 3 are discarded")
	snap := s.Snapshot()
	assert.Equal(t, []int64{1, 2}, retainedIDs(snap), "the old job's checkpoint 3 is gone; 1 stays for an explicit restore")
	for _, h := range snap.Checkpoints.History {
		assert.LessOrEqual(t, h.ID, int64(2), "the history keeps no checkpoint of the old job after 2")
	}

	// A failover before the new job's first checkpoint restores 2, the
	// one it started from (never 1, the old job's).
	_, err := s.RunUntil(allRunning, 5000)
	require.NoError(t, err)
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRunning && allRunning(s) }, 50000)
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.Snapshot().Checkpoints.LatestRestore.Checkpoint)

	s.Steps(100)
	next := completeCheckpoint(t, s)
	assert.Equal(t, int64(3), next, "the new job's first checkpoint is 2 + 1")
	assert.Equal(t, int64(3), s.Snapshot().Checkpoints.History[len(s.Snapshot().Checkpoints.History)-1].ID)
	// A failover now restores the new job's checkpoint 3.
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#1"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRunning && allRunning(s) }, 50000)
	require.NoError(t, err)
	assert.Equal(t, int64(3), s.Snapshot().Checkpoints.LatestRestore.Checkpoint)
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.Empty(t, cmp[0].Losses)
	assert.Equal(t, int(req[0].Value), cmp[0].DuplicateRecords, "what the restore said it writes again is all that is duplicated")
}

// The restore command's stated cost, checked against figures computed here
// from the run itself: the records read again are the sources' offsets just
// before the restore minus the offsets the restored subtasks report, and the
// records written again are those of every transaction committed for a
// checkpoint after the savepoint. The run commits far more transactions
// than the sink store keeps for its views (maxKeptTxns), which the cost
// once undercounted. After the run, the ground truth finds exactly that
// many duplicates and no loss.
func TestRestoreCostCountsEveryCommitAndRead(t *testing.T) {
	spec := etlSpec(80000)
	spec.Operators[0].Options["rate"] = 8000.0
	spec.Checkpointing.Interval = ms(5)
	s, log := newTestStepper(t, spec)
	s.Steps(200)
	require.NoError(t, s.Do(Command{Name: CmdTriggerSavepoint}))
	_, err := s.RunUntil(func(s *Snapshot) bool {
		for _, c := range s.Checkpoints.Retained {
			if c.Savepoint {
				return true
			}
		}
		return false
	}, 50000)
	require.NoError(t, err)
	var sp int64
	for _, c := range s.Snapshot().Checkpoints.Retained {
		if c.Savepoint {
			sp = c.ID
		}
	}
	committedAfter := func() (txns int, recs int64) {
		for _, e := range log.kinds(EvTxnCommitted) {
			if e.Checkpoint > sp {
				txns++
				recs += int64(e.Records)
			}
		}
		return
	}
	// Past what the sink store keeps: it forgets finished transactions
	// beyond maxKeptTxns once it holds twice as many.
	forgotten := func() (bool, int) {
		n, _ := committedAfter()
		kept := 0
		store := s.c.sinks["sink"]
		store.mu.Lock()
		defer store.mu.Unlock()
		for _, id := range store.order {
			if tx := store.txns[id]; tx.status == TxnCommitted && tx.checkpoint > sp {
				kept++
			}
		}
		return kept < n, n
	}
	for i := 0; ; i++ {
		if ok, _ := forgotten(); ok {
			break
		}
		require.Less(t, i, 200, "the sink store never forgot a transaction committed after the savepoint")
		require.Equal(t, JobRunning, s.Snapshot().Job.Status)
		s.Steps(2000)
	}
	before := s.Snapshot()
	read := map[string]int64{}
	for _, o := range before.Job.Operators {
		for _, st := range o.Subtasks {
			for _, p := range st.Offsets {
				read[st.Name] += p.Offset
			}
		}
	}
	_, wantRewritten := committedAfter()
	restoreSeq := s.c.seq.Load()
	require.NoError(t, s.Do(Command{Name: CmdRestore, Checkpoint: sp}))
	req := log.kinds(EvRestoreRequested)
	require.Len(t, req, 1)
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobRunning && allRunning(s) }, 50000)
	require.NoError(t, err)
	var wantReread int64
	restored := 0
	for _, e := range log.kinds(EvRestore) {
		if e.Seq <= restoreSeq || e.Restore == nil || len(e.Restore.Offsets) == 0 {
			continue
		}
		restored++
		from := int64(0)
		for _, p := range e.Restore.Offsets {
			from += p.Offset
		}
		wantReread += read[e.Task] - from
	}
	require.Equal(t, 2, restored, "both source subtasks restore their offsets")
	assert.Positive(t, wantReread)
	assert.Greater(t, wantRewritten, int64(0))
	assert.Equal(t, int(wantReread), req[0].Records, "records read again")
	assert.Equal(t, wantRewritten, req[0].Value, "records written again")
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	require.Len(t, cmp, 1)
	assert.Empty(t, cmp[0].Losses)
	assert.Equal(t, int(wantRewritten), cmp[0].DuplicateRecords, "the ground truth counts exactly what the restore said")
}
