package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// CountResult is what a counting loop counted and how long it took.
type CountResult struct {
	Counts  map[string]int64
	Elapsed time.Duration
	// CPU is the process's CPU time over Elapsed (every goroutine, Pebble's
	// own included), where the count measures it; else 0.
	CPU time.Duration
}

// CountWithValueState counts words through a keyed backend the way the
// engine's keyed count does per record: key group of the word, SetCurrentKey,
// ValueState get, ValueState update. dir is the Pebble working directory
// (it must not exist or be empty; ignored for memory). The backend owns
// every key group, so one backend stands for one subtask at parallelism 1.
func CountWithValueState(kind state.BackendKind, words []string, maxParallelism int, dir string) (CountResult, error) {
	b, err := state.NewKeyedBackend(state.KeyedBackendConfig{Kind: kind, Name: "count#0", Dir: dir,
		MaxParallelism: maxParallelism, KeyGroupRange: rescale.NewKeyGroupRange(0, maxParallelism-1)})
	if err != nil {
		return CountResult{}, fmt.Errorf("bench: open %s backend: %w", kind, err)
	}
	defer b.Close()
	v, err := state.Value(b, "count", state.Int64Codec)
	if err != nil {
		return CountResult{}, fmt.Errorf("bench: register count state: %w", err)
	}
	var key []byte
	start := time.Now()
	for _, w := range words {
		key = append(key[:0], w...)
		if err := b.SetCurrentKey(key, rescale.KeyGroupForString(w, maxParallelism)); err != nil {
			return CountResult{}, fmt.Errorf("bench: set key %q: %w", w, err)
		}
		n, _, err := v.Value()
		if err != nil {
			return CountResult{}, fmt.Errorf("bench: read count of %q: %w", w, err)
		}
		if err := v.Update(n + 1); err != nil {
			return CountResult{}, fmt.Errorf("bench: update count of %q: %w", w, err)
		}
	}
	elapsed := time.Since(start)

	// Read the counts back through the same API (not timed), so a backend
	// that loses an update fails the check.
	counts := make(map[string]int64)
	for _, w := range words {
		if _, seen := counts[w]; seen {
			continue
		}
		if err := b.SetCurrentKey([]byte(w), rescale.KeyGroupForString(w, maxParallelism)); err != nil {
			return CountResult{}, err
		}
		n, ok, err := v.Value()
		if err != nil {
			return CountResult{}, err
		}
		if ok {
			counts[w] = n
		}
	}
	return CountResult{Counts: counts, Elapsed: elapsed}, nil
}

// CountWithBareMap is the floor of the memory backend: one Go map, one
// increment per word, no key group, no serialisation. The key is looked up
// from its bytes, as a record off a channel delivers it (and as
// state/bench_test.go's baseline does): indexing with the very string
// objects that were inserted would let Go's map skip comparing key bytes, a
// shortcut no engine gets.
func CountWithBareMap(words []string) CountResult {
	m := make(map[string]int64)
	var key []byte
	start := time.Now()
	for _, w := range words {
		key = append(key[:0], w...)
		m[string(key)]++
	}
	return CountResult{Counts: m, Elapsed: time.Since(start)}
}

// CountWithBarePebbleParallel is the floor of the pebble backend at
// parallelism p: p goroutines, each with its own Pebble database (WAL off)
// like the engine's p count subtasks, each doing Get and Set of an 8-byte
// count, in StateLab's key layout, for the words whose key group it owns.
// The words are split by owner before the clock starts: routing is the
// pipeline's cost, not Pebble's.
func CountWithBarePebbleParallel(words []string, p, maxParallelism int, dir string) (CountResult, error) {
	if err := rescale.CheckParallelism(p, maxParallelism); err != nil {
		return CountResult{}, fmt.Errorf("bench: bare pebble: %w", err)
	}
	type keyed struct {
		word string
		kg   int
	}
	share := make([][]keyed, p)
	for _, w := range words {
		kg := rescale.KeyGroupForString(w, maxParallelism)
		i := rescale.OperatorIndexForKeyGroup(maxParallelism, p, kg)
		share[i] = append(share[i], keyed{w, kg})
	}
	dbs, err := openPebbles(dir, p, openScratchPebble)
	defer closePebbles(dbs)
	if err != nil {
		return CountResult{}, err
	}
	errs := make([]error, p)
	var wg sync.WaitGroup
	settle()
	start, cpu0 := time.Now(), processCPU()
	for i := range p {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var key []byte
			var val [8]byte
			for _, r := range share[i] {
				key = encodeStateKey(key[:0], r.kg, r.word)
				if _, err := incrementCount(dbs[i], key, &val); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	if err := errors.Join(errs...); err != nil {
		return CountResult{}, fmt.Errorf("bench: bare pebble: %w", err)
	}
	counts, err := readPebbleCounts(dbs)
	if err != nil {
		return CountResult{}, err
	}
	return CountResult{Counts: counts, Elapsed: elapsed, CPU: cpu}, nil
}

// incrementCount is a bare keyed count's state access on Pebble: Get the
// 8-byte big-endian count under key (none is 0), Set it one higher, as the
// backend's ValueState.Value and Update do; it returns the new count.
func incrementCount(db *pebble.DB, key []byte, val *[8]byte) (uint64, error) {
	var n uint64
	got, closer, err := db.Get(key)
	switch {
	case err == nil:
		n = binary.BigEndian.Uint64(got)
		closer.Close()
	case errors.Is(err, pebble.ErrNotFound):
	default:
		return 0, fmt.Errorf("pebble get: %w", err)
	}
	n++
	binary.BigEndian.PutUint64(val[:], n)
	if err := db.Set(key, val[:], pebble.NoSync); err != nil {
		return 0, fmt.Errorf("pebble set: %w", err)
	}
	return n, nil
}

// openPebbles opens one database per subtask, dir/0 … dir/p-1, with open.
// On an error the ones opened are in the slice for closePebbles.
func openPebbles(dir string, p int, open func(dir string) (*pebble.DB, error)) ([]*pebble.DB, error) {
	dbs := make([]*pebble.DB, p)
	for i := range dbs {
		db, err := open(filepath.Join(dir, fmt.Sprint(i)))
		if err != nil {
			return dbs, err
		}
		dbs[i] = db
	}
	return dbs, nil
}

func closePebbles(dbs []*pebble.DB) {
	for _, db := range dbs {
		if db != nil {
			db.Close()
		}
	}
}

// readPebbleCounts reads every word's count back from databases written
// in StateLab's key layout (encodeStateKey) with 8-byte big-endian counts.
func readPebbleCounts(dbs []*pebble.DB) (map[string]int64, error) {
	counts := make(map[string]int64)
	for _, db := range dbs {
		it, err := db.NewIter(nil)
		if err != nil {
			return nil, err
		}
		for it.First(); it.Valid(); it.Next() {
			w, err := decodeStateKey(it.Key())
			if err != nil {
				it.Close()
				return nil, err
			}
			counts[w] = int64(binary.BigEndian.Uint64(it.Value()))
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

// CountWithBarePebble is the floor of the pebble backend: Pebble opened with
// its default options and the WAL off (as the backend, and as Flink runs
// RocksDB: the checkpoint is the durability), then Get and Set per word on
// the bare word as key and the count as 8 bytes, big-endian. The backend
// also sets its memtable size and base level (state/pebble.go); with those
// this loop was faster still (docs/benchmarks.md, issue 22: 592 k against
// 475 k records/s at p = 1), so a ratio against this floor flatters the
// backend rather than hiding a cost of its options.
func CountWithBarePebble(words []string, dir string) (CountResult, error) {
	db, err := pebble.Open(dir, &pebble.Options{DisableWAL: true, Logger: discardPebbleLogger{}})
	if err != nil {
		return CountResult{}, fmt.Errorf("bench: open pebble: %w", err)
	}
	defer db.Close()
	var key []byte
	var val [8]byte
	start := time.Now()
	for _, w := range words {
		key = append(key[:0], w...)
		if _, err := incrementCount(db, key, &val); err != nil {
			return CountResult{}, fmt.Errorf("bench: %q: %w", w, err)
		}
	}
	elapsed := time.Since(start)
	counts := make(map[string]int64)
	it, err := db.NewIter(nil)
	if err != nil {
		return CountResult{}, err
	}
	for it.First(); it.Valid(); it.Next() {
		counts[string(it.Key())] = int64(binary.BigEndian.Uint64(it.Value()))
	}
	if err := it.Close(); err != nil {
		return CountResult{}, err
	}
	return CountResult{Counts: counts, Elapsed: elapsed}, nil
}

// discardPebbleLogger keeps Pebble quiet; the bench prints its own lines.
type discardPebbleLogger struct{}

func (discardPebbleLogger) Infof(string, ...any)  {}
func (discardPebbleLogger) Errorf(string, ...any) {}
func (discardPebbleLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
