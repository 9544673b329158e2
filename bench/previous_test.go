package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run written into a directory that holds an earlier run's bench.json
// shows each ratio beside the earlier one; re-rendering a report into its
// own directory does not make it its own previous run.
func TestRatioChartShowsThePreviousRun(t *testing.T) {
	dir := t.TempDir()
	run := func(started time.Time, ratio float64) *Report {
		r := &Report{Schema: ReportSchema, Started: started}
		c := Case{Group: GroupWordCount, Name: "engine word count, memory, p=1", Metric: MetricRecordsPerSecond, HigherIsBetter: true,
			Value: ratio * 100, BaselineValue: 100, Target: AtLeast(0.5)}
		c.finish()
		r.Cases = append(r.Cases, c)
		return r
	}
	t0 := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	first := run(t0, 0.36)
	_, err := WriteOutputs(dir, first)
	require.NoError(t, err)
	assert.Nil(t, first.Previous, "the first run has none before it")
	svg, err := os.ReadFile(filepath.Join(dir, "ratios.svg"))
	require.NoError(t, err)
	assert.NotContains(t, string(svg), "previous run")

	second := run(t0.Add(time.Hour), 0.52)
	_, err = WriteOutputs(dir, second)
	require.NoError(t, err)
	require.NotNil(t, second.Previous)
	assert.InDelta(t, 0.36, second.Previous.Ratios[CaseKey(second.Cases[0])], 1e-9)
	svg, err = os.ReadFile(filepath.Join(dir, "ratios.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "previous run 0.36x")
	assert.Contains(t, string(svg), "0.52x (was 0.36x)")
	assert.Contains(t, string(svg), "2026-12-01 18:00 UTC")

	// Re-rendered into its own directory: still the run before it.
	again := run(t0.Add(time.Hour), 0.52)
	again.Previous = nil
	_, err = WriteOutputs(dir, again)
	require.NoError(t, err)
	require.NotNil(t, again.Previous)
	assert.True(t, again.Previous.Started.Equal(t0), "kept the run before it, not itself")
}

// A case measured against another baseline than in the run before it has no
// previous ratio: "was 0.85x" against Pebble alone says nothing about a
// ratio against the same four stages on Pebble. Cases whose baseline stayed
// keep theirs.
func TestPreviousRatioOnlyAgainstTheSameBaseline(t *testing.T) {
	mk := func(started time.Time, pebbleBaseline string) *Report {
		r := &Report{Schema: ReportSchema, Started: started}
		for _, c := range []Case{
			{Group: GroupWordCount, Name: "engine word count, memory, p=4", Baseline: "bare word count, p=4", Value: 66, BaselineValue: 100},
			{Group: GroupWordCount, Name: "engine word count, pebble, p=4", Baseline: pebbleBaseline, Value: 88, BaselineValue: 100},
		} {
			c.Metric, c.HigherIsBetter = MetricRecordsPerSecond, true
			c.finish()
			r.Cases = append(r.Cases, c)
		}
		return r
	}
	t0 := time.Date(2026, 12, 2, 22, 18, 0, 0, time.UTC)
	prev := mk(t0, "bare Pebble Get+Set, WAL off, 4 DB(s) in parallel")
	same := mk(t0.Add(time.Hour), "bare Pebble Get+Set, WAL off, 4 DB(s) in parallel")
	SetPrevious(same, prev)
	assert.Len(t, same.Previous.Ratios, 2, "both baselines unchanged")
	changed := mk(t0.Add(time.Hour), "bare word count on Pebble, p=4")
	SetPrevious(changed, prev)
	require.NotNil(t, changed.Previous)
	assert.Contains(t, changed.Previous.Ratios, "wordcount/engine word count, memory, p=4")
	assert.NotContains(t, changed.Previous.Ratios, "wordcount/engine word count, pebble, p=4")
}
