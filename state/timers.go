package state

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Timers are keyed state, as in Flink: InternalTimerServiceImpl keeps each
// time domain's timers in a KeyGroupPartitionedPriorityQueue, one
// de-duplicating priority queue per key group (HeapPriorityQueueSet on the
// heap backend, RocksDBCachingPriorityQueueSet over a column family of its
// own on RocksDB), registered as states "_timer_state/event_<service>" and
// "_timer_state/processing_<service>"; snapshots write them per key group
// beside the other keyed state, so they are restored and rescaled with their
// key groups.
//
// StateLab stores each timer as an entry of a reserved MapState of the
// keyed backend: key = the timer's key, user key = [timestamp u64 BE with
// the sign bit flipped][namespace], value empty. The backend therefore
// stores, snapshots, restores and rescales timers exactly like every other
// entry (on pebble they live under a state id of their own, i.e. a key
// prefix of their own, the role of Flink's column family), and a map entry
// exists at most once, which is the de-duplication of Flink's
// HeapPriorityQueueSet. What orders them differs by backend, as in Flink:
// the memory backends keep an index in memory, one binary heap per key
// group and a heap of the key groups' heads (Flink's
// KeyGroupPartitionedPriorityQueue with a HeapPriorityQueueSet per key
// group); pebble keeps the order on disk, a key range of its own sorted by
// timestamp within each key group, and caches only the first few timers of
// each key group in memory (Flink's RocksDBCachingPriorityQueueSet,
// pebble_timers.go), so its memory does not grow with the number of pending
// timers. Either is rebuilt from the stored entries when the service is
// created on a restored backend.

// TimeDomain says which clock fires a timer.
type TimeDomain uint8

// The time domains (Flink's TimeDomain).
const (
	EventTime TimeDomain = iota
	ProcessingTime
)

func (d TimeDomain) String() string {
	if d == ProcessingTime {
		return "PROCESSING_TIME"
	}
	return "EVENT_TIME"
}

// TimerStatePrefix starts the name of every timer state, as in Flink's
// InternalTimeServiceManagerImpl.
const TimerStatePrefix = "_timer_state/"

// TimerStateName is the name of the state that holds the timers of service
// in domain d: "_timer_state/event_<service>" or
// "_timer_state/processing_<service>".
func TimerStateName(service string, d TimeDomain) string {
	if d == ProcessingTime {
		return TimerStatePrefix + "processing_" + service
	}
	return TimerStatePrefix + "event_" + service
}

// Timer is one registered timer (Flink's InternalTimer): a timestamp in
// milliseconds (event time) or nanoseconds of the engine's processing-time
// clock, a key, a namespace, and the key group of the key.
type Timer struct {
	Domain    TimeDomain `json:"domain"`
	Timestamp int64      `json:"timestamp"`
	Key       string     `json:"key"`
	Namespace string     `json:"namespace,omitempty"`
	KeyGroup  int        `json:"keyGroup"`
}

// timerUserKey is the stored user key of a timer: the timestamp with the
// sign bit flipped (so that byte order is numeric order), then the namespace.
func timerUserKey(dst []byte, ts int64, ns string) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts)^(1<<63))
	return append(dst, ns...)
}

func parseTimerUserKey(uk []byte) (int64, string, bool) {
	if len(uk) < 8 {
		return 0, "", false
	}
	return int64(binary.BigEndian.Uint64(uk) ^ (1 << 63)), string(uk[8:]), true
}

// renderTimerUserKey shows a timer entry in the state inspector.
func renderTimerUserKey(uk []byte) string {
	ts, ns, ok := parseTimerUserKey(uk)
	if !ok {
		return RenderBytes(uk)
	}
	s := "@" + strconv.FormatInt(ts, 10)
	if ns != "" {
		s += " ns=" + RenderBytes([]byte(ns))
	}
	return s
}

// scanner is what the timer index needs beyond rawBackend: every stored
// entry of one state, for the rebuild after a restore.
type scanner interface {
	scanState(id stateID, fn func(kg int, key, userKey, value []byte) error) error
}

// diskTimers is a backend that keeps its timer queues on disk (pebble):
// openTimerQueue makes the queue of the timer state id and rebuilds its
// on-disk order from the state's stored entries.
type diskTimers interface {
	openTimerQueue(d TimeDomain, id stateID) (timerQueue, error)
}

// timerQueue is one time domain's timers of a TimerService: the stored
// entries and what orders them. The memory backends keep the order in heaps
// in memory (heapTimerQueue); pebble keeps it on disk and caches the heads
// (pebbleTimerQueue).
type timerQueue interface {
	// register stores t unless it is there; the backend's current key is
	// t's key.
	register(b rawBackend, t Timer) error
	// delete removes t if it is there; the backend's current key is t's key.
	delete(b rawBackend, t Timer) error
	// peek is the earliest timer.
	peek() (Timer, bool)
	// size is the number of timers.
	size() int
	// list returns at least the first limit timers in firing order (0: all),
	// possibly more.
	list(limit int) ([]Timer, error)
	// inMemory is the number of timers held in memory.
	inMemory() int
}

// TimerService holds the event-time and processing-time timers of one
// operator subtask in its keyed backend (Flink's InternalTimerServiceImpl).
// Like the backend it is not safe for concurrent use.
type TimerService struct {
	b      rawBackend
	name   string
	queues [2]timerQueue
}

// NewTimerService registers the timer states of service name in b and
// rebuilds the queues' order from what b already holds (a restore): in
// memory on the memory backends, on disk on pebble. Obtain it once per
// backend, after the backend is created or restored.
func NewTimerService(b KeyedBackend, name string) (*TimerService, error) {
	rb, err := rawOf(b)
	if err != nil {
		return nil, err
	}
	sc, ok := b.(scanner)
	if !ok {
		return nil, fmt.Errorf("state: %T cannot hold timers", b)
	}
	s := &TimerService{b: rb, name: name}
	r := b.KeyGroupRange()
	for d := EventTime; d <= ProcessingTime; d++ {
		id, err := rb.register(TimerStateName(name, d), KindMap, entryRenderer{userKey: renderTimerUserKey, value: func([]byte) string { return "" }})
		if err != nil {
			return nil, fmt.Errorf("state: register timer state: %w", err)
		}
		if dt, ok := b.(diskTimers); ok {
			q, err := dt.openTimerQueue(d, id)
			if err != nil {
				return nil, fmt.Errorf("state: restore timers of %s: %w", TimerStateName(name, d), err)
			}
			s.queues[d] = q
			continue
		}
		q := newHeapTimerQueue(d, id, r.Start, r.Len())
		err = sc.scanState(id, func(kg int, key, userKey, _ []byte) error {
			ts, ns, ok := parseTimerUserKey(userKey)
			if !ok {
				return malformedTimer(key, kg)
			}
			q.add(Timer{Domain: d, Timestamp: ts, Key: string(key), Namespace: ns, KeyGroup: kg})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("state: restore timers of %s: %w", TimerStateName(name, d), err)
		}
		s.queues[d] = q
	}
	return s, nil
}

func malformedTimer(key []byte, kg int) error {
	return fmt.Errorf("%w: timer entry of key %q in key group %d has a malformed timestamp", ErrCorrupt, key, kg)
}

// Register adds a timer for the backend's current key in domain d at ts in
// namespace ns; a timer equal in all four is kept once (Flink's
// registerEventTimeTimer / registerProcessingTimeTimer).
func (s *TimerService) Register(d TimeDomain, ns string, ts int64) error {
	key, kg := s.b.CurrentKey()
	if kg < 0 {
		return ErrNoCurrentKey
	}
	t := Timer{Domain: d, Timestamp: ts, Key: string(key), Namespace: ns, KeyGroup: kg}
	if err := s.queues[d].register(s.b, t); err != nil {
		return fmt.Errorf("state: register timer: %w", err)
	}
	return nil
}

// Delete removes the current key's timer in d at ts in ns, if there is one
// (Flink's deleteEventTimeTimer / deleteProcessingTimeTimer).
func (s *TimerService) Delete(d TimeDomain, ns string, ts int64) error {
	key, kg := s.b.CurrentKey()
	if kg < 0 {
		return ErrNoCurrentKey
	}
	t := Timer{Domain: d, Timestamp: ts, Key: string(key), Namespace: ns, KeyGroup: kg}
	if err := s.queues[d].delete(s.b, t); err != nil {
		return fmt.Errorf("state: delete timer: %w", err)
	}
	return nil
}

// Advance fires, in timestamp order, every timer of domain d whose
// timestamp is at most time: it makes the timer's key the backend's
// current key, removes the timer and calls fn (Flink's advanceWatermark and
// onProcessingTime). fn may register and delete timers; one it registers at
// or before time fires in the same call, as in Flink.
func (s *TimerService) Advance(d TimeDomain, time int64, fn func(Timer) error) error {
	q := s.queues[d]
	for {
		t, ok := q.peek()
		if !ok || t.Timestamp > time {
			return nil
		}
		if err := s.b.SetCurrentKeyString(t.Key, t.KeyGroup); err != nil {
			return fmt.Errorf("state: fire timer: %w", err)
		}
		if err := q.delete(s.b, t); err != nil {
			return fmt.Errorf("state: fire timer: %w", err)
		}
		if err := fn(t); err != nil {
			return err
		}
	}
}

// Next returns the earliest timer of domain d.
func (s *TimerService) Next(d TimeDomain) (Timer, bool) { return s.queues[d].peek() }

// Len is the number of timers of domain d.
func (s *TimerService) Len(d TimeDomain) int { return s.queues[d].size() }

// Timers lists the timers of domain d in firing order, at most limit (0 =
// all). On pebble it reads them from disk; a read error ends the list early.
func (s *TimerService) Timers(d TimeDomain, limit int) []Timer {
	out, _ := s.queues[d].list(limit)
	slices.SortFunc(out, compareTimers)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	if out == nil {
		out = []Timer{}
	}
	return out
}

// compareTimers is the firing order: timestamp, then key group, key and
// namespace, so that timers due at the same time fire in the same order on
// every run and after every restore.
func compareTimers(a, b Timer) int {
	switch {
	case a.Timestamp != b.Timestamp:
		return cmpInt(a.Timestamp, b.Timestamp)
	case a.KeyGroup != b.KeyGroup:
		return cmpInt(int64(a.KeyGroup), int64(b.KeyGroup))
	case a.Key != b.Key:
		return strings.Compare(a.Key, b.Key)
	}
	return strings.Compare(a.Namespace, b.Namespace)
}

func cmpInt(a, b int64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// --- the in-memory index -----------------------------------------------------

type timerID struct {
	ts      int64
	key, ns string
}

type timerElem struct {
	Timer
	pos int // in its key group's heap
}

// kgHeap is the timers of one key group, a binary heap (HeapPriorityQueue).
type kgHeap struct {
	elems []*timerElem
	pos   int // of this key group in the heap of heads
}

func (h *kgHeap) Len() int           { return len(h.elems) }
func (h *kgHeap) Less(i, j int) bool { return compareTimers(h.elems[i].Timer, h.elems[j].Timer) < 0 }
func (h *kgHeap) Swap(i, j int) {
	h.elems[i], h.elems[j] = h.elems[j], h.elems[i]
	h.elems[i].pos, h.elems[j].pos = i, j
}
func (h *kgHeap) Push(x any) {
	e := x.(*timerElem)
	e.pos = len(h.elems)
	h.elems = append(h.elems, e)
}
func (h *kgHeap) Pop() any {
	e := h.elems[len(h.elems)-1]
	h.elems[len(h.elems)-1] = nil
	h.elems = h.elems[:len(h.elems)-1]
	return e
}

// headHeap orders the key groups by their earliest timer; an empty key group
// sorts last (Flink's heapOfKeyGroupHeaps).
type headHeap []*kgHeap

func (h headHeap) Len() int { return len(h) }
func (h headHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if len(a.elems) == 0 || len(b.elems) == 0 {
		return len(b.elems) == 0 && len(a.elems) > 0
	}
	return compareTimers(a.elems[0].Timer, b.elems[0].Timer) < 0
}
func (h headHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}
func (h *headHeap) Push(x any) { panic("fixed size") }
func (h *headHeap) Pop() any   { panic("fixed size") }

// heapTimerQueue is the memory backends' queue: every timer in memory, as
// Flink's HeapPriorityQueueSet per key group under a
// KeyGroupPartitionedPriorityQueue.
type heapTimerQueue struct {
	domain TimeDomain
	id     stateID
	start  int
	kgs    []*kgHeap
	heads  headHeap
	index  map[timerID]*timerElem
	ukBuf  []byte
}

func newHeapTimerQueue(d TimeDomain, id stateID, start, n int) *heapTimerQueue {
	q := &heapTimerQueue{domain: d, id: id, start: start, kgs: make([]*kgHeap, n), heads: make(headHeap, n), index: map[timerID]*timerElem{}}
	for i := range q.kgs {
		q.kgs[i] = &kgHeap{pos: i}
		q.heads[i] = q.kgs[i]
	}
	return q
}

func idOf(t Timer) timerID { return timerID{ts: t.Timestamp, key: t.Key, ns: t.Namespace} }

func (q *heapTimerQueue) contains(t Timer) bool { _, ok := q.index[idOf(t)]; return ok }

func (q *heapTimerQueue) add(t Timer) {
	id := idOf(t)
	if _, ok := q.index[id]; ok {
		return
	}
	e := &timerElem{Timer: t}
	q.index[id] = e
	h := q.kgs[t.KeyGroup-q.start]
	heap.Push(h, e)
	if e.pos == 0 {
		heap.Fix(&q.heads, h.pos)
	}
}

func (q *heapTimerQueue) remove(t Timer) bool {
	id := idOf(t)
	e, ok := q.index[id]
	if !ok {
		return false
	}
	delete(q.index, id)
	h := q.kgs[e.KeyGroup-q.start]
	head := e.pos == 0
	heap.Remove(h, e.pos)
	if head {
		heap.Fix(&q.heads, h.pos)
	}
	return true
}

func (q *heapTimerQueue) peek() (Timer, bool) {
	if len(q.heads) == 0 || len(q.heads[0].elems) == 0 {
		return Timer{}, false
	}
	return q.heads[0].elems[0].Timer, true
}

func (q *heapTimerQueue) register(b rawBackend, t Timer) error {
	if q.contains(t) {
		return nil
	}
	q.ukBuf = timerUserKey(q.ukBuf[:0], t.Timestamp, t.Namespace)
	if err := b.put(q.id, q.ukBuf, []byte{}); err != nil {
		return err
	}
	q.add(t)
	return nil
}

func (q *heapTimerQueue) delete(b rawBackend, t Timer) error {
	if !q.remove(t) {
		return nil
	}
	q.ukBuf = timerUserKey(q.ukBuf[:0], t.Timestamp, t.Namespace)
	return b.remove(q.id, q.ukBuf)
}

func (q *heapTimerQueue) size() int     { return len(q.index) }
func (q *heapTimerQueue) inMemory() int { return len(q.index) }

func (q *heapTimerQueue) list(int) ([]Timer, error) {
	out := make([]Timer, 0, len(q.index))
	for _, e := range q.index {
		out = append(out, e.Timer)
	}
	return out, nil
}
