// Command peers runs the same keyed count (word count: the same seeded words,
// a count per word) on other Go stream processors and on StateLab, verifies
// each against the ground truth, then times them in interleaved rounds in one
// process and prints records/s per system and StateLab's ratio to each.
//
// It is a module of its own (bench/peers/go.mod) so that go-streams, goka,
// sarama, LevelDB and kfake never enter StateLab's own dependencies; a
// replace directive points back at StateLab so its engine runs in the same
// process, round for round beside the peers.
//
//	cd bench/peers && go run . [--quick] [--json] [--out FILE]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/statelab/statelab/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	workload    bench.Workload
	rounds      int
	parallelism int
	json        bool
	out         string
	only        string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	quick := fs.Bool("quick", false, "small workload and 3 rounds (about a minute)")
	fs.Int64Var(&o.workload.Seed, "seed", 1, "seed of the words")
	fs.IntVar(&o.workload.Records, "records", 1_000_000, "words to count")
	fs.IntVar(&o.workload.Keys, "keys", 10_000, "distinct words")
	fs.IntVar(&o.rounds, "rounds", 5, "interleaved timing rounds (the median is reported)")
	fs.IntVar(&o.parallelism, "parallelism", 2, "parallelism of StateLab's job, the bare pipeline and goka's partitions")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON")
	fs.StringVar(&o.out, "out", "", "also write the JSON report to this file")
	fs.StringVar(&o.only, "only", "", "run only these systems (comma-separated names)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *quick {
		if !flagGiven(fs, "records") {
			o.workload.Records = 100_000
		}
		if !flagGiven(fs, "rounds") {
			o.rounds = 3
		}
	}
	if err := o.workload.Validate(); err != nil {
		fmt.Fprintf(stderr, "peers: %v\n", err)
		return 2
	}
	if o.rounds < 1 || o.parallelism < 1 {
		fmt.Fprintln(stderr, "peers: --rounds and --parallelism must be at least 1")
		return 2
	}
	rep, err := measure(ctx, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "peers: %v\n", err)
		return 1
	}
	if o.out != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(o.out, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "peers: write report: %v\n", err)
			return 1
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
		return 0
	}
	printTable(stdout, rep)
	return 0
}

func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// system is one keyed count to verify and time. run counts words, checks
// the counts against truth (an error if any differs) and says how long the
// counting took.
type system struct {
	name string
	what string
	run  func(ctx context.Context, words []string, truth map[string]int64) (time.Duration, error)
}

// checked wraps a run that returns counts into one that checks them.
func checked(run func(ctx context.Context, words []string) (map[string]int64, time.Duration, error)) func(context.Context, []string, map[string]int64) (time.Duration, error) {
	return func(ctx context.Context, words []string, truth map[string]int64) (time.Duration, error) {
		got, d, err := run(ctx, words)
		if err != nil {
			return 0, err
		}
		return d, bench.DiffCounts(got, truth)
	}
}

func measure(ctx context.Context, o options, log io.Writer) (*bench.PeersReport, error) {
	words := o.workload.Words()
	truth := bench.Count(words)
	systems := filter(allSystems(o), o.only)
	if len(systems) == 0 {
		return nil, fmt.Errorf("no system matches --only %q", o.only)
	}

	rep := &bench.PeersReport{
		Schema:   1,
		Workload: o.workload,
		Rounds:   o.rounds,
		Machine:  bench.Machine{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()},
	}
	// Correctness first: a system that counts wrong is not timed. Every
	// timed round checks its counts again.
	for _, s := range systems {
		if _, err := s.run(ctx, words, truth); err != nil {
			return nil, fmt.Errorf("verify %s: %w", s.name, err)
		}
		fmt.Fprintf(log, "peers: %s counts %d words over %d keys correctly\n", s.name, len(words), len(truth))
	}
	trials := make([]bench.Trial, len(systems))
	for i, s := range systems {
		trials[i] = bench.Trial{Name: s.name, Run: func() (float64, error) {
			d, err := s.run(ctx, words, truth)
			if err != nil {
				return 0, err
			}
			return bench.Rate(len(words), d), nil
		}}
	}
	samples, err := bench.Interleave(o.rounds, trials...)
	if err != nil {
		return nil, err
	}
	for i, s := range systems {
		rep.Systems = append(rep.Systems, bench.PeerRun{Name: s.name, What: s.what,
			RecordsPerSecond: bench.Median(samples[i]), Samples: samples[i], Verified: true})
	}
	rep.Ratios = ratios(rep.Systems)
	rep.Notes = append(rep.Notes,
		"StateLab runs its word count job (source, tokenizer, keyed count in ValueState, sink) on the Live driver, timed from Start to WaitDrained",
		"goka's time runs from its first record to its last: the consumer-group join before it is Kafka's, not the count's",
		"goka reads from and writes its table changelog to kfake over loopback TCP, as it would to a real Kafka; that traffic is part of its keyed state")
	return rep, nil
}

func filter(ss []system, only string) []system {
	if only == "" {
		return ss
	}
	want := strings.Split(only, ",")
	var out []system
	for _, s := range ss {
		if slices.Contains(want, s.name) {
			out = append(out, s)
		}
	}
	return out
}

// ratioPairs are the comparisons issue 8 asks for, with its targets.
var ratioPairs = []struct {
	statelab, peer string
	target         float64
}{
	{"statelab-memory", "go-streams", 5},
	{"statelab-memory", "goka-memory", 5},
	{"statelab-pebble", "goka-leveldb", 3},
}

func ratios(runs []bench.PeerRun) []bench.PeerPair {
	by := map[string]float64{}
	for _, r := range runs {
		by[r.Name] = r.RecordsPerSecond
	}
	var out []bench.PeerPair
	for _, p := range ratioPairs {
		a, okA := by[p.statelab]
		b, okB := by[p.peer]
		if !okA || !okB || b == 0 {
			continue
		}
		t := bench.AtLeast(p.target)
		t.Met = a/b >= p.target
		out = append(out, bench.PeerPair{StateLab: p.statelab, Peer: p.peer, Ratio: a / b, Target: t})
	}
	return out
}

func printTable(w io.Writer, rep *bench.PeersReport) {
	fmt.Fprintf(w, "keyed count: %d words over %d keys (seed %d), median of %d interleaved rounds, %s %s/%s %d CPUs\n\n",
		rep.Workload.Records, rep.Workload.Keys, rep.Workload.Seed, rep.Rounds,
		rep.Machine.GoVersion, rep.Machine.OS, rep.Machine.Arch, rep.Machine.CPUs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "system\trecords/s\twhat")
	for _, s := range rep.Systems {
		fmt.Fprintf(tw, "%s\t%.0f\t%s\n", s.Name, s.RecordsPerSecond, s.What)
	}
	tw.Flush()
	if len(rep.Ratios) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "statelab\tpeer\tratio\ttarget")
		for _, r := range rep.Ratios {
			met := "met"
			if !r.Target.Met {
				met = "MISSED"
			}
			fmt.Fprintf(tw, "%s\t%s\t%.2fx\t%s %.2fx %s\n", r.StateLab, r.Peer, r.Ratio, r.Target.Op, r.Target.Ratio, met)
		}
		tw.Flush()
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}
