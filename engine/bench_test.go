package engine

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEngineBenchmarks measures the Live driver's keyed count against its
// baselines in interleaved rounds and prints the medians and ratios as the
// table docs/benchmarks.md shows. It runs only with STATELAB_BENCH=1 (it
// takes about a minute): go test ./engine -run EngineBenchmarks -v.
func TestEngineBenchmarks(t *testing.T) {
	if os.Getenv("STATELAB_BENCH") == "" {
		t.Skip("set STATELAB_BENCH=1 to run the engine benchmarks")
	}
	rounds := 3
	window := 2 * time.Second
	warm := 500 * time.Millisecond
	ctx := context.Background()
	dir := t.TempDir()
	type key struct {
		name string
		p    int
	}
	res := map[key][]float64{}
	add := func(name string, p int, tp Throughput, err error) {
		require.NoError(t, err, name)
		res[key{name, p}] = append(res[key{name, p}], tp.PerSecond)
		t.Logf("%-28s p%d %10.0f rec/s (%d checkpoints)", name, p, tp.PerSecond, tp.Checkpoints)
	}
	for r := 0; r < rounds; r++ {
		for _, p := range []int{1, 2} {
			tp, err := MeasureBarePipeline(ctx, p, 10_000, warm, window)
			add("bare pipeline", p, tp, err)
			tp, err = MeasureLiveKeyedCount(ctx, ThroughputConfig{Backend: BackendMemory, Parallelism: p, Warmup: warm, Window: window, Dir: dir})
			add("memory", p, tp, err)
			tp, err = MeasureLiveKeyedCount(ctx, ThroughputConfig{Backend: BackendMemory, Parallelism: p, Warmup: warm, Window: window, Dir: dir, CheckpointInterval: time.Second})
			add("memory, checkpoint 1s", p, tp, err)
			tp, err = MeasureBarePebble(ctx, dir, 10_000, warm, window)
			add("bare pebble", p, tp, err)
			tp, err = MeasureLiveKeyedCount(ctx, ThroughputConfig{Backend: BackendPebble, Parallelism: p, Warmup: warm, Window: window, Dir: dir})
			add("pebble", p, tp, err)
			tp, err = MeasureLiveKeyedCount(ctx, ThroughputConfig{Backend: BackendPebble, Parallelism: p, Warmup: warm, Window: window, Dir: dir, CheckpointInterval: time.Second})
			add("pebble, checkpoint 1s", p, tp, err)
		}
	}
	med := func(name string, p int) float64 {
		v := slices.Clone(res[key{name, p}])
		slices.Sort(v)
		return v[len(v)/2]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| case | p | records/s (median of %d) | ratio | target |\n|---|---|---|---|---|\n", rounds)
	for _, p := range []int{1, 2} {
		bare, bp := med("bare pipeline", p), med("bare pebble", p)
		m, mc := med("memory", p), med("memory, checkpoint 1s", p)
		pb, pbc := med("pebble", p), med("pebble, checkpoint 1s", p)
		fmt.Fprintf(&b, "| bare goroutine+channel pipeline, batches of 64 | %d | %.0f | 1 | |\n", p, bare)
		fmt.Fprintf(&b, "| Live keyed count, memory | %d | %.0f | %.2f× bare pipeline | ≥ 0.25× |\n", p, m, m/bare)
		fmt.Fprintf(&b, "| Live keyed count, memory, checkpoint every 1 s | %d | %.0f | %.2f× no checkpoints | ≥ 0.90× |\n", p, mc, mc/m)
		fmt.Fprintf(&b, "| bare Pebble Get+Set loop, WAL off (one goroutine) | %d | %.0f | 1 | |\n", p, bp)
		fmt.Fprintf(&b, "| Live keyed count, pebble | %d | %.0f | %.2f× bare Pebble | ≥ 0.5× |\n", p, pb, pb/bp)
		fmt.Fprintf(&b, "| Live keyed count, pebble, checkpoint every 1 s | %d | %.0f | %.2f× no checkpoints | ≥ 0.90× |\n", p, pbc, pbc/pb)
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
