package state

import (
	"github.com/statelab/statelab/rescale"
)

// SnapshotTarget says what a snapshot is for. Checkpoint and savepoint ids
// share one counter, as in Flink.
type SnapshotTarget struct {
	CheckpointID int64 `json:"checkpointId"`
	// Savepoint snapshots are self-contained and in the canonical full
	// format, whatever the backend, so they restore into either backend.
	Savepoint bool `json:"savepoint"`
	// Copy marks the snapshot through which a fork copies a live backend
	// (clone.go): it keeps the state exactly as it is, expired TTL entries
	// included, so the copy equals the original.
	Copy bool `json:"-"`
}

// SnapshotFormat is how a keyed snapshot is laid out.
type SnapshotFormat string

// Snapshot formats.
const (
	// FormatFull is one file, key groups in ascending order, with the offset
	// of each key group in the handle. Both backends write and read it.
	FormatFull SnapshotFormat = "full"
	// FormatIncremental is a Pebble checkpoint: SST files in shared/ (reused
	// across checkpoints) plus private files (MANIFEST, OPTIONS, markers) in
	// the checkpoint's own directory. Only the pebble backend reads it.
	FormatIncremental SnapshotFormat = "incremental"
)

// FileRef names one file in checkpoint storage. Path is relative to the job's
// directory, slash-separated (chk-7/count-1.kg, shared/3f…-000012.sst).
type FileRef struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

// SSTFile is one file of a Pebble checkpoint: its name in the Pebble
// directory and where it lives in checkpoint storage.
type SSTFile struct {
	LocalName string  `json:"localName"`
	File      FileRef `json:"file"`
}

// KeyedStateHandle is the snapshot of one keyed backend, Flink's
// KeyGroupsStateHandle (full) or IncrementalRemoteKeyedStateHandle.
type KeyedStateHandle struct {
	Backend        BackendKind           `json:"backend"`
	Format         SnapshotFormat        `json:"format"`
	CheckpointID   int64                 `json:"checkpointId"`
	MaxParallelism int                   `json:"maxParallelism"`
	KeyGroupRange  rescale.KeyGroupRange `json:"keyGroupRange"`
	States         []StateInfo           `json:"states"`

	// Full format: the file and Flink's KeyGroupRangeOffsets, the byte offset
	// of each key group of KeyGroupRange in order. Key group g's block ends
	// where the next one starts (the last ends at File.Size).
	File    *FileRef `json:"file,omitempty"`
	Offsets []int64  `json:"offsets,omitempty"`

	// Incremental format.
	SharedFiles  []SSTFile `json:"sharedFiles,omitempty"`
	PrivateFiles []SSTFile `json:"privateFiles,omitempty"`

	// StateSize is the full size of the snapshot; CheckpointedSize what this
	// checkpoint wrote (smaller when incremental), as Flink's UI shows them.
	StateSize        int64 `json:"stateSize"`
	CheckpointedSize int64 `json:"checkpointedSize"`
}

// Files lists every file the handle refers to.
func (h *KeyedStateHandle) Files() []FileRef {
	if h == nil {
		return nil
	}
	var out []FileRef
	if h.File != nil {
		out = append(out, *h.File)
	}
	for _, f := range h.SharedFiles {
		out = append(out, f.File)
	}
	for _, f := range h.PrivateFiles {
		out = append(out, f.File)
	}
	return out
}

// OperatorSnapshot is the operator state of one subtask. It is small and is
// kept inline in the checkpoint metadata, as Flink inlines state below
// state.storage.fs.memory-threshold.
type OperatorSnapshot struct {
	States []OperatorStateSnapshot `json:"states"`
}

// OperatorStateSnapshot is one named operator state. Elements are encoded by
// the state's codec; a BroadcastState entry is a key and a value, each
// uvarint-length-prefixed.
type OperatorStateSnapshot struct {
	Name     string       `json:"name"`
	Mode     rescale.Mode `json:"mode"`
	Elements [][]byte     `json:"elements"`
}

// Size is the number of element bytes.
func (s *OperatorSnapshot) Size() int64 {
	if s == nil {
		return 0
	}
	var n int64
	for _, st := range s.States {
		for _, e := range st.Elements {
			n += int64(len(e))
		}
	}
	return n
}

// CheckpointMetadata is a completed checkpoint or savepoint, what Flink's
// _metadata file holds: the state of every operator subtask.
type CheckpointMetadata struct {
	JobID        string          `json:"jobId"`
	CheckpointID int64           `json:"checkpointId"`
	Savepoint    bool            `json:"savepoint"`
	Operators    []OperatorState `json:"operators"`
	// Properties is free-form engine data (e.g. the job graph's shape).
	Properties map[string]string `json:"properties,omitempty"`
}

// OperatorState is the state of one operator, Flink's OperatorState.
//
// OperatorID is the operator's name in the job that wrote the checkpoint;
// Hash is what Flink calls the OperatorID (32 hex digits, from the
// operator's uid or generated from the topology), the key a restore matches
// state by; UID is the uid it came from, if any. A checkpoint without Hash
// (written before StateLab had uids) is matched by name.
type OperatorState struct {
	OperatorID     string         `json:"operatorId"`
	Hash           string         `json:"hash,omitempty"`
	UID            string         `json:"uid,omitempty"`
	Parallelism    int            `json:"parallelism"`
	MaxParallelism int            `json:"maxParallelism"`
	Subtasks       []SubtaskState `json:"subtasks"`
}

// SubtaskState is the state of one subtask, Flink's OperatorSubtaskState.
type SubtaskState struct {
	Subtask  int               `json:"subtask"`
	Keyed    *KeyedStateHandle `json:"keyed,omitempty"`
	Operator *OperatorSnapshot `json:"operator,omitempty"`
}

// Files lists every file the checkpoint refers to.
func (m *CheckpointMetadata) Files() []FileRef {
	var out []FileRef
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			out = append(out, st.Keyed.Files()...)
		}
	}
	return out
}

// StateSize and CheckpointedSize sum the handles (plus inline operator state).
func (m *CheckpointMetadata) StateSize() int64 {
	var n int64
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			if st.Keyed != nil {
				n += st.Keyed.StateSize
			}
			n += st.Operator.Size()
		}
	}
	return n
}

// CheckpointedSize is what this checkpoint wrote.
func (m *CheckpointMetadata) CheckpointedSize() int64 {
	var n int64
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			if st.Keyed != nil {
				n += st.Keyed.CheckpointedSize
			}
			n += st.Operator.Size()
		}
	}
	return n
}

// Operator returns the state of the operator with the given id, or nil.
func (m *CheckpointMetadata) Operator(id string) *OperatorState {
	for i := range m.Operators {
		if m.Operators[i].OperatorID == id {
			return &m.Operators[i]
		}
	}
	return nil
}
