package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/statelab/statelab/engine"
)

func init() {
	register(command{name: "chaos", summary: "run word count with seeded crashes and rescales and check the sink output is exactly once", run: runChaos})
}

func runChaos(ctx context.Context, args []string, io IO) int {
	fs := newFlagSet("chaos")
	seed := fs.Int64("seed", 0, "seed of the run: the job's records, the crash and rescale moments and targets (required)")
	records := fs.Int("records", engine.DefaultChaosRecords, "lines in the source topic (4 partitions)")
	crashes := fs.Int("crashes", engine.DefaultChaosCrashes, "crashes of a random subtask or TaskManager, at random moments")
	rescales := fs.Int("rescales", engine.DefaultChaosRescales, "rescales of the keyed operator (count, or alerts with --job alerts) to a random parallelism 1..6")
	job := fs.String("job", engine.ChaosWordCount, "job: wordcount, or alerts (a KeyedProcessFunction whose event-time timers are keyed state)")
	backend := fs.String("backend", "memory", "state backend: memory, fs or pebble")
	driver := fs.String("driver", "step", "driver: step (deterministic, virtual time) or live (goroutines, real time)")
	sink := fs.String("sink", engine.SinkExactlyOnce, "sink: exactly-once (two-phase commit) or at-least-once")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	trace := fs.Bool("trace", false, "print each injected action")
	chaining := fs.Bool("chaining", false, "chain operators as Flink does (pipeline.operator-chaining): source -> tokenizer runs as one task")
	unaligned := fs.Bool("unaligned", false, "unaligned checkpoints (execution.checkpointing.unaligned): in-flight records become channel state")
	if code, done := parseFlags(fs, args, io); done {
		return code
	}
	if fs.NArg() > 0 {
		code, _ := usageError(io, fs.Name(), "unexpected argument %q (chaos takes only flags)", fs.Arg(0))
		return code
	}
	if !flagSet(fs, "seed") {
		code, _ := usageError(io, fs.Name(), "--seed is required (any integer; the same seed gives the same run with --driver step)")
		return code
	}
	if *records < 1 {
		code, _ := usageError(io, fs.Name(), "--records must be at least 1")
		return code
	}
	cfg := engine.ChaosConfig{Seed: *seed, Records: *records, Crashes: *crashes, Rescales: *rescales,
		Backend: engine.Backend(*backend), Driver: *driver, Sink: *sink, Job: *job, Chaining: *chaining, Unaligned: *unaligned}
	if *trace && !*asJSON {
		cfg.Trace = func(line string) { fmt.Fprintln(io.Err, line) }
	}
	res, err := engine.RunChaos(ctx, cfg)
	if err != nil {
		if errors.Is(err, engine.ErrBadCommand) {
			code, _ := usageError(io, fs.Name(), "%s", strings.TrimPrefix(err.Error(), engine.ErrBadCommand.Error()+": "))
			return code
		}
		fmt.Fprintf(io.Err, "%s: %v\n", fs.Name(), err)
		return exitFail
	}
	if *asJSON {
		if err := json.NewEncoder(io.Out).Encode(res); err != nil {
			return exitFail
		}
	} else {
		fmt.Fprintln(io.Out, res.Summary())
		if !res.OK {
			for _, line := range res.Diff(20) {
				fmt.Fprintln(io.Out, line)
			}
		}
	}
	if !res.OK {
		return exitFail
	}
	return exitOK
}
