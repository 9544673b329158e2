package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TopicRecords must hand out exactly what a running job's sources read:
// compare it with the topics a Stepper built for the same spec.
func TestTopicRecordsEqualTheJobsTopics(t *testing.T) {
	spec := &JobSpec{Name: "two sources", Seed: 42,
		Operators: []OperatorSpec{
			{ID: "sink", Kind: KindSink, Parallelism: 1},
			{ID: "words", Kind: KindSource, Parallelism: 2, Options: map[string]any{"records": 300, "partitions": 3, "lines": []any{"typed in", "and more"}}},
			{ID: "clicks", Kind: KindSource, Parallelism: 1, Options: map[string]any{"generator": "clicks", "records": 120}},
		},
		Edges: []EdgeSpec{{From: "words", To: "sink", Partitioner: Rebalance}, {From: "clicks", To: "sink", Partitioner: Rebalance}}}
	require.NoError(t, spec.Validate())
	s, err := NewStepper(spec.Clone(), Options{})
	require.NoError(t, err)
	defer s.Close()
	for _, src := range []string{"words", "clicks"} {
		got, err := TopicRecords(spec, src, 0)
		require.NoError(t, err)
		tp := s.c.topics[src]
		require.Len(t, got, tp.partitions)
		n := 0
		for p := range got {
			require.Equal(t, tp.read(nil, p, 0, int(tp.end(p))), got[p], "%s partition %d", src, p)
			n += len(got[p])
		}
		require.Positive(t, n)
	}
	_, err = TopicRecords(spec, "words", 10)
	require.Error(t, err, "more records than the bound")
	_, err = TopicRecords(spec, "sink", 0)
	require.ErrorIs(t, err, ErrUnknown)
}
