package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The chaos run holds exactly-once (or, with the at-least-once sink, loses
// nothing) for several seeds on every backend.
func TestChaos(t *testing.T) {
	type tc struct {
		backend Backend
		sink    string
		seeds   []int64
		records int
	}
	tests := []tc{
		{BackendMemory, SinkExactlyOnce, []int64{1, 2, 3, 4, 5, 6}, 600},
		{BackendMemory, SinkAtLeastOnce, []int64{7, 8}, 600},
		{BackendFS, SinkExactlyOnce, []int64{9, 10}, 400},
		{BackendPebble, SinkExactlyOnce, []int64{11, 12}, 300},
	}
	if testing.Short() {
		tests = tests[:1]
	}
	for _, c := range tests {
		for _, seed := range c.seeds {
			t.Run(fmt.Sprintf("%s/%s/%d", c.backend, c.sink, seed), func(t *testing.T) {
				res, err := RunChaos(context.Background(), ChaosConfig{Seed: seed, Records: c.records, Crashes: 3, Rescales: 2,
					Backend: c.backend, Sink: c.sink, Dir: t.TempDir()})
				require.NoError(t, err)
				assert.True(t, res.OK, "%s\n%v\n%v", res.Summary(), res.Actions, res.Diff(10))
				assert.Equal(t, 3, res.Crashes)
				assert.Equal(t, 2, res.Rescales)
				assert.Equal(t, int64(c.records), res.Records)
				if c.sink == SinkAtLeastOnce {
					assert.Empty(t, res.Comparison.Losses)
				} else {
					assert.Empty(t, res.Comparison.Duplicates)
				}
			})
		}
	}
}

// A broken sink shows up: the comparison is not a rubber stamp. Committing
// a transaction's records twice must be reported as duplicates.
func TestChaosDetectsDuplicates(t *testing.T) {
	s, _ := newTestStepper(t, wordCount(100, 1, 1, 0))
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	require.True(t, cmp[0].ExactlyOnce)
	store := s.c.sinks["sink"]
	store.mu.Lock()
	dup, lost := store.record(3), store.record(10)
	store.keep([]Record{dup}) // committed twice
	store.mu.Unlock()
	store.multiset(func(int, map[outKey]int) {}) // counts up to date
	store.mu.Lock()
	store.counts[outKey{lost.Key, lost.Text, lost.Value}]--
	store.mu.Unlock()
	cmp, err = s.Compare()
	require.NoError(t, err)
	assert.False(t, cmp[0].ExactlyOnce)
	assert.Len(t, cmp[0].Duplicates, 1)
	assert.Len(t, cmp[0].Losses, 1)
}
