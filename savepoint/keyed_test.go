package savepoint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/statelab/statelab/rescale"
)

// stringValue writes s as Flink's StringValue.writeString does: length+1 and
// each UTF-16 unit as 7-bit variable-length ints (ASCII here: one byte each).
func stringValue(s string) []byte {
	b := []byte{byte(len(s) + 1)}
	return append(b, s...)
}

func snapshot(x *w, class string) *w { return x.utf(class).i32(1) }

const (
	stringSnap = "org.apache.flink.api.common.typeutils.base.StringSerializer$StringSerializerSnapshot"
	longSnap   = "org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot"
	voidSnap   = "org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot"
	listSnap   = "org.apache.flink.api.common.typeutils.base.ListSerializerSnapshot"
)

// canonicalKeyGroups writes, as FullSnapshotAsyncWriter and
// KeyedBackendSerializationProxy do, a keyed stream with a ValueState<Long>
// "count" and a ListState<String> "seen" under String keys, max parallelism
// 128 (one key-group prefix byte). It returns the bytes and each written key
// group's offset.
func canonicalKeyGroups(entries map[int][]string, wrongGroup map[string]int) ([]byte, map[int]int64) {
	x := newW().i32(6).u8(0)
	snapshot(x.i32(2), stringSnap) // key serializer
	x.raw([]byte{0, 2})            // two states
	x.utf("count").i32(0).i32(1).utf("KEYED_STATE_TYPE").utf("VALUE").i32(2)
	snapshot(x.utf("NAMESPACE_SERIALIZER").i32(2), voidSnap)
	snapshot(x.utf("VALUE_SERIALIZER").i32(2), longSnap)
	x.utf("seen").i32(0).i32(1).utf("KEYED_STATE_TYPE").utf("LIST").i32(2)
	snapshot(x.utf("NAMESPACE_SERIALIZER").i32(2), voidSnap)
	snapshot(x.utf("VALUE_SERIALIZER").i32(2), listSnap)
	x.i32(-1).i32(1).i32(-2).i32(1).i32(1) // outer magic+version, nested magic+version, one nested
	snapshot(x, stringSnap)
	offsets := map[int]int64{}
	for g := 0; g < 128; g++ {
		keys := entries[g]
		if len(keys) == 0 {
			continue
		}
		offsets[g] = int64(x.buf.Len())
		key := func(k string, last bool) []byte {
			prefix := byte(g)
			if wg, ok := wrongGroup[k]; ok {
				prefix = byte(wg)
			}
			b := append([]byte{prefix}, stringValue(k)...)
			b = append(b, 0) // VoidNamespace
			if last {
				b[0] |= 0x80
			}
			return b
		}
		x.raw([]byte{0, 0}) // state 0
		for i, k := range keys {
			kb := key(k, i == len(keys)-1)
			x.i32(int32(len(kb))).raw(kb).i32(8).i64(int64(len(k)))
		}
		x.raw([]byte{0, 1}) // state 1
		for i, k := range keys {
			kb := key(k, i == len(keys)-1)
			v := append(append(stringValue(k+"-1"), ','), stringValue(k+"-2")...)
			x.i32(int32(len(kb))).raw(kb).i32(int32(len(v))).raw(v)
		}
		x.raw([]byte{0xFF, 0xFF})
	}
	return x.bytes(), offsets
}

func TestDecodeCanonicalKeyedState(t *testing.T) {
	// Keys placed in the key groups Flink's assignment gives them.
	entries := map[int][]string{}
	for _, k := range []string{"apple", "pear", "fig", "kiwi", "plum"} {
		g := rescale.KeyGroupForString(k, 128)
		entries[g] = append(entries[g], k)
	}
	data, offs := canonicalKeyGroups(entries, nil)
	h := &KeyedHandle{Kind: KindKeyGroupsSavepoint, Range: rescale.NewKeyGroupRange(0, 127), Offsets: make([]int64, 128),
		Delegate: &StreamHandle{Kind: KindByteStream, Data: data, Size: int64(len(data))}}
	for g, o := range offs {
		h.Offsets[g] = o
	}
	v := DecodeKeyedState(h, 128)
	if v.NotDecoded != "" {
		t.Fatal(v.NotDecoded)
	}
	if len(v.States) != 2 || v.States[0].Name != "count" || v.States[0].StateType != "VALUE" || v.States[1].StateType != "LIST" {
		t.Fatalf("states %+v", v.States)
	}
	for _, st := range v.States {
		if st.Entries != 5 || len(st.Samples) != 5 || st.NotDecoded != "" {
			t.Fatalf("%s: %+v", st.Name, st)
		}
	}
	for _, e := range v.States[0].Samples {
		if e.Value.(int64) != int64(len(e.Key.(string))) {
			t.Errorf("count of %v is %v", e.Key, e.Value)
		}
	}
	if l := v.States[1].Samples[0].Value.([]any); len(l) != 2 || l[0] != v.States[1].Samples[0].Key.(string)+"-1" {
		t.Errorf("list %v", l)
	}
	if v.KeyGroupChecked != 10 || v.KeyGroupMismatches != 0 {
		t.Errorf("checked %d, mismatches %d", v.KeyGroupChecked, v.KeyGroupMismatches)
	}
	// Per-key-group bytes follow the offsets: the written groups share all data bytes after the meta.
	var sum int64
	for _, b := range h.KeyGroupBytes() {
		sum += b
	}
	first := int64(len(data))
	for _, o := range offs {
		first = min(first, o)
	}
	if sum != int64(len(data))-first {
		t.Errorf("key-group bytes sum to %d, data after the meta is %d", sum, int64(len(data))-first)
	}
}

// A key stored under a key group other than its prefix says so.
func TestDecodeKeyedStateWrongPrefix(t *testing.T) {
	g := rescale.KeyGroupForString("apple", 128)
	data, offs := canonicalKeyGroups(map[int][]string{g: {"apple"}}, map[string]int{"apple": (g + 1) % 128})
	h := &KeyedHandle{Range: rescale.NewKeyGroupRange(0, 127), Offsets: make([]int64, 128), Delegate: &StreamHandle{Kind: KindByteStream, Data: data, Size: int64(len(data))}}
	h.Offsets[g] = offs[g]
	v := DecodeKeyedState(h, 128)
	if v.States[0].NotDecoded == "" || v.States[0].Entries != 1 {
		t.Fatalf("%+v", v.States[0])
	}
}

func FuzzDecodeKeyedState(f *testing.F) {
	data, offs := canonicalKeyGroups(map[int][]string{3: {"a", "b"}, 90: {"c"}}, nil)
	f.Add(data, offs[3], offs[90])
	// Inline keyed streams Flink wrote (testdata/flink): full snapshots and heap checkpoints.
	metas, _ := filepath.Glob(filepath.Join("testdata", "flink", "*", "*", "_metadata"))
	for _, p := range metas {
		b, _ := os.ReadFile(p)
		m, err := Read(b)
		if err != nil {
			continue
		}
		for _, op := range m.Operators {
			for _, st := range op.Subtasks {
				if h := st.ManagedKeyedState; h != nil && h.Delegate.HasData() && len(h.Offsets) > 1 {
					var written []int64
					for _, o := range h.Offsets {
						if o > 0 {
							written = append(written, o)
						}
					}
					if len(written) >= 2 {
						f.Add(h.Delegate.Data, written[0], written[1])
					}
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, o1, o2 int64) {
		h := &KeyedHandle{Range: rescale.NewKeyGroupRange(0, 1), Offsets: []int64{o1, o2}, Delegate: &StreamHandle{Kind: KindByteStream, Data: b, Size: int64(len(b))}}
		_ = DecodeKeyedState(h, 128)
		_ = h.KeyGroupBytes()
	})
}

// heapKeyGroups writes the same two states as a heap backend's checkpoint
// does (HeapSnapshotStrategy): the meta, then per key group its id, and per
// state its id and CopyOnWriteStateMapSnapshot's entries (namespace, key, value).
func heapKeyGroups(entries map[int][]string) ([]byte, map[int]int64) {
	full, _ := canonicalKeyGroups(nil, nil) // the meta alone
	x := newW().raw(full)
	offsets := map[int]int64{}
	for g := 0; g < 128; g++ {
		keys := entries[g]
		if len(keys) == 0 {
			continue
		}
		offsets[g] = int64(x.buf.Len())
		x.i32(int32(g))
		x.raw([]byte{0, 0}).i32(int32(len(keys)))
		for _, k := range keys {
			x.u8(0).raw(stringValue(k)).i64(int64(len(k)))
		}
		x.raw([]byte{0, 1}).i32(int32(len(keys)))
		for _, k := range keys {
			x.u8(0).raw(stringValue(k)).i32(2).raw(stringValue(k + "-1")).raw(stringValue(k + "-2"))
		}
	}
	return x.bytes(), offsets
}

func TestDecodeHeapCheckpointKeyedState(t *testing.T) {
	entries := map[int][]string{}
	for _, k := range []string{"apple", "pear", "fig", "kiwi", "plum", "lime"} {
		g := rescale.KeyGroupForString(k, 128)
		entries[g] = append(entries[g], k)
	}
	data, offs := heapKeyGroups(entries)
	h := &KeyedHandle{Kind: KindKeyGroups, Range: rescale.NewKeyGroupRange(0, 127), Offsets: make([]int64, 128),
		Delegate: &StreamHandle{Kind: KindByteStream, Data: data, Size: int64(len(data))}}
	for g, o := range offs {
		h.Offsets[g] = o
	}
	v := DecodeKeyedState(h, 128)
	if v.NotDecoded != "" || v.Format != "heap checkpoint (HeapSnapshotStrategy)" {
		t.Fatalf("%s: %s", v.Format, v.NotDecoded)
	}
	for _, st := range v.States {
		if st.Entries != 6 || st.NotDecoded != "" {
			t.Fatalf("%+v", st)
		}
	}
	for _, e := range v.States[1].Samples {
		l := e.Value.([]any)
		if len(l) != 2 || l[1] != e.Key.(string)+"-2" {
			t.Errorf("%v = %v", e.Key, l)
		}
	}
	if v.KeyGroupChecked != 12 || v.KeyGroupMismatches != 0 {
		t.Errorf("checked %d, mismatches %d", v.KeyGroupChecked, v.KeyGroupMismatches)
	}
}
