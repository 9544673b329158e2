package bench

import (
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestRatioChartLabelsFitLeftOfTheAxis: a bar's label is right-aligned at
// the axis, so it is cut on the left when the margin is narrower than the
// label (the Performance page showed "ine word count, memory, p=1 (vs words
// ready-made)"). 12 px sans-serif text is taken as 6.5 px a character.
func TestRatioChartLabelsFitLeftOfTheAxis(t *testing.T) {
	labels := []string{"engine word count, memory, p=1", "engine word count, memory, p=2 (vs words ready-made)",
		"incremental checkpoint bytes, 1000000 keys, pebble backend (mean of 5)"}
	c := RatioChart{Title: "t"}
	for i, l := range labels {
		c.Bars = append(c.Bars, Bar{Label: l, Ratio: 0.5 + float64(i)/10})
	}
	svg := string(c.SVG())
	re := regexp.MustCompile(`<text x="(\d+)" y="\d+" [^>]*text-anchor="end"[^>]*>([^<]+)</text>`)
	found := 0
	for _, m := range re.FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.Atoi(m[1])
		for _, l := range labels {
			if m[2] != l {
				continue
			}
			found++
			if start := float64(x) - 6.5*float64(utf8.RuneCountInString(l)); start < 0 {
				t.Errorf("label %q ends at x=%d and starts at about %.0f: cut on the left", l, x, start)
			}
		}
	}
	if found != len(labels) {
		t.Fatalf("found %d of %d labels in the chart", found, len(labels))
	}
}

// TestRatioChartFitsChineseLabels: a CJK character is about as wide as the
// 12 px font (not 6.5 px), so a Chinese case name needs a wider margin.
func TestRatioChartFitsChineseLabels(t *testing.T) {
	label := "引擎词频统计，内存，p=2（对比现成的单词）"
	svg := string(RatioChart{Title: "t", Bars: []Bar{{Label: label, Ratio: 0.7}}}.SVG())
	m := regexp.MustCompile(`<text x="(\d+)" y="\d+" [^>]*text-anchor="end"[^>]*>([^<]+)</text>`).FindStringSubmatch(svg)
	if m == nil || m[2] != label {
		t.Fatalf("label not found in %s", svg)
	}
	x, _ := strconv.Atoi(m[1])
	width := 0
	for _, r := range label {
		if r < 0x2e80 {
			width += 7
		} else {
			width += 12
		}
	}
	if x-width < 0 {
		t.Errorf("label ends at x=%d and is about %d px wide: cut on the left", x, width)
	}
}

// TestChartsTranslateEveryWord: Charts passes every word a chart shows
// through the translator (titles, axes, legends, slopes, case names,
// tooltips, the previous run's ring), so the Chinese page has no English
// left in its charts; only numbers and units remain outside it.
func TestChartsTranslateEveryWord(t *testing.T) {
	r := &Report{Schema: ReportSchema, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	add := func(c Case) { c.finish(); r.Cases = append(r.Cases, c) }
	for _, n := range []int{1_000, 10_000, 100_000} {
		f := float64(n)
		add(Case{Group: GroupCheckpoint, Name: "incremental checkpoint bytes, " + strconv.Itoa(n), Metric: MetricBytes, Size: n,
			Value: f * 2, BaselineValue: f * 20, Baseline: "full", Target: AtMost(0.15)})
		add(Case{Group: GroupCheckpoint, Name: "incremental checkpoint time, " + strconv.Itoa(n), Metric: MetricSeconds, Size: n,
			Value: f / 1e7, BaselineValue: f / 1e6, Baseline: "full"})
		add(Case{Group: GroupRescale, Name: "rescale 2->3 time, key groups, " + strconv.Itoa(n), Metric: MetricSeconds, Size: n,
			Value: f / 1e6, BaselineValue: f / 1e5, Baseline: "naive"})
		add(Case{Group: GroupRescale, Name: "rescale 2->3 bytes read, key groups, " + strconv.Itoa(n), Metric: MetricBytes, Size: n,
			Value: f * 3, BaselineValue: f * 3, Baseline: "bytes moved", Target: AtMost(0.9)})
		add(Case{Group: GroupRescale, Name: "rescale 2->3 bytes read, naive, " + strconv.Itoa(n), Metric: MetricBytes, Size: n,
			Value: f * 6, BaselineValue: f * 3, Baseline: "bytes moved"})
	}
	r.Previous = &PreviousRun{Started: r.Started.Add(-time.Hour), Ratios: map[string]float64{}}
	for _, c := range r.Cases {
		r.Previous.Ratios[CaseKey(c)] = c.Ratio * 1.1
	}
	charts := Charts(r, func(s string) string { return "«" + s + "»" })
	if len(charts) != 5 {
		t.Fatalf("got %d charts, want the ratios and four cost charts", len(charts))
	}
	units := regexp.MustCompile(`^(kB|MB|GB|KiB|MiB|GiB|B|ms|µs|ns|s|x|k|M|G)$`)
	word := regexp.MustCompile(`[A-Za-z]+`)
	texts := regexp.MustCompile(`<(text|title)[^>]*>([^<]*)</|aria-label="([^"]*)"`)
	for name, svg := range charts {
		seen := 0
		for _, m := range texts.FindAllStringSubmatch(string(svg), -1) {
			s := html.UnescapeString(m[2] + m[3])
			if i, j := strings.Index(s, "«"), strings.LastIndex(s, "»"); i >= 0 && j > i {
				s = s[:i] + s[j+len("»"):]
				seen++
			}
			for _, w := range word.FindAllString(s, -1) {
				if !units.MatchString(w) {
					t.Errorf("%s: %q is not translated (%q)", name, w, html.UnescapeString(m[2]+m[3]))
				}
			}
		}
		if seen == 0 {
			t.Errorf("%s: no translated text at all", name)
		}
	}
}
