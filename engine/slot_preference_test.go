package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With local recovery Flink's scheduler prefers a restarted subtask's
// previous slot (PreviousAllocationSlotSelectionStrategy, chosen by
// SlotSelectionStrategyUtils when state.backend.local-recovery is on), so
// its task-local state is on the TaskManager it restores on. Word count at
// parallelism 2 on three TaskManagers of one slot: subtask 0 runs on tm-1,
// subtask 1 on tm-2, tm-3 is free. tm-1 is lost and the job (one region)
// restarts: subtask 1 keeps tm-2's slot and reads its local copy, only
// subtask 0 moves to tm-3 and reads checkpoint storage. (The i-th free slot
// would have put subtask 0 on tm-2 and subtask 1 on tm-3: nothing local.)
// Without local recovery the placement stays the i-th free slot.
func TestRestartPrefersPreviousSlotWithLocalRecovery(t *testing.T) {
	for _, local := range []bool{true, false} {
		name := "local-recovery"
		if !local {
			name = "no-local-recovery"
		}
		t.Run(name, func(t *testing.T) {
			spec := localRecoveryJob(BackendFS, local)
			spec.Cluster = ClusterSpec{TaskManagers: 3, SlotsPerTaskManager: 1, HeartbeatTimeout: Duration(50 * time.Millisecond)}
			s, err := NewStepper(spec, Options{Dir: t.TempDir()})
			require.NoError(t, err)
			defer s.Close()
			s.Steps(150)
			completeCheckpoint(t, s)
			snap := s.Snapshot()
			require.Equal(t, "tm-1", subtaskView(t, snap, "count#0").TaskManager)
			require.Equal(t, "tm-2", subtaskView(t, snap, "count#1").TaskManager)
			attempt := snap.Job.Attempt
			require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-1"}))
			r := restoredAgain(t, s, attempt)
			snap = s.Snapshot()
			if local {
				assert.Equal(t, "tm-2", subtaskView(t, snap, "count#1").TaskManager, "count#1 keeps its previous slot")
				assert.Equal(t, "tm-3", subtaskView(t, snap, "count#0").TaskManager, "count#0 takes the free slot")
				assert.Positive(t, r.LocalBytes, "count#1 reads its local copy on tm-2")
				assert.Positive(t, r.RemoteBytes, "count#0 reads checkpoint storage")
			} else {
				assert.Equal(t, "tm-2", subtaskView(t, snap, "count#0").TaskManager, "the first free slot")
				assert.Equal(t, "tm-3", subtaskView(t, snap, "count#1").TaskManager, "the second free slot")
				assert.Zero(t, r.LocalBytes)
			}
			runToEnd(t, s)
			cmp, err := s.Compare()
			require.NoError(t, err)
			assert.Empty(t, cmp[0].Losses)
		})
	}
}
