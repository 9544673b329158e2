package web

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// gatedEngine is a testEngine whose next Snapshot, once armed, waits until
// the test releases it: the pump's snapshot for a joining viewer, held for
// as long as a busy machine may take to build it.
type gatedEngine struct {
	*testEngine
	armed   atomic.Bool
	hit     chan struct{} // closed when the armed Snapshot is reached
	release chan struct{} // closed by the test to let it return
}

func newGatedEngine() *gatedEngine {
	return &gatedEngine{testEngine: newTestEngine(1), hit: make(chan struct{}), release: make(chan struct{})}
}

func (g *gatedEngine) Snapshot() engine.Snapshot {
	if g.armed.CompareAndSwap(true, false) {
		close(g.hit)
		<-g.release
	}
	return g.testEngine.Snapshot()
}

func (g *gatedEngine) isPaused() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.testEngine.paused
}

// TestJoiningViewerKeepsTheRunPlaying: a viewer whose first snapshot is
// still being built watches already. The unwatched-session reaper paused
// the run in that window (a joiner was counted only once the hub had
// registered it, after its resume had come and gone), so the viewer found
// a paused run, and a resume of its own left the session marked as paused
// for nobody for good: it never paused again when the viewer left. Under
// -race on a busy machine that window exceeded the grace period
// (TestUnwatchedSessionPausesAndResumes failed most runs).
func TestJoiningViewerKeepsTheRunPlaying(t *testing.T) {
	g := newGatedEngine()
	ts := newTestServer(t, func(c *Config) {
		c.Engines = func(context.Context, RunConfig) (Engine, error) { return g, nil }
		c.PauseGrace = time.Hour // the test runs the reaper's pass itself
	})
	c0 := ts.dial("template=wordcount", nil)
	id := readUntil(t, c0, "snapshot", "")["session"].(string)
	s, ok := ts.srv.Session(id)
	require.True(t, ok)
	require.False(t, g.isPaused(), "the run plays")

	// A second viewer joins; its first snapshot takes a while.
	g.armed.Store(true)
	c1 := ts.dial("session="+id, nil)
	select {
	case <-g.hit:
	case <-time.After(time.Minute):
		t.Fatal("the joiner's snapshot was never built")
	}
	// Meanwhile the first viewer leaves, and the grace period passes.
	require.NoError(t, c0.Close())
	eventually(t, time.Minute, func() bool { return s.Viewers() == 0 }, "the first viewer gone")
	paused := ts.srv.pauseUnwatchedSessions(time.Now().Add(2 * time.Hour))
	close(g.release)
	readUntil(t, c1, "snapshot", "")

	assert.Zero(t, paused, "a viewer joining watches: the reaper leaves the run alone")
	assert.False(t, g.isPaused(), "the joined viewer finds the run playing")
	assert.False(t, s.idlePaused.Load())
	eventually(t, time.Minute, func() bool { return s.Viewers() == 1 }, "the joiner registered")
	assert.Zero(t, ts.srv.pauseUnwatchedSessions(time.Now().Add(2*time.Hour)), "watched: not paused")

	// When it leaves, the run pauses for nobody as before.
	require.NoError(t, c1.Close())
	eventually(t, time.Minute, func() bool { return s.Viewers() == 0 }, "the viewer gone")
	assert.Equal(t, 1, ts.srv.pauseUnwatchedSessions(time.Now().Add(2*time.Hour)))
	assert.True(t, g.isPaused())
	assert.True(t, s.idlePaused.Load())
}

// TestRunResumedWhileUnwatchedPausesAgain: a run the reaper paused can be
// played again with nobody watching — a lesson's "do it for me" that was
// under way when the learner left ends by letting the job run. The reaper
// skipped every session it had paused once, so that run played on for
// nobody until the session expired; now it is paused again, and still plays
// on for the viewer who returns.
func TestRunResumedWhileUnwatchedPausesAgain(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.PauseGrace = time.Hour })
	c0 := ts.dial("template=wordcount", nil)
	id := readUntil(t, c0, "snapshot", "")["session"].(string)
	s, ok := ts.srv.Session(id)
	require.True(t, ok)
	e := ts.f.engine(0)
	require.NoError(t, c0.Close())
	eventually(t, time.Minute, func() bool { return s.Viewers() == 0 }, "the viewer gone")

	later := time.Now().Add(2 * time.Hour)
	require.Equal(t, 1, ts.srv.pauseUnwatchedSessions(later))
	require.True(t, e.Snapshot().Paused)
	assert.Zero(t, ts.srv.pauseUnwatchedSessions(later), "paused already")

	// What lessonRun.perform does when its actions are done.
	s.cmdMu.Lock()
	require.NoError(t, s.engine().Resume())
	s.cmdMu.Unlock()
	assert.Equal(t, 1, ts.srv.pauseUnwatchedSessions(later), "played again for nobody: paused again")
	assert.True(t, e.Snapshot().Paused)

	c1 := ts.dial("session="+id, nil)
	readUntil(t, c1, "snapshot", "")
	eventually(t, time.Minute, func() bool { return !e.Snapshot().Paused }, "the run plays on for the returning viewer")
	assert.False(t, s.idlePaused.Load())
}

// TestDriverEnginePlaying: Playing, which the reaper reads instead of a
// Snapshot, agrees with the snapshot's paused flag on both drivers.
func TestDriverEnginePlaying(t *testing.T) {
	ts := newRealServer(t, nil)
	for _, driver := range []string{DriverStepper, DriverLive} {
		c := ts.dial("template=wordcount&seed=3&driver="+driver, nil)
		id := readUntil(t, c, "snapshot", "")["session"].(string)
		s, ok := ts.srv.Session(id)
		require.True(t, ok)
		e := s.engine().(*driverEngine)
		agree := func(want bool) {
			t.Helper()
			assert.Equal(t, want, e.Playing(), driver)
			// A Play that has just been started clears the Stepper's
			// paused flag when its goroutine runs.
			eventually(t, time.Minute, func() bool { return e.Snapshot().Paused == !want }, driver+": the snapshot agrees")
		}
		agree(true)
		require.NoError(t, e.Pause())
		agree(false)
		require.NoError(t, e.Resume())
		agree(true)
		if driver == DriverStepper {
			require.NoError(t, e.SetDriver(DriverLive))
			agree(true)
			require.NoError(t, e.Pause())
			require.NoError(t, e.SetDriver(DriverStepper))
			agree(false)
			require.NoError(t, e.SetDriver(DriverLive))
			agree(false)
		}
		require.NoError(t, c.Close())
	}
}
