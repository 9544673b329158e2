package savepoint

import (
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strconv"
	"unicode/utf16"
)

// Element is one element of an operator state list: where it starts in the
// handle's stream, its length, and its value where StateLab could decode it.
type Element struct {
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`
	// Type names what Value is: "String", "Long", "Integer", "Boolean",
	// "Double", "byte[]", "KafkaPartitionSplit", "map" (a broadcast state).
	Type  string `json:"type,omitempty"`
	Value any    `json:"value,omitempty"`
	// Text is the value in decimal when it is a long that a JSON reader
	// using doubles (a browser) would round: beyond ±2^53.
	Text string `json:"text,omitempty"`
}

// StateValues is one named operator state of one subtask, element by element.
type StateValues struct {
	Name string `json:"name"`
	Mode string `json:"mode"`
	// Serializer is the value serializer's snapshot class, when the meta
	// information before the data could be read.
	Serializer string    `json:"serializer,omitempty"`
	Elements   []Element `json:"elements"`
	// NotDecoded says why values are missing, when they are (English);
	// NotDecodedReason is the same as a code the page translates.
	NotDecoded       string  `json:"notDecoded,omitempty"`
	NotDecodedReason *Reason `json:"notDecodedReason,omitempty"`
}

// simpleSnapshots are serializer snapshots that write nothing after their
// class name and version (SimpleTypeSerializerSnapshot subclasses), mapped to
// the value type their serializer writes.
var simpleSnapshots = map[string]string{
	"org.apache.flink.api.common.typeutils.base.StringSerializer$StringSerializerSnapshot":                               "String",
	"org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot":                                   "Long",
	"org.apache.flink.api.common.typeutils.base.IntSerializer$IntSerializerSnapshot":                                     "Integer",
	"org.apache.flink.api.common.typeutils.base.BooleanSerializer$BooleanSerializerSnapshot":                             "Boolean",
	"org.apache.flink.api.common.typeutils.base.DoubleSerializer$DoubleSerializerSnapshot":                               "Double",
	"org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer$BytePrimitiveArraySerializerSnapshot": "byte[]",
	"org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot":                             "VoidNamespace",
	"org.apache.flink.streaming.api.windowing.windows.TimeWindow$Serializer$TimeWindowSerializerSnapshot":                "TimeWindow",
}

type stateMeta struct {
	name                 string
	stateType            int32
	options              map[string]string
	serializers          map[string]*serializerInfo
	keyType, valueType   string
	keyClass, valueClass string
}

// DecodeOperatorState splits each named state of h into its elements and
// decodes their values where the bytes are inline and the serializer is one
// StateLab knows. It never fails: what it cannot do is said in NotDecoded.
func DecodeOperatorState(h *OperatorStateHandle) []StateValues {
	if h == nil {
		return nil
	}
	end := h.Delegate.size()
	var starts []int64
	for _, s := range h.States {
		starts = append(starts, s.Offsets...)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	next := func(o int64) int64 {
		i := sort.Search(len(starts), func(i int) bool { return starts[i] > o })
		if i < len(starts) {
			return starts[i]
		}
		return end
	}
	var metas map[string]stateMeta
	text, why := "", (*Reason)(nil)
	switch {
	case h.Delegate == nil:
		text, why = notDecoded(reason(ReasonNoStream))
	case !h.Delegate.HasData():
		text, why = notDecoded(reason(ReasonOutsideMetadata, "kind", h.Delegate.Kind, "path", h.Delegate.Path))
	default:
		var err error
		metas, err = readOperatorMeta(h.Delegate.Data)
		if err != nil {
			text, why = errNotDecoded(err)
		}
	}
	out := make([]StateValues, 0, len(h.States))
	for _, s := range h.States {
		sv := StateValues{Name: s.Name, Mode: string(s.Mode), Elements: []Element{}, NotDecoded: text, NotDecodedReason: why}
		meta, haveMeta := metas[s.Name]
		if text == "" && !haveMeta {
			sv.NotDecoded, sv.NotDecodedReason = notDecoded(reason(ReasonNoMeta))
		}
		sv.Serializer = meta.valueClass
		for _, o := range s.Offsets {
			e := Element{Offset: o, Bytes: max(0, next(o)-o)}
			if sv.NotDecoded == "" && o >= 0 && o+e.Bytes <= int64(len(h.Delegate.Data)) {
				raw := h.Delegate.Data[o : o+e.Bytes]
				var err error
				if s.Mode == "BROADCAST" {
					e.Type, e.Value, err = decodeBroadcast(raw, meta)
				} else {
					e.Type, e.Value, err = decodeValue(raw, meta.valueType, meta.valueClass, true)
					if err == nil && e.Type == "byte[]" {
						e.Type, e.Value = decodeNested(s.Name, e.Value.([]byte))
					}
				}
				if err != nil {
					sv.NotDecoded, sv.NotDecodedReason = errNotDecoded(err)
					e.Type, e.Value = "", nil
				}
				if n, ok := e.Value.(int64); ok && (n > 1<<53 || n < -(1<<53)) {
					e.Text = strconv.FormatInt(n, 10)
				}
			}
			sv.Elements = append(sv.Elements, e)
		}
		out = append(out, sv)
	}
	return out
}

// readOperatorMeta reads the head of an operator state stream:
// OperatorBackendSerializationProxy (version; from version 6 a compression
// flag; then operator and broadcast StateMetaInfoSnapshots as
// StateMetaInfoSnapshotReadersWriters writes them).
func readOperatorMeta(b []byte) (map[string]stateMeta, error) {
	r := &reader{b: b}
	v, err := r.i32("operator state meta version")
	if err != nil {
		return nil, err
	}
	if v < 5 || v > 6 {
		return nil, because(ReasonOperatorMetaVer, "version", strconv.Itoa(int(v)))
	}
	if v >= 6 {
		// Version 6 adds whether the operator states are compressed.
		compressed, err := r.boolean("compression flag")
		if err != nil {
			return nil, err
		}
		if compressed {
			return nil, because(ReasonOperatorCompressed)
		}
	}
	out := map[string]stateMeta{}
	for range 2 { // operator states, then broadcast states
		n, err := r.u16("number of state meta infos")
		if err != nil {
			return nil, err
		}
		for range n {
			m, err := readStateMeta(r)
			if err != nil {
				return nil, err
			}
			out[m.name] = m
		}
	}
	return out, nil
}

// readStateMeta reads one StateMetaInfoSnapshot as
// StateMetaInfoSnapshotReadersWriters' current writer writes it: name, state
// type, options, then each serializer's snapshot under its key
// (KEY_SERIALIZER, NAMESPACE_SERIALIZER, VALUE_SERIALIZER, …).
func readStateMeta(r *reader) (stateMeta, error) {
	m := stateMeta{options: map[string]string{}, serializers: map[string]*serializerInfo{}}
	var err error
	if m.name, err = r.utf("state name"); err != nil {
		return m, err
	}
	if m.stateType, err = r.i32("state type"); err != nil {
		return m, err
	}
	n, err := r.count("number of options", 4)
	if err != nil {
		return m, err
	}
	for range n {
		k, err := r.utf("option key")
		if err != nil {
			return m, err
		}
		v, err := r.utf("option value")
		if err != nil {
			return m, err
		}
		m.options[k] = v
	}
	if n, err = r.count("number of serializers", 4); err != nil {
		return m, err
	}
	for range n {
		key, err := r.utf("serializer key")
		if err != nil {
			return m, err
		}
		si, err := readSerializerSnapshot(r)
		if err != nil {
			return m, fmt.Errorf("state %q: %w", m.name, err)
		}
		m.serializers[key] = si
		switch key {
		case "KEY_SERIALIZER":
			m.keyType, m.keyClass = si.typ, si.class
		case "VALUE_SERIALIZER":
			m.valueType, m.valueClass = si.typ, si.class
		}
	}
	return m, nil
}

// decodeValue decodes one serialized value of the given type. With exact,
// the value must use every byte.
func decodeValue(b []byte, typ, class string, exact bool) (string, any, error) {
	r := &reader{b: b}
	v, err := readTyped(r, typ, class)
	if err != nil {
		return "", nil, err
	}
	if exact && r.remaining() != 0 {
		return "", nil, because(ReasonElementBytesLeft, "type", typ, "left", strconv.Itoa(r.remaining()), "total", strconv.Itoa(len(b)))
	}
	return typ, v, nil
}

func readTyped(r *reader, typ, class string) (any, error) {
	switch typ {
	case "Long":
		return r.i64("long")
	case "Integer":
		return r.i32("int")
	case "Boolean":
		return r.boolean("boolean")
	case "Double":
		v, err := r.i64("double")
		return math.Float64frombits(uint64(v)), err
	case "String":
		return readStringValue(r)
	case "TimeWindow":
		// TimeWindow.Serializer: start, then end, as longs.
		start, err := r.i64("window start")
		if err != nil {
			return nil, err
		}
		end, err := r.i64("window end")
		return map[string]int64{"start": start, "end": end}, err
	case "byte[]":
		n, err := r.count("byte array length", 1)
		if err != nil {
			return nil, err
		}
		return r.bytes(n, "byte array")
	}
	return nil, because(ReasonNoDecoder, "serializer", class)
}

// readStringValue reads Flink's StringValue.writeString format (used by
// StringSerializer): length+1 as a 7-bit variable-length int (0 = null),
// then each UTF-16 unit as a 7-bit variable-length int.
func readStringValue(r *reader) (any, error) {
	varint := func() (int64, error) {
		var v int64
		for shift := 0; shift < 35; shift += 7 {
			c, err := r.u8("string")
			if err != nil {
				return 0, err
			}
			v |= int64(c&0x7f) << shift
			if c < 0x80 {
				return v, nil
			}
		}
		return 0, failed(ErrCorrupt, reason(ReasonStringLength), "string length too long")
	}
	n, err := varint()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	n--
	if n > int64(r.remaining()) {
		return nil, failed(ErrCorrupt, reason(ReasonStringBeyond, "chars", itoa(n), "left", itoa(r.remaining())), "string of %d characters with %d bytes left", n, r.remaining())
	}
	units := make([]uint16, n)
	for i := range units {
		c, err := varint()
		if err != nil {
			return nil, err
		}
		units[i] = uint16(c)
	}
	return string(utf16.Decode(units)), nil
}

// decodeBroadcast decodes a broadcast state's map (HeapBroadcastState.write:
// the entry count, then each key and value).
func decodeBroadcast(b []byte, m stateMeta) (string, any, error) {
	if m.keyType == "" || m.valueType == "" {
		return "", nil, because(ReasonBroadcastSerUnkn, "state", m.name)
	}
	r := &reader{b: b}
	n, err := r.count("broadcast state size", 1)
	if err != nil {
		return "", nil, err
	}
	out := make([][2]any, 0, n)
	for range n {
		k, err := readTyped(r, m.keyType, m.keyClass)
		if err != nil {
			return "", nil, err
		}
		v, err := readTyped(r, m.valueType, m.valueClass)
		if err != nil {
			return "", nil, err
		}
		out = append(out, [2]any{k, v})
	}
	if r.remaining() != 0 {
		return "", nil, because(ReasonBroadcastBytesLeft, "state", m.name, "left", strconv.Itoa(r.remaining()))
	}
	return "map", out, nil
}

// KafkaPartitionSplit is a KafkaSource split as KafkaPartitionSplitSerializer
// (version 0) writes it.
type KafkaPartitionSplit struct {
	Topic          string `json:"topic"`
	Partition      int32  `json:"partition"`
	StartingOffset int64  `json:"startingOffset"`
	// StoppingOffset is absent for an unbounded split (Long.MIN_VALUE in the bytes).
	StoppingOffset *int64 `json:"stoppingOffset,omitempty"`
}

// decodeNested looks inside a byte[] element of a source's reader state
// (SourceOperator's "SourceReaderState": each element is a split written by
// SimpleVersionedSerialization.writeVersionAndSerialize). A Kafka split is
// decoded when its bytes fit KafkaPartitionSplitSerializer exactly; other
// splits stay bytes.
func decodeNested(state string, b []byte) (string, any) {
	if state == "SourceReaderState" {
		r := &reader{b: b}
		ver, err1 := r.i32("split serializer version")
		n, err2 := r.i32("split length")
		if err1 == nil && err2 == nil && ver == 0 && int(n) == r.remaining() {
			if s, ok := parseKafkaSplit(r.b[r.pos:]); ok {
				return "KafkaPartitionSplit", s
			}
		}
	}
	return "byte[]", hexPreview(b)
}

func parseKafkaSplit(b []byte) (KafkaPartitionSplit, bool) {
	r := &reader{b: b}
	var s KafkaPartitionSplit
	var err error
	if s.Topic, err = r.utf("topic"); err != nil || s.Topic == "" {
		return s, false
	}
	if s.Partition, err = r.i32("partition"); err != nil || s.Partition < 0 {
		return s, false
	}
	if s.StartingOffset, err = r.i64("starting offset"); err != nil {
		return s, false
	}
	stop, err := r.i64("stopping offset")
	if err != nil || r.remaining() != 0 {
		return s, false
	}
	if stop != math.MinInt64 {
		s.StoppingOffset = &stop
	}
	return s, true
}

// CoordinatorState is what StateLab reads of a source coordinator's state
// (SourceCoordinator.toBytes: serde version, enumerator serializer version,
// then the enumerator's checkpoint).
type CoordinatorState struct {
	SerdeVersion      int32 `json:"serdeVersion"`
	EnumeratorVersion int32 `json:"enumeratorVersion"`
	EnumeratorBytes   int   `json:"enumeratorBytes"`
	// KafkaPartitions are the assigned partitions of a KafkaSourceEnumState
	// (serializer version 1: topic and partition per entry), when the bytes
	// fit that format exactly.
	KafkaPartitions []KafkaTopicPartition `json:"kafkaPartitions,omitempty"`
}

// KafkaTopicPartition is one partition a KafkaSource enumerator had assigned.
type KafkaTopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// DecodeCoordinator reads a coordinator state that has a source
// coordinator's layout; ok is false for any other.
func DecodeCoordinator(h *StreamHandle) (CoordinatorState, bool) {
	if !h.Inline() {
		return CoordinatorState{}, false
	}
	r := &reader{b: h.Data}
	var c CoordinatorState
	var err error
	if c.SerdeVersion, err = r.i32("serde version"); err != nil {
		return c, false
	}
	if c.EnumeratorVersion, err = r.i32("enumerator version"); err != nil {
		return c, false
	}
	n, err := r.i32("enumerator length")
	if err != nil || n < 0 || int(n) != r.remaining() {
		return c, false
	}
	c.EnumeratorBytes = int(n)
	if c.EnumeratorVersion == 1 {
		e := &reader{b: r.b[r.pos:]}
		k, err := e.count("partitions", 6)
		if err == nil {
			ps := make([]KafkaTopicPartition, 0, k)
			for range k {
				t, err1 := e.utf("topic")
				p, err2 := e.i32("partition")
				if err1 != nil || err2 != nil || t == "" {
					ps = nil
					break
				}
				ps = append(ps, KafkaTopicPartition{Topic: t, Partition: p})
			}
			if ps != nil && e.remaining() == 0 {
				c.KafkaPartitions = ps
			}
		}
	}
	return c, true
}

func hexPreview(b []byte) string {
	const limit = 64
	if len(b) <= limit {
		return hex.EncodeToString(b)
	}
	return hex.EncodeToString(b[:limit]) + fmt.Sprintf("… (%d bytes)", len(b))
}
