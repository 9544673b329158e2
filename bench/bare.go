package bench

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
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

	settle()
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

// sinkRecord is what a bare count stage emits: the word and its new count,
// as the engine's keyed count emits the key's new total.
type sinkRecord struct {
	word  string
	count int64
}

type sinkBatch struct{ recs []sinkRecord }

var sinkPool = sync.Pool{New: func() any { return &sinkBatch{recs: make([]sinkRecord, 0, BatchSize)} }}

// BareWordCountResult is what the bare word count counted, how many records
// its sinks received, and how long it took.
type BareWordCountResult struct {
	Counts      map[string]int64
	SinkRecords int
	Elapsed     time.Duration
	// CPU is the process's CPU time over Elapsed (every goroutine).
	CPU time.Duration
}

// lineBatch is a batch of source lines on the source -> tokenizer edge.
type lineBatch struct{ lines []string }

var linePool = sync.Pool{New: func() any { return &lineBatch{lines: make([]string, 0, BatchSize)} }}

// RunBareWordCount is the engine's word count job with nothing of the
// engine: the same four stages as goroutines and channels with pooled
// batches of BatchSize, parallelism goroutines each. Source i reads every
// parallelism-th line (a partition) and hands it on to tokenizer i (the
// job's forward edge); the tokenizer splits it on white space and
// lower-cases it, as the engine's tokenizer does, and routes each word by
// key group (the hash edge); counter j counts into one map per key group
// and emits (word, new count) to sink j (forward), which keeps every
// record, as the at-least-once sink does. It is the fair floor for the
// engine's word count: the same work in the same stages, without state
// API, barriers, statuses or events.
func RunBareWordCount(lines []string, parallelism, maxParallelism int) (BareWordCountResult, error) {
	if err := rescale.CheckParallelism(parallelism, maxParallelism); err != nil {
		return BareWordCountResult{}, fmt.Errorf("bench: bare word count: %w", err)
	}
	ranges := rescale.KeyGroupRanges(maxParallelism, parallelism)
	maps := make([][]map[string]int64, parallelism)
	res, err := runBareStages(lines, parallelism, maxParallelism, func(d int, in <-chan *recordBatch, toSink chan<- *sinkBatch) error {
		r := ranges[d]
		groups := make([]map[string]int64, r.Len())
		out := sinkPool.Get().(*sinkBatch)
		for b := range in {
			for _, rec := range b.recs {
				m := groups[rec.kg-r.Start]
				if m == nil {
					m = make(map[string]int64)
					groups[rec.kg-r.Start] = m
				}
				n := m[rec.word] + 1
				m[rec.word] = n
				out.recs = append(out.recs, sinkRecord{word: rec.word, count: n})
				if len(out.recs) == BatchSize {
					toSink <- out
					out = sinkPool.Get().(*sinkBatch)
				}
			}
			b.recs = b.recs[:0]
			batchPool.Put(b)
		}
		if len(out.recs) > 0 {
			toSink <- out
		}
		maps[d] = groups
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("bench: bare word count: %w", err)
	}
	res.Counts = make(map[string]int64)
	for _, groups := range maps {
		for _, m := range groups {
			for k, v := range m {
				res.Counts[k] += v
			}
		}
	}
	return res, nil
}

// RunBareWordCountPebble is RunBareWordCount with the count stage's state in
// Pebble, the floor of the engine's word count on the pebble backend: counter
// d has a database of its own under dir, opened before the clock starts with
// the options every pebble backend runs with (state.OpenBarePebble), and for
// each word does a Get and a Set of its 8-byte count in StateLab's key layout
// (key group first), as the backend's ValueState does. Everything else —
// sources, tokenizers, routing by key group, sinks keeping every (word,
// count) — is the bare word count's. Against this floor the engine's ratio
// is its own overhead; CountWithBarePebbleParallel, which gets the words
// split by owner and runs no other stage, is the lower floor of Pebble alone.
func RunBareWordCountPebble(lines []string, parallelism, maxParallelism int, dir string) (BareWordCountResult, error) {
	if err := rescale.CheckParallelism(parallelism, maxParallelism); err != nil {
		return BareWordCountResult{}, fmt.Errorf("bench: bare word count on pebble: %w", err)
	}
	dbs, err := openPebbles(dir, parallelism, state.OpenBarePebble)
	defer closePebbles(dbs)
	if err != nil {
		return BareWordCountResult{}, fmt.Errorf("bench: bare word count on pebble: %w", err)
	}
	res, err := runBareStages(lines, parallelism, maxParallelism, func(d int, in <-chan *recordBatch, toSink chan<- *sinkBatch) error {
		// The hand-off to the sink below is written out as in
		// RunBareWordCount's counter rather than shared through a helper:
		// the memory baseline's per-record path stays the one measured
		// since session 8.
		db := dbs[d]
		var key []byte
		var val [8]byte
		out := sinkPool.Get().(*sinkBatch)
		var failed error
		for b := range in {
			for _, rec := range b.recs {
				if failed != nil {
					break // drain the edge so the tokenizers finish
				}
				key = encodeStateKey(key[:0], rec.kg, rec.word)
				n, err := incrementCount(db, key, &val)
				if err != nil {
					failed = err
					continue
				}
				out.recs = append(out.recs, sinkRecord{word: rec.word, count: int64(n)})
				if len(out.recs) == BatchSize {
					toSink <- out
					out = sinkPool.Get().(*sinkBatch)
				}
			}
			b.recs = b.recs[:0]
			batchPool.Put(b)
		}
		if len(out.recs) > 0 {
			toSink <- out
		}
		return failed
	})
	if err != nil {
		return res, fmt.Errorf("bench: bare word count on pebble: %w", err)
	}
	res.Counts, err = readPebbleCounts(dbs)
	return res, err
}

// runBareStages runs the bare word count's stages around count, which is
// counter d's whole loop: it reads its edge until the edge is closed and
// sends what it emits to its sink. The clock runs from the first source
// record to the last sink record; the result has Elapsed, CPU and
// SinkRecords, the caller fills in Counts.
func runBareStages(lines []string, parallelism, maxParallelism int, count func(d int, in <-chan *recordBatch, out chan<- *sinkBatch) error) (BareWordCountResult, error) {
	toCount := make([]chan *recordBatch, parallelism)
	toSink := make([]chan *sinkBatch, parallelism)
	for i := range parallelism {
		toCount[i] = make(chan *recordBatch, 16)
		toSink[i] = make(chan *sinkBatch, 16)
	}
	sunk := make([][][]sinkRecord, parallelism)
	errs := make([]error, parallelism)

	settle()
	start, cpu0 := time.Now(), processCPU()
	var sinks, counters, sources sync.WaitGroup
	for d := range parallelism {
		sinks.Add(1)
		go func() {
			defer sinks.Done()
			// Kept in fixed chunks, as the engine's sink store keeps its
			// output, so neither copies what it holds when it grows.
			var chunks [][]sinkRecord
			for b := range toSink[d] {
				for _, r := range b.recs {
					if len(chunks) == 0 || len(chunks[len(chunks)-1]) == cap(chunks[len(chunks)-1]) {
						chunks = append(chunks, make([]sinkRecord, 0, 8192))
					}
					last := &chunks[len(chunks)-1]
					*last = append(*last, r)
				}
				b.recs = b.recs[:0]
				sinkPool.Put(b)
			}
			sunk[d] = chunks
		}()
		counters.Add(1)
		go func() {
			defer counters.Done()
			defer close(toSink[d])
			errs[d] = count(d, toCount[d], toSink[d])
		}()
	}
	toTokenizer := make([]chan *lineBatch, parallelism)
	for i := range parallelism {
		toTokenizer[i] = make(chan *lineBatch, 16)
	}
	var tokenizers sync.WaitGroup
	for s := range parallelism {
		sources.Add(1)
		go func() {
			defer sources.Done()
			defer close(toTokenizer[s])
			b := linePool.Get().(*lineBatch)
			for i := s; i < len(lines); i += parallelism {
				b.lines = append(b.lines, lines[i])
				if len(b.lines) == BatchSize {
					toTokenizer[s] <- b
					b = linePool.Get().(*lineBatch)
				}
			}
			if len(b.lines) > 0 {
				toTokenizer[s] <- b
			}
		}()
		tokenizers.Add(1)
		go func() {
			defer tokenizers.Done()
			pending := make([]*recordBatch, parallelism)
			for lb := range toTokenizer[s] {
				for _, line := range lb.lines {
					for w := range words(line) {
						kg := rescale.KeyGroupForString(w, maxParallelism)
						d := rescale.OperatorIndexForKeyGroup(maxParallelism, parallelism, kg)
						b := pending[d]
						if b == nil {
							b = batchPool.Get().(*recordBatch)
							pending[d] = b
						}
						b.recs = append(b.recs, keyedRecord{word: w, kg: kg})
						if len(b.recs) == BatchSize {
							toCount[d] <- b
							pending[d] = nil
						}
					}
				}
				lb.lines = lb.lines[:0]
				linePool.Put(lb)
			}
			for d, b := range pending {
				if b != nil {
					toCount[d] <- b
				}
			}
		}()
	}
	sources.Wait()
	tokenizers.Wait()
	for _, c := range toCount {
		close(c)
	}
	counters.Wait()
	sinks.Wait()
	res := BareWordCountResult{Elapsed: time.Since(start), CPU: processCPU() - cpu0}
	for _, chunks := range sunk {
		for _, c := range chunks {
			res.SinkRecords += len(c)
		}
	}
	return res, errors.Join(errs...)
}

// words yields the words of line, lower-cased, split on ASCII white space,
// as the engine's tokenizer splits them: substrings of the line, so a
// lower-case word costs no allocation (strings.ToLower returns its argument
// when there is nothing to change).
func words(line string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for i := 0; i < len(line); {
			for i < len(line) && isBlank(line[i]) {
				i++
			}
			j := i
			for j < len(line) && !isBlank(line[j]) {
				j++
			}
			if j > i && !yield(strings.ToLower(line[i:j])) {
				return
			}
			i = j
		}
	}
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
