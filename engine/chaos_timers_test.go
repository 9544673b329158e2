package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The alerts job under chaos: crashes (subtasks and TaskManagers) and
// rescales of the operator that holds the timers, on every backend, for
// several seeds. Every alert is committed exactly once: a timer restored
// from a checkpoint fires on whichever subtask owns its key group now, and
// a timer that fired after the checkpoint fires again after the restore,
// its first alert having been aborted with the sink's transaction.
func TestChaosAlerts(t *testing.T) {
	tests := []struct {
		backend Backend
		seeds   []int64
		records int
	}{
		{BackendMemory, []int64{1, 2, 3, 4}, 600},
		{BackendFS, []int64{5, 6}, 400},
		{BackendPebble, []int64{7, 8}, 300},
	}
	if testing.Short() {
		tests = tests[:1]
	}
	for _, c := range tests {
		for _, seed := range c.seeds {
			t.Run(fmt.Sprintf("%s/%d", c.backend, seed), func(t *testing.T) {
				res, err := RunChaos(context.Background(), ChaosConfig{Seed: seed, Records: c.records, Crashes: 3, Rescales: 2,
					Backend: c.backend, Job: ChaosAlerts, Dir: t.TempDir()})
				require.NoError(t, err)
				assert.True(t, res.OK, "%s\n%v\n%v", res.Summary(), res.Actions, res.Diff(10))
				assert.Equal(t, 3, res.Crashes)
				assert.Equal(t, 2, res.Rescales)
				assert.Greater(t, res.Comparison.Expected, 50, "the run alerts often")
				assert.Empty(t, res.Comparison.Duplicates)
			})
		}
	}
}

// The same alerts chaos run twice gives the same actions and result.
func TestChaosAlertsDeterministic(t *testing.T) {
	run := func() *ChaosResult {
		res, err := RunChaos(context.Background(), ChaosConfig{Seed: 42, Records: 300, Crashes: 2, Rescales: 1, Job: ChaosAlerts, Dir: t.TempDir()})
		require.NoError(t, err)
		return res
	}
	a, b := run(), run()
	assert.Equal(t, a.Actions, b.Actions)
	assert.Equal(t, a.Comparison, b.Comparison)
}

func TestChaosUnknownJob(t *testing.T) {
	_, err := RunChaos(context.Background(), ChaosConfig{Seed: 1, Job: "tally"})
	require.ErrorIs(t, err, ErrBadCommand)
	assert.Contains(t, err.Error(), "want wordcount or alerts")
}
