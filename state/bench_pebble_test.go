//go:build !js

package state

// The Pebble half of the state benchmarks (bench_test.go): Pebble does not
// build for GOOS=js.

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/statelab/statelab/rescale"
)

// BenchmarkValueStatePebble: the same on the pebble backend, against a bare
// Pebble Get + Set loop with the same options (WAL off).
func BenchmarkValueStatePebble(b *testing.B) {
	const nkeys = 100_000
	ks := makeKeys(nkeys, 1)
	dir := b.TempDir()
	kb, err := NewKeyedBackend(KeyedBackendConfig{Kind: Pebble, Dir: filepath.Join(dir, "backend"), MaxParallelism: benchMaxP,
		KeyGroupRange: rescale.KeyGroupRange{Start: 0, End: benchMaxP - 1}})
	if err != nil {
		b.Fatal(err)
	}
	defer kb.Close()
	db, err := openPebble(nil, filepath.Join(dir, "bare"), nil, false)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	vs, _ := Value(kb, "count", Int64Codec)
	var buf [8]byte
	for i := range nkeys {
		kb.SetCurrentKey(ks.keys[i], ks.kgs[i])
		vs.Update(0)
		db.Set(ks.keys[i], buf[:], pebble.NoSync)
	}
	interleave(b, func(i int) {
		k := ks.order[i%nkeys]
		kb.SetCurrentKey(ks.keys[k], ks.kgs[k])
		v, _, _ := vs.Value()
		vs.Update(v + 1)
	}, func(i int) {
		k := ks.keys[ks.order[i%nkeys]]
		var v uint64
		if val, closer, err := db.Get(k); err == nil {
			v = binary.BigEndian.Uint64(val)
			closer.Close()
		}
		binary.BigEndian.PutUint64(buf[:], v+1)
		db.Set(k, buf[:], pebble.NoSync)
	})
}

// snapshotFull writes a full snapshot of a Pebble backend's current state at
// once, so the benchmarks can compare the two formats of one DB.
func (b *pebbleBackend) snapshotFull(target SnapshotTarget, storage CheckpointStorage) (*KeyedStateHandle, error) {
	snap := b.db.NewSnapshot()
	defer snap.Close()
	return b.writeFull(target, storage, snap, b.States(), nil)
}

// fullSnapshotPebble takes fullSnapshot's canonical snapshot of a Pebble
// backend; ok is false for another backend.
func fullSnapshotPebble(kb KeyedBackend, id int64, s CheckpointStorage) (h *KeyedStateHandle, ok bool, err error) {
	pb, ok := kb.(*pebbleBackend)
	if !ok {
		return nil, false, nil
	}
	h, err = pb.snapshotFull(SnapshotTarget{CheckpointID: id}, s)
	return h, true, err
}
