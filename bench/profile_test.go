package bench

import (
	"context"
	"os"
	"testing"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// BenchmarkEngineWordCount runs the wordcount case's engine job (memory and
// pebble, p = 1 and 2) once per iteration, light check; profile it with
// -cpuprofile / -memprofile to see the engine's per-record costs.
func BenchmarkEngineWordCount(b *testing.B) {
	words := Workload{Seed: 1, Records: benchWords(), Keys: 10_000}.Words()
	truth := Count(words)
	for _, kind := range []state.BackendKind{state.Memory, state.Pebble} {
		for _, p := range []int{1, 2} {
			b.Run(string(kind)+"-p"+string(rune('0'+p)), func(b *testing.B) {
				for b.Loop() {
					dir := b.TempDir()
					res, err := RunEngineWordCount(context.Background(), EngineRun{Words: words, Backend: kind, Parallelism: p,
						MaxParallelism: rescale.DefaultMaxParallelism(p), Dir: dir, Truth: truth, Light: true})
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(Rate(len(words), res.Elapsed), "rec/s")
				}
			})
		}
	}
}

// BenchmarkBareWordCount is the same-stages baseline of the wordcount case.
func BenchmarkBareWordCount(b *testing.B) {
	words := Workload{Seed: 1, Records: benchWords(), Keys: 10_000}.Words()
	for _, p := range []int{1, 2} {
		b.Run("p"+string(rune('0'+p)), func(b *testing.B) {
			for b.Loop() {
				res, err := RunBareWordCount(words, p, rescale.DefaultMaxParallelism(p))
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(Rate(len(words), res.Elapsed), "rec/s")
			}
		})
	}
}

func benchWords() int {
	if os.Getenv("STATELAB_BENCH_WORDS") == "big" {
		return 1_000_000
	}
	return 200_000
}
