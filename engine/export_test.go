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

// TopicRecordsWithTyped adds what the run's inject commands appended, where
// and as the engine appended it: compare with a Stepper's topics after
// typed lines (next in turn, an explicit partition, a refused one) on a
// words source and a clicks source.
func TestTopicRecordsWithTypedEqualTheJobsTopics(t *testing.T) {
	spec := &JobSpec{Name: "typed", Seed: 9,
		Operators: []OperatorSpec{
			{ID: "sink", Kind: KindSink, Parallelism: 1},
			{ID: "words", Kind: KindSource, Parallelism: 2, Options: map[string]any{"generator": "none", "partitions": 3, "lines": []any{"a b", "c"}}},
			{ID: "clicks", Kind: KindSource, Parallelism: 1, Options: map[string]any{"generator": "clicks", "records": 60}},
		},
		Edges: []EdgeSpec{{From: "words", To: "sink", Partitioner: Rebalance}, {From: "clicks", To: "sink", Partitioner: Rebalance}}}
	require.NoError(t, spec.Validate())
	s, err := NewStepper(spec.Clone(), Options{})
	require.NoError(t, err)
	defer s.Close()
	cmds := []Command{
		{Name: CmdInject, Operator: "words", Partition: -1, Text: "typed one"},
		{Name: CmdInject, Operator: "words", Partition: 2, Text: "typed two"},
		{Name: CmdInject, Operator: "words", Partition: 7, Text: "refused"},
		{Name: CmdInject, Operator: "words", Partition: -1, Text: "typed three"},
		{Name: CmdInject, Operator: "clicks", Partition: -1, Text: "home"},
	}
	for _, c := range cmds {
		_ = s.Do(c)
		s.Steps(3)
	}
	log := s.Snapshot().Commands
	for _, src := range []string{"words", "clicks"} {
		got, err := TopicRecordsWithTyped(spec, src, log, 0)
		require.NoError(t, err)
		tp := s.c.topics[src]
		require.Len(t, got, tp.partitions)
		for p := range got {
			require.Equal(t, tp.read(nil, p, 0, int(tp.end(p))), got[p], "%s partition %d", src, p)
		}
	}
	words, err := TopicRecordsWithTyped(spec, "words", log, 0)
	require.NoError(t, err)
	n := 0
	for _, p := range words {
		n += len(p)
	}
	require.Equal(t, 5, n, "two lines of the spec and three typed (one refused)")
	_, err = TopicRecordsWithTyped(spec, "words", log, 4)
	require.Error(t, err, "more records than the bound")
}
