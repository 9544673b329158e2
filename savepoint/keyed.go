package savepoint

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/statelab/statelab/rescale"
)

// serializerInfo is what StateLab read of one TypeSerializerSnapshot: its
// class, the value type it stands for when StateLab can decode that type,
// and the snapshots nested in it (a list's element, a map's key and value).
type serializerInfo struct {
	class  string
	typ    string // String, Long, Integer, Boolean, Double, byte[], VoidNamespace, List, Map; "" when unknown
	nested []*serializerInfo
}

// compositeSnapshots are CompositeTypeSerializerSnapshot subclasses whose
// outer snapshot is empty: after the class name and version they write the
// outer magic number and version (internalWriteOuterSnapshot), then
// NestedSerializersSnapshotDelegate.writeNestedSerializerSnapshots: a magic
// number, a version, the count and each nested versioned snapshot.
var compositeSnapshots = map[string]string{
	"org.apache.flink.api.common.typeutils.base.ListSerializerSnapshot": "List",
	"org.apache.flink.api.common.typeutils.base.MapSerializerSnapshot":  "Map",
	"org.apache.flink.streaming.api.operators.TimerSerializerSnapshot":  "Timer",
}

// readSerializerSnapshot reads TypeSerializerSnapshotSerializationUtil's
// framing (the proxy's version) and then one versioned snapshot.
func readSerializerSnapshot(r *reader) (*serializerInfo, error) {
	if _, err := r.i32("serializer snapshot proxy version"); err != nil {
		return nil, err
	}
	return readVersionedSnapshot(r)
}

// readVersionedSnapshot reads TypeSerializerSnapshot.writeVersionedSnapshot:
// the snapshot class name, its version, then its content, which StateLab can
// step over only for the classes it knows.
func readVersionedSnapshot(r *reader) (*serializerInfo, error) {
	if err := r.enter("serializer snapshot"); err != nil {
		return nil, err
	}
	defer r.leave()
	class, err := r.utf("serializer snapshot class")
	if err != nil {
		return nil, err
	}
	if _, err := r.i32("serializer snapshot version"); err != nil {
		return nil, err
	}
	if typ, ok := simpleSnapshots[class]; ok {
		return &serializerInfo{class: class, typ: typ}, nil
	}
	typ, ok := compositeSnapshots[class]
	if !ok {
		return nil, because(ReasonSerializerFormat, "class", class)
	}
	for _, what := range []string{"outer magic number", "outer version", "nested magic number", "nested version"} {
		if _, err := r.i32(what); err != nil {
			return nil, err
		}
	}
	n, err := r.count("number of nested serializers", 6)
	if err != nil {
		return nil, err
	}
	si := &serializerInfo{class: class, typ: typ}
	for range n {
		c, err := readVersionedSnapshot(r)
		if err != nil {
			return nil, err
		}
		si.nested = append(si.nested, c)
	}
	return si, nil
}

// KeyedStateValues is one keyed state in one handle: its entries, and a
// sample of them decoded.
type KeyedStateValues struct {
	Name string `json:"name"`
	// StateType is the KEYED_STATE_TYPE option (VALUE, LIST, MAP, …) or, for
	// timers, PRIORITY_QUEUE.
	StateType       string       `json:"stateType"`
	KeySerializer   string       `json:"keySerializer,omitempty"`
	ValueSerializer string       `json:"valueSerializer,omitempty"`
	Entries         int          `json:"entries"`
	Samples         []KeyedEntry `json:"samples,omitempty"`
	NotDecoded      string       `json:"notDecoded,omitempty"`
	// NotDecodedReason is NotDecoded as a code the page translates.
	NotDecodedReason *Reason `json:"notDecodedReason,omitempty"`
}

// KeyedEntry is one decoded entry: its key group, key, map key (MapState)
// and value (a list for ListState).
type KeyedEntry struct {
	KeyGroup int `json:"keyGroup"`
	Key      any `json:"key"`
	// Namespace is a window state's window (TimeWindow: start and end).
	Namespace any `json:"namespace,omitempty"`
	UserKey   any `json:"userKey,omitempty"`
	Value     any `json:"value"`
}

// KeyedValues is what DecodeKeyedState found in one keyed handle.
type KeyedValues struct {
	States []KeyedStateValues `json:"states"`
	// KeyGroupChecked counts decoded keys whose key group StateLab computed
	// with Flink's assignment (rescale.KeyGroupFor*); KeyGroupMismatches those
	// whose computed group differs from the group Flink stored them under.
	KeyGroupChecked    int `json:"keyGroupChecked"`
	KeyGroupMismatches int `json:"keyGroupMismatches"`
	// Format names the layout read: a full snapshot's key/value pairs or a
	// heap checkpoint's state tables.
	Format     string `json:"format,omitempty"`
	NotDecoded string `json:"notDecoded,omitempty"`
	// NotDecodedReason is NotDecoded as a code the page translates.
	NotDecodedReason *Reason `json:"notDecodedReason,omitempty"`
	limit            int
}

// maxSamples bounds the decoded entries kept per state and handle.
const maxSamples = 20

// stateTypes is StateMetaInfoSnapshot.BackendStateType in ordinal order.
var stateTypes = []string{"KEY_VALUE", "OPERATOR", "BROADCAST", "PRIORITY_QUEUE"}

// DecodeKeyedState reads the keyed state of a full snapshot whose bytes are
// inline: KeyedBackendSerializationProxy (version, compression flag, key
// serializer snapshot, state meta infos), then, at each key group's offset,
// the key/value pairs FullSnapshotAsyncWriter writes — the format of
// canonical savepoints of both backends and of RocksDB full checkpoints: a
// short k/v-state id, then [key][value] byte arrays, the key's first bit
// marking that a new state id or END_OF_KEY_GROUP_MARK (0xFFFF) follows. Keys
// are RocksDB composite keys: the key group (1 byte up to 128 key groups, else
// 2), the serialized key, the serialized namespace. It never fails; what it
// cannot do it says in NotDecoded.
func DecodeKeyedState(h *KeyedHandle, maxParallelism int) *KeyedValues {
	return decodeKeyedState(h, maxParallelism, maxSamples)
}

// decodeKeyedState keeps up to limit decoded entries per state.
func decodeKeyedState(h *KeyedHandle, maxParallelism, limit int) *KeyedValues {
	out := &KeyedValues{States: []KeyedStateValues{}, limit: limit}
	switch {
	case h == nil || len(h.Offsets) == 0:
		out.NotDecoded, out.NotDecodedReason = notDecoded(reason(ReasonNoKeyGroupOffsets))
		return out
	case !h.Delegate.HasData():
		out.NotDecoded, out.NotDecodedReason = notDecoded(reason(ReasonOutsideMetadata, "kind", h.Delegate.Kind, "path", h.Delegate.Path))
		return out
	}
	data := h.Delegate.Data
	r := &reader{b: data}
	ver, err := r.i32("keyed state meta version")
	if err != nil {
		out.NotDecoded, out.NotDecodedReason = errNotDecoded(err)
		return out
	}
	if ver < 5 || ver > 6 {
		out.NotDecoded, out.NotDecodedReason = notDecoded(reason(ReasonKeyedMetaVer, "version", strconv.Itoa(int(ver))))
		return out
	}
	compressed, err := r.boolean("compression flag")
	if err != nil {
		out.NotDecoded, out.NotDecodedReason = errNotDecoded(err)
		return out
	}
	if compressed {
		out.NotDecoded, out.NotDecodedReason = notDecoded(reason(ReasonKeyedCompressed))
		return out
	}
	keySer, keyErr := readSerializerSnapshot(r)
	var metas []stateMeta
	metaErr := keyErr
	if keyErr == nil {
		n, err := r.u16("number of keyed states")
		metaErr = err
		for i := 0; err == nil && i < int(n); i++ {
			var m stateMeta
			if m, err = readStateMeta(r); err != nil {
				metaErr = err
				break
			}
			metas = append(metas, m)
		}
	}
	if keyErr != nil {
		out.NotDecoded, out.NotDecodedReason = withText("the key serializer: "+keyErr.Error(), wrap(keyErr, ReasonKeySerializer))
	}
	// States are numbered in the order of their meta infos (the k/v-state id).
	for _, m := range metas {
		st := KeyedStateValues{Name: m.name, StateType: m.options["KEYED_STATE_TYPE"]}
		if st.StateType == "" && int(m.stateType) < len(stateTypes) && m.stateType >= 0 {
			st.StateType = stateTypes[m.stateType]
		}
		if keySer != nil {
			st.KeySerializer = keySer.class
		}
		if v := m.serializers["VALUE_SERIALIZER"]; v != nil {
			st.ValueSerializer = v.class
		}
		out.States = append(out.States, st)
	}
	if metaErr != nil && out.NotDecoded == "" {
		out.NotDecoded, out.NotDecodedReason = withText("states after the ones listed: "+metaErr.Error(), wrap(metaErr, ReasonStatesAfter))
	}
	// A heap backend's checkpoint (HeapSnapshotStrategy) starts each key
	// group with its id as an int; a full snapshot starts with a short state
	// id and an int key length, so the int there is never a key group > 0.
	heap := false
	for i, off := range h.Offsets {
		kg := h.Range.Start + i
		if kg > 0 && off > 0 && off+4 <= int64(len(data)) && int(binary.BigEndian.Uint32(data[off:])) == kg {
			heap = true
			break
		}
	}
	out.Format = "full snapshot (FullSnapshotAsyncWriter)"
	if heap {
		out.Format = "heap checkpoint (HeapSnapshotStrategy)"
	}
	prefix := 1
	if maxParallelism > 128 {
		prefix = 2
	}
	sizes := h.KeyGroupBytes()
	for i, off := range h.Offsets {
		if off <= 0 {
			continue
		}
		kg := h.Range.Start + i
		if off >= int64(len(data)) {
			out.NotDecoded, out.NotDecodedReason = notDecoded(reason(ReasonOffsetBeyond, "keyGroup", strconv.Itoa(kg), "offset", strconv.FormatInt(off, 10), "bytes", strconv.Itoa(len(data))))
			return out
		}
		r := &reader{b: data, pos: int(off)}
		var err error
		if heap {
			r.b = data[:off+sizes[i]]
			err = out.readHeapKeyGroup(r, kg, keySer, metas, maxParallelism)
		} else {
			err = out.readKeyGroup(r, kg, prefix, keySer, metas, maxParallelism)
		}
		if err != nil {
			out.NotDecoded, out.NotDecodedReason = withText(fmt.Sprintf("key group %d: %v", kg, err), wrap(err, ReasonKeyGroup, "keyGroup", strconv.Itoa(kg)))
			return out
		}
	}
	return out
}

func (out *KeyedValues) readKeyGroup(r *reader, kg, prefix int, keySer *serializerInfo, metas []stateMeta, maxParallelism int) error {
	id, err := r.u16("k/v-state id")
	if err != nil {
		return err
	}
	for pairs := 0; ; pairs++ {
		if int(id) >= len(out.States) {
			return fmt.Errorf("k/v-state id %d, but %d states are known", id, len(out.States))
		}
		kn, err := r.count("key length", 1)
		if err != nil {
			return err
		}
		if kn == 0 {
			return failed(ErrCorrupt, reason(ReasonEmptyKey), "an empty key (a key holds at least its key-group prefix)")
		}
		key, err := r.bytes(kn, "key")
		if err != nil {
			return err
		}
		vn, err := r.count("value length", 0)
		if err != nil {
			return err
		}
		val, err := r.bytes(vn, "value")
		if err != nil {
			return err
		}
		st := &out.States[id]
		st.Entries++
		if len(st.Samples) < out.limit && st.NotDecoded == "" {
			e, err := decodeEntry(key, val, kg, prefix, keySer, metas[id])
			if err != nil {
				st.NotDecoded, st.NotDecodedReason = errNotDecoded(err)
			} else {
				st.Samples = append(st.Samples, e)
				out.checkKeyGroup(e.Key, keySer, kg, maxParallelism)
			}
		}
		if key[0]&0x80 == 0 {
			continue
		}
		next, err := r.u16("k/v-state id or end of key group")
		if err != nil {
			return err
		}
		if next == 0xFFFF {
			return nil
		}
		id = next
	}
}

// checkKeyGroup recomputes a decoded key's key group with Flink's
// assignment (Java hashCode, murmur hash, modulo max parallelism).
func (out *KeyedValues) checkKeyGroup(key any, keySer *serializerInfo, kg, maxParallelism int) {
	var g int
	switch k := key.(type) {
	case string:
		g = rescale.KeyGroupForString(k, maxParallelism)
	case int32:
		g = rescale.KeyGroupForInt(k, maxParallelism)
	case int64:
		g = rescale.KeyGroupForLong(k, maxParallelism)
	default:
		return
	}
	out.KeyGroupChecked++
	if g != kg {
		out.KeyGroupMismatches++
	}
}

// decodeEntry splits a composite key into key group, key and namespace (and
// a MapState's user key), and decodes the value by the state's type.
func decodeEntry(key, val []byte, kg, prefix int, keySer *serializerInfo, m stateMeta) (KeyedEntry, error) {
	e := KeyedEntry{KeyGroup: kg}
	if keySer == nil || keySer.typ == "" {
		return e, because(ReasonKeySerUnknown)
	}
	k := append([]byte(nil), key...)
	k[0] &^= 0x80 // the meta-data-follows flag
	r := &reader{b: k}
	stored := 0
	for range prefix {
		b, err := r.u8("key-group prefix")
		if err != nil {
			return e, err
		}
		stored = stored<<8 | int(b)
	}
	if stored != kg {
		return e, fmt.Errorf("a key stored under key group %d is prefixed with key group %d", kg, stored)
	}
	var err error
	if vs := m.serializers["VALUE_SERIALIZER"]; vs != nil && vs.typ == "Timer" {
		// A timer is all key: the timer as TimerSerializer writes it, no value.
		if err := readTimer(r, vs, &e); err != nil {
			return e, fmt.Errorf("timer state %q: %w", m.name, err)
		}
		if r.remaining() != 0 || len(val) != 0 {
			return e, fmt.Errorf("timer state %q: %d key bytes and %d value bytes left", m.name, r.remaining(), len(val))
		}
		return e, nil
	}
	if e.Key, err = readTyped(r, keySer.typ, keySer.class); err != nil {
		return e, fmt.Errorf("key: %w", err)
	}
	if e.Namespace, err = readNamespace(r, m); err != nil {
		return e, err
	}
	vs := m.serializers["VALUE_SERIALIZER"]
	if vs == nil {
		return e, fmt.Errorf("state %q has no value serializer", m.name)
	}
	switch vs.typ {
	case "List":
		if r.remaining() != 0 || len(vs.nested) != 1 {
			return e, fmt.Errorf("list state %q: unexpected key bytes", m.name)
		}
		// RocksDB's list format (ListDelimitedSerializer): elements separated by ','.
		el := vs.nested[0]
		vr := &reader{b: val}
		var items []any
		for vr.remaining() > 0 {
			v, err := readTyped(vr, el.typ, el.class)
			if err != nil {
				return e, fmt.Errorf("list state %q: %w", m.name, err)
			}
			items = append(items, v)
			if vr.remaining() > 0 {
				if d, _ := vr.u8("delimiter"); d != ',' {
					return e, fmt.Errorf("list state %q: delimiter 0x%02x, not ','", m.name, d)
				}
			}
		}
		e.Value = items
	case "Map":
		if len(vs.nested) != 2 {
			return e, fmt.Errorf("map state %q: unexpected serializer", m.name)
		}
		if e.UserKey, err = readTyped(r, vs.nested[0].typ, vs.nested[0].class); err != nil {
			return e, fmt.Errorf("map state %q user key: %w", m.name, err)
		}
		// RocksDBMapState: a null flag, then the value.
		vr := &reader{b: val}
		isNull, err := vr.boolean("null flag")
		if err != nil {
			return e, err
		}
		if !isNull {
			if e.Value, err = readTyped(vr, vs.nested[1].typ, vs.nested[1].class); err != nil {
				return e, fmt.Errorf("map state %q value: %w", m.name, err)
			}
		}
		if vr.remaining() != 0 {
			return e, fmt.Errorf("map state %q: %d value bytes left", m.name, vr.remaining())
		}
	default:
		if vs.typ == "" || vs.typ == "Timer" || vs.typ == "VoidNamespace" {
			return e, because(ReasonValuesNotDecoded, "state", m.name, "serializer", vs.class)
		}
		if _, e.Value, err = decodeValue(val, vs.typ, vs.class, true); err != nil {
			return e, fmt.Errorf("state %q: %w", m.name, err)
		}
	}
	if r.remaining() != 0 {
		return e, fmt.Errorf("state %q: %d key bytes left after the namespace", m.name, r.remaining())
	}
	return e, nil
}

// readHeapKeyGroup reads one key group of a heap backend's checkpoint
// (HeapSnapshotStrategy): the key group's id as an int, then per state its
// short id and the state map snapshot (CopyOnWriteStateMapSnapshot.writeState:
// the entry count, then per entry namespace, key and state, each with its
// serializer — a list as ListSerializer writes it, a map as MapSerializer).
// A timer queue (priority queue state, KeyGroupPartitioner's count then
// elements) is read when its key and namespace are ones StateLab reads.
func (out *KeyedValues) readHeapKeyGroup(r *reader, kg int, keySer *serializerInfo, metas []stateMeta, maxParallelism int) error {
	id, err := r.i32("key group id")
	if err != nil {
		return err
	}
	if int(id) != kg {
		return fmt.Errorf("starts with key group %d", id)
	}
	for r.remaining() > 0 {
		sid, err := r.u16("state id")
		if err != nil {
			return err
		}
		if int(sid) >= len(out.States) {
			return fmt.Errorf("state id %d, but %d states are known", sid, len(out.States))
		}
		st := &out.States[sid]
		m := metas[sid]
		vs, ns := m.serializers["VALUE_SERIALIZER"], m.serializers["NAMESPACE_SERIALIZER"]
		n, err := r.count("number of entries", 1)
		if err != nil {
			return err
		}
		if n == 0 {
			continue // an empty state map or timer queue in this key group
		}
		if vs != nil && vs.typ == "Timer" && timerReadable(vs) {
			for range n {
				e := KeyedEntry{KeyGroup: kg}
				if err := readTimer(r, vs, &e); err != nil {
					return fmt.Errorf("timer state %q: %w", m.name, err)
				}
				st.Entries++
				if len(st.Samples) < out.limit {
					st.Samples = append(st.Samples, e)
					out.checkKeyGroup(e.Key, keySer, kg, maxParallelism)
				}
			}
			continue
		}
		if keySer == nil || keySer.typ == "" || vs == nil || ns == nil || (ns.typ != "VoidNamespace" && ns.typ != "TimeWindow") || vs.typ == "" || vs.typ == "Timer" {
			if st.NotDecoded == "" {
				st.NotDecoded, st.NotDecodedReason = notDecoded(reason(ReasonSerializersUnknown))
			}
			st.Entries += n
			return nil
		}
		for range n {
			e := KeyedEntry{KeyGroup: kg}
			if e.Namespace, err = readNamespace(r, m); err != nil {
				return err
			}
			if e.Key, err = readTyped(r, keySer.typ, keySer.class); err != nil {
				return fmt.Errorf("state %q key: %w", m.name, err)
			}
			if e.Value, err = readHeapValue(r, vs); err != nil {
				return fmt.Errorf("state %q: %w", m.name, err)
			}
			st.Entries++
			if len(st.Samples) < out.limit {
				st.Samples = append(st.Samples, e)
				out.checkKeyGroup(e.Key, keySer, kg, maxParallelism)
			}
		}
	}
	return nil
}

// readHeapValue reads a state value as its serializer writes it: simple
// values as they are, ListSerializer as a count and the elements,
// MapSerializer as a count and per entry key, null flag and value.
func readHeapValue(r *reader, vs *serializerInfo) (any, error) {
	switch vs.typ {
	case "List":
		if len(vs.nested) != 1 {
			return nil, fmt.Errorf("list serializer without an element serializer")
		}
		n, err := r.count("list size", 1)
		if err != nil {
			return nil, err
		}
		items := make([]any, 0, n)
		for range n {
			v, err := readTyped(r, vs.nested[0].typ, vs.nested[0].class)
			if err != nil {
				return nil, err
			}
			items = append(items, v)
		}
		return items, nil
	case "Map":
		if len(vs.nested) != 2 {
			return nil, fmt.Errorf("map serializer without key and value serializers")
		}
		n, err := r.count("map size", 2)
		if err != nil {
			return nil, err
		}
		entries := make([][2]any, 0, n)
		for range n {
			k, err := readTyped(r, vs.nested[0].typ, vs.nested[0].class)
			if err != nil {
				return nil, err
			}
			isNull, err := r.boolean("null flag")
			if err != nil {
				return nil, err
			}
			var v any
			if !isNull {
				if v, err = readTyped(r, vs.nested[1].typ, vs.nested[1].class); err != nil {
					return nil, err
				}
			}
			entries = append(entries, [2]any{k, v})
		}
		return entries, nil
	}
	return readTyped(r, vs.typ, vs.class)
}

// readNamespace reads a state's namespace: VoidNamespace's one byte (nil), or
// a TimeWindow (start and end).
func readNamespace(r *reader, m stateMeta) (any, error) {
	ns := m.serializers["NAMESPACE_SERIALIZER"]
	switch {
	case ns != nil && ns.typ == "VoidNamespace":
		_, err := r.u8("namespace")
		return nil, err
	case ns != nil && ns.typ == "TimeWindow":
		return readTyped(r, ns.typ, ns.class)
	}
	class := "none"
	if ns != nil {
		class = ns.class
	}
	return nil, because(ReasonNamespaceUnknown, "state", m.name, "serializer", class)
}

// timerReadable reports whether a TimerSerializer's key and namespace
// serializers are ones StateLab reads.
func timerReadable(vs *serializerInfo) bool {
	if len(vs.nested) != 2 || vs.nested[0].typ == "" {
		return false
	}
	switch vs.nested[1].typ {
	case "VoidNamespace", "TimeWindow":
		return true
	}
	return false
}

// readTimer reads one timer as TimerSerializer writes it: the timestamp with
// its sign bit flipped (so timers sort by time as bytes), the key, the
// namespace (a window's timer fires at its end - 1).
func readTimer(r *reader, vs *serializerInfo, e *KeyedEntry) error {
	if !timerReadable(vs) {
		return because(ReasonTimerUnreadable)
	}
	ts, err := r.i64("timer timestamp")
	if err != nil {
		return err
	}
	if e.Key, err = readTyped(r, vs.nested[0].typ, vs.nested[0].class); err != nil {
		return err
	}
	if vs.nested[1].typ == "VoidNamespace" {
		_, err = r.u8("namespace")
	} else {
		e.Namespace, err = readTyped(r, vs.nested[1].typ, vs.nested[1].class)
	}
	e.Value = map[string]int64{"timestamp": ts ^ -1<<63}
	return err
}
