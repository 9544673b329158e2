package web

import (
	"context"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/bench"
)

// zhKeepsEnglish are the words a Chinese bench text keeps: names of code,
// libraries and systems, units, and the group names `statelab bench
// --only` takes.
var zhKeepsEnglish = regexp.MustCompile(`^(Pebble|ValueState|int|map|string|Get|Set|WAL|DB|RSS|B|KiB|MiB|GiB|kB|MB|ms|µs|s|x|k|M|G|p|` +
	`WebSocket|Web|UTC|v|gorilla|websocket|goroutine|source|tokenizer|count|sink|StateLab|Live|hash|` +
	`reugn|go|streams|v0|flow|NewKeyed|NewReduce|lovoo|goka|franz|kfake|broker|leveldb|statelab|memory|pebble|bare|batched|` +
	`Config|WebFanOut|Sessions|sessions|wordcount)$`)

var englishWord = regexp.MustCompile(`[A-Za-z]+`)

// checkChinese fails for a text benchZH does not know or leaves English
// words in.
func checkChinese(t *testing.T, what, en string) {
	t.Helper()
	zh, ok := benchZH(en)
	if !assert.True(t, ok, "%s %q has no Chinese rule (web/perf_zh.go)", what, en) {
		return
	}
	for _, w := range englishWord.FindAllString(zh, -1) {
		assert.Regexp(t, zhKeepsEnglish, w, "%s %q → %q keeps the English word %q", what, en, zh, w)
	}
	assert.Regexp(t, `\p{Han}`, zh, "%s %q → %q has no Chinese in it", what, en, zh)
}

// checkReportChinese checks every case name, baseline and note of rep.
func checkReportChinese(t *testing.T, rep *bench.Report) {
	t.Helper()
	for _, c := range rep.Cases {
		checkChinese(t, "case", c.Name)
		if c.Baseline != "" {
			checkChinese(t, "baseline of "+c.Name, c.Baseline)
		}
	}
	for _, n := range rep.Notes {
		checkChinese(t, "note", n)
	}
}

// TestBenchChineseCoversEveryName: every case name, baseline and note of
// the committed report and of fresh runs of the WebSocket and sessions
// groups (tiny sizes; with StateLab's hub injected, and with nothing
// injected, which writes notes) has a Chinese translation, so the Chinese Performance page has
// no English left in its table; a case added to the bench without a rule
// fails here. The quick run's groups are checked on the run
// TestPerfRunnerMeasuresTinyQuickBenchOneRunAtATime makes.
func TestBenchChineseCoversEveryName(t *testing.T) {
	reports := []bench.Report{committedReport(t)}
	for _, injected := range []bool{true, false} {
		cfg := bench.Config{Quick: true, Seed: 1, Rounds: 1, Sizes: &tinyBench, Dir: t.TempDir(),
			Groups: []string{bench.GroupWebSocket, bench.GroupSessions}}
		if injected {
			// The sessions group's names are fixed (the committed report
			// has them), and measuring it takes 20 s: the hub only.
			cfg.WebFanOut, cfg.Groups = MeasureFanOut, []string{bench.GroupWebSocket}
		}
		rep, err := bench.Run(context.Background(), cfg)
		require.NoError(t, err)
		reports = append(reports, *rep)
	}
	for i := range reports {
		checkReportChinese(t, &reports[i])
	}
	// And the chart words: every text of every chart drawn in Chinese.
	for name, svg := range bench.Charts(&reports[0], benchTranslator("zh")) {
		for _, m := range regexp.MustCompile(`<(?:text|title)[^>]*>([^<]*)<`).FindAllStringSubmatch(string(svg), -1) {
			text := html.UnescapeString(m[1])
			for _, w := range englishWord.FindAllString(text, -1) {
				assert.Regexp(t, zhKeepsEnglish, w, "%s: %q keeps the English word %q", name, text, w)
			}
		}
	}
	_, ok := benchZH("a case no rule knows")
	assert.False(t, ok)
	assert.Equal(t, "12.3 M 条记录/秒", zhUnits.Replace("12.3 M records/s"))
	assert.True(t, strings.HasPrefix(benchTranslator("en")("engine word count, memory, p=4"), "engine"))
}
