package web

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newEngineServer serves the real engine.
func newEngineServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := New(Config{DataDir: t.TempDir(), Engines: NewEngine(logger), Logger: logger})
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		require.NoError(t, srv.Close())
	})
	return srv, hs
}

func dialURL(t *testing.T, hs *httptest.Server, query string) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http")+"/ws?"+query, nil)
	require.NoError(t, err)
	resp.Body.Close()
	t.Cleanup(func() { c.Close() })
	return c
}

// waitSnapshot reads until a snapshot satisfies pred.
func waitSnapshot(t *testing.T, c *websocket.Conn, d time.Duration, what string, pred func(msg) bool) msg {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		require.NoError(t, c.SetReadDeadline(deadline))
		var m msg
		require.NoError(t, c.ReadJSON(&m), "waiting for %s", what)
		if m["type"] == "snapshot" && pred(m) {
			return m
		}
	}
	t.Fatalf("no snapshot with %s within %s", what, d)
	return nil
}

func operator(m msg, id string) map[string]any {
	for _, o := range m["job"].(map[string]any)["operators"].([]any) {
		if op := o.(map[string]any); op["id"] == id {
			return op
		}
	}
	return nil
}

func allRunning(m msg) bool {
	if m["job"].(map[string]any)["status"] != "RUNNING" {
		return false
	}
	for _, o := range m["job"].(map[string]any)["operators"].([]any) {
		for _, s := range o.(map[string]any)["subtasks"].([]any) {
			if s.(map[string]any)["status"] != "RUNNING" {
				return false
			}
		}
	}
	return true
}

func sinkCommitted(m msg) float64 {
	for _, s := range m["sinks"].([]any) {
		return s.(map[string]any)["committed"].(float64)
	}
	return 0
}

// TestRealEngineCrashAndRescale drives the Stepper through the protocol: the
// job runs, a crashed subtask is restored from a checkpoint and output
// continues, and count rescales 2 -> 3 onto Flink's key-group ranges.
func TestRealEngineCrashAndRescale(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	_, hs := newEngineServer(t)
	c := dialURL(t, hs, "template=wordcount&seed=3&interval=200ms&keys=40")
	first := readUntil(t, c, "snapshot", "")
	assert.Equal(t, "step", first["driver"])
	assert.EqualValues(t, 128, operator(first, "count")["maxParallelism"])

	send(t, c, `{"type":"command","id":"fast","name":"speed","args":{"factor":50}}`)
	require.Equal(t, "ack", reply(t, c, "fast")["type"])

	// Running, with a completed checkpoint and committed output.
	before := waitSnapshot(t, c, 60*time.Second, "a completed checkpoint and output", func(m msg) bool {
		cp := m["checkpoints"].(map[string]any)["counts"].(map[string]any)
		return allRunning(m) && cp["completed"].(float64) >= 1 && sinkCommitted(m) > 0
	})
	committed := sinkCommitted(before)

	send(t, c, `{"type":"command","id":"crash","name":"crash-subtask","args":{"operator":"count","index":1}}`)
	require.Equal(t, "ack", reply(t, c, "crash")["type"])
	restored := waitSnapshot(t, c, 60*time.Second, "a restore and running again", func(m msg) bool {
		cn := m["counters"].(map[string]any)
		return cn["restores"].(float64) >= 1 && allRunning(m)
	})
	sub := operator(restored, "count")["subtasks"].([]any)[1].(map[string]any)
	assert.Greater(t, sub["restoredFrom"].(float64), 0.0, "count#1 restored from a checkpoint")
	waitSnapshot(t, c, 60*time.Second, "output beyond the crash", func(m msg) bool { return sinkCommitted(m) > committed })

	// Two TaskManagers with one slot each cannot hold three subtasks: add one.
	send(t, c, `{"type":"command","id":"tm","name":"add-taskmanager"}`)
	require.Equal(t, "ack", reply(t, c, "tm")["type"])
	send(t, c, `{"type":"command","id":"up","name":"rescale","args":{"operator":"count","parallelism":3}}`)
	require.Equal(t, "ack", reply(t, c, "up")["type"])
	scaled := waitSnapshot(t, c, 120*time.Second, "count at parallelism 3, running", func(m msg) bool {
		return operator(m, "count")["parallelism"].(float64) == 3 && allRunning(m)
	})
	// Flink's ranges for max parallelism 128 over 3 subtasks:
	// start = ceil(i*128/3), end = floor(((i+1)*128-1)/3).
	want := [][2]float64{{0, 42}, {43, 85}, {86, 127}}
	for i, s := range operator(scaled, "count")["subtasks"].([]any) {
		kg := s.(map[string]any)["keyGroups"].(map[string]any)
		assert.Equal(t, want[i][0], kg["start"], "count#%d start", i)
		assert.Equal(t, want[i][1], kg["end"], "count#%d end", i)
	}

	send(t, c, `{"type":"command","id":"big","name":"rescale","args":{"operator":"count","parallelism":129}}`)
	e := reply(t, c, "big")
	assert.Equal(t, CodeBadArgs, e["code"])
	assert.Contains(t, e["message"], "max parallelism 128")
}

// TestRealEngineLiveAndSwitchingModes runs full speed, refuses a step there
// with a reason, and switches to teaching mode with reset.
func TestRealEngineLiveAndSwitchingModes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	_, hs := newEngineServer(t)
	c := dialURL(t, hs, "template=wordcount&seed=4&driver=live&interval=100ms")
	first := readUntil(t, c, "snapshot", "")
	assert.Equal(t, "live", first["driver"])
	waitSnapshot(t, c, 60*time.Second, "committed output at full speed", func(m msg) bool { return sinkCommitted(m) > 0 })

	send(t, c, `{"type":"command","id":"s","name":"step"}`)
	e := reply(t, c, "s")
	assert.Equal(t, CodeRefused, e["code"])
	assert.Contains(t, e["message"], "teaching mode")

	send(t, c, `{"type":"command","id":"p","name":"pause"}`)
	require.Equal(t, "ack", reply(t, c, "p")["type"])
	// The paused run's snapshot may come before the ack (reply reads past
	// it), and a paused run sends no more by itself: ask for one.
	send(t, c, `{"type":"command","id":"ps","name":"snapshot"}`)
	waitSnapshot(t, c, 30*time.Second, "paused", func(m msg) bool { return m["paused"] == true })

	send(t, c, `{"type":"command","id":"m","name":"reset","args":{"driver":"step"}}`)
	waitSnapshot(t, c, 30*time.Second, "teaching mode", func(m msg) bool { return m["driver"] == "step" && m["seed"] == 4.0 })
	assert.Equal(t, "ack", reply(t, c, "m")["type"])
}

// TestRealEngineHandsTheJobBetweenDrivers switches teaching mode -> full
// speed -> teaching mode without a reset: output carries on, exactly once.
func TestRealEngineHandsTheJobBetweenDrivers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	_, hs := newEngineServer(t)
	c := dialURL(t, hs, "template=wordcount&seed=9&interval=100ms")
	readUntil(t, c, "snapshot", "")
	send(t, c, `{"type":"command","id":"f","name":"speed","args":{"factor":20}}`)
	require.Equal(t, "ack", reply(t, c, "f")["type"])
	before := waitSnapshot(t, c, 60*time.Second, "output in teaching mode", func(m msg) bool { return sinkCommitted(m) > 0 })

	send(t, c, `{"type":"command","id":"live","name":"speed","args":{"driver":"live"}}`)
	require.Equal(t, "ack", reply(t, c, "live")["type"])
	live := waitSnapshot(t, c, 30*time.Second, "the Live driver", func(m msg) bool { return m["driver"] == "live" })
	assert.GreaterOrEqual(t, sinkCommitted(live), sinkCommitted(before), "the job carried on: nothing was reset")
	assert.EqualValues(t, 1, live["speed"], "full speed starts at real time")
	waitSnapshot(t, c, 60*time.Second, "more output at full speed", func(m msg) bool { return sinkCommitted(m) > sinkCommitted(live) })

	send(t, c, `{"type":"command","id":"back","name":"speed","args":{"driver":"step"}}`)
	require.Equal(t, "ack", reply(t, c, "back")["type"])
	back := waitSnapshot(t, c, 30*time.Second, "the Stepper again", func(m msg) bool { return m["driver"] == "step" })
	cmp := back["sinks"].([]any)[0].(map[string]any)["comparison"].(map[string]any)
	assert.EqualValues(t, 0, cmp["duplicateRecords"], "exactly once across both hand-overs")
	send(t, c, `{"type":"command","id":"s","name":"step","args":{"count":50}}`)
	assert.Equal(t, "ack", reply(t, c, "s")["type"], "teaching mode steps again")
}

// TestAddTaskManagerWithSlots: add-taskmanager's optional slots reach the
// engine — the new TaskManager offers that many, the default the cluster's.
func TestAddTaskManagerWithSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	_, hs := newEngineServer(t)
	c := dialURL(t, hs, "template=wordcount&seed=3&slots=1")
	first := readUntil(t, c, "snapshot", "")
	before := len(first["taskManagers"].([]any))

	send(t, c, `{"type":"command","id":"three","name":"add-taskmanager","args":{"slots":3}}`)
	require.Equal(t, "ack", reply(t, c, "three")["type"])
	send(t, c, `{"type":"command","id":"dflt","name":"add-taskmanager"}`)
	require.Equal(t, "ack", reply(t, c, "dflt")["type"])
	m := waitSnapshot(t, c, 30*time.Second, "two more TaskManagers", func(m msg) bool {
		return len(m["taskManagers"].([]any)) == before+2
	})
	tms := m["taskManagers"].([]any)
	assert.EqualValues(t, 3, tms[before].(map[string]any)["slots"], "the TaskManager added with slots 3")
	assert.EqualValues(t, 1, tms[before+1].(map[string]any)["slots"], "the TaskManager added without slots takes the cluster's 1")
}
