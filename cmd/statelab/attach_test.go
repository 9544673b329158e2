package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/attach/attachtest"
)

const (
	attach20Job    = "b7e4c1d8a5f2e9b6c3d0a7f4e1b8c5d2"
	attach113Job   = "7a1b2c3d4e5f60718293a4b5c6d7e8f9"
	attach113Gone  = "e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9"
	attach112Job   = "0f6d3a2b9c8e7d1f4a5b6c7d8e9f0a1b"
	attach112Fraud = "20ba6b65f97481d5570070de90e4e791"
)

func fixtureURL(t *testing.T, dir string) string {
	return attachtest.NewServer(t, attachtest.FixtureDir(dir)).URL
}

// decodeOne checks that out holds exactly one JSON document and returns it.
func decodeOne(t *testing.T, out string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var doc map[string]any
	require.NoError(t, dec.Decode(&doc))
	var extra any
	require.ErrorIs(t, dec.Decode(&extra), io.EOF, "exactly one JSON document")
	return doc
}

func TestAttachOnceJSONExactShape(t *testing.T) {
	url := fixtureURL(t, "flink-2.0")
	code, out, errs := run(t, "", "attach", "--flink", url, "--once", "--json")
	require.Equal(t, 0, code, errs)
	assert.Empty(t, errs)
	decodeOne(t, out)
	want := `{"jobs":[{"id":"` + attach20Job + `","name":"Fraud Scoring","vertices":[
		{"id":"0a448493b4782967b150582570326227","name":"Source: Payments","parallelism":2,"maxParallelism":128,"keyed":false},
		{"id":"ea632d67b7d595e5b851708ae9ad79d6","name":"TumblingEventTimeWindows -> Timestamps/Watermarks","parallelism":4,"maxParallelism":256,"keyed":true,
		 "keyGroups":[{"subtask":0,"start":0,"end":63},{"subtask":1,"start":64,"end":127},{"subtask":2,"start":128,"end":191},{"subtask":3,"start":192,"end":255}]},
		{"id":"6cdc5bb954874d922eaee11a8e7ca5be","name":"KeyedProcess -> Sink: Alerts","parallelism":3,"maxParallelism":128,"keyed":true,
		 "keyGroups":[{"subtask":0,"start":0,"end":42},{"subtask":1,"start":43,"end":85},{"subtask":2,"start":86,"end":127}]},
		{"id":"c27dcf7b54ef6bfd6cff02ca8870b681","name":"Sink: Audit","parallelism":1,"maxParallelism":1,"keyed":false}],
		"checkpoints":{"completed":7,"failed":1,"inProgress":0,"restored":1}}]}`
	assert.JSONEq(t, want, out)
}

func TestAttachVanishedJobWarnsAndKeepsTheRest(t *testing.T) {
	url := fixtureURL(t, "flink-1.13")
	code, out, errs := run(t, "", "attach", "--flink", url, "--once", "--json")
	require.Equal(t, 0, code, errs)
	doc := decodeOne(t, out)
	jobs := doc["jobs"].([]any)
	require.Len(t, jobs, 1)
	assert.Equal(t, attach113Job, jobs[0].(map[string]any)["id"])
	assert.Equal(t, map[string]any{"completed": 10.0, "failed": 1.0, "inProgress": 1.0, "restored": 1.0}, jobs[0].(map[string]any)["checkpoints"])
	assert.Contains(t, errs, "statelab attach: warning: job "+attach113Gone+" vanished")
	assert.Contains(t, errs, "this job is skipped, the others are shown")

	// Asked for by name, a vanished job is a failure.
	code, _, errs = run(t, "", "attach", "--flink", url, "--once", "--json", "--job", attach113Gone)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "vanished")
}

func TestAttachMissingMaxParallelism(t *testing.T) {
	url := fixtureURL(t, "flink-1.12")
	code, out, errs := run(t, "", "attach", "--flink", url, "--once", "--json")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, errs, "GET /jobs/"+attach112Job+" and GET /jobs/"+attach112Job+"/vertices/"+attach112Fraud+`: vertex "Fraud Detector"`)
	assert.Contains(t, errs, "has no maxParallelism")
	fraud := decodeOne(t, out)["jobs"].([]any)[0].(map[string]any)["vertices"].([]any)[1].(map[string]any)
	assert.Equal(t, map[string]any{"id": attach112Fraud, "name": "Fraud Detector", "parallelism": 3.0, "maxParallelism": 0.0, "keyed": true}, fraud)

	code, out, errs = run(t, "", "attach", "--flink", url, "--once", "--json", "--max-parallelism", "256")
	require.Equal(t, 0, code, errs)
	assert.Empty(t, errs)
	fraud = decodeOne(t, out)["jobs"].([]any)[0].(map[string]any)["vertices"].([]any)[1].(map[string]any)
	assert.Equal(t, 256.0, fraud["maxParallelism"])
	// max 256, p 3: [0,85] [86,170] [171,255].
	assert.Equal(t, []any{
		map[string]any{"subtask": 0.0, "start": 0.0, "end": 85.0},
		map[string]any{"subtask": 1.0, "start": 86.0, "end": 170.0},
		map[string]any{"subtask": 2.0, "start": 171.0, "end": 255.0},
	}, fraud["keyGroups"])
}

// The acceptance check: the ranges attach shows for each keyed
// vertex equal what `statelab ranges` prints for that max parallelism and
// parallelism.
func TestAttachRangesEqualStatelabRanges(t *testing.T) {
	type rng struct{ Subtask, Start, End int }
	for _, dir := range []string{"flink-1.13", "flink-1.17", "flink-2.0"} {
		code, out, errs := run(t, "", "attach", "--flink", fixtureURL(t, dir), "--once", "--json")
		require.Equal(t, 0, code, errs)
		var doc struct {
			Jobs []struct {
				Vertices []struct {
					Name                        string
					Parallelism, MaxParallelism int
					Keyed                       bool
					KeyGroups                   []rng
				}
			}
		}
		require.NoError(t, json.Unmarshal([]byte(out), &doc))
		keyed := 0
		for _, j := range doc.Jobs {
			for _, v := range j.Vertices {
				if !v.Keyed {
					assert.Nil(t, v.KeyGroups, "%s: keyGroups only for keyed vertices", v.Name)
					continue
				}
				keyed++
				code, rout, rerrs := run(t, "", "ranges", "--max-parallelism", strconv.Itoa(v.MaxParallelism),
					"--parallelism", strconv.Itoa(v.Parallelism), "--json")
				require.Equal(t, 0, code, rerrs)
				var want []rng
				dec := json.NewDecoder(strings.NewReader(rout))
				for dec.More() {
					var r rng
					require.NoError(t, dec.Decode(&r))
					want = append(want, r)
				}
				assert.Equal(t, want, v.KeyGroups, "%s %s", dir, v.Name)
			}
		}
		assert.Positive(t, keyed, dir)
	}
}

func TestAttachReport(t *testing.T) {
	url := fixtureURL(t, "flink-1.13")
	code, out, errs := run(t, "", "attach", "--flink", url, "--once", "--rescale", "4", "--key", "alice")
	require.Equal(t, 0, code, errs)
	for _, line := range []string{
		"Flink JobManager " + url + ": 1 job",
		`Job "Socket Window WordCount" (` + attach113Job + `) RUNNING`,
		"Job graph: 2 vertices, 1 edge",
		"Source: Socket Stream -> Flat Map: parallelism 2, max parallelism 128\n",
		"Keyed Aggregation -> Sink: Print to Std. Out: parallelism 3, max parallelism 128, keyed\n      <- Source: Socket Stream -> Flat Map (HASH)",
		`Key groups of "Keyed Aggregation -> Sink: Print to Std. Out" (max parallelism 128, parallelism 3):`,
		"subtask 0: [0, 42], 43 key groups",
		"subtask 1: [43, 85], 43 key groups",
		"subtask 2: [86, 127], 42 key groups",
		// 3 -> 4 at 128: 11 + 22 + 32 key groups change owner.
		"rescale 3 -> 4: 65 of 128 key groups move: [32, 42] [64, 85] [96, 127]",
		"new subtask 1 [32, 63] reads [32, 42] from old subtask 0, [43, 63] from old subtask 1",
		`key "alice" (string, Java hashCode `,
		"Checkpoints: Triggered 12, In Progress 1, Completed 10, Failed 1, Restored 1",
		"Latest Restore: checkpoint 7 at ",
		"End to End Duration",
		"Checkpointed Data Size",
		"checkpoint 10 failed: Checkpoint was declined (task is closing)",
	} {
		assert.Contains(t, out, line)
	}
	// Checkpoint 11: 5 of 5 acknowledged, 120 ms, 9216 B = 9.0 KiB, no full size before 1.15.
	assert.Regexp(t, `(?m)^    11 +COMPLETED +CHECKPOINT +5/5 +\S+ \S+ +120ms +9\.0 KiB +-$`, out)
	// Oldest first.
	assert.Less(t, strings.Index(out, "    10 "), strings.Index(out, "    12 "))
}

func TestAttachReportTwoSizesAndNoCheckpointing(t *testing.T) {
	code, out, errs := run(t, "", "attach", "--flink", fixtureURL(t, "flink-1.17"), "--once")
	require.Equal(t, 0, code, errs)
	// 3145728 B = 3.0 MiB written, 62914560 B = 60.0 MiB in all; 2400 ms.
	// 1690086000000 ms is 2023-07-23 04:20:00 UTC (date -u -d @1690086000).
	assert.Regexp(t, `(?m)^    42 +COMPLETED +UNALIGNED_CHECKPOINT +10/10 +2023-07-23 04:20:00\.000Z +2\.4s +3\.0 MiB +60\.0 MiB$`, out)
	assert.Contains(t, out, "checkpointing is not enabled for this job")
}

func TestAttachErrors(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	deadURL := closed.URL
	closed.Close()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!DOCTYPE html><html><body>Grafana</body></html>"))
	}))
	defer html.Close()
	good := fixtureURL(t, "flink-2.0")

	tests := []struct {
		name  string
		args  []string
		code  int
		parts []string
	}{
		{"no --flink", []string{"--once"}, 2, []string{"statelab attach: --flink is required", "8081"}},
		{"bad address", []string{"--flink", "ftp://host"}, 2, []string{`scheme "ftp"`}},
		{"unknown flag", []string{"--flink", good, "--frobnicate"}, 2, []string{"frobnicate"}},
		{"argument", []string{"--flink", good, "extra"}, 2, []string{`unexpected argument "extra"`}},
		{"interval too short", []string{"--flink", good, "--interval", "1ms"}, 2, []string{"--interval 1ms is below 100ms"}},
		{"bad interval", []string{"--flink", good, "--interval", "soon"}, 2, []string{"interval"}},
		{"bad timeout", []string{"--flink", good, "--timeout", "0s"}, 2, []string{"--timeout"}},
		{"bad job id", []string{"--flink", good, "--job", "wordcount"}, 2, []string{"not a Flink job ID"}},
		{"bad max parallelism", []string{"--flink", good, "--max-parallelism", "lots"}, 2, []string{"--max-parallelism"}},
		{"max parallelism too large", []string{"--flink", good, "--max-parallelism", "40000"}, 2, []string{"32768"}},
		{"bad key type", []string{"--flink", good, "--key", "1", "--key-type", "double"}, 2, []string{"--key-type"}},
		{"bad rescale", []string{"--flink", good, "--rescale", "0"}, 2, []string{"--rescale 0 is not within 1..32768"}},
		{"json with report flags", []string{"--flink", good, "--json", "--rescale", "4"}, 2, []string{"drop --json"}},
		{"unreachable", []string{"--flink", deadURL, "--once", "--json"}, 1,
			[]string{"cannot reach Flink's REST API at " + deadURL, "JobManager is running", "8081"}},
		{"not Flink", []string{"--flink", html.URL, "--once"}, 1,
			[]string{"GET " + html.URL + "/jobs answered 200 OK with text/html", "an HTML page, 48 bytes", "not JSON"}},
		{"job not listed", []string{"--flink", good, "--once", "--job", strings.Repeat("0", 32)}, 1,
			[]string{"is not listed by GET /jobs (jobs listed: " + attach20Job + ")"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(t, "", append([]string{"attach"}, tt.args...)...)
			assert.Equal(t, tt.code, code)
			assert.Empty(t, out)
			assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
			for _, p := range tt.parts {
				assert.Contains(t, errs, p)
			}
		})
	}
}

// lineWriter is a goroutine-safe buffer that signals each complete line.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan struct{}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for range bytes.Count(p, []byte("\n")) {
		select {
		case w.lines <- struct{}{}:
		default:
		}
	}
	return w.buf.Write(p)
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestAttachPollsUntilCancelled(t *testing.T) {
	url := fixtureURL(t, "flink-1.13") // one job listed twice over: one vanished
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lineWriter{lines: make(chan struct{}, 100)}
	var errb lineWriter
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"attach", "--flink", url, "--json", "--interval", "100ms"}, IO{In: strings.NewReader(""), Out: out, Err: &errb})
	}()
	for range 2 {
		select {
		case <-out.lines:
		case <-time.After(time.Minute):
			t.Fatal("no reading printed")
		}
	}
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code)
	case <-time.After(time.Minute):
		t.Fatal("attach did not stop when its context was cancelled")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	for _, l := range lines {
		var doc struct{ Jobs []map[string]any }
		require.NoError(t, json.Unmarshal([]byte(l), &doc), "each reading is one JSON document on one line")
		assert.Len(t, doc.Jobs, 1)
	}
	assert.Equal(t, 1, strings.Count(errb.String(), "vanished"), "a warning is printed when it first appears, not on every reading")
}

func TestAttachPollingReportsErrorsAndGoesOn(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NotFound(w, r)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out lineWriter
	errw := &lineWriter{lines: make(chan struct{}, 100)}
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"attach", "--flink", srv.URL, "--interval", "100ms"}, IO{In: strings.NewReader(""), Out: &out, Err: errw})
	}()
	for range 2 {
		select {
		case <-errw.lines:
		case <-time.After(time.Minute):
			t.Fatal("no error printed")
		}
	}
	cancel()
	assert.Equal(t, 0, <-done, "polling ends cleanly on Ctrl-C even after errors")
	assert.Contains(t, errw.String(), "404 Not Found")
	assert.Contains(t, errw.String(), "trying again every 100ms")
	assert.Empty(t, out.String())
}
