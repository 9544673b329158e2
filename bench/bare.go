package bench

import (
	"fmt"
	"sync"
	"time"

	"github.com/statelab/statelab/rescale"
)

// BatchSize is how many records a bare pipeline puts in one channel send. It
// stands for Flink's network buffer: one record per channel send costs a
// goroutine hand-off each, which no engine can amortise.
const BatchSize = 64

// keyedRecord is a word with its key group, computed once at the sender as
// Flink's KeyGroupStreamPartitioner does.
type keyedRecord struct {
	word string
	kg   int
}

type recordBatch struct{ recs []keyedRecord }

var batchPool = sync.Pool{New: func() any { return &recordBatch{recs: make([]keyedRecord, 0, BatchSize)} }}

// BareResult is what a bare run counted and how long the counting took.
type BareResult struct {
	Counts  map[string]int64
	Elapsed time.Duration
}

// RunBarePipeline counts words the way the engine's word count does, with
// nothing else: parallelism source goroutines (source i reads every
// parallelism-th word, like a partition) route each word by key group to one
// of parallelism count goroutines over bounded channels, in pooled batches of
// BatchSize; each counter keeps one map per key group of its range. It is the
// floor an engine with the same shape cannot beat: no state API, no
// checkpoint barriers, no events.
func RunBarePipeline(words []string, parallelism, maxParallelism int) (BareResult, error) {
	if err := rescale.CheckParallelism(parallelism, maxParallelism); err != nil {
		return BareResult{}, fmt.Errorf("bench: bare pipeline: %w", err)
	}
	ranges := rescale.KeyGroupRanges(maxParallelism, parallelism)
	chans := make([]chan *recordBatch, parallelism)
	for i := range chans {
		chans[i] = make(chan *recordBatch, 16)
	}
	maps := make([][]map[string]int64, parallelism)

	start := time.Now()
	var counters sync.WaitGroup
	for d := range parallelism {
		counters.Add(1)
		go func() {
			defer counters.Done()
			r := ranges[d]
			groups := make([]map[string]int64, r.Len())
			for b := range chans[d] {
				for _, rec := range b.recs {
					m := groups[rec.kg-r.Start]
					if m == nil {
						m = make(map[string]int64)
						groups[rec.kg-r.Start] = m
					}
					m[rec.word]++
				}
				b.recs = b.recs[:0]
				batchPool.Put(b)
			}
			maps[d] = groups
		}()
	}
	var sources sync.WaitGroup
	for s := range parallelism {
		sources.Add(1)
		go func() {
			defer sources.Done()
			pending := make([]*recordBatch, parallelism)
			for i := s; i < len(words); i += parallelism {
				w := words[i]
				kg := rescale.KeyGroupForString(w, maxParallelism)
				d := rescale.OperatorIndexForKeyGroup(maxParallelism, parallelism, kg)
				b := pending[d]
				if b == nil {
					b = batchPool.Get().(*recordBatch)
					pending[d] = b
				}
				b.recs = append(b.recs, keyedRecord{word: w, kg: kg})
				if len(b.recs) == BatchSize {
					chans[d] <- b
					pending[d] = nil
				}
			}
			for d, b := range pending {
				if b != nil {
					chans[d] <- b
				}
			}
		}()
	}
	sources.Wait()
	for _, c := range chans {
		close(c)
	}
	counters.Wait()
	elapsed := time.Since(start)

	counts := make(map[string]int64)
	for _, groups := range maps {
		for _, m := range groups {
			for k, v := range m {
				counts[k] += v
			}
		}
	}
	return BareResult{Counts: counts, Elapsed: elapsed}, nil
}
