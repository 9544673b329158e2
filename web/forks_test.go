package web

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestForksHaveTheirOwnCap: forks do not count against the sessions' cap
// (a class forking must not lock out sandboxes), they stop at MaxForks
// with a message that says what to do, and a fork nobody watches gives
// its place to a new one.
func TestForksHaveTheirOwnCap(t *testing.T) {
	ts := newRealServer(t, func(c *Config) { c.MaxSessions = 2; c.MaxForks = 3 })
	status, info := ts.createClassroom(`{"settings":{"seed":"4"}}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", info)
	code := info["code"].(string)
	sandbox := ts.dial("template=wordcount", nil)
	readUntil(t, sandbox, "snapshot", "")
	// Two sessions run: the sessions' cap is reached.
	e := openError(t, ts, "template=clicks")
	assert.Equal(t, CodeSessionLimit, e["code"])

	f := ts.dial("classroom="+code, nil)
	readUntil(t, f, "snapshot", "")
	var forks []string
	for i := range 3 {
		id := "f" + string(rune('0'+i))
		send(t, f, `{"type":"command","id":"`+id+`","name":"fork"}`)
		ack := reply(t, f, id)
		require.Equal(t, "ack", ack["type"], "fork %d within the forks' cap: %v", i, ack)
		forks = append(forks, ack["session"].(string))
	}
	running, max := ts.srv.ForkStats()
	assert.Equal(t, 3, running)
	assert.Equal(t, 3, max)

	// Every fork is new (within its grace period): the fourth is refused
	// with the forks' own code and what to do.
	send(t, f, `{"type":"command","id":"f3","name":"fork"}`)
	r := reply(t, f, "f3")
	assert.Equal(t, "error", r["type"])
	assert.Equal(t, CodeForkLimit, r["code"])
	assert.Contains(t, r["message"], "3 forks")
	assert.Contains(t, r["message"], "--max-forks")

	// One fork is watched; the others were left. Past the grace period a
	// new fork takes the place of the oldest unwatched one, never of the
	// watched one.
	own := ts.dial("session="+forks[0], nil)
	readUntil(t, own, "snapshot", "")
	eventually(t, 5*time.Second, func() bool {
		s, ok := ts.srv.Session(forks[0])
		return ok && s.Viewers() == 1
	}, "the fork's viewer registered")
	for _, id := range forks[1:] {
		s, ok := ts.srv.Session(id)
		require.True(t, ok)
		s.active.Store(time.Now().Add(-forkGrace - time.Second).UnixNano())
	}
	older, _ := ts.srv.Session(forks[1])
	older.active.Add(-int64(time.Second))
	require.Nil(t, ts.srv.reserveFork(time.Now()))
	ts.srv.sessions.releaseFork()
	_, ok := ts.srv.Session(forks[1])
	assert.False(t, ok, "the oldest unwatched fork gave its place")
	_, ok = ts.srv.Session(forks[2])
	assert.True(t, ok, "one place was enough")
	_, ok = ts.srv.Session(forks[0])
	assert.True(t, ok, "a watched fork is never taken")

	// Unwatched forks end after ForkIdleTimeout, sooner than sessions.
	s2, _ := ts.srv.Session(forks[2])
	assert.Equal(t, ts.srv.cfg.ForkIdleTimeout, ts.srv.idleTimeout(s2))
	assert.Less(t, ts.srv.cfg.ForkIdleTimeout, ts.srv.cfg.IdleTimeout)
	assert.Equal(t, 1, ts.srv.reapIdle(time.Now().Add(ts.srv.cfg.ForkIdleTimeout+time.Second)), "the unwatched fork is reaped; the watched one and the classroom (watched by f) stay")
	running, _ = ts.srv.ForkStats()
	assert.Equal(t, 1, running)
}
