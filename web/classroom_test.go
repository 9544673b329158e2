package web

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newRealServer runs a Server with the real engine (forks and time travel
// replay real Steppers).
func newRealServer(t *testing.T, mod func(*Config)) *testServer {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := Config{DataDir: t.TempDir(), Engines: NewEngine(logger), Logger: logger}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := New(cfg)
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	ts := &testServer{t: t, srv: srv, hs: hs}
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		require.NoError(t, srv.Close())
	})
	return ts
}

// createClassroom posts body to /api/classrooms and decodes the answer.
func (ts *testServer) createClassroom(body string, header http.Header) (int, map[string]any) {
	ts.t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.hs.URL+"/api/classrooms", strings.NewReader(body))
	require.NoError(ts.t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(ts.t, err)
	defer resp.Body.Close()
	var m map[string]any
	require.NoError(ts.t, json.NewDecoder(resp.Body).Decode(&m))
	return resp.StatusCode, m
}

// openError dials query and returns the opening error message.
func openError(t *testing.T, ts *testServer, query string) msg {
	t.Helper()
	c := ts.dial(query, nil)
	m := readMsg(t, c)
	require.Equal(t, "error", m["type"], "opening %s", query)
	return m
}

// untilEvent reads until an events frame has an event matching pred.
func untilEvent(t *testing.T, c *websocket.Conn, what string, pred func(map[string]any) bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // generous: decides only how long a failure takes
	for time.Now().Before(deadline) {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
		var m msg
		require.NoError(t, c.ReadJSON(&m), "waiting for %s", what)
		if m["type"] != "events" {
			continue
		}
		for _, e := range m["events"].([]any) {
			if pred(e.(map[string]any)) {
				return
			}
		}
	}
	t.Fatalf("no event: %s", what)
}

// untilAck sends a command (name and args, as JSON) until it is acked:
// the engine refuses some commands while subtasks are not running yet.
func untilAck(t *testing.T, c *websocket.Conn, nameArgs string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // generous: decides only how long a failure takes
	for i := 0; ; i++ {
		id := fmt.Sprintf("u%d", i)
		send(t, c, `{"type":"command","id":"`+id+`","name":`+nameArgs+`}`)
		r := reply(t, c, id)
		if r["type"] == "ack" {
			return
		}
		require.Equal(t, CodeRefused, r["code"], "%v", r)
		require.True(t, time.Now().Before(deadline), "never acked: %v", r)
		time.Sleep(200 * time.Millisecond) // the retry's pace, not a wait for anything
	}
}

func TestClassroomContract(t *testing.T) {
	ts := newRealServer(t, nil)
	status, info := ts.createClassroom(`{"template":"wordcount"}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", info)
	code, _ := info["code"].(string)
	token, _ := info["presenterToken"].(string)
	require.Len(t, code, 6)
	assert.Equal(t, code, NormalizeCode(strings.ToLower(code)), "codes are read case-insensitively")
	for _, r := range code {
		assert.NotContains(t, "01ILO", string(r), "no ambiguous characters")
	}
	assert.Len(t, token, 43, "32 random bytes, base64url")
	assert.Equal(t, ts.hs.URL+"/classroom/"+code+"?token="+token, info["presenterURL"])
	assert.Equal(t, ts.hs.URL+"/join/"+code, info["joinURL"])

	presenter := ts.dial("classroom="+code+"&token="+token, nil)
	first := readUntil(t, presenter, "snapshot", "")
	sid := first["session"].(string)
	assert.Equal(t, info["session"], sid)
	f1 := ts.dial("classroom="+code, nil)
	f2 := ts.dial("classroom="+strings.ToLower(code), nil)
	for _, f := range []*websocket.Conn{f1, f2} {
		m := readUntil(t, f, "snapshot", "")
		assert.Equal(t, sid, m["session"], "followers see the presenter's session")
		tl := readUntil(t, f, "timeline", "")
		assert.Equal(t, true, tl["replayable"])
	}

	// A follower's control command is refused, whatever it is.
	for i, cmd := range []string{
		`{"type":"command","id":"x1","name":"crash-taskmanager","args":{"taskManager":"tm-1"}}`,
		`{"type":"command","id":"x2","name":"pause"}`,
		`{"type":"command","id":"x3","name":"seek","args":{"step":1}}`,
		`{"type":"command","id":"x4","name":"reset"}`,
	} {
		send(t, f1, cmd)
		e := reply(t, f1, "x"+string(rune('1'+i)))
		assert.Equal(t, "error", e["type"])
		assert.Equal(t, CodeForbidden, e["code"])
		assert.Contains(t, e["message"], "follows the session and cannot control it")
	}

	// The presenter crashes a TaskManager; both followers see it.
	send(t, presenter, `{"type":"command","id":"p1","name":"crash-taskmanager","args":{"taskManager":"tm-1"}}`)
	assert.Equal(t, "ack", reply(t, presenter, "p1")["type"])
	for _, f := range []*websocket.Conn{f1, f2} {
		untilEvent(t, f, "tm-1 lost", func(e map[string]any) bool { return e["kind"] == "taskmanager" && e["status"] == "LOST" })
	}

	// A follower cannot become a controller through the session id.
	f3 := ts.dial("session="+sid, nil)
	readUntil(t, f3, "snapshot", "")
	send(t, f3, `{"type":"command","id":"y1","name":"restart-taskmanager","args":{"taskManager":"tm-1"}}`)
	assert.Equal(t, CodeForbidden, reply(t, f3, "y1")["code"])

	// Opening errors: a wrong token, an unknown code.
	e := openError(t, ts, "classroom="+code+"&token=not-the-token")
	assert.Equal(t, CodeForbidden, e["code"])
	assert.Contains(t, e["message"], "/join/"+code)
	e = openError(t, ts, "classroom=ZZZZZZ")
	assert.Equal(t, CodeUnknownRoom, e["code"])

	// A follower forks: the ack names a new session at the presenter's step,
	// which the follower controls.
	send(t, presenter, `{"type":"command","id":"p2","name":"restart-taskmanager","args":{"taskManager":"tm-1"}}`)
	assert.Equal(t, "ack", reply(t, presenter, "p2")["type"])
	send(t, f2, `{"type":"command","id":"k1","name":"fork"}`)
	ack := reply(t, f2, "k1")
	require.Equal(t, "ack", ack["type"], "%v", ack)
	fork, _ := ack["session"].(string)
	require.NotEmpty(t, fork)
	require.NotEqual(t, sid, fork)
	step := int64(ack["step"].(float64))
	assert.Positive(t, step)
	own := ts.dial("session="+fork, nil)
	snap := readUntil(t, own, "snapshot", "")
	assert.Equal(t, fork, snap["session"])
	assert.GreaterOrEqual(t, int64(snap["step"].(float64)), step, "the fork starts where the presenter was")
	cmds := snap["commands"].([]any)
	require.GreaterOrEqual(t, len(cmds), 2, "the fork carries the presenter's command log")
	assert.Equal(t, "crash-taskmanager", cmds[0].(map[string]any)["command"].(map[string]any)["name"])
	// The fork may start while subtasks redeploy after the restart: a
	// rescale waits for every subtask to run, so try until it is taken.
	untilAck(t, own, `"rescale","args":{"operator":"count","parallelism":3}`)
	s, ok := ts.srv.Session(sid)
	require.True(t, ok)
	op := s.Snapshot().Job.Operators[2]
	assert.Equal(t, "count", op.ID)
	assert.Equal(t, 2, op.Parallelism, "the presenter's run is untouched")
}

func TestClassroomCapsAndOrigin(t *testing.T) {
	ts := newRealServer(t, func(c *Config) { c.MaxFollowers = 2; c.MaxClassrooms = 1 })
	status, info := ts.createClassroom("", nil)
	require.Equal(t, http.StatusCreated, status, "%v", info)
	code := info["code"].(string)
	a := ts.dial("classroom="+code, nil)
	readUntil(t, a, "snapshot", "")
	b := ts.dial("classroom="+code, nil)
	readUntil(t, b, "snapshot", "")
	e := openError(t, ts, "classroom="+code)
	assert.Equal(t, CodeRoomFull, e["code"])
	// A follower leaving frees a place.
	require.NoError(t, a.Close())
	eventually(t, 5*time.Second, func() bool {
		c, _, err := websocket.DefaultDialer.Dial(ts.wsURL("classroom="+code), nil)
		if err != nil {
			return false
		}
		defer c.Close()
		var m msg
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		return c.ReadJSON(&m) == nil && m["type"] == "snapshot"
	}, "a free place after a follower left")

	status, m := ts.createClassroom(`{"template":"clicks"}`, nil)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Equal(t, CodeSessionLimit, m["code"])

	status, m = ts.createClassroom(`{"template":"nope"}`, nil)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, CodeUnknownJob, m["code"])
	status, m = ts.createClassroom(`{"template":"wordcount","tempalte":"x"}`, nil)
	assert.Equal(t, http.StatusBadRequest, status, "unknown fields are refused: %v", m)

	status, m = ts.createClassroom(`{}`, http.Header{"Origin": {"http://evil.example"}})
	assert.Equal(t, http.StatusForbidden, status)
	assert.Equal(t, CodeForbidden, m["code"])
}

func TestPresenterTokenCheck(t *testing.T) {
	c := &classroom{}
	c.tokenHash = sha256Of("s3cret-token")
	assert.True(t, c.checkToken("s3cret-token"))
	for _, bad := range []string{"", "s3cret-toke", "s3cret-token ", "S3CRET-TOKEN", strings.Repeat("x", 1000)} {
		assert.False(t, c.checkToken(bad), "%q", bad)
	}
}

func TestJoinCodes(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		c := randomCode()
		require.Len(t, c, codeLen)
		require.Equal(t, c, NormalizeCode(c))
		seen[c] = true
	}
	assert.Greater(t, len(seen), 195, "codes are random")
	tests := map[string]string{"k7qx4m": "K7QX4M", " K7Q-X4M ": "K7QX4M", "K7QX4": "", "K7QX40": "", "K7QXIM": "", "../etc": ""}
	for in, want := range tests {
		assert.Equal(t, want, NormalizeCode(in), "%q", in)
	}
}

func TestClassroomPages(t *testing.T) {
	ts := newRealServer(t, nil)
	_, info := ts.createClassroom(`{"template":"article"}`, nil)
	code, token := info["code"].(string), info["presenterToken"].(string)
	get := func(path string) (int, string, http.Header) {
		resp, err := http.Get(ts.hs.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	st, body, _ := get("/classroom/" + code + "?token=" + token + "&lang=en")
	assert.Equal(t, http.StatusOK, st)
	assert.Contains(t, body, `data-role="presenter"`)
	assert.Contains(t, body, ts.hs.URL+"/join/"+code)
	assert.Contains(t, body, "/static/js/classroom.js")
	st, body, _ = get("/classroom/" + code + "?token=wrong&lang=en")
	assert.Equal(t, http.StatusForbidden, st)
	assert.NotContains(t, body, token)
	st, body, _ = get("/join/" + strings.ToLower(code) + "?lang=en")
	assert.Equal(t, http.StatusOK, st)
	assert.Contains(t, body, `data-role="follower"`)
	assert.NotContains(t, body, token, "the follower page never carries the token")
	st, _, _ = get("/join/ABCDEF")
	assert.Equal(t, http.StatusNotFound, st)
	st, svg, h := get("/join/" + code + "/qr.svg")
	assert.Equal(t, http.StatusOK, st)
	assert.Equal(t, "image/svg+xml", h.Get("Content-Type"))
	assert.True(t, strings.HasPrefix(svg, "<svg"))
	assert.Equal(t, "DENY", h.Get("X-Frame-Options"))
	assert.Contains(t, h.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	st, _, _ = get("/classroom?lang=zh")
	assert.Equal(t, http.StatusOK, st)
	// A typed code goes to its page.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(ts.hs.URL + "/join?code=" + strings.ToLower(code))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "/join/"+code, resp.Header.Get("Location"))
	// The start form creates a classroom and sends the presenter to it.
	resp, err = client.PostForm(ts.hs.URL+"/classroom", map[string][]string{"template": {"clicks"}, "seed": {"4"}})
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Regexp(t, `^/classroom/[2-9A-Z]{6}\?token=[\w-]{43}$`, resp.Header.Get("Location"))
	// The public status has the follower count, not the token.
	st, body, _ = get("/api/classrooms/" + code)
	assert.Equal(t, http.StatusOK, st)
	assert.Contains(t, body, `"followers":0`)
	assert.NotContains(t, body, token)
}
