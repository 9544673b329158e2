package web

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReplayWorkPerStepStaysFlat replays a default wordcount sandbox, as a
// share link does (replayStepperCtx, advanceCtx), and counts the bytes it
// allocates per step while the source still has records and, later, while
// the job only ticks and checkpoints its drained source every 200 ms of
// job time. A replay's cost must grow linearly with its steps (issue 17),
// so a step of the second phase may not cost much more than one of the
// first: when every checkpoint allocated a fresh 256 KiB write buffer per
// stateful subtask, it cost 6.6 times as much, and replays of 400,000 steps
// grew with a log-log slope of 1.2. A count of bytes, not a clock: the
// figures do not depend on the machine's load.
func TestReplayWorkPerStepStaysFlat(t *testing.T) {
	tpl, _ := Template("wordcount")
	set, err := ParseSettings(tpl, nil)
	require.NoError(t, err)
	spec, err := tpl.Build(set)
	require.NoError(t, err)
	ctx := context.Background()
	st, err := replayStepperCtx(ctx, spec, t.TempDir(), nil, 0, nil)
	require.NoError(t, err)
	defer st.Close()

	const window = 5_000
	// bytesPerStep advances the replay by window steps and returns the
	// bytes allocated per step on the way.
	bytesPerStep := func() float64 {
		var before, after runtime.MemStats
		from, _ := st.Position()
		runtime.ReadMemStats(&before)
		require.NoError(t, advanceCtx(ctx, st, nil, from, from+window))
		runtime.ReadMemStats(&after)
		at, _ := st.Position()
		require.Equal(t, from+window, at, "the default sandbox never drains")
		return float64(after.TotalAlloc-before.TotalAlloc) / window
	}
	// unread counts the records the source has still to read.
	unread := func() (n int64) {
		for _, src := range st.Snapshot().Sources {
			for _, p := range src.Partitions {
				n += p.End - p.Offset
			}
		}
		return n
	}
	// Steps 0-5,000: the source's 20,000 records flow.
	records := bytesPerStep()
	require.Positive(t, unread(), "the source still has records after %d steps", window)
	// Steps 20,000-35,000: the records are read, checkpoints go on.
	require.NoError(t, advanceCtx(ctx, st, nil, window, 20_000))
	require.Zero(t, unread(), "the source has read all its records after 20,000 steps")
	// The least of three windows: another test's goroutines may allocate
	// during one of them, never make a step cheaper.
	idle := bytesPerStep()
	for range 2 {
		idle = min(idle, bytesPerStep())
	}
	t.Logf("bytes allocated per step: %.0f while records flow, %.0f once they are read", records, idle)
	require.LessOrEqual(t, idle, 2*records,
		"a step after the records are read allocates %.0f bytes, %.1f times one while they flow", idle, idle/records)
}
