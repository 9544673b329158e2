package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFormatValue(t *testing.T) {
	tests := []struct {
		metric string
		v      float64
		want   string
	}{
		{MetricRecordsPerSecond, 1_234_000, "1.23 M records/s"},
		{MetricRecordsPerSecond, 999, "999 records/s"},
		{MetricEventsPerSecond, 45_600, "45.6 k events/s"},
		{MetricBytes, 512, "512 B"},
		{MetricBytes, 18 * 1024 * 1024, "18 MiB"},
		{MetricBytes, 1536, "1.5 KiB"},
		{MetricSeconds, 0.0123, "12.3 ms"},
		{MetricSeconds, 0.000004, "4 µs"},
		{MetricSeconds, 2.5, "2.5 s"},
		{MetricSeconds, 0, "0 s"},
		{MetricSlope, 1.0, "1 log-log slope"},
		{MetricSlope, 0.875, "0.875 log-log slope"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, FormatValue(tt.metric, tt.v), "%s %v", tt.metric, tt.v)
	}
}

func sampleReport() *Report {
	r := &Report{Schema: ReportSchema, Seed: 9, Rounds: 3, Quick: true, Seconds: 1.5,
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Machine: Machine{GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", CPUs: 2},
		Notes:   []string{"a note"}}
	add := func(c Case) { c.finish(); r.Cases = append(r.Cases, c) }
	add(Case{Group: GroupValueState, Name: "memory", Metric: MetricRecordsPerSecond, Value: 30, BaselineValue: 100,
		Baseline: "bare map", Target: AtLeast(0.5)})
	for _, n := range []int{1_000, 10_000, 100_000} {
		f := float64(n)
		add(Case{Group: GroupCheckpoint, Name: "incremental checkpoint bytes, " + strconv.Itoa(n), Metric: MetricBytes, Size: n,
			Value: f * 2, BaselineValue: f * 20, Baseline: "full", Target: AtMost(0.15)})
		add(Case{Group: GroupRescale, Name: "rescale 2->3 time, key groups, " + strconv.Itoa(n), Metric: MetricSeconds, Size: n,
			Value: f / 1e6, BaselineValue: f / 1e5, Baseline: "naive"})
	}
	return r
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, sampleReport()))
	out := b.String()
	assert.Contains(t, out, "quick run, seed 9, median of 3 interleaved rounds")
	assert.Contains(t, out, "group")
	assert.Regexp(t, `memory\s+30 records/s\s+bare map\s+100 records/s\s+0.3x\s+>= 0.5x MISSED`, out)
	assert.Regexp(t, `incremental checkpoint bytes, 1000\s+1.95 KiB\s+full\s+19.5 KiB\s+0.1x\s+<= 0.15x met`, out)
	assert.Contains(t, out, "targets met: 3 of 4")
	assert.Contains(t, out, "note: a note")
}

func TestWriteJSONRoundTrips(t *testing.T) {
	r := sampleReport()
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, r))
	var back Report
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	assert.Equal(t, r.Cases, back.Cases)
	assert.Equal(t, r.Machine, back.Machine)
	assert.True(t, back.Started.Equal(r.Started))
	assert.Contains(t, b.String(), `"higherIsBetter": false`)
	assert.Contains(t, b.String(), `"op": "<="`)
}

func TestSlope(t *testing.T) {
	line := func(f func(x float64) float64) Series {
		s := Series{}
		for _, x := range []float64{1e4, 1e3, 1e5} { // unsorted on purpose
			s.Points = append(s.Points, Point{x, f(x)})
		}
		return s
	}
	assert.InDelta(t, 1, Slope(line(func(x float64) float64 { return 3 * x })), 1e-9)
	assert.InDelta(t, 2, Slope(line(func(x float64) float64 { return x * x })), 1e-9)
	assert.InDelta(t, 0, Slope(line(func(float64) float64 { return 7 })), 1e-9)
	assert.Equal(t, 0.0, Slope(Series{Points: []Point{{1, 1}}}))
	assert.Equal(t, 0.0, Slope(Series{Points: []Point{{0, 1}, {10, 0}}}), "non-positive points are ignored")
}

// svgDoc is what the tests read back from an SVG: it must be well-formed XML.
type svgDoc struct {
	Circles []struct {
		CX string `xml:"cx,attr"`
		CY string `xml:"cy,attr"`
	} `xml:"circle"`
	Polylines []struct {
		Points string `xml:"points,attr"`
		Dash   string `xml:"stroke-dasharray,attr"`
	} `xml:"polyline"`
	Rects []struct {
		Fill string `xml:"fill,attr"`
	} `xml:"rect"`
	Texts []string `xml:"text"`
}

func parseSVG(t *testing.T, data []byte) svgDoc {
	t.Helper()
	var d svgDoc
	dec := xml.NewDecoder(bytes.NewReader(data))
	// Read every token first: a malformed document fails here.
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "SVG must be well-formed XML")
	}
	require.NoError(t, xml.Unmarshal(data, &d))
	return d
}

func TestLineChartPlacesPointsOnLogAxes(t *testing.T) {
	c := LineChart{Title: "bytes <vs> keys & more", XMetric: "keys", YMetric: MetricBytes, Series: []Series{
		{Name: "full", Points: []Point{{1e3, 1e4}, {1e5, 1e6}}},
		{Name: "ref", Dashed: true, Points: []Point{{1e3, 1e4}, {1e5, 1e6}}},
	}}
	d := parseSVG(t, c.SVG())
	require.Len(t, d.Circles, 2, "points of the solid series only")
	// x decades 3..5 span the plot; y decades 4..6 too, upwards.
	assert.Equal(t, strconv.Itoa(plotL)+".0", d.Circles[0].CX)
	assert.Equal(t, strconv.Itoa(plotL+plotWidth)+".0", d.Circles[1].CX)
	assert.Equal(t, strconv.Itoa(plotT+plotHeight)+".0", d.Circles[0].CY)
	assert.Equal(t, strconv.Itoa(plotT)+".0", d.Circles[1].CY)
	require.Len(t, d.Polylines, 2)
	assert.Empty(t, d.Polylines[0].Dash)
	assert.NotEmpty(t, d.Polylines[1].Dash)
	assert.Contains(t, d.Texts, "bytes <vs> keys & more", "the title is escaped and reads back")
	assert.Contains(t, d.Texts, "slope 1.00")
	assert.Contains(t, d.Texts, "10 kB")
	assert.Contains(t, d.Texts, "1 k")
}

func TestLineChartWithoutData(t *testing.T) {
	d := parseSVG(t, LineChart{Title: "empty"}.SVG())
	assert.Contains(t, d.Texts, "no data")
}

func TestRatioChartColoursMissedTargets(t *testing.T) {
	met, missed := AtLeast(0.5), AtLeast(0.5)
	met.Met = true
	rc := RatioChart{Title: "r", Bars: []Bar{{Label: "good", Ratio: 0.8, Target: met}, {Label: "bad", Ratio: 0.2, Target: missed}, {Label: "none", Ratio: 3}}}
	d := parseSVG(t, rc.SVG())
	var fills []string
	for _, r := range d.Rects[1:] { // the first is the background
		fills = append(fills, r.Fill)
	}
	assert.Equal(t, []string{palette[0], palette[1], palette[0]}, fills)
	assert.Contains(t, d.Texts, "0.8x")
	assert.Contains(t, d.Texts, "bad")
}

func TestWriteOutputs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	files, err := WriteOutputs(dir, sampleReport())
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.HasSuffix(f, ".svg") {
			parseSVG(t, data)
		}
	}
	assert.Equal(t, []string{"bench.json", "checkpoint-bytes.svg", "ratios.svg", "rescale-time.svg"}, names, "bench.json, then the charts by name")
}

func TestCostChartsHaveALinearReference(t *testing.T) {
	charts := costCharts(sampleReport(), nil)
	require.Len(t, charts, 2)
	ck := charts[0].chart
	require.Len(t, ck.Series, 3)
	assert.Equal(t, "full", ck.Series[0].Name)
	assert.Equal(t, []Point{{1e3, 2e4}, {1e4, 2e5}, {1e5, 2e6}}, ck.Series[0].Points)
	assert.Equal(t, []Point{{1e3, 2e3}, {1e4, 2e4}, {1e5, 2e5}}, ck.Series[1].Points)
	ref := ck.Series[2]
	assert.True(t, ref.Dashed)
	assert.Equal(t, []Point{{1e3, 2e4}, {1e4, 2e5}, {1e5, 2e6}}, ref.Points, "through the first point, proportional to keys")
}

func TestMergePeersReplacesAnEarlierMerge(t *testing.T) {
	r := sampleReport()
	n := len(r.Cases)
	p := &PeersReport{Systems: []PeerRun{{Name: "statelab-pebble", RecordsPerSecond: 90}, {Name: "goka-leveldb", RecordsPerSecond: 30, What: "goka"}},
		Ratios: []PeerPair{{StateLab: "statelab-pebble", Peer: "goka-leveldb", Ratio: 3, Target: AtLeast(3)}}}
	MergePeers(r, p)
	MergePeers(r, p)
	require.Len(t, r.Cases, n+1)
	c := r.Cases[n]
	assert.Equal(t, GroupPeers, c.Group)
	assert.Equal(t, "statelab-pebble vs goka-leveldb", c.Name)
	assert.InDelta(t, 3, c.Ratio, 1e-9)
	require.NotNil(t, c.Target)
	assert.True(t, c.Target.Met)
	assert.Same(t, p, r.Peers)

	MergePeers(r, &PeersReport{Systems: []PeerRun{{Name: "go-streams"}}})
	assert.Len(t, r.Cases, n, "a report without ratios leaves no peers cases")
	assert.Contains(t, r.Notes[len(r.Notes)-1], "no StateLab run")
}
