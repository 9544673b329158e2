package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Pause that lands before Resume's goroutine has started leaves the
// Stepper paused: the snapshot must not say "playing" while nothing plays
// (a classroom's idle pause relied on it and saw the run still playing).
func TestPauseRightAfterResumeStaysPaused(t *testing.T) {
	s, _ := newTestStepper(t, wordCount(1000, 1, 1, 8))
	for i := 0; i < 200; i++ {
		s.Resume()
		s.Pause()
		require.True(t, s.Snapshot().Paused, "round %d: paused by Pause, the snapshot says playing", i)
	}
	// Play with a context that is already done does not unpause either.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, s.Play(ctx), context.Canceled)
	assert.True(t, s.Snapshot().Paused)
}
