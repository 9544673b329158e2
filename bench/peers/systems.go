package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/statelab/statelab/bench"
	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// allSystems lists every keyed count this module runs, StateLab's first.
func allSystems(o options) []system {
	p := o.parallelism
	maxP := rescale.DefaultMaxParallelism(p)
	return []system{
		stateLabSystem("statelab-memory", state.Memory, p, maxP),
		stateLabSystem("statelab-pebble", state.Pebble, p, maxP),
		{
			name: "bare-batched",
			what: fmt.Sprintf("goroutines and channels, batches of %d, a map per key group, parallelism %d", bench.BatchSize, p),
			run: checked(func(_ context.Context, words []string) (map[string]int64, time.Duration, error) {
				r, err := bench.RunBarePipeline(words, p, maxP)
				return r.Counts, r.Elapsed, err
			}),
		},
		{
			name: "go-streams",
			what: "reugn/go-streams v0.12.0: flow.NewKeyed by word, flow.NewReduce sum per word (in memory)",
			run: checked(func(_ context.Context, words []string) (map[string]int64, time.Duration, error) {
				r := runGoStreams(words)
				return r.counts, r.elapsed, nil
			}),
		},
		gokaSystem("goka-memory", gokaMemory, p),
		gokaSystem("goka-leveldb", gokaLevelDB, p),
	}
}

func gokaSystem(name string, st gokaStorage, partitions int) system {
	return system{
		name: name,
		what: fmt.Sprintf("lovoo/goka v1.1.13, group table in %s storage, %d partitions, franz-go kfake broker on loopback", st, partitions),
		run: checked(func(ctx context.Context, words []string) (map[string]int64, time.Duration, error) {
			dir, err := os.MkdirTemp("", "statelab-goka-")
			if err != nil {
				return nil, 0, err
			}
			defer os.RemoveAll(dir)
			r, err := runGoka(ctx, words, partitions, st, dir)
			return r.counts, r.elapsed, err
		}),
	}
}

func stateLabSystem(name string, kind state.BackendKind, p, maxP int) system {
	// The first run (the verification before timing) has the engine compare
	// its sink output with its ground truth in full; later runs check the
	// record count and every key's ValueState, which is cheaper.
	runs := 0
	return system{
		name: name,
		what: fmt.Sprintf("StateLab word count on the Live driver, %s backend, parallelism %d", kind, p),
		run: func(ctx context.Context, words []string, truth map[string]int64) (time.Duration, error) {
			dir, err := os.MkdirTemp("", "statelab-peers-")
			if err != nil {
				return 0, err
			}
			defer os.RemoveAll(dir)
			runs++
			r, err := bench.RunEngineWordCount(ctx, bench.EngineRun{Words: words, Backend: kind, Parallelism: p,
				MaxParallelism: maxP, Dir: dir, Truth: truth, Light: runs > 1})
			return r.Elapsed, err
		},
	}
}
