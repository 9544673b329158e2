//go:build !js

package state

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// scanState visits every entry of state id, key group by key group: one
// range scan per key group over the prefix [key group][state id], the key
// prefix that keeps a state's entries (timers included) apart, as a column
// family does in Flink's RocksDB backend.
func (b *pebbleBackend) scanState(id stateID, fn func(kg int, key, userKey, value []byte) error) error {
	if b.closed {
		return ErrClosed
	}
	r := b.cfg.KeyGroupRange
	for g := r.Start; g <= r.End; g++ {
		lo := binary.BigEndian.AppendUint16(kgPrefix(nil, g), id)
		it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
		if err != nil {
			return err
		}
		for it.First(); it.Valid(); it.Next() {
			d, err := decodeKey(it.Key(), b.states)
			if err == nil {
				var v []byte
				if v, err = it.ValueAndErr(); err == nil {
					err = fn(d.kg, d.key, d.userKey, v)
				}
			}
			if err != nil {
				it.Close()
				return err
			}
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return err
		}
	}
	return nil
}

// Timers on disk. Flink's RocksDB backend keeps each timer state in a
// column family of its own, its key [key group][timestamp][key][namespace],
// so the earliest timer of a key group is one seek; RocksDBCachingPriorityQueueSet
// keeps only the first few of each key group in memory (a
// TreeOrderedSetCache of RocksDBPriorityQueueSetFactory.DEFAULT_CACHES_SIZE,
// 128), and KeyGroupPartitionedPriorityQueue orders the key groups by their
// heads.
//
// StateLab's pebble backend does the same beside the timer state's entries:
// a timer is stored once as the entry of its MapState (what snapshots,
// restores, rescales and the inspector read, unchanged) and once in the
// timer order, a key range of its own outside every key group's:
//
//	[0xFF][state id u16 BE][key group u16 BE][timestamp u64 BE, sign bit flipped][escaped key][namespace]
//
// Key groups are below 32768, so no state key starts with 0xFF: scans of
// key groups, full snapshots and the inspector never see the order, and a
// restore's clip of foreign key groups deletes it (it is rebuilt from the
// entries when the TimerService is made). Byte order within one key group
// is compareTimers's order: timestamp, key (the escaping keeps byte order),
// namespace. In memory each key group keeps at most timerCacheSize of its
// earliest timers, and knows whether that is all of them; when its cache
// runs empty and there are more on disk, one seek refills it.

// timerCacheSize is how many of each key group's earliest timers stay in
// memory. Flink caches 128 per key group; StateLab's operators have 128 key
// groups by default and a classroom forks many jobs, so it keeps fewer.
const timerCacheSize = 32

// timerOrderPrefix starts every key of the timer order.
const timerOrderPrefix = 0xFF

// pebbleTimerQueue is one time domain's timers on the pebble backend.
type pebbleTimerQueue struct {
	b     *pebbleBackend
	id    stateID
	d     TimeDomain
	start int
	n     int // timers stored
	kgs   []*timerCache
	heads cacheHeap
	pk    []byte // scratch: entry key
	ok    []byte // scratch: order key
}

// timerCache is the earliest timers of one key group, ascending.
type timerCache struct {
	kg    int
	elems []Timer
	all   bool // elems are every timer of the key group
	pos   int  // in the heap of heads
}

// cacheHeap orders key groups by their earliest timer; an empty one sorts
// last (Flink's heapOfKeyGroupHeaps).
type cacheHeap []*timerCache

func (h cacheHeap) Len() int { return len(h) }
func (h cacheHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if len(a.elems) == 0 || len(b.elems) == 0 {
		return len(b.elems) == 0 && len(a.elems) > 0
	}
	return compareTimers(a.elems[0], b.elems[0]) < 0
}
func (h cacheHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}
func (h *cacheHeap) Push(any) { panic("fixed size") }
func (h *cacheHeap) Pop() any { panic("fixed size") }

// openTimerQueue rebuilds the timer order of state id from its entries
// (after a restore the order holds nothing: the clip deleted it, or the
// entries came from a full snapshot) and fills each key group's cache.
func (b *pebbleBackend) openTimerQueue(d TimeDomain, id stateID) (timerQueue, error) {
	if b.closed {
		return nil, ErrClosed
	}
	r := b.cfg.KeyGroupRange
	q := &pebbleTimerQueue{b: b, id: id, d: d, start: r.Start, kgs: make([]*timerCache, r.Len()), heads: make(cacheHeap, r.Len())}
	for i := range q.kgs {
		q.kgs[i] = &timerCache{kg: r.Start + i, pos: i}
		q.heads[i] = q.kgs[i]
	}
	lo := []byte{timerOrderPrefix, byte(id >> 8), byte(id)}
	hi := prefixEnd(lo)
	if empty, err := b.rangeEmpty(lo, hi); err != nil {
		return nil, err
	} else if !empty {
		if err := b.db.DeleteRange(lo, hi, pebble.NoSync); err != nil {
			return nil, err
		}
	}
	batch := b.db.NewBatch()
	err := b.scanState(id, func(kg int, key, userKey, _ []byte) error {
		ts, ns, ok := parseTimerUserKey(userKey)
		if !ok {
			return malformedTimer(key, kg)
		}
		q.n++
		if err := batch.Set(q.orderKey(kg, ts, key, ns), nil, nil); err != nil {
			return err
		}
		if batch.Len() > 4<<20 {
			err := batch.Commit(pebble.NoSync)
			batch.Close()
			batch = b.db.NewBatch()
			return err
		}
		return nil
	})
	if err == nil {
		err = batch.Commit(pebble.NoSync)
	}
	batch.Close()
	if err != nil {
		return nil, err
	}
	for _, c := range q.kgs {
		if q.n == 0 {
			c.all = true
			continue
		}
		if err := q.refill(c); err != nil {
			return nil, err
		}
	}
	heap.Init(&q.heads)
	return q, nil
}

func (b *pebbleBackend) rangeEmpty(lo, hi []byte) (bool, error) {
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return false, err
	}
	empty := !it.First()
	return empty, errors.Join(it.Error(), it.Close())
}

// entryKey is the key of t's entry in the timer state (the layout of every
// MapState entry, pebble.go).
func (q *pebbleTimerQueue) entryKey(t Timer) []byte {
	k := binary.BigEndian.AppendUint16(kgPrefix(q.pk[:0], t.KeyGroup), q.id)
	k = appendEscaped(k, stringBytes(t.Key))
	k = timerUserKey(k, t.Timestamp, t.Namespace)
	q.pk = k
	return k
}

// orderPrefix is where key group kg's timers start in the timer order.
func (q *pebbleTimerQueue) orderPrefix(dst []byte, kg int) []byte {
	dst = append(dst, timerOrderPrefix)
	dst = binary.BigEndian.AppendUint16(dst, q.id)
	return binary.BigEndian.AppendUint16(dst, uint16(kg))
}

func (q *pebbleTimerQueue) orderKey(kg int, ts int64, key []byte, ns string) []byte {
	k := q.orderPrefix(q.ok[:0], kg)
	k = binary.BigEndian.AppendUint64(k, uint64(ts)^(1<<63))
	k = appendEscaped(k, key)
	k = append(k, ns...)
	q.ok = k
	return k
}

func (q *pebbleTimerQueue) decodeOrderKey(k []byte) (Timer, error) {
	if len(k) < 13 {
		return Timer{}, fmt.Errorf("%w: timer order key %x too short", ErrCorrupt, k)
	}
	kg := int(binary.BigEndian.Uint16(k[3:]))
	ts := int64(binary.BigEndian.Uint64(k[5:]) ^ (1 << 63))
	key, ns, ok := splitEscaped(k[13:])
	if !ok {
		return Timer{}, fmt.Errorf("%w: timer order key %x is not in StateLab's layout", ErrCorrupt, k)
	}
	return Timer{Domain: q.d, Timestamp: ts, Key: string(key), Namespace: string(ns), KeyGroup: kg}, nil
}

// exists reports whether t is stored: from its key group's cache when t
// is not later than the last timer cached (the cache holds every timer up
// to it), else by a point lookup of its entry.
func (q *pebbleTimerQueue) exists(t Timer) (bool, error) {
	c := q.kgs[t.KeyGroup-q.start]
	if i, found := slices.BinarySearchFunc(c.elems, t, compareTimers); found || c.all || i < len(c.elems) {
		return found, nil
	}
	_, closer, err := q.b.db.Get(q.entryKey(t))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, closer.Close()
}

func (q *pebbleTimerQueue) register(_ rawBackend, t Timer) error {
	if q.b.closed {
		return ErrClosed
	}
	if ok, err := q.exists(t); err != nil || ok {
		return err
	}
	batch := q.b.db.NewBatch()
	defer batch.Close()
	if err := batch.Set(q.entryKey(t), nil, nil); err != nil {
		return err
	}
	if err := batch.Set(q.orderKey(t.KeyGroup, t.Timestamp, stringBytes(t.Key), t.Namespace), nil, nil); err != nil {
		return err
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		return err
	}
	q.n++
	q.cacheAdd(t)
	return nil
}

func (q *pebbleTimerQueue) delete(_ rawBackend, t Timer) error {
	if q.b.closed {
		return ErrClosed
	}
	if ok, err := q.exists(t); err != nil || !ok {
		return err
	}
	batch := q.b.db.NewBatch()
	defer batch.Close()
	if err := batch.Delete(q.entryKey(t), nil); err != nil {
		return err
	}
	if err := batch.Delete(q.orderKey(t.KeyGroup, t.Timestamp, stringBytes(t.Key), t.Namespace), nil); err != nil {
		return err
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		return err
	}
	q.n--
	return q.cacheRemove(t)
}

// cacheAdd puts a newly stored timer into its key group's cache if it is
// among the earliest there (RocksDBCachingPriorityQueueSet.add).
func (q *pebbleTimerQueue) cacheAdd(t Timer) {
	c := q.kgs[t.KeyGroup-q.start]
	i, _ := slices.BinarySearchFunc(c.elems, t, compareTimers)
	switch {
	case c.all && len(c.elems) < timerCacheSize:
	case len(c.elems) > 0 && i < len(c.elems):
		// Earlier than the last cached one: it goes in, the last goes out.
		if len(c.elems) >= timerCacheSize {
			c.elems = c.elems[:len(c.elems)-1]
			c.all = false
		}
	default:
		c.all = false // on disk only
		return
	}
	c.elems = slices.Insert(c.elems, i, t)
	if i == 0 {
		heap.Fix(&q.heads, c.pos)
	}
}

// cacheRemove takes a removed timer out of its key group's cache and
// refills the cache from disk when it runs empty while more are stored.
func (q *pebbleTimerQueue) cacheRemove(t Timer) error {
	c := q.kgs[t.KeyGroup-q.start]
	i, found := slices.BinarySearchFunc(c.elems, t, compareTimers)
	if !found {
		return nil // beyond the cache: on disk only
	}
	c.elems = slices.Delete(c.elems, i, i+1)
	var err error
	if len(c.elems) == 0 && !c.all {
		err = q.refill(c)
	}
	if i == 0 {
		heap.Fix(&q.heads, c.pos)
	}
	return err
}

// refill reads key group c's earliest timers from disk: one seek.
func (q *pebbleTimerQueue) refill(c *timerCache) error {
	lo := q.orderPrefix(nil, c.kg)
	it, err := q.b.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return err
	}
	c.elems = c.elems[:0]
	valid := it.First()
	for ; valid && len(c.elems) < timerCacheSize; valid = it.Next() {
		t, err := q.decodeOrderKey(it.Key())
		if err != nil {
			it.Close()
			return err
		}
		c.elems = append(c.elems, t)
	}
	c.all = !valid
	return errors.Join(it.Error(), it.Close())
}

func (q *pebbleTimerQueue) peek() (Timer, bool) {
	if len(q.heads) == 0 || len(q.heads[0].elems) == 0 {
		return Timer{}, false
	}
	return q.heads[0].elems[0], true
}

func (q *pebbleTimerQueue) size() int { return q.n }

func (q *pebbleTimerQueue) inMemory() int {
	n := 0
	for _, c := range q.kgs {
		n += len(c.elems)
	}
	return n
}

// list reads up to limit timers of every key group (0: all) from disk, or
// from the cache where it holds them all.
func (q *pebbleTimerQueue) list(limit int) ([]Timer, error) {
	var out []Timer
	for _, c := range q.kgs {
		if c.all {
			out = append(out, c.elems...)
			continue
		}
		lo := q.orderPrefix(nil, c.kg)
		it, err := q.b.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
		if err != nil {
			return out, err
		}
		n := 0
		for valid := it.First(); valid && (limit <= 0 || n < limit); valid = it.Next() {
			t, err := q.decodeOrderKey(it.Key())
			if err != nil {
				it.Close()
				return out, err
			}
			out = append(out, t)
			n++
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return out, err
		}
	}
	return out, nil
}
