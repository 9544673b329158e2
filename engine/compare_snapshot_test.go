package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSnapshotComparisonIsTheFullOneCut: a Snapshot lists only the first
// snapshotDiffs differences of each kind (it keeps no longer list, issue
// 17), and they must be exactly the first entries of Compare's full lists,
// with the same counts and verdicts — mid-run, when most of the expected
// output is still missing, after a crash that replays records into an
// at-least-once sink (duplicates), and at the end.
func TestSnapshotComparisonIsTheFullOneCut(t *testing.T) {
	spec := wordCount(3000, 2, 2, 8)
	spec.Operators[3].Options = map[string]any{"semantics": "at-least-once"}
	spec.Checkpointing = CheckpointingSpec{Interval: ms(20)}
	s, _ := newTestStepper(t, spec)
	check := func(when string) {
		t.Helper()
		full, err := s.Compare()
		require.NoError(t, err)
		require.Len(t, full, 1)
		snap := s.Snapshot()
		require.Len(t, snap.Sinks, 1)
		got := snap.Sinks[0].Comparison
		require.NotNil(t, got, when)
		want := full[0].truncated(snapshotDiffs)
		assert.Equal(t, want, *got, when)
		t.Logf("%s: %d lost (%d listed), %d duplicated (%d listed), truncated %v",
			when, full[0].LostRecords, len(got.Losses), full[0].DuplicateRecords, len(got.Duplicates), got.Truncated)
	}
	s.Steps(400)
	check("mid-run")
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
	s.Steps(3000)
	check("after a crash")
	runToEnd(t, s)
	check("at the end")
}
