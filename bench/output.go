package bench

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

type namedChart struct {
	file  string
	chart LineChart
}

// costCharts are the cost-against-state-size charts of a report: checkpoint
// bytes and time, rescale time and bytes read, each on log-log axes with a
// dashed line of linear growth for comparison. t translates every word the
// charts show (nil: English, as the files statelab bench writes).
func costCharts(r *Report, t func(string) string) []namedChart {
	series := func(group, prefix string, value bool) Series {
		s := Series{}
		for _, c := range r.Cases {
			if c.Group != group || c.Size == 0 || !strings.HasPrefix(c.Name, prefix) {
				continue
			}
			y := c.BaselineValue
			if value {
				y = c.Value
			}
			s.Points = append(s.Points, Point{X: float64(c.Size), Y: y})
		}
		slices.SortFunc(s.Points, func(a, b Point) int { return cmpFloat(a.X, b.X) })
		return s
	}
	named := func(s Series, name string) Series { s.Name = tr(t, name); return s }
	var out []namedChart
	add := func(file, title, yLabel, metric string, ss ...Series) {
		var keep []Series
		for _, s := range ss {
			if len(s.Points) > 0 {
				keep = append(keep, s)
			}
		}
		if len(keep) == 0 {
			return
		}
		ref := linearReference(keep[0])
		ref.Name = tr(t, ref.Name)
		keep = append(keep, ref)
		out = append(out, namedChart{file: file, chart: LineChart{Title: tr(t, title), XLabel: tr(t, "state size (keys)"),
			YLabel: tr(t, yLabel), XMetric: "keys", YMetric: metric, Series: keep, T: t}})
	}
	add("checkpoint-bytes.svg", "Checkpoint size after 1 % of keys changed", "bytes written per checkpoint", MetricBytes,
		named(series(GroupCheckpoint, "incremental checkpoint bytes", false), "full"),
		named(series(GroupCheckpoint, "incremental checkpoint bytes", true), "incremental (mean)"))
	add("checkpoint-time.svg", "Checkpoint time after 1 % of keys changed", "synchronous snapshot time", MetricSeconds,
		named(series(GroupCheckpoint, "incremental checkpoint time", false), "full"),
		named(series(GroupCheckpoint, "incremental checkpoint time", true), "incremental"))
	add("rescale-time.svg", "Rescale 2 -> 3: time to restore all new subtasks", "time", MetricSeconds,
		named(series(GroupRescale, "rescale 2->3 time", false), "naive hash % parallelism"),
		named(series(GroupRescale, "rescale 2->3 time", true), "key groups"))
	add("rescale-bytes.svg", "Rescale 2 -> 3: bytes read against bytes moved", "bytes", MetricBytes,
		named(series(GroupRescale, "rescale 2->3 bytes read, naive", true), "read, naive"),
		named(series(GroupRescale, "rescale 2->3 bytes read, key groups", true), "read, key groups"),
		named(series(GroupRescale, "rescale 2->3 bytes read, key groups", false), "moved"))
	return out
}

// linearReference is a dashed line through s's first point growing in
// proportion to the state size.
func linearReference(s Series) Series {
	ref := Series{Name: "linear growth", Dashed: true}
	if len(s.Points) == 0 {
		return ref
	}
	p0 := s.Points[0]
	for _, p := range s.Points {
		ref.Points = append(ref.Points, Point{X: p.X, Y: p0.Y * p.X / p0.X})
	}
	return ref
}

// ratioChart shows every case's ratio against its target; t translates
// its words and the case names (nil: English).
func ratioChart(r *Report, t func(string) string) RatioChart {
	rc := RatioChart{Title: tr(t, "Each case against its baseline (ratio; black tick = target)"), T: t}
	if r.Previous != nil {
		rc.Title = fmt.Sprintf(tr(t, "Each case against its baseline (ratio; black tick = target; ring = previous run, %s)"),
			r.Previous.Started.UTC().Format("2006-01-02 15:04 UTC"))
	}
	for _, c := range r.Cases {
		if c.Group == GroupScaling || c.Ratio == 0 {
			continue
		}
		bar := Bar{Label: tr(t, c.Name), Ratio: c.Ratio, Target: c.Target}
		if r.Previous != nil {
			bar.Previous = r.Previous.Ratios[CaseKey(c)]
		}
		rc.Bars = append(rc.Bars, bar)
	}
	return rc
}

// WriteOutputs writes bench.json and the SVG charts into dir (made if
// missing) and returns the files written.
func WriteOutputs(dir string, r *Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: make output directory: %w", err)
	}
	// The run being replaced in dir becomes the previous run the charts
	// show beside this one, unless the caller chose one.
	if r.Previous == nil {
		if data, err := os.ReadFile(filepath.Join(dir, "bench.json")); err == nil {
			var prev Report
			switch {
			case json.Unmarshal(data, &prev) != nil || prev.Schema != ReportSchema:
			case prev.Started.Equal(r.Started):
				// The same run rendered again (--from): it keeps the run
				// it was shown beside.
				r.Previous = prev.Previous
			default:
				SetPrevious(r, &prev)
			}
		}
	}
	var written []string
	write := func(name string, data []byte) error {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("bench: write %s: %w", name, err)
		}
		written = append(written, p)
		return nil
	}
	var js strings.Builder
	if err := WriteJSON(&js, r); err != nil {
		return nil, err
	}
	if err := write("bench.json", []byte(js.String())); err != nil {
		return written, err
	}
	charts := Charts(r, nil)
	for _, name := range slices.Sorted(maps.Keys(charts)) {
		if err := write(name, charts[name]); err != nil {
			return written, err
		}
	}
	return written, nil
}

// Charts draws a report's SVG charts by file name, the ones WriteOutputs
// writes: ratios.svg and the cost charts a report has data for. t
// translates every word they show, case names included, for a page in
// another language (nil: English).
func Charts(r *Report, t func(string) string) map[string][]byte {
	out := map[string][]byte{}
	for _, ch := range costCharts(r, t) {
		out[ch.file] = ch.chart.SVG()
	}
	if rc := ratioChart(r, t); len(rc.Bars) > 0 {
		out["ratios.svg"] = rc.SVG()
	}
	return out
}
