package state

import (
	"maps"
	"slices"
)

// heapTTLCursor is where the incremental cleanup of one state stands: a
// key-group index, the keys of that key group's table as they were when
// the cursor reached it, and the next of them (Flink's
// TtlIncrementalCleanup walks the state table with one iterator the same
// way).
type heapTTLCursor struct {
	kgi     int
	keys    []string
	pos     int
	started bool
}

// ttlCleanup checks the next n entries of state id and removes the
// expired ones (a list keeps its unexpired elements).
func (b *heapBackend) ttlCleanup(id stateID, s *ttlState, n int, now int64) error {
	if b.closed {
		return ErrClosed
	}
	if b.ttlCursors == nil {
		b.ttlCursors = map[stateID]*heapTTLCursor{}
	}
	c := b.ttlCursors[id]
	if c == nil {
		c = &heapTTLCursor{}
		b.ttlCursors[id] = c
	}
	b.cacheValid = false
	checked, groups := 0, 0
	for checked < n {
		if c.pos >= len(c.keys) {
			if groups > len(b.kgs) {
				break // a whole round without enough entries
			}
			groups++
			if c.started {
				c.kgi = (c.kgi + 1) % len(b.kgs)
			}
			c.started = true
			c.keys, c.pos = nil, 0
			if t := b.tableAt(c.kgi, id, false); t != nil {
				c.keys = slices.Clone(t.orderedKeys())
			}
			continue
		}
		k := c.keys[c.pos]
		c.pos++
		t := b.tableAt(c.kgi, id, false)
		if t == nil {
			continue
		}
		if t.maps != nil {
			m := t.maps[k]
			for _, uk := range slices.Sorted(maps.Keys(m)) {
				checked++
				if _, keep := s.transform(m[uk], now); !keep {
					delete(m, uk)
				}
			}
			if m != nil && len(m) == 0 {
				delete(t.maps, k)
			}
			continue
		}
		v, ok := t.values[k]
		if !ok {
			continue
		}
		checked++
		out, keep := s.transform(v, now)
		switch {
		case !keep:
			delete(t.values, k)
		case len(out) != len(v):
			t.values[k] = out
		}
	}
	return nil
}

func (b *heapBackend) bindTTL(id stateID, s *ttlState) {
	if int(id) < len(b.render) && b.render[id].ttl != s {
		b.render[id].ttl = s
	}
}
