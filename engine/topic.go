package engine

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// topic is the partitioned log a source reads: an in-memory stand-in for a
// Kafka or MetaQ topic. It lives outside the job, so it survives every crash,
// and it is the ground truth the sink output is compared with. Generated
// records are computed from (seed, index) on demand, so a topic of millions
// of records costs no memory and a rewind re-reads exactly the same records.
type topic struct {
	name       string
	partitions int
	gen        string
	seed       uint64
	records    int // generated records over all partitions
	keys       int
	wordsPer   int
	pages      int
	windowSize int64 // ms
	perWindow  int   // clicks per page per window

	mu    sync.RWMutex
	extra [][]Record // per partition: lines from options and records typed in, after the generated ones
	// unordered[p] is set once a record typed into partition p has an
	// older timestamp than the one before it (lines are in order).
	unordered []bool

	// progress is which source subtask reads each partition and how far it
	// got; source subtasks write it, views read it from any goroutine.
	progress []partitionProgress
	keyTable []string // keys generator
}

type partitionProgress struct {
	owner  atomic.Int32
	offset atomic.Int64
}

func (t *topic) resetProgress() {
	for i := range t.progress {
		t.progress[i].owner.Store(-1)
		t.progress[i].offset.Store(0)
	}
}

func (t *topic) setProgress(p, owner int, off int64) {
	t.progress[p].owner.Store(int32(owner))
	t.progress[p].offset.Store(off)
}

// readToEnd reports whether every partition is owned and read to its end.
func (t *topic) readToEnd() bool {
	for p := range t.partitions {
		if t.progress[p].owner.Load() < 0 || t.progress[p].offset.Load() < t.end(p) {
			return false
		}
	}
	return true
}

func newTopic(name string, seed int64, o operatorOptions) *topic {
	t := &topic{name: name, partitions: o.Partitions, gen: o.Generator, seed: uint64(seed),
		records: o.Records, keys: o.Keys, wordsPer: o.WordsPerLine, pages: o.Pages,
		windowSize: o.WindowSize.Milliseconds(), perWindow: o.ClicksPerWindow,
		extra: make([][]Record, o.Partitions), unordered: make([]bool, o.Partitions), progress: make([]partitionProgress, o.Partitions)}
	t.resetProgress()
	if t.gen == GeneratorNone {
		t.records = 0
	}
	if t.gen == GeneratorKeys {
		t.keyTable = make([]string, t.keys)
		for i := range t.keyTable {
			t.keyTable[i] = vocabularyWord(i)
		}
	}
	if len(o.Lines) > 0 {
		// Sized up front: a million lines would otherwise be copied at
		// every doubling of a partition's slice.
		for p := range t.partitions {
			t.extra[p] = make([]Record, 0, (len(o.Lines)-p+t.partitions-1)/t.partitions)
		}
	}
	for i, l := range o.Lines {
		p := i % t.partitions
		t.extra[p] = append(t.extra[p], Record{Key: l, Text: l, Timestamp: int64(i)})
	}
	return t
}

// generated is how many generated records partition p holds: global record i
// lives in partition i % partitions at offset i / partitions.
func (t *topic) generated(p int) int64 {
	n := t.records / t.partitions
	if p < t.records%t.partitions {
		n++
	}
	return int64(n)
}

// end is the offset after the last record of partition p.
func (t *topic) end(p int) int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.generated(p) + int64(len(t.extra[p]))
}

// read appends to dst the records of partition p from offset off, at most n.
func (t *topic) read(dst []Record, p int, off int64, n int) []Record {
	gen := t.generated(p)
	for ; n > 0 && off < gen; n-- {
		dst = append(dst, t.generate(off*int64(t.partitions)+int64(p)))
		off++
	}
	if n == 0 {
		return dst
	}
	t.mu.RLock()
	extra := t.extra[p]
	t.mu.RUnlock()
	for i := off - gen; n > 0 && i < int64(len(extra)); n-- {
		dst = append(dst, extra[i])
		i++
	}
	return dst
}

// view returns the records of partition p from offset off, at most n, as
// the topic holds them (capacity clipped: an append to the result copies),
// when they are all held records (not generated); else nil. Held records
// are never changed once appended, so the view stays valid while the topic
// grows.
func (t *topic) view(p int, off int64, n int) []Record {
	gen := t.generated(p)
	if off < gen || n <= 0 {
		return nil
	}
	t.mu.RLock()
	extra := t.extra[p]
	t.mu.RUnlock()
	i := off - gen
	if i >= int64(len(extra)) {
		return nil
	}
	j := min(i+int64(n), int64(len(extra)))
	return extra[i:j:j]
}

// inOrder reports whether partition p's held records are in timestamp order.
func (t *topic) inOrder(p int) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return !t.unordered[p]
}

// append adds a record typed in by a user to partition p and returns its offset.
func (t *topic) append(p int, r Record) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.extra[p]); n > 0 && r.Timestamp < t.extra[p][n-1].Timestamp {
		t.unordered[p] = true
	}
	t.extra[p] = append(t.extra[p], r)
	return t.generated(p) + int64(len(t.extra[p])) - 1
}

// generate returns global record i.
func (t *topic) generate(i int64) Record {
	if t.gen == GeneratorKeys {
		return Record{Key: t.keyTable[mix(t.seed, uint64(i))%uint64(len(t.keyTable))], Value: 1, Timestamp: i}
	}
	if t.gen == GeneratorClicks {
		perWindow := int64(t.pages * t.perWindow)
		w, k := i/perWindow, i%perWindow
		ts := w*t.windowSize + k*t.windowSize/perWindow
		return Record{Key: clickPage(int(k) % t.pages), Text: "user" + strconv.FormatInt(int64(mix(t.seed, uint64(i))%1000), 10), Timestamp: ts}
	}
	h := mix(t.seed, uint64(i))
	n := 1 + int(h%uint64(t.wordsPer))
	var sb strings.Builder
	for j := range n {
		h = splitmix(h)
		if j > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(vocabularyWord(skewed(h, t.keys)))
	}
	// A line is keyed by itself, as keyBy(line -> line) keys a stream of
	// strings in Flink: a keyed operator right after the source counts
	// whole lines (with wordsPerLine 1, words); a tokenizer first counts
	// the words of longer lines.
	line := sb.String()
	return Record{Key: line, Text: line, Timestamp: i}
}

// skewed maps a random 64-bit value to 0..n-1 with a quadratic skew, so a few
// words are hot, as in real text.
func skewed(h uint64, n int) int {
	u := float64(h>>11) / float64(1<<53)
	return int(u * u * float64(n))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func mix(seed, i uint64) uint64 { return splitmix(splitmix(seed) ^ i) }

// vocabulary is the words the generator draws from; beyond it words get a
// number suffix.
var vocabulary = strings.Fields(`flink state stream key group barrier checkpoint savepoint window event
time watermark task slot operator source sink record offset partition backend memory disk pebble
rocksdb hash range rescale parallel subtask job manager snapshot restore commit align buffer channel
queue batch count sum map filter union broadcast list value reduce timer latency throughput failure
restart recovery exactly once least log topic shard node cluster graph`)

func vocabularyWord(i int) string {
	if i < len(vocabulary) {
		return vocabulary[i]
	}
	return vocabulary[i%len(vocabulary)] + strconv.Itoa(i/len(vocabulary))
}

// clickPages are the pages of Flink's Operations Playground click generator.
var clickPages = []string{"/help", "/index", "/shop", "/jobs", "/about", "/news"}

func clickPage(i int) string {
	if i < len(clickPages) {
		return clickPages[i]
	}
	return clickPages[i%len(clickPages)] + strconv.Itoa(i/len(clickPages))
}

// windowLabel names the tumbling window [start, start+size).
func windowLabel(start, size int64) string {
	return fmt.Sprintf("[%s, %s)", fmtMillis(start), fmtMillis(start+size))
}

func fmtMillis(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}
