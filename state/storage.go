package state

import (
	"io"
)

// StorageKind names a checkpoint storage, as Flink's state.checkpoint-storage.
type StorageKind string

// The checkpoint storages.
const (
	// JobManagerStorage keeps checkpoints in the job manager's memory
	// (Flink's JobManagerCheckpointStorage). They are lost with the process.
	JobManagerStorage StorageKind = "jobmanager"
	// FileSystemStorage writes them to a directory that stands for HDFS or S3
	// (Flink's FileSystemCheckpointStorage). It survives node crashes.
	FileSystemStorage StorageKind = "filesystem"
)

// DefaultMaxStateSize is the jobmanager storage cap per state file, Flink's
// MemoryStateBackend.DEFAULT_MAX_STATE_SIZE (5 MiB).
const DefaultMaxStateSize = 5 << 20

// Scope says where in the job's checkpoint directory a file goes.
type Scope int

// Scopes, Flink's CheckpointedStateScope plus the task-owned directory.
const (
	// Exclusive files belong to one checkpoint: chk-<n>/ (or the savepoint's
	// directory) and are deleted with it.
	Exclusive Scope = iota
	// Shared files may be referenced by several checkpoints: shared/. The
	// storage names them by content and deletes them when no retained
	// checkpoint refers to them.
	Shared
	// TaskOwned files are owned by the task, not the checkpoint: taskowned/.
	TaskOwned
)

// FileWriter writes one checkpoint file. The bytes go to a temporary name;
// Commit syncs and renames them into place and returns the file's reference.
// Abort (or a failed Commit) leaves nothing behind.
type FileWriter interface {
	io.Writer
	Commit() (FileRef, error)
	Abort()
}

// FileReader reads one checkpoint file at offsets; BytesRead counts what was
// read through it.
type FileReader interface {
	io.ReaderAt
	Size() int64
	BytesRead() int64
	Close() error
}

// CheckpointInfo describes one retained checkpoint or savepoint.
type CheckpointInfo struct {
	ID               int64  `json:"id"`
	Savepoint        bool   `json:"savepoint"`
	Path             string `json:"path"` // chk-7 or savepoint-…, relative to the job directory
	StateSize        int64  `json:"stateSize"`
	CheckpointedSize int64  `json:"checkpointedSize"`
}

// StorageMetrics are what the UI shows for the checkpoint storage.
type StorageMetrics struct {
	Kind         StorageKind `json:"kind"`
	Retained     int         `json:"retained"` // completed checkpoints kept
	Savepoints   int         `json:"savepoints"`
	TotalBytes   int64       `json:"totalBytes"`  // all files stored
	SharedFiles  int         `json:"sharedFiles"` // files in shared/
	SharedBytes  int64       `json:"sharedBytes"`
	BytesWritten int64       `json:"bytesWritten"` // since creation
	BytesRead    int64       `json:"bytesRead"`
}

// CheckpointStorage is where snapshots go. Its methods may be called from
// several subtasks at once (the live driver), so implementations lock.
type CheckpointStorage interface {
	Kind() StorageKind
	JobID() string
	// Dir is the job's directory on disk ("" for jobmanager storage).
	Dir() string

	// CreateFile starts a file of the given scope for target. name is a
	// readable base name (e.g. count-1.kg); the storage makes it unique.
	CreateFile(target SnapshotTarget, scope Scope, name string) (FileWriter, error)
	// ReferenceShared records that pending checkpoint checkpointID uses the
	// shared file ref again (an incremental snapshot reusing an SST). It fails
	// with ErrMissing if the file is gone.
	ReferenceShared(checkpointID int64, ref FileRef) error
	// OpenFile opens a file for reading (ErrMissing if it is not there).
	OpenFile(ref FileRef) (FileReader, error)

	// CompleteCheckpoint writes the metadata of a checkpoint all subtasks
	// acknowledged, registers its shared files, and applies retention. It
	// returns the ids of checkpoints it subsumed (deleted).
	CompleteCheckpoint(meta *CheckpointMetadata) (subsumed []int64, err error)
	// AbortCheckpoint deletes what a failed checkpoint wrote.
	AbortCheckpoint(checkpointID int64) error
	// Checkpoints lists retained checkpoints and savepoints, ascending id.
	Checkpoints() []CheckpointInfo
	// Load reads the metadata of a retained checkpoint or savepoint.
	Load(checkpointID int64) (*CheckpointMetadata, error)
	// Peek reads the metadata as Load does without counting its bytes in
	// Metrics().BytesRead, which counts what restores read: a view that
	// shows a checkpoint's contents is not a restore, and how often it looks
	// must not change the figure.
	Peek(checkpointID int64) (*CheckpointMetadata, error)
	// Verify checks that every file meta refers to exists with its size and
	// CRC32C; the error names the first bad file and the checkpoint.
	Verify(meta *CheckpointMetadata) error
	// DiscardSavepoint deletes a savepoint; only the user does that.
	DiscardSavepoint(checkpointID int64) error
	// DiscardCheckpoint deletes a retained checkpoint or savepoint and the
	// shared files only it used: a job started again from an older one
	// (flink run -s) numbers its checkpoints on from there, and the old
	// job's later ones are not its own.
	DiscardCheckpoint(checkpointID int64) error
	Metrics() StorageMetrics
}

// StorageConfig describes a checkpoint storage.
type StorageConfig struct {
	Kind StorageKind
	// JobID names the job; its checkpoints live in Dir/JobID.
	JobID string
	// Dir is the checkpoint directory (filesystem only).
	Dir string
	// Retained is how many completed checkpoints to keep (Flink's
	// state.checkpoints.num-retained); 0 means 1.
	Retained int
	// MaxStateSize caps each state file of jobmanager storage; 0 means
	// DefaultMaxStateSize.
	MaxStateSize int64
	// FS is the file system of a filesystem storage (nil: the real disk,
	// OSFS); tests pass an ErrorFS to inject disk faults.
	FS FileSystem
}

// NewCheckpointStorage creates the storage cfg describes. A filesystem
// storage over an existing directory picks up the checkpoints it holds.
func NewCheckpointStorage(cfg StorageConfig) (CheckpointStorage, error) {
	return newStorage(cfg)
}
