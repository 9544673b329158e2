//go:build !js

package state

import (
	"encoding/binary"
	"errors"

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
