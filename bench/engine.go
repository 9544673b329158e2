package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/state"
)

func init() { engineWordCount = liveWordCount }

// WordCountSpec is StateLab's word count as the bench runs it: the words as
// the source topic's lines (dealt round-robin over parallelism partitions,
// one word per line), then tokenizer (forward), keyed count in ValueState
// (hash, by key group), at-least-once sink (forward), every operator at
// parallelism, one TaskManager with a slot per subtask. Checkpoints are off:
// this is the throughput of the data path; the checkpoint cases measure
// checkpoints.
func WordCountSpec(words []string, backend state.BackendKind, parallelism, maxParallelism int) *engine.JobSpec {
	return &engine.JobSpec{
		Name: "bench-wordcount", Seed: 1, Backend: engine.Backend(backend),
		Operators: []engine.OperatorSpec{
			{ID: "source", Kind: engine.KindSource, Parallelism: parallelism,
				Options: map[string]any{"generator": engine.GeneratorNone, "partitions": parallelism, "lines": words}},
			{ID: "tokenizer", Kind: engine.KindTokenizer, Parallelism: parallelism},
			{ID: "count", Kind: engine.KindCount, Parallelism: parallelism, MaxParallelism: maxParallelism},
			{ID: "sink", Kind: engine.KindSink, Parallelism: parallelism, Options: map[string]any{"semantics": engine.SinkAtLeastOnce}},
		},
		Edges: []engine.EdgeSpec{
			{From: "source", To: "tokenizer", Partitioner: engine.Forward},
			{From: "tokenizer", To: "count", Partitioner: engine.Hash},
			{From: "count", To: "sink", Partitioner: engine.Forward},
		},
		Cluster: engine.ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: parallelism},
		Restart: engine.RestartSpec{Strategy: engine.RestartNone},
		// Every operator its own task, as the figures in docs/benchmarks.md
		// were measured (Flink's default would chain source -> tokenizer).
		Chaining: new(false),
	}
}

// liveWordCount runs WordCountSpec on the Live driver from Start until
// WaitDrained (every line read, nothing in flight, the sink has it all),
// then checks the result two ways: the engine's own comparison of the sink
// output with its ground truth (every running count 1..n of every key
// exactly once, as many keys and records as run.Truth; with run.Light only
// the number of sink records), and each count subtask's ValueState read
// through the state inspector against run.Truth.
// The inspector answers within two seconds or not at all; when it does not
// (a Pebble subtask after a million updates), the comparison alone stands
// and the result says so.
func liveWordCount(ctx context.Context, run EngineRun) (EngineResult, error) {
	spec := WordCountSpec(run.Words, run.Backend, run.Parallelism, run.MaxParallelism)
	l, err := engine.NewLive(spec, engine.Options{Dir: run.Dir})
	if err != nil {
		return EngineResult{}, fmt.Errorf("bench: build word count job: %w", err)
	}
	defer l.Close()
	settle()
	start, cpu0 := time.Now(), processCPU()
	if err := l.Start(ctx); err != nil {
		return EngineResult{}, fmt.Errorf("bench: start word count job: %w", err)
	}
	if err := l.WaitDrained(ctx); err != nil {
		return EngineResult{}, fmt.Errorf("bench: run word count job: %w", err)
	}
	res := EngineResult{Elapsed: time.Since(start), CPU: processCPU() - cpu0}

	total := 0
	for _, n := range run.Truth {
		total += int(n)
	}
	if run.Light {
		// The sink got one running count per word; the state check below
		// says whether they were the right ones.
		if got := l.Snapshot().Sinks; len(got) != 1 || got[0].Committed != total {
			return EngineResult{}, fmt.Errorf("bench: word count sink holds %v records, want %d", committedOf(got), total)
		}
		res.Verified = "sink holds one record per word"
	} else {
		if err := compareWithTruth(l, run.Truth, total); err != nil {
			return EngineResult{}, err
		}
		res.Verified = "sink output equals the engine's ground truth"
	}

	counts := make(map[string]int64)
	for i := range run.Parallelism {
		task := fmt.Sprintf("count#%d", i)
		v, err := l.TaskState(task, 0)
		if errors.Is(err, engine.ErrNotRunning) {
			return res, nil // the inspector did not answer in time; see above
		}
		if err != nil {
			return EngineResult{}, fmt.Errorf("bench: inspect %s: %w", task, err)
		}
		for _, e := range v.Keyed {
			if e.State != "count" {
				continue
			}
			n, err := strconv.ParseInt(e.Value, 10, 64)
			if err != nil {
				return EngineResult{}, fmt.Errorf("bench: %s holds count %q for %q: %w", task, e.Value, e.Key, err)
			}
			counts[e.Key] += n
		}
	}
	if err := DiffCounts(counts, run.Truth); err != nil {
		return EngineResult{}, fmt.Errorf("bench: word count state: %w", err)
	}
	res.Verified += "; ValueState of every key equals the ground truth"
	res.StateChecked = true
	return res, nil
}

// compareWithTruth runs the engine's own check of the sink output: every
// running count 1..n of every key exactly once, as many keys and records as
// truth. It evaluates the job once more over the whole topic, so it costs
// about a second per 100,000 words: the bench runs it once per
// configuration, not in every timed round.
func compareWithTruth(l *engine.Live, truth map[string]int64, total int) error {
	cmps, err := l.Compare()
	if err != nil {
		return fmt.Errorf("bench: compare word count output: %w", err)
	}
	if len(cmps) != 1 {
		return fmt.Errorf("bench: word count has %d sinks, want 1", len(cmps))
	}
	c := cmps[0]
	if !c.Supported || !c.ExactlyOnce || c.Keys != len(truth) || c.Expected != total || c.Committed != total {
		return fmt.Errorf("bench: word count sink output is wrong: exactly-once %v, %d keys (want %d), %d records expected and %d committed (want %d), %d lost, %d duplicated",
			c.ExactlyOnce, c.Keys, len(truth), c.Expected, c.Committed, total, c.LostRecords, c.DuplicateRecords)
	}
	return nil
}

func committedOf(sinks []engine.SinkView) []int {
	var out []int
	for _, s := range sinks {
		out = append(out, s.Committed)
	}
	return out
}

// settle collects the garbage left by what ran before a timed window — the
// previous trial, or the job just built (a million-line topic) — so that
// the window pays only for its own: without it a collection started by the
// engine's setup ran on into the engine's window, and the bare pipeline,
// which has no setup, never paid for one. Every timed window of the
// wordcount group (engine and bare alike) starts with it.
func settle() { runtime.GC() }
