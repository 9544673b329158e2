package main

import (
	"time"

	"github.com/reugn/go-streams"
	ext "github.com/reugn/go-streams/extension"
	"github.com/reugn/go-streams/flow"
)

// wordCount is the element go-streams carries: a word and a count so far.
type wordCount struct {
	word string
	n    int64
}

// streamsResult is one go-streams run.
type streamsResult struct {
	counts  map[string]int64
	elapsed time.Duration
}

// runGoStreams counts words with go-streams' keyed flow: flow.NewKeyed splits
// the stream by word and gives each word its own flow.NewReduce, whose
// running sum is that word's state (go-streams keeps it in the reduce
// operator, in memory). The reduce emits its running count for every record;
// the sink keeps the last one per word, which is the final count because one
// goroutine forwards each word's results in order.
func runGoStreams(words []string) streamsResult {
	in := make(chan any, 1024)
	out := make(chan any, 1024)
	keyed := flow.NewKeyed(func(w wordCount) string { return w.word },
		func() streams.Flow {
			return flow.NewReduce(func(a, b wordCount) wordCount { return wordCount{word: a.word, n: a.n + b.n} })
		})
	start := time.Now()
	go func() {
		for _, w := range words {
			in <- wordCount{word: w, n: 1}
		}
		close(in)
	}()
	go ext.NewChanSource(in).Via(keyed).To(ext.NewChanSink(out))
	counts := make(map[string]int64)
	for e := range out {
		c := e.(wordCount)
		counts[c.word] = c.n
	}
	return streamsResult{counts: counts, elapsed: time.Since(start)}
}
