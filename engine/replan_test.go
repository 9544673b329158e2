package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A rescale to more subtasks than the cluster has slots for waits for
// resources; the learner may then rescale the same operator to another
// parallelism. Nothing of the waiting execution ran, so the job is
// resubmitted from the same savepoint with the new parallelism (Flink: cancel
// the waiting job, flink run -s SAVEPOINT -p P) and runs exactly once.
func TestRescaleWhileWaitingForSlotsIsReplanned(t *testing.T) {
	for _, backend := range []Backend{BackendMemory, BackendPebble} {
		t.Run(string(backend), func(t *testing.T) {
			spec := wordCount(3000, 2, 2, 0)
			spec.Backend = backend
			spec.Cluster = ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 2} // 4 slots
			spec.Checkpointing.Interval = ms(50)
			s, log := newTestStepper(t, spec)
			_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed > 0 }, 200000)
			require.NoError(t, err)

			require.NoError(t, s.Do(Command{Name: CmdRescale, Operator: "count", Parallelism: 5}))
			_, err = s.RunUntil(func(s *Snapshot) bool { return len(log.kinds(EvWaitingResources)) > 0 }, 200000)
			require.NoError(t, err, "5 subtasks need 5 slots; 4 are alive")
			savepoints := s.Snapshot().Checkpoints.Counts.Completed

			// The same parallelism again, or another operator, is refused with a way out.
			err = s.Do(Command{Name: CmdRescale, Operator: "count", Parallelism: 5})
			require.ErrorIs(t, err, ErrRescale)
			assert.Contains(t, err.Error(), "waits for slots")
			err = s.Do(Command{Name: CmdRescale, Operator: "tokenizer", Parallelism: 1})
			require.ErrorIs(t, err, ErrRescale)

			require.NoError(t, s.Do(Command{Name: CmdRescale, Operator: "count", Parallelism: 4}))
			_, err = s.RunUntil(func(s *Snapshot) bool { return s.Counters.Rescales == 1 && allRunning(s) }, 400000)
			require.NoError(t, err)
			snap := s.Snapshot()
			assert.Len(t, snap.Job.Operators[2].Subtasks, 4, "count runs 4 subtasks")
			assert.Equal(t, savepoints, snap.Checkpoints.Counts.Completed, "no second savepoint was taken")
			require.NotNil(t, snap.Checkpoints.LatestRestore)
			requireExactlyOnce(t, s, "after a replanned rescale")
		})
	}
}

// Once the rescaled execution runs, a further rescale is an ordinary one
// (stop-with-savepoint first), not a replan.
func TestRescaleAfterTheNewExecutionRunsTakesASavepoint(t *testing.T) {
	spec := wordCount(3000, 2, 2, 0)
	spec.Checkpointing.Interval = ms(50)
	s, _ := newTestStepper(t, spec)
	_, err := s.RunUntil(allRunning, 200000)
	require.NoError(t, err)
	require.NoError(t, s.Do(Command{Name: CmdRescale, Operator: "count", Parallelism: 3}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Counters.Rescales == 1 && allRunning(s) }, 200000)
	require.NoError(t, err)
	before := s.Snapshot().Checkpoints.Counts
	require.NoError(t, s.Do(Command{Name: CmdRescale, Operator: "count", Parallelism: 4}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Counters.Rescales == 2 && allRunning(s) }, 200000)
	require.NoError(t, err)
	assert.Greater(t, s.Snapshot().Checkpoints.Counts.Completed, before.Completed, "a second stop-with-savepoint")
	requireExactlyOnce(t, s, "two rescales")
}
