package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
)

func TestWordsAreSeededAndSkewed(t *testing.T) {
	w := Workload{Seed: 7, Records: 20_000, Keys: 10}
	a, b := w.Words(), w.Words()
	require.Equal(t, a, b, "the same seed gives the same words")
	c := Workload{Seed: 8, Records: 20_000, Keys: 10}.Words()
	assert.NotEqual(t, a, c, "another seed gives other words")

	counts := Count(a)
	require.Len(t, counts, 10)
	// Key k has probability √((k+1)/10) − √(k/10): w0 about 31.6 %,
	// w9 about 5.1 %.
	assert.InDelta(t, 0.316, float64(counts["w0"])/20_000, 0.02)
	assert.InDelta(t, 0.051, float64(counts["w9"])/20_000, 0.01)
	assert.Greater(t, counts["w0"], counts["w5"])
	assert.Greater(t, counts["w5"], counts["w9"])
}

func TestCount(t *testing.T) {
	assert.Equal(t, map[string]int64{"a": 2, "b": 1}, Count([]string{"a", "b", "a"}))
}

func TestDiffCounts(t *testing.T) {
	tests := []struct {
		name      string
		got, want map[string]int64
		msg       string
	}{
		{"equal", map[string]int64{"a": 1}, map[string]int64{"a": 1}, ""},
		{"wrong count", map[string]int64{"a": 2}, map[string]int64{"a": 1}, "counts differ at 1 of 1 keys (a: got 2 want 1)"},
		{"missing key", map[string]int64{}, map[string]int64{"a": 1}, "a: got 0 want 1"},
		{"extra key", map[string]int64{"a": 1, "z": 3}, map[string]int64{"a": 1}, "z: got 3 want 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := DiffCounts(tt.got, tt.want)
			if tt.msg == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestBarePipelineCountsLikeTheGroundTruth(t *testing.T) {
	words := Workload{Seed: 3, Records: 10_000, Keys: 500}.Words()
	truth := Count(words)
	for _, p := range []int{1, 2, 3, 4} {
		r, err := RunBarePipeline(words, p, rescale.DefaultMaxParallelism(p))
		require.NoError(t, err)
		assert.NoError(t, DiffCounts(r.Counts, truth), "parallelism %d", p)
		assert.Positive(t, r.Elapsed)
	}
}

func TestBarePipelineRefusesParallelismAboveMax(t *testing.T) {
	_, err := RunBarePipeline([]string{"a"}, 200, 128)
	assert.Error(t, err)
}

func TestMedianAndInterleave(t *testing.T) {
	assert.Equal(t, 0.0, Median(nil))
	assert.Equal(t, 2.0, Median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, Median([]float64{4, 1, 3, 2}))

	var order []string
	trial := func(name string, v float64) Trial {
		return Trial{Name: name, Run: func() (float64, error) { order = append(order, name); return v, nil }}
	}
	got, err := Interleave(2, trial("a", 1), trial("b", 2))
	require.NoError(t, err)
	assert.Equal(t, [][]float64{{1, 1}, {2, 2}}, got)
	assert.Equal(t, []string{"a", "b", "a", "b"}, order, "rounds interleave the trials")

	_, err = Interleave(0, trial("a", 1))
	assert.Error(t, err)
}

func TestCaseRatioAndTarget(t *testing.T) {
	c := Case{Value: 30, BaselineValue: 100, Target: AtLeast(0.25)}
	c.finish()
	assert.InDelta(t, 0.3, c.Ratio, 1e-9)
	assert.True(t, c.Target.Met)

	c = Case{Value: 20, BaselineValue: 100, Target: AtMost(0.15)}
	c.finish()
	assert.False(t, c.Target.Met)

	c = Case{Value: 20}
	c.finish()
	assert.Equal(t, 0.0, c.Ratio, "no baseline, no ratio")
}
