package engine

import (
	"math"
	"sync"
)

// Record is one stream record. Built-in operators use the fields this way:
// a source line or a click's user is Text; a word or a page is Key; counts
// and sums are Value; Timestamp is event time in milliseconds.
type Record struct {
	Key       string `json:"key,omitempty"`
	Value     int64  `json:"value,omitempty"`
	Text      string `json:"text,omitempty"`
	Timestamp int64  `json:"ts,omitempty"`
}

// Watermark values.
const (
	// MinWatermark is the watermark before any has been seen (Long.MIN_VALUE).
	MinWatermark int64 = math.MinInt64
	// MaxWatermark is the watermark a source emits at the end of its input
	// (Watermark.MAX_WATERMARK): every event-time window may fire.
	MaxWatermark int64 = math.MaxInt64
)

// elementKind is what travels on a channel.
type elementKind uint8

const (
	elemRecords elementKind = iota
	elemBarrier
	elemWatermark
)

// barrier is a checkpoint barrier (Flink's CheckpointBarrier).
type barrier struct {
	ID        int64
	Savepoint bool
	// Stop marks the barrier of a stop-with-savepoint: sources emit no record after it.
	Stop bool
	// Time is when the checkpoint was triggered (virtual or real).
	Time int64
	// Unaligned marks a barrier of an unaligned checkpoint: a priority
	// event that overtakes the records queued ahead of it (unaligned.go).
	Unaligned bool
}

// element is one entry of a channel: a batch of records, a barrier or a watermark.
type element struct {
	kind      elementKind
	batch     *batch
	barrier   barrier
	watermark int64
}

// batch is a group of records sent together, like one of Flink's network
// buffers. Batches are pooled: the receiver releases a batch it has consumed.
type batch struct {
	recs []Record
	// kgs holds each record's key group when the batch crossed a hash
	// edge, which computed them to route the records (len(kgs) ==
	// len(recs)); the keyed operator downstream takes them instead of
	// hashing each key again. Empty on other edges.
	kgs []int32
	// spare is the batch's own slice while recs is borrowed from a topic
	// (fill): borrowed records are never cleared or reused, and release
	// gives the batch its own slice back.
	spare []Record
}

var batchPool = sync.Pool{New: func() any { return &batch{recs: make([]Record, 0, 64)} }}

func newBatch() *batch { return batchPool.Get().(*batch) }

func (b *batch) release() {
	if b == nil {
		return
	}
	if b.spare != nil {
		b.recs, b.spare = b.spare, nil
	}
	if cap(b.recs) > 4096 {
		return
	}
	clear(b.recs)
	b.recs, b.kgs = b.recs[:0], b.kgs[:0]
	batchPool.Put(b)
}

// fill reads into the empty batch b up to n records of partition p of tp
// from offset off. Records a topic holds (lines from options, records typed
// in) are never changed once appended, so when all n are such records the
// batch borrows them instead of copying each: a source reading a
// million-line topic hands its tokenizer the topic's own records, as a
// Kafka consumer's fetch hands out the records of the buffer it read.
func (b *batch) fill(tp *topic, p int, off int64, n int) {
	if recs := tp.view(p, off, n); recs != nil {
		b.spare, b.recs = b.recs[:0], recs
		return
	}
	b.recs = tp.read(b.recs, p, off, n)
}

// latestTimestamp is the highest timestamp among the records fill read
// from partition p of tp (MinWatermark for none): the last one's when they
// were borrowed from a partition whose held records are in timestamp order,
// as lines are, else found by a pass over them.
func (b *batch) latestTimestamp(tp *topic, p int) int64 {
	if n := len(b.recs); n > 0 && b.spare != nil && tp.inOrder(p) {
		return b.recs[n-1].Timestamp
	}
	ts := MinWatermark
	for _, r := range b.recs {
		ts = max(ts, r.Timestamp)
	}
	return ts
}

func (e element) records() int {
	if e.kind == elemRecords && e.batch != nil {
		return len(e.batch.recs)
	}
	return 0
}
