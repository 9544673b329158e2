package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/statelab/statelab/rescale"
)

// ThroughputConfig is one keyed-count throughput measurement: a source of
// keys (Parallelism subtasks, one partition each) -> hash -> keyed count
// (Parallelism subtasks), on the Live driver.
type ThroughputConfig struct {
	Backend     Backend
	Parallelism int
	Keys        int // distinct keys, uniform (default 10,000)
	// Warmup runs before the measured Window.
	Warmup time.Duration
	Window time.Duration
	// CheckpointInterval 0 disables checkpoints.
	CheckpointInterval time.Duration
	Dir                string
}

// Throughput is records per second over a measured window.
type Throughput struct {
	Records     int64         `json:"records"`
	Elapsed     time.Duration `json:"elapsed"`
	PerSecond   float64       `json:"perSecond"`
	Checkpoints int           `json:"checkpoints,omitempty"`
}

func (c *ThroughputConfig) defaults() {
	if c.Parallelism == 0 {
		c.Parallelism = 1
	}
	if c.Keys == 0 {
		c.Keys = 10_000
	}
	if c.Window == 0 {
		c.Window = 2 * time.Second
	}
	if c.Backend == "" {
		c.Backend = BackendMemory
	}
}

// KeyedCountSpec is the benchmark job.
func KeyedCountSpec(backend Backend, parallelism, keys int, interval time.Duration) *JobSpec {
	return &JobSpec{
		Name: "bench-keyed-count", Seed: 1, Backend: backend,
		Operators: []OperatorSpec{
			{ID: "source", Kind: KindSource, Parallelism: parallelism,
				Options: map[string]any{"generator": GeneratorKeys, "keys": keys, "records": 1 << 50, "partitions": parallelism}},
			{ID: "count", Kind: KindCount, Parallelism: parallelism, MaxParallelism: 128},
		},
		Edges:         []EdgeSpec{{From: "source", To: "count", Partitioner: Hash}},
		Checkpointing: CheckpointingSpec{Interval: Duration(interval), Retained: 1, Incremental: backend == BackendPebble},
		Cluster:       ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: parallelism},
	}
}

// MeasureLiveKeyedCount runs the keyed count on the Live driver and returns
// the records the count subtasks processed per second during the window.
func MeasureLiveKeyedCount(ctx context.Context, cfg ThroughputConfig) (Throughput, error) {
	cfg.defaults()
	l, err := NewLive(KeyedCountSpec(cfg.Backend, cfg.Parallelism, cfg.Keys, cfg.CheckpointInterval), Options{Dir: cfg.Dir})
	if err != nil {
		return Throughput{}, err
	}
	defer l.Close()
	if err := l.Start(ctx); err != nil {
		return Throughput{}, err
	}
	counted := func() (int64, int) {
		l.mu.Lock()
		defer l.mu.Unlock()
		var n int64
		if ex := l.c.ex; ex != nil {
			for _, t := range ex.ops[1].tasks {
				n += t.recordsIn.Load()
			}
		}
		return n, l.c.coord.counts.Completed
	}
	if err := sleepCtx(ctx, cfg.Warmup); err != nil {
		return Throughput{}, err
	}
	r0, c0 := counted()
	t0 := time.Now()
	if err := sleepCtx(ctx, cfg.Window); err != nil {
		return Throughput{}, err
	}
	r1, c1 := counted()
	el := time.Since(t0)
	if s := l.Snapshot(); s.Job.Status != JobRunning {
		return Throughput{}, fmt.Errorf("benchmark job is %s", s.Job.Status)
	}
	return Throughput{Records: r1 - r0, Elapsed: el, PerSecond: float64(r1-r0) / el.Seconds(), Checkpoints: c1 - c0}, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// MeasureBarePipeline is the baseline: the same keys from the same
// generator, sent by parallelism producer goroutines to parallelism consumer
// goroutines over Go channels in pooled batches of 64, partitioned by key
// group, and counted into one map per key group. It is what the engine does
// minus everything that makes it an engine (state backend, barriers,
// statuses, events).
func MeasureBarePipeline(ctx context.Context, parallelism, keys int, warmup, window time.Duration) (Throughput, error) {
	const maxPar = 128
	tp := newTopic("bare", 1, operatorOptions{Partitions: parallelism, Generator: GeneratorKeys, Keys: keys, Records: 1 << 50})
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var counted atomic.Int64
	chans := make([]chan *batch, parallelism)
	for i := range chans {
		chans[i] = make(chan *batch, 16)
	}
	for j := range parallelism {
		wg.Add(1)
		go func(in chan *batch) {
			defer wg.Done()
			groups := make([]map[string]int64, maxPar)
			for i := range groups {
				groups[i] = map[string]int64{}
			}
			for {
				select {
				case <-ctx.Done():
					return
				case b := <-in:
					for _, r := range b.recs {
						groups[rescale.KeyGroupForString(r.Key, maxPar)][r.Key]++
					}
					counted.Add(int64(len(b.recs)))
					b.release()
				}
			}
		}(chans[j])
	}
	for p := range parallelism {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			out := make([]*batch, parallelism)
			off := int64(0)
			in := make([]Record, 0, 64)
			for {
				in = tp.read(in[:0], p, off, 64)
				off += int64(len(in))
				for _, r := range in {
					kg := rescale.KeyGroupForString(r.Key, maxPar)
					j := rescale.OperatorIndexForKeyGroup(maxPar, parallelism, kg)
					if out[j] == nil {
						out[j] = newBatch()
					}
					out[j].recs = append(out[j].recs, r)
					if len(out[j].recs) == 64 {
						select {
						case chans[j] <- out[j]:
						case <-ctx.Done():
							return
						}
						out[j] = nil
					}
				}
			}
		}(p)
	}
	defer func() { cancel(); wg.Wait() }()
	if err := sleepCtx(ctx, warmup); err != nil {
		return Throughput{}, err
	}
	r0, t0 := counted.Load(), time.Now()
	if err := sleepCtx(ctx, window); err != nil {
		return Throughput{}, err
	}
	r1, el := counted.Load(), time.Since(t0)
	return Throughput{Records: r1 - r0, Elapsed: el, PerSecond: float64(r1-r0) / el.Seconds()}, nil
}

// MeasureBarePebble is the Pebble baseline: parallelism goroutines, each
// with its own Pebble DB (WAL off, as Flink runs RocksDB), doing Get+Set of
// an 8-byte count per record for the keys the engine's subtask of the same
// index would own, laid out as the pebble backend lays them out.
func MeasureBarePebble(ctx context.Context, dir string, parallelism, keys int, warmup, window time.Duration) (Throughput, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var counted atomic.Int64
	errs := make(chan error, parallelism)
	var wg sync.WaitGroup
	for i := range parallelism {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs <- barePebbleLoop(ctx, filepath.Join(dir, fmt.Sprintf("bare-pebble-%d", i)), i, parallelism, keys, &counted)
		}(i)
	}
	res, err := func() (Throughput, error) {
		if err := sleepCtx(ctx, warmup); err != nil {
			return Throughput{}, err
		}
		r0, t0 := counted.Load(), time.Now()
		if err := sleepCtx(ctx, window); err != nil {
			return Throughput{}, err
		}
		r1, el := counted.Load(), time.Since(t0)
		return Throughput{Records: r1 - r0, Elapsed: el, PerSecond: float64(r1-r0) / el.Seconds()}, nil
	}()
	cancel()
	wg.Wait()
	close(errs)
	for e := range errs {
		if e != nil && err == nil {
			err = e
		}
	}
	return res, err
}

func barePebbleLoop(ctx context.Context, path string, index, parallelism, keys int, counted *atomic.Int64) error {
	const maxPar = 128
	db, err := pebble.Open(path, &pebble.Options{DisableWAL: true, Logger: silentPebbleLogger{}})
	if err != nil {
		return fmt.Errorf("open bare pebble: %w", err)
	}
	defer func() { _ = db.Close(); _ = os.RemoveAll(path) }()
	tp := newTopic("bare", 1, operatorOptions{Partitions: 1, Generator: GeneratorKeys, Keys: keys, Records: 1 << 50})
	var key []byte
	val := make([]byte, 8)
	in := make([]Record, 0, 64)
	off := int64(0)
	for ctx.Err() == nil {
		in = tp.read(in[:0], 0, off, 64)
		off += int64(len(in))
		n := 0
		for _, r := range in {
			kg := rescale.KeyGroupForString(r.Key, maxPar)
			if rescale.OperatorIndexForKeyGroup(maxPar, parallelism, kg) != index {
				continue
			}
			n++
			key = binary.BigEndian.AppendUint16(key[:0], uint16(kg))
			key = binary.BigEndian.AppendUint16(key, 1)
			key = binary.AppendUvarint(key, uint64(len(r.Key)))
			key = append(key, r.Key...)
			var cur uint64
			v, closer, err := db.Get(key)
			if err == nil {
				cur = binary.BigEndian.Uint64(v)
				_ = closer.Close()
			} else if err != pebble.ErrNotFound {
				return err
			}
			binary.BigEndian.PutUint64(val, cur+1)
			if err := db.Set(key, val, pebble.NoSync); err != nil {
				return err
			}
		}
		counted.Add(int64(n))
	}
	return nil
}

type silentPebbleLogger struct{}

func (silentPebbleLogger) Infof(string, ...any)  {}
func (silentPebbleLogger) Errorf(string, ...any) {}
func (silentPebbleLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
