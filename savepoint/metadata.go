package savepoint

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/statelab/statelab/rescale"
)

// MagicNumber opens every checkpoint and savepoint _metadata file
// (Checkpoints.HEADER_MAGIC_NUMBER).
const MagicNumber = 0x4960672d

// masterStateMagic opens each master state (MetadataV2V3SerializerBase.MASTER_STATE_MAGIC_NUMBER).
const masterStateMagic = -0x3694e96a // 0xc96b1696 as a Java int

// Versions this reader understands (MetadataSerializers' registry).
const (
	MinVersion = 3
	MaxVersion = 7
)

// Sentinel errors; wrapped messages say what was found and where.
var (
	// ErrNotMetadata: the file does not start with Flink's magic number.
	ErrNotMetadata = errors.New("savepoint: not a Flink checkpoint metadata file")
	// ErrVersion: a metadata format version this reader does not read.
	ErrVersion = errors.New("savepoint: unsupported metadata version")
	// ErrHandleKind: a state handle type code this reader does not know.
	ErrHandleKind = errors.New("savepoint: unknown state handle kind")
)

// Metadata is a checkpoint's or savepoint's _metadata, Flink's CheckpointMetadata.
type Metadata struct {
	Version      int             `json:"version"`
	CheckpointID int64           `json:"checkpointId"`
	MasterStates []MasterState   `json:"masterStates"`
	Operators    []OperatorState `json:"operators"`
	// Properties are the CheckpointProperties that versions 4 and later append
	// (Java-serialized); nil for version 3.
	Properties *Properties `json:"properties,omitempty"`
	// PropertiesError says why the properties could not be read, when they
	// could not; the rest of the file is still good.
	PropertiesError string `json:"propertiesError,omitempty"`
	// PropertiesErrorReason is PropertiesError's reason (reason.go).
	PropertiesErrorReason *Reason `json:"propertiesErrorReason,omitempty"`
	// Size is the file's length in bytes.
	Size int `json:"size"`
	// LoadedFiles and FileProblems: what LoadFiles read beside the file, and
	// what it could not read.
	LoadedFiles  int      `json:"loadedFiles,omitempty"`
	FileProblems []string `json:"fileProblems,omitempty"`
}

// MasterState is Flink's MasterState (state of a master hook).
type MasterState struct {
	Name    string `json:"name"`
	Version int32  `json:"version"`
	Bytes   int    `json:"bytes"`
	Data    []byte `json:"-"`
}

// OperatorState is Flink's OperatorState: one operator's state in all its subtasks.
type OperatorState struct {
	// ID is the OperatorID as Flink prints it (AbstractID.toHexString: the lower
	// long's bytes, then the upper long's, in hex).
	ID string `json:"id"`
	// Name and UID are written from version 5 on; empty before, or when unset.
	Name           string `json:"name"`
	UID            string `json:"uid"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"maxParallelism"`
	// Coordinator is the operator coordinator's state (a source enumerator's
	// splits, for example), always inline; nil when there is none.
	Coordinator *StreamHandle `json:"coordinator,omitempty"`
	// FullyFinished: every subtask had finished (FullyFinishedOperatorState).
	FullyFinished bool `json:"fullyFinished,omitempty"`
	// Subtasks in ascending subtask index.
	Subtasks []SubtaskState `json:"subtasks"`
}

// SubtaskState is Flink's OperatorSubtaskState.
type SubtaskState struct {
	Index int `json:"subtask"`
	// Finished: the subtask had finished (FinishedOperatorSubtaskState) and holds no state.
	Finished                bool                 `json:"finished,omitempty"`
	ManagedOperatorState    *OperatorStateHandle `json:"managedOperatorState,omitempty"`
	RawOperatorState        *OperatorStateHandle `json:"rawOperatorState,omitempty"`
	ManagedKeyedState       *KeyedHandle         `json:"managedKeyedState,omitempty"`
	RawKeyedState           *KeyedHandle         `json:"rawKeyedState,omitempty"`
	InputChannelState       []ChannelHandle      `json:"inputChannelState,omitempty"`
	ResultSubpartitionState []ChannelHandle      `json:"resultSubpartitionState,omitempty"`
	// RefCheckpointID is version 7's regional-checkpoint reference id.
	RefCheckpointID *int64 `json:"refCheckpointId,omitempty"`
}

// Stream handle kinds, named as Flink's classes.
const (
	KindByteStream       = "ByteStreamStateHandle"
	KindFile             = "FileStateHandle"
	KindRelativeFile     = "RelativeFileStateHandle"
	KindKeyGroupsStream  = "KeyGroupsStateHandle"
	KindSegmentFile      = "SegmentFileStateHandle"
	KindEmptySegmentFile = "EmptySegmentFileStateHandle"
)

// StreamHandle is a StreamStateHandle: where a stream of state bytes lives.
type StreamHandle struct {
	Kind string `json:"kind"`
	// Name is a ByteStreamStateHandle's handle name.
	Name string `json:"name,omitempty"`
	// Path is the file's path; for a RelativeFileStateHandle relative to the
	// savepoint directory.
	Path string `json:"path,omitempty"`
	// Size is the state size in bytes (getStateSize).
	Size int64 `json:"size"`
	// Data is an inline handle's bytes, or a file's that LoadFiles read.
	Data []byte `json:"-"`
	// Loaded: Data was read from a file in the savepoint directory.
	Loaded bool `json:"loaded,omitempty"`
	// StartPos, Scope and LogicalFileID describe a segment of a merged file
	// (SegmentFileStateHandle, file merging).
	StartPos      int64  `json:"startPos,omitempty"`
	Scope         string `json:"scope,omitempty"`
	LogicalFileID string `json:"logicalFileId,omitempty"`
	// KeyGroups and Delegate: a KeyGroupsStateHandle written where a stream
	// handle is expected (code 3, old metadata).
	KeyGroups *KeyGroupOffsets `json:"keyGroups,omitempty"`
	Delegate  *StreamHandle    `json:"delegate,omitempty"`
}

// Inline reports whether the handle's bytes are in the metadata file itself.
func (h *StreamHandle) Inline() bool { return h != nil && h.Kind == KindByteStream }

// HasData reports whether the handle's bytes are at hand: inline, or read
// from the savepoint directory by LoadFiles.
func (h *StreamHandle) HasData() bool { return h != nil && h.Data != nil }

func (h *StreamHandle) size() int64 {
	if h == nil {
		return 0
	}
	return h.Size
}

// KeyGroupOffsets is Flink's KeyGroupRangeOffsets: the range and, per key
// group, where its bytes start in the delegate stream.
type KeyGroupOffsets struct {
	Range   rescale.KeyGroupRange `json:"range"`
	Offsets []int64               `json:"offsets"`
}

// Operator state handle kinds.
const (
	KindOperatorStream           = "OperatorStreamStateHandle"
	KindFileMergingOperator      = "FileMergingOperatorStreamStateHandle"
	KindEmptyFileMergingOperator = "EmptyFileMergingOperatorStreamStateHandle"
)

// OperatorStateHandle is an OperatorStateHandle: the named operator states of
// one subtask, each with its distribution mode and the offsets of its
// elements in the delegate stream (OperatorStateHandle.StateMetaInfo).
type OperatorStateHandle struct {
	Kind   string               `json:"kind"`
	States []NamedOperatorState `json:"states"`
	// TaskOwnedDir and SharedDir: file merging's directories.
	TaskOwnedDir string        `json:"taskOwnedDir,omitempty"`
	SharedDir    string        `json:"sharedDir,omitempty"`
	Delegate     *StreamHandle `json:"delegate"`
}

// NamedOperatorState is one entry of getStateNameToPartitionOffsets.
type NamedOperatorState struct {
	Name    string       `json:"name"`
	Mode    rescale.Mode `json:"mode"`
	Offsets []int64      `json:"offsets"`
}

// modes is OperatorStateHandle.Mode in ordinal order.
var modes = []rescale.Mode{rescale.SplitDistribute, rescale.Union, rescale.Broadcast}

// Keyed handle kinds.
const (
	KindKeyGroups                = "KeyGroupsStateHandle"
	KindKeyGroupsSavepoint       = "KeyGroupsSavepointStateHandle"
	KindIncremental              = "IncrementalRemoteKeyedStateHandle"
	KindChangelogBackend         = "ChangelogStateBackendHandle"
	KindInMemoryChangelog        = "InMemoryChangelogStateHandle"
	KindChangelogStreamIncrement = "ChangelogStateHandleStreamImpl"
)

// KeyedHandle is a KeyedStateHandle. Which fields are set depends on Kind.
type KeyedHandle struct {
	Kind  string                `json:"kind"`
	Range rescale.KeyGroupRange `json:"range"`
	// Offsets per key group (KeyGroupsStateHandle, KeyGroupsSavepointStateHandle).
	Offsets  []int64       `json:"offsets,omitempty"`
	Delegate *StreamHandle `json:"delegate,omitempty"`
	// StateHandleID (KEY_GROUPS_HANDLE_V2, incremental v2, changelog handles).
	StateHandleID string `json:"stateHandleId,omitempty"`
	// Incremental (RocksDB) handles.
	CheckpointID     int64         `json:"checkpointId,omitempty"`
	BackendID        string        `json:"backendId,omitempty"`
	CheckpointedSize int64         `json:"checkpointedSize,omitempty"` // -1: unknown (old handle)
	MetaData         *StreamHandle `json:"metaData,omitempty"`
	SharedFiles      []NamedStream `json:"sharedFiles,omitempty"`
	PrivateFiles     []NamedStream `json:"privateFiles,omitempty"`
	// Changelog backend handle.
	Materialized      []*KeyedHandle `json:"materialized,omitempty"`
	NonMaterialized   []*KeyedHandle `json:"nonMaterialized,omitempty"`
	MaterializationID int64          `json:"materializationId,omitempty"`
	// In-memory changelog increment.
	From    int64         `json:"from,omitempty"`
	To      int64         `json:"to,omitempty"`
	Changes []StateChange `json:"changes,omitempty"`
	// Changelog file increment.
	HandlesAndOffsets []OffsetStream `json:"handlesAndOffsets,omitempty"`
	StreamStateSize   int64          `json:"stateSize,omitempty"`
	StorageIdentifier string         `json:"storageIdentifier,omitempty"`
}

// NamedStream is one of an incremental handle's files: the local file name
// (an SST, MANIFEST, …) and where it was uploaded.
type NamedStream struct {
	LocalPath string        `json:"localPath"`
	Handle    *StreamHandle `json:"handle"`
}

// StateChange is one change in an in-memory changelog increment.
type StateChange struct {
	KeyGroup int    `json:"keyGroup"`
	Bytes    int    `json:"bytes"`
	Data     []byte `json:"-"`
}

// OffsetStream is a changelog file increment's part.
type OffsetStream struct {
	Offset int64         `json:"offset"`
	Handle *StreamHandle `json:"handle"`
}

// Size is the handle's state size in bytes, as Flink's getStateSize computes it.
func (k *KeyedHandle) Size() int64 {
	if k == nil {
		return 0
	}
	switch k.Kind {
	case KindIncremental:
		s := k.MetaData.size()
		for _, f := range k.SharedFiles {
			s += f.Handle.size()
		}
		for _, f := range k.PrivateFiles {
			s += f.Handle.size()
		}
		return s
	case KindChangelogBackend:
		var s int64
		for _, h := range k.Materialized {
			s += h.Size()
		}
		for _, h := range k.NonMaterialized {
			s += h.Size()
		}
		return s
	case KindInMemoryChangelog:
		var s int64
		for _, c := range k.Changes {
			s += int64(c.Bytes)
		}
		return s
	case KindChangelogStreamIncrement:
		return k.StreamStateSize
	}
	return k.Delegate.size()
}

// KeyGroupBytes is, for a handle with per-key-group offsets, the bytes of
// each key group of its range: from its offset to the next larger offset of
// any key group, or to the end of the stream. An offset of 0 marks a key group
// with no data: a full snapshot (FullSnapshotAsyncWriter) records offsets only
// for the key groups it writes, and the restore skips a 0 offset
// (FullSnapshotRestoreOperation). Nil when the handle has no offsets
// (incremental and changelog handles keep whole files, not key groups).
func (k *KeyedHandle) KeyGroupBytes() []int64 {
	if k == nil || len(k.Offsets) == 0 {
		return nil
	}
	end := k.Delegate.size()
	sorted := make([]int64, 0, len(k.Offsets))
	for _, o := range k.Offsets {
		if o > 0 {
			sorted = append(sorted, o)
		}
	}
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	out := make([]int64, len(k.Offsets))
	seen := make(map[int64]bool, len(sorted))
	for i, o := range k.Offsets {
		if o <= 0 || seen[o] {
			continue // no data, or a second key group claiming the same bytes
		}
		seen[o] = true
		next := end
		if j, _ := slices.BinarySearch(sorted, o); j+1 < len(sorted) {
			next = sorted[j+1]
		}
		if d := next - o; d > 0 {
			out[i] = d
		}
	}
	return out
}

// ChannelHandle is an in-flight data handle of an unaligned checkpoint:
// InputChannelStateHandle / ResultSubpartitionStateHandle, or their merged
// forms (ChannelStateHandleSerializerV2, metadata version 6 and later).
type ChannelHandle struct {
	Kind    string `json:"kind"`
	Subtask int    `json:"subtask"`
	// Gate/Channel (input) or Partition/Subpartition (output) of a single-channel handle.
	Info     [2]int32      `json:"info"`
	Offsets  []int64       `json:"offsets,omitempty"`
	Size     int64         `json:"size"`
	Delegate *StreamHandle `json:"delegate"`
	// SerializedChannelOffsets of a merged handle (bytes).
	SerializedOffsets int `json:"serializedOffsets,omitempty"`
}

// Read parses a _metadata file's bytes. It follows Checkpoints.loadCheckpointMetadata:
// the magic number, the format version, then that version's serializer.
func Read(b []byte) (*Metadata, error) {
	r := &reader{b: b}
	if len(b) < 4 {
		return nil, failed(ErrNotMetadata, reason(ReasonTooShort, "size", itoa(len(b)), "magic", hex32(MagicNumber)),
			"the file has %d bytes, fewer than the 4-byte magic number 0x%08x", len(b), MagicNumber)
	}
	magic, _ := r.i32("magic number")
	if uint32(magic) != MagicNumber {
		return nil, failed(ErrNotMetadata, reason(ReasonBadMagic, "found", hex32(uint32(magic)), "magic", hex32(MagicNumber)),
			"it starts with 0x%08x, Flink's _metadata starts with 0x%08x", uint32(magic), MagicNumber)
	}
	v, err := r.i32("version")
	if err != nil {
		return nil, err
	}
	switch {
	case v == 1 || v == 2:
		return nil, failed(ErrVersion, reason(ReasonVersionOld, "version", itoa(v), "min", itoa(MinVersion), "max", itoa(MaxVersion)),
			"version %d was written by Flink 1.10 or older; StateLab reads versions %d to %d (Flink 1.11 and later)", v, MinVersion, MaxVersion)
	case v < MinVersion || v > MaxVersion:
		return nil, failed(ErrVersion, reason(ReasonVersionNew, "version", itoa(v), "min", itoa(MinVersion), "max", itoa(MaxVersion)),
			"version %d is unknown; StateLab reads versions %d to %d (a newer Flink may have written this file)", v, MinVersion, MaxVersion)
	}
	m := &Metadata{Version: int(v), Size: len(b), MasterStates: []MasterState{}, Operators: []OperatorState{}}
	if err := m.readBody(r); err != nil {
		return nil, err
	}
	if m.Version >= 4 {
		p, err := readProperties(r.b[r.pos:])
		if err != nil {
			m.PropertiesError = err.Error()
			pr := reasonFor(err)
			m.PropertiesErrorReason = &pr
		} else {
			m.Properties = p
		}
	}
	return m, nil
}

// readBody is MetadataV2V3SerializerBase.deserializeMetadata.
func (m *Metadata) readBody(r *reader) error {
	id, err := r.i64("checkpoint id")
	if err != nil {
		return err
	}
	if id < 0 {
		return failed(ErrCorrupt, reason(ReasonNegativeID, "id", itoa(id)), "checkpoint id %d is negative", id)
	}
	m.CheckpointID = id
	n, err := r.count("number of master states", 8)
	if err != nil {
		return err
	}
	for i := range n {
		ms, err := readMasterState(r)
		if err != nil {
			return within(err, reason(ReasonInMasterState, "index", itoa(i)), "master state %d", i)
		}
		m.MasterStates = append(m.MasterStates, ms)
	}
	n, err = r.count("number of operator states", 29)
	if err != nil {
		return err
	}
	for i := range n {
		op, err := m.readOperator(r)
		if err != nil {
			return within(err, reason(ReasonInOperator, "index", itoa(i)), "operator state %d", i)
		}
		m.Operators = append(m.Operators, op)
	}
	return nil
}

func readMasterState(r *reader) (MasterState, error) {
	magic, err := r.i32("master state magic number")
	if err != nil {
		return MasterState{}, err
	}
	if magic != masterStateMagic {
		return MasterState{}, failed(ErrCorrupt, reason(ReasonMasterMagic, "found", hex32(uint32(magic)), "magic", "0xc96b1696"),
			"master state starts with 0x%08x, not 0xc96b1696", uint32(magic))
	}
	n, err := r.i32("master state length")
	if err != nil {
		return MasterState{}, err
	}
	if n <= 0 {
		return MasterState{}, failed(ErrCorrupt, reason(ReasonMasterLength, "length", itoa(n)), "master state length %d", n)
	}
	data, err := r.bytes(int(n), "master state")
	if err != nil {
		return MasterState{}, err
	}
	in := &reader{b: data}
	ver, err := in.i32("master state version")
	if err != nil {
		return MasterState{}, err
	}
	name, err := in.utf("master state name")
	if err != nil {
		return MasterState{}, err
	}
	bn, err := in.count("master state payload length", 1)
	if err != nil {
		return MasterState{}, err
	}
	payload, err := in.bytes(bn, "master state payload")
	if err != nil {
		return MasterState{}, err
	}
	if in.remaining() != 0 {
		return MasterState{}, failed(ErrCorrupt, reason(ReasonMasterTrailing, "left", itoa(in.remaining()), "name", name),
			"%d trailing bytes in master state %q", in.remaining(), name)
	}
	return MasterState{Name: name, Version: ver, Bytes: len(payload), Data: payload}, nil
}

// readOperator is MetadataV3Serializer.deserializeOperatorState, with
// MetadataV5Serializer's name and uid in front from version 5 on.
func (m *Metadata) readOperator(r *reader) (OperatorState, error) {
	var op OperatorState
	if m.Version >= 5 {
		var err error
		if op.Name, err = r.utf("operator name"); err != nil {
			return op, err
		}
		if op.UID, err = r.utf("operator uid"); err != nil {
			return op, err
		}
	}
	// OperatorID(lowerPart, upperPart); toHexString prints lower then upper,
	// each big-endian, which is the order of the bytes in the file.
	id, err := r.bytes(16, "operator id")
	if err != nil {
		return op, err
	}
	op.ID = hex.EncodeToString(id)
	p, err := r.i32("parallelism")
	if err != nil {
		return op, err
	}
	mp, err := r.i32("max parallelism")
	if err != nil {
		return op, err
	}
	op.Parallelism, op.MaxParallelism = int(p), int(mp)
	if p < 0 || mp < 0 {
		return op, failed(ErrCorrupt, reason(ReasonParallelism, "operator", op.ID, "parallelism", itoa(p), "maxParallelism", itoa(mp)),
			"operator %s has parallelism %d and max parallelism %d", op.ID, p, mp)
	}
	coord, err := readStreamHandle(r)
	if err != nil {
		return op, within(err, reason(ReasonInCoordinator), "coordinator state")
	}
	if coord != nil && coord.Kind != KindByteStream {
		// deserializeAndCheckByteStreamStateHandle
		return op, failed(ErrCorrupt, reason(ReasonCoordinatorKind, "operator", op.ID, "kind", string(coord.Kind)),
			"coordinator state of operator %s is a %s, Flink expects a ByteStreamStateHandle", op.ID, coord.Kind)
	}
	op.Coordinator = coord
	at := r.pos
	ns, err := r.i32("number of subtask states")
	if err != nil {
		return op, err
	}
	op.Subtasks = []SubtaskState{}
	if ns < 0 {
		if coord != nil {
			return op, failed(ErrCorrupt, reason(ReasonFinishedCoordinator, "operator", op.ID), "fully finished operator %s has coordinator state", op.ID)
		}
		op.FullyFinished = true
		return op, nil
	}
	if int(ns) > r.remaining()/4 {
		return op, countBeyond("number of subtask states", int64(ns), at, r.remaining())
	}
	byIndex := map[int]int{}
	for range ns {
		st, err := m.readSubtask(r)
		if err != nil {
			return op, err
		}
		if st.Index >= op.Parallelism {
			// OperatorState.putState refuses an index at or above the parallelism.
			return op, failed(ErrCorrupt, reason(ReasonSubtaskBeyond, "operator", op.ID, "parallelism", itoa(op.Parallelism), "subtask", itoa(st.Index)),
				"operator %s has parallelism %d but state for subtask %d", op.ID, op.Parallelism, st.Index)
		}
		if j, ok := byIndex[st.Index]; ok {
			op.Subtasks[j] = st // a HashMap put: the later one wins
			continue
		}
		byIndex[st.Index] = len(op.Subtasks)
		op.Subtasks = append(op.Subtasks, st)
	}
	sort.Slice(op.Subtasks, func(i, j int) bool { return op.Subtasks[i].Index < op.Subtasks[j].Index })
	return op, nil
}

func (m *Metadata) readSubtask(r *reader) (SubtaskState, error) {
	idx, err := r.i32("subtask index")
	if err != nil {
		return SubtaskState{}, err
	}
	if idx < 0 {
		// A finished subtask is stored as -(index + 1).
		return SubtaskState{Index: int(-(int64(idx) + 1)), Finished: true}, nil
	}
	st := SubtaskState{Index: int(idx)}
	wrap := func(err error, what string) error {
		return within(err, reason(ReasonInSubtask+"-"+strings.ReplaceAll(what, " ", "-"), "subtask", itoa(idx)), "subtask %d %s", idx, what)
	}
	has, err := r.i32("managed operator state flag")
	if err != nil {
		return st, wrap(err, "managed operator state")
	}
	if has != 0 {
		if st.ManagedOperatorState, err = readOperatorStateHandle(r); err != nil {
			return st, wrap(err, "managed operator state")
		}
	}
	if has, err = r.i32("raw operator state flag"); err != nil {
		return st, wrap(err, "raw operator state")
	}
	if has != 0 {
		if st.RawOperatorState, err = readOperatorStateHandle(r); err != nil {
			return st, wrap(err, "raw operator state")
		}
	}
	if st.ManagedKeyedState, err = readKeyedHandle(r); err != nil {
		return st, wrap(err, "managed keyed state")
	}
	if st.RawKeyedState, err = readKeyedHandle(r); err != nil {
		return st, wrap(err, "raw keyed state")
	}
	if st.InputChannelState, err = m.readChannelHandles(r, true); err != nil {
		return st, wrap(err, "input channel state")
	}
	if st.ResultSubpartitionState, err = m.readChannelHandles(r, false); err != nil {
		return st, wrap(err, "result subpartition state")
	}
	if m.Version >= 7 {
		// MetadataV7Serializer: a marker byte, then the id when the marker is 1.
		mark, err := r.u8("ref checkpoint id marker")
		if err != nil {
			return st, wrap(err, "ref checkpoint id")
		}
		if mark == 1 {
			id, err := r.i64("ref checkpoint id")
			if err != nil {
				return st, wrap(err, "ref checkpoint id")
			}
			st.RefCheckpointID = &id
		}
	}
	return st, nil
}

// Stream state handle codes (MetadataV2V3SerializerBase).
const (
	codeNull                 = 0
	codeByteStream           = 1
	codeFileStream           = 2
	codeKeyGroups            = 3
	codePartitionableOpState = 4
	codeIncremental          = 5
	codeRelativeStream       = 6
	codeSavepointKeyGroups   = 7
	codeChangelog            = 8
	codeChangelogBytes       = 9
	codeChangelogFile        = 10
	codeIncrementalV2        = 11
	codeKeyGroupsV2          = 12
	codeChangelogFileV2      = 13
	codeChangelogV2          = 14
	codeSegmentFile          = 15
	codeEmptySegmentFile     = 16
	codeSegmentOpState       = 17
)

// scopes is CheckpointedStateScope in ordinal order.
var scopes = []string{"SHARED", "EXCLUSIVE"}

// readStreamHandle is deserializeStreamStateHandle.
func readStreamHandle(r *reader) (*StreamHandle, error) {
	if err := r.enter("stream state handle"); err != nil {
		return nil, err
	}
	defer r.leave()
	at := r.pos
	code, err := r.u8("stream state handle type")
	if err != nil {
		return nil, err
	}
	switch code {
	case codeNull:
		return nil, nil
	case codeFileStream:
		size, err := r.i64("file state size")
		if err != nil {
			return nil, err
		}
		path, err := r.utf("file path")
		if err != nil {
			return nil, err
		}
		return &StreamHandle{Kind: KindFile, Path: path, Size: size}, nil
	case codeByteStream:
		name, err := r.utf("byte stream handle name")
		if err != nil {
			return nil, err
		}
		n, err := r.count("byte stream length", 1)
		if err != nil {
			return nil, err
		}
		data, err := r.bytes(n, "byte stream data")
		if err != nil {
			return nil, err
		}
		return &StreamHandle{Kind: KindByteStream, Name: name, Size: int64(n), Data: data}, nil
	case codeRelativeStream:
		path, err := r.utf("relative path")
		if err != nil {
			return nil, err
		}
		size, err := r.i64("relative file state size")
		if err != nil {
			return nil, err
		}
		return &StreamHandle{Kind: KindRelativeFile, Path: path, Size: size}, nil
	case codeKeyGroups:
		kg, err := readKeyGroupOffsets(r)
		if err != nil {
			return nil, err
		}
		d, err := readStreamHandle(r)
		if err != nil {
			return nil, err
		}
		return &StreamHandle{Kind: KindKeyGroupsStream, KeyGroups: kg, Delegate: d, Size: d.size()}, nil
	case codeSegmentFile:
		start, err := r.i64("segment start position")
		if err != nil {
			return nil, err
		}
		size, err := r.i64("segment state size")
		if err != nil {
			return nil, err
		}
		sc, err := r.i32("segment scope")
		if err != nil {
			return nil, err
		}
		if sc < 0 || int(sc) >= len(scopes) {
			return nil, failed(ErrCorrupt, reason(ReasonStateScope, "scope", itoa(sc)), "checkpointed state scope %d (want 0 SHARED or 1 EXCLUSIVE)", sc)
		}
		path, err := r.utf("segment file path")
		if err != nil {
			return nil, err
		}
		lid, err := r.utf("logical file id")
		if err != nil {
			return nil, err
		}
		return &StreamHandle{Kind: KindSegmentFile, Path: path, Size: size, StartPos: start, Scope: scopes[sc], LogicalFileID: lid}, nil
	case codeEmptySegmentFile:
		return &StreamHandle{Kind: KindEmptySegmentFile}, nil
	}
	return nil, failed(ErrHandleKind, reason(ReasonStreamHandleKind, "type", itoa(code), "offset", itoa(at), "known", "0-3, 6, 15, 16"),
		"stream state handle type %d at offset %d (StateLab knows 0-3, 6, 15, 16)", code, at)
}

// readKeyGroupOffsets reads a key-group range (start, count) and one long
// offset per key group, as KeyGroupRangeOffsets is written.
func readKeyGroupOffsets(r *reader) (*KeyGroupOffsets, error) {
	at := r.pos + 4 // the number of key groups, after the start
	rg, n, err := readRange(r)
	if err != nil {
		return nil, err
	}
	if int64(n)*8 > int64(r.remaining()) {
		return nil, countBeyond("number of key-group offsets", int64(n), at, r.remaining())
	}
	offs := make([]int64, n)
	for i := range offs {
		offs[i], _ = r.i64("key-group offset")
	}
	return &KeyGroupOffsets{Range: rg, Offsets: offs}, nil
}

// readRange reads startKeyGroup and numberOfKeyGroups as KeyGroupRange.of
// accepts them.
func readRange(r *reader) (rescale.KeyGroupRange, int, error) {
	start, err := r.i32("start key group")
	if err != nil {
		return rescale.KeyGroupRange{}, 0, err
	}
	n, err := r.i32("number of key groups")
	if err != nil {
		return rescale.KeyGroupRange{}, 0, err
	}
	if start < 0 || n < 0 || int64(start)+int64(n)-1 > 1<<31-1 {
		return rescale.KeyGroupRange{}, 0, failed(ErrCorrupt, reason(ReasonKeyGroupRange, "start", itoa(start), "count", itoa(n)), "key-group range start %d, %d key groups", start, n)
	}
	if n == 0 {
		return rescale.EmptyKeyGroupRange, 0, nil
	}
	return rescale.NewKeyGroupRange(int(start), int(start)+int(n)-1), int(n), nil
}

// readKeyedHandle is deserializeKeyedStateHandle.
func readKeyedHandle(r *reader) (*KeyedHandle, error) {
	if err := r.enter("keyed state handle"); err != nil {
		return nil, err
	}
	defer r.leave()
	at := r.pos
	code, err := r.i8("keyed state handle type")
	if err != nil {
		return nil, err
	}
	switch code {
	case codeNull:
		return nil, nil
	case codeKeyGroups, codeKeyGroupsV2, codeSavepointKeyGroups:
		kg, err := readKeyGroupOffsets(r)
		if err != nil {
			return nil, err
		}
		d, err := readStreamHandle(r)
		if err != nil {
			return nil, err
		}
		h := &KeyedHandle{Kind: KindKeyGroups, Range: kg.Range, Offsets: kg.Offsets, Delegate: d}
		switch code {
		case codeSavepointKeyGroups:
			h.Kind = KindKeyGroupsSavepoint
		case codeKeyGroupsV2:
			if h.StateHandleID, err = r.utf("state handle id"); err != nil {
				return nil, err
			}
		}
		return h, nil
	case codeIncremental, codeIncrementalV2:
		h := &KeyedHandle{Kind: KindIncremental, CheckpointedSize: -1}
		if h.CheckpointID, err = r.i64("incremental checkpoint id"); err != nil {
			return nil, err
		}
		if h.BackendID, err = r.utf("backend id"); err != nil {
			return nil, err
		}
		if h.Range, _, err = readRange(r); err != nil {
			return nil, err
		}
		if code == codeIncrementalV2 {
			if h.CheckpointedSize, err = r.i64("checkpointed size"); err != nil {
				return nil, err
			}
		}
		if h.MetaData, err = readStreamHandle(r); err != nil {
			return nil, fmt.Errorf("meta data handle: %w", err)
		}
		if h.SharedFiles, err = readNamedStreams(r, "shared"); err != nil {
			return nil, err
		}
		if h.PrivateFiles, err = readNamedStreams(r, "private"); err != nil {
			return nil, err
		}
		if code == codeIncrementalV2 {
			if h.StateHandleID, err = r.utf("state handle id"); err != nil {
				return nil, err
			}
		}
		return h, nil
	case codeChangelog, codeChangelogV2:
		h := &KeyedHandle{Kind: KindChangelogBackend}
		if h.Range, _, err = readRange(r); err != nil {
			return nil, err
		}
		if h.CheckpointedSize, err = r.i64("checkpointed size"); err != nil {
			return nil, err
		}
		n, err := r.count("number of materialized handles", 1)
		if err != nil {
			return nil, err
		}
		for range n {
			k, err := readKeyedHandle(r)
			if err != nil {
				return nil, fmt.Errorf("materialized part: %w", err)
			}
			if k != nil { // Flink logs and skips a null one
				h.Materialized = append(h.Materialized, k)
			}
		}
		if n, err = r.count("number of non-materialized handles", 1); err != nil {
			return nil, err
		}
		for range n {
			k, err := readKeyedHandle(r)
			if err != nil {
				return nil, fmt.Errorf("non-materialized part: %w", err)
			}
			if k == nil || (k.Kind != KindInMemoryChangelog && k.Kind != KindChangelogStreamIncrement) {
				kind := "null"
				if k != nil {
					kind = k.Kind
				}
				return nil, failed(ErrCorrupt, reason(ReasonChangelogPart, "kind", string(kind)),
					"non-materialized part of a changelog handle is %s, Flink expects a ChangelogStateHandle", kind)
			}
			h.NonMaterialized = append(h.NonMaterialized, k)
		}
		if h.MaterializationID, err = r.i64("materialization id"); err != nil {
			return nil, err
		}
		h.CheckpointID = h.MaterializationID
		if code == codeChangelogV2 {
			if h.CheckpointID, err = r.i64("checkpoint id"); err != nil {
				return nil, err
			}
		}
		if h.StateHandleID, err = r.utf("state handle id"); err != nil {
			return nil, err
		}
		return h, nil
	case codeChangelogBytes:
		h := &KeyedHandle{Kind: KindInMemoryChangelog}
		if h.Range, _, err = readRange(r); err != nil {
			return nil, err
		}
		if h.From, err = r.i64("changelog from"); err != nil {
			return nil, err
		}
		if h.To, err = r.i64("changelog to"); err != nil {
			return nil, err
		}
		n, err := r.count("number of state changes", 8)
		if err != nil {
			return nil, err
		}
		for range n {
			kg, err := r.i32("state change key group")
			if err != nil {
				return nil, err
			}
			bn, err := r.count("state change length", 1)
			if err != nil {
				return nil, err
			}
			data, err := r.bytes(bn, "state change")
			if err != nil {
				return nil, err
			}
			h.Changes = append(h.Changes, StateChange{KeyGroup: int(kg), Bytes: bn, Data: data})
		}
		if h.StateHandleID, err = r.utf("state handle id"); err != nil {
			return nil, err
		}
		return h, nil
	case codeChangelogFile, codeChangelogFileV2:
		h := &KeyedHandle{Kind: KindChangelogStreamIncrement, StorageIdentifier: "filesystem"}
		if h.Range, _, err = readRange(r); err != nil {
			return nil, err
		}
		n, err := r.count("number of changelog handles", 9)
		if err != nil {
			return nil, err
		}
		for range n {
			off, err := r.i64("changelog offset")
			if err != nil {
				return nil, err
			}
			s, err := readStreamHandle(r)
			if err != nil {
				return nil, err
			}
			h.HandlesAndOffsets = append(h.HandlesAndOffsets, OffsetStream{Offset: off, Handle: s})
		}
		if h.StreamStateSize, err = r.i64("changelog state size"); err != nil {
			return nil, err
		}
		if h.CheckpointedSize, err = r.i64("checkpointed size"); err != nil {
			return nil, err
		}
		if h.StateHandleID, err = r.utf("state handle id"); err != nil {
			return nil, err
		}
		if code == codeChangelogFileV2 {
			if h.StorageIdentifier, err = r.utf("storage identifier"); err != nil {
				return nil, err
			}
		}
		return h, nil
	}
	return nil, failed(ErrHandleKind, reason(ReasonKeyedHandleKind, "type", itoa(code), "offset", itoa(at), "known", "0, 3, 5, 7-14"),
		"keyed state handle type %d at offset %d (StateLab knows 0, 3, 5, 7-14)", code, at)
}

// readNamedStreams is deserializeHandleAndLocalPathList (older Flink wrote the
// same bytes as a StateHandleID -> handle map).
func readNamedStreams(r *reader, what string) ([]NamedStream, error) {
	n, err := r.count("number of "+what+" files", 3)
	if err != nil {
		return nil, err
	}
	out := make([]NamedStream, 0, n)
	for range n {
		name, err := r.utf(what + " file name")
		if err != nil {
			return nil, err
		}
		h, err := readStreamHandle(r)
		if err != nil {
			return nil, fmt.Errorf("%s file %q: %w", what, name, err)
		}
		out = append(out, NamedStream{LocalPath: name, Handle: h})
	}
	return out, nil
}

// readOperatorStateHandle is deserializeOperatorStateHandle.
func readOperatorStateHandle(r *reader) (*OperatorStateHandle, error) {
	at := r.pos
	code, err := r.i8("operator state handle type")
	if err != nil {
		return nil, err
	}
	switch code {
	case codeNull:
		return nil, nil
	case codePartitionableOpState, codeSegmentOpState:
	default:
		return nil, failed(ErrHandleKind, reason(ReasonOperatorHandleKind, "type", itoa(code), "offset", itoa(at), "known", "0, 4, 17"),
			"operator state handle type %d at offset %d (StateLab knows 0, 4, 17)", code, at)
	}
	h := &OperatorStateHandle{Kind: KindOperatorStream}
	n, err := r.count("number of named operator states", 7)
	if err != nil {
		return nil, err
	}
	h.States = make([]NamedOperatorState, 0, n)
	for range n {
		name, err := r.utf("operator state name")
		if err != nil {
			return nil, err
		}
		mo, err := r.i8("distribution mode")
		if err != nil {
			return nil, err
		}
		if mo < 0 || int(mo) >= len(modes) {
			return nil, failed(ErrCorrupt, reason(ReasonDistributionMode, "state", name, "mode", itoa(mo)),
				"operator state %q has distribution mode %d (want 0 SPLIT_DISTRIBUTE, 1 UNION or 2 BROADCAST)", name, mo)
		}
		k, err := r.count("number of element offsets", 8)
		if err != nil {
			return nil, err
		}
		offs := make([]int64, k)
		for i := range offs {
			offs[i], _ = r.i64("element offset")
		}
		h.States = append(h.States, NamedOperatorState{Name: name, Mode: modes[mo], Offsets: offs})
	}
	if code == codeSegmentOpState {
		if h.TaskOwnedDir, err = r.utf("task-owned directory"); err != nil {
			return nil, err
		}
		if h.SharedDir, err = r.utf("shared directory"); err != nil {
			return nil, err
		}
		empty, err := r.boolean("empty flag")
		if err != nil {
			return nil, err
		}
		h.Kind = KindFileMergingOperator
		if empty {
			h.Kind = KindEmptyFileMergingOperator
		}
	}
	if h.Delegate, err = readStreamHandle(r); err != nil {
		return nil, err
	}
	if code == codeSegmentOpState && (h.Delegate == nil || (h.Delegate.Kind != KindSegmentFile && h.Delegate.Kind != KindEmptySegmentFile)) {
		return nil, failed(ErrCorrupt, reason(ReasonSegmentDelegate), "a file-merging operator state handle must delegate to a segment file")
	}
	return h, nil
}

// Channel state handle codes (ChannelStateHandleSerializerV2).
const (
	chanInput        = 1
	chanOutput       = 2
	chanMergedInput  = 3
	chanMergedOutput = 4
)

// readChannelHandles reads a collection of channel state handles: with
// ChannelStateHandleSerializerV1 (versions 3-5) each is a single-channel
// handle; with V2 (version 6 and later) each starts with a type byte.
func (m *Metadata) readChannelHandles(r *reader, input bool) ([]ChannelHandle, error) {
	n, err := r.count("number of channel state handles", 17)
	if err != nil {
		return nil, err
	}
	var out []ChannelHandle
	for range n {
		kind := "InputChannelStateHandle"
		if !input {
			kind = "ResultSubpartitionStateHandle"
		}
		if m.Version >= 6 {
			at := r.pos
			code, err := r.u8("channel state handle type")
			if err != nil {
				return nil, err
			}
			switch {
			case input && code == chanInput, !input && code == chanOutput:
			case input && code == chanMergedInput, !input && code == chanMergedOutput:
				h, err := readMergedChannel(r)
				if err != nil {
					return nil, err
				}
				h.Kind = "Merged" + kind
				out = append(out, h)
				continue
			default:
				plain, merged := chanInput, chanMergedInput
				side := "input"
				if !input {
					plain, merged, side = chanOutput, chanMergedOutput, "output"
				}
				return nil, failed(ErrHandleKind, reason(ReasonChannelHandleKind, "type", itoa(code), "offset", itoa(at), "known", itoa(plain)+", "+itoa(merged)),
					"%s channel state handle type %d at offset %d (the type must be one of %d, %d)", side, code, at, plain, merged)
			}
		}
		h, err := readChannel(r)
		if err != nil {
			return nil, err
		}
		h.Kind = kind
		out = append(out, h)
	}
	return out, nil
}

// readChannel is ChannelStateHandleSerializerV1.deserializeChannelStateHandle;
// both InputChannelInfo (gate, channel) and ResultSubpartitionInfo
// (partition, subpartition) are two ints (ChannelStateHelper).
func readChannel(r *reader) (ChannelHandle, error) {
	var h ChannelHandle
	st, err := r.i32("channel subtask index")
	if err != nil {
		return h, err
	}
	h.Subtask = int(st)
	for i := range h.Info {
		if h.Info[i], err = r.i32("channel info"); err != nil {
			return h, err
		}
	}
	n, err := r.count("number of channel offsets", 8)
	if err != nil {
		return h, err
	}
	h.Offsets = make([]int64, n)
	for i := range h.Offsets {
		h.Offsets[i], _ = r.i64("channel offset")
	}
	if h.Size, err = r.i64("channel state size"); err != nil {
		return h, err
	}
	h.Delegate, err = readStreamHandle(r)
	return h, err
}

// readMergedChannel is ChannelStateHandleSerializerV2.deserializeMergedChannelStateHandle.
func readMergedChannel(r *reader) (ChannelHandle, error) {
	var h ChannelHandle
	st, err := r.i32("merged channel subtask index")
	if err != nil {
		return h, err
	}
	h.Subtask = int(st)
	if h.Size, err = r.i64("merged channel state size"); err != nil {
		return h, err
	}
	if h.Delegate, err = readStreamHandle(r); err != nil {
		return h, err
	}
	n, err := r.count("serialized channel offsets length", 1)
	if err != nil {
		return h, err
	}
	if _, err := r.bytes(n, "serialized channel offsets"); err != nil {
		return h, err
	}
	h.SerializedOffsets = n
	return h, nil
}
