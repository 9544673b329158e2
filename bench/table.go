package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report as a table: each case, its baseline, the
// ratio and whether the target was met.
func WriteTable(w io.Writer, r *Report) error {
	mode := "full"
	if r.Quick {
		mode = "quick"
	}
	fmt.Fprintf(w, "statelab bench (%s run, seed %d, median of %d interleaved rounds) on %s %s/%s, %d CPUs, %.1fs\n\n",
		mode, r.Seed, r.Rounds, r.Machine.GoVersion, r.Machine.OS, r.Machine.Arch, r.Machine.CPUs, r.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "group\tcase\tvalue\tbaseline\tbaseline value\tratio\ttarget")
	for _, c := range r.Cases {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Group, c.Name, FormatValue(c.Metric, c.Value),
			c.Baseline, FormatValue(c.Metric, c.BaselineValue), formatRatio(c.Ratio), formatTarget(c.Target))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	met, all := TargetsMet(r)
	if all > 0 {
		fmt.Fprintf(w, "\ntargets met: %d of %d\n", met, all)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

// TargetsMet counts the cases with a target and those that met it.
func TargetsMet(r *Report) (met, all int) {
	for _, c := range r.Cases {
		if c.Target != nil {
			all++
			if c.Target.Met {
				met++
			}
		}
	}
	return met, all
}

// WriteJSON writes the report as indented JSON (bench.json).
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // ">=" and "2->3" stay readable
	return enc.Encode(r)
}

func formatRatio(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3gx", r)
}

func formatTarget(t *Target) string {
	if t == nil {
		return ""
	}
	verdict := "met"
	if !t.Met {
		verdict = "MISSED"
	}
	return fmt.Sprintf("%s %.3gx %s", t.Op, t.Ratio, verdict)
}

// Metrics used by cases.
const (
	MetricRecordsPerSecond = "records/s"
	MetricEventsPerSecond  = "events/s"
	MetricBytes            = "bytes"
	MetricSeconds          = "seconds"
	MetricSlope            = "log-log slope"
)

// FormatValue renders v in the metric's unit for people: 1.23 M records/s,
// 18.0 MiB, 12.3 ms.
func FormatValue(metric string, v float64) string {
	switch metric {
	case MetricRecordsPerSecond, MetricEventsPerSecond:
		return siNumber(v) + " " + metric
	case MetricBytes:
		return binaryBytes(v)
	case MetricSeconds:
		return duration(v)
	default:
		return trimFloat(v) + " " + metric
	}
}

func siNumber(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.3g G", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3g M", v/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3g k", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}

func binaryBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%.3g %s", v, units[i])
}

func duration(s float64) string {
	a := math.Abs(s)
	switch {
	case a == 0:
		return "0 s"
	case a < 1e-3:
		return fmt.Sprintf("%.3g µs", s*1e6)
	case a < 1:
		return fmt.Sprintf("%.3g ms", s*1e3)
	}
	return fmt.Sprintf("%.3g s", s)
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
