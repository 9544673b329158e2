//go:build !js

package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/statelab/statelab/rescale"
)

// pebbleBackend keeps keyed state in one Pebble LSM per subtask, the role
// RocksDB plays in Flink's EmbeddedRocksDBStateBackend. A key is
//
//	[key group u16 BE][state id u16 BE][escaped key, 0x00 0x01][user key]
//
// The key is escaped (0x00 -> 0x00 0xFF) and terminated by 0x00 0x01, which
// keeps keys in byte order and makes the prefix of one key never the prefix
// of another: "a" and "a\x00" cannot collide, and everything of one key
// group, one state of a key group, or one key's MapState is one contiguous
// range. The value is the serialized value (a ListState's elements are
// appended with Pebble's concatenating merge operator, as Flink appends with
// RocksDB's StringAppendOperator).
type pebbleBackend struct {
	cfg    KeyedBackendConfig
	dbDir  string
	db     *pebble.DB
	states []StateInfo
	byName map[string]stateID
	render []entryRenderer

	key    []byte // current key, raw
	kg     int
	esc    []byte // escaped and terminated current key
	kbuf   []byte // scratch for composed keys
	vbuf   []byte // copy of the last value read
	closed bool

	seq int

	// ttlCursors is where the background TTL cleanup of each state stands.
	ttlCursors map[stateID]*pebbleTTLCursor

	// The asynchronous part of a snapshot runs on another goroutine; mu
	// guards what it shares with the task: the SST files of each snapshot
	// taken (by checkpoint id) and of the last completed one, which the next
	// snapshot may reference again instead of uploading (Flink's
	// uploadedSstFiles), and the metrics.
	async        asyncSet
	mu           sync.Mutex
	pendingSST   map[int64]map[string]FileRef
	confirmedSST map[string]FileRef
	metrics      BackendMetrics
}

var _ rawBackend = (*pebbleBackend)(nil)

// pebbleLogger routes Pebble's log lines to the caller's slog.Logger (Pebble's
// default prints to stderr on every Open). Fatalf logs and panics: Pebble
// assumes it does not return.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) { p.l.Info(fmt.Sprintf(format, args...)) }
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...))
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error("pebble fatal: " + msg)
	panic("pebble: " + msg)
}

// Memory of one pebble backend.
//
// Memtables grow to 2 MiB (Pebble starts each DB at 256 KiB and doubles).
// Flink's RocksDB default write buffer is 64 MiB, but an incremental
// checkpoint must flush the memtable in its synchronous part, while the
// subtask stands still: with 64 MiB of versions piled up since the last
// checkpoint that flush took 40–110 ms of every second at full speed. A
// small memtable is flushed by Pebble in the background whenever it fills,
// so the barrier's flush writes at most one memtable. Its size is also the
// depth of the skiplist every Get and Set walks, which is most of a keyed
// count's time on this backend: a word count's memtable holds mostly old
// versions of hot keys. Measured in one process, interleaved, engine word
// count against bare Pebble per CPU second (p = 2, docs/benchmarks.md):
// 8 MiB 0.81x, 4 MiB (Pebble's default) 0.88x, 2 MiB 0.93x, 1 MiB 0.91x.
// (With managed memory Flink's WriteBufferManager likewise flushes before
// 64 MiB when the slot's budget is reached.)
//
// Pebble charges every memtable to the DB's block cache, as Flink's RocksDB
// backend charges write buffers to its managed memory. With Pebble's
// default 8 MiB cache a grown memtable reserved the whole cache, so after a
// few checkpoints every Get read its SST blocks from disk again. The cache
// therefore holds the memtables' worst case — the live one, one waiting for
// its flush (MemTableStopWritesThreshold 2) and one kept for reuse — beside
// a block budget of its own. A cache is a cap, not an allocation: memory is
// used only for blocks actually read.
const (
	pebbleMemTableBytes   = 2 << 20
	pebbleBlockCacheBytes = 32 << 20
	pebbleCacheBytes      = pebbleBlockCacheBytes + 3*pebbleMemTableBytes
)

// pebbleOptions are the options every pebble backend runs with, except the
// cache, which openPebble adds. The WAL is off, as Flink runs RocksDB:
// durability comes from checkpoints, and a snapshot flushes the memtable
// first.
func pebbleOptions(l *slog.Logger) *pebble.Options {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return &pebble.Options{DisableWAL: true, Logger: pebbleLogger{l}, MemTableSize: pebbleMemTableBytes,
		LBaseMaxBytes: pebbleLBaseMaxBytes}
}

// pebbleLBaseMaxBytes is the size of the LSM's base level, where level 0
// is compacted to. An incremental checkpoint uploads the SST files written
// since the last one, so every compaction's output is uploaded again. With
// Pebble's default (64 MiB) a state of up to ~600 MiB has a single level
// under L0, so every L0 compaction rewrote the whole state: after a 1 %
// change, checkpoints alternated between ~1 % and ~55 % of a full one
// (27–32 % on average at 10 k to 1 M keys). With a small base level the
// LSM keeps intermediate levels: L0 files go to a small level, which is
// merged into the bottom level only once it has grown to about a tenth of
// it, so most checkpoints upload their own changes plus a small level and
// the bottom level is rewritten every ~12 checkpoints at 1 % change (6–12 %
// of a full checkpoint on average over 24 checkpoints, measured at 10 k,
// 100 k and 1 M keys). This is what Flink's RocksDB incremental
// checkpoints rely on too: SST files shared from one checkpoint to the next
// as long as compaction leaves them alone.
const pebbleLBaseMaxBytes = 32 << 10

// openPebble opens the DB in dir with pebbleOptions and a block cache of
// pebbleCacheBytes of its own, on fsys's disk (pebbleFS: faults an ErrorFS
// injects reach Pebble's own files).
func openPebble(fsys FileSystem, dir string, l *slog.Logger, readOnly bool) (*pebble.DB, error) {
	opts := pebbleOptions(l)
	opts.ReadOnly = readOnly
	opts.FS = pebbleFS(fsys)
	opts.Cache = pebble.NewCache(pebbleCacheBytes)
	// The DB takes its own reference; ours goes now, so the cache is freed
	// with the DB.
	defer opts.Cache.Unref()
	return pebble.Open(dir, opts)
}

// OpenBarePebble opens a Pebble database in dir on the OS disk with the
// options and the cache every pebble backend opens its own with, outside
// any backend: no key layout, no states, no checkpoints. It is for the
// benchmarks' bare baselines, so that the backend is compared with Pebble
// as the backend runs it, not with Pebble's defaults.
func OpenBarePebble(dir string) (*pebble.DB, error) {
	return openPebble(nil, dir, nil, false)
}

// prepareDir makes dir if needed and refuses one with files in it, so a
// backend never mixes its files with someone else's.
func prepareDir(fsys FileSystem, dir string) error {
	fsys = orOS(fsys)
	ents, err := fsys.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fsys.MkdirAll(dir)
	case err != nil:
		return err
	case len(ents) > 0:
		return fmt.Errorf("state: pebble directory %s is not empty; give each backend a fresh directory", dir)
	}
	return nil
}

func newPebbleBackend(cfg KeyedBackendConfig) *pebbleBackend {
	return &pebbleBackend{cfg: cfg, dbDir: filepath.Join(cfg.Dir, "db"), byName: map[string]stateID{}, kg: -1,
		pendingSST: map[int64]map[string]FileRef{}, confirmedSST: map[string]FileRef{},
		metrics: BackendMetrics{Kind: cfg.Kind, KeyGroupRange: cfg.KeyGroupRange}}
}

func openPebbleBackend(cfg KeyedBackendConfig) (KeyedBackend, error) {
	if err := prepareDir(cfg.FS, cfg.Dir); err != nil {
		return nil, fmt.Errorf("state: open pebble backend: %w", err)
	}
	b := newPebbleBackend(cfg)
	db, err := openPebble(cfg.FS, b.dbDir, cfg.Logger, false)
	if err != nil {
		return nil, fmt.Errorf("state: open pebble backend in %s: %w", cfg.Dir, err)
	}
	b.db = db
	return b, nil
}

func (b *pebbleBackend) Kind() BackendKind                    { return Pebble }
func (b *pebbleBackend) MaxParallelism() int                  { return b.cfg.MaxParallelism }
func (b *pebbleBackend) KeyGroupRange() rescale.KeyGroupRange { return b.cfg.KeyGroupRange }

func (b *pebbleBackend) SetCurrentKey(key []byte, keyGroup int) error {
	if b.closed {
		return ErrClosed
	}
	if !b.cfg.KeyGroupRange.Contains(keyGroup) {
		return fmt.Errorf("%w: key group %d, backend owns %v", ErrKeyGroupOutOfRange, keyGroup, b.cfg.KeyGroupRange)
	}
	b.key = append(b.key[:0], key...)
	b.kg = keyGroup
	b.esc = appendEscaped(b.esc[:0], key)
	return nil
}

// SetCurrentKeyString copies the string's bytes, as SetCurrentKey does.
func (b *pebbleBackend) SetCurrentKeyString(key string, keyGroup int) error {
	return b.SetCurrentKey(stringBytes(key), keyGroup)
}

func (b *pebbleBackend) CurrentKey() ([]byte, int) {
	if b.kg < 0 {
		return nil, -1
	}
	return b.key, b.kg
}

// appendEscaped appends key with 0x00 escaped as 0x00 0xFF and the
// terminator 0x00 0x01.
func appendEscaped(dst, key []byte) []byte {
	for {
		i := bytes.IndexByte(key, 0)
		if i < 0 {
			break
		}
		dst = append(dst, key[:i+1]...)
		dst = append(dst, 0xFF)
		key = key[i+1:]
	}
	dst = append(dst, key...)
	return append(dst, 0x00, 0x01)
}

// splitEscaped reads an escaped key from p and returns it and the rest.
func splitEscaped(p []byte) (key, rest []byte, ok bool) {
	for i := 0; i+1 < len(p); i++ {
		if p[i] != 0 {
			continue
		}
		switch p[i+1] {
		case 0x01:
			return append(key, p[:i]...), p[i+2:], true
		case 0xFF:
			key = append(key, p[:i+1]...)
			p = p[i+2:]
			i = -1
		default:
			return nil, nil, false
		}
	}
	return nil, nil, false
}

func kgPrefix(dst []byte, g int) []byte { return binary.BigEndian.AppendUint16(dst, uint16(g)) }

// composeKey builds the Pebble key of the current key for state id.
func (b *pebbleBackend) composeKey(id stateID, userKey []byte) ([]byte, error) {
	if b.closed {
		return nil, ErrClosed
	}
	if b.kg < 0 {
		return nil, ErrNoCurrentKey
	}
	k := kgPrefix(b.kbuf[:0], b.kg)
	k = binary.BigEndian.AppendUint16(k, id)
	k = append(k, b.esc...)
	k = append(k, userKey...)
	b.kbuf = k
	return k, nil
}

// prefixEnd is the exclusive upper bound of all keys that start with p, whose
// last byte is never 0xFF in our layout (a terminator or a key group).
func prefixEnd(p []byte) []byte {
	end := slices.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func (b *pebbleBackend) register(name string, kind StateKind, r entryRenderer) (stateID, error) {
	if b.closed {
		return 0, ErrClosed
	}
	id, err := registerWithTTL(&b.states, b.byName, name, kind, r.ttl != nil)
	if err != nil {
		return 0, err
	}
	for len(b.render) <= int(id) {
		b.render = append(b.render, entryRenderer{})
	}
	b.render[id] = r
	return id, nil
}

func (b *pebbleBackend) States() []StateInfo { return slices.Clone(b.states) }

func (b *pebbleBackend) get(id stateID, userKey []byte) ([]byte, bool, error) {
	k, err := b.composeKey(id, userKey)
	if err != nil {
		return nil, false, err
	}
	v, closer, err := b.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	b.vbuf = append(b.vbuf[:0], v...)
	return b.vbuf, true, closer.Close()
}

func (b *pebbleBackend) put(id stateID, userKey, value []byte) error {
	k, err := b.composeKey(id, userKey)
	if err != nil {
		return err
	}
	return b.db.Set(k, value, pebble.NoSync)
}

func (b *pebbleBackend) appendValue(id stateID, value []byte) error {
	k, err := b.composeKey(id, nil)
	if err != nil {
		return err
	}
	return b.db.Merge(k, value, pebble.NoSync)
}

func (b *pebbleBackend) remove(id stateID, userKey []byte) error {
	k, err := b.composeKey(id, userKey)
	if err != nil {
		return err
	}
	return b.db.Delete(k, pebble.NoSync)
}

func (b *pebbleBackend) iterate(id stateID, fn func(userKey, value []byte) bool) error {
	k, err := b.composeKey(id, nil)
	if err != nil {
		return err
	}
	lo := slices.Clone(k)
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		if !fn(it.Key()[len(lo):], v) {
			break
		}
	}
	return errors.Join(it.Error(), it.Close())
}

func (b *pebbleBackend) clear(id stateID) error {
	k, err := b.composeKey(id, nil)
	if err != nil {
		return err
	}
	if b.states[id].Kind == KindMap {
		return b.db.DeleteRange(k, prefixEnd(k), pebble.NoSync)
	}
	return b.db.Delete(k, pebble.NoSync)
}

// decodedKey is a Pebble key taken apart.
type decodedKey struct {
	kg      int
	id      stateID
	key     []byte
	userKey []byte // nil unless the state is a MapState
}

func decodeKey(k []byte, states []StateInfo) (decodedKey, error) {
	if len(k) < 4 {
		return decodedKey{}, fmt.Errorf("%w: pebble key %x too short", ErrCorrupt, k)
	}
	d := decodedKey{kg: int(binary.BigEndian.Uint16(k)), id: binary.BigEndian.Uint16(k[2:])}
	key, rest, ok := splitEscaped(k[4:])
	if !ok || int(d.id) >= len(states) {
		return decodedKey{}, fmt.Errorf("%w: pebble key %x is not in StateLab's layout", ErrCorrupt, k)
	}
	d.key = key
	if d.key == nil {
		d.key = []byte{}
	}
	if states[d.id].Kind == KindMap {
		d.userKey = rest
		if d.userKey == nil {
			d.userKey = []byte{}
		}
	}
	return d, nil
}

// iterSource is a DB or a Pebble snapshot of it.
type iterSource interface {
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// scan visits every entry in the key groups of r, in key order.
func (b *pebbleBackend) scan(r rescale.KeyGroupRange, fn func(d decodedKey, value []byte) error) error {
	if b.closed {
		return ErrClosed
	}
	return scanSource(b.db, b.states, r.Intersection(b.cfg.KeyGroupRange), fn)
}

func scanSource(src iterSource, states []StateInfo, x rescale.KeyGroupRange, fn func(d decodedKey, value []byte) error) error {
	if x.Empty() {
		return nil
	}
	it, err := src.NewIter(&pebble.IterOptions{LowerBound: kgPrefix(nil, x.Start), UpperBound: kgPrefix(nil, x.End+1)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		d, err := decodeKey(it.Key(), states)
		if err != nil {
			it.Close()
			return err
		}
		v, err := it.ValueAndErr()
		if err == nil {
			err = fn(d, v)
		}
		if err != nil {
			it.Close()
			return err
		}
	}
	return errors.Join(it.Error(), it.Close())
}

var errStop = errors.New("stop")

func (b *pebbleBackend) Entries(r rescale.KeyGroupRange, limit int) ([]Entry, error) {
	out := []Entry{}
	err := b.scan(r, func(d decodedKey, v []byte) error {
		if limit > 0 && len(out) >= limit {
			return errStop
		}
		var er entryRenderer
		if int(d.id) < len(b.render) {
			er = b.render[d.id]
		}
		out = append(out, renderEntry(b.states[d.id], er, b.cfg.KeyRenderer, d.kg, d.key, d.userKey, v))
		return nil
	})
	if err != nil && err != errStop {
		return nil, err
	}
	return out, nil
}

func (b *pebbleBackend) KeyGroupMetrics() ([]KeyGroupMetrics, error) {
	if b.closed {
		return nil, ErrClosed
	}
	r := b.cfg.KeyGroupRange
	out := make([]KeyGroupMetrics, r.Len())
	for i := range out {
		out[i].KeyGroup = r.Start + i
	}
	var last []byte // [kg][id][escaped key] of the last counted (state, key)
	err := b.scan(r, func(d decodedKey, v []byte) error {
		m := &out[d.kg-r.Start]
		m.Bytes += int64(len(d.key) + len(d.userKey) + len(v))
		cur := appendEscaped(binary.BigEndian.AppendUint16(kgPrefix(nil, d.kg), d.id), d.key)
		if !bytes.Equal(cur, last) {
			m.Keys++
			last = cur
		}
		return nil
	})
	return out, err
}

func (b *pebbleBackend) Metrics() (BackendMetrics, error) {
	kgm, err := b.KeyGroupMetrics()
	if err != nil {
		return BackendMetrics{}, err
	}
	b.mu.Lock()
	m := b.metrics
	b.mu.Unlock()
	m.Keys, m.Bytes = 0, 0
	for _, g := range kgm {
		m.Keys += g.Keys
		m.Bytes += g.Bytes
	}
	m.LocalDiskBytes = dirSize(b.fsys(), b.cfg.Dir)
	return m, nil
}

func dirSize(fsys FileSystem, dir string) int64 {
	var n int64
	_ = fsys.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

func (b *pebbleBackend) Snapshot(target SnapshotTarget, storage CheckpointStorage) (*KeyedStateHandle, error) {
	a, err := b.StartSnapshot(target, storage)
	if err != nil {
		return nil, err
	}
	return a.Finish()
}

// StartSnapshot does at the barrier what must see exactly the state of the
// barrier: for a full snapshot it takes a Pebble snapshot (a consistent
// read view); for an incremental one it flushes the memtable and takes a
// Pebble checkpoint (hard links) into a fresh local directory. Finish then
// writes or uploads from those while records go on changing the DB.
func (b *pebbleBackend) StartSnapshot(target SnapshotTarget, storage CheckpointStorage) (AsyncSnapshot, error) {
	if b.closed {
		return nil, ErrClosed
	}
	var run func() (*KeyedStateHandle, error)
	var release func()
	if b.cfg.Incremental && !target.Savepoint {
		local, confirmed, err := b.checkpointLocally(target)
		if err != nil {
			return nil, fmt.Errorf("snapshot checkpoint %d: %w", target.CheckpointID, err)
		}
		states := b.States()
		run = func() (*KeyedStateHandle, error) {
			defer b.fsys().RemoveAll(local)
			return b.uploadIncremental(target, storage, local, confirmed, states)
		}
		release = func() { b.fsys().RemoveAll(local) }
	} else {
		snap := b.db.NewSnapshot()
		states := b.States()
		var filter snapshotFilter
		if !target.Copy {
			filter = newSnapshotFilter(b.render)
		}
		run = func() (*KeyedStateHandle, error) {
			defer snap.Close()
			return b.writeFull(target, storage, snap, states, filter)
		}
		release = func() { snap.Close() }
	}
	return b.async.start(func() (*KeyedStateHandle, error) {
		h, err := run()
		if err != nil {
			return nil, fmt.Errorf("snapshot checkpoint %d: %w", target.CheckpointID, err)
		}
		b.mu.Lock()
		b.metrics.LastCheckpointID = target.CheckpointID
		b.metrics.LastCheckpointSize, b.metrics.LastCheckpointUploaded = h.StateSize, h.CheckpointedSize
		b.metrics.LastCheckpointIncremental = h.Format == FormatIncremental
		b.mu.Unlock()
		return h, nil
	}, release), nil
}

// writeFull iterates a read view in key order, which is key-group order,
// and writes the canonical full format; the bytes equal the memory
// backend's for the same state.
func (b *pebbleBackend) writeFull(target SnapshotTarget, storage CheckpointStorage, src iterSource, states []StateInfo, filter snapshotFilter) (*KeyedStateHandle, error) {
	fw, err := storage.CreateFile(target, Exclusive, snapshotFileName(b.cfg.Name, b.cfg.KeyGroupRange))
	if err != nil {
		return nil, err
	}
	w, err := newFullWriter(fw, b.cfg.MaxParallelism, b.cfg.KeyGroupRange, states)
	if err == nil {
		emit := filter.filtered(w.entry)
		err = scanSource(src, states, b.cfg.KeyGroupRange, func(d decodedKey, v []byte) error {
			if err := w.beginKeyGroup(d.kg); err != nil {
				return err
			}
			return emit(d.id, d.key, d.userKey, v)
		})
	}
	var ref FileRef
	var offsets []int64
	if err == nil {
		ref, offsets, err = w.finish()
	}
	if err != nil {
		fw.Abort()
		return nil, err
	}
	return &KeyedStateHandle{Backend: Pebble, Format: FormatFull, CheckpointID: target.CheckpointID,
		MaxParallelism: b.cfg.MaxParallelism, KeyGroupRange: b.cfg.KeyGroupRange, States: states,
		File: &ref, Offsets: offsets, StateSize: ref.Size, CheckpointedSize: ref.Size}, nil
}

func isSharedFile(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

// checkpointLocally is the synchronous half of Flink's
// RocksIncrementalSnapshotStrategy: flush the memtable (the WAL is off) and
// take a Pebble checkpoint into a fresh local directory. It returns the
// directory and the SST files of the last completed checkpoint, which the
// upload may reference instead of copying.
func (b *pebbleBackend) checkpointLocally(target SnapshotTarget) (string, map[string]FileRef, error) {
	// Without its directory Pebble retries a flush forever; say so instead.
	if _, err := b.fsys().Stat(b.dbDir); err != nil {
		return "", nil, fmt.Errorf("local directory of the pebble backend is gone (%w); restore from the last checkpoint", err)
	}
	if err := b.db.Flush(); err != nil {
		return "", nil, fmt.Errorf("flush memtable: %w", err)
	}
	b.seq++
	local := filepath.Join(b.cfg.Dir, fmt.Sprintf("chk-%d.%d", target.CheckpointID, b.seq))
	if err := b.db.Checkpoint(local, pebble.WithFlushedWAL()); err != nil {
		return "", nil, fmt.Errorf("pebble checkpoint: %w", err)
	}
	b.mu.Lock()
	confirmed := maps.Clone(b.confirmedSST)
	b.mu.Unlock()
	return local, confirmed, nil
}

// uploadIncremental is the asynchronous half: SST files the last completed
// checkpoint did not have go to shared/, the others are referenced again;
// the small private files (MANIFEST, OPTIONS, markers) go to the
// checkpoint's own directory.
func (b *pebbleBackend) uploadIncremental(target SnapshotTarget, storage CheckpointStorage, local string, confirmed map[string]FileRef, states []StateInfo) (*KeyedStateHandle, error) {
	ents, err := b.fsys().ReadDir(local)
	if err != nil {
		return nil, err
	}
	h := &KeyedStateHandle{Backend: Pebble, Format: FormatIncremental, CheckpointID: target.CheckpointID,
		MaxParallelism: b.cfg.MaxParallelism, KeyGroupRange: b.cfg.KeyGroupRange, States: states}
	sst := map[string]FileRef{}
	prefix := snapshotFileName(b.cfg.Name, b.cfg.KeyGroupRange)
	prefix = strings.TrimSuffix(prefix, ".kgs") + "-"
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		name := e.Name()
		if isSharedFile(name) {
			if ref, ok := confirmed[name]; ok {
				if err := storage.ReferenceShared(target.CheckpointID, ref); err == nil {
					h.SharedFiles = append(h.SharedFiles, SSTFile{LocalName: name, File: ref})
					h.StateSize += ref.Size
					sst[name] = ref
					continue
				}
			}
			ref, err := uploadFile(b.fsys(), storage, target, Shared, name, filepath.Join(local, name))
			if err != nil {
				return nil, err
			}
			h.SharedFiles = append(h.SharedFiles, SSTFile{LocalName: name, File: ref})
			h.StateSize += ref.Size
			h.CheckpointedSize += ref.Size
			sst[name] = ref
			continue
		}
		ref, err := uploadFile(b.fsys(), storage, target, Exclusive, prefix+name, filepath.Join(local, name))
		if err != nil {
			return nil, err
		}
		h.PrivateFiles = append(h.PrivateFiles, SSTFile{LocalName: name, File: ref})
		h.StateSize += ref.Size
		h.CheckpointedSize += ref.Size
	}
	b.mu.Lock()
	b.pendingSST[target.CheckpointID] = sst
	b.mu.Unlock()
	return h, nil
}

func uploadFile(fsys FileSystem, storage CheckpointStorage, target SnapshotTarget, scope Scope, name, src string) (FileRef, error) {
	f, err := fsys.Open(src)
	if err != nil {
		return FileRef{}, err
	}
	defer f.Close()
	w, err := storage.CreateFile(target, scope, name)
	if err != nil {
		return FileRef{}, err
	}
	if _, err := io.Copy(w, f); err != nil {
		w.Abort()
		return FileRef{}, fmt.Errorf("upload %s: %w", name, err)
	}
	return w.Commit()
}

func (b *pebbleBackend) NotifyCheckpointComplete(id int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if sst, ok := b.pendingSST[id]; ok {
		b.confirmedSST = sst
	}
	for n := range b.pendingSST {
		if n <= id {
			delete(b.pendingSST, n)
		}
	}
}

func (b *pebbleBackend) NotifyCheckpointAborted(id int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pendingSST, id)
}

// Close closes the DB. A node crash may have removed the directory already;
// Close still releases everything and reports no error for that. (Close
// before more writes: without its directory Pebble cannot flush, and once
// its memtables are full a write waits forever, as a dead process would.)
func (b *pebbleBackend) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	b.async.closeAll() // cancel snapshots not started, wait for running ones
	err := b.db.Close()
	if _, statErr := b.fsys().Stat(b.cfg.Dir); errors.Is(statErr, fs.ErrNotExist) {
		return nil
	}
	return err
}

// restorePebbleBackend builds a DB for cfg.KeyGroupRange. Flink's
// RocksIncrementalRestoreOperation: the incremental handle that overlaps the
// range most becomes the base DB (its files are downloaded and opened, and
// key groups outside the range deleted with DeleteRange); the other handles
// are read for the range and written into it. On error the directory is
// removed, so nothing is half-applied.
func restorePebbleBackend(cfg KeyedBackendConfig, storage CheckpointStorage, handles []*KeyedStateHandle) (_ KeyedBackend, err error) {
	if err := checkHandles(cfg, handles); err != nil {
		return nil, err
	}
	if err := prepareDir(cfg.FS, cfg.Dir); err != nil {
		return nil, fmt.Errorf("state: restore pebble backend: %w", err)
	}
	b := newPebbleBackend(cfg)
	defer func() {
		if err != nil {
			if b.db != nil {
				b.db.Close()
			}
			orOS(cfg.FS).RemoveAll(cfg.Dir)
		}
	}()
	var base *KeyedStateHandle
	for _, h := range handles {
		if h != nil && h.Format == FormatIncremental && !h.KeyGroupRange.Intersection(cfg.KeyGroupRange).Empty() &&
			(base == nil || h.KeyGroupRange.Intersection(cfg.KeyGroupRange).Len() > base.KeyGroupRange.Intersection(cfg.KeyGroupRange).Len()) {
			base = h
		}
	}
	var read int64
	if base != nil {
		n, err := downloadCheckpoint(b.fsys(), storage, base, b.dbDir)
		read += n
		if err != nil {
			return nil, fmt.Errorf("restore key groups %v: %w", cfg.KeyGroupRange, err)
		}
		if b.db, err = openPebble(cfg.FS, b.dbDir, cfg.Logger, false); err != nil {
			return nil, fmt.Errorf("restore key groups %v: open checkpoint %d: %w", cfg.KeyGroupRange, base.CheckpointID, err)
		}
		for _, s := range base.States {
			if int(s.ID) != len(b.states) {
				return nil, fmt.Errorf("%w: checkpoint %d: state ids are not dense", ErrCorrupt, base.CheckpointID)
			}
			if _, err := registerRestored(&b.states, b.byName, s); err != nil {
				return nil, err
			}
		}
		// The clip starts at key group 0's prefix, never at the empty key:
		// Pebble v2.1.7 mis-seeks a range tombstone that starts at "" (an
		// SST fragment block's SeekGE then Next past it trips "next entry
		// unexpectedly invalid" in invariant builds, i.e. under -race). Every
		// key begins with its key group, so [kg 0, kg Start) deletes the same.
		r := cfg.KeyGroupRange
		if r.Start > 0 {
			if err := b.db.DeleteRange(kgPrefix(nil, 0), kgPrefix(nil, r.Start), pebble.NoSync); err != nil {
				return nil, err
			}
		}
		if err := b.db.DeleteRange(kgPrefix(nil, r.End+1), []byte{0xFF, 0xFF, 0xFF}, pebble.NoSync); err != nil {
			return nil, err
		}
		// The downloaded SSTs are already in shared/: the next checkpoint
		// may reference them (they are kept while this checkpoint is retained).
		for _, f := range base.SharedFiles {
			b.confirmedSST[f.LocalName] = f.File
		}
	} else if b.db, err = openPebble(cfg.FS, b.dbDir, cfg.Logger, false); err != nil {
		return nil, fmt.Errorf("state: restore pebble backend in %s: %w", cfg.Dir, err)
	}
	if err := registerHandleStates(&b.states, b.byName, handles); err != nil {
		return nil, err
	}
	ins := &inserter{b: b}
	for i, h := range handles {
		if h == nil || h == base || h.KeyGroupRange.Intersection(cfg.KeyGroupRange).Empty() {
			continue
		}
		var n int64
		if h.Format == FormatFull {
			n, err = readFull(storage, h, cfg.KeyGroupRange, func(e *fullEntry) error {
				return ins.add(e.state, e.keyGroup, e.key, e.userKey, e.value)
			})
		} else {
			n, err = b.mergeIncremental(storage, h, filepath.Join(cfg.Dir, fmt.Sprintf("restore-%d", i)), ins)
		}
		read += n
		if err == nil {
			err = ins.flush()
		}
		if err != nil {
			return nil, fmt.Errorf("restore key groups %v: %w", cfg.KeyGroupRange, err)
		}
	}
	b.metrics.RestoreBytesRead = read
	return b, nil
}

// inserter writes restored entries into the DB in batches, mapping state
// names to this backend's ids.
type inserter struct {
	b     *pebbleBackend
	batch *pebble.Batch
	key   []byte
}

func (in *inserter) add(st StateInfo, g int, key, userKey, value []byte) error {
	id, err := registerRestored(&in.b.states, in.b.byName, st)
	if err != nil {
		return err
	}
	if in.batch == nil {
		in.batch = in.b.db.NewBatch()
	}
	k := binary.BigEndian.AppendUint16(kgPrefix(in.key[:0], g), id)
	k = appendEscaped(k, key)
	k = append(k, userKey...)
	in.key = k
	if err := in.batch.Set(k, value, nil); err != nil {
		return err
	}
	if in.batch.Len() > 4<<20 {
		return in.flush()
	}
	return nil
}

func (in *inserter) flush() error {
	if in.batch == nil {
		return nil
	}
	err := in.batch.Commit(pebble.NoSync)
	in.batch.Close()
	in.batch = nil
	return err
}

// mergeIncremental opens another subtask's incremental checkpoint in a
// scratch directory and copies the key groups of this backend's range.
func (b *pebbleBackend) mergeIncremental(storage CheckpointStorage, h *KeyedStateHandle, dir string, ins *inserter) (int64, error) {
	defer b.fsys().RemoveAll(dir)
	n, err := downloadCheckpoint(b.fsys(), storage, h, dir)
	if err != nil {
		return n, err
	}
	db, err := openPebble(b.cfg.FS, dir, b.cfg.Logger, true)
	if err != nil {
		return n, fmt.Errorf("open checkpoint %d of key groups %v: %w", h.CheckpointID, h.KeyGroupRange, err)
	}
	defer db.Close()
	x := h.KeyGroupRange.Intersection(b.cfg.KeyGroupRange)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: kgPrefix(nil, x.Start), UpperBound: kgPrefix(nil, x.End+1)})
	if err != nil {
		return n, err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		d, err := decodeKey(it.Key(), h.States)
		if err != nil {
			return n, fmt.Errorf("checkpoint %d: %w", h.CheckpointID, err)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return n, err
		}
		if err := ins.add(h.States[d.id], d.kg, d.key, d.userKey, v); err != nil {
			return n, err
		}
	}
	return n, it.Error()
}

// downloadCheckpoint copies the files of an incremental handle into dir under
// their Pebble names, checking each one's size and CRC32C.
func downloadCheckpoint(fsys FileSystem, storage CheckpointStorage, h *KeyedStateHandle, dir string) (int64, error) {
	if err := fsys.MkdirAll(dir); err != nil {
		return 0, err
	}
	for i, s := range h.States {
		if int(s.ID) != i {
			return 0, fmt.Errorf("%w: checkpoint %d: state ids are not dense", ErrCorrupt, h.CheckpointID)
		}
	}
	var read int64
	for _, f := range append(slices.Clone(h.SharedFiles), h.PrivateFiles...) {
		// The name comes from metadata on a shared disk: it must be one
		// plain file name, so it cannot point outside dir.
		if !ValidDirName(f.LocalName) {
			return read, fmt.Errorf("%w: checkpoint %d: local file name %q is not a plain file name", ErrCorrupt, h.CheckpointID, f.LocalName)
		}
		n, err := downloadFile(fsys, storage, f.File, filepath.Join(dir, f.LocalName))
		read += n
		if err != nil {
			return read, fmt.Errorf("checkpoint %d: %w", h.CheckpointID, err)
		}
	}
	return read, nil
}

func downloadFile(fsys FileSystem, storage CheckpointStorage, ref FileRef, dst string) (int64, error) {
	r, err := storage.OpenFile(ref)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	if r.Size() != ref.Size {
		return 0, fmt.Errorf("%w: %s is %d bytes, the checkpoint says %d", ErrCorrupt, ref.Path, r.Size(), ref.Size)
	}
	out, err := fsys.Create(dst)
	if err != nil {
		return 0, err
	}
	crc := crc32.New(castagnoli)
	_, err = io.Copy(io.MultiWriter(out, crc), io.NewSectionReader(r, 0, ref.Size))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return r.BytesRead(), fmt.Errorf("download %s: %w", ref.Path, err)
	}
	if crc.Sum32() != ref.CRC32C {
		return r.BytesRead(), fmt.Errorf("%w: %s fails its CRC32C check (a byte changed)", ErrCorrupt, ref.Path)
	}
	return r.BytesRead(), nil
}

// fsys is the file system of the backend's own file operations.
func (b *pebbleBackend) fsys() FileSystem { return orOS(b.cfg.FS) }
