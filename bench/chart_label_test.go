package bench

import (
	"regexp"
	"strconv"
	"testing"
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
