package savepoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/statelab/statelab/rescale"
)

// kafkaSavepoint is the _metadata of a savepoint Flink wrote for a KafkaSource
// job, shared outside the project (see /work/shared/flink-savepoints/README.md).
func kafkaSavepoint(tb testing.TB) []byte {
	tb.Helper()
	dir := os.Getenv("STATELAB_SHARED")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared")
	}
	b, err := os.ReadFile(filepath.Join(dir, "flink-savepoints", "kafka-source-savepoint-v4._metadata"))
	if err != nil {
		tb.Skipf("the shared Flink savepoint is not here (%v); set STATELAB_SHARED to the shared directory", err)
	}
	return b
}

// What is known of the shared savepoint without this reader: its README
// (magic, version 4, checkpoint id 1, no master states, two operators, the
// first operator's id, parallelism 3, max parallelism 128, a
// SourceReaderState list in SPLIT_DISTRIBUTE mode), and the KafkaSource's own
// design: the enumerator assigns every partition of the topic to exactly one
// reader, so the readers' splits are the enumerator's partitions, each once.
func TestKafkaSourceSavepoint(t *testing.T) {
	b := kafkaSavepoint(t)
	if got := binary.BigEndian.Uint32(b); got != MagicNumber {
		t.Fatalf("test data starts with %08x", got)
	}
	m, err := Read(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != 4 || m.CheckpointID != 1 || len(m.MasterStates) != 0 || len(m.Operators) != 2 {
		t.Fatalf("version %d, checkpoint %d, %d master states, %d operators", m.Version, m.CheckpointID, len(m.MasterStates), len(m.Operators))
	}
	first := m.Operators[0]
	if first.ID != "7d246211b2be972287522fe7978b38c1" || first.Parallelism != 3 || first.MaxParallelism != 128 {
		t.Fatalf("first operator %+v", first)
	}
	if first.Name != "" || first.UID != "" {
		t.Errorf("version 4 has no operator names, got %q %q", first.Name, first.UID)
	}
	// The source: a coordinator (the split enumerator) and reader state on every subtask.
	var src *OperatorState
	for i := range m.Operators {
		if m.Operators[i].Coordinator != nil {
			src = &m.Operators[i]
		}
	}
	if src == nil {
		t.Fatal("no operator with coordinator state (the KafkaSource enumerator)")
	}
	if len(src.Subtasks) != src.Parallelism {
		t.Fatalf("source has %d subtask states for parallelism %d", len(src.Subtasks), src.Parallelism)
	}
	coord, ok := DecodeCoordinator(src.Coordinator)
	if !ok || len(coord.KafkaPartitions) == 0 {
		t.Fatalf("enumerator state not decoded: %+v", coord)
	}
	enumerated := map[KafkaTopicPartition]int{}
	for _, p := range coord.KafkaPartitions {
		enumerated[p]++
	}
	read := map[KafkaTopicPartition]int{}
	for _, st := range src.Subtasks {
		h := st.ManagedOperatorState
		if h == nil || len(h.States) != 1 || h.States[0].Name != "SourceReaderState" || h.States[0].Mode != rescale.SplitDistribute {
			t.Fatalf("subtask %d operator state %+v", st.Index, h)
		}
		if !h.Delegate.Inline() {
			t.Fatalf("subtask %d: state not inline: %+v", st.Index, h.Delegate)
		}
		vals := DecodeOperatorState(h)
		if vals[0].NotDecoded != "" {
			t.Fatalf("subtask %d: %s", st.Index, vals[0].NotDecoded)
		}
		for _, e := range vals[0].Elements {
			s, ok := e.Value.(KafkaPartitionSplit)
			if !ok {
				t.Fatalf("subtask %d element %+v is not a Kafka split", st.Index, e)
			}
			// BytePrimitiveArraySerializer's length (4) + SimpleVersionedSerialization's
			// version and length (8) + KafkaPartitionSplitSerializer's UTF topic,
			// int partition, long start and long stop offsets.
			if want := int64(4 + 8 + 2 + len(s.Topic) + 4 + 8 + 8); e.Bytes != want {
				t.Errorf("element of %d bytes, the serializers write %d", e.Bytes, want)
			}
			if s.StoppingOffset != nil {
				t.Errorf("a streaming KafkaSource split has no stopping offset, got %d", *s.StoppingOffset)
			}
			read[KafkaTopicPartition{Topic: s.Topic, Partition: s.Partition}]++
		}
	}
	if len(read) != len(enumerated) {
		t.Fatalf("readers hold %d partitions, enumerator assigned %d", len(read), len(enumerated))
	}
	for p, n := range read {
		if n != 1 || enumerated[p] != 1 {
			t.Errorf("partition %v held %d times by readers, %d times by the enumerator", p, n, enumerated[p])
		}
	}
	if m.Properties == nil || !m.Properties.IsSavepoint() {
		t.Fatalf("properties %+v (%s): a savepoint's properties carry a SavepointType", m.Properties, m.PropertiesError)
	}
	if f := m.Properties.FormatType; f != "NATIVE" && f != "CANONICAL" {
		t.Errorf("format type %q", f)
	}
}

// A report and a plan on the real file: the JSON shape's numbers follow from
// the handles (elements are offsets), and the plan keeps every split once.
func TestKafkaSourcePlan(t *testing.T) {
	m, err := Read(kafkaSavepoint(t))
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(m)
	total := 0
	for _, st := range rep.Operators[1].Subtasks {
		for _, l := range st.OperatorState {
			total += l.Elements
		}
	}
	coord, _ := DecodeCoordinator(m.Operators[1].Coordinator)
	if total != len(coord.KafkaPartitions) {
		t.Fatalf("report counts %d elements, the enumerator assigned %d partitions", total, len(coord.KafkaPartitions))
	}
	for _, to := range []int{1, 2, 3, 4, 7, 128} {
		p, err := NewPlan(&m.Operators[1], to)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[[2]int]bool{}
		for _, st := range p.Subtasks {
			for _, ps := range st.OperatorState {
				for _, e := range ps.Elements {
					k := [2]int{e.OldSubtask, e.Index}
					if seen[k] {
						t.Fatalf("to %d: element %v restored twice", to, k)
					}
					seen[k] = true
				}
			}
		}
		if len(seen) != total {
			t.Fatalf("to %d: %d elements restored of %d", to, len(seen), total)
		}
		if want := total / to; to <= total && len(p.Subtasks[to-1].OperatorState[0].Elements) < want {
			t.Errorf("to %d: last subtask gets fewer than %d elements", to, want)
		}
	}
	_, err = NewPlan(&m.Operators[1], 129)
	if !errors.Is(err, ErrAboveMax) || !strings.Contains(err.Error(), "(128)") {
		t.Fatalf("parallelism 129 over max 128: %v", err)
	}
}

// Every prefix of the real file that cuts the operator states is an error,
// never a panic; one that cuts only the trailing properties reads without them.
func TestTruncatedFiles(t *testing.T) {
	b := kafkaSavepoint(t)
	bodyEnd := bytes.Index(b, []byte{0xAC, 0xED, 0x00, 0x05}) // ObjectOutputStream's header
	if bodyEnd < 0 {
		t.Fatal("no Java serialization header for the properties")
	}
	for n := 0; n < len(b); n++ {
		m, err := Read(b[:n])
		switch {
		case n < bodyEnd && err == nil:
			t.Fatalf("prefix of %d bytes (body ends at %d) read without error", n, bodyEnd)
		case n >= bodyEnd && (err != nil || m.Properties != nil || m.PropertiesError == ""):
			t.Fatalf("prefix of %d bytes: %v, properties %+v", n, err, m)
		}
	}
}

func TestNotMetadata(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{[]byte("PK\x03\x04rest of a zip"), "0x504b0304"},
		{[]byte{0x89, 'P', 'N', 'G', 0, 0}, "0x89504e47"},
		{[]byte{0x49}, "1 bytes"},
		{nil, "0 bytes"},
	} {
		_, err := Read(c.in)
		if !errors.Is(err, ErrNotMetadata) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v (want %s)", c.in, err, c.want)
		}
	}
}

func TestVersions(t *testing.T) {
	for _, v := range []int32{0, 1, 2, 8, 99, -1} {
		w := newW().i32(MagicNumber).i32(v).i64(1).i32(0).i32(0)
		_, err := Read(w.bytes())
		if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "version") {
			t.Errorf("version %d: %v", v, err)
		}
	}
}

// w assembles metadata bytes the way Flink's DataOutputStream writes them, so
// the tests below state Flink's format in the order its serializers write it.
type w struct{ buf bytes.Buffer }

func newW() *w            { return &w{} }
func (x *w) u8(v byte) *w { x.buf.WriteByte(v); return x }
func (x *w) i32(v int32) *w {
	_ = binary.Write(&x.buf, binary.BigEndian, v)
	return x
}
func (x *w) i64(v int64) *w {
	_ = binary.Write(&x.buf, binary.BigEndian, v)
	return x
}
func (x *w) utf(s string) *w {
	_ = binary.Write(&x.buf, binary.BigEndian, uint16(len(s)))
	x.buf.WriteString(s)
	return x
}
func (x *w) raw(b []byte) *w { x.buf.Write(b); return x }
func (x *w) bytes() []byte   { return append([]byte(nil), x.buf.Bytes()...) }

func header(version int32, checkpoint int64) *w {
	return newW().i32(MagicNumber).i32(version).i64(checkpoint)
}

// opHead writes an operator's head: V5+ name and uid, the id (lower, upper
// long), parallelism and max parallelism.
func opHead(x *w, version int32, name, uid string, lower, upper int64, p, maxP int32) *w {
	if version >= 5 {
		x.utf(name).utf(uid)
	}
	return x.i64(lower).i64(upper).i32(p).i32(maxP)
}

// emptySubtask writes a subtask with no state: flags, two null keyed handles,
// empty channel collections, and V7's marker.
func emptySubtask(x *w, version int32, idx int32) *w {
	x.i32(idx).i32(0).i32(0).u8(0).u8(0).i32(0).i32(0)
	if version >= 7 {
		x.u8(0)
	}
	return x
}

func TestEveryVersionAndHandleKind(t *testing.T) {
	for _, version := range []int32{3, 4, 5, 6, 7} {
		x := header(version, 42)
		// One master state: magic, length, then version, name, payload.
		inner := newW().i32(3).utf("hook").i32(2).raw([]byte{7, 8}).bytes()
		x.i32(1).i32(masterStateMagic).i32(int32(len(inner))).raw(inner)
		x.i32(3) // three operators

		// Operator A: keyed state, savepoint and checkpoint key-group handles.
		opHead(x, version, "count", "count-uid", 0x0102030405060708, 0x1112131415161718, 2, 8)
		x.u8(0) // no coordinator
		x.i32(2)
		// subtask 0: key groups 0..3 (V2 handle with id), in a file.
		x.i32(0).i32(0).i32(0)
		x.u8(codeKeyGroupsV2).i32(0).i32(4).i64(10).i64(20).i64(20).i64(50)
		x.u8(codeFileStream).i64(80).utf("file:/cp/chk-42/state-0").utf("handle-0")
		x.u8(0).i32(0).i32(0)
		if version >= 7 {
			x.u8(1).i64(41)
		}
		// subtask 1: key groups 4..7, a savepoint handle with a relative file.
		x.i32(1).i32(0).i32(0)
		x.u8(codeSavepointKeyGroups).i32(4).i32(4).i64(1).i64(5).i64(5).i64(9)
		x.u8(codeRelativeStream).utf("rel-1").i64(12)
		x.u8(0).i32(0).i32(0)
		if version >= 7 {
			x.u8(0)
		}

		// Operator B: an incremental RocksDB handle, a changelog handle, channel state.
		opHead(x, version, "", "", 1, 2, 3, 4)
		x.u8(codeByteStream).utf("coord").i32(3).raw([]byte{1, 2, 3})
		x.i32(3)
		x.i32(0).i32(0).i32(0)
		x.u8(codeIncrementalV2).i64(40).utf("backend-uuid").i32(0).i32(2).i64(300)
		x.u8(codeByteStream).utf("meta").i32(2).raw([]byte{9, 9})
		x.i32(2).utf("000011.sst").u8(codeFileStream).i64(100).utf("s3://b/shared/a")
		x.utf("000012.sst").u8(codeSegmentFile).i64(5).i64(60).i32(0).utf("s3://b/merged").utf("lf-1")
		x.i32(1).utf("MANIFEST").u8(codeEmptySegmentFile)
		x.utf("inc-id")
		x.u8(0)
		// one input channel handle, one output handle
		x.i32(1)
		if version >= 6 {
			x.u8(chanInput)
		}
		x.i32(0).i32(1).i32(2).i32(1).i64(0).i64(33).u8(codeByteStream).utf("ch").i32(1).raw([]byte{5})
		x.i32(1)
		if version >= 6 {
			x.u8(chanMergedOutput).i32(0).i64(44).u8(0).i32(2).raw([]byte{1, 1})
		} else {
			x.i32(0).i32(3).i32(4).i32(0).i64(44).u8(0)
		}
		if version >= 7 {
			x.u8(0)
		}
		// subtask 1: changelog backend handle with a materialized key-groups
		// part and two increments (in memory, in a file).
		x.i32(1).i32(0).i32(0)
		x.u8(codeChangelogV2).i32(2).i32(2).i64(77)
		x.i32(1).u8(codeKeyGroups).i32(2).i32(2).i64(0).i64(3).u8(codeByteStream).utf("m").i32(6).raw(make([]byte, 6))
		x.i32(2)
		x.u8(codeChangelogBytes).i32(2).i32(2).i64(1).i64(3).i32(1).i32(3).i32(4).raw([]byte{1, 2, 3, 4}).utf("mem-id")
		x.u8(codeChangelogFileV2).i32(2).i32(2).i32(1).i64(8).u8(codeFileStream).i64(90).utf("dstl/f").i64(90).i64(90).utf("file-id").utf("filesystem")
		x.i64(5).i64(40).utf("cl-id")
		x.u8(0).i32(0).i32(0)
		if version >= 7 {
			x.u8(0)
		}
		// subtask 2 finished
		x.i32(-3)

		// Operator C: operator state (split, union, broadcast; file merging) and
		// a fully finished operator after it.
		opHead(x, version, "src", "", 3, 4, 1, 128)
		x.u8(0).i32(1)
		x.i32(0)
		x.i32(1).u8(codeSegmentOpState).i32(3)
		x.utf("splits").u8(0).i32(2).i64(10).i64(20)
		x.utf("all").u8(1).i32(1).i64(30)
		x.utf("rules").u8(2).i32(1).i64(40)
		x.utf("/tm/owned").utf("/cp/shared").u8(0)
		x.u8(codeSegmentFile).i64(0).i64(50).i32(1).utf("/cp/shared/merged").utf("lf-2")
		x.i32(0).u8(0).u8(0).i32(0).i32(0)
		if version >= 7 {
			x.u8(0)
		}
		if version >= 4 {
			x.raw([]byte{0xAC, 0xED, 0x00, 0x05, tcNull})
		}

		m, err := Read(x.bytes())
		if err != nil {
			t.Fatalf("version %d: %v", version, err)
		}
		if m.Version != int(version) || m.CheckpointID != 42 || len(m.Operators) != 3 {
			t.Fatalf("version %d: %+v", version, m)
		}
		if ms := m.MasterStates; len(ms) != 1 || ms[0].Name != "hook" || ms[0].Version != 3 || !bytes.Equal(ms[0].Data, []byte{7, 8}) {
			t.Errorf("v%d master states %+v", version, ms)
		}
		a, b, c := m.Operators[0], m.Operators[1], m.Operators[2]
		if a.ID != "01020304050607081112131415161718" || a.Parallelism != 2 || a.MaxParallelism != 8 {
			t.Errorf("v%d operator A %+v", version, a)
		}
		if wantName := map[bool]string{true: "count", false: ""}[version >= 5]; a.Name != wantName {
			t.Errorf("v%d name %q", version, a.Name)
		}
		k0, k1 := a.Subtasks[0].ManagedKeyedState, a.Subtasks[1].ManagedKeyedState
		if k0.Kind != KindKeyGroups || k0.Range != rescale.NewKeyGroupRange(0, 3) || k0.StateHandleID != "handle-0" || k0.Size() != 80 {
			t.Errorf("v%d keyed 0 %+v", version, k0)
		}
		// Offsets 10, 20, 20, 50 in 80 bytes: the second key group at 20 claims nothing more.
		if got := k0.KeyGroupBytes(); len(got) != 4 || got[0] != 10 || got[1] != 30 || got[2] != 0 || got[3] != 30 {
			t.Errorf("v%d key group bytes %v (offsets 10,20,20,50 in 80 bytes)", version, got)
		}
		if k1.Kind != KindKeyGroupsSavepoint || k1.Delegate.Kind != KindRelativeFile || k1.Delegate.Path != "rel-1" || k1.Size() != 12 {
			t.Errorf("v%d keyed 1 %+v", version, k1)
		}
		if ref := a.Subtasks[0].RefCheckpointID; (version >= 7) != (ref != nil) || (ref != nil && *ref != 41) {
			t.Errorf("v%d ref checkpoint id %v", version, ref)
		}
		if b.Coordinator == nil || b.Coordinator.Name != "coord" || b.Coordinator.Size != 3 {
			t.Errorf("v%d coordinator %+v", version, b.Coordinator)
		}
		inc := b.Subtasks[0].ManagedKeyedState
		if inc.Kind != KindIncremental || inc.CheckpointedSize != 300 || inc.BackendID != "backend-uuid" || len(inc.SharedFiles) != 2 || len(inc.PrivateFiles) != 1 {
			t.Fatalf("v%d incremental %+v", version, inc)
		}
		if s := inc.SharedFiles[1].Handle; s.Kind != KindSegmentFile || s.StartPos != 5 || s.Size != 60 || s.Scope != "SHARED" || s.LogicalFileID != "lf-1" {
			t.Errorf("v%d segment %+v", version, s)
		}
		if inc.Size() != 2+100+60 {
			t.Errorf("v%d incremental size %d (meta 2 + files 100 + 60)", version, inc.Size())
		}
		in, out := b.Subtasks[0].InputChannelState, b.Subtasks[0].ResultSubpartitionState
		if len(in) != 1 || in[0].Info != [2]int32{1, 2} || in[0].Size != 33 || len(out) != 1 || out[0].Size != 44 {
			t.Errorf("v%d channels %+v %+v", version, in, out)
		}
		cl := b.Subtasks[1].ManagedKeyedState
		if cl.Kind != KindChangelogBackend || len(cl.Materialized) != 1 || len(cl.NonMaterialized) != 2 || cl.MaterializationID != 5 || cl.CheckpointID != 40 {
			t.Fatalf("v%d changelog %+v", version, cl)
		}
		if cl.Size() != 6+4+90 {
			t.Errorf("v%d changelog size %d", version, cl.Size())
		}
		if st := b.Subtasks[2]; !st.Finished || st.Index != 2 {
			t.Errorf("v%d finished subtask %+v", version, st)
		}
		oh := c.Subtasks[0].ManagedOperatorState
		if oh.Kind != KindFileMergingOperator || oh.TaskOwnedDir != "/tm/owned" || len(oh.States) != 3 {
			t.Fatalf("v%d operator handle %+v", version, oh)
		}
		gotModes := []string{string(oh.States[0].Mode), string(oh.States[1].Mode), string(oh.States[2].Mode)}
		if strings.Join(gotModes, ",") != "SPLIT_DISTRIBUTE,UNION,BROADCAST" {
			t.Errorf("v%d modes %v", version, gotModes)
		}
		if version >= 4 && (m.Properties != nil || m.PropertiesError == "") {
			t.Errorf("v%d: a null properties object must be reported as unreadable", version)
		}
		// The report's contract fields.
		rep := NewReport(m)
		if ks := rep.Operators[0].Subtasks[1].KeyedState; len(ks) != 1 || ks[0].Start != 4 || ks[0].End != 7 || ks[0].Bytes != 12 {
			t.Errorf("v%d report keyed %+v", version, ks)
		}
		if ls := rep.Operators[2].Subtasks[0].OperatorState; len(ls) != 3 || ls[0].Elements != 2 || ls[1].Mode != "UNION" {
			t.Errorf("v%d report lists %+v", version, ls)
		}
		// A rescale of operator A to 4: each new subtask reads its two key
		// groups from the one old handle that holds them, with their bytes.
		p, err := NewPlan(&m.Operators[0], 4)
		if err != nil {
			t.Fatal(err)
		}
		// Key groups 0..3 have 10, 30, 0, 30 bytes; 4..7 (offsets 1, 5, 5, 9 in 12) 4, 4, 0, 3.
		want := []int64{10 + 30, 0 + 30, 4 + 4, 0 + 3}
		for i, st := range p.Subtasks {
			if len(st.KeyedReads) != 1 || st.KeyedBytes != want[i] {
				t.Errorf("v%d plan subtask %d reads %+v, want %d bytes", version, i, st.KeyedReads, want[i])
			}
		}
	}
}

func TestUnknownHandleKinds(t *testing.T) {
	base := func() *w {
		x := header(4, 1).i32(0).i32(1)
		opHead(x, 4, "", "", 1, 1, 1, 128)
		return x.u8(0).i32(1).i32(0)
	}
	for name, tail := range map[string][]byte{
		"keyed":    newW().i32(0).i32(0).u8(99).bytes(),
		"operator": newW().i32(1).u8(42).bytes(),
		"stream":   newW().i32(0).i32(0).u8(codeKeyGroupsV2).i32(0).i32(1).i64(0).u8(200).bytes(),
	} {
		_, err := Read(base().raw(tail).raw(make([]byte, 64)).bytes())
		if !errors.Is(err, ErrHandleKind) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Counts and lengths beyond the file are refused before anything is allocated for them.
func TestHostileLengths(t *testing.T) {
	cases := map[string][]byte{
		"operators":    header(4, 1).i32(0).i32(1 << 30).bytes(),
		"masters":      header(4, 1).i32(1 << 30).bytes(),
		"master bytes": header(4, 1).i32(1).i32(masterStateMagic).i32(1 << 30).bytes(),
		"offsets": func() []byte {
			x := header(4, 1).i32(0).i32(1)
			opHead(x, 4, "", "", 1, 1, 1, 128)
			return x.u8(0).i32(1).i32(0).i32(0).i32(0).u8(codeKeyGroups).i32(0).i32(1 << 30).bytes()
		}(),
		"byte stream": func() []byte {
			x := header(4, 1).i32(0).i32(1)
			opHead(x, 4, "", "", 1, 1, 1, 128)
			return x.u8(codeByteStream).utf("c").i32(1 << 30).bytes()
		}(),
	}
	for name, b := range cases {
		allocs := testing.AllocsPerRun(1, func() { _, _ = Read(b) })
		_, err := Read(b)
		if err == nil || allocs > 50 {
			t.Errorf("%s: err %v, %v allocations", name, err, allocs)
		}
	}
}

// A full snapshot leaves offset 0 for the key groups it did not write; they
// hold no bytes, and the others end at the next written key group.
func TestKeyGroupBytesSkipsEmptyKeyGroups(t *testing.T) {
	h := &KeyedHandle{Offsets: []int64{0, 40, 0, 70, 0}, Delegate: &StreamHandle{Size: 100}}
	got := h.KeyGroupBytes()
	want := []int64{0, 30, 0, 30, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestModifiedUTF8(t *testing.T) {
	// Java writes U+0000 as C0 80 and U+1F600 as the surrogates D83D DE00, each in three bytes.
	s, ok := decodeModifiedUTF8([]byte{'a', 0xC0, 0x80, 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80, 0xE4, 0xB8, 0xAD})
	if !ok || s != "a\x00😀中" {
		t.Fatalf("%q %v", s, ok)
	}
	if _, ok := decodeModifiedUTF8([]byte{0xFF}); ok {
		t.Fatal("0xFF accepted")
	}
}

func TestStringValueFormat(t *testing.T) {
	// StringValue.writeString("hé"): length+1 = 3, 'h', then é (0xE9) as 0xE9 0x01.
	v, err := readStringValue(&reader{b: []byte{3, 'h', 0xE9, 0x01}})
	if err != nil || v != "hé" {
		t.Fatalf("%v %v", v, err)
	}
	if v, err := readStringValue(&reader{b: []byte{0}}); err != nil || v != nil {
		t.Fatalf("null string: %v %v", v, err)
	}
}

func TestFindOperator(t *testing.T) {
	m := &Metadata{Operators: []OperatorState{{ID: "ab", UID: "u", Name: "n"}, {ID: "cd"}}}
	for _, k := range []string{"AB", "u", "n"} {
		if op, err := m.FindOperator(k); err != nil || op.ID != "ab" {
			t.Errorf("%s: %v", k, err)
		}
	}
	if _, err := m.FindOperator("zz"); !errors.Is(err, ErrNoOperator) || !strings.Contains(err.Error(), "ab, cd") {
		t.Errorf("%v", err)
	}
	ids := []string{}
	for _, o := range m.Operators {
		ids = append(ids, o.ID)
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal(ids)
	}
}

func kafkaSavepointOrNil() []byte {
	dir := os.Getenv("STATELAB_SHARED")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "flink-savepoints", "kafka-source-savepoint-v4._metadata"))
	return b
}
