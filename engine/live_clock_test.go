package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The subtasks read the Live clock and its pause gate without the clock's
// mutex (Live.clk, issue 22): every change — Pause, SetSpeed, Resume — must
// reach that copy. A paused clock stands still and its gate stays shut; a
// new speed waits for Resume and then runs the clock that much faster.
func TestLiveClockFollowsPauseSpeedResume(t *testing.T) {
	l, err := NewLive(wordCount(1000, 1, 1, 8), Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, l.Start(context.Background()))
	open := func() bool {
		select {
		case <-l.gate():
			return true
		default:
			return false
		}
	}
	assert.True(t, open(), "running: the gate is open")

	l.Pause()
	assert.False(t, open(), "paused: the subtasks' gate is shut")
	a := l.now()
	time.Sleep(5 * time.Millisecond)
	assert.Equal(t, a, l.now(), "a paused clock stands still")
	require.NoError(t, l.SetSpeed(1000))
	time.Sleep(5 * time.Millisecond)
	assert.Equal(t, a, l.now(), "a new speed does not start a paused clock")

	l.Resume()
	assert.True(t, open(), "resumed: the gate is open again")
	r0 := time.Now()
	v0 := l.now()
	time.Sleep(20 * time.Millisecond)
	v1 := l.now()
	real := time.Since(r0)
	// v1-v0 is 1000 times the real time between the two reads, which is at
	// least the sleep and at most real (bounds a slow machine keeps).
	assert.GreaterOrEqual(t, v1-v0, 1000*20*time.Millisecond, "the clock runs at the new speed")
	assert.LessOrEqual(t, v1-v0, 1000*real+time.Millisecond)
	assert.GreaterOrEqual(t, v0, a)

	// A new speed while running applies at once.
	require.NoError(t, l.SetSpeed(1))
	r0, v0 = time.Now(), l.now()
	time.Sleep(20 * time.Millisecond)
	v1, real = l.now(), time.Since(r0)
	assert.GreaterOrEqual(t, v1-v0, 20*time.Millisecond)
	assert.LessOrEqual(t, v1-v0, real+time.Millisecond, "the clock runs at speed 1 again")
}
