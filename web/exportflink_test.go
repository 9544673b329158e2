package web

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// TestExportFlinkOverHTTP: a sandbox whose count was rescaled to 3, with
// lines typed into its source, is exported from its share menu's address as
// a zip holding the Maven project `statelab export-flink` writes: the job at
// the parallelism it runs with now, and every record of its source's
// partitions (as many as the engine's topic views say each partition
// holds), the typed lines last in the partitions they went to.
func TestExportFlinkOverHTTP(t *testing.T) {
	ts := newRealServer(t, nil)
	c := ts.dial("template=wordcount&seed=3&slots=2", nil)
	id := readUntil(t, c, "snapshot", "")["session"].(string)
	send(t, c, `{"type":"command","id":"s1","name":"step","args":{"count":300}}`)
	require.Equal(t, "ack", reply(t, c, "s1")["type"])
	typed := map[string]int{"typed by hand": 1, "and typed again": -1} // text -> partition asked for
	send(t, c, `{"type":"command","id":"i1","name":"inject","args":{"text":"typed by hand","partition":1}}`)
	require.Equal(t, "ack", reply(t, c, "i1")["type"])
	send(t, c, `{"type":"command","id":"i2","name":"inject","args":{"text":"and typed again"}}`)
	require.Equal(t, "ack", reply(t, c, "i2")["type"])
	send(t, c, `{"type":"command","id":"r","name":"rescale","args":{"operator":"count","parallelism":3}}`)
	require.Equal(t, "ack", reply(t, c, "r")["type"])
	s, _ := ts.srv.Session(id)
	before := map[string]int{}
	for _, o := range s.Snapshot().Job.Operators {
		before[o.ID] = o.Parallelism
	}
	par := func() int {
		for _, o := range s.Snapshot().Job.Operators {
			if o.ID == "count" {
				return o.Parallelism
			}
		}
		return 0
	}
	for i := 0; par() != 3 && i < 200; i++ {
		send(t, c, `{"type":"command","id":"st","name":"step","args":{"count":200}}`)
		require.Equal(t, "ack", reply(t, c, "st")["type"])
	}
	require.Equal(t, 3, par(), "count rescaled to 3")
	snap := s.Snapshot()

	resp, err := http.Get(ts.hs.URL + "/api/sessions/" + id + "/export-flink")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.Equal(t, "application/zip", resp.Header.Get("Content-Type"))
	assert.Contains(t, resp.Header.Get("Content-Disposition"), `attachment; filename="statelab-`)
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	require.NoError(t, err)
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		require.NoError(t, err)
		b, _ := io.ReadAll(rc)
		rc.Close()
		files[strings.TrimPrefix(f.Name, "statelab-job/")] = b
	}
	for _, name := range []string{"pom.xml", "job.json", "input.json", "README.md", "src/main/java/org/statelab/flinkref/ExportedJob.java"} {
		require.Contains(t, files, name)
	}
	assert.Contains(t, string(files["pom.xml"]), "<artifactId>statelab-job</artifactId>")
	spec, err := engine.LoadSpec(files["job.json"])
	require.NoError(t, err, "job.json is a job spec StateLab reads")
	for _, o := range spec.Operators {
		want := before[o.ID]
		if o.ID == "count" {
			want = 3
		}
		assert.Equal(t, want, o.Parallelism, "%s's parallelism in job.json", o.ID)
	}
	var input struct {
		Sources map[string][][]map[string]any `json:"sources"`
	}
	require.NoError(t, json.Unmarshal(files["input.json"], &input))
	require.Len(t, snap.Sources, 1)
	parts := input.Sources[snap.Sources[0].Operator]
	require.Len(t, parts, len(snap.Sources[0].Partitions))
	for _, p := range snap.Sources[0].Partitions {
		assert.EqualValues(t, p.End, len(parts[p.Partition]), "partition %d's records", p.Partition)
	}
	// Each typed line is the last record of the partition the engine
	// appended it to (its record-injected event says which), keyed by its
	// text.
	found := 0
	for _, lc := range snap.Commands {
		if lc.Command.Name != engine.CmdInject {
			continue
		}
		want, ok := typed[lc.Command.Text]
		require.True(t, ok, "typed %q", lc.Command.Text)
		if want >= 0 {
			assert.Equal(t, want, lc.Command.Partition)
		}
		found++
	}
	require.Equal(t, len(typed), found, "both typed lines are in the run's command log")
	// Every typed line is in input.json once, keyed by its text, after the
	// records its partition started with; the one typed into partition 1
	// is in partition 1.
	seen := map[string]int{}
	for pi, p := range parts {
		tail := true
		for k := len(p) - 1; k >= 0; k-- {
			text, _ := p[k]["text"].(string)
			if _, isTyped := typed[text]; !isTyped {
				tail = false
				continue
			}
			assert.True(t, tail, "typed %q comes after partition %d's other records", text, pi)
			assert.Equal(t, text, p[k]["key"], "a typed line is keyed by its text")
			seen[text]++
			if typed[text] >= 0 {
				assert.Equal(t, typed[text], pi, "%q went to the partition it was typed into", text)
			}
		}
	}
	assert.Equal(t, map[string]int{"typed by hand": 1, "and typed again": 1}, seen)
	assert.Contains(t, string(files["README.md"]), "the 2 lines typed into sources in the run")

	// No such session: a clear 404.
	resp, err = http.Get(ts.hs.URL + "/api/sessions/nope/export-flink")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// After an upgrade the run's job is not the one its sandbox started, so the
// export refuses and says why, instead of writing the old job.
func TestExportFlinkRefusesAnUpgradedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	srv, hs := newEngineServer(t)
	c := dialURL(t, hs, "template=wordcount&seed=3&interval=200ms&keys=40&retainedCheckpoints=3&restart=fixed-delay&restartAttempts=5")
	readUntil(t, c, "snapshot", "")
	send(t, c, `{"type":"command","id":"fast","name":"speed","args":{"factor":50}}`)
	require.Equal(t, "ack", reply(t, c, "fast")["type"])
	waitSnapshot(t, c, 60*time.Second, "the job running", allRunning)
	send(t, c, `{"type":"command","id":"sp","name":"trigger-savepoint"}`)
	require.Equal(t, "ack", reply(t, c, "sp")["type"])
	var sp float64
	waitSnapshot(t, c, 60*time.Second, "a retained savepoint", func(m msg) bool {
		for _, r := range m["checkpoints"].(map[string]any)["retained"].([]any) {
			if rm := r.(map[string]any); rm["savepoint"] == true {
				sp = rm["id"].(float64)
			}
		}
		return sp > 0
	})
	var id string
	for _, s := range srv.sessions.all() {
		id = s.ID
	}
	get := func() (int, string) {
		resp, err := http.Get(hs.URL + "/api/sessions/" + id + "/export-flink")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, _ := get()
	require.Equal(t, http.StatusOK, code, "before the upgrade")
	r := sendUpgrade(t, c, "add", map[string]any{"checkpoint": sp, "change": "add-operator", "operator": "tokenizer", "kind": "filter", "uid": "no-stop-words", "allowNonRestoredState": true})
	require.Equal(t, "ack", r["type"], "%v", r)
	waitSnapshot(t, c, 60*time.Second, "a filter after the tokenizer", func(m msg) bool { return operatorsOf(m)["filter"] != nil })
	code, body := get()
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, body, "changed by an upgrade")
}
