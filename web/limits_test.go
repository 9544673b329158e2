package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRescaleAndTaskManagersAreBounded: finding 1 of the security review.
// A sandbox with max parallelism 32768 could be rescaled to 32768 subtasks
// (0.7 GB), and add-taskmanager had no bound at all. Both now stop at the
// server's bound, and the refusal names it and the flag that raises it.
func TestRescaleAndTaskManagersAreBounded(t *testing.T) {
	ts := newRealServer(t, nil)
	c := ts.dial("template=wordcount&maxParallelism=32768&seed=2", nil)
	readUntil(t, c, "snapshot", "")
	send(t, c, `{"type":"command","id":"r1","name":"rescale","args":{"operator":"count","parallelism":32768}}`)
	m := reply(t, c, "r1")
	require.Equal(t, "error", m["type"], "%v", m)
	assert.Equal(t, CodeBadArgs, m["code"])
	assert.Contains(t, m["message"], "bound of 8")
	assert.Contains(t, m["message"], "--max-parallelism")
	send(t, c, `{"type":"command","id":"r2","name":"rescale","args":{"operator":"count","parallelism":9}}`)
	assert.Equal(t, "error", reply(t, c, "r2")["type"])

	// The cluster starts with 2 TaskManagers; 6 more reach the bound of 8.
	for i := range 6 {
		id := fmt.Sprintf("a%d", i)
		send(t, c, `{"type":"command","id":"`+id+`","name":"add-taskmanager"}`)
		require.Equal(t, "ack", reply(t, c, id)["type"], "TaskManager %d of 8", i+3)
	}
	send(t, c, `{"type":"command","id":"a9","name":"add-taskmanager"}`)
	m = reply(t, c, "a9")
	require.Equal(t, "error", m["type"], "%v", m)
	assert.Contains(t, m["message"], "8 TaskManagers")
	assert.Contains(t, m["message"], "--max-taskmanagers")

	// A power user's server raises the bounds.
	big := newRealServer(t, func(c *Config) { c.Limits.Parallelism = 12 })
	c2 := big.dial("template=wordcount&p.count=10&taskManagers=4&slots=4&seed=2", nil)
	readUntil(t, c2, "snapshot", "")
	send(t, c2, `{"type":"command","id":"st","name":"step","args":{"count":400}}`)
	require.Equal(t, "ack", reply(t, c2, "st")["type"])
	send(t, c2, `{"type":"command","id":"r3","name":"rescale","args":{"operator":"count","parallelism":12}}`)
	m = reply(t, c2, "r3")
	assert.Equal(t, "ack", m["type"], "%v", m)
}

// TestSettingsAreBounded: the sandbox settings, the classroom API and a
// scenario share the same bounds as the commands; each refusal names the
// bound and its flag. Flink's least checkpoint interval (10 ms) holds too.
func TestSettingsAreBounded(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, tt := range []struct{ query, want string }{
		{"p.count=9", "--max-parallelism"},
		{"taskManagers=9", "--max-taskmanagers"},
		{"keys=100000", "--max-keys"},
		{"interval=1ms", "minimum checkpoint interval of 10ms"},
	} {
		t.Run(tt.query, func(t *testing.T) {
			e := openError(t, ts, "template=wordcount&"+tt.query)
			assert.Equal(t, CodeBadArgs, e["code"])
			assert.Contains(t, e["message"], tt.want)
		})
	}
	status, m := ts.createClassroom(`{"template":"wordcount","settings":{"keys":"50000"}}`, nil)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, m["message"], "--max-keys")

	raised := newTestServer(t, func(c *Config) { c.Limits.Keys = 100_000; c.Limits.TaskManagers = 16 })
	c := raised.dial("template=wordcount&keys=100000&taskManagers=16", nil)
	assert.Equal(t, "snapshot", readUntil(t, c, "snapshot", "")["type"])
}

// TestRecordedCommandsAreBounded: a session's command log, which every fork
// and share link replays, stops at the bound.
func TestRecordedCommandsAreBounded(t *testing.T) {
	ts := newRealServer(t, func(c *Config) { c.Limits.Commands = 2 })
	c := ts.dial("template=wordcount&seed=4", nil)
	readUntil(t, c, "snapshot", "")
	for i := range 2 {
		id := fmt.Sprintf("c%d", i)
		send(t, c, `{"type":"command","id":"`+id+`","name":"inject","args":{"text":"to be"}}`)
		require.Equal(t, "ack", reply(t, c, id)["type"])
	}
	send(t, c, `{"type":"command","id":"c9","name":"inject","args":{"text":"or not"}}`)
	m := reply(t, c, "c9")
	require.Equal(t, "error", m["type"], "%v", m)
	assert.Contains(t, m["message"], "--max-commands")
	send(t, c, `{"type":"command","id":"p","name":"pause"}`)
	assert.Equal(t, "ack", reply(t, c, "p")["type"], "commands the engine does not record still work")
}

// shareLinkFor encodes a wordcount scenario of step steps.
func shareLinkFor(t *testing.T, settings map[string]string, step int64) string {
	t.Helper()
	v, err := ShareLink(Scenario{Format: ScenarioFormat, Version: ScenarioVersion, Template: "wordcount", Settings: settings, Seed: 1, Step: step})
	require.NoError(t, err)
	return v
}

// TestShareLinksAreCheckedBeforeAnyWork: finding 2. A 284-byte link with
// step=500000, keys=100000 and a 1 ms interval replayed inside the GET for a
// minute. Now opening a link does no work (an <img> on another site starts
// nothing), a link beyond the bounds is refused at once with the bound and
// its flag, and the replay starts only from the link page's own form.
func TestShareLinksAreCheckedBeforeAnyWork(t *testing.T) {
	ts := newRealServer(t, nil)
	get := func(link string) (int, string) {
		resp, err := http.Get(ts.hs.URL + "/replay?s=" + link)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tt := range []struct {
		name     string
		settings map[string]string
		step     int64
		want     string
	}{
		{"the review's link", map[string]string{"keys": "100000", "interval": "1ms"}, 500_000, "--max-replay-steps"},
		{"too many keys", map[string]string{"keys": "100000"}, 1000, "--max-keys"},
		{"too fine an interval", map[string]string{"interval": "1ms"}, 1000, "10ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, body := get(shareLinkFor(t, tt.settings, tt.step))
			assert.Equal(t, http.StatusBadRequest, status)
			assert.Contains(t, body, tt.want)
			assert.Empty(t, ts.srv.sessions.all(), "nothing started")
		})
	}

	// The default bounds fit the default budget; a server with a smaller
	// one refuses the costliest links by their estimate.
	tight := newRealServer(t, func(c *Config) { c.Limits.ReplayTime = 5 * time.Second })
	resp, err := http.Get(tight.hs.URL + "/replay?s=" + shareLinkFor(t, map[string]string{"keys": "10000", "interval": "10ms"}, 200_000))
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(b), "--max-replay-time")

	link := shareLinkFor(t, map[string]string{"interval": "200ms"}, 2000)
	// An <img> or a link from another site: a page, no session.
	req, _ := http.NewRequest(http.MethodGet, ts.hs.URL+"/replay?s="+link, nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, ts.srv.sessions.all(), "a cross-site GET starts nothing")
	// A cross-site POST is refused.
	post := func(h http.Header) int {
		req, _ := http.NewRequest(http.MethodPost, ts.hs.URL+"/replay", strings.NewReader(url.Values{"s": {link}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range h {
			req.Header[k] = v
		}
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusForbidden, post(http.Header{"Origin": {"http://evil.example"}, "Sec-Fetch-Site": {"cross-site"}}))
	assert.Equal(t, http.StatusForbidden, post(http.Header{"Origin": {"null"}, "Sec-Fetch-Site": {"cross-site"}}))
	assert.Empty(t, ts.srv.sessions.all())
	// The link page's own form replays it.
	assert.Equal(t, http.StatusSeeOther, post(http.Header{"Origin": {"null"}, "Sec-Fetch-Site": {"same-origin"}}))
	require.Len(t, ts.srv.sessions.all(), 1)
	assert.Equal(t, int64(2000), ts.srv.sessions.all()[0].Snapshot().Step)
}

// TestReplayStopsWhenNobodyWaits: a replay runs inside the request that
// asked for it and stops when that request goes away (the review's replays
// kept running after the client disconnected); one over its time budget is
// stopped with a message naming the bound and the flag.
func TestReplayStopsWhenNobodyWaits(t *testing.T) {
	// Bounds raised so that the replay is long: minutes of work.
	ts := newRealServer(t, func(c *Config) {
		c.Limits = Limits{Keys: 100_000, ReplaySteps: 5_000_000, ReplayTime: time.Hour}
	})
	link := shareLinkFor(t, map[string]string{"keys": "100000", "interval": "10ms"}, 1_000_000)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.hs.URL+"/replay", strings.NewReader(url.Values{"s": {link}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			t.Logf("replay answered %d %.300s", resp.StatusCode, b)
			resp.Body.Close()
		}
	}()
	eventually(t, 10*time.Second, func() bool {
		ts.srv.sessions.mu.Lock()
		defer ts.srv.sessions.mu.Unlock()
		return ts.srv.sessions.reserved == 1
	}, "the replay started")
	time.Sleep(300 * time.Millisecond)
	cancel() // the browser tab closes
	<-done
	eventually(t, 20*time.Second, func() bool {
		ts.srv.sessions.mu.Lock()
		defer ts.srv.sessions.mu.Unlock()
		return ts.srv.sessions.reserved == 0
	}, "the replay stopped and gave its place back")
	assert.Empty(t, ts.srv.sessions.all(), "no session was left behind")

	// A replay over its budget is stopped and says so.
	ts.srv.cfg.Limits.ReplayTime = 200 * time.Millisecond
	run, _, pe := ts.srv.scenarioRun(Scenario{Format: ScenarioFormat, Version: ScenarioVersion, Template: "wordcount",
		Settings: map[string]string{"keys": "100000", "interval": "10ms"}, Seed: 1, Step: 1_000_000})
	require.Nil(t, pe)
	run.DataDir = t.TempDir()
	_, err := ts.srv.replayEngine(run)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--max-replay-time")
}

// TestAttachCannotReadTheServersNetwork: finding 5. The attach page's reads
// never reach a link-local or cloud metadata address, never follow a
// redirect to another server, and a server that serves the network without
// --allow-attach refuses attach with a message saying how to turn it on.
func TestAttachCannotReadTheServersNetwork(t *testing.T) {
	ts := newTestServer(t, fastAttach)
	status, created := ts.attachStart(attachBody("http://169.254.169.254/latest/meta-data", "50ms", ""))
	require.Equal(t, http.StatusCreated, status, created)
	st := ts.attachState(created["id"].(string), func(st AttachState) bool { return st.Error != nil }, "the refusal")
	assert.Contains(t, st.Error.Message, "never reads 169.254.169.254")

	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "TOP-SECRET-internal-token=abc123")
	}))
	defer secret.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, secret.URL+"/token", http.StatusFound)
	}))
	defer redirect.Close()
	for _, addr := range []string{redirect.URL, secret.URL} {
		status, created = ts.attachStart(attachBody(addr, "50ms", ""))
		require.Equal(t, http.StatusCreated, status, created)
		st = ts.attachState(created["id"].(string), func(st AttachState) bool { return st.Error != nil }, "an error")
		assert.NotContains(t, st.Error.Message, "TOP-SECRET", "the body is never echoed")
		assert.Contains(t, st.Error.Message, "JobManager", "it says what to check")
	}

	off := newTestServer(t, func(c *Config) { fastAttach(c); c.Attach.Off = true })
	status, m := off.attachStart(attachBody("http://127.0.0.1:8081", "50ms", ""))
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, fmt.Sprint(m["error"]), "--allow-attach")
}
