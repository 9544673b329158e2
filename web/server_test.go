package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

func TestSnapshotFirstWithTheIssuesShape(t *testing.T) {
	ts := newTestServer(t, nil)
	c := ts.dial("template=wordcount", nil)
	m := readMsg(t, c)
	require.Equal(t, "snapshot", m["type"])
	assert.EqualValues(t, 1, m["v"])
	id, _ := m["session"].(string)
	require.NotEmpty(t, id)
	assert.Equal(t, "wordcount", m["template"])
	ops := m["job"].(map[string]any)["operators"].([]any)
	count := ops[1].(map[string]any)
	assert.Equal(t, "count", count["id"])
	assert.EqualValues(t, 2, count["parallelism"])
	assert.EqualValues(t, 128, count["maxParallelism"])
	st0 := count["subtasks"].([]any)[0].(map[string]any)
	assert.EqualValues(t, 0, st0["index"])
	assert.Equal(t, "RUNNING", st0["status"])
	assert.Equal(t, "tm-1", st0["taskManager"])
	assert.Equal(t, map[string]any{"start": 0.0, "end": 63.0}, st0["keyGroups"])

	// The template's settings reached the engine's spec.
	require.Equal(t, 1, ts.f.count())
	run := ts.f.runs[0]
	assert.Equal(t, DriverStepper, run.Driver)
	p, _ := run.Spec.Operator("count")
	assert.Equal(t, 2, p.Parallelism)

	// A second viewer joins the same session and gets its own snapshot.
	c2 := ts.dial("session="+id, nil)
	m2 := readMsg(t, c2)
	assert.Equal(t, "snapshot", m2["type"])
	assert.Equal(t, id, m2["session"])
	assert.Equal(t, 1, ts.f.count(), "joining must not start another engine")
	eventually(t, time.Second, func() bool { s, _ := ts.srv.Session(id); return s.Viewers() == 2 }, "two viewers")
}

func TestSandboxSettingsFromQuery(t *testing.T) {
	ts := newTestServer(t, nil)
	c := ts.dial("template=wordcount&backend=pebble&p.count=3&p.source=1&interval=500ms&taskManagers=3&slots=1&seed=99&keys=10000&driver=step&sink=at-least-once", nil)
	readUntil(t, c, "snapshot", "")
	run := ts.f.runs[0]
	s := run.Spec
	assert.Equal(t, engine.BackendPebble, s.Backend)
	assert.Equal(t, int64(99), s.Seed)
	assert.Equal(t, 500*time.Millisecond, s.Checkpointing.Interval.D())
	assert.Equal(t, 3, s.Cluster.TaskManagers)
	assert.Equal(t, 1, s.Cluster.SlotsPerTaskManager)
	cnt, _ := s.Operator("count")
	assert.Equal(t, 3, cnt.Parallelism)
	assert.Equal(t, 128, cnt.MaxParallelism, "Flink's default for parallelism 3")
	src, _ := s.Operator("source")
	assert.Equal(t, 1, src.Parallelism)
	assert.EqualValues(t, 10000, src.Options["keys"])
	sink, _ := s.Operator("sink")
	assert.Equal(t, "at-least-once", sink.Options["semantics"])
	// source (1) -> tokenizer (2) cannot stay forward.
	assert.Equal(t, engine.Rebalance, s.Edges[0].Partitioner)
}

func TestOpeningErrorsAreMessages(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.MaxSessions = 1 })
	tests := []struct {
		query, code, text string
	}{
		{"", CodeBadArgs, "/ws?template=ID"},
		{"template=nope", CodeUnknownJob, "wordcount, clicks, article"},
		{"session=doesnotexist", CodeUnknownSession, "open a new sandbox"},
		{"template=wordcount&backend=rocks", CodeBadArgs, "memory, fs or pebble"},
		{"template=wordcount&p.count=99", CodeBadArgs, "p.count"},
		{"template=wordcount&interval=soon", CodeBadArgs, "2s or 500ms"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			c := ts.dial(tt.query, nil)
			m := readMsg(t, c)
			assert.Equal(t, "error", m["type"])
			assert.Equal(t, tt.code, m["code"])
			assert.Contains(t, m["message"], tt.text)
			_, _, err := c.ReadMessage()
			var ce *websocket.CloseError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, websocket.ClosePolicyViolation, ce.Code)
		})
	}
	// The cap: one session runs, the next is refused with a reason.
	c1 := ts.dial("template=wordcount", nil)
	readUntil(t, c1, "snapshot", "")
	c2 := ts.dial("template=clicks", nil)
	m := readMsg(t, c2)
	assert.Equal(t, CodeSessionLimit, m["code"])
	assert.Contains(t, m["message"], "its limit")
}

func TestCommandsAckErrorAndTheConnectionSurvives(t *testing.T) {
	ts := newTestServer(t, nil)
	c := ts.dial("template=wordcount", nil)
	readUntil(t, c, "snapshot", "")
	eng := ts.f.engine(0)

	send(t, c, `{"type":"command","id":"c1","name":"rescale","args":{"operator":"count","parallelism":3}}`)
	assert.Equal(t, msg{"type": "ack", "id": "c1"}, reply(t, c, "c1"))

	// Above the max parallelism: the engine sees it (and refuses it, as the
	// real one does, logging the refusal a lesson's check reads); the reply
	// is the protocol's, which names the range to choose from.
	eng.mu.Lock()
	eng.applyErr = fmt.Errorf("%w: parallelism 200 is above max parallelism 128", engine.ErrRescale)
	eng.mu.Unlock()
	send(t, c, `{"type":"command","id":"c2","name":"rescale","args":{"operator":"count","parallelism":200}}`)
	e := reply(t, c, "c2")
	assert.Equal(t, "error", e["type"])
	assert.Equal(t, CodeBadArgs, e["code"])
	assert.Contains(t, e["message"], "above the max parallelism 128")
	assert.Contains(t, e["message"], "choose 1 to 128")
	eng.mu.Lock()
	eng.applyErr = nil
	eng.mu.Unlock()

	send(t, c, `{"type":"command","id":"c3","name":"frobnicate"}`)
	e = reply(t, c, "c3")
	assert.Equal(t, CodeUnknownCommand, e["code"])

	send(t, c, `{"type":"command", oops`)
	e = readUntil(t, c, "error", "")
	assert.Equal(t, CodeBadJSON, e["code"])
	assert.Equal(t, "", e["id"])

	require.NoError(t, c.WriteMessage(websocket.BinaryMessage, []byte{1, 2, 3}))
	e = readUntil(t, c, "error", "")
	assert.Equal(t, CodeBadMessage, e["code"])

	// Engine refusal keeps its words and gets the refused code.
	eng.mu.Lock()
	eng.applyErr = fmt.Errorf("%w: %w: tm-1 is already lost; restart it first", ErrRefused, engine.ErrBadCommand)
	eng.mu.Unlock()
	send(t, c, `{"type":"command","id":"c4","name":"crash-taskmanager","args":{"taskManager":"tm-1"}}`)
	e = reply(t, c, "c4")
	assert.Equal(t, CodeRefused, e["code"])
	assert.Contains(t, e["message"], "restart it first")
	eng.mu.Lock()
	eng.applyErr = nil
	eng.mu.Unlock()

	// Still working after all that.
	send(t, c, `{"type":"command","id":"c5","name":"crash-subtask","args":{"operator":"count","index":1}}`)
	assert.Equal(t, "ack", reply(t, c, "c5")["type"])
	send(t, c, `{"type":"command","id":"c6","name":"trigger-checkpoint"}`)
	assert.Equal(t, "ack", reply(t, c, "c6")["type"])

	got := eng.commands()
	require.Len(t, got, 5)
	assert.Equal(t, Command{Name: "rescale", Operator: "count", Parallelism: 3}, got[0])
	assert.Equal(t, Command{Name: "rescale", Operator: "count", Parallelism: 200}, got[1])
	assert.Equal(t, Command{Name: "crash-subtask", Operator: "count", Index: 1}, got[3])
	assert.Equal(t, "trigger-checkpoint", got[4].Name)

	// snapshot: a snapshot message, then the ack.
	send(t, c, `{"type":"command","id":"c7","name":"snapshot"}`)
	readUntil(t, c, "snapshot", "")
	assert.Equal(t, "ack", reply(t, c, "c7")["type"])

	// Driver controls reach the engine and show in the next snapshot.
	send(t, c, `{"type":"command","id":"c8","name":"speed","args":{"factor":4}}`)
	assert.Equal(t, "ack", reply(t, c, "c8")["type"])
	send(t, c, `{"type":"command","id":"c9","name":"step","args":{"count":3}}`)
	assert.Equal(t, "ack", reply(t, c, "c9")["type"])
	eng.mu.Lock()
	assert.Equal(t, 3, eng.steps)
	assert.InDelta(t, 4.0, eng.speed, 1e-9)
	eng.mu.Unlock()
}

func TestReset(t *testing.T) {
	ts := newTestServer(t, nil)
	a := ts.dial("template=wordcount&seed=5", nil)
	first := readUntil(t, a, "snapshot", "")
	b := ts.dial("session="+first["session"].(string), nil)
	readUntil(t, b, "snapshot", "")

	send(t, a, `{"type":"command","id":"r1","name":"reset","args":{"seed":42}}`)
	// Both viewers get a snapshot of the new run.
	for _, c := range []*websocket.Conn{a, b} {
		for {
			m := readUntil(t, c, "snapshot", "")
			if m["seed"] == 42.0 {
				assert.Equal(t, first["session"], m["session"])
				break
			}
		}
	}
	assert.Equal(t, "ack", reply(t, a, "r1")["type"])
	require.Equal(t, 2, ts.f.count())
	assert.True(t, ts.f.engine(0).isClosed(), "the old run is closed")
	assert.Equal(t, int64(42), ts.f.runs[1].Spec.Seed)
	assert.Equal(t, int64(5), ts.f.runs[0].Spec.Seed, "the first run's spec is untouched")

	// Events of the new engine reach the viewers.
	eventually(t, time.Second, func() bool { return ts.f.engine(1).subscribers() == 1 }, "the pump to subscribe to the new engine")
	ts.f.engine(1).publish(engine.Event{Kind: engine.EvTaskStatus, Task: "count#0", Status: "FAILED"})
	ev := readUntil(t, b, "events", "")
	assert.Equal(t, "task-status", ev["events"].([]any)[0].(map[string]any)["kind"])
}

func TestEventsAreCoalescedAndPaced(t *testing.T) {
	ts := newTestServer(t, nil)
	c := ts.dial("template=wordcount", nil)
	readUntil(t, c, "snapshot", "")
	eng := ts.f.engine(0)
	eventually(t, time.Second, func() bool { return eng.subscribers() == 1 }, "subscription")

	// 40 records events per 10ms for one second: 4,000 events, 40,000 records.
	const rounds, per = 100, 40
	done := make(chan struct{})
	go func() {
		defer close(done)
		for r := 0; r < rounds; r++ {
			for i := 0; i < per; i++ {
				eng.publish(engine.Event{Kind: engine.EvRecordsSent, Channel: "source#0->count#1", Records: 10})
			}
			if r == rounds/2 {
				eng.publish(engine.Event{Kind: engine.EvBarrierSent, Channel: "source#0->count#1", Checkpoint: 1})
			}
			// The input's own pace: 40 events every 10 ms for about a
			// second (longer on a busy machine; the bound below follows
			// the time it really took).
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var (
		frames, records, barriers int
		start                     = time.Now()
		last                      time.Time
	)
	for records < rounds*per*10 {
		m := readMsg(t, c)
		if m["type"] != "events" {
			continue
		}
		frames++
		last = time.Now()
		for _, e := range m["events"].([]any) {
			ev := e.(map[string]any)
			switch ev["kind"] {
			case "records-sent":
				records += int(ev["records"].(float64))
			case "barrier-sent":
				barriers++
				assert.Less(t, records, rounds*per*10, "the barrier comes before the records sent after it")
			}
		}
	}
	<-done
	assert.Equal(t, rounds*per*10, records, "coalescing keeps every record")
	assert.Equal(t, 1, barriers)
	// At most one frame per FrameInterval (50 ms) over the time the frames
	// really took, plus the first: the bound follows a slow machine.
	paced := int(last.Sub(start)/(50*time.Millisecond)) + 2
	assert.LessOrEqual(t, frames, paced, "frames are paced to at most 20 per second over %s", last.Sub(start))
	assert.Greater(t, frames, 3)
}

func TestSlowClientIsDroppedOthersContinue(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.SendBuffer = 4; c.FrameInterval = 5 * time.Millisecond })
	fast := ts.dial("template=wordcount", nil)
	id := readUntil(t, fast, "snapshot", "")["session"].(string)

	// The slow client never reads; with a tiny socket buffer its writer
	// blocks and its send buffer fills.
	d := websocket.Dialer{ReadBufferSize: 1024, WriteBufferSize: 1024}
	slow, resp, err := d.Dial(ts.wsURL("session="+id), nil)
	require.NoError(t, err)
	resp.Body.Close()
	defer slow.Close()
	eventually(t, time.Second, func() bool { return ts.srv.Stats().Clients == 2 }, "two clients")
	eng := ts.f.engine(0)
	eventually(t, time.Second, func() bool { return eng.subscribers() == 1 }, "subscription")

	big := strings.Repeat("x", 64<<10)
	stop := make(chan struct{})
	defer close(stop)
	sawAfter := make(chan struct{})
	// read gets a token each time the fast client has read an events frame:
	// the publisher below waits for it, so the fast client is never more
	// than a frame behind and only the slow one can fill its send buffer.
	// (Without this pacing a fast client slowed by -race on a busy machine
	// could be the one dropped, and then never read "after".)
	read := make(chan struct{}, 1)
	go func() { // the fast client keeps reading
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = fast.SetReadDeadline(time.Now().Add(time.Minute))
			var m msg
			if err := fast.ReadJSON(&m); err != nil {
				return
			}
			if m["type"] != "events" {
				continue
			}
			select {
			case read <- struct{}{}:
			default:
			}
			for _, e := range m["events"].([]any) {
				if e.(map[string]any)["message"] == "after" {
					close(sawAfter)
					return
				}
			}
		}
	}()
	// Generous: on a loaded 2-core machine the kernel's loopback buffers
	// take a while to fill.
	deadline := time.Now().Add(2 * time.Minute)
	for ts.srv.Stats().DroppedClients == 0 && time.Now().Before(deadline) {
		eng.publish(engine.Event{Kind: engine.EvCommand, Message: big})
		select { // the fast client's pace
		case <-read:
		case <-time.After(5 * time.Second):
		}
	}
	require.EqualValues(t, 1, ts.srv.Stats().DroppedClients, "the slow client is dropped")
	require.Equal(t, 1, ts.srv.Stats().Clients, "the fast client is still connected")
	// The fast one still gets events after the drop: publish until it has
	// read one of them.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(2 * time.Minute)
	for seen := false; !seen; {
		eng.publish(engine.Event{Kind: engine.EvCommand, Message: "after"})
		select {
		case <-sawAfter:
			seen = true
		case <-tick.C:
		case <-timeout:
			t.Fatal("the fast client read no event after the slow one was dropped")
		}
	}
	assert.Equal(t, 1, ts.srv.Stats().Clients)
}

func TestOriginCheck(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.AllowOrigins = []string{"http://teacher.example:3000"} })
	tests := []struct {
		origin string
		ok     bool
	}{
		{"", true},
		{ts.hs.URL, true},
		{"http://teacher.example:3000", true},
		{"http://evil.example", false},
		{"null", false},
	}
	for _, tt := range tests {
		t.Run(tt.origin, func(t *testing.T) {
			h := http.Header{}
			if tt.origin != "" {
				h.Set("Origin", tt.origin)
			}
			c, resp, err := websocket.DefaultDialer.Dial(ts.wsURL("template=wordcount"), h)
			if tt.ok {
				require.NoError(t, err)
				c.Close()
				return
			}
			require.Error(t, err)
			require.NotNil(t, resp)
			assert.Equal(t, http.StatusForbidden, resp.StatusCode)
			resp.Body.Close()
		})
	}
}

func TestReadLimit(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.ReadLimit = 1024 })
	c := ts.dial("template=wordcount", nil)
	readUntil(t, c, "snapshot", "")
	send(t, c, `{"type":"command","id":"big","name":"inject","args":{"text":"`+strings.Repeat("a", 2000)+`"}}`)
	for {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _, err := c.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, websocket.CloseMessageTooBig, ce.Code)
			break
		}
	}
	// The session lives on for others.
	assert.Equal(t, 1, ts.srv.Stats().Sessions)
}

func TestIdleSessionsAreReaped(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
	c := ts.dial("template=wordcount", nil)
	id := readUntil(t, c, "snapshot", "")["session"].(string)
	// Let more than two idle timeouts pass: a reaper that ignored the
	// viewer would end the session meanwhile. A slow machine only makes
	// this check stricter.
	time.Sleep(250 * time.Millisecond)
	_, ok := ts.srv.Session(id)
	require.True(t, ok, "a watched session is never reaped")
	c.Close()
	eventually(t, 2*time.Second, func() bool { _, ok := ts.srv.Session(id); return !ok }, "the idle session to end")
	// The table forgets the session first, then closes it.
	eventually(t, 2*time.Second, ts.f.engine(0).isClosed, "the idle session's engine to close")
}

func TestFollowerMayNotControl(t *testing.T) {
	ts := newTestServer(t, nil)
	s, pe := ts.srv.openSession(map[string][]string{"template": {"wordcount"}})
	require.Nil(t, pe)
	c := &client{send: make(chan []byte, 16), session: s, role: RoleFollower}
	// Register directly, as a classroom would for a follower.
	require.True(t, ts.srv.hub.register(c, s, nil))
	s.handle(c, []byte(`{"type":"command","id":"f1","name":"crash-subtask","args":{"operator":"count","index":0}}`))
	var e errorMsg
	for m := range c.send {
		if strings.Contains(string(m), `"f1"`) {
			require.NoError(t, json.Unmarshal(m, &e))
			break
		}
	}
	assert.Equal(t, CodeForbidden, e.Code)
	assert.Empty(t, ts.f.engine(0).commands())
	ts.srv.hub.unregister(c)
}

func TestSecurityHeadersAndPages(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, path := range []string{"/", "/sandbox", "/sandbox/live?template=wordcount", "/lessons", "/classroom", "/static/css/app.css", "/static/js/live.js", "/nope"} {
		for _, lang := range []string{"en", "zh"} {
			t.Run(path+" "+lang, func(t *testing.T) {
				sep := "?"
				if strings.Contains(path, "?") {
					sep = "&"
				}
				resp, err := http.Get(ts.hs.URL + path + sep + "lang=" + lang)
				require.NoError(t, err)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if path == "/nope" {
					assert.Equal(t, http.StatusNotFound, resp.StatusCode)
				} else {
					assert.Equal(t, http.StatusOK, resp.StatusCode, string(body))
				}
				csp := resp.Header.Get("Content-Security-Policy")
				assert.Contains(t, csp, "script-src 'self'")
				assert.Contains(t, csp, "frame-ancestors 'none'")
				assert.NotContains(t, csp, "unsafe-inline")
				assert.NotContains(t, csp, "unsafe-eval")
				assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
				assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
				if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
					html := string(body)
					assert.NotContains(t, html, "<script>", "no inline script")
					assert.NotContains(t, html, " style=", "no inline style")
					assert.Contains(t, html, `<html lang="`+lang+`"`)
				}
			})
		}
	}
}

func TestStaticModulesAreJavaScript(t *testing.T) {
	ts := newTestServer(t, nil)
	resp, err := http.Get(ts.hs.URL + "/static/js/live.js")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Contains(t, resp.Header.Get("Content-Type"), "javascript")
	etag := resp.Header.Get("ETag")
	require.NotEmpty(t, etag)
	req, _ := http.NewRequest("GET", ts.hs.URL+"/static/js/live.js", nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotModified, resp.StatusCode)
	for _, p := range []string{"/static/static.go", "/static/../web/server.go", "/static/js/"} {
		resp, err = http.Get(ts.hs.URL + p)
		require.NoError(t, err)
		resp.Body.Close()
		assert.NotEqual(t, http.StatusOK, resp.StatusCode, p)
	}
}

func TestCloseEndsSessionsEnginesAndConnections(t *testing.T) {
	ts := newTestServer(t, nil)
	c := ts.dial("template=wordcount", nil)
	readUntil(t, c, "snapshot", "")
	c2 := ts.dial("template=clicks", nil)
	readUntil(t, c2, "snapshot", "")
	require.NoError(t, ts.srv.Close())
	assert.True(t, ts.f.engine(0).isClosed())
	assert.True(t, ts.f.engine(1).isClosed())
	assert.Equal(t, 0, ts.srv.Stats().Sessions)
	for _, conn := range []*websocket.Conn{c, c2} {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		var err error
		for err == nil {
			_, _, err = conn.ReadMessage()
		}
		var ce *websocket.CloseError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, websocket.CloseGoingAway, ce.Code)
	}
	require.NoError(t, ts.srv.Close(), "Close twice is fine")
}

func TestCommandRateLimit(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.CommandRate = 0.5; c.CommandBurst = 2 })
	c := ts.dial("template=wordcount", nil)
	readUntil(t, c, "snapshot", "")
	for i := 1; i <= 3; i++ {
		send(t, c, fmt.Sprintf(`{"type":"command","id":"r%d","name":"trigger-checkpoint"}`, i))
	}
	assert.Equal(t, "ack", reply(t, c, "r1")["type"])
	assert.Equal(t, "ack", reply(t, c, "r2")["type"])
	e := reply(t, c, "r3")
	assert.Equal(t, CodeRefused, e["code"])
	assert.Contains(t, e["message"], "too many commands")
	assert.Len(t, ts.f.engine(0).commands(), 2, "the refused command never reached the engine")
}
