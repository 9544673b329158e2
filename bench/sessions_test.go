package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionsGroup: the sessions cases turn what the injected functions
// measure into a slope per replay series and two byte figures, each against
// its target; a quadratic replay misses the slope target.
func TestSessionsGroup(t *testing.T) {
	quadratic := false
	f := &SessionsFuncs{
		Replay: func(_ context.Context, _ map[string]string, steps int64) (int64, time.Duration, error) {
			d := time.Duration(steps) * time.Microsecond
			if quadratic {
				d = time.Duration(steps*steps/1000) * time.Microsecond
			}
			return steps, d, nil
		},
		IdleHeap:     func(context.Context, int) (float64, error) { return 1 << 20, nil },
		ClassroomRSS: func(context.Context, int) (float64, float64, error) { return 600 << 20, 400 << 20, nil },
	}
	sizes := tiny
	sizes.ReplaySteps = []int64{1000, 2000, 4000}
	run := func() map[string]Case {
		rep, err := Run(context.Background(), Config{Seed: 1, Rounds: 1, Sizes: &sizes, Groups: []string{GroupSessions}, Sessions: f, Dir: t.TempDir()})
		require.NoError(t, err)
		out := map[string]Case{}
		for _, c := range rep.Cases {
			out[c.Name] = c
		}
		return out
	}
	cases := run()
	require.Len(t, cases, len(replaySeries)+2)
	for _, sr := range replaySeries {
		c := cases["share-link replay time against steps, "+sr.name]
		assert.InDelta(t, 1.0, c.Value, 0.01)
		assert.True(t, c.Target.Met)
	}
	assert.True(t, cases["live heap of one idle sandbox"].Target.Met)
	assert.False(t, cases["process RSS, classroom of 64 forks"].Target.Met)
	quadratic = true
	for _, sr := range replaySeries {
		c := run()["share-link replay time against steps, "+sr.name]
		assert.InDelta(t, 2.0, c.Value, 0.05)
		assert.False(t, c.Target.Met)
	}
}
