//go:build !js

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

// Throughput is records per second over a measured window. CPU is the CPU
// time the whole process used in the window (every goroutine, Pebble's
// flushes and compactions included) and PerCPUSecond the records per CPU
// second: on a machine shared with other work, whose load swings the wall
// clock rates, it is the steadier measure of what a case costs.
type Throughput struct {
	Records      int64         `json:"records"`
	Elapsed      time.Duration `json:"elapsed"`
	PerSecond    float64       `json:"perSecond"`
	Checkpoints  int           `json:"checkpoints,omitempty"`
	CPU          time.Duration `json:"cpu,omitempty"`
	PerCPUSecond float64       `json:"perCPUSecond,omitempty"`
	// SyncShare is the share of the window the keyed subtasks spent in
	// checkpoints' synchronous parts (averaged over subtasks): time in which
	// they processed no record.
	SyncShare float64 `json:"syncShare,omitempty"`
}

// measureWindow is the start of a measured window: records counted and CPU used.
type measureWindow struct {
	records int64
	wall    time.Time
	cpu     time.Duration
}

func startWindow(records int64) measureWindow {
	return measureWindow{records: records, wall: time.Now(), cpu: processCPU()}
}

// end closes the window at records.
func (w measureWindow) end(records int64) Throughput {
	el, cpu := time.Since(w.wall), processCPU()-w.cpu
	tp := Throughput{Records: records - w.records, Elapsed: el, PerSecond: float64(records-w.records) / el.Seconds(), CPU: cpu}
	if cpu > 0 {
		tp.PerCPUSecond = float64(tp.Records) / cpu.Seconds()
	}
	return tp
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
	w := startWindow(r0)
	v0 := l.now()
	if err := sleepCtx(ctx, cfg.Window); err != nil {
		return Throughput{}, err
	}
	r1, c1 := counted()
	tp := w.end(r1)
	v1 := l.now()
	tp.Checkpoints = c1 - c0
	s := l.Snapshot()
	if s.Job.Status != JobRunning {
		return Throughput{}, fmt.Errorf("benchmark job is %s", s.Job.Status)
	}
	var sync time.Duration
	for _, h := range s.Checkpoints.History {
		if h.TriggerTime < v0 || h.TriggerTime >= v1 {
			continue
		}
		for _, a := range h.Subtasks {
			if a.Operator == "count" {
				sync += a.SyncDuration
			}
		}
	}
	tp.SyncShare = sync.Seconds() / float64(cfg.Parallelism) / (v1 - v0).Seconds()
	return tp, nil
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
	w := startWindow(counted.Load())
	if err := sleepCtx(ctx, window); err != nil {
		return Throughput{}, err
	}
	return w.end(counted.Load()), nil
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
		w := startWindow(counted.Load())
		if err := sleepCtx(ctx, window); err != nil {
			return Throughput{}, err
		}
		return w.end(counted.Load()), nil
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
