package bench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Report is one run of statelab bench: every case beside its baseline,
// measured in the same process. It is what bench.json holds.
type Report struct {
	// Schema versions the JSON layout.
	Schema  int       `json:"schema"`
	Quick   bool      `json:"quick"`
	Seed    int64     `json:"seed"`
	Rounds  int       `json:"rounds"`
	Machine Machine   `json:"machine"`
	Started time.Time `json:"started"`
	// Seconds is the wall time of the whole run.
	Seconds float64 `json:"seconds"`
	Cases   []Case  `json:"cases"`
	// Peers is the other stream processors' run, when one was merged in.
	Peers *PeersReport `json:"peers,omitempty"`
	Notes []string     `json:"notes,omitempty"`
	// Previous is the run this one is shown beside (SetPrevious): its
	// ratios by case (CaseKey), so a chart can draw each ratio beside the
	// one before it and a regression shows at a glance.
	Previous *PreviousRun `json:"previous,omitempty"`
}

// PreviousRun is the ratios of an earlier run, by CaseKey.
type PreviousRun struct {
	Started time.Time          `json:"started"`
	Ratios  map[string]float64 `json:"ratios"`
}

// CaseKey names a case across runs: its group and name.
func CaseKey(c Case) string { return c.Group + "/" + c.Name }

// SetPrevious records prev's ratios in r as the run r is shown beside. A
// report is never its own previous run (same start time), so re-rendering
// a bench.json into the directory it came from keeps the run before it. A
// case whose baseline changed between the runs gets no previous ratio: the
// two ratios measure against different things.
func SetPrevious(r, prev *Report) {
	if prev == nil || prev.Started.Equal(r.Started) {
		return
	}
	baseline := make(map[string]string, len(r.Cases))
	for _, c := range r.Cases {
		baseline[CaseKey(c)] = c.Baseline
	}
	p := &PreviousRun{Started: prev.Started, Ratios: map[string]float64{}}
	for _, c := range prev.Cases {
		if b, ok := baseline[CaseKey(c)]; ok && b != c.Baseline {
			continue
		}
		if c.Ratio > 0 {
			p.Ratios[CaseKey(c)] = c.Ratio
		}
	}
	r.Previous = p
}

// ReportSchema is the current Report.Schema.
const ReportSchema = 1

// Machine says where the figures come from; ratios travel, absolute figures
// do not.
type Machine struct {
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUs      int    `json:"cpus"`
}

// Case is one measured figure beside its baseline from the same run.
type Case struct {
	// Group is the family of cases: wordcount, valuestate, checkpoint,
	// rescale, websocket, peers.
	Group string `json:"group"`
	// Name says what was measured, e.g. "engine memory p=2".
	Name string `json:"name"`
	// Metric is the unit of Value and BaselineValue: records/s, bytes,
	// seconds, events/s.
	Metric string `json:"metric"`
	// HigherIsBetter tells the table which way a ratio is good.
	HigherIsBetter bool `json:"higherIsBetter"`
	// Size is the state size in keys where the case varies it (charts plot
	// against it), else 0.
	Size int `json:"size,omitempty"`

	Value   float64   `json:"value"`
	Samples []float64 `json:"samples,omitempty"`

	Baseline        string    `json:"baseline"`
	BaselineValue   float64   `json:"baselineValue"`
	BaselineSamples []float64 `json:"baselineSamples,omitempty"`

	// Ratio is Value / BaselineValue (0 when the baseline is 0).
	Ratio  float64 `json:"ratio"`
	Target *Target `json:"target,omitempty"`
	// Details carries further figures of the case (bytes read, bytes
	// moved, the time beside a byte count).
	Details map[string]float64 `json:"details,omitempty"`
}

// Target is the ratio a case must reach, as issue 8 sets it.
type Target struct {
	// Op is ">=" or "<=".
	Op    string  `json:"op"`
	Ratio float64 `json:"ratio"`
	Met   bool    `json:"met"`
}

// AtLeast and AtMost make targets; Check fills Met.
func AtLeast(r float64) *Target { return &Target{Op: ">=", Ratio: r} }

// AtMost is a target the ratio must not exceed.
func AtMost(r float64) *Target { return &Target{Op: "<=", Ratio: r} }

// finish computes the ratio and checks the target.
func (c *Case) finish() {
	c.Ratio = 0
	if c.BaselineValue != 0 {
		c.Ratio = c.Value / c.BaselineValue
	}
	if c.Target != nil {
		switch c.Target.Op {
		case ">=":
			c.Target.Met = c.Ratio >= c.Target.Ratio
		case "<=":
			c.Target.Met = c.Ratio <= c.Target.Ratio
		default:
			c.Target.Met = false
		}
	}
}

// Median returns the middle of xs (the mean of the two middles for an even
// count), 0 for none. It does not reorder xs.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Trial is one thing timed in interleaved rounds. Run returns the figure of
// one round (records/s, seconds, …).
type Trial struct {
	Name string
	Run  func() (float64, error)
}

// Interleave runs every trial once per round, in the same order each round,
// and returns the samples per trial. Interleaving makes a noisy neighbour
// (the machine is shared) hit every trial alike, so the ratio of medians
// holds even when the absolute figures wander.
func Interleave(rounds int, trials ...Trial) ([][]float64, error) {
	if rounds < 1 {
		return nil, fmt.Errorf("bench: need at least one round (got %d)", rounds)
	}
	out := make([][]float64, len(trials))
	for r := range rounds {
		for i, t := range trials {
			v, err := t.Run()
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w", t.Name, r+1, err)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s, round %d: figure is not a number", t.Name, r+1)
			}
			out[i] = append(out[i], v)
		}
	}
	return out, nil
}

// Rate is n events over d, per second.
func Rate(n int, d time.Duration) float64 {
	if d <= 0 {
		d = time.Nanosecond
	}
	return float64(n) / d.Seconds()
}

// cpuDetails gives a case's records per CPU second beside its baseline's
// (medians over the rounds) and the median of the paired per-round ratios;
// nil when either was not measured (a platform without process CPU time).
func cpuDetails(value, baseline []float64) map[string]float64 {
	n := min(len(value), len(baseline))
	if n == 0 {
		return nil
	}
	ratios := make([]float64, n)
	for i := range n {
		ratios[i] = value[i] / baseline[i]
	}
	return map[string]float64{
		"recordsPerCPUSecond":         Median(value),
		"baselineRecordsPerCPUSecond": Median(baseline),
		"ratioPerCPUSecond":           Median(ratios),
	}
}
