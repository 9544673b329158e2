package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/statelab/statelab/bench"
	"github.com/statelab/statelab/web"
)

func init() {
	register(command{name: "bench", summary: "measure throughput, checkpoint and rescale costs beside bare baselines (ratios, SVG charts)", run: runBench})
}

// benchSizes overrides the sizes --quick picks; tests set tiny ones.
var benchSizes *bench.Sizes

func runBench(ctx context.Context, args []string, io IO) int {
	fs := newFlagSet("bench")
	quick := fs.Bool("quick", false, "small sizes and 3 rounds: under a minute (CI smoke)")
	asJSON := fs.Bool("json", false, "print the report (bench.json) on stdout instead of the table")
	out := fs.String("out", "bench-results", "directory for bench.json and the SVG charts; empty writes nothing")
	seed := fs.Int64("seed", 1, "seed of every workload")
	rounds := fs.Int("rounds", 0, "interleaved rounds per case, the median is reported (default 5, or 3 with --quick)")
	only := fs.String("only", "", "comma-separated groups to run: "+strings.Join(bench.Groups, ","))
	peers := fs.String("peers", "", "merge a peers report written by 'cd bench/peers && go run . --out FILE'")
	strict := fs.Bool("strict", false, "exit 1 when a case misses its target")
	from := fs.String("from", "", "measure nothing: re-render this bench.json (with --peers merged) as table, JSON and charts")
	if code, done := parseFlags(fs, args, io); done {
		return code
	}
	if fs.NArg() > 0 {
		code, _ := usageError(io, fs.Name(), "unexpected argument %q (bench takes only flags)", fs.Arg(0))
		return code
	}
	if *rounds < 0 {
		code, _ := usageError(io, fs.Name(), "--rounds must be 0 (the default) or more, got %d", *rounds)
		return code
	}
	cfg := bench.Config{Quick: *quick, Seed: *seed, Rounds: *rounds, Sizes: benchSizes, Log: io.Err, WebFanOut: web.MeasureFanOut, Sessions: web.MeasureSessions}
	if *only != "" {
		for _, g := range strings.Split(*only, ",") {
			g = strings.TrimSpace(g)
			if !slices.Contains(bench.Groups, g) {
				code, _ := usageError(io, fs.Name(), "unknown group %q in --only (allowed: %s)", g, strings.Join(bench.Groups, ", "))
				return code
			}
			cfg.Groups = append(cfg.Groups, g)
		}
	}
	if *peers != "" {
		p, err := readPeers(*peers)
		if err != nil {
			code, _ := usageError(io, fs.Name(), "%v", err)
			return code
		}
		cfg.Peers = p
	}

	var rep *bench.Report
	if *from != "" {
		r, err := readReport(*from)
		if err != nil {
			code, _ := usageError(io, fs.Name(), "%v", err)
			return code
		}
		if cfg.Peers != nil {
			bench.MergePeers(r, cfg.Peers)
		}
		rep = r
	} else {
		fmt.Fprintf(io.Err, "statelab bench: seed %d, %s run\n", *seed, map[bool]string{true: "quick", false: "full"}[*quick])
		r, err := bench.Run(ctx, cfg)
		if err != nil {
			fmt.Fprintf(io.Err, "statelab bench: %v\n", err)
			return exitFail
		}
		rep = r
	}
	if *out != "" {
		files, err := bench.WriteOutputs(*out, rep)
		if err != nil {
			fmt.Fprintf(io.Err, "statelab bench: %v\n", err)
			return exitFail
		}
		fmt.Fprintf(io.Err, "statelab bench: wrote %s\n", strings.Join(files, ", "))
	}
	if *asJSON {
		if err := bench.WriteJSON(io.Out, rep); err != nil {
			fmt.Fprintf(io.Err, "statelab bench: %v\n", err)
			return exitFail
		}
	} else if err := bench.WriteTable(io.Out, rep); err != nil {
		fmt.Fprintf(io.Err, "statelab bench: %v\n", err)
		return exitFail
	}
	if met, all := bench.TargetsMet(rep); *strict && met < all {
		fmt.Fprintf(io.Err, "statelab bench: %d of %d targets missed\n", all-met, all)
		return exitFail
	}
	return exitOK
}

// readPeers reads a report of the peers module (bench/peers --out FILE).
func readPeers(path string) (*bench.PeersReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read peers report: %w (write one with 'cd bench/peers && go run . --out FILE')", err)
	}
	var p bench.PeersReport
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("peers report %s is not JSON from bench/peers: %w", path, err)
	}
	if len(p.Systems) == 0 {
		return nil, fmt.Errorf("peers report %s lists no systems; write it with 'cd bench/peers && go run . --out FILE'", path)
	}
	return &p, nil
}

// readReport reads a bench.json written by an earlier run.
func readReport(path string) (*bench.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w (write one with 'statelab bench --out DIR')", err)
	}
	var r bench.Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("report %s is not a bench.json: %w", path, err)
	}
	if r.Schema != bench.ReportSchema {
		return nil, fmt.Errorf("report %s has schema %d, this statelab reads %d; run the bench again", path, r.Schema, bench.ReportSchema)
	}
	return &r, nil
}
