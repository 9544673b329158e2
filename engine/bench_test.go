//go:build !js

package engine

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEngineBenchmarks measures the Live driver's keyed count against its
// baselines and prints the table docs/benchmarks.md shows. Each round
// measures a case and its baseline back to back (alternating which goes
// first) and keeps their ratio; the table gives the median over rounds,
// which holds up better than absolute rates on a shared, noisy machine. Two
// ratios are kept: of records per second (wall clock) and of records per
// CPU second of the process (steadier when other work takes the cores). For
// checkpointing cases the table also gives the share of time the keyed
// subtasks spent in checkpoints' synchronous parts. It runs only with
// STATELAB_BENCH=1 (about three minutes; STATELAB_BENCH_ROUNDS changes the
// number of rounds, default 5):
//
//	STATELAB_BENCH=1 go test ./engine -run EngineBenchmarks -v
func TestEngineBenchmarks(t *testing.T) {
	if os.Getenv("STATELAB_BENCH") == "" {
		t.Skip("set STATELAB_BENCH=1 to run the engine benchmarks")
	}
	rounds := 5
	if n, err := strconv.Atoi(os.Getenv("STATELAB_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	window, warm := 2*time.Second, 400*time.Millisecond
	ctx := context.Background()
	dir := t.TempDir()
	type row struct {
		name, base, target string
		rates, ratios      []float64
		cpuRatios, syncs   []float64
	}
	rows := map[string]*row{}
	var order []string
	rec := func(name, base, target string, v, ref Throughput) {
		r := rows[name]
		if r == nil {
			r = &row{name: name, base: base, target: target}
			rows[name] = r
			order = append(order, name)
		}
		r.rates = append(r.rates, v.PerSecond)
		if ref.PerSecond > 0 {
			r.ratios = append(r.ratios, v.PerSecond/ref.PerSecond)
		}
		if ref.PerCPUSecond > 0 && v.PerCPUSecond > 0 {
			r.cpuRatios = append(r.cpuRatios, v.PerCPUSecond/ref.PerCPUSecond)
		}
		if v.Checkpoints > 0 {
			r.syncs = append(r.syncs, v.SyncShare)
		}
	}
	live := func(be Backend, p int, iv time.Duration) Throughput {
		tp, err := MeasureLiveKeyedCount(ctx, ThroughputConfig{Backend: be, Parallelism: p, Warmup: warm, Window: window, Dir: dir, CheckpointInterval: iv})
		require.NoError(t, err)
		if iv > 0 {
			require.Positive(t, tp.Checkpoints, "checkpoints completed in the window")
		}
		return tp
	}
	// pair measures a and b back to back, in turns a first and b first.
	pair := func(r int, a, b func() Throughput) (Throughput, Throughput) {
		if r%2 == 1 {
			y := b()
			return a(), y
		}
		x := a()
		return x, b()
	}
	for r := 0; r < rounds; r++ {
		for _, p := range []int{1, 2} {
			bare, mem := pair(r, func() Throughput {
				tp, err := MeasureBarePipeline(ctx, p, 10_000, warm, window)
				require.NoError(t, err)
				return tp
			}, func() Throughput { return live(BackendMemory, p, 0) })
			memCk := live(BackendMemory, p, time.Second)
			bp, peb := pair(r, func() Throughput {
				tp, err := MeasureBarePebble(ctx, dir, p, 10_000, warm, window)
				require.NoError(t, err)
				return tp
			}, func() Throughput { return live(BackendPebble, p, 0) })
			pebCk := live(BackendPebble, p, time.Second)
			rec(fmt.Sprintf("bare pipeline (goroutines + channels, batches of 64), p%d", p), "", "", bare, Throughput{})
			rec(fmt.Sprintf("Live keyed count, memory, p%d", p), "bare pipeline", "≥ 0.25", mem, bare)
			rec(fmt.Sprintf("Live keyed count, memory, checkpoint every 1 s, p%d", p), "no checkpoints", "≥ 0.90", memCk, mem)
			rec(fmt.Sprintf("bare Pebble Get+Set loop, WAL off, p%d", p), "", "", bp, Throughput{})
			rec(fmt.Sprintf("Live keyed count, pebble, p%d", p), "bare Pebble", "≥ 0.5", peb, bp)
			rec(fmt.Sprintf("Live keyed count, pebble, checkpoint every 1 s, p%d", p), "no checkpoints", "≥ 0.90", pebCk, peb)
			t.Logf("round %d p%d: bare %.0f mem %.0f memCk %.0f (sync %.1f%%) barePebble %.0f pebble %.0f pebbleCk %.0f (sync %.1f%%)",
				r, p, bare.PerSecond, mem.PerSecond, memCk.PerSecond, 100*memCk.SyncShare, bp.PerSecond, peb.PerSecond, pebCk.PerSecond, 100*pebCk.SyncShare)
		}
	}
	med := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		if len(v)%2 == 0 {
			return (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		return v[len(v)/2]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| case | records/s (median) | ratio, records/s (median of %d paired rounds) | ratio, records per CPU second | sync part | target |\n|---|---|---|---|---|---|\n", rounds)
	for _, name := range order {
		r := rows[name]
		ratio, cpu, sync := "", "", ""
		if len(r.ratios) > 0 {
			ratio = fmt.Sprintf("%.2f× %s (min %.2f, max %.2f)", med(r.ratios), r.base, slices.Min(r.ratios), slices.Max(r.ratios))
		}
		if len(r.cpuRatios) > 0 {
			cpu = fmt.Sprintf("%.2f× (min %.2f, max %.2f)", med(r.cpuRatios), slices.Min(r.cpuRatios), slices.Max(r.cpuRatios))
		}
		if len(r.syncs) > 0 {
			sync = fmt.Sprintf("%.1f %% of the time", 100*med(r.syncs))
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %s | %s |\n", r.name, med(r.rates), ratio, cpu, sync, r.target)
	}
	t.Log("\n" + b.String())
}

// BenchmarkLiveKeyedCount reports records/s for go test -bench.
func BenchmarkLiveKeyedCount(b *testing.B) {
	for _, be := range []Backend{BackendMemory, BackendPebble} {
		for _, p := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/p%d", be, p), func(b *testing.B) {
				for range b.N {
					tp, err := MeasureLiveKeyedCount(context.Background(), ThroughputConfig{Backend: be, Parallelism: p,
						Warmup: 200 * time.Millisecond, Window: time.Second, Dir: b.TempDir()})
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(tp.PerSecond, "records/s")
				}
			})
		}
	}
}

// BenchmarkBarePipeline is the baseline of BenchmarkLiveKeyedCount.
func BenchmarkBarePipeline(b *testing.B) {
	for _, p := range []int{1, 2} {
		b.Run(fmt.Sprintf("p%d", p), func(b *testing.B) {
			for range b.N {
				tp, err := MeasureBarePipeline(context.Background(), p, 10_000, 200*time.Millisecond, time.Second)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(tp.PerSecond, "records/s")
			}
		})
	}
}
