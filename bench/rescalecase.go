package bench

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/statelab/statelab/rescale"
)

// Rescale schemes compared on the same data.
const (
	SchemeKeyGroups = "key-groups"
	SchemeNaive     = "naive"
)

// RescaleResult is the cost of moving keyed state to a new parallelism.
type RescaleResult struct {
	Scheme string
	Keys   int
	From   int
	To     int
	// Elapsed is the time all new subtasks took, one after the other, to
	// read what they need from the old subtasks' Pebble databases and write
	// it into their own.
	Elapsed time.Duration
	// BytesRead is the key and value bytes the new subtasks iterated over;
	// BlockBytesRead the (compressed) SST block bytes Pebble loaded for it.
	BytesRead      int64
	BlockBytesRead int64
	// BytesMoved is what the new subtasks wrote: the state they own.
	// BytesChangedOwner is the part whose subtask index changed.
	BytesMoved        int64
	BytesChangedOwner int64
	KeysMoved         int
}

// RescaleBench holds the same keyed state (keys keys, one ValueState entry
// each, StateLab's Pebble key layout) twice, spread over From old subtasks'
// Pebble databases: once by key-group range, once by the naive rule
// hash % parallelism. Close it.
type RescaleBench struct {
	keys, from, maxP int
	dir              string
	kgOld, naiveOld  []*pebble.DB
	totalBytes       int64
	next             int
}

// stateIDCount is the state id of the one ValueState; any fixed id will do.
const stateIDCount = 1

// encodeStateKey is StateLab's Pebble key: [key group u16 BE][state id u16
// BE][uvarint key length][key], so a key-group range is one contiguous scan.
func encodeStateKey(dst []byte, kg int, key string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(kg))
	dst = binary.BigEndian.AppendUint16(dst, stateIDCount)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	return append(dst, key...)
}

func decodeStateKey(k []byte) (string, error) {
	if len(k) < 5 {
		return "", fmt.Errorf("bench: state key of %d bytes is too short", len(k))
	}
	n, w := binary.Uvarint(k[4:])
	if w <= 0 || 4+w+int(n) != len(k) {
		return "", fmt.Errorf("bench: state key %x is malformed", k)
	}
	return string(k[4+w:]), nil
}

func kgBound(kg int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(kg)) }

// NewRescaleBench writes keys keys into from old subtasks under both schemes
// and flushes them to SST files, as a checkpointed, restarted job would
// find them. dir is a scratch directory.
func NewRescaleBench(keys, from int, dir string) (*RescaleBench, error) {
	maxP := rescale.DefaultMaxParallelism(from)
	if err := rescale.CheckParallelism(from, maxP); err != nil {
		return nil, err
	}
	r := &RescaleBench{keys: keys, from: from, maxP: maxP, dir: dir}
	for j := range from {
		for _, s := range []string{SchemeKeyGroups, SchemeNaive} {
			db, err := openScratchPebble(filepath.Join(dir, "old", s, fmt.Sprint(j)))
			if err != nil {
				r.Close()
				return nil, err
			}
			if s == SchemeKeyGroups {
				r.kgOld = append(r.kgOld, db)
			} else {
				r.naiveOld = append(r.naiveOld, db)
			}
		}
	}
	kgBatches := make([]*pebble.Batch, from)
	naiveBatches := make([]*pebble.Batch, from)
	for j := range from {
		kgBatches[j], naiveBatches[j] = r.kgOld[j].NewBatch(), r.naiveOld[j].NewBatch()
	}
	var k []byte
	var v [8]byte
	for i := range keys {
		name := KeyName(i)
		hash := rescale.JavaStringHashCode(name)
		kg := rescale.KeyGroupForKeyHash(hash, maxP)
		k = encodeStateKey(k[:0], kg, name)
		binary.BigEndian.PutUint64(v[:], uint64(i))
		r.totalBytes += int64(len(k) + len(v))
		if err := kgBatches[rescale.OperatorIndexForKeyGroup(maxP, from, kg)].Set(k, v[:], nil); err != nil {
			r.Close()
			return nil, err
		}
		if err := naiveBatches[rescale.NaiveOwner(hash, from)].Set(k, v[:], nil); err != nil {
			r.Close()
			return nil, err
		}
	}
	for j := range from {
		for _, pair := range []struct {
			b  *pebble.Batch
			db *pebble.DB
		}{{kgBatches[j], r.kgOld[j]}, {naiveBatches[j], r.naiveOld[j]}} {
			err := pair.b.Commit(pebble.NoSync)
			pair.b.Close()
			if err == nil {
				err = pair.db.Flush()
			}
			if err != nil {
				r.Close()
				return nil, fmt.Errorf("bench: write old subtask %d: %w", j, err)
			}
		}
	}
	return r, nil
}

// TotalBytes is the key and value bytes of the whole state.
func (r *RescaleBench) TotalBytes() int64 { return r.totalBytes }

// KeyGroups rescales to parallelism to the way Flink does: new subtask i
// owns one contiguous key-group range, intersects it with each old
// subtask's range, and range-scans only that intersection.
func (r *RescaleBench) KeyGroups(to int) (RescaleResult, error) {
	if err := rescale.CheckParallelism(to, r.maxP); err != nil {
		return RescaleResult{}, err
	}
	res := RescaleResult{Scheme: SchemeKeyGroups, Keys: r.keys, From: r.from, To: to}
	return r.restore(&res, func(i int, write func(old int, k, v []byte) error) error {
		newRange := rescale.KeyGroupRangeForOperator(r.maxP, to, i)
		for j, db := range r.kgOld {
			inter := newRange.Intersection(rescale.KeyGroupRangeForOperator(r.maxP, r.from, j))
			if inter.Empty() {
				continue
			}
			err := scan(db, &pebble.IterOptions{LowerBound: kgBound(inter.Start), UpperBound: kgBound(inter.End + 1)}, &res,
				func(k, v []byte) error { return write(j, k, v) })
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// Naive rescales to parallelism to under hash % parallelism: nothing says
// where a new subtask's keys are, so each scans every old subtask's whole
// database and keeps the keys whose hash now maps to it.
func (r *RescaleBench) Naive(to int) (RescaleResult, error) {
	res := RescaleResult{Scheme: SchemeNaive, Keys: r.keys, From: r.from, To: to}
	return r.restore(&res, func(i int, write func(old int, k, v []byte) error) error {
		for j, db := range r.naiveOld {
			err := scan(db, nil, &res, func(k, v []byte) error {
				key, err := decodeStateKey(k)
				if err != nil {
					return err
				}
				if rescale.NaiveOwner(rescale.JavaStringHashCode(key), to) != i {
					return nil
				}
				return write(j, k, v)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// restore runs read for each new subtask in turn, writing what it keeps into
// a fresh Pebble database in batches, and times the whole.
func (r *RescaleBench) restore(res *RescaleResult, read func(i int, write func(old int, k, v []byte) error) error) (RescaleResult, error) {
	r.next++
	base := filepath.Join(r.dir, "new", fmt.Sprintf("%s-%d", res.Scheme, r.next))
	defer os.RemoveAll(base)
	dbs := make([]*pebble.DB, res.To)
	defer func() {
		for _, db := range dbs {
			if db != nil {
				db.Close()
			}
		}
	}()
	for i := range dbs {
		db, err := openScratchPebble(filepath.Join(base, fmt.Sprint(i)))
		if err != nil {
			return RescaleResult{}, err
		}
		dbs[i] = db
	}
	start := time.Now()
	for i, db := range dbs {
		b := db.NewBatch()
		write := func(old int, k, v []byte) error {
			res.BytesMoved += int64(len(k) + len(v))
			res.KeysMoved++
			if old != i {
				res.BytesChangedOwner += int64(len(k) + len(v))
			}
			if err := b.Set(k, v, nil); err != nil {
				return err
			}
			if b.Len() >= 1<<20 {
				if err := b.Commit(pebble.NoSync); err != nil {
					return err
				}
				b.Reset()
			}
			return nil
		}
		err := read(i, write)
		if err == nil {
			err = b.Commit(pebble.NoSync)
		}
		b.Close()
		if err != nil {
			return RescaleResult{}, fmt.Errorf("bench: %s rescale, new subtask %d: %w", res.Scheme, i, err)
		}
	}
	res.Elapsed = time.Since(start)
	return *res, nil
}

func scan(db *pebble.DB, opts *pebble.IterOptions, res *RescaleResult, fn func(k, v []byte) error) error {
	it, err := db.NewIter(opts)
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		res.BytesRead += int64(len(it.Key()) + len(v))
		if err := fn(it.Key(), v); err != nil {
			it.Close()
			return err
		}
	}
	res.BlockBytesRead += int64(it.Stats().InternalStats.BlockBytes)
	return it.Close()
}

func openScratchPebble(dir string) (*pebble.DB, error) {
	db, err := pebble.Open(dir, &pebble.Options{DisableWAL: true, Logger: discardPebbleLogger{}})
	if err != nil {
		return nil, fmt.Errorf("bench: open pebble in %s: %w", dir, err)
	}
	return db, nil
}

// Close closes the old databases and removes the scratch directory.
func (r *RescaleBench) Close() error {
	for _, db := range append(r.kgOld, r.naiveOld...) {
		db.Close()
	}
	return os.RemoveAll(r.dir)
}
