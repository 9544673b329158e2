package bench

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

func TestEngineWordCountCountsLikeTheGroundTruth(t *testing.T) {
	words := Workload{Seed: 2, Records: 3_000, Keys: 150}.Words()
	truth := Count(words)
	for _, kind := range []state.BackendKind{state.Memory, state.Pebble} {
		for _, p := range []int{1, 2} {
			res, err := RunEngineWordCount(context.Background(), EngineRun{Words: words, Backend: kind, Parallelism: p,
				MaxParallelism: rescale.DefaultMaxParallelism(p), Dir: t.TempDir(), Truth: truth})
			require.NoError(t, err, "%s p=%d", kind, p)
			assert.True(t, res.StateChecked, "a small state answers the inspector")
			assert.Positive(t, res.Elapsed)

			res, err = RunEngineWordCount(context.Background(), EngineRun{Words: words, Backend: kind, Parallelism: p,
				MaxParallelism: rescale.DefaultMaxParallelism(p), Dir: t.TempDir(), Truth: truth, Light: true})
			require.NoError(t, err, "%s p=%d light", kind, p)
			assert.True(t, res.StateChecked)
		}
	}
}

func TestEngineWordCountFailsOnAWrongTruth(t *testing.T) {
	words := Workload{Seed: 2, Records: 500, Keys: 20}.Words()
	truth := Count(words)
	truth[words[0]]++ // one count too many: the check must catch it
	for _, light := range []bool{false, true} {
		_, err := RunEngineWordCount(context.Background(), EngineRun{Words: words, Backend: state.Memory, Parallelism: 1,
			MaxParallelism: 128, Dir: t.TempDir(), Truth: truth, Light: light})
		assert.ErrorContains(t, err, "word count", "light %v", light)
	}
}
