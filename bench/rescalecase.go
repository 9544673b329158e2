package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

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
	// inspect, when set (tests), sees every new database after a restore.
	inspect func(scheme string, i int, db *pebble.DB) error
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
	name, err := stateKeyName(k)
	return string(name), err
}

// stateKeyName is the key's name inside the state key k, not copied.
func stateKeyName(k []byte) ([]byte, error) {
	if len(k) < 5 {
		return nil, fmt.Errorf("bench: state key of %d bytes is too short", len(k))
	}
	n, w := binary.Uvarint(k[4:])
	if w <= 0 || 4+w+int(n) != len(k) {
		return nil, fmt.Errorf("bench: state key %x is malformed", k)
	}
	return k[4+w:], nil
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

// reopenOld closes and reopens the old databases of scheme, so every
// restore starts, as a real one does, with empty block caches: otherwise
// what one trial left in the cache would be read for free by the next, and
// the order of the interleaved trials would decide part of the figure. The
// operating system's page cache stays warm for both schemes alike.
func (r *RescaleBench) reopenOld(scheme string) error {
	dbs := r.kgOld
	if scheme == SchemeNaive {
		dbs = r.naiveOld
	}
	for j, db := range dbs {
		if err := db.Close(); err != nil {
			return fmt.Errorf("bench: close old subtask %d (%s): %w", j, scheme, err)
		}
		dbs[j] = nil
		reopened, err := openScratchPebble(filepath.Join(r.dir, "old", scheme, fmt.Sprint(j)))
		if err != nil {
			return err
		}
		dbs[j] = reopened
	}
	return nil
}

// TotalBytes is the key and value bytes of the whole state.
func (r *RescaleBench) TotalBytes() int64 { return r.totalBytes }

// KeyGroups rescales to parallelism to the way Flink does: new subtask i
// owns one contiguous key-group range, intersects it with each old
// subtask's range, and range-scans only that intersection. Old subtask j's
// range lies below old subtask j+1's, so scanning the intersections in
// increasing j yields the new subtask's keys already in key order.
func (r *RescaleBench) KeyGroups(to int) (RescaleResult, error) {
	if err := rescale.CheckParallelism(to, r.maxP); err != nil {
		return RescaleResult{}, err
	}
	if err := r.reopenOld(SchemeKeyGroups); err != nil {
		return RescaleResult{}, err
	}
	res := RescaleResult{Scheme: SchemeKeyGroups, Keys: r.keys, From: r.from, To: to}
	owner := func(key string) int {
		return rescale.OperatorIndexForKeyGroup(r.maxP, to, rescale.KeyGroupForString(key, r.maxP))
	}
	return r.restore(&res, owner, func(i int, write func(old int, k, v []byte) error) error {
		newRange := rescale.KeyGroupRangeForOperator(r.maxP, to, i)
		for j, db := range r.kgOld {
			inter := newRange.Intersection(rescale.KeyGroupRangeForOperator(r.maxP, r.from, j))
			if inter.Empty() {
				continue
			}
			c, err := openCursor(db, &pebble.IterOptions{LowerBound: kgBound(inter.Start), UpperBound: kgBound(inter.End + 1)}, &res, nil)
			if err != nil {
				return err
			}
			for c.valid {
				if err := write(j, c.key, c.value); err != nil {
					c.close()
					return err
				}
				if err := c.next(); err != nil {
					c.close()
					return err
				}
			}
			if err := c.close(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Naive rescales to parallelism to under hash % parallelism: nothing says
// where a new subtask's keys are, so each scans every old subtask's whole
// database and keeps the keys whose hash now maps to it. Each old database
// is sorted, so a k-way merge of the filtered scans yields the new
// subtask's keys in key order, as the key-group scheme's do.
func (r *RescaleBench) Naive(to int) (RescaleResult, error) {
	if err := r.reopenOld(SchemeNaive); err != nil {
		return RescaleResult{}, err
	}
	res := RescaleResult{Scheme: SchemeNaive, Keys: r.keys, From: r.from, To: to}
	owner := func(key string) int { return rescale.NaiveOwner(rescale.JavaStringHashCode(key), to) }
	return r.restore(&res, owner, func(i int, write func(old int, k, v []byte) error) error {
		keep := func(k []byte) (bool, error) {
			name, err := stateKeyName(k)
			if err != nil {
				return false, err
			}
			// string(name) does not escape, so it is not copied to the heap:
			// the filter costs a hash per key, not an allocation.
			return rescale.NaiveOwner(rescale.JavaStringHashCode(string(name)), to) == i, nil
		}
		cursors := make([]*cursor, 0, len(r.naiveOld))
		closeAll := func() error {
			var first error
			for _, c := range cursors {
				if err := c.close(); err != nil && first == nil {
					first = err
				}
			}
			return first
		}
		for _, db := range r.naiveOld {
			c, err := openCursor(db, nil, &res, keep)
			if err != nil {
				closeAll()
				return err
			}
			cursors = append(cursors, c)
		}
		for {
			// The smallest current key of the old databases comes next; with
			// a handful of old subtasks a linear pick beats a heap.
			min := -1
			for j, c := range cursors {
				if c.valid && (min < 0 || bytes.Compare(c.key, cursors[min].key) < 0) {
					min = j
				}
			}
			if min < 0 {
				break
			}
			c := cursors[min]
			if err := write(min, c.key, c.value); err != nil {
				closeAll()
				return err
			}
			if err := c.next(); err != nil {
				closeAll()
				return err
			}
		}
		return closeAll()
	})
}

// restore runs read for each new subtask in turn and times the whole. Both
// schemes share one write path, the one Flink's RocksDB backend takes when
// it rescales with state.backend.rocksdb.use-ingest-db-restore-mode: read
// hands over the new subtask's keys in key order, which go straight into an
// SST file (Pebble's sstable writer, the DB's own table format and block
// options) that is then ingested into the new subtask's fresh database —
// no memtable, no flush, no compaction. The sstable writer refuses a key
// that is not above the previous one, so a scheme that does not deliver
// its keys in order fails instead of being timed. After the timing, each
// new database is read back: it must hold exactly the keys owner assigns
// to its subtask, as many as were written.
func (r *RescaleBench) restore(res *RescaleResult, owner func(key string) int, read func(i int, write func(old int, k, v []byte) error) error) (RescaleResult, error) {
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
	written := make([]int, res.To)
	start := time.Now()
	for i, db := range dbs {
		path := filepath.Join(base, fmt.Sprintf("ingest-%d.sst", i))
		f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			return RescaleResult{}, fmt.Errorf("bench: %s rescale, new subtask %d: create sst: %w", res.Scheme, i, err)
		}
		w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), scratchWriterOptions(db))
		write := func(old int, k, v []byte) error {
			res.BytesMoved += int64(len(k) + len(v))
			res.KeysMoved++
			written[i]++
			if old != i {
				res.BytesChangedOwner += int64(len(k) + len(v))
			}
			return w.Set(k, v)
		}
		err = read(i, write)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err == nil && written[i] > 0 {
			err = db.Ingest(context.Background(), []string{path})
		}
		if err != nil {
			return RescaleResult{}, fmt.Errorf("bench: %s rescale, new subtask %d: %w", res.Scheme, i, err)
		}
	}
	res.Elapsed = time.Since(start)
	for i, db := range dbs {
		if r.inspect != nil {
			if err := r.inspect(res.Scheme, i, db); err != nil {
				return RescaleResult{}, err
			}
		}
		if err := checkOwned(db, i, written[i], owner); err != nil {
			return RescaleResult{}, fmt.Errorf("bench: %s rescale, new subtask %d: %w", res.Scheme, i, err)
		}
	}
	return *res, nil
}

// scratchWriterOptions are the sstable options db itself would write a
// bottom-level table with, so an ingested table is what a compaction of
// the same keys would have produced.
func scratchWriterOptions(db *pebble.DB) sstable.WriterOptions {
	o := scratchPebbleOptions()
	o.EnsureDefaults()
	return o.MakeWriterOptions(len(o.Levels)-1, db.TableFormat())
}

// checkOwned reads db back: it must hold want keys, each owned by subtask i.
func checkOwned(db *pebble.DB, i, want int, owner func(key string) int) error {
	it, err := db.NewIter(nil)
	if err != nil {
		return err
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		key, err := decodeStateKey(it.Key())
		if err != nil {
			it.Close()
			return err
		}
		if o := owner(key); o != i {
			it.Close()
			return fmt.Errorf("restored key %q belongs to subtask %d", key, o)
		}
		n++
	}
	if err := it.Close(); err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("restored database holds %d keys, %d were written", n, want)
	}
	return nil
}

// cursor walks one old database, counting every entry it passes as read;
// keep (nil keeps all) skips the entries the new subtask does not own.
type cursor struct {
	it         *pebble.Iterator
	res        *RescaleResult
	keep       func(k []byte) (bool, error)
	valid      bool
	key, value []byte
}

func openCursor(db *pebble.DB, opts *pebble.IterOptions, res *RescaleResult, keep func(k []byte) (bool, error)) (*cursor, error) {
	it, err := db.NewIter(opts)
	if err != nil {
		return nil, err
	}
	c := &cursor{it: it, res: res, keep: keep}
	it.First()
	if err := c.settle(); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *cursor) next() error {
	c.it.Next()
	return c.settle()
}

// settle counts the entry under the iterator and moves past the ones keep
// rejects, stopping on the next kept entry or the end.
func (c *cursor) settle() error {
	for ; c.it.Valid(); c.it.Next() {
		v, err := c.it.ValueAndErr()
		if err != nil {
			return err
		}
		k := c.it.Key()
		c.res.BytesRead += int64(len(k) + len(v))
		if c.keep != nil {
			ok, err := c.keep(k)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
		}
		c.valid, c.key, c.value = true, k, v
		return nil
	}
	c.valid, c.key, c.value = false, nil, nil
	return c.it.Error()
}

// close adds the SST block bytes the iterator loaded and closes it.
func (c *cursor) close() error {
	if c.it == nil {
		return nil
	}
	c.res.BlockBytesRead += int64(c.it.Stats().InternalStats.BlockBytes)
	err := c.it.Close()
	c.it = nil
	return err
}

// scratchPebbleOptions are the options of every database of the rescale
// case, old and new.
func scratchPebbleOptions() *pebble.Options {
	return &pebble.Options{DisableWAL: true, Logger: discardPebbleLogger{}}
}

func openScratchPebble(dir string) (*pebble.DB, error) {
	db, err := pebble.Open(dir, scratchPebbleOptions())
	if err != nil {
		return nil, fmt.Errorf("bench: open pebble in %s: %w", dir, err)
	}
	return db, nil
}

// Close closes the old databases and removes the scratch directory.
func (r *RescaleBench) Close() error {
	for _, db := range append(r.kgOld, r.naiveOld...) {
		if db != nil {
			db.Close()
		}
	}
	return os.RemoveAll(r.dir)
}
