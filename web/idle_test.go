package web

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnwatchedSessionPausesAndResumes: finding 3. A playing sandbox whose
// last viewer left kept computing for the whole idle window. Now it pauses
// after the grace period, stays put, and plays on when a viewer returns; a
// run its viewer paused stays paused.
func TestUnwatchedSessionPausesAndResumes(t *testing.T) {
	ts := newRealServer(t, func(c *Config) { c.PauseGrace = 300 * time.Millisecond })
	c := ts.dial("template=wordcount&seed=3", nil)
	id := readUntil(t, c, "snapshot", "")["session"].(string)
	send(t, c, `{"type":"command","id":"go","name":"resume"}`)
	require.Equal(t, "ack", reply(t, c, "go")["type"])
	send(t, c, `{"type":"command","id":"fast","name":"speed","args":{"factor":20}}`)
	require.Equal(t, "ack", reply(t, c, "fast")["type"])
	s, ok := ts.srv.Session(id)
	require.True(t, ok)
	eventually(t, 20*time.Second, func() bool { return s.Snapshot().Step > 50 }, "the run plays")
	require.NoError(t, c.Close())

	// Look now and then: a snapshot every few milliseconds would be a
	// viewer of its own, and under -race it starves the run's pause.
	waitFor(t, func() bool { return s.Snapshot().Paused }, "the unwatched run paused", func() string {
		return fmt.Sprintf("viewers %d, paused for nobody %v, last activity %s ago", s.Viewers(), s.idlePaused.Load(), time.Since(time.Unix(0, s.active.Load())).Round(time.Millisecond))
	})
	at := s.Snapshot().Step
	time.Sleep(500 * time.Millisecond)
	assert.Equal(t, at, s.Snapshot().Step, "a paused run takes no steps")
	_, alive := ts.srv.Session(id)
	assert.True(t, alive, "the session itself stays for the idle timeout")

	c2 := ts.dial("session="+id, nil)
	readUntil(t, c2, "snapshot", "")
	waitFor(t, func() bool { return !s.Snapshot().Paused && s.Snapshot().Step > at }, "the run plays on for its returning viewer", nil)

	// Paused by its viewer: it stays paused after the viewer leaves and returns.
	send(t, c2, `{"type":"command","id":"p","name":"pause"}`)
	require.Equal(t, "ack", reply(t, c2, "p")["type"])
	require.NoError(t, c2.Close())
	time.Sleep(time.Second)
	c3 := ts.dial("session="+id, nil)
	readUntil(t, c3, "snapshot", "")
	time.Sleep(300 * time.Millisecond)
	assert.True(t, s.Snapshot().Paused, "the viewer's own pause is kept")
}

// waitFor polls cond every 200 ms for up to a minute; state, if given,
// says what was seen when it gives up.
func waitFor(t *testing.T, cond func() bool, what string, state func() string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			seen := ""
			if state != nil {
				seen = " (" + state() + ")"
			}
			t.Fatalf("timed out after a minute waiting for %s%s", what, seen)
		}
	}
}
