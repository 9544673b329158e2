//go:build !js

package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleTTLCursor is where the background cleanup of one state stands: a
// key group and the last Pebble key checked in it.
type pebbleTTLCursor struct {
	kg    int
	after []byte
}

// ttlCleanup scans the next n entries of state id in key order, from where
// the last scan stopped, and deletes the expired ones (a list keeps its
// unexpired elements). Flink's RocksDB backend leaves this to its
// compaction filter (see ttl.go); Pebble has none, so this is a bounded
// scan whose deletions compaction later drops.
func (b *pebbleBackend) ttlCleanup(id stateID, s *ttlState, n int, now int64) error {
	if b.closed {
		return ErrClosed
	}
	if b.ttlCursors == nil {
		b.ttlCursors = map[stateID]*pebbleTTLCursor{}
	}
	r := b.cfg.KeyGroupRange
	c := b.ttlCursors[id]
	if c == nil {
		c = &pebbleTTLCursor{kg: r.Start}
		b.ttlCursors[id] = c
	}
	batch := b.db.NewBatch()
	defer batch.Close()
	checked := 0
	for groups := 0; checked < n && groups <= r.Len(); {
		lo := binary.BigEndian.AppendUint16(kgPrefix(nil, c.kg), id)
		it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
		if err != nil {
			return err
		}
		valid := it.First()
		if c.after != nil {
			valid = it.SeekGE(c.after)
			if valid && bytes.Equal(it.Key(), c.after) {
				valid = it.Next()
			}
		}
		for ; valid && checked < n; valid = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return err
			}
			checked++
			k := it.Key()
			c.after = append(c.after[:0], k...)
			out, keep := s.transform(v, now)
			switch {
			case !keep:
				err = batch.Delete(k, nil)
			case len(out) != len(v):
				err = batch.Set(k, slices.Clone(out), nil)
			}
			if err != nil {
				it.Close()
				return err
			}
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return err
		}
		if !valid {
			groups++
			c.kg++
			if c.kg > r.End {
				c.kg = r.Start
			}
			c.after = nil
		}
	}
	if batch.Empty() {
		return nil
	}
	return batch.Commit(pebble.NoSync)
}

func (b *pebbleBackend) bindTTL(id stateID, s *ttlState) {
	if int(id) < len(b.render) && b.render[id].ttl != s {
		b.render[id].ttl = s
	}
}
