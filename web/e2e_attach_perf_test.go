package web

import (
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/attach/attachtest"
)

// TestBrowserAttachShowsTheKeyGroupStripPlannerAndTimeline opens /attach
// against the flink-2.0 fixtures and checks what a learner sees.
func TestBrowserAttachShowsTheKeyGroupStripPlannerAndTimeline(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowserWith(t, fastAttach)
	flink := attachtest.NewServer(t, attachtest.FixtureDir("flink-2.0"))

	b.run(chromedp.Navigate(b.url + "/attach?lang=en"))
	b.run(chromedp.WaitVisible(chromedp.CSS(`#attach-form`)))
	b.shot("attach-01-form")
	b.run(chromedp.SendKeys(chromedp.CSS(`#attach-flink`), flink.URL),
		chromedp.SetValue(chromedp.CSS(`#attach-interval`), "1s"),
		chromedp.Click(chromedp.CSS(`#attach-go`)))
	b.waitJS(20*time.Second, "the job graph", `document.querySelectorAll('.attach-vertex').length === 4`)
	b.waitJS(10*time.Second, "two key-group strips", `document.querySelectorAll('.attach-kg').length === 2`)

	// The KeyedProcess vertex: max parallelism 128 over 3 subtasks, Flink's
	// ranges [0,42], [43,85], [86,127].
	card := `document.querySelector('.attach-kg[data-vertex="` + fraudKeyed + `"]')`
	b.waitJS(10*time.Second, "the strip's cells", card+`?.querySelectorAll('.strip:not(.attach-after) rect.kg').length === 128`)
	owners := eval[[]string](b, `[...`+card+`.querySelectorAll('.strip:not(.attach-after) rect.kg')].map(r => r.dataset.owner)`)
	require.Len(t, owners, 128)
	for g, o := range owners {
		want := "0"
		switch {
		case g >= 86:
			want = "2"
		case g >= 43:
			want = "1"
		}
		assert.Equal(t, want, o, "key group %d", g)
	}
	legend := eval[[]string](b, `[...`+card+`.querySelectorAll('.strip-legend')[0].querySelectorAll('li')].map(li => li.innerText)`)
	require.Len(t, legend, 3)
	assert.Contains(t, legend[1], "43–85")
	// The window vertex: 256 key groups over 4 subtasks.
	assert.Equal(t, 256, eval[int](b, `document.querySelector('.attach-kg[data-vertex="`+fraudWindow+`"] .strip rect.kg') ? document.querySelectorAll('.attach-kg[data-vertex="`+fraudWindow+`"] .strip:not(.attach-after) rect.kg').length : 0`))

	// The planner starts at parallelism + 1: 3 -> 4 moves 65 of 128.
	b.waitJS(10*time.Second, "the rescale plan", card+`.querySelector('.attach-plan-summary')?.dataset.moved === '65'`)
	assert.Equal(t, 65, eval[int](b, card+`.querySelectorAll('.attach-after rect.kg.moving').length`))
	// Rescale to 6 instead.
	eval[bool](b, `(() => { const el = `+card+`.querySelector('.attach-to'); el.value = '6'; el.dispatchEvent(new Event('input')); return true; })()`)
	b.waitJS(10*time.Second, "the plan for 6", card+`.querySelectorAll('.attach-plan .strip-legend li').length === 6`)

	// Key lookup: "flink" (hashCode 97520992) is highlighted on the strip.
	b.run(chromedp.SendKeys(chromedp.CSS(`.attach-kg[data-vertex="`+fraudKeyed+`"] .attach-key`), "flink"))
	b.waitJS(10*time.Second, "the key's answer", card+`.querySelector('.attach-key-out').textContent.includes('hashCode 97520992')`)
	assert.Equal(t, 1, eval[int](b, card+`.querySelectorAll('.strip:not(.attach-after) rect.kg.highlight').length`))

	// The checkpoint timeline with Flink's labels.
	b.waitJS(10*time.Second, "the timeline", `document.querySelectorAll('.attach-timeline .cp-dot').length > 0`)
	heads := eval[[]string](b, `[...document.querySelectorAll('.attach-cp-table thead th')].map(th => th.innerText)`)
	assert.Contains(t, heads, "End to End Duration")
	assert.Contains(t, heads, "Checkpointed Data Size")
	assert.Contains(t, eval[string](b, `location.search`), "flink="+url.QueryEscape(flink.URL), "the reading can be bookmarked")
	b.shot("attach-02-fraud-scoring")

	// Flink goes away: the error and what to do show, the views stay.
	flink.Override("/jobs", attachtest.Response{Status: 502, ContentType: "text/html", Body: "<html><body>Bad Gateway</body></html>"})
	b.waitJS(20*time.Second, "the error box", `!document.getElementById('attach-error').hidden && document.getElementById('attach-error').dataset.code === 'not-flink'`)
	assert.Contains(t, eval[string](b, `document.getElementById('attach-error').innerText`), "Point StateLab at the address the Flink web UI is served from")
	assert.Equal(t, 2, eval[int](b, `document.querySelectorAll('.attach-kg').length`), "the last good reading stays")
	b.shot("attach-03-not-flink-keeps-last-reading")
}

func TestBrowserAttachErrorsInChinese(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowserWith(t, fastAttach)
	old := attachtest.NewServer(t, attachtest.FixtureDir("flink-1.12"))
	b.run(chromedp.Navigate(b.url + "/attach?lang=zh&interval=1s&flink=" + url.QueryEscape(old.URL)))
	b.waitJS(20*time.Second, "the missing-field warning", `document.querySelector('#attach-warnings li[data-code="missing-field"]') !== null`)
	assert.Contains(t, eval[string](b, `document.getElementById('attach-warnings').innerText`), "最大并行度")
	assert.Equal(t, 1, eval[int](b, `document.querySelectorAll('.attach-missing').length`), "the keyed vertex says what to do")
	b.shot("attach-04-missing-field-zh")
	// What to do, done from the page: assume Flink's default, 128 for p 3.
	b.clickLive(`.attach-use-default`)
	b.waitJS(20*time.Second, "the strip from the assumed default", `document.querySelectorAll('.attach-kg .strip:not(.attach-after) rect.kg').length === 128`)
	assert.Equal(t, "default", eval[string](b, `document.getElementById('attach-maxp').value`))
	assert.Contains(t, eval[string](b, `location.search`), "maxParallelism=default")

	b.run(chromedp.Navigate(b.url + "/attach?lang=en&flink=" + url.QueryEscape("http://127.0.0.1:1")))
	b.waitJS(20*time.Second, "the unreachable error", `document.getElementById('attach-error').dataset.code === 'unreachable'`)
	assert.Contains(t, eval[string](b, `document.getElementById('attach-error').innerText`), "rest.port")
	b.shot("attach-05-unreachable")
}

// TestBrowserPerformanceShowsChartsAndRunsTheQuickBench opens
// /performance, sees the committed charts, runs the (tiny) quick bench and
// sees its results drawn the same way.
func TestBrowserPerformanceShowsChartsAndRunsTheQuickBench(t *testing.T) {
	t.Parallel() // the quick bench's figures are drawn, not judged
	b := newBrowserWith(t, tinyPerf)
	b.run(chromedp.Navigate(b.url + "/performance?lang=en"))
	b.waitJS(20*time.Second, "the committed charts", `[...document.querySelectorAll('#perf-committed .perf-chart img')].length >= 5 &&
		[...document.querySelectorAll('#perf-committed .perf-chart img')].every(i => i.complete && i.naturalWidth > 0)`)
	assert.Positive(t, eval[int](b, `document.querySelectorAll('#perf-committed tbody tr').length`))
	b.shot("perf-01-committed")

	b.clickLive(`#perf-run-btn`)
	b.waitJS(2*time.Minute, "the quick run's results", `document.getElementById('perf-latest') !== null &&
		[...document.querySelectorAll('#perf-latest .perf-chart img')].length >= 1 &&
		[...document.querySelectorAll('#perf-latest .perf-chart img')].every(i => i.complete && i.naturalWidth > 0)`)
	assert.Positive(t, eval[int](b, `document.querySelectorAll('#perf-latest tbody tr').length`))
	assert.True(t, eval[bool](b, `document.getElementById('perf-run-btn').disabled`), "the cooldown holds the button")
	b.shot("perf-02-after-quick-run")

	// The learner switches to Chinese with the language switch: the table
	// and the charts, committed and latest, are drawn in Chinese (the
	// charts again from bench.json, web/perf_zh.go), not left in English.
	b.clickLive(`a[data-lang-link="zh"]`)
	b.waitJS(20*time.Second, "the Chinese page's charts", `document.documentElement.lang === 'zh' &&
		document.getElementById('perf-latest') !== null &&
		[...document.querySelectorAll('.perf-chart img')].length >= 6 &&
		[...document.querySelectorAll('.perf-chart img')].every(i => i.complete && i.naturalWidth > 0)`)
	// Every case name in both tables has Chinese in it; the chips too.
	untranslated := eval[[]string](b, `[...document.querySelectorAll('.perf-table tbody tr')].flatMap(tr => {
		const cells = tr.querySelectorAll('td');
		return [cells[0].innerText, cells[1].innerText].filter(s => !/\p{Script=Han}/u.test(s) && !/^(ValueState|WebSocket)$/.test(s.trim()));
	})`)
	assert.Empty(t, untranslated, "case names and groups left in English")
	// Each chart the page shows, as the browser fetches it, is in Chinese.
	charts := eval[[]string](b, `[...document.querySelectorAll('.perf-chart img')].map(i => i.getAttribute('src'))`)
	require.GreaterOrEqual(t, len(charts), 6)
	for _, src := range charts {
		assert.Contains(t, src, "lang=zh", src)
		svg, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`fetch(`+strconv.Quote(src)+`).then(r => r.text())`, chromedp.EvalAwaitPromise))
		require.NoError(t, err, src)
		assert.Regexp(t, `\p{Han}`, svg, src)
		assert.NotContains(t, svg, "Each case against its baseline", src)
		assert.NotContains(t, svg, "state size (keys)", src)
	}
	b.shot("perf-03-zh")
}
