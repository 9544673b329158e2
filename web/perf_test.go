package web

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/bench"
	"github.com/statelab/statelab/docs"
)

// tinyBench are sizes that measure every group in a second or two.
var tinyBench = bench.Sizes{WordCountRecords: 1_000, WordCountKeys: 50, Parallelisms: []int{1},
	ValueStateRecords: 1_000, PebbleRecords: 200, StateSizes: []int{100, 1_000}, CheckpointRounds: 1,
	Viewers: []int{1}, Events: 20}

func tinyPerf(c *Config) {
	c.Perf = PerfConfig{Sizes: &tinyBench, Rounds: 1, Cooldown: time.Hour}
}

func committedReport(t *testing.T) bench.Report {
	t.Helper()
	data, err := fs.ReadFile(docs.Bench, "bench/bench.json")
	require.NoError(t, err)
	var r bench.Report
	require.NoError(t, json.Unmarshal(data, &r))
	return r
}

func getPage(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data), resp.Header
}

func TestPerformancePageShowsTheCommittedResults(t *testing.T) {
	ts := newTestServer(t, tinyPerf)
	rep := committedReport(t)
	for _, tc := range []struct{ lang, heading string }{{"en", "Committed results (docs/bench)"}, {"zh", "已提交的结果（docs/bench）"}} {
		status, html, hdr := getPage(t, ts.hs.URL+"/performance?lang="+tc.lang)
		require.Equal(t, http.StatusOK, status)
		assert.Contains(t, hdr.Get("Content-Security-Policy"), "script-src 'self'")
		assert.NotContains(t, html, "<script>")
		assert.NotContains(t, html, " style=")
		assert.Contains(t, html, tc.heading)
		assert.Contains(t, html, `src="/static/js/perf.js"`)
		assert.Contains(t, html, `href="/performance" aria-current="page"`)
		// One table row per case of docs/bench/bench.json, with its name.
		section := html[strings.Index(html, `id="perf-committed"`):]
		assert.Equal(t, len(rep.Cases), strings.Count(section, "<tr class="), "a row per case")
		for _, c := range rep.Cases {
			name := c.Name
			if tc.lang == "zh" {
				// The bench's case names, in Chinese (web/perf_zh.go).
				var ok bool
				name, ok = benchZH(c.Name)
				assert.True(t, ok, c.Name)
				assert.NotContains(t, section, ">"+htmlEscape(c.Name)+"<")
			}
			assert.Contains(t, section, htmlEscape(name))
		}
		met, all := bench.TargetsMet(&rep)
		assert.Equal(t, 1, strings.Count(section, "perf-targets"))
		if tc.lang == "en" {
			assert.Contains(t, section, "Targets met: "+strconv.Itoa(met)+" of "+strconv.Itoa(all))
			assert.Contains(t, section, `src="/performance/results/committed/ratios.svg"`)
			assert.Contains(t, section, `<span class="chip">wordcount</span>`)
			assert.Contains(t, section, " records/s<")
		} else {
			assert.Contains(t, section, `src="/performance/results/committed/ratios.svg?lang=zh"`)
			assert.Contains(t, section, `<span class="chip">词频统计</span>`)
			assert.Contains(t, section, " 条记录/秒<")
			assert.NotContains(t, section, " records/s<")
		}
		assert.True(t, strings.Contains(html, `id="perf-run-btn"`), "the run button")
	}

	// The charts are the committed files, byte for byte.
	for _, name := range []string{"ratios.svg", "checkpoint-bytes.svg", "rescale-time.svg", "bench.json"} {
		status, body, hdr := getPage(t, ts.hs.URL+"/performance/results/committed/"+name)
		require.Equal(t, http.StatusOK, status, name)
		want, err := fs.ReadFile(docs.Bench, "bench/"+name)
		require.NoError(t, err)
		assert.Equal(t, string(want), body, name)
		if strings.HasSuffix(name, ".svg") {
			assert.Equal(t, "image/svg+xml", hdr.Get("Content-Type"))
		}
	}
	// In Chinese the charts are drawn again from bench.json with every
	// word translated: the ratio chart's title and each case's name.
	for _, name := range []string{"checkpoint-bytes.svg", "rescale-time.svg"} {
		status, body, hdr := getPage(t, ts.hs.URL+"/performance/results/committed/"+name+"?lang=zh")
		require.Equal(t, http.StatusOK, status, name)
		assert.Equal(t, "image/svg+xml", hdr.Get("Content-Type"))
		assert.NotContains(t, body, "slope ", name)
		assert.Contains(t, body, "斜率", name)
		assert.Contains(t, body, "状态大小（键数）", name)
	}
	_, zhRatios, _ := getPage(t, ts.hs.URL+"/performance/results/committed/ratios.svg?lang=zh")
	assert.Contains(t, zhRatios, "每个测试项与其基线之比")
	zhName, _ := benchZH(rep.Cases[0].Name)
	assert.Contains(t, zhRatios, ">"+htmlEscape(zhName)+"<")
	assert.NotContains(t, zhRatios, ">"+htmlEscape(rep.Cases[0].Name)+"<")
	_, zhJSON, _ := getPage(t, ts.hs.URL+"/performance/results/committed/bench.json?lang=zh")
	want, err := fs.ReadFile(docs.Bench, "bench/bench.json")
	require.NoError(t, err)
	assert.Equal(t, string(want), zhJSON, "bench.json is the bench's own output in every language")
	for _, p := range []string{"/performance/results/committed/nope.svg", "/performance/results/committed/nope.svg?lang=zh", "/performance/results/committed/..%2Fdocs.go",
		"/performance/results/latest/ratios.svg", "/performance/results/other/ratios.svg"} {
		status, _, _ := getPage(t, ts.hs.URL+p)
		assert.Equal(t, http.StatusNotFound, status, p)
	}
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

func TestPerfRunnerMeasuresTinyQuickBenchOneRunAtATime(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newPerfRunner(ctx, PerfConfig{Sizes: &tinyBench, Rounds: 1, Cooldown: time.Hour}, t.TempDir())
	defer r.close()
	st := r.Status()
	assert.Equal(t, PerfIdle, st.State)
	assert.True(t, st.CanRun)
	assert.Equal(t, []string{bench.GroupWordCount, bench.GroupValueState, bench.GroupCheckpoint, bench.GroupRescale, bench.GroupGrowth}, st.Groups,
		"without StateLab's hub injected the WebSocket group is left out")

	run, e, status := r.Start()
	require.Nil(t, e)
	assert.Equal(t, 1, run)
	assert.Equal(t, http.StatusAccepted, status)
	_, e, status = r.Start()
	require.NotNil(t, e)
	assert.Equal(t, PerfBusy, e.Code)
	assert.Equal(t, http.StatusConflict, status)
	assert.False(t, r.Status().CanRun)

	eventually(t, 2*time.Minute, func() bool { return r.Status().State != PerfRunning }, "the run to end")
	st = r.Status()
	require.Equal(t, PerfDone, st.State, st.Error)
	assert.Equal(t, len(st.Groups), st.Done)
	assert.NotEmpty(t, st.Lines, "progress lines from the bench")
	assert.Greater(t, st.Elapsed, 0.0)

	res, latestRun := r.Latest()
	require.NotNil(t, res)
	assert.Equal(t, 1, latestRun)
	assert.True(t, res.report.Quick)
	assert.Equal(t, st.Cases, len(res.report.Cases))
	checkReportChinese(t, res.report) // every name of the quick run's groups has its Chinese
	// Cases in group order, the log-log slopes last, as one run writes them.
	order := map[string]int{bench.GroupWordCount: 0, bench.GroupValueState: 1, bench.GroupCheckpoint: 2, bench.GroupRescale: 3, bench.GroupScaling: 9}
	last := -1
	seen := map[string]bool{}
	for _, c := range res.report.Cases {
		o, ok := order[c.Group]
		require.True(t, ok, "unexpected group %s", c.Group)
		assert.GreaterOrEqual(t, o, last, "%s after a later group", c.Name)
		last = o
		seen[c.Group] = true
	}
	for _, g := range []string{bench.GroupValueState, bench.GroupCheckpoint, bench.GroupRescale, bench.GroupScaling} {
		assert.True(t, seen[g], "group %s measured", g)
	}
	for _, f := range []string{"bench.json", "ratios.svg", "checkpoint-bytes.svg", "checkpoint-time.svg", "rescale-time.svg", "rescale-bytes.svg"} {
		assert.Contains(t, res.files, f)
	}
	assert.Contains(t, string(res.files["ratios.svg"]), "<svg")

	// The cooldown refuses an immediate second run.
	_, e, status = r.Start()
	require.NotNil(t, e)
	assert.Equal(t, PerfCooldown, e.Code)
	assert.Equal(t, http.StatusTooManyRequests, status)
	st = r.Status()
	assert.False(t, st.CanRun)
	assert.Positive(t, st.WaitSeconds)
}

func TestPerfRunnerCancelTimeoutAndDisabled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	r := newPerfRunner(ctx, PerfConfig{Sizes: &tinyBench, Rounds: 1, Cooldown: time.Millisecond}, t.TempDir())
	_, e, _ := r.Start()
	require.Nil(t, e)
	assert.True(t, r.Cancel())
	eventually(t, time.Minute, func() bool { return r.Status().State != PerfRunning }, "the cancelled run to end")
	assert.Equal(t, PerfCancelled, r.Status().State)
	res, _ := r.Latest()
	assert.Nil(t, res, "a cancelled run leaves no results")
	assert.False(t, r.Cancel(), "nothing left to cancel")
	r.close()

	r = newPerfRunner(ctx, PerfConfig{Sizes: &tinyBench, Rounds: 1, Timeout: time.Nanosecond}, t.TempDir())
	_, e, _ = r.Start()
	require.Nil(t, e)
	eventually(t, time.Minute, func() bool { return r.Status().State != PerfRunning }, "the capped run to end")
	st := r.Status()
	assert.Equal(t, PerfFailed, st.State)
	assert.Contains(t, st.Error, "longer than its cap")
	r.close()

	r = newPerfRunner(ctx, PerfConfig{Disabled: true}, t.TempDir())
	_, e, status := r.Start()
	require.NotNil(t, e)
	assert.Equal(t, PerfOff, e.Code)
	assert.Equal(t, http.StatusForbidden, status)
	assert.False(t, r.Status().CanRun)
}

func TestPerformancePageRunsTheQuickBenchAndShowsIt(t *testing.T) {
	ts := newTestServer(t, tinyPerf)
	req, _ := http.NewRequest(http.MethodPost, ts.hs.URL+"/api/perf/run", nil)
	req.Header.Set("Origin", "http://elsewhere.example")
	status, _ := ts.doJSON(req)
	assert.Equal(t, http.StatusForbidden, status, "another site's page may not start a run")

	req, _ = http.NewRequest(http.MethodPost, ts.hs.URL+"/api/perf/run", nil)
	status, body := ts.doJSON(req)
	require.Equal(t, http.StatusAccepted, status, body)
	assert.Equal(t, PerfRunning, body["state"])
	req, _ = http.NewRequest(http.MethodPost, ts.hs.URL+"/api/perf/run", nil)
	status, body = ts.doJSON(req)
	assert.Equal(t, http.StatusConflict, status)
	assert.Equal(t, PerfBusy, body["code"])

	var st PerfStatus
	eventually(t, 2*time.Minute, func() bool {
		_, m := ts.getJSON("/api/perf")
		data, _ := json.Marshal(m)
		st = PerfStatus{}
		require.NoError(t, json.Unmarshal(data, &st))
		return st.State != PerfRunning
	}, "the run to end")
	require.Equal(t, PerfDone, st.State, st.Error)

	status, html, _ := getPage(t, ts.hs.URL+"/performance?lang=en")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, html, `id="perf-latest"`)
	latest := html[strings.Index(html, `id="perf-latest"`):strings.Index(html, `id="perf-committed"`)]
	assert.Contains(t, latest, "Quick run on this server")
	assert.Contains(t, latest, "quick run")
	assert.Equal(t, st.Cases, strings.Count(latest, "<tr class="), "a row per measured case")
	assert.Contains(t, latest, `src="/performance/results/latest/ratios.svg?run=1"`)
	status, svg, hdr := getPage(t, ts.hs.URL+"/performance/results/latest/ratios.svg?run=1")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "image/svg+xml", hdr.Get("Content-Type"))
	assert.True(t, strings.HasPrefix(svg, "<svg"))
}

func TestPerformancePageWithRunsDisabled(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Perf = PerfConfig{Disabled: true} })
	status, html, _ := getPage(t, ts.hs.URL+"/performance?lang=en")
	require.Equal(t, http.StatusOK, status)
	assert.NotContains(t, html, `id="perf-run-btn"`)
	assert.Contains(t, html, "committed results only")
	req, _ := http.NewRequest(http.MethodPost, ts.hs.URL+"/api/perf/run", nil)
	status, body := ts.doJSON(req)
	assert.Equal(t, http.StatusForbidden, status)
	assert.Equal(t, PerfOff, body["code"])
}

func TestMergeReportsKeepsGroupOrderAndSlopesLast(t *testing.T) {
	a := &bench.Report{Schema: 1, Quick: true, Seed: 7, Rounds: 3, Seconds: 1.5, Notes: []string{"n1"},
		Cases: []bench.Case{{Group: "checkpoint", Name: "c1"}, {Group: "scaling", Name: "s1"}}}
	b := &bench.Report{Schema: 1, Seconds: 2, Notes: []string{"n2"},
		Cases: []bench.Case{{Group: "rescale", Name: "r1"}, {Group: "scaling", Name: "s2"}}}
	m := mergeReports([]*bench.Report{a, b})
	var names []string
	for _, c := range m.Cases {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"c1", "r1", "s1", "s2"}, names)
	assert.Equal(t, 3.5, m.Seconds)
	assert.Equal(t, []string{"n1", "n2"}, m.Notes)
	assert.Equal(t, int64(7), m.Seed)
	assert.True(t, m.Quick)
	assert.Len(t, a.Cases, 2, "the inputs are not changed")
}
