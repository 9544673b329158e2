package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// Case groups, in the order a run measures them.
const (
	GroupWordCount  = "wordcount"
	GroupValueState = "valuestate"
	GroupCheckpoint = "checkpoint"
	GroupRescale    = "rescale"
	GroupScaling    = "scaling"
	GroupWebSocket  = "websocket"
	GroupPeers      = "peers"
)

// Groups lists every group a run can measure.
var Groups = []string{GroupWordCount, GroupValueState, GroupCheckpoint, GroupRescale, GroupGrowth, GroupWebSocket, GroupSessions}

// Sizes are the workload sizes of a run.
type Sizes struct {
	// WordCountRecords words over WordCountKeys keys for the engine and the
	// bare pipeline, at each of Parallelisms.
	WordCountRecords int
	WordCountKeys    int
	Parallelisms     []int
	// ValueStateRecords per round for the memory backend and the bare map;
	// PebbleRecords for the pebble backend and the bare Pebble loop.
	ValueStateRecords int
	PebbleRecords     int
	// StateSizes are the key counts of the checkpoint and rescale cases;
	// CheckpointRounds the checkpoints taken at each (1 % changed before
	// each).
	StateSizes       []int
	CheckpointRounds int
	// Viewers of one session for the WebSocket fan-out, and Events
	// published per round.
	Viewers []int
	Events  int
	// ReplaySteps are the share-link replay lengths of the sessions group
	// (empty: 50k to 400k, or 40k to 320k when Quick).
	ReplaySteps []int64
	// ClassroomForks is the classroom measured by the sessions group
	// (0: ClassroomForks, the class of 64).
	ClassroomForks int
	// GrowthParallelisms are the parallelisms of the growth group's word
	// count (WordCountRecords words); GrowthRecords the record counts its
	// cost-against-records series runs at p = 2; BytesPerKeyKeys the keys
	// of its bytes-per-key case. Empty or 0 skips that part.
	GrowthParallelisms []int
	GrowthRecords      []int
	BytesPerKeyKeys    int
}

// FullSizes are the sizes of a full run (issue 8's sizes).
func FullSizes() Sizes {
	return Sizes{WordCountRecords: 1_000_000, WordCountKeys: 10_000, Parallelisms: []int{1, 2, 4},
		ValueStateRecords: 1_000_000, PebbleRecords: 200_000,
		StateSizes: []int{10_000, 100_000, 1_000_000}, CheckpointRounds: 16,
		Viewers: []int{1, 10, 100}, Events: 20_000,
		// 100 M records would hold 1.6 GB of words and a 4.8 GB topic on a
		// machine shared by other work: the full run stops at 10 M.
		GrowthParallelisms: []int{1, 2, 4, 8}, GrowthRecords: []int{1_000_000, 3_000_000, 10_000_000}, BytesPerKeyKeys: 1_000_000}
}

// QuickSizes are the sizes of --quick: the same cases, small enough to
// finish in well under a minute on two shared cores.
func QuickSizes() Sizes {
	return Sizes{WordCountRecords: 50_000, WordCountKeys: 10_000, Parallelisms: []int{1, 2, 4},
		ValueStateRecords: 200_000, PebbleRecords: 20_000,
		StateSizes: []int{1_000, 10_000, 100_000}, CheckpointRounds: 4,
		Viewers: []int{1, 10, 100}, Events: 1_000,
		GrowthParallelisms: []int{1, 2, 4, 8}, GrowthRecords: []int{50_000, 500_000}, BytesPerKeyKeys: 100_000}
}

// Config is one run of the bench.
type Config struct {
	Quick bool
	Seed  int64
	// Rounds of interleaved timing per case (the median is reported); 0
	// picks 5, or 3 when Quick.
	Rounds int
	// Sizes overrides the sizes Quick picks (tests use tiny ones).
	Sizes *Sizes
	// Groups limits the run to these groups; empty runs all.
	Groups []string
	// Dir is a scratch directory for Pebble and checkpoints; empty uses a
	// fresh temporary directory, removed at the end.
	Dir string
	// Log receives one progress line per case; nil discards them.
	Log io.Writer
	// WebFanOut measures StateLab's own WebSocket hub (package web); it is
	// injected because web sits above bench in the package direction. Nil
	// leaves the plain gorilla/websocket hub without a counterpart.
	WebFanOut FanOutFunc
	// Sessions measures the web server's sessions (package web, injected
	// like WebFanOut); nil leaves the sessions group empty.
	Sessions *SessionsFuncs
	// Peers is a peers report (bench/peers --json) to merge into this one.
	Peers *PeersReport
}

func (c *Config) sizes() Sizes {
	if c.Sizes != nil {
		return *c.Sizes
	}
	if c.Quick {
		return QuickSizes()
	}
	return FullSizes()
}

func (c *Config) rounds() int {
	switch {
	case c.Rounds > 0:
		return c.Rounds
	case c.Quick:
		return 3
	}
	return 5
}

func (c *Config) wants(g string) bool { return len(c.Groups) == 0 || slices.Contains(c.Groups, g) }

type runner struct {
	cfg    Config
	sizes  Sizes
	rounds int
	dir    string
	log    io.Writer
	rep    *Report
	seq    int
}

// Run measures every case of cfg and returns the report. Every case is
// checked for correct counts before it is timed; a wrong count is an error,
// not a figure.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	for _, g := range cfg.Groups {
		if !slices.Contains(Groups, g) {
			return nil, fmt.Errorf("bench: unknown group %q (want one of %v)", g, Groups)
		}
	}
	r := &runner{cfg: cfg, sizes: cfg.sizes(), rounds: cfg.rounds(), log: cfg.Log}
	if r.log == nil {
		r.log = io.Discard
	}
	r.dir = cfg.Dir
	if r.dir == "" {
		d, err := os.MkdirTemp("", "statelab-bench-")
		if err != nil {
			return nil, fmt.Errorf("bench: make scratch directory: %w", err)
		}
		defer os.RemoveAll(d)
		r.dir = d
	}
	start := time.Now()
	r.rep = &Report{Schema: ReportSchema, Quick: cfg.Quick, Seed: cfg.Seed, Rounds: r.rounds, Started: start.UTC(),
		Machine: Machine{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}}
	steps := []struct {
		group string
		run   func(context.Context) error
	}{
		{GroupWordCount, r.wordCount},
		{GroupValueState, r.valueState},
		{GroupCheckpoint, r.checkpoint},
		{GroupRescale, r.rescale},
		{GroupGrowth, r.growth},
		{GroupWebSocket, r.webSocket},
		{GroupSessions, r.sessions},
	}
	for _, s := range steps {
		if !cfg.wants(s.group) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := s.run(ctx); err != nil {
			return nil, fmt.Errorf("bench: %s: %w", s.group, err)
		}
	}
	r.scaling()
	if cfg.Peers != nil {
		MergePeers(r.rep, cfg.Peers)
	}
	r.rep.Seconds = time.Since(start).Seconds()
	return r.rep, nil
}

func (r *runner) add(c Case) {
	c.finish()
	r.rep.Cases = append(r.rep.Cases, c)
	r.logCase(c)
}

func (r *runner) logCase(c Case) {
	fmt.Fprintf(r.log, "bench: %-10s %-44s %s vs %s: %s\n", c.Group, c.Name, FormatValue(c.Metric, c.Value),
		FormatValue(c.Metric, c.BaselineValue), formatRatio(c.Ratio))
}

func (r *runner) note(format string, a ...any) {
	r.rep.Notes = append(r.rep.Notes, fmt.Sprintf(format, a...))
}

// scratch returns a fresh directory name under the run's directory.
func (r *runner) scratch(name string) string {
	r.seq++
	return filepath.Join(r.dir, fmt.Sprintf("%s-%d", name, r.seq))
}

// valueState times ValueState get+update per record against the bare loops.
func (r *runner) valueState(context.Context) error {
	maxP := rescale.DefaultMaxParallelism(1)
	mem := Workload{Seed: r.cfg.Seed, Records: r.sizes.ValueStateRecords, Keys: r.sizes.WordCountKeys}.Words()
	peb := Workload{Seed: r.cfg.Seed, Records: r.sizes.PebbleRecords, Keys: r.sizes.WordCountKeys}.Words()
	memTruth, pebTruth := Count(mem), Count(peb)

	check := func(what string, res CountResult, err error, truth map[string]int64) (float64, error) {
		if err != nil {
			return 0, err
		}
		if err := DiffCounts(res.Counts, truth); err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
		return Rate(recordsOf(truth), res.Elapsed), nil
	}
	trials := []Trial{
		{Name: "ValueState memory", Run: func() (float64, error) {
			res, err := CountWithValueState(state.Memory, mem, maxP, "")
			return check("ValueState memory", res, err, memTruth)
		}},
		{Name: "bare map", Run: func() (float64, error) {
			return check("bare map", CountWithBareMap(mem), nil, memTruth)
		}},
		{Name: "ValueState pebble", Run: func() (float64, error) {
			dir := r.scratch("valuestate-pebble")
			defer os.RemoveAll(dir)
			res, err := CountWithValueState(state.Pebble, peb, maxP, dir)
			return check("ValueState pebble", res, err, pebTruth)
		}},
		{Name: "bare pebble", Run: func() (float64, error) {
			dir := r.scratch("bare-pebble")
			defer os.RemoveAll(dir)
			res, err := CountWithBarePebble(peb, dir)
			return check("bare pebble", res, err, pebTruth)
		}},
	}
	s, err := Interleave(r.rounds, trials...)
	if err != nil {
		return err
	}
	r.add(Case{Group: GroupValueState, Name: "ValueState get+update, memory backend", Metric: MetricRecordsPerSecond, HigherIsBetter: true,
		Value: Median(s[0]), Samples: s[0], Baseline: "bare map[string]int64 increment",
		BaselineValue: Median(s[1]), BaselineSamples: s[1], Target: AtLeast(0.5)})
	r.add(Case{Group: GroupValueState, Name: "ValueState get+update, pebble backend", Metric: MetricRecordsPerSecond, HigherIsBetter: true,
		Value: Median(s[2]), Samples: s[2], Baseline: "bare Pebble Get+Set, WAL off",
		BaselineValue: Median(s[3]), BaselineSamples: s[3], Target: AtLeast(0.5)})
	return nil
}

func recordsOf(truth map[string]int64) int {
	n := int64(0)
	for _, v := range truth {
		n += v
	}
	return int(n)
}

// checkpoint measures full against incremental checkpoints at each state
// size, 1 % of the keys changed before each checkpoint.
func (r *runner) checkpoint(context.Context) error {
	for _, n := range r.sizes.StateSizes {
		cb, err := NewCheckpointBench(n, r.scratch(fmt.Sprintf("checkpoint-%d", n)))
		if err != nil {
			return err
		}
		var inc, incState, full, incT, fullT []float64
		changed := 0
		for range max(r.sizes.CheckpointRounds, 1) {
			rd, err := cb.Round()
			if err != nil {
				cb.Close()
				return err
			}
			changed = rd.ChangedKeys
			inc = append(inc, float64(rd.IncrementalBytes))
			incState = append(incState, float64(rd.IncrementalStateSize))
			full = append(full, float64(rd.FullBytes))
			incT = append(incT, rd.IncrementalTime.Seconds())
			fullT = append(fullT, rd.FullTime.Seconds())
		}
		cb.Close()
		// Bytes: the mean, not the median, because Pebble's compactions
		// make some checkpoints upload most SST files again; the mean is
		// what incremental checkpoints cost over time.
		r.add(Case{Group: GroupCheckpoint, Name: fmt.Sprintf("incremental checkpoint bytes, %s keys", siNumber(float64(n))),
			Metric: MetricBytes, Size: n, Value: mean(inc), Samples: inc,
			Baseline: "full checkpoint bytes", BaselineValue: mean(full), BaselineSamples: full, Target: AtMost(0.15),
			Details: map[string]float64{"changedKeys": float64(changed), "medianIncrementalBytes": Median(inc),
				"minIncrementalBytes": slices.Min(inc), "maxIncrementalBytes": slices.Max(inc),
				"incrementalStateSize": mean(incState)}})
		r.add(Case{Group: GroupCheckpoint, Name: fmt.Sprintf("incremental checkpoint time, %s keys", siNumber(float64(n))),
			Metric: MetricSeconds, Size: n, Value: Median(incT), Samples: incT,
			Baseline: "full checkpoint time", BaselineValue: Median(fullT), BaselineSamples: fullT})
	}
	return nil
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// rescale measures 2 → 3 under key groups and under hash % parallelism on
// the same data at each state size.
func (r *runner) rescale(context.Context) error {
	const from, to = 2, 3
	largest := slices.Max(r.sizes.StateSizes)
	for _, n := range r.sizes.StateSizes {
		rb, err := NewRescaleBench(n, from, r.scratch(fmt.Sprintf("rescale-%d", n)))
		if err != nil {
			return err
		}
		var kg, naive RescaleResult
		s, err := Interleave(r.rounds,
			Trial{Name: "key groups", Run: func() (float64, error) {
				res, err := rb.KeyGroups(to)
				kg = res
				return res.Elapsed.Seconds(), err
			}},
			Trial{Name: "naive", Run: func() (float64, error) {
				res, err := rb.Naive(to)
				naive = res
				return res.Elapsed.Seconds(), err
			}})
		total := rb.TotalBytes()
		rb.Close()
		if err != nil {
			return err
		}
		if kg.KeysMoved != n || naive.KeysMoved != n {
			return fmt.Errorf("rescale of %d keys restored %d (key groups) and %d (naive)", n, kg.KeysMoved, naive.KeysMoved)
		}
		if kg.BytesMoved != total || naive.BytesMoved != total {
			return fmt.Errorf("rescale of %d bytes moved %d (key groups) and %d (naive)", total, kg.BytesMoved, naive.BytesMoved)
		}
		label := fmt.Sprintf("%s keys", siNumber(float64(n)))
		var timeTarget *Target
		if n == largest {
			timeTarget = AtMost(0.5) // key groups at least 2x faster than the naive scan
		}
		r.add(Case{Group: GroupRescale, Name: "rescale 2->3 time, key groups, " + label, Metric: MetricSeconds, Size: n,
			Value: Median(s[0]), Samples: s[0], Baseline: "naive hash % parallelism", BaselineValue: Median(s[1]),
			BaselineSamples: s[1], Target: timeTarget})
		r.add(Case{Group: GroupRescale, Name: "rescale 2->3 bytes read, key groups, " + label, Metric: MetricBytes, Size: n,
			Value: float64(kg.BytesRead), Baseline: "bytes moved", BaselineValue: float64(kg.BytesMoved), Target: AtMost(1.1),
			Details: map[string]float64{"blockBytesRead": float64(kg.BlockBytesRead), "bytesChangedOwner": float64(kg.BytesChangedOwner)}})
		r.add(Case{Group: GroupRescale, Name: "rescale 2->3 bytes read, naive, " + label, Metric: MetricBytes, Size: n,
			Value: float64(naive.BytesRead), Baseline: "bytes moved", BaselineValue: float64(naive.BytesMoved),
			Details: map[string]float64{"blockBytesRead": float64(naive.BlockBytesRead), "bytesChangedOwner": float64(naive.BytesChangedOwner)}})
	}
	return nil
}

// scaling turns each cost-against-size series into its log-log slope, so
// "grows linearly, not worse" is a figure with a target, not an impression.
func (r *runner) scaling() {
	for _, ch := range costCharts(r.rep, nil) {
		for _, s := range ch.chart.Series {
			if s.Dashed || len(s.Points) < 2 {
				continue
			}
			slope := Slope(s)
			r.add(Case{Group: GroupScaling, Name: ch.chart.Title + ": " + s.Name, Metric: MetricSlope,
				Value: slope, Baseline: "linear growth", BaselineValue: 1, Target: AtMost(1.15),
				Details: map[string]float64{"fromKeys": s.Points[0].X, "toKeys": s.Points[len(s.Points)-1].X}})
		}
	}
}

// MergePeers adds a peers report (bench/peers --out FILE) to rep: its
// StateLab-to-peer ratios become cases of group peers. Cases of an earlier
// merge are replaced, so a report can be re-rendered with newer peers.
func MergePeers(rep *Report, p *PeersReport) {
	kept := rep.Cases[:0]
	for _, c := range rep.Cases {
		if c.Group != GroupPeers {
			kept = append(kept, c)
		}
	}
	rep.Cases = kept
	rep.Peers = p
	by := map[string]PeerRun{}
	for _, s := range p.Systems {
		by[s.Name] = s
	}
	for _, pair := range p.Ratios {
		a, b := by[pair.StateLab], by[pair.Peer]
		c := Case{Group: GroupPeers, Name: pair.StateLab + " vs " + pair.Peer, Metric: MetricRecordsPerSecond, HigherIsBetter: true,
			Value: a.RecordsPerSecond, Samples: a.Samples, Baseline: pair.Peer + " (" + b.What + ")",
			BaselineValue: b.RecordsPerSecond, BaselineSamples: b.Samples}
		if pair.Target != nil {
			c.Target = &Target{Op: pair.Target.Op, Ratio: pair.Target.Ratio}
		}
		c.finish()
		rep.Cases = append(rep.Cases, c)
	}
	if len(p.Ratios) == 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the peers report holds no StateLab run to compare with (%d systems)", len(p.Systems)))
	}
}

// ErrNoEngine says the engine's Live driver is not available to time.
var ErrNoEngine = errors.New("bench: the engine's Live driver is not available")
