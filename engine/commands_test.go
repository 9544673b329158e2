package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// add-taskmanager takes an optional slot count; without one the new
// TaskManager offers the cluster's slots per TaskManager.
func TestAddTaskManagerSlots(t *testing.T) {
	tests := []struct {
		name      string
		slots     int
		wantSlots int
		wantErr   bool
	}{
		{"default", 0, 1, false},
		{"three", 3, 3, false},
		{"negative", -1, 0, true},
		{"too many", 65, 0, true},
		{"the most", 64, 64, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := wordCount(50, 1, 1, 0)
			spec.Cluster = ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 1}
			s, _ := newTestStepper(t, spec)
			err := s.Do(Command{Name: CmdAddTaskManager, Slots: tc.slots})
			tms := s.Snapshot().TaskManagers
			if tc.wantErr {
				require.ErrorIs(t, err, ErrBadCommand)
				assert.Contains(t, err.Error(), "want 1..64")
				assert.Len(t, tms, 1, "nothing is added")
				return
			}
			require.NoError(t, err)
			require.Len(t, tms, 2)
			assert.Equal(t, "tm-2", tms[1].ID)
			assert.Equal(t, tc.wantSlots, tms[1].Slots)
		})
	}
}

// A job waiting for two slots on a cluster of one-slot TaskManagers starts
// when one TaskManager with two slots joins; the command log keeps the slot
// count, so a replay adds the same TaskManager.
func TestAddTaskManagerWithSlotsEndsTheWait(t *testing.T) {
	spec := wordCount(50, 2, 2, 0)
	spec.Cluster = ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 1}
	s, _ := newTestStepper(t, spec)
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Job.WaitingForResources }, 1000)
	require.NoError(t, err)
	require.NoError(t, s.Do(Command{Name: CmdAddTaskManager, Slots: 2}))
	_, err = s.RunUntil(runningAgain(1), 1000)
	require.NoError(t, err)
	snap := s.Snapshot()
	assert.Equal(t, 3, snap.Job.SlotsAvailable)
	log := s.CommandLog()
	require.Len(t, log, 1)
	assert.Equal(t, 2, log[0].Command.Slots)
	assert.Equal(t, "add-taskmanager slots=2", log[0].Command.String())

	r, _ := newTestStepper(t, spec)
	require.NoError(t, r.Replay(log))
	_, err = r.RunUntil(runningAgain(1), 1000)
	require.NoError(t, err)
	assert.Equal(t, 2, r.Snapshot().TaskManagers[1].Slots)
}
