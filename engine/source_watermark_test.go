package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A source's watermark follows Flink's WatermarkStrategy.
// forMonotonousTimestamps (BoundedOutOfOrdernessWatermarks with no delay):
// onPeriodicEmit emits the highest timestamp read minus 1 — a later record
// may still carry that timestamp — and Long.MIN_VALUE before any record.
// A partition read to its end no longer holds it back; all read, it is
// Watermark.MAX_WATERMARK. watermarkNow is what both drivers emit.
func TestSourceWatermarkIsMaxTimestampMinusOne(t *testing.T) {
	tp := newTopic("lines", 1, operatorOptions{Partitions: 2, Lines: strings.Fields("a b c d e f")})
	s := &sourceLogic{topic: tp, parts: []partitionCursor{
		{partition: 0, lastTS: MinWatermark}, {partition: 1, lastTS: MinWatermark}}}
	assert.Equal(t, MinWatermark, s.watermarkNow(), "nothing read yet")
	s.parts[0] = partitionCursor{partition: 0, offset: 1, lastTS: 0, read: true}
	assert.Equal(t, MinWatermark, s.watermarkNow(), "partition 1 not read yet holds it at Long.MIN_VALUE")
	s.parts[1] = partitionCursor{partition: 1, offset: 2, lastTS: 3, read: true}
	assert.Equal(t, int64(-1), s.watermarkNow(), "the lowest partition's highest timestamp (0) minus 1")
	s.parts[0] = partitionCursor{partition: 0, offset: 2, lastTS: 2, read: true}
	assert.Equal(t, int64(1), s.watermarkNow())
	s.parts[0].offset = 3 // partition 0 read to its end: released
	assert.Equal(t, int64(2), s.watermarkNow(), "partition 1's highest timestamp (3) minus 1")
	s.parts[1].offset = 3
	assert.Equal(t, MaxWatermark, s.watermarkNow(), "all read: the end of input")
}

// On the Stepper (a watermark after every poll), one record per poll: the
// source's watermarks run one below each timestamp read, then +∞.
func TestSourceEmitsMaxTimestampMinusOne(t *testing.T) {
	spec := &JobSpec{
		Name: "lines", Seed: 1,
		Operators: []OperatorSpec{
			{ID: "source", Kind: KindSource, Options: map[string]any{"generator": "none", "lines": []any{"a", "b", "c"}}},
			{ID: "sink", Kind: KindSink, Options: map[string]any{"semantics": "at-least-once"}},
		},
		Edges:   []EdgeSpec{{From: "source", To: "sink", Partitioner: Rebalance}},
		Cluster: ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 2},
		Runtime: RuntimeSpec{BatchSize: 1},
	}
	s, log := newTestStepper(t, spec)
	runToEnd(t, s)
	var wms []int64
	for _, e := range log.kinds(EvWatermark) {
		if strings.HasPrefix(e.Task, "source") {
			wms = append(wms, e.Watermark)
		}
	}
	// Lines carry timestamps 0, 1, 2; after the last the partition is
	// read to its end.
	assert.Equal(t, []int64{-1, 0, MaxWatermark}, wms)
}

// Two records of one key carry a window's last timestamp e-1 and the second
// is read after the first has reached the window operator. Flink's
// watermark after the first is e-2, so the window [s, e) is still open and
// counts both; it fires once a record at e or later is read.
func TestWindowCountsRecordsAtItsLastTimestamp(t *testing.T) {
	// 6 pages, 3 clicks per page per 2 ms window: timestamps k*2/18 for
	// k = 0..17 are 0 (k < 9) and 1 (k >= 9), so pages 3, 4 and 5 have two
	// records at 1, the window's last timestamp, read one per poll.
	spec := clickSpec(4, 3)
	spec.Operators[0].Parallelism = 1
	spec.Operators[0].Options["partitions"] = 1
	spec.Operators[0].Options["windowSize"] = "2ms"
	spec.Operators[1].Options["size"] = "2ms"
	spec.Runtime.BatchSize = 1
	s, log := newTestStepper(t, spec)
	runToEnd(t, s)
	counts := windowCounts(t, s)
	require.Len(t, counts, 4*6, "6 pages × 4 windows")
	for k, n := range counts {
		assert.Equal(t, int64(3), n, k)
	}
	assert.Contains(t, counts, "/help [0s, 2ms)")
	fired := 0
	for _, e := range log.kinds(EvWindowFired) {
		fired++
		assert.Equal(t, int64(3), e.Value, "%s %s", e.Key, e.Window)
	}
	assert.Equal(t, 4*6, fired)
}
