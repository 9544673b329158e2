package state

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/statelab/statelab/rescale"
)

// BackendKind names a keyed state backend as StateLab shows it.
type BackendKind string

// The keyed backends. Memory and FS keep working state in Go maps (Flink's
// HashMapStateBackend); they differ only in the checkpoint storage the engine
// pairs them with. Pebble keeps it in a Pebble LSM on local disk (Flink's
// EmbeddedRocksDBStateBackend).
const (
	Memory BackendKind = "memory"
	FS     BackendKind = "fs"
	Pebble BackendKind = "pebble"
)

// ParseBackendKind accepts memory, fs or pebble.
func ParseBackendKind(s string) (BackendKind, error) {
	switch k := BackendKind(s); k {
	case Memory, FS, Pebble:
		return k, nil
	}
	return "", fmt.Errorf("%w: %q (want memory, fs or pebble)", ErrBackendKind, s)
}

// FlinkName is the Flink class a learner meets for this backend.
func (k BackendKind) FlinkName() string {
	if k == Pebble {
		return "EmbeddedRocksDBStateBackend"
	}
	return "HashMapStateBackend"
}

// StateKind is the kind of a keyed state, Flink's StateDescriptor.Type.
type StateKind string

// The keyed state kinds.
const (
	KindValue    StateKind = "VALUE"
	KindList     StateKind = "LIST"
	KindMap      StateKind = "MAP"
	KindReducing StateKind = "REDUCING"
)

// Sentinel errors. Wrapped messages name the state, key group, file or
// checkpoint involved and what to do.
var (
	ErrBackendKind        = errors.New("state: unknown backend kind")
	ErrKeyGroupOutOfRange = errors.New("state: key group outside the backend's key-group range")
	ErrNoCurrentKey       = errors.New("state: no current key set")
	ErrStateKind          = errors.New("state: state name registered with another kind")
	ErrClosed             = errors.New("state: backend closed")
	ErrCorrupt            = errors.New("state: checkpoint file corrupt")
	ErrMissing            = errors.New("state: checkpoint file missing")
	ErrStateTooLarge      = errors.New("state: state larger than the jobmanager checkpoint storage allows")
	ErrIncompatible       = errors.New("state: snapshot cannot be restored into this backend")
	ErrNotFound           = errors.New("state: checkpoint not found")
	ErrNotImplemented     = errors.New("state: not implemented yet")
)

// KeyedBackendConfig describes one operator subtask's keyed backend.
type KeyedBackendConfig struct {
	Kind BackendKind
	// Name is the subtask as people read it (count#1); it prefixes the names
	// of the backend's checkpoint files. Optional.
	Name string
	// Dir is the pebble working directory on the node's local disk; it must
	// not exist yet or be empty. Ignored by the memory backends.
	Dir string
	// MaxParallelism is the number of key groups of the operator.
	MaxParallelism int
	// KeyGroupRange is the key groups this subtask owns.
	KeyGroupRange rescale.KeyGroupRange
	// Incremental makes pebble snapshots incremental (Flink's
	// state.backend.incremental). Savepoints are always full.
	Incremental bool
	// Logger receives Pebble's log lines; nil discards them.
	Logger *slog.Logger
	// FS is the file system of the pebble backend's file operations (its
	// directory, local checkpoints, uploads and downloads, and Pebble's own
	// LSM files through pebbleFS); nil: the real disk.
	FS FileSystem
	// KeyRenderer shows a serialized key in Entries; nil uses RenderBytes.
	KeyRenderer func([]byte) string
}

func (c *KeyedBackendConfig) validate() error {
	if _, err := ParseBackendKind(string(c.Kind)); err != nil {
		return err
	}
	if err := rescale.CheckMaxParallelism(c.MaxParallelism); err != nil {
		return fmt.Errorf("state: create keyed backend: %w", err)
	}
	r := c.KeyGroupRange
	if r.Empty() || r.Start < 0 || r.End >= c.MaxParallelism {
		return fmt.Errorf("%w: range %v does not lie within key groups 0..%d", ErrKeyGroupOutOfRange, r, c.MaxParallelism-1)
	}
	if c.Kind == Pebble && c.Dir == "" {
		return errors.New("state: the pebble backend needs a local directory (KeyedBackendConfig.Dir)")
	}
	if c.KeyRenderer == nil {
		c.KeyRenderer = RenderBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// KeyedBackend holds the keyed state of one operator subtask. It is not safe
// for concurrent use: one subtask, one goroutine, as in Flink.
type KeyedBackend interface {
	Kind() BackendKind
	MaxParallelism() int
	KeyGroupRange() rescale.KeyGroupRange

	// SetCurrentKey scopes every state handle to key (its serialized bytes;
	// the backend copies them) in keyGroup, which must lie in the range.
	SetCurrentKey(key []byte, keyGroup int) error
	// SetCurrentKeyString is SetCurrentKey for a key whose serialized bytes
	// are the string's (a string key, StringCodec). The memory backends keep
	// the string itself as the table key instead of a copy, as Flink's
	// HashMapStateBackend keeps the record's key object; a record carrying
	// the same string object is then found without comparing bytes.
	SetCurrentKeyString(key string, keyGroup int) error
	// CurrentKey returns the current key and key group (nil, -1 if unset).
	CurrentKey() ([]byte, int)

	// States lists the registered and restored states, by name.
	States() []StateInfo
	// Entries lists state entries in the key groups of r (clipped to the
	// backend's range), ascending by key group, at most limit (0 = all).
	Entries(r rescale.KeyGroupRange, limit int) ([]Entry, error)
	// KeyGroupMetrics returns keys and bytes of every key group in the range.
	KeyGroupMetrics() ([]KeyGroupMetrics, error)
	// Metrics returns the backend totals and its last snapshot and restore.
	Metrics() (BackendMetrics, error)

	// Snapshot writes the state to storage and returns its handle. It is
	// synchronous: the handle is durable when it returns. It is
	// StartSnapshot followed by Finish.
	Snapshot(target SnapshotTarget, storage CheckpointStorage) (*KeyedStateHandle, error)
	// StartSnapshot does the synchronous part of a snapshot (call it at the
	// barrier, before the next record) and returns the asynchronous part.
	// Memory backends do all the work here; pebble takes a Pebble snapshot
	// (full) or flushes and takes a local Pebble checkpoint (incremental) and
	// leaves the writing and uploading to Finish.
	StartSnapshot(target SnapshotTarget, storage CheckpointStorage) (AsyncSnapshot, error)
	// NotifyCheckpointComplete and NotifyCheckpointAborted tell the backend
	// the fate of a checkpoint, so incremental snapshots only build on
	// completed ones.
	NotifyCheckpointComplete(checkpointID int64)
	NotifyCheckpointAborted(checkpointID int64)

	// Close releases the backend; further calls return ErrClosed. Close is
	// safe when the local directory has already been removed.
	Close() error
}

// StateInfo describes one keyed state.
type StateInfo struct {
	Name string    `json:"name"`
	Kind StateKind `json:"kind"`
	ID   uint16    `json:"id"`
	// TTL is set when the state has a time-to-live: each stored value
	// starts with its last-access timestamp (ttl.go).
	TTL bool `json:"ttl,omitempty"`
}

// Entry is one state entry for the state inspector. For MapState there is
// one Entry per user key; a ListState shows its elements in Value as [a b c].
type Entry struct {
	State    string    `json:"state"`
	Kind     StateKind `json:"kind"`
	KeyGroup int       `json:"keyGroup"`
	Key      string    `json:"key"`
	UserKey  string    `json:"userKey,omitempty"`
	Value    string    `json:"value"`
	// LastAccess is a TTL state's last-access timestamp (processing time,
	// ms); Expired is set when it has expired but no read or cleanup has
	// removed it yet.
	LastAccess int64 `json:"lastAccess,omitempty"`
	Expired    bool  `json:"expired,omitempty"`
}

// KeyGroupMetrics is the size of one key group. Keys counts distinct
// (state, key) pairs; Bytes is the serialized size of keys and values.
type KeyGroupMetrics struct {
	KeyGroup int   `json:"keyGroup"`
	Keys     int64 `json:"keys"`
	Bytes    int64 `json:"bytes"`
}

// BackendMetrics are the totals the UI shows for one backend.
type BackendMetrics struct {
	Kind           BackendKind           `json:"kind"`
	KeyGroupRange  rescale.KeyGroupRange `json:"keyGroupRange"`
	Keys           int64                 `json:"keys"`
	Bytes          int64                 `json:"bytes"`
	LocalDiskBytes int64                 `json:"localDiskBytes"` // pebble: files in Dir

	LastCheckpointID int64 `json:"lastCheckpointId"`
	// LastCheckpointSize is the full size of the last snapshot (Flink's
	// "Full Checkpoint Data Size"); LastCheckpointUploaded what it wrote to
	// storage ("Checkpointed Data Size"); equal unless incremental.
	LastCheckpointSize        int64 `json:"lastCheckpointSize"`
	LastCheckpointUploaded    int64 `json:"lastCheckpointUploaded"`
	LastCheckpointIncremental bool  `json:"lastCheckpointIncremental"`
	// RestoreBytesRead is what the restore that built this backend read.
	RestoreBytesRead int64 `json:"restoreBytesRead"`
}

// NewKeyedBackend creates an empty keyed backend.
func NewKeyedBackend(cfg KeyedBackendConfig) (KeyedBackend, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Kind == Pebble {
		return openPebbleBackend(cfg)
	}
	return newHeapBackend(cfg), nil
}

// RestoreKeyedBackend creates a keyed backend for cfg.KeyGroupRange from the
// handles of the old subtasks whose ranges intersect it (for a rescale, the
// handles of rescale.NewPlan's Reads). Entries outside the range are not
// restored. Nothing is half-applied: on error no backend is returned and any
// local files it made are removed. Nil handles are skipped.
func RestoreKeyedBackend(cfg KeyedBackendConfig, storage CheckpointStorage, handles []*KeyedStateHandle) (KeyedBackend, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Kind == Pebble {
		return restorePebbleBackend(cfg, storage, handles)
	}
	return restoreHeapBackend(cfg, storage, handles)
}

// RemoveLocalDir deletes a node's local state directory, as a TaskManager
// crash loses its disk. Close the backends that used it first (or after; a
// closed backend does not mind). It refuses an empty path or a root.
func RemoveLocalDir(dir string) error { return RemoveLocalDirOn(OSFS, dir) }

// RemoveLocalDirOn is RemoveLocalDir on file system fsys (nil: the real disk).
func RemoveLocalDirOn(fsys FileSystem, dir string) error {
	clean := filepath.Clean(dir)
	if dir == "" || clean == "/" || clean == "." || filepath.Dir(clean) == clean {
		return fmt.Errorf("state: refuse to remove local directory %q", dir)
	}
	if err := orOS(fsys).RemoveAll(clean); err != nil {
		return fmt.Errorf("state: remove local directory: %w", err)
	}
	return nil
}
