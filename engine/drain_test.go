package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RunUntilDrained returns only when nothing more can change the output:
// every record read and processed, the end-of-input watermark delivered (so
// every event-time window has fired), and the sink's output written (at
// least once) or committed (exactly once). Stepping on afterwards changes
// no committed record.
func TestRunUntilDrainedIsFinal(t *testing.T) {
	tests := []struct {
		name string
		spec func() *JobSpec
	}{
		{"windows, at-least-once sink", func() *JobSpec {
			s := clickSpec(3, 10)
			s.Operators[2].Options = map[string]any{"semantics": SinkAtLeastOnce}
			return s
		}},
		{"windows, exactly-once sink", func() *JobSpec { return clickSpec(3, 10) }},
		{"word count, at-least-once sink", func() *JobSpec {
			s := wordCount(200, 2, 2, 0)
			s.Operators[3].Options = map[string]any{"semantics": SinkAtLeastOnce}
			return s
		}},
	}
	for _, tc := range tests {
		for _, fifo := range []bool{false, true} {
			name := tc.name
			if fifo {
				name += ", fifo"
			}
			t.Run(name, func(t *testing.T) {
				spec := tc.spec()
				spec.Runtime.FIFO = fifo
				spec.Checkpointing.Interval = ms(30)
				s, _ := newTestStepper(t, spec)
				_, err := s.RunUntilDrained(1_000_000)
				require.NoError(t, err)
				require.True(t, s.Drained())
				cmp, err := s.Compare()
				require.NoError(t, err)
				committed := s.Snapshot().Sinks[0].Committed
				assert.Empty(t, cmp[0].Losses, "nothing is missing when drained")
				assert.Equal(t, cmp[0].Expected, committed, "the output is complete when drained (no failure: nothing duplicated)")

				s.Steps(2000)
				assert.Equal(t, committed, s.Snapshot().Sinks[0].Committed, "stepping on writes nothing more")
			})
		}
	}
}

// The Live driver's WaitDrained holds to the same rule: with an
// at-least-once sink every window has been written when it returns.
func TestLiveWaitDrainedIsFinal(t *testing.T) {
	for round := range 3 {
		spec := clickSpec(4, 10)
		spec.Seed += int64(round)
		spec.Operators[2].Options = map[string]any{"semantics": SinkAtLeastOnce}
		l, err := NewLive(spec, Options{Dir: t.TempDir()})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		require.NoError(t, l.Start(ctx))
		require.NoError(t, l.WaitDrained(ctx))
		cmp, err := l.Compare()
		require.NoError(t, err)
		assert.Empty(t, cmp[0].Losses, "round %d: nothing is missing when drained", round)
		assert.Equal(t, 4*6, cmp[0].Committed, "round %d", round)
		cancel()
		require.NoError(t, l.Close())
	}
}
