package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// BenchmarkEngineWordCount runs the wordcount case's engine job (memory and
// pebble, p = 1 and 2) once per iteration, light check; profile it with
// -cpuprofile / -memprofile to see the engine's per-record costs.
func BenchmarkEngineWordCount(b *testing.B) {
	words := Workload{Seed: 1, Records: benchWords(), Keys: 10_000}.Words()
	truth := Count(words)
	ps := []int{1, 2}
	if os.Getenv("STATELAB_PROFILE_P") == "4" {
		ps = []int{4}
	}
	for _, kind := range []state.BackendKind{state.Memory, state.Pebble} {
		for _, p := range ps {
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

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestProfileCPUShare prints wall time and process CPU of one engine word
// count and one bare word count (STATELAB_PROFILE=1).
func TestProfileCPUShare(t *testing.T) {
	if os.Getenv("STATELAB_PROFILE") == "" {
		t.Skip("set STATELAB_PROFILE=1")
	}
	words := Workload{Seed: 1, Records: 1_000_000, Keys: 10_000}.Words()
	truth := Count(words)
	for _, p := range []int{1, 2} {
		for range 3 {
			l, err := engine.NewLive(WordCountSpec(words, state.Memory, p, 128), engine.Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			c0, w0 := cpuNow(), time.Now()
			if err := l.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := l.WaitDrained(context.Background()); err != nil {
				t.Fatal(err)
			}
			c1 := cpuNow()
			res := EngineResult{Elapsed: time.Since(w0)}
			l.Close()
			_ = truth
			c1b := cpuNow()
			b, _ := RunBareWordCount(words, p, 128)
			c2 := cpuNow() - (c1b - c1)
			t.Logf("p%d engine %v (%.2f M/s; cpu %v)  bare %v (%.2f M/s; cpu %v)", p, res.Elapsed.Round(time.Millisecond), Rate(len(words), res.Elapsed)/1e6, (c1 - c0).Round(time.Millisecond),
				b.Elapsed.Round(time.Millisecond), Rate(len(words), b.Elapsed)/1e6, (c2 - c1).Round(time.Millisecond))
		}
	}
}

// BenchmarkCountStep: one keyed count step per word, in isolation.
func BenchmarkCountStep(b *testing.B) {
	words := Workload{Seed: 1, Records: 1_000_000, Keys: 10_000}.Words()
	b.Run("valuestate", func(b *testing.B) {
		for b.Loop() {
			if _, err := CountWithValueState(state.Memory, words, 128, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("valuestate-string", func(b *testing.B) {
		for b.Loop() {
			kb, _ := state.NewKeyedBackend(state.KeyedBackendConfig{Kind: state.Memory, MaxParallelism: 128, KeyGroupRange: rescale.NewKeyGroupRange(0, 127)})
			v, _ := state.Value(kb, "count", state.Int64Codec)
			for _, w := range words {
				if err := kb.SetCurrentKeyString(w, rescale.KeyGroupForString(w, 128)); err != nil {
					b.Fatal(err)
				}
				n, _, _ := v.Value()
				if err := v.Update(n + 1); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("bare-bytes", func(b *testing.B) {
		for b.Loop() {
			CountWithBareMap(words)
		}
	})
	b.Run("bare-interned-kg", func(b *testing.B) {
		for b.Loop() {
			groups := make([]map[string]int64, 128)
			for _, w := range words {
				kg := rescale.KeyGroupForString(w, 128)
				m := groups[kg]
				if m == nil {
					m = map[string]int64{}
					groups[kg] = m
				}
				m[w]++
			}
		}
	})
}

// TestProfileIncrementalCheckpoints prints each round's incremental upload
// as a share of the full checkpoint (STATELAB_PROFILE=1;
// STATELAB_PROFILE_KEYS, STATELAB_PROFILE_ROUNDS).
func TestProfileIncrementalCheckpoints(t *testing.T) {
	if os.Getenv("STATELAB_PROFILE") == "" {
		t.Skip("set STATELAB_PROFILE=1")
	}
	keys, rounds := 1_000_000, 24
	fmt.Sscan(os.Getenv("STATELAB_PROFILE_KEYS"), &keys)
	fmt.Sscan(os.Getenv("STATELAB_PROFILE_ROUNDS"), &rounds)
	c, err := NewCheckpointBench(keys, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var sum, sumFull float64
	var line string
	for range rounds {
		r, err := c.Round()
		if err != nil {
			t.Fatal(err)
		}
		sum += float64(r.IncrementalBytes)
		sumFull += float64(r.FullBytes)
		line += fmt.Sprintf(" %.1f%%", 100*float64(r.IncrementalBytes)/float64(r.FullBytes))
	}
	t.Logf("%d keys, %d rounds: mean %.1f %% of full; rounds:%s", keys, rounds, 100*sum/sumFull, line)
}

// TestProfilePebble prints the engine's pebble word count beside the bare
// Pebble loop, interleaved (STATELAB_PROFILE=1).
func TestProfilePebble(t *testing.T) {
	if os.Getenv("STATELAB_PROFILE") == "" {
		t.Skip("set STATELAB_PROFILE=1")
	}
	words := Workload{Seed: 1, Records: 1_000_000, Keys: 10_000}.Words()
	truth := Count(words)
	ps := []int{1, 2}
	if os.Getenv("STATELAB_PROFILE_P") == "4" {
		ps = []int{4}
	}
	for _, p := range ps {
		for range 3 {
			c0 := cpuNow()
			res, err := RunEngineWordCount(context.Background(), EngineRun{Words: words, Backend: state.Pebble, Parallelism: p,
				MaxParallelism: 128, Dir: t.TempDir(), Truth: truth, Light: true})
			if err != nil {
				t.Fatal(err)
			}
			c1 := cpuNow()
			b, err := CountWithBarePebbleParallel(words, p, 128, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			c2 := cpuNow()
			t.Logf("p%d engine %v (%.0f k/s; cpu incl. setup %v)  bare %v (%.0f k/s; cpu incl. setup %v) ratio %.2f", p, res.Elapsed.Round(time.Millisecond), Rate(len(words), res.Elapsed)/1e3, (c1 - c0).Round(time.Millisecond),
				b.Elapsed.Round(time.Millisecond), Rate(len(words), b.Elapsed)/1e3, (c2 - c1).Round(time.Millisecond), b.Elapsed.Seconds()/res.Elapsed.Seconds())
		}
	}
}

// TestProfileTimedWindow profiles only what the wordcount case times — from
// Start to WaitDrained — over several engine runs, one CPU profile per run
// (STATELAB_PROFILE=DIR; STATELAB_PROFILE_P, STATELAB_PROFILE_BACKEND=pebble,
// STATELAB_PROFILE_RUNS); read them together with 'go tool pprof -top
// DIR/*.prof'. Building the job and checking its output are left out; each
// run is printed beside a bare word count run right after it.
func TestProfileTimedWindow(t *testing.T) {
	dir := os.Getenv("STATELAB_PROFILE")
	if dir == "" || dir == "1" {
		t.Skip("set STATELAB_PROFILE=DIR")
	}
	p, runs, kind := 1, 5, state.Memory
	fmt.Sscan(os.Getenv("STATELAB_PROFILE_P"), &p)
	fmt.Sscan(os.Getenv("STATELAB_PROFILE_RUNS"), &runs)
	if os.Getenv("STATELAB_PROFILE_BACKEND") == "pebble" {
		kind = state.Pebble
	}
	words := Workload{Seed: 1, Records: 1_000_000, Keys: 10_000}.Words()
	for i := range runs {
		l, err := engine.NewLive(WordCountSpec(words, kind, p, 128), engine.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("run%d.prof", i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		c0, w0 := cpuNow(), time.Now()
		if err := l.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := l.WaitDrained(context.Background()); err != nil {
			t.Fatal(err)
		}
		el, cpu := time.Since(w0), cpuNow()-c0
		pprof.StopCPUProfile()
		f.Close()
		l.Close()
		runtime.GC()
		var bare time.Duration
		var bcpu time.Duration
		if kind == state.Pebble {
			c1 := cpuNow()
			b, err := CountWithBarePebbleParallel(words, p, 128, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			alone, acpu := b.Elapsed, cpuNow()-c1 // CPU includes opening the DBs
			t.Logf("p%d pebble alone %.2f M/s (cpu %v): ratio %.3f, per CPU %.3f", p, Rate(len(words), alone)/1e6, acpu.Round(time.Millisecond),
				alone.Seconds()/el.Seconds(), acpu.Seconds()/cpu.Seconds())
			c1 = cpuNow()
			wc, err := RunBareWordCountPebble(words, p, 128, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			bare, bcpu = wc.Elapsed, cpuNow()-c1
		} else {
			c1 := cpuNow()
			b, err := RunBareWordCount(words, p, 128)
			if err != nil {
				t.Fatal(err)
			}
			bare, bcpu = b.Elapsed, cpuNow()-c1
		}
		t.Logf("p%d %s engine %.2f M/s (cpu %v)  bare %.2f M/s (cpu %v)  ratio %.3f, per CPU %.3f", p, kind, Rate(len(words), el)/1e6, cpu.Round(time.Millisecond),
			Rate(len(words), bare)/1e6, bcpu.Round(time.Millisecond), bare.Seconds()/el.Seconds(), bcpu.Seconds()/cpu.Seconds())
	}
}

// TestInstructionWindow runs one word count for an instruction count under
// valgrind --tool=callgrind, which counts the same instructions whatever
// else the machine runs (STATELAB_INSTR=engine|bare|setup|words;
// STATELAB_INSTR_P, STATELAB_INSTR_WORDS, STATELAB_INSTR_BACKEND=pebble).
// "setup" builds the engine's job (and the words) and runs nothing, so
// engine minus setup is the engine's timed window; "words" only makes the
// words, so bare minus words is the bare pipeline's. Not a test of
// anything: it is skipped unless asked for.
func TestInstructionWindow(t *testing.T) {
	mode := os.Getenv("STATELAB_INSTR")
	if mode == "" {
		t.Skip("set STATELAB_INSTR=engine|bare|setup|words")
	}
	p, n, kind := 1, 1_000_000, state.Memory
	fmt.Sscan(os.Getenv("STATELAB_INSTR_P"), &p)
	fmt.Sscan(os.Getenv("STATELAB_INSTR_WORDS"), &n)
	if os.Getenv("STATELAB_INSTR_BACKEND") == "pebble" {
		kind = state.Pebble
	}
	words := Workload{Seed: 1, Records: n, Keys: 10_000}.Words()
	switch mode {
	case "words":
		return
	case "bare":
		var err error
		if kind == state.Pebble {
			_, err = CountWithBarePebbleParallel(words, p, 128, t.TempDir())
		} else {
			_, err = RunBareWordCount(words, p, 128)
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	case "engine", "setup":
	default:
		t.Fatalf("STATELAB_INSTR=%q: want engine, bare, setup or words", mode)
	}
	l, err := engine.NewLive(WordCountSpec(words, kind, p, 128), engine.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	runtime.GC()
	if mode == "setup" {
		return
	}
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitDrained(context.Background()); err != nil {
		t.Fatal(err)
	}
	// No check of the output here: a snapshot compares it with the ground
	// truth, which would count more instructions than the run (the
	// wordcount case checks every configuration).
}
