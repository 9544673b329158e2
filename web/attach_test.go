package web

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/attach"
	"github.com/statelab/statelab/attach/attachtest"
	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/static"
)

// The flink-2.0 fixture (attach/testdata/flink-2.0): job "Fraud Scoring"
// with Source: Payments (p 2) -HASH-> windows (p 4, max 256) -HASH->
// KeyedProcess (p 3, max 128) and -REBALANCE-> Sink: Audit (p 1).
const (
	fraudJob    = "b7e4c1d8a5f2e9b6c3d0a7f4e1b8c5d2"
	fraudSource = "0a448493b4782967b150582570326227"
	fraudWindow = "ea632d67b7d595e5b851708ae9ad79d6"
	fraudKeyed  = "6cdc5bb954874d922eaee11a8e7ca5be"
)

// fastAttach lets tests poll every few milliseconds.
func fastAttach(c *Config) {
	c.Attach = AttachConfig{MinInterval: 10 * time.Millisecond, IdleTimeout: time.Minute}
}

func (ts *testServer) attachStart(body string) (int, map[string]any) {
	ts.t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.hs.URL+"/api/attach", strings.NewReader(body))
	require.NoError(ts.t, err)
	req.Header.Set("Content-Type", "application/json")
	return ts.doJSON(req)
}

func (ts *testServer) getJSON(path string) (int, map[string]any) {
	ts.t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.hs.URL+path, nil)
	require.NoError(ts.t, err)
	return ts.doJSON(req)
}

func (ts *testServer) doJSON(req *http.Request) (int, map[string]any) {
	ts.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(ts.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(ts.t, err)
	var m map[string]any
	if len(bytes.TrimSpace(data)) > 0 {
		require.NoError(ts.t, json.Unmarshal(data, &m), string(data))
	}
	return resp.StatusCode, m
}

// attachState polls GET /api/attach/{id} into an AttachState until cond holds.
func (ts *testServer) attachState(id string, cond func(AttachState) bool, what string) AttachState {
	ts.t.Helper()
	var st AttachState
	eventually(ts.t, 10*time.Second, func() bool {
		resp, err := http.Get(ts.hs.URL + "/api/attach/" + id)
		require.NoError(ts.t, err)
		defer resp.Body.Close()
		require.Equal(ts.t, http.StatusOK, resp.StatusCode, "the page's state answers while Flink misbehaves")
		st = AttachState{}
		require.NoError(ts.t, json.NewDecoder(resp.Body).Decode(&st))
		return cond(st)
	}, what)
	return st
}

func attachBody(flink, interval, maxP string) string {
	b, _ := json.Marshal(map[string]string{"flink": flink, "interval": interval, "maxParallelism": maxP})
	return string(b)
}

func hasReading(st AttachState) bool { return st.UpdatedAt != nil }

func TestAttachShowsGraphFlinksRangesPlannerAndKeyLookup(t *testing.T) {
	flink := attachtest.NewServer(t, attachtest.FixtureDir("flink-2.0"))
	ts := newTestServer(t, fastAttach)

	status, created := ts.attachStart(attachBody(flink.URL, "50ms", ""))
	require.Equal(t, http.StatusCreated, status, created)
	id := created["id"].(string)
	st := ts.attachState(id, hasReading, "a first reading")
	assert.Nil(t, st.Error)
	assert.Empty(t, st.Warnings)
	assert.Equal(t, "50ms", st.Interval)
	assert.Equal(t, attach.LabelEndToEndDuration, st.Labels["endToEnd"], "Flink's own labels")
	assert.Equal(t, attach.LabelCheckpointedDataSize, st.Labels["checkpointedSize"])

	// The job graph: vertices in Flink's order, edges with ship strategies.
	require.Len(t, st.Jobs, 1)
	job := st.Jobs[0]
	assert.Equal(t, "Fraud Scoring", job.Name)
	var keyed []bool
	for _, v := range job.Vertices {
		keyed = append(keyed, v.Keyed)
	}
	assert.Equal(t, []bool{false, true, true, false}, keyed, "HASH inputs make the window and KeyedProcess vertices keyed")
	strategies := map[string]string{}
	for _, e := range job.Edges {
		strategies[e.Source[:6]+"->"+e.Target[:6]] = e.ShipStrategy
	}
	assert.Equal(t, map[string]string{"0a4484->ea632d": "HASH", "ea632d->6cdc5b": "HASH", "ea632d->c27dcf": "REBALANCE"}, strategies)

	// Key-group ranges: Flink's [ceil(i*max/p), floor(((i+1)*max-1)/p)],
	// worked by hand, and equal to rescale.KeyGroupRanges (statelab ranges).
	want := map[string][]rescale.KeyGroupRange{
		fraudWindow: {{Start: 0, End: 63}, {Start: 64, End: 127}, {Start: 128, End: 191}, {Start: 192, End: 255}}, // max 256, p 4
		fraudKeyed:  {{Start: 0, End: 42}, {Start: 43, End: 85}, {Start: 86, End: 127}},                           // max 128, p 3
	}
	for _, v := range job.Vertices {
		if !v.Keyed {
			assert.Empty(t, v.KeyGroups, v.Name)
			continue
		}
		var got []rescale.KeyGroupRange
		for i, kg := range v.KeyGroups {
			assert.Equal(t, i, kg.Subtask)
			got = append(got, kg.Range)
		}
		assert.Equal(t, want[v.ID], got, v.Name)
		assert.Equal(t, rescale.KeyGroupRanges(v.MaxParallelism, v.Parallelism), got, v.Name)
	}

	// The checkpoint timeline is oldest first.
	require.NotEmpty(t, job.Timeline)
	for i := 1; i < len(job.Timeline); i++ {
		assert.Less(t, job.Timeline[i-1].ID, job.Timeline[i].ID)
	}
	assert.True(t, job.Checkpoints.Enabled)

	t.Run("planner", func(t *testing.T) {
		status, plan := ts.getJSON("/api/attach/" + id + "/rescale?job=" + fraudJob + "&vertex=" + fraudKeyed + "&to=4")
		require.Equal(t, http.StatusOK, status, plan)
		// 3 -> 4 over 128 key groups: old owners 0-42:0, 43-85:1, 86-127:2;
		// new 0-31:0, 32-63:1, 64-95:2, 96-127:3. Owners change on 32-42,
		// 64-85 and 96-127: 11 + 22 + 32 = 65 key groups.
		assert.EqualValues(t, 3, plan["from"])
		assert.EqualValues(t, 4, plan["to"])
		assert.Len(t, plan["moved"], 65)
		assert.Equal(t, []any{
			map[string]any{"start": 32.0, "end": 42.0}, map[string]any{"start": 64.0, "end": 85.0}, map[string]any{"start": 96.0, "end": 127.0},
		}, plan["movedRuns"])
		subs := plan["subtasks"].([]any)
		require.Len(t, subs, 4)
		assert.Equal(t, map[string]any{"start": 96.0, "end": 127.0}, subs[3].(map[string]any)["range"])
		// New subtask 1 (32-63) reads 32-42 from old 0 and 43-63 from old 1.
		assert.Equal(t, []any{
			map[string]any{"oldSubtask": 0.0, "range": map[string]any{"start": 32.0, "end": 42.0}},
			map[string]any{"oldSubtask": 1.0, "range": map[string]any{"start": 43.0, "end": 63.0}},
		}, subs[1].(map[string]any)["reads"])

		for _, tc := range []struct {
			query, code string
			status      int
		}{
			{"&vertex=" + fraudKeyed + "&to=0", AttachBadArgs, http.StatusBadRequest},
			{"&vertex=" + fraudKeyed + "&to=129", AttachBadArgs, http.StatusBadRequest},
			{"&vertex=" + fraudKeyed + "&to=three", AttachBadArgs, http.StatusBadRequest},
			{"&vertex=" + fraudSource + "&to=3", AttachNotKeyed, http.StatusBadRequest},
			{"&vertex=ffffffffffffffffffffffffffffffff&to=3", AttachUnknownVertex, http.StatusNotFound},
		} {
			status, body := ts.getJSON("/api/attach/" + id + "/rescale?job=" + fraudJob + tc.query)
			assert.Equal(t, tc.status, status, tc.query)
			e := body["error"].(map[string]any)
			assert.Equal(t, tc.code, e["code"], tc.query)
			assert.NotEmpty(t, e["message"], tc.query)
		}
	})

	t.Run("key lookup", func(t *testing.T) {
		for _, tc := range []struct {
			typ, key string
			hash     int32
		}{
			// "flink".hashCode() = ((((102*31+108)*31+105)*31+110)*31+107).
			{"string", "flink", 97520992},
			{"int", "42", 42},                // Integer.hashCode is the value
			{"long", "4294967296", 1},        // (int)(v ^ (v >>> 32)) = (int)(2^32 ^ 1) = 1
			{"long", "-1", 0},                // (int)(-1 ^ 0xffffffff) = 0
			{"int", "-2147483648", -1 << 31}, // Integer.MIN_VALUE
		} {
			q := url.Values{"job": {fraudJob}, "vertex": {fraudKeyed}, "type": {tc.typ}, "key": {tc.key}}
			status, body := ts.getJSON("/api/attach/" + id + "/key?" + q.Encode())
			require.Equal(t, http.StatusOK, status, body)
			assert.EqualValues(t, tc.hash, body["hashCode"], tc.key)
			kg := rescale.KeyGroupForKeyHash(tc.hash, 128)
			assert.EqualValues(t, kg, body["keyGroup"], tc.key)
			assert.EqualValues(t, kg*3/128, body["subtask"], tc.key)
			r := body["range"].(map[string]any)
			assert.LessOrEqual(t, r["start"].(float64), float64(kg))
			assert.GreaterOrEqual(t, r["end"].(float64), float64(kg))
		}
		for _, q := range []url.Values{
			{"job": {fraudJob}, "vertex": {fraudKeyed}, "type": {"int"}, "key": {"x"}},
			{"job": {fraudJob}, "vertex": {fraudKeyed}, "type": {"int"}, "key": {"2147483648"}},
			{"job": {fraudJob}, "vertex": {fraudKeyed}, "type": {"double"}, "key": {"1"}},
			{"job": {fraudJob}, "vertex": {fraudSource}, "type": {"string"}, "key": {"a"}},
		} {
			status, body := ts.getJSON("/api/attach/" + id + "/key?" + q.Encode())
			assert.Equal(t, http.StatusBadRequest, status, q.Encode())
			assert.NotEmpty(t, body["error"].(map[string]any)["message"])
		}
	})

	t.Run("a second page shares the reading", func(t *testing.T) {
		status, again := ts.attachStart(attachBody(flink.URL, "50ms", ""))
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, id, again["id"])
	})

	for _, r := range flink.Requests() {
		assert.True(t, strings.HasPrefix(r, "GET "), "attach only reads: %s", r)
	}

	t.Run("stop", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodDelete, ts.hs.URL+"/api/attach/"+id, nil)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		status, body := ts.getJSON("/api/attach/" + id)
		assert.Equal(t, http.StatusNotFound, status)
		assert.Equal(t, AttachUnknownWatch, body["error"].(map[string]any)["code"])
	})
}

func TestAttachErrorsAreShownWithWhatToDo(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	notFlink := attachtest.NewServer(t, attachtest.FixtureDir("flink-2.0"))
	notFlink.Override("/jobs", attachtest.Response{Status: 200, ContentType: "text/html", Body: "<!doctype html><title>Login</title>"})
	huge := attachtest.NewServer(t, attachtest.FixtureDir("flink-2.0"))
	huge.Override("/jobs", attachtest.Response{Status: 200, ContentType: "application/json",
		Body: `{"jobs":[` + strings.Repeat(`{"id":"00000000000000000000000000000000","status":"RUNNING"},`, 400) + `{"id":"0","status":"RUNNING"}]}`})
	vanished := attachtest.NewServer(t, attachtest.FixtureDir("flink-1.13"))
	old := attachtest.NewServer(t, attachtest.FixtureDir("flink-1.12"))

	ts := newTestServer(t, func(c *Config) {
		fastAttach(c)
		c.Attach.MaxAnswer = 8 << 10
	})
	tests := []struct {
		name, flink string
		check       func(t *testing.T, st AttachState)
	}{
		{"unreachable", closedURL, func(t *testing.T, st AttachState) {
			require.NotNil(t, st.Error)
			assert.Equal(t, AttachUnreachable, st.Error.Code)
			assert.Contains(t, st.Error.Message, "check that the JobManager is running")
			assert.Empty(t, st.Jobs)
		}},
		{"not flink", notFlink.URL, func(t *testing.T, st AttachState) {
			require.NotNil(t, st.Error)
			assert.Equal(t, AttachNotFlink, st.Error.Code)
			assert.Contains(t, st.Error.Message, "text/html")
			assert.Contains(t, st.Error.Message, "the one the Flink web UI is served from")
		}},
		{"too large", huge.URL, func(t *testing.T, st AttachState) {
			require.NotNil(t, st.Error)
			assert.Equal(t, AttachTooLarge, st.Error.Code)
			assert.Contains(t, st.Error.Message, "more than 8 KiB")
		}},
		{"vanished job", vanished.URL, func(t *testing.T, st AttachState) {
			assert.Nil(t, st.Error)
			require.Len(t, st.Jobs, 1, "the other job is shown")
			require.Len(t, st.Warnings, 1)
			w := st.Warnings[0]
			assert.Equal(t, AttachJobVanished, w.Code)
			assert.Equal(t, "e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9", w.JobID)
			assert.Contains(t, w.Message, "vanished")
		}},
		{"missing max parallelism", old.URL, func(t *testing.T, st AttachState) {
			assert.Nil(t, st.Error)
			require.Len(t, st.Jobs, 1)
			var missing []AttachIssue
			for _, w := range st.Warnings {
				if w.Code == AttachMissingField {
					missing = append(missing, w)
				}
			}
			require.Len(t, missing, 1, "%+v", st.Warnings)
			assert.Equal(t, "maxParallelism", missing[0].Field, "the warning says which field")
			assert.Contains(t, missing[0].Message, "max parallelism field", "the page's own advice, not the CLI flag")
			assert.NotContains(t, missing[0].Message, "--max-parallelism")
			for _, v := range st.Jobs[0].Vertices {
				assert.Empty(t, v.KeyGroups, "no guessed ranges for %s", v.Name)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, created := ts.attachStart(attachBody(tc.flink, "50ms", ""))
			require.Equal(t, http.StatusCreated, status, created)
			st := ts.attachState(created["id"].(string), func(st AttachState) bool { return st.Polls > 0 }, "a finished reading")
			tc.check(t, st)
		})
	}

	t.Run("a max parallelism given in the form", func(t *testing.T) {
		status, created := ts.attachStart(attachBody(old.URL, "50ms", "128"))
		require.Equal(t, http.StatusCreated, status, created)
		st := ts.attachState(created["id"].(string), hasReading, "a reading")
		for _, v := range st.Jobs[0].Vertices {
			if v.Keyed {
				assert.Equal(t, attach.SourceFlag, v.MaxParallelismSource)
				// Fraud Detector, p 3 over 128: [0,42], [43,85], [86,127].
				require.Len(t, v.KeyGroups, 3)
				assert.Equal(t, rescale.KeyGroupRange{Start: 43, End: 85}, v.KeyGroups[1].Range)
			}
		}
	})

	t.Run("bad requests", func(t *testing.T) {
		for _, tc := range []struct {
			body, code string
		}{
			{attachBody("", "2s", ""), AttachBadAddress},
			{attachBody("file:///etc/passwd", "2s", ""), AttachBadAddress},
			{attachBody("ftp://flink:21", "2s", ""), AttachBadAddress},
			{attachBody("http://admin:secret@localhost:8081", "2s", ""), AttachBadAddress},
			{attachBody("http://localhost:8081", "1ms", ""), AttachBadArgs},
			{attachBody("http://localhost:8081", "2 hours", ""), AttachBadArgs},
			{attachBody("http://localhost:8081", "2s", "many"), AttachBadArgs},
			{`not json`, AttachBadArgs},
		} {
			status, body := ts.attachStart(tc.body)
			assert.Equal(t, http.StatusBadRequest, status, tc.body)
			e := body["error"].(map[string]any)
			assert.Equal(t, tc.code, e["code"], tc.body)
			assert.NotEmpty(t, e["message"], tc.body)
		}
		status, body := ts.getJSON("/api/attach/nosuchwatch")
		assert.Equal(t, http.StatusNotFound, status)
		assert.Equal(t, AttachUnknownWatch, body["error"].(map[string]any)["code"])
	})
}

func TestAttachKeepsTheLastGoodReadingWhenFlinkGoesAway(t *testing.T) {
	flink := attachtest.NewServer(t, attachtest.FixtureDir("flink-2.0"))
	ts := newTestServer(t, fastAttach)
	status, created := ts.attachStart(attachBody(flink.URL, "20ms", ""))
	require.Equal(t, http.StatusCreated, status)
	id := created["id"].(string)
	ts.attachState(id, hasReading, "a first reading")
	flink.Override("/jobs", attachtest.Response{Status: 502, ContentType: "text/html", Body: "<html>Bad Gateway</html>"})
	st := ts.attachState(id, func(st AttachState) bool { return st.Error != nil }, "the error")
	assert.Equal(t, AttachNotFlink, st.Error.Code)
	assert.True(t, st.Stale)
	require.Len(t, st.Jobs, 1, "the last good reading stays on the page")
	assert.Equal(t, "Fraud Scoring", st.Jobs[0].Name)
	// The planner keeps working on the last good reading.
	status, _ = ts.getJSON("/api/attach/" + id + "/rescale?job=" + fraudJob + "&vertex=" + fraudKeyed + "&to=2")
	assert.Equal(t, http.StatusOK, status)
}

func TestAttachLimitsOriginAndIdleWatches(t *testing.T) {
	a := attachtest.NewServer(t, attachtest.FixtureDir("flink-2.0"))
	b := attachtest.NewServer(t, attachtest.FixtureDir("flink-1.17"))
	ts := newTestServer(t, func(c *Config) {
		c.Attach = AttachConfig{MinInterval: 10 * time.Millisecond, MaxWatches: 1, IdleTimeout: 300 * time.Millisecond}
	})
	status, first := ts.attachStart(attachBody(a.URL, "50ms", ""))
	require.Equal(t, http.StatusCreated, status)
	status, body := ts.attachStart(attachBody(b.URL, "50ms", ""))
	assert.Equal(t, http.StatusTooManyRequests, status)
	assert.Equal(t, AttachLimit, body["error"].(map[string]any)["code"])

	req, _ := http.NewRequest(http.MethodPost, ts.hs.URL+"/api/attach", strings.NewReader(attachBody(b.URL, "50ms", "")))
	req.Header.Set("Origin", "http://elsewhere.example")
	status, _ = ts.doJSON(req)
	assert.Equal(t, http.StatusForbidden, status, "another site's page may not make StateLab read an address")

	// Nobody reads the first watch (a read would keep it alive): after its
	// idle timeout it stops, and its slot is free again. Asking for another
	// watch does not read the first, so the test asks until the slot is free.
	id := first["id"].(string)
	eventually(t, time.Minute, func() bool {
		status, _ = ts.attachStart(attachBody(b.URL, "50ms", ""))
		require.Contains(t, []int{http.StatusTooManyRequests, http.StatusCreated}, status)
		return status == http.StatusCreated
	}, "the idle watch's slot to be free")
	status, body = ts.getJSON("/api/attach/" + id)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, AttachUnknownWatch, body["error"].(map[string]any)["code"])
}

func TestAttachPageRendersTheFormInBothLanguages(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, tc := range []struct{ lang, want string }{{"en", "JobManager REST address"}, {"zh", "JobManager 的 REST 地址"}} {
		resp, err := http.Get(ts.hs.URL + "/attach?flink=" + url.QueryEscape("http://jm:8081") + "&interval=5s&lang=" + tc.lang)
		require.NoError(t, err)
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		html := string(data)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Contains(t, html, tc.want)
		assert.Contains(t, html, `value="http://jm:8081"`, "the form keeps the address")
		assert.Contains(t, html, `value="5s"`)
		assert.Contains(t, html, `src="/static/js/attach.js"`)
		assert.Contains(t, html, `href="/attach" aria-current="page"`, "the nav marks the page")
		assert.Contains(t, html, `href="/performance"`)
		assert.NotContains(t, html, "<script>")
		assert.NotContains(t, html, " style=")
	}
}

func TestCappedBodyStopsAtTheCap(t *testing.T) {
	for _, tc := range []struct {
		size    int
		tooMuch bool
	}{{0, false}, {99, false}, {100, false}, {101, true}, {5000, true}} {
		body := &cappedBody{ReadCloser: io.NopCloser(bytes.NewReader(bytes.Repeat([]byte("x"), tc.size))), left: 100, url: "u", max: 100}
		data, err := io.ReadAll(body)
		if tc.tooMuch {
			var e *AnswerTooLargeError
			assert.ErrorAs(t, err, &e, "size %d", tc.size)
			assert.LessOrEqual(t, len(data), 101)
		} else {
			assert.NoError(t, err, "size %d", tc.size)
			assert.Len(t, data, tc.size)
		}
	}
}

// TestAttachAndPerfTextsAreInBothCatalogues checks every key the two pages'
// scripts ask for, the advice for every error code, Flink's labels, and
// the pages as the server renders them.
func TestAttachAndPerfTextsAreInBothCatalogues(t *testing.T) {
	c, err := LoadCatalog()
	require.NoError(t, err)
	has := func(key string) bool {
		_, en := c.msgs["en"][key]
		_, zh := c.msgs["zh"][key]
		return en && zh
	}
	call := regexp.MustCompile(`\bt\('([a-zA-Z0-9.-]+)'`)
	for _, file := range []string{"js/attach.js", "js/views/attachjob.js", "js/perf.js"} {
		src, err := fs.ReadFile(static.FS, file)
		require.NoError(t, err)
		keys := call.FindAllStringSubmatch(string(src), -1)
		require.NotEmpty(t, keys, file)
		for _, m := range keys {
			assert.True(t, has(m[1]), "%s asks for %q", file, m[1])
		}
	}
	for _, code := range []string{AttachBadAddress, AttachBadArgs, AttachLimit, AttachUnknownWatch, AttachUnreachable, AttachNotFlink,
		AttachTooLarge, AttachJobVanished, AttachMissingField, AttachFlinkError, AttachNotKeyed, AttachUnknownVertex, AttachFailed, "network"} {
		assert.True(t, has("attach.err."+code+".title"), code)
		assert.True(t, has("attach.err."+code+".todo"), code)
	}
	for key, label := range attachLabels {
		assert.True(t, has("attach.label."+key), key)
		assert.Equal(t, label, c.T("en")("attach.label."+key), "English shows Flink's own word for %s", key)
	}
	for _, code := range []string{PerfBusy, PerfCooldown, PerfOff} {
		assert.True(t, has("perf.err."+code), code)
	}
	for _, name := range chartOrder {
		assert.True(t, has("perf.chart."+strings.TrimSuffix(name, ".svg")), name)
	}

	ts := newTestServer(t, nil)
	keyLike := regexp.MustCompile(`>\s*((?:attach|perf|nav)\.[a-zA-Z0-9.-]+)\s*<`)
	for _, path := range []string{"/attach", "/performance"} {
		for _, lang := range []string{"en", "zh"} {
			_, html, _ := getPage(t, ts.hs.URL+path+"?lang="+lang)
			for _, m := range keyLike.FindAllStringSubmatch(html, -1) {
				t.Errorf("%s (%s) shows an untranslated key %q", path, lang, m[1])
			}
		}
	}
}
