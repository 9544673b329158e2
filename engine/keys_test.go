package engine

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countsOf reads every count subtask's ValueState into key -> count.
func countsOf(t *testing.T, s *Stepper, op string, parallelism int) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for i := range parallelism {
		v, err := s.TaskState(taskName(op, i), 0)
		require.NoError(t, err)
		for _, e := range v.Keyed {
			n, err := strconv.ParseInt(e.Value, 10, 64)
			require.NoError(t, err)
			out[e.Key] = n
		}
	}
	return out
}

// A keyed operator right after a source keys each line by itself, as
// keyBy(line -> line) keys a stream of strings in Flink: no record arrives
// without a key, so nothing is counted under the empty key.
func TestSourceLinesAreKeyedByThemselves(t *testing.T) {
	keyedAfterSource := func(opts map[string]any) *JobSpec {
		return &JobSpec{
			Name: "lines", Seed: 4,
			Operators: []OperatorSpec{
				{ID: "source", Kind: KindSource, Parallelism: 2, Options: opts},
				{ID: "count", Kind: KindCount, Parallelism: 2},
				{ID: "sink", Kind: KindSink, Parallelism: 1, Options: map[string]any{"semantics": SinkAtLeastOnce}},
			},
			Edges: []EdgeSpec{
				{From: "source", To: "count", Partitioner: Hash},
				{From: "count", To: "sink", Partitioner: Rebalance},
			},
		}
	}

	t.Run("lines and typed-in text", func(t *testing.T) {
		s, _ := newTestStepper(t, keyedAfterSource(map[string]any{"generator": "none", "partitions": 2,
			"lines": []any{"to be", "or not", "to be"}}))
		runToEnd(t, s)
		require.NoError(t, s.Do(Command{Name: CmdInject, Operator: "source", Partition: -1, Text: "or not"}))
		runToEnd(t, s)
		assert.Equal(t, map[string]int64{"to be": 2, "or not": 2}, countsOf(t, s, "count", 2))
	})

	t.Run("words generator, one word per line", func(t *testing.T) {
		s, _ := newTestStepper(t, keyedAfterSource(map[string]any{"generator": "words", "partitions": 4,
			"records": 400, "keys": 20, "wordsPerLine": 1}))
		runToEnd(t, s)
		counts := countsOf(t, s, "count", 2)
		total := int64(0)
		for k, n := range counts {
			assert.NotEmpty(t, k)
			assert.NotContains(t, k, " ", "one word per line")
			assert.Contains(t, vocabulary[:20], k, "the first 20 words of the vocabulary")
			total += n
		}
		assert.Equal(t, int64(400), total, "every line counted once, under its own word")
		assert.Greater(t, len(counts), 1)
	})

	t.Run("words generator, a tokenizer first counts words", func(t *testing.T) {
		spec := wordCount(100, 2, 2, 0)
		s, _ := newTestStepper(t, spec)
		runToEnd(t, s)
		for k := range countsOf(t, s, "count", 2) {
			assert.NotEmpty(t, k)
			assert.False(t, strings.ContainsAny(k, " \t"), "%q is a word", k)
		}
	})
}
