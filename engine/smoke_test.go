package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSmokeWordCount(t *testing.T) {
	spec := &JobSpec{
		Name: "wc", Seed: 1,
		Operators: []OperatorSpec{
			{ID: "source", Kind: KindSource, Parallelism: 2, Options: map[string]any{"partitions": 4, "records": 200}},
			{ID: "tokenizer", Kind: KindTokenizer, Parallelism: 2},
			{ID: "count", Kind: KindCount, Parallelism: 2},
			{ID: "sink", Kind: KindSink, Parallelism: 2},
		},
		Edges:         []EdgeSpec{{From: "source", To: "tokenizer", Partitioner: Forward}, {From: "tokenizer", To: "count", Partitioner: Hash}, {From: "count", To: "sink", Partitioner: Rebalance}},
		Checkpointing: CheckpointingSpec{Interval: Duration(20 * time.Millisecond)},
	}
	s, err := NewStepper(spec, Options{})
	require.NoError(t, err)
	defer s.Close()
	n, err := s.RunUntilDrained(100000)
	require.NoError(t, err)
	t.Logf("steps %d", n)
	cmp, err := s.Compare()
	require.NoError(t, err)
	t.Logf("%+v", cmp[0].Keys)
	require.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
}
