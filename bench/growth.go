package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// GroupGrowth measures how the engine grows: its word count's throughput at
// each parallelism on the machine's cores, its cost against the number of
// records (with the log-log slope as a scaling case), and the memory a key
// costs in the heap backend against a bare map.
const GroupGrowth = "growth"

// growth runs the growth group.
func (r *runner) growth(ctx context.Context) error {
	if !EngineAvailable() {
		r.note("growth: %v yet, so the engine cases were skipped", ErrNoEngine)
		return r.bytesPerKey()
	}
	if err := r.growthParallelism(ctx); err != nil {
		return err
	}
	if err := r.growthRecords(ctx); err != nil {
		return err
	}
	return r.bytesPerKey()
}

// lightEngineTrial is a timed engine word count (memory backend, light
// check) of words at parallelism p.
func (r *runner) lightEngineTrial(ctx context.Context, name string, words []string, truth map[string]int64, p int) Trial {
	return Trial{Name: name, Run: func() (float64, error) {
		dir := r.scratch("growth")
		defer os.RemoveAll(dir)
		res, err := RunEngineWordCount(ctx, EngineRun{Words: words, Backend: state.Memory, Parallelism: p,
			MaxParallelism: rescale.DefaultMaxParallelism(p), Dir: dir, Truth: truth, Light: true})
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		return res.Elapsed.Seconds(), nil
	}}
}

// growthParallelism times the memory word count at each of
// GrowthParallelisms in interleaved rounds; each is shown against p = 1.
// On two cores p = 8 runs 32 subtask goroutines: the figure says what the
// engine loses to scheduling when there are more subtasks than cores.
func (r *runner) growthParallelism(ctx context.Context) error {
	ps := r.sizes.GrowthParallelisms
	if len(ps) == 0 {
		return nil
	}
	words := Workload{Seed: r.cfg.Seed, Records: r.sizes.WordCountRecords, Keys: r.sizes.WordCountKeys}.Words()
	truth := Count(words)
	var trials []Trial
	for _, p := range ps {
		trials = append(trials, r.lightEngineTrial(ctx, fmt.Sprintf("engine word count p=%d", p), words, truth, p))
	}
	s, err := Interleave(r.rounds, trials...)
	if err != nil {
		return err
	}
	rate := func(secs []float64) []float64 {
		out := make([]float64, len(secs))
		for i, x := range secs {
			out[i] = Rate(len(words), secondsDuration(x))
		}
		return out
	}
	base := rate(s[0])
	for i, p := range ps {
		v := rate(s[i])
		r.add(Case{Group: GroupGrowth, Name: fmt.Sprintf("engine word count, memory, p=%d, on %d cores", p, runtime.NumCPU()),
			Metric: MetricRecordsPerSecond, HigherIsBetter: true, Value: Median(v), Samples: v,
			Baseline: fmt.Sprintf("the same at p=%d", ps[0]), BaselineValue: Median(base), BaselineSamples: base,
			Details: map[string]float64{"parallelism": float64(p), "cpus": float64(runtime.NumCPU()), "subtasks": float64(4 * p)}})
	}
	return nil
}

// growthRecords times the memory word count at p = 2 over each of
// GrowthRecords words (the same 10,000 keys), beside the bare word count
// of the same words, and adds the log-log slope of each one's time against
// the number of records.
func (r *runner) growthRecords(ctx context.Context) error {
	ns := r.sizes.GrowthRecords
	if len(ns) == 0 {
		return nil
	}
	const p = 2
	var eng, bare Series
	eng.Name, bare.Name = "engine word count, memory, p=2", "bare word count, p=2"
	for _, n := range ns {
		words := Workload{Seed: r.cfg.Seed, Records: n, Keys: r.sizes.WordCountKeys}.Words()
		truth := Count(words)
		maxP := rescale.DefaultMaxParallelism(p)
		bareTrial := Trial{Name: "bare word count", Run: func() (float64, error) {
			res, err := RunBareWordCount(words, p, maxP)
			if err != nil {
				return 0, err
			}
			if err := DiffCounts(res.Counts, truth); err != nil {
				return 0, fmt.Errorf("bare word count: %w", err)
			}
			return res.Elapsed.Seconds(), nil
		}}
		s, err := Interleave(r.rounds, r.lightEngineTrial(ctx, fmt.Sprintf("engine word count, %d words", n), words, truth, p), bareTrial)
		if err != nil {
			return err
		}
		label := siNumber(float64(n))
		r.add(Case{Group: GroupGrowth, Name: fmt.Sprintf("engine word count time, memory, p=2, %s records", label), Metric: MetricSeconds,
			Size: n, Value: Median(s[0]), Samples: s[0], Baseline: "bare word count, p=2, same records",
			BaselineValue: Median(s[1]), BaselineSamples: s[1], Details: map[string]float64{"records": float64(n)}})
		eng.Points = append(eng.Points, Point{X: float64(n), Y: Median(s[0])})
		bare.Points = append(bare.Points, Point{X: float64(n), Y: Median(s[1])})
		words, truth = nil, nil
		runtime.GC()
	}
	if len(ns) < 2 {
		return nil
	}
	for _, ser := range []Series{eng, bare} {
		r.add(Case{Group: GroupScaling, Name: "time against records: " + ser.Name, Metric: MetricSlope,
			Value: Slope(ser), Baseline: "linear growth", BaselineValue: 1, Target: AtMost(1.15),
			Details: map[string]float64{"fromRecords": ser.Points[0].X, "toRecords": ser.Points[len(ser.Points)-1].X}})
	}
	return nil
}

// bytesPerKey measures the live heap a key costs in the heap backend (one
// ValueState[int64] per key) against a bare map[string]int64, both over the
// same key strings, which exist before either is built and are not
// counted: what is measured is the structure each keeps per key.
func (r *runner) bytesPerKey() error {
	n := r.sizes.BytesPerKeyKeys
	if n <= 0 {
		return nil
	}
	keys := make([]string, n)
	kgs := make([]int, n)
	for i := range keys {
		keys[i] = KeyName(i)
		kgs[i] = rescale.KeyGroupForString(keys[i], 128)
	}
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var backend, bare []float64
	for range r.rounds {
		before := live()
		m := make(map[string]int64)
		for _, k := range keys {
			m[k]++
		}
		after := live()
		if len(m) != n {
			return fmt.Errorf("bytes per key: bare map holds %d keys, want %d", len(m), n)
		}
		bare = append(bare, float64(int64(after)-int64(before))/float64(n))
		runtime.KeepAlive(m)
		m = nil

		before = live()
		kb, err := state.NewKeyedBackend(state.KeyedBackendConfig{Kind: state.Memory, MaxParallelism: 128, KeyGroupRange: rescale.NewKeyGroupRange(0, 127)})
		if err != nil {
			return fmt.Errorf("bytes per key: %w", err)
		}
		v, err := state.Value(kb, "count", state.Int64Codec)
		if err != nil {
			return fmt.Errorf("bytes per key: %w", err)
		}
		for i, k := range keys {
			if err := kb.SetCurrentKeyString(k, kgs[i]); err != nil {
				return fmt.Errorf("bytes per key: %w", err)
			}
			if err := v.Update(1); err != nil {
				return fmt.Errorf("bytes per key: %w", err)
			}
		}
		after = live()
		// Every key is read back before the backend goes: a backend that
		// lost one must not report a small figure.
		for i, k := range keys[:min(n, 1000)] {
			_ = kb.SetCurrentKeyString(k, kgs[i])
			if got, ok, err := v.Value(); err != nil || !ok || got != 1 {
				return fmt.Errorf("bytes per key: heap backend holds %d (found %v, %v) for %q, want 1", got, ok, err, k)
			}
		}
		backend = append(backend, float64(int64(after)-int64(before))/float64(n))
		kb.Close()
	}
	r.add(Case{Group: GroupGrowth, Name: fmt.Sprintf("heap backend bytes per key, ValueState[int64], %s keys", siNumber(float64(n))), Metric: MetricBytes,
		Value: Median(backend), Samples: backend, Baseline: "bare map[string]int64, same key strings",
		BaselineValue: Median(bare), BaselineSamples: bare, Details: map[string]float64{"keys": float64(n)}})
	return nil
}

func secondsDuration(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
