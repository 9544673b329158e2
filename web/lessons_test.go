package web

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/lessons"
)

// Protocol tests of lesson sessions, with a Go WebSocket client on the
// real engine (lesson sessions always run the real Stepper).

// lessonClient is one connection to a lesson session.
type lessonClient struct {
	t    *testing.T
	c    *websocket.Conn
	next int
	// ticks are the steps seen done, in the order they were done.
	ticks []int
	last  msg // the newest lesson message
}

func dialLesson(t *testing.T, ts *testServer, query string) *lessonClient {
	t.Helper()
	lc := &lessonClient{t: t, c: ts.dial(query, nil)}
	m := lc.read(10 * time.Second)
	require.Equal(t, "snapshot", m["type"], "the first message is the snapshot: %v", m)
	return lc
}

// read returns the next message; lesson messages also update ticks/last.
func (lc *lessonClient) read(d time.Duration) msg {
	lc.t.Helper()
	require.NoError(lc.t, lc.c.SetReadDeadline(time.Now().Add(d)))
	var m msg
	require.NoError(lc.t, lc.c.ReadJSON(&m), "no message within %s; the last lesson message was %v", d, lc.last)
	if m["type"] == "lesson" {
		// A step done before this client joined shows in completed only.
		for _, step := range intsOf(m["completed"]) {
			if !slices.Contains(lc.ticks, step) {
				lc.ticks = append(lc.ticks, step)
			}
		}
		lc.last = m
	}
	return m
}

// command sends a command and returns its reply (ack or error), reading
// every message before it.
func (lc *lessonClient) command(name string, args any) msg {
	lc.t.Helper()
	lc.next++
	id := fmt.Sprintf("c%d", lc.next)
	body := map[string]any{"type": "command", "id": id, "name": name}
	if args != nil {
		body["args"] = args
	}
	require.NoError(lc.t, lc.c.WriteJSON(body))
	for {
		m := lc.read(30 * time.Second)
		if (m["type"] == "ack" || m["type"] == "error") && m["id"] == id {
			return m
		}
	}
}

// until reads until cond holds for the newest lesson message.
func (lc *lessonClient) until(d time.Duration, what string, cond func(m msg) bool) msg {
	lc.t.Helper()
	deadline := time.Now().Add(d)
	for lc.last == nil || !cond(lc.last) {
		left := time.Until(deadline)
		require.Positive(lc.t, left, "timed out after %s waiting for %s; last lesson message %v", d, what, lc.last)
		lc.read(left)
	}
	return lc.last
}

func intsOf(v any) []int {
	var out []int
	for _, x := range v.([]any) {
		out = append(out, int(x.(float64)))
	}
	return out
}

func course(t *testing.T) *lessons.Catalog {
	t.Helper()
	c, err := lessons.Default()
	require.NoError(t, err)
	return c
}

// TestLessonDoItForMeWalksEveryLesson plays every lesson in a web session,
// step by step with "do it for me", and sees every step's tick in order:
// the web's way of performing actions and judging checks agrees with the
// headless runner's.
func TestLessonDoItForMeWalksEveryLesson(t *testing.T) {
	if testing.Short() {
		t.Skip("plays every lesson")
	}
	ts := newTestServer(t, nil)
	for _, l := range course(t).Lessons {
		t.Run(l.Slug, func(t *testing.T) {
			lc := dialLesson(t, ts, "lesson="+l.Slug)
			require.Equal(t, "ack", lc.command(CmdSpeed, map[string]any{"factor": 100})["type"])
			require.Equal(t, "ack", lc.command(CmdLessonStatus, nil)["type"])
			m := lc.until(5*time.Second, "the lesson status", func(m msg) bool { return true })
			assert.Equal(t, l.Slug, m["lesson"])
			assert.EqualValues(t, len(l.Steps), m["steps"])
			for i, st := range l.Steps {
				n := i + 1
				lc.until(60*time.Second, fmt.Sprintf("step %d to be current", n), func(m msg) bool {
					return int(m["step"].(float64)) == n || slices.Contains(lc.ticks, n)
				})
				if len(st.Actions) > 0 && !slices.Contains(lc.ticks, n) {
					r := lc.command(CmdLessonDo, map[string]any{"step": n})
					require.Equal(t, "ack", r["type"], "lesson-do step %d: %v", n, r)
				}
				lc.until(90*time.Second, fmt.Sprintf("the tick of step %d (%s)", n, st.ID), func(m msg) bool {
					require.Empty(t, m["error"], "do it for me failed")
					return slices.Contains(lc.ticks, n)
				})
			}
			m = lc.until(5*time.Second, "the finished lesson", func(m msg) bool { return m["finished"] == true })
			want := make([]int, len(l.Steps))
			for i := range want {
				want[i] = i + 1
			}
			assert.Equal(t, want, lc.ticks, "every step ticked, in order")
			assert.Equal(t, want, intsOf(m["completed"]))
		})
	}
}
