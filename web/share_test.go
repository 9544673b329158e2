package web

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// TestShareLinkReproducesTheRunEventForEvent runs word count on a Stepper
// with a crash, a restart, a checkpoint by hand, a rescale and a typed
// record, recording every event; then encodes template, settings, seed and
// command log as a share link, decodes it, replays it, and compares the
// two event streams one by one.
func TestShareLinkReproducesTheRunEventForEvent(t *testing.T) {
	for _, backend := range []string{"memory", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			tpl, _ := Template("wordcount")
			q := map[string][]string{"seed": {"42"}, "backend": {backend}, "taskManagers": {"2"}, "slots": {"2"}, "interval": {"300ms"}}
			set, err := ParseSettings(tpl, q)
			require.NoError(t, err)
			spec, err := tpl.Build(set)
			require.NoError(t, err)

			var original []engine.Event
			st, err := engine.NewStepper(spec, engine.Options{Dir: t.TempDir(), RecordEvents: func(e engine.Event) { original = append(original, e) }})
			require.NoError(t, err)
			defer st.Close()
			script := []struct {
				steps int
				cmd   engine.Command
			}{
				{400, engine.Command{Name: engine.CmdTriggerCheckpoint}},
				{300, engine.Command{Name: engine.CmdCrashTaskManager, TaskManager: "tm-1"}},
				{200, engine.Command{Name: engine.CmdRestartTaskManager, TaskManager: "tm-1"}},
				{400, engine.Command{Name: engine.CmdRescale, Operator: "count", Parallelism: 3}},
				{300, engine.Command{Name: engine.CmdInject, Operator: "source", Partition: -1, Text: "to be or not to be"}},
				{250, engine.Command{Name: engine.CmdCrashSubtask, Task: "count#0"}},
			}
			for _, s := range script {
				require.Equal(t, s.steps, st.Steps(s.steps))
				_ = st.Do(s.cmd) // a refusal is part of the run, and logged
			}
			st.Steps(500)
			snap := st.Snapshot()
			require.Equal(t, int64(2350), snap.Step)
			require.Len(t, snap.Commands, len(script))

			q2, err := settingsFromSpec(tpl, spec)
			require.NoError(t, err)
			sc := Scenario{Format: ScenarioFormat, Version: ScenarioVersion, Template: "wordcount", Settings: map[string]string{}, Seed: spec.Seed, Step: snap.Step, Commands: snap.Commands}
			for k := range q2 {
				sc.Settings[k] = q2.Get(k)
			}
			link, err := ShareLink(sc)
			require.NoError(t, err)
			t.Logf("share link value: %d characters for %d commands", len(link), len(sc.Commands))
			assert.Less(t, len(link), 2000, "a link fits a chat message")

			back, err := ParseShareLink(link)
			require.NoError(t, err)
			run, pe := runOf(back)
			require.Nil(t, pe)
			var replayed []engine.Event
			st2, err := replayStepper(run.Spec, t.TempDir(), run.from.log, run.from.step, func(e engine.Event) { replayed = append(replayed, e) })
			require.NoError(t, err)
			defer st2.Close()

			require.Equal(t, len(original), len(replayed), "as many events")
			for i := range original {
				a, _ := json.Marshal(original[i])
				b, _ := json.Marshal(replayed[i])
				require.JSONEq(t, string(a), string(b), "event %d", i)
			}
			kinds := map[engine.EventKind]int{}
			for _, e := range original {
				kinds[e.Kind]++
			}
			for _, k := range []engine.EventKind{engine.EvTaskManager, engine.EvRestore, engine.EvRescaleDone, engine.EvInjected, engine.EvTaskFailed, engine.EvCheckpointDone} {
				assert.Positive(t, kinds[k], "the run has %s events", k)
			}
			end := st2.Snapshot()
			assert.True(t, sameRun(snap, end), "the same picture at the end: %v differ", runDiff(snap, end))
		})
	}
}

func TestShareLinkRejectsBadInput(t *testing.T) {
	good := Scenario{Format: ScenarioFormat, Version: 1, Template: "wordcount", Settings: map[string]string{}, Seed: 1, Step: 10}
	tests := []struct {
		name string
		mod  func(*Scenario)
		want string
	}{
		{"format", func(s *Scenario) { s.Format = "x" }, "not a StateLab scenario"},
		{"template", func(s *Scenario) { s.Template = "../../etc/passwd" }, "template"},
		{"settings", func(s *Scenario) { s.Settings["p.count"] = "99" }, "p.count"},
		{"step", func(s *Scenario) { s.Step = -5 }, "step"},
		{"command", func(s *Scenario) {
			s.Commands = []engine.LoggedCommand{{Step: 1, Command: engine.Command{Name: "rm -rf"}}}
		}, "not a command"},
		{"order", func(s *Scenario) {
			s.Commands = []engine.LoggedCommand{{Step: 20, Command: engine.Command{Name: engine.CmdTriggerCheckpoint}}}
		}, "out of order"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := good
			sc.Settings = map[string]string{}
			tt.mod(&sc)
			_, pe := runOf(sc)
			require.NotNil(t, pe)
			assert.Contains(t, pe.Message, tt.want)
		})
	}
	_, err := ParseShareLink("!!!not-base64")
	assert.ErrorIs(t, err, ErrBadArgs)
	_, err = ParseShareLink(strings.Repeat("A", maxShareParam+1))
	assert.ErrorIs(t, err, ErrBadArgs)
}

// TestShareOverHTTP: a paused sandbox session with commands is shared; the
// link opens a new session at the same step with the same picture; the
// scenario exports, imports, and the event log exports as JSON Lines and CSV.
func TestShareOverHTTP(t *testing.T) {
	ts := newRealServer(t, nil)
	c := ts.dial("template=wordcount&seed=9&interval=200ms", nil)
	id := readUntil(t, c, "snapshot", "")["session"].(string)
	send(t, c, `{"type":"command","id":"s1","name":"step","args":{"count":300}}`)
	require.Equal(t, "ack", reply(t, c, "s1")["type"])
	send(t, c, `{"type":"command","id":"s2","name":"crash-subtask","args":{"operator":"count","index":1}}`)
	require.Equal(t, "ack", reply(t, c, "s2")["type"])
	send(t, c, `{"type":"command","id":"s3","name":"step","args":{"count":400}}`)
	require.Equal(t, "ack", reply(t, c, "s3")["type"])
	s, _ := ts.srv.Session(id)
	orig := s.Snapshot()
	require.True(t, orig.Paused)
	require.GreaterOrEqual(t, orig.Step, int64(700), "it played a little before the first step command")

	getJSON := func(path string, v any) int {
		resp, err := http.Get(ts.hs.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
		return resp.StatusCode
	}
	var share ShareAnswer
	require.Equal(t, http.StatusOK, getJSON("/api/sessions/"+id+"/share", &share))
	assert.True(t, strings.HasPrefix(share.URL, ts.hs.URL+"/replay?s="))
	assert.Equal(t, orig.Step, share.Scenario.Step)
	require.Len(t, share.Scenario.Commands, 1)

	// Opening the link shows what it replays and starts nothing; its
	// page's form (a same-origin POST) replays it.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	before := len(ts.srv.sessions.all())
	resp, err := noFollow.Get(share.URL)
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(page), `id="replay-form"`)
	assert.Contains(t, string(page), fmt.Sprintf(`<dd id="replay-steps">%d</dd>`, orig.Step))
	assert.Len(t, ts.srv.sessions.all(), before, "opening a link starts no session")
	link := strings.TrimPrefix(share.URL, ts.hs.URL+"/replay?s=")
	resp, err = noFollow.PostForm(ts.hs.URL+"/replay", url.Values{"s": {link}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(loc, "/sandbox/live?session="), loc)
	copyID := strings.TrimPrefix(loc, "/sandbox/live?session=")
	cp, ok := ts.srv.Session(copyID)
	require.True(t, ok)
	again := cp.Snapshot()
	assert.Equal(t, orig.Step, again.Step)
	assert.True(t, again.Paused, "a shared run opens paused")
	assert.True(t, sameRun(orig, again), "the link reproduces the run: %v", runDiff(orig, again))

	// Scenario file: export, import.
	resp, err = http.Get(ts.hs.URL + "/api/sessions/" + id + "/scenario")
	require.NoError(t, err)
	file, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, resp.Header.Get("Content-Disposition"), fmt.Sprintf(`filename="statelab-wordcount-seed9-step%d.json"`, orig.Step))
	resp, err = http.Post(ts.hs.URL+"/api/scenarios", "application/json", strings.NewReader(string(file)))
	require.NoError(t, err)
	var imp ImportAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&imp))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	imported, ok := ts.srv.Session(imp.Session)
	require.True(t, ok)
	assert.True(t, sameRun(orig, imported.Snapshot()), "the imported scenario reproduces the run")

	// Event log: JSON Lines and CSV of the whole run.
	resp, err = http.Get(ts.hs.URL + "/api/sessions/" + id + "/events")
	require.NoError(t, err)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	lines, crashes := 0, 0
	var last engine.Event
	for sc.Scan() {
		var e engine.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), "line %d", lines)
		require.Greater(t, e.Seq, last.Seq, "in order")
		last = e
		if e.Kind == engine.EvTaskFailed {
			crashes++
		}
		lines++
	}
	resp.Body.Close()
	assert.Greater(t, lines, 700)
	assert.Equal(t, 1, crashes)
	assert.LessOrEqual(t, last.Step, orig.Step)
	resp, err = http.Get(ts.hs.URL + "/api/sessions/" + id + "/events?format=csv")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	rows := strings.Split(strings.TrimSpace(string(body)), "\n")
	assert.Equal(t, strings.Join(eventColumns, ","), rows[0])
	assert.Equal(t, lines+1, len(rows), "one row per event")
}

// TestSeekShowsThePastAndReturns: time travel on a sandbox session.
func TestSeekShowsThePastAndReturns(t *testing.T) {
	ts := newRealServer(t, nil)
	c := ts.dial("template=wordcount&seed=5&interval=200ms", nil)
	id := readUntil(t, c, "snapshot", "")["session"].(string)
	send(t, c, `{"type":"command","id":"a","name":"step","args":{"count":400}}`)
	require.Equal(t, "ack", reply(t, c, "a")["type"])
	send(t, c, `{"type":"command","id":"b","name":"crash-taskmanager","args":{"taskManager":"tm-2"}}`)
	require.Equal(t, "ack", reply(t, c, "b")["type"])
	send(t, c, `{"type":"command","id":"c","name":"step","args":{"count":300}}`)
	require.Equal(t, "ack", reply(t, c, "c")["type"])
	s, _ := ts.srv.Session(id)
	head := s.Snapshot()
	require.Len(t, head.Commands, 1)
	crashStep := head.Commands[0].Step
	require.Equal(t, crashStep+300, head.Step)

	// seek returns the last snapshot and timeline sent before its ack (the
	// session sends both while it answers).
	seek := func(id string, step int64) (snap, tl msg) {
		send(t, c, `{"type":"command","id":"`+id+`","name":"seek","args":{"step":`+itoa(step)+`}}`)
		for {
			m := readMsg(t, c)
			switch {
			case m["type"] == "snapshot":
				snap = m
			case m["type"] == "timeline":
				tl = m
			case m["id"] == id:
				require.Equal(t, "ack", m["type"], "%v", m)
				return snap, tl
			}
		}
	}
	snap, tl := seek("s1", crashStep-100)
	require.NotNil(t, snap)
	assert.EqualValues(t, crashStep-100, snap["step"])
	assert.Equal(t, "ALIVE", snap["taskManagers"].([]any)[1].(map[string]any)["status"], "before the crash")
	require.NotNil(t, tl)
	assert.EqualValues(t, crashStep-100, tl["view"])
	assert.EqualValues(t, head.Step, tl["head"])
	var crashAt float64 = -1
	for _, m := range tl["markers"].([]any) {
		if m.(map[string]any)["kind"] == "crash" {
			crashAt = m.(map[string]any)["step"].(float64)
		}
	}
	assert.EqualValues(t, crashStep, crashAt, "a crash marker at the command's step")

	// The past cannot be changed in place.
	send(t, c, `{"type":"command","id":"x","name":"trigger-checkpoint"}`)
	e := reply(t, c, "x")
	assert.Equal(t, CodeRefused, e["code"])
	assert.Contains(t, e["message"], "fork here")

	// Forward in place, past the crash.
	_, tl = seek("s2", crashStep+50)
	assert.EqualValues(t, crashStep+50, tl["view"])
	send(t, c, `{"type":"command","id":"snap","name":"snapshot"}`)
	snap = readUntil(t, c, "snapshot", "")
	assert.EqualValues(t, crashStep+50, snap["step"])
	assert.Equal(t, "LOST", snap["taskManagers"].([]any)[1].(map[string]any)["status"], "after the crash")

	// Fork here: a new session at step 450, while this one stays in review.
	send(t, c, `{"type":"command","id":"f","name":"fork"}`)
	fk := reply(t, c, "f")
	require.Equal(t, "ack", fk["type"], "%v", fk)
	assert.EqualValues(t, crashStep+50, fk["step"])
	forked, ok := ts.srv.Session(fk["session"].(string))
	require.True(t, ok)
	assert.Equal(t, crashStep+50, forked.Snapshot().Step)

	// Back to the present: the same run as before, exactly.
	_, tl = seek("p", -1)
	assert.Nil(t, tl["view"], "back in the present")
	now := s.Snapshot()
	assert.Equal(t, head.Step, now.Step)
	assert.True(t, sameRun(head, now), "the present is untouched by the review: %v", runDiff(head, now))
	// And the replay of the whole log reaches the same picture.
	st, err := replayStepper(s.run.Spec, t.TempDir(), now.Commands, now.Step, nil)
	require.NoError(t, err)
	defer st.Close()
	rs := st.Snapshot()
	assert.True(t, sameRun(now, rs), "replay = the run: %v", runDiff(now, rs))
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

// sameRun compares the parts of two snapshots that a replay must
// reproduce: the job, channels, TaskManagers, checkpoints, sources, sinks
// and counters (not the speed or whether it plays).
func sameRun(a, b engine.Snapshot) bool {
	norm := func(s engine.Snapshot) engine.Snapshot {
		s.Speed, s.Paused, s.Driver = 0, false, ""
		// Each run has its own directories.
		tms := make([]engine.TaskManagerView, len(s.TaskManagers))
		for i, tm := range s.TaskManagers {
			tm.LocalDir = ""
			tms[i] = tm
		}
		s.TaskManagers = tms
		return s
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// runDiff names the top-level parts of two snapshots that differ (for test
// failure messages).
func runDiff(a, b engine.Snapshot) []string {
	var out []string
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := 0; i < va.NumField(); i++ {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, va.Type().Field(i).Name)
		}
	}
	return out
}
