package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/statelab/statelab/rescale"
)

func init() {
	register(command{name: "plan", summary: "show which key groups move, and what each new subtask reads, when a keyed operator is rescaled", run: runPlan})
}

func runPlan(_ context.Context, args []string, io IO) int {
	fs := newFlagSet("plan")
	maxP := fs.Int("max-parallelism", 0, "number of key groups (default: Flink's default for --from)")
	from := fs.Int("from", 0, "parallelism before the rescale (required)")
	to := fs.Int("to", 0, "parallelism after the rescale (required)")
	sample := fs.Int("sample-keys", 10000, "count how many of the keys key-0 … key-(N-1) move under each scheme (0 to skip)")
	asJSON := fs.Bool("json", false, "print the plan as one JSON object")
	if code, done := parseFlags(fs, args, io); done {
		return code
	}
	if fs.NArg() > 0 {
		code, _ := usageError(io, fs.Name(), "unexpected argument %q (plan takes only flags)", fs.Arg(0))
		return code
	}
	if !flagSet(fs, "from") || !flagSet(fs, "to") {
		code, _ := usageError(io, fs.Name(), "--from and --to are required (parallelism before and after, 1 to %d)", rescale.UpperBoundMaxParallelism)
		return code
	}
	if *sample < 0 || *sample > 10_000_000 {
		code, _ := usageError(io, fs.Name(), "--sample-keys %d is not within 0..10000000", *sample)
		return code
	}
	m := *maxP
	if m == 0 {
		if *from < 1 || *from > rescale.UpperBoundMaxParallelism {
			code, _ := usageError(io, fs.Name(), "parallelism %d (--from) is not within 1..%d", *from, rescale.UpperBoundMaxParallelism)
			return code
		}
		// Max parallelism is fixed when the job first runs, so the default
		// comes from the original parallelism.
		m = rescale.DefaultMaxParallelism(*from)
	}
	p, err := rescale.NewPlan(m, *from, *to)
	if err != nil {
		code, _ := usageError(io, fs.Name(), "%s", strings.TrimPrefix(err.Error(), "rescale: "))
		return code
	}
	var stats *rescale.MoveStats
	if *sample > 0 {
		hashes := make([]int32, *sample)
		for i := range hashes {
			hashes[i] = rescale.JavaStringHashCode("key-" + strconv.Itoa(i))
		}
		s := rescale.CompareMoves(hashes, m, *from, *to)
		stats = &s
	}
	naive := rescale.NaiveMovedShare(*from, *to)
	if *asJSON {
		doc := struct {
			rescale.Plan
			MovedKeyGroupShare float64            `json:"movedKeyGroupShare"`
			NaiveMovedShare    float64            `json:"naiveMovedShare"`
			SampleKeys         *rescale.MoveStats `json:"sampleKeys,omitempty"`
		}{p, float64(len(p.Moved)) / float64(m), naive, stats}
		enc := json.NewEncoder(io.Out)
		if err := enc.Encode(doc); err != nil {
			return exitFail
		}
		return exitOK
	}
	out := bufio.NewWriter(io.Out)
	defer out.Flush()
	fmt.Fprintf(out, "Rescale from parallelism %d to %d with max parallelism %d (%d key groups).\n\n", *from, *to, m, m)
	fmt.Fprintf(out, "Key groups that change subtask: %d of %d (%.1f%%).\n", len(p.Moved), m, 100*float64(len(p.Moved))/float64(m))
	fmt.Fprintf(out, "Under hash %% parallelism instead, %.1f%% of keys would change subtask, and every new subtask would scan every old one.\n", 100*naive)
	if stats != nil {
		fmt.Fprintf(out, "Of %d sample keys (key-0 …): %d move with key groups, %d with hash %% parallelism.\n",
			stats.Keys, stats.MovedByKeyGroups, stats.MovedByNaive)
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "What each new subtask restores (Flink's StateAssignmentOperation):")
	for _, a := range p.Subtasks {
		fmt.Fprintf(out, "  subtask %d owns key groups %s, reads:", a.Subtask, a.Range)
		for i, r := range a.Reads {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(out, "%s %s from old subtask %d", sep, r.Range, r.OldSubtask)
		}
		fmt.Fprintln(out)
	}
	if len(p.Moved) > 0 && len(p.Moved) <= 64 {
		fmt.Fprintln(out)
		fmt.Fprintln(out, "Moved key groups (key group: old subtask -> new subtask):")
		for _, g := range p.Moved {
			fmt.Fprintf(out, "  %d: %d -> %d\n", g, p.KeyGroups[g].From, p.KeyGroups[g].To)
		}
	}
	return exitOK
}
