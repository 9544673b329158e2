package state

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unsafe"

	"github.com/statelab/statelab/rescale"
)

// heapBackend keeps keyed state in Go maps, one set per key group, like
// Flink's HashMapStateBackend (which keeps a StateTable per key group so that
// a snapshot can write key groups one by one). Values are stored serialized.
type heapBackend struct {
	cfg    KeyedBackendConfig
	states []StateInfo // by id
	byName map[string]stateID
	render []entryRenderer // by id; zero until registered
	kgs    []heapKeyGroup
	// vals[id][kgi] is the values map of state id in key-group index kgi
	// (nil until used): what a value lookup needs, two pointer hops fewer
	// than through kgs and the table.
	vals [][]map[string][]byte

	// key is the current key. SetCurrentKey copies the caller's bytes into
	// keyBuf and key views them, so a key stored in a table is cloned
	// (storedKey); SetCurrentKeyString takes an immutable string, which a
	// table keeps as it is, as Flink's HashMapStateBackend keeps the
	// record's key object: a later record carrying the same string object
	// is then found without comparing its bytes.
	key       string
	keyBuf    []byte
	keyStable bool
	kg        int // -1: unset
	kgi       int // kg - range start
	closed    bool

	// A get followed by a put of the same state for the same key is the
	// common case (read, modify, write); the value found by get is kept so
	// that a put of the same length overwrites it in place without a second
	// map lookup. Any other call, or a new current key, invalidates it.
	cacheID    stateID
	cacheVal   []byte
	cacheValid bool

	// ttlCursors is where the incremental TTL cleanup of each state stands.
	ttlCursors map[stateID]*heapTTLCursor

	metrics BackendMetrics
}

type heapKeyGroup struct {
	tables []*heapTable // by state id; nil until used
}

type heapTable struct {
	values map[string][]byte            // value, list and reducing state
	maps   map[string]map[string][]byte // map state: key -> user key -> value

	// Snapshots write keys in byte order, so that a snapshot is the same
	// bytes on every run and on both backends. Sorting every key at every
	// checkpoint would dominate its cost, so the order is kept: sorted holds
	// the keys as of the last snapshot (some may since have been removed),
	// added the keys inserted after it; the next snapshot merges them.
	sorted []string
	added  []string
}

// insertKey stores a new key's string once, for the map and for the order.
func (t *heapTable) insertKey(k string) string {
	t.added = append(t.added, k)
	return k
}

// orderedKeys returns the table's keys in byte order.
func (t *heapTable) orderedKeys() []string {
	n := len(t.values) + len(t.maps)
	if len(t.added) == 0 && len(t.sorted) == n {
		return t.sorted
	}
	has := func(k string) bool {
		if t.maps != nil {
			_, ok := t.maps[k]
			return ok
		}
		_, ok := t.values[k]
		return ok
	}
	slices.Sort(t.added)
	merged := make([]string, 0, n)
	i, j := 0, 0
	for i < len(t.sorted) || j < len(t.added) {
		var k string
		if j == len(t.added) || (i < len(t.sorted) && t.sorted[i] <= t.added[j]) {
			k = t.sorted[i]
			i++
		} else {
			k = t.added[j]
			j++
		}
		// A key removed and inserted again appears twice; a removed one not at all.
		if (len(merged) == 0 || merged[len(merged)-1] != k) && has(k) {
			merged = append(merged, k)
		}
	}
	t.sorted, t.added = merged, nil
	return merged
}

var _ rawBackend = (*heapBackend)(nil)

func newHeapBackend(cfg KeyedBackendConfig) *heapBackend {
	return &heapBackend{cfg: cfg, byName: map[string]stateID{}, kgs: make([]heapKeyGroup, cfg.KeyGroupRange.Len()), kg: -1,
		metrics: BackendMetrics{Kind: cfg.Kind, KeyGroupRange: cfg.KeyGroupRange}}
}

func (b *heapBackend) Kind() BackendKind                    { return b.cfg.Kind }
func (b *heapBackend) MaxParallelism() int                  { return b.cfg.MaxParallelism }
func (b *heapBackend) KeyGroupRange() rescale.KeyGroupRange { return b.cfg.KeyGroupRange }

func (b *heapBackend) SetCurrentKey(key []byte, keyGroup int) error {
	if b.closed {
		return ErrClosed
	}
	if !b.cfg.KeyGroupRange.Contains(keyGroup) {
		return fmt.Errorf("%w: key group %d, backend owns %v", ErrKeyGroupOutOfRange, keyGroup, b.cfg.KeyGroupRange)
	}
	b.keyBuf = append(b.keyBuf[:0], key...)
	b.key, b.keyStable = blockString(b.keyBuf), false
	b.kg, b.kgi = keyGroup, keyGroup-b.cfg.KeyGroupRange.Start
	b.cacheValid = false
	return nil
}

// SetCurrentKeyString is SetCurrentKey for a key whose bytes are the
// string's: the backend keeps the string itself, without a copy.
func (b *heapBackend) SetCurrentKeyString(key string, keyGroup int) error {
	if b.closed {
		return ErrClosed
	}
	if !b.cfg.KeyGroupRange.Contains(keyGroup) {
		return fmt.Errorf("%w: key group %d, backend owns %v", ErrKeyGroupOutOfRange, keyGroup, b.cfg.KeyGroupRange)
	}
	b.key, b.keyStable = key, true
	b.kg, b.kgi = keyGroup, keyGroup-b.cfg.KeyGroupRange.Start
	b.cacheValid = false
	return nil
}

// storedKey is the current key as a table may keep it: a clone unless the
// key came as an immutable string.
func (b *heapBackend) storedKey() string {
	if b.keyStable {
		return b.key
	}
	return strings.Clone(b.key)
}

func (b *heapBackend) CurrentKey() ([]byte, int) {
	if b.kg < 0 {
		return nil, -1
	}
	return stringBytes(b.key), b.kg
}

// registerWithTTL is registerInfo for a state registered by a handle: it
// also records whether the state has a TTL, and refuses a change of that
// against a restored (or earlier) registration.
func registerWithTTL(states *[]StateInfo, byName map[string]stateID, name string, kind StateKind, ttl bool) (stateID, error) {
	_, existed := byName[name]
	id, err := registerInfo(states, byName, name, kind)
	if err != nil {
		return 0, err
	}
	if err := checkTTL(&(*states)[id], existed, ttl); err != nil {
		return 0, err
	}
	return id, nil
}

// registerRestored registers a state read back from a snapshot, with its TTL flag.
func registerRestored(states *[]StateInfo, byName map[string]stateID, st StateInfo) (stateID, error) {
	id, err := registerInfo(states, byName, st.Name, st.Kind)
	if err == nil {
		(*states)[id].TTL = st.TTL
	}
	return id, err
}

// registerHandleStates registers every state the handles list, in their
// order, before any entry is read (as Flink restores every state's meta
// info first): a state's id then does not depend on which key group holds
// its first entry, so a copy of a backend (clone.go) has the original's ids.
func registerHandleStates(states *[]StateInfo, byName map[string]stateID, handles []*KeyedStateHandle) error {
	for _, h := range handles {
		if h == nil {
			continue
		}
		for _, s := range h.States {
			if _, err := registerRestored(states, byName, s); err != nil {
				return fmt.Errorf("%w: checkpoint %d", err, h.CheckpointID)
			}
		}
	}
	return nil
}

// registerInfo gives name an id (or finds it), checking the kind.
func registerInfo(states *[]StateInfo, byName map[string]stateID, name string, kind StateKind) (stateID, error) {
	if name == "" {
		return 0, fmt.Errorf("state: a state needs a name")
	}
	if id, ok := byName[name]; ok {
		if k := (*states)[id].Kind; k != kind {
			return 0, fmt.Errorf("%w: %q is %s state, asked for %s", ErrStateKind, name, k, kind)
		}
		return id, nil
	}
	if len(*states) > 0xFFFF {
		return 0, fmt.Errorf("state: too many states (at most 65536)")
	}
	id := stateID(len(*states))
	*states = append(*states, StateInfo{Name: name, Kind: kind, ID: id})
	byName[name] = id
	return id, nil
}

func (b *heapBackend) register(name string, kind StateKind, r entryRenderer) (stateID, error) {
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

func (b *heapBackend) States() []StateInfo { return slices.Clone(b.states) }

// table returns the current key group's table for id, creating it if asked.
func (b *heapBackend) table(id stateID, create bool) (*heapTable, error) {
	if b.closed {
		return nil, ErrClosed
	}
	if b.kg < 0 {
		return nil, ErrNoCurrentKey
	}
	return b.tableAt(b.kgi, id, create), nil
}

func (b *heapBackend) tableAt(kgi int, id stateID, create bool) *heapTable {
	g := &b.kgs[kgi]
	if int(id) < len(g.tables) && g.tables[id] != nil {
		return g.tables[id]
	}
	if !create {
		return nil
	}
	for len(g.tables) <= int(id) {
		g.tables = append(g.tables, nil)
	}
	t := &heapTable{}
	if b.states[id].Kind == KindMap {
		t.maps = map[string]map[string][]byte{}
	} else {
		t.values = map[string][]byte{}
		for len(b.vals) <= int(id) {
			b.vals = append(b.vals, nil)
		}
		if b.vals[id] == nil {
			b.vals[id] = make([]map[string][]byte, len(b.kgs))
		}
		b.vals[id][kgi] = t.values
	}
	g.tables[id] = t
	return t
}

func (b *heapBackend) get(id stateID, userKey []byte) ([]byte, bool, error) {
	if userKey == nil && b.kg >= 0 && int(id) < len(b.vals) && b.vals[id] != nil && !b.closed {
		if m := b.vals[id][b.kgi]; m != nil {
			v, ok := m[b.key]
			b.cacheID, b.cacheVal, b.cacheValid = id, v, ok
			return v, ok, nil
		}
	}
	t, err := b.table(id, false)
	if err != nil || t == nil {
		b.cacheValid = false
		return nil, false, err
	}
	if userKey != nil {
		v, ok := t.maps[b.key][string(userKey)]
		return v, ok, nil
	}
	v, ok := t.values[b.key]
	b.cacheID, b.cacheVal, b.cacheValid = id, v, ok
	return v, ok, nil
}

func (b *heapBackend) put(id stateID, userKey, value []byte) error {
	if userKey == nil && b.cacheValid && b.cacheID == id && len(b.cacheVal) == len(value) {
		copy(b.cacheVal, value)
		return nil
	}
	t, err := b.table(id, true)
	if err != nil {
		return err
	}
	if userKey != nil {
		m := t.maps[b.key]
		if m == nil {
			m = map[string][]byte{}
			t.maps[t.insertKey(b.storedKey())] = m
		}
		m[string(userKey)] = bytes.Clone(value)
		return nil
	}
	// A map assignment stores its key too, so an assignment passes a key
	// the table may keep (storedKey), never b.key while it views keyBuf.
	old, ok := t.values[b.key]
	v := append(old[:0], value...)
	if ok {
		if len(old) != len(v) || cap(old) != cap(v) {
			t.values[b.storedKey()] = v
		}
	} else {
		t.values[t.insertKey(b.storedKey())] = v
	}
	b.cacheID, b.cacheVal, b.cacheValid = id, v, true
	return nil
}

func (b *heapBackend) appendValue(id stateID, value []byte) error {
	t, err := b.table(id, true)
	if err != nil {
		return err
	}
	b.cacheValid = false
	old, ok := t.values[b.key]
	if ok {
		t.values[b.storedKey()] = append(old, value...)
	} else {
		t.values[t.insertKey(b.storedKey())] = append([]byte{}, value...)
	}
	return nil
}

func (b *heapBackend) remove(id stateID, userKey []byte) error {
	t, err := b.table(id, false)
	b.cacheValid = false
	if err != nil || t == nil {
		return err
	}
	if userKey == nil {
		delete(t.values, b.key)
		return nil
	}
	if m := t.maps[b.key]; m != nil {
		delete(m, string(userKey))
		if len(m) == 0 {
			delete(t.maps, b.key)
		}
	}
	return nil
}

func (b *heapBackend) iterate(id stateID, fn func(userKey, value []byte) bool) error {
	t, err := b.table(id, false)
	if err != nil || t == nil {
		return err
	}
	m := t.maps[b.key]
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !fn(stringBytes(k), m[k]) {
			break
		}
	}
	return nil
}

func (b *heapBackend) clear(id stateID) error {
	t, err := b.table(id, false)
	b.cacheValid = false
	if err != nil || t == nil {
		return err
	}
	if t.maps != nil {
		delete(t.maps, b.key)
	} else {
		delete(t.values, b.key)
	}
	return nil
}

// stringBytes views a map key as bytes without copying; callers only read.
func stringBytes(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// blockString and blockValue take keys and values of a restored snapshot
// straight from the block buffer readFull allocated for them, which nothing
// else holds or reuses: one allocation per key group instead of two per
// entry. A key's bytes are never written again; a value is capped at its
// length, so growing it copies instead of running into the next entry, and
// an in-place update of the same length writes only its own bytes.
func blockString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func blockValue(b []byte) []byte { return b[:len(b):len(b)] }

// forEach visits the entries of key-group index kgi in snapshot order (state
// id, key, user key). fn's slices must not be retained.
func (b *heapBackend) forEach(kgi int, fn func(id stateID, key, userKey, value []byte) error) error {
	g := &b.kgs[kgi]
	for id, t := range g.tables {
		if t == nil {
			continue
		}
		if t.maps != nil {
			for _, k := range t.orderedKeys() {
				m := t.maps[k]
				for _, uk := range slices.Sorted(maps.Keys(m)) {
					if err := fn(stateID(id), stringBytes(k), stringBytes(uk), m[uk]); err != nil {
						return err
					}
				}
			}
			continue
		}
		for _, k := range t.orderedKeys() {
			if err := fn(stateID(id), stringBytes(k), nil, t.values[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *heapBackend) Entries(r rescale.KeyGroupRange, limit int) ([]Entry, error) {
	if b.closed {
		return nil, ErrClosed
	}
	x := r.Intersection(b.cfg.KeyGroupRange)
	out := []Entry{}
	stop := fmt.Errorf("limit")
	for g := x.Start; g <= x.End; g++ {
		err := b.forEach(g-b.cfg.KeyGroupRange.Start, func(id stateID, key, userKey, value []byte) error {
			if limit > 0 && len(out) >= limit {
				return stop
			}
			out = append(out, renderEntry(b.states[id], b.rendererOf(id), b.cfg.KeyRenderer, g, key, userKey, value))
			return nil
		})
		if err == stop {
			break
		}
	}
	return out, nil
}

func (b *heapBackend) rendererOf(id stateID) entryRenderer {
	if int(id) < len(b.render) {
		return b.render[id]
	}
	return entryRenderer{}
}

// renderEntry renders one entry for the inspector; a state restored but not
// registered again has no renderer and is shown with RenderBytes.
func renderEntry(st StateInfo, r entryRenderer, kr func([]byte) string, g int, key, userKey, value []byte) Entry {
	e := Entry{State: st.Name, Kind: st.Kind, KeyGroup: g, Key: kr(key)}
	if r.ttl != nil {
		e.Value, e.LastAccess, e.Expired = r.ttl.render(r.value, value, r.ttl.cfg.Clock.NowMillis())
	} else {
		e.Value = orRaw(r.value)(value)
	}
	if userKey != nil {
		e.UserKey = orRaw(r.userKey)(userKey)
	}
	return e
}

func orRaw(r renderer) renderer {
	if r == nil {
		return RenderBytes
	}
	return r
}

func (b *heapBackend) KeyGroupMetrics() ([]KeyGroupMetrics, error) {
	if b.closed {
		return nil, ErrClosed
	}
	out := make([]KeyGroupMetrics, len(b.kgs))
	for i := range b.kgs {
		out[i].KeyGroup = b.cfg.KeyGroupRange.Start + i
		for _, t := range b.kgs[i].tables {
			if t == nil {
				continue
			}
			for k, v := range t.values {
				out[i].Keys++
				out[i].Bytes += int64(len(k) + len(v))
			}
			for k, m := range t.maps {
				out[i].Keys++
				for uk, v := range m {
					out[i].Bytes += int64(len(k) + len(uk) + len(v))
				}
			}
		}
	}
	return out, nil
}

func (b *heapBackend) Metrics() (BackendMetrics, error) {
	kgm, err := b.KeyGroupMetrics()
	if err != nil {
		return BackendMetrics{}, err
	}
	m := b.metrics
	m.Keys, m.Bytes = 0, 0
	for _, g := range kgm {
		m.Keys += g.Keys
		m.Bytes += g.Bytes
	}
	return m, nil
}

// StartSnapshot serializes the whole state at once (Flink's heap backend
// copies on write and serializes asynchronously; at StateLab's sizes a
// synchronous write is simpler and as consistent), so Finish only returns
// the handle.
func (b *heapBackend) StartSnapshot(target SnapshotTarget, storage CheckpointStorage) (AsyncSnapshot, error) {
	h, err := b.Snapshot(target, storage)
	if err != nil {
		return nil, err
	}
	return &doneSnapshot{h: h}, nil
}

func (b *heapBackend) Snapshot(target SnapshotTarget, storage CheckpointStorage) (*KeyedStateHandle, error) {
	if b.closed {
		return nil, ErrClosed
	}
	fw, err := storage.CreateFile(target, Exclusive, snapshotFileName(b.cfg.Name, b.cfg.KeyGroupRange))
	if err != nil {
		return nil, fmt.Errorf("snapshot checkpoint %d: %w", target.CheckpointID, err)
	}
	w, err := newFullWriter(fw, b.cfg.MaxParallelism, b.cfg.KeyGroupRange, b.States())
	if err == nil {
		emit := w.entry
		if !target.Copy {
			emit = newSnapshotFilter(b.render).filtered(w.entry)
		}
		for i := range b.kgs {
			if err = w.beginKeyGroup(b.cfg.KeyGroupRange.Start + i); err != nil {
				break
			}
			if err = b.forEach(i, emit); err != nil {
				break
			}
		}
	}
	var ref FileRef
	var offsets []int64
	if err == nil {
		ref, offsets, err = w.finish()
	}
	if err != nil {
		fw.Abort()
		return nil, fmt.Errorf("snapshot checkpoint %d: %w", target.CheckpointID, err)
	}
	h := &KeyedStateHandle{Backend: b.cfg.Kind, Format: FormatFull, CheckpointID: target.CheckpointID,
		MaxParallelism: b.cfg.MaxParallelism, KeyGroupRange: b.cfg.KeyGroupRange, States: b.States(),
		File: &ref, Offsets: offsets, StateSize: ref.Size, CheckpointedSize: ref.Size}
	b.metrics.LastCheckpointID = target.CheckpointID
	b.metrics.LastCheckpointSize, b.metrics.LastCheckpointUploaded = ref.Size, ref.Size
	b.metrics.LastCheckpointIncremental = false
	return h, nil
}

func (b *heapBackend) NotifyCheckpointComplete(int64) {}
func (b *heapBackend) NotifyCheckpointAborted(int64)  {}

func (b *heapBackend) Close() error {
	b.closed = true
	b.kgs, b.vals = nil, nil
	return nil
}

// restoreHeapBackend reads the handles' key groups that fall in the new range.
func restoreHeapBackend(cfg KeyedBackendConfig, storage CheckpointStorage, handles []*KeyedStateHandle) (KeyedBackend, error) {
	if err := checkHandles(cfg, handles); err != nil {
		return nil, err
	}
	b := newHeapBackend(cfg)
	if err := registerHandleStates(&b.states, b.byName, handles); err != nil {
		return nil, err
	}
	var read int64
	for _, h := range handles {
		if h == nil {
			continue
		}
		n, err := readFull(storage, h, cfg.KeyGroupRange, func(e *fullEntry) error {
			id, err := registerRestored(&b.states, b.byName, e.state)
			if err != nil {
				return fmt.Errorf("%w: checkpoint %d", err, h.CheckpointID)
			}
			t := b.tableAt(e.keyGroup-cfg.KeyGroupRange.Start, id, true)
			if e.userKey != nil {
				m := t.maps[string(e.key)]
				if m == nil {
					m = map[string][]byte{}
					t.maps[t.insertKey(blockString(e.key))] = m
				}
				m[blockString(e.userKey)] = blockValue(e.value)
				return nil
			}
			t.values[t.insertKey(blockString(e.key))] = blockValue(e.value)
			return nil
		})
		read += n
		if err != nil {
			return nil, fmt.Errorf("restore key groups %v: %w", cfg.KeyGroupRange, err)
		}
	}
	b.metrics.RestoreBytesRead = read
	return b, nil
}

// scanState visits every entry of state id, key group by key group, in
// snapshot order.
func (b *heapBackend) scanState(id stateID, fn func(kg int, key, userKey, value []byte) error) error {
	if b.closed {
		return ErrClosed
	}
	for i := range b.kgs {
		t := b.tableAt(i, id, false)
		if t == nil {
			continue
		}
		g := b.cfg.KeyGroupRange.Start + i
		if t.maps != nil {
			for _, k := range t.orderedKeys() {
				m := t.maps[k]
				for _, uk := range slices.Sorted(maps.Keys(m)) {
					if err := fn(g, stringBytes(k), stringBytes(uk), m[uk]); err != nil {
						return err
					}
				}
			}
			continue
		}
		for _, k := range t.orderedKeys() {
			if err := fn(g, stringBytes(k), nil, t.values[k]); err != nil {
				return err
			}
		}
	}
	return nil
}
