package bench

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"slices"
)

// Point is one (x, y) of a series.
type Point struct{ X, Y float64 }

// Series is one line of a chart.
type Series struct {
	Name   string
	Points []Point
	// Dashed draws a reference line (e.g. "linear growth").
	Dashed bool
}

// LineChart plots cost against state size. Both axes are logarithmic: on
// log-log axes a cost that grows linearly with the state is a line of slope
// one, so a reader sees at a glance whether cost grows faster than the state.
type LineChart struct {
	Title  string
	XLabel string
	YLabel string
	// YMetric formats tick labels (MetricBytes, MetricSeconds, …).
	XMetric, YMetric string
	Series           []Series
	// T translates the chart's own words ("slope %.2f", "no data") for a
	// page in another language; nil keeps them in English.
	T func(string) string
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH                     = 720, 420
	plotL, plotR, plotT, plotB         = 90, 200, 50, 60
	plotWidth, plotHeight              = chartW - plotL - plotR, chartH - plotT - plotB
	chartFont                          = "font-family=\"sans-serif\""
	axisColour, gridColour, textColour = "#333", "#ddd", "#222"
	// previousColour draws the previous run's ratio (a ring) on a ratio chart.
	previousColour = "#7f7f7f"
)

// palette is colour-blind-safe (Okabe and Ito).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"}

// Slope is the log-log slope between the first and last points of s: 1 for
// linear growth, 2 for quadratic, 0 for constant. It is 0 for fewer than two
// usable points.
func Slope(s Series) float64 {
	var pts []Point
	for _, p := range s.Points {
		if p.X > 0 && p.Y > 0 {
			pts = append(pts, p)
		}
	}
	if len(pts) < 2 {
		return 0
	}
	slices.SortFunc(pts, func(a, b Point) int { return cmpFloat(a.X, b.X) })
	a, b := pts[0], pts[len(pts)-1]
	if a.X == b.X {
		return 0
	}
	return (math.Log(b.Y) - math.Log(a.Y)) / (math.Log(b.X) - math.Log(a.X))
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// tr passes s through t, or returns it when t is nil.
func tr(t func(string) string, s string) string {
	if t == nil {
		return s
	}
	return t(s)
}

// SVG renders the chart as a standalone SVG document.
func (c LineChart) SVG() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`+"\n",
		chartW, chartH, chartW, chartH, esc(c.Title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", chartW, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="28" %s font-size="16" fill="%s">%s</text>`+"\n", plotL, chartFont, textColour, esc(c.Title))

	xs, ys := c.extent()
	if len(xs) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" %s font-size="14" fill="%s">%s</text>`+"\n", plotL, plotT+plotHeight/2, chartFont, textColour, esc(tr(c.T, "no data")))
		b.WriteString("</svg>\n")
		return b.Bytes()
	}
	x0, x1 := decades(slices.Min(xs), slices.Max(xs))
	y0, y1 := decades(slices.Min(ys), slices.Max(ys))
	px := func(x float64) float64 {
		return plotL + (math.Log10(x)-x0)/(x1-x0)*plotWidth
	}
	py := func(y float64) float64 {
		return plotT + plotHeight - (math.Log10(y)-y0)/(y1-y0)*plotHeight
	}

	// Grid and ticks at every decade.
	for d := x0; d <= x1+1e-9; d++ {
		x := px(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, plotT, x, plotT+plotHeight, gridColour)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" %s font-size="12" text-anchor="middle" fill="%s">%s</text>`+"\n",
			x, plotT+plotHeight+18, chartFont, textColour, esc(tickLabel(c.XMetric, math.Pow(10, d))))
	}
	for d := y0; d <= y1+1e-9; d++ {
		y := py(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", plotL, y, plotL+plotWidth, y, gridColour)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" %s font-size="12" text-anchor="end" fill="%s">%s</text>`+"\n",
			plotL-6, y+4, chartFont, textColour, esc(tickLabel(c.YMetric, math.Pow(10, d))))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="%s"/>`+"\n", plotL, plotT, plotWidth, plotHeight, axisColour)
	fmt.Fprintf(&b, `<text x="%d" y="%d" %s font-size="13" text-anchor="middle" fill="%s">%s</text>`+"\n",
		plotL+plotWidth/2, chartH-14, chartFont, textColour, esc(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(18 %d) rotate(-90)" %s font-size="13" text-anchor="middle" fill="%s">%s</text>`+"\n",
		plotT+plotHeight/2, chartFont, textColour, esc(c.YLabel))

	for i, s := range c.Series {
		colour := palette[i%len(palette)]
		dash := ""
		if s.Dashed {
			colour, dash = "#888", ` stroke-dasharray="6 4"`
		}
		var pts []Point
		for _, p := range s.Points {
			if p.X > 0 && p.Y > 0 {
				pts = append(pts, p)
			}
		}
		slices.SortFunc(pts, func(a, b Point) int { return cmpFloat(a.X, b.X) })
		if len(pts) > 1 {
			b.WriteString(`<polyline fill="none" stroke="` + colour + `" stroke-width="2"` + dash + ` points="`)
			for j, p := range pts {
				if j > 0 {
					b.WriteByte(' ')
				}
				fmt.Fprintf(&b, "%.1f,%.1f", px(p.X), py(p.Y))
			}
			b.WriteString(`"/>` + "\n")
		}
		if !s.Dashed {
			for _, p := range pts {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s</title></circle>`+"\n",
					px(p.X), py(p.Y), colour, esc(fmt.Sprintf(tr(c.T, "%s: %s at %s"), s.Name, FormatValue(c.YMetric, p.Y), tickLabel(c.XMetric, p.X))))
			}
		}
		// Legend, with the slope so "linear or worse" is written, not guessed.
		ly := plotT + 10 + i*36
		lx := plotL + plotWidth + 14
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+22, ly, colour, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d" %s font-size="12" fill="%s">%s</text>`+"\n", lx+28, ly+4, chartFont, textColour, esc(s.Name))
		if !s.Dashed && len(pts) > 1 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" %s font-size="11" fill="#666">%s</text>`+"\n", lx+28, ly+18, chartFont, esc(fmt.Sprintf(tr(c.T, "slope %.2f"), Slope(s))))
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func (c LineChart) extent() (xs, ys []float64) {
	for _, s := range c.Series {
		for _, p := range s.Points {
			if p.X > 0 && p.Y > 0 {
				xs = append(xs, p.X)
				ys = append(ys, p.Y)
			}
		}
	}
	return xs, ys
}

// decades returns the whole powers of ten around [lo, hi], at least one apart.
func decades(lo, hi float64) (float64, float64) {
	a, b := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if b <= a {
		b = a + 1
	}
	return a, b
}

func tickLabel(metric string, v float64) string {
	switch metric {
	case MetricBytes:
		// Decades of bytes read best in decimal units: 10 kB, 1 MB.
		return decimalBytes(v)
	case MetricSeconds:
		return FormatValue(metric, v)
	case "keys":
		return siNumber(v)
	}
	return siNumber(v)
}

func esc(s string) string { return html.EscapeString(s) }

// Bar is one bar of a ratio chart.
type Bar struct {
	Label  string
	Ratio  float64
	Target *Target
	// Previous is the same case's ratio in the previous run (0: none).
	Previous float64
}

// RatioChart draws each case's ratio to its baseline as a horizontal bar on
// a logarithmic axis, with the target as a tick; bars that miss their target
// are drawn in the warning colour.
type RatioChart struct {
	Title string
	Bars  []Bar
	// T translates the chart's own words ("target", "was"); nil keeps
	// them in English.
	T func(string) string
}

// SVG renders the ratio chart.
func (c RatioChart) SVG() []byte {
	const rowH, right, top = 22, 60, 50
	// The labels sit left of the axis, right-aligned: the margin grows with
	// the longest one (12 px text, about 7 px a character), so none is cut.
	left := 330
	for _, bar := range c.Bars {
		left = max(left, 20+labelWidth(bar.Label))
	}
	width := 570 + left
	height := top + rowH*len(c.Bars) + 40
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`+"\n",
		width, height, width, height, esc(c.Title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="10" y="28" %s font-size="16" fill="%s">%s</text>`+"\n", chartFont, textColour, esc(c.Title))
	var vals []float64
	for _, bar := range c.Bars {
		if bar.Ratio > 0 {
			vals = append(vals, bar.Ratio)
		}
		if bar.Target != nil && bar.Target.Ratio > 0 {
			vals = append(vals, bar.Target.Ratio)
		}
		if bar.Previous > 0 {
			vals = append(vals, bar.Previous)
		}
	}
	if len(vals) == 0 {
		b.WriteString("</svg>\n")
		return b.Bytes()
	}
	vals = append(vals, 1)
	a, z := decades(slices.Min(vals), slices.Max(vals))
	plotW := float64(width - left - right)
	px := func(v float64) float64 { return float64(left) + (math.Log10(v)-a)/(z-a)*plotW }
	bottom := top + rowH*len(c.Bars)
	for d := a; d <= z+1e-9; d++ {
		x := px(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, top-6, x, bottom, gridColour)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" %s font-size="11" text-anchor="middle" fill="%s">%sx</text>`+"\n",
			x, bottom+16, chartFont, textColour, trimFloat(math.Pow(10, d)))
	}
	x1 := px(1)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="1.5"/>`+"\n", x1, top-6, x1, bottom, axisColour)
	for i, bar := range c.Bars {
		y := top + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" %s font-size="12" text-anchor="end" fill="%s">%s</text>`+"\n", left-8, y+14, chartFont, textColour, esc(bar.Label))
		if bar.Ratio <= 0 {
			continue
		}
		colour := palette[0]
		if bar.Target != nil && !bar.Target.Met {
			colour = palette[1]
		}
		xa, xb := math.Min(x1, px(bar.Ratio)), math.Max(x1, px(bar.Ratio))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
			xa, y+3, math.Max(xb-xa, 1), rowH-6, colour, esc(fmt.Sprintf(tr(c.T, "%s: %.3gx"), bar.Label, bar.Ratio)))
		label := fmt.Sprintf("%.3gx", bar.Ratio)
		if bar.Previous > 0 {
			label += fmt.Sprintf(tr(c.T, " (was %.3gx)"), bar.Previous)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" %s font-size="11" fill="%s">%s</text>`+"\n", math.Max(xb, px(math.Max(bar.Previous, 1e-300)))+8, y+14, chartFont, textColour, label)
		if bar.Target != nil && bar.Target.Ratio > 0 {
			tx := px(bar.Target.Ratio)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#000" stroke-width="2"><title>%s</title></line>`+"\n",
				tx, y+1, tx, y+rowH-1, esc(fmt.Sprintf(tr(c.T, "target %s %.3gx"), bar.Target.Op, bar.Target.Ratio)))
		}
		if bar.Previous > 0 {
			// The previous run: a hollow ring on the same row.
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%d" r="5" fill="none" stroke="%s" stroke-width="2"><title>%s</title></circle>`+"\n",
				px(bar.Previous), y+rowH/2, previousColour, esc(fmt.Sprintf(tr(c.T, "previous run %.3gx"), bar.Previous)))
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// labelWidth estimates the width of a 12 px label: about 7 px a Latin
// character and 12 px a wide (CJK) one, so a Chinese label is not cut.
func labelWidth(s string) int {
	w := 0
	for _, r := range s {
		if r >= 0x1100 && (r <= 0x115f || (r >= 0x2e80 && r <= 0xa4cf) || (r >= 0xac00 && r <= 0xd7a3) ||
			(r >= 0xf900 && r <= 0xfaff) || (r >= 0xfe30 && r <= 0xfe4f) || (r >= 0xff00 && r <= 0xff60) || (r >= 0xffe0 && r <= 0xffe6)) {
			w += 12
		} else {
			w += 7
		}
	}
	return w
}

// decimalBytes writes whole decades of bytes as 1 kB, 10 MB.
func decimalBytes(v float64) string {
	n := siNumber(v)
	if n[len(n)-1] >= '0' && n[len(n)-1] <= '9' {
		return n + " B"
	}
	return n + "B"
}
