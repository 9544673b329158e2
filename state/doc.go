// Package state is StateLab's state layer: the state primitives a Flink
// operator uses, the keyed state backends that hold them, the snapshots that
// copy them out at a checkpoint barrier, and the checkpoint storage those
// snapshots go to. It mirrors Flink's runtime/state package and keeps its
// names where a learner will meet them.
//
// Main types:
//
//   - Codec[T]: how a value becomes bytes (StringCodec, Int64Codec,
//     BytesCodec, JSONCodec). Every backend stores bytes, as RocksDB does, so
//     a snapshot is the same stream whichever backend wrote it.
//   - KeyedBackend: the keyed state of one operator subtask, scoped to a
//     KeyGroupRange. NewKeyedBackend makes one of kind memory (Flink's
//     HashMapStateBackend: one Go map per key group) or pebble (Flink's
//     EmbeddedRocksDBStateBackend: one Pebble LSM per subtask on the node's
//     local disk, key = [key group u16 BE][state id u16 BE][key with 0x00
//     escaped, then 0x00 0x01][user key], so a key-group range is one
//     contiguous scan and keys of different lengths never collide). Each
//     DB has a block cache of its own that holds its memtables' reservation
//     (Pebble charges memtables to the cache, as Flink charges RocksDB's
//     write buffers to managed memory) beside a 32 MiB block budget;
//     memtables stay at most 8 MiB, so an incremental checkpoint's
//     synchronous flush is short (see pebble.go).
//   - ValueState, ListState, MapState, ReducingState: typed handles scoped to
//     the backend's current key, made by Value, List, Map and Reducing.
//     WithTTL gives one a time-to-live (Flink's StateTtlConfig, ttl.go):
//     values carry their last-access time, are cleaned on read, in full
//     snapshots if asked, incrementally (memory) or by a background scan
//     (pebble), and Entry shows expired ones not yet cleaned.
//   - TimerService: event- and processing-time timers per key and namespace
//     (Flink's InternalTimerServiceImpl, timers.go), stored as entries of the
//     reserved MapStates "_timer_state/event_<service>" and
//     "_timer_state/processing_<service>", so they are snapshotted, restored
//     and rescaled with their key groups; on the memory backends an
//     in-memory heap per key group (and a heap of their heads) orders them,
//     on pebble a key range of their own ordered by timestamp per key group,
//     with at most timerCacheSize (32) timers per key group cached in memory
//     (pebble_timers.go, after RocksDBCachingPriorityQueueSet).
//   - OperatorBackend: non-keyed operator state of one subtask: ListState in
//     split-distribute mode (OperatorList, Flink's getListState), in union
//     mode (UnionList, getUnionListState), and BroadcastState (Broadcast).
//     RestoreOperatorBackends hands old snapshots to rescale.Repartition.
//   - KeyedStateHandle: what a keyed snapshot leaves in checkpoint storage.
//     A full snapshot is one file with key groups in ascending order and the
//     offset of each (Flink's KeyGroupRangeOffsets), so a restore of a
//     sub-range reads only that sub-range's bytes. An incremental snapshot
//     (pebble only) lists the SST files of a Pebble checkpoint: new ones are
//     uploaded to shared/, old ones are referenced again.
//   - CheckpointStorage: where snapshots go, made by NewCheckpointStorage.
//     A job id names a directory, so it must be a plain name
//     (ValidDirName); SafeDirName maps any display name to one. Paths read
//     back from metadata never leave the job's directory.
//     JobManagerStorage keeps them in memory with Flink's per-state cap
//     (5 MiB by default; above it the checkpoint fails and the error
//     suggests the filesystem storage). FileSystemStorage writes Flink's
//     layout <dir>/<job>/chk-<n>/_metadata, <dir>/<job>/shared/,
//     <dir>/<job>/taskowned/ (savepoints in <dir>/<job>/savepoint-<job>-<n>/),
//     keeps the last k completed checkpoints, deletes subsumed ones and the
//     shared files no retained checkpoint uses, and keeps savepoints until
//     DiscardSavepoint. Every file is written to a temporary name, synced and
//     renamed, and carries a CRC32C (in its handle, and per key-group block
//     inside full snapshots).
//   - CheckpointMetadata: a completed checkpoint: per operator, per subtask,
//     the keyed handle and the operator state snapshot.
//     Each operator's state carries its OperatorID (Hash) and uid, the key
//     a restore matches it by.
//   - FileSystem (fs.go): the one interface every file operation of the
//     checkpoint storage, the task-local store, fork copies (clone.go) and
//     the pebble backend (KeyedBackendConfig.FS) goes through; Pebble's LSM
//     files go through a vfs.FS made from it (pebble_vfs.go), so injected
//     faults reach SSTs too. OSFS is the disk; ErrorFS
//     injects faults per operation (errors, short writes), as Pebble's
//     vfs/errorfs does.
//   - TaskLocalStore (localstore.go): task-local copies of checkpoint files
//     on a TaskManager's disk (Flink's TaskLocalStateStoreImpl, for
//     state.backend.local-recovery): Duplicating writes them beside
//     checkpoint storage, Prioritized reads them first, Retain prunes.
//
// Nothing here starts a goroutine (Pebble runs its own flushes and
// compactions), reads the wall clock or draws a random number, so a
// deterministic driver can call it.
//
// Contract for the engine, per keyed operator subtask:
//
//  1. Create the backend with NewKeyedBackend (fresh start) or
//     RestoreKeyedBackend (from one or more handles; each is clipped to the
//     new KeyGroupRange). For pebble, KeyedBackendConfig.Dir is a directory
//     on the node's local disk that does not exist yet or is empty.
//  2. Obtain typed handles by name once: Value, List, Map, Reducing. A name
//     keeps its kind for the life of the job. Handles are bound to the
//     backend that made them; after a restore, obtain them again.
//  3. Before each record, call SetCurrentKey(serialized key, key group). The
//     key group must lie in the backend's range (compute it with rescale,
//     e.g. rescale.KeyGroupForString). Handles read and write that key only.
//     A string key may be given as SetCurrentKeyString(key, key group): the
//     memory backends then keep that string as the table key, with no copy.
//  4. At a checkpoint barrier, before processing the next record, call
//     Snapshot(target, storage): it returns a KeyedStateHandle already
//     durable in storage. Or split it as Flink does: StartSnapshot at the
//     barrier (memory: serialises everything; pebble: a Pebble snapshot, or
//     flush + local Pebble checkpoint when incremental), then Finish on any
//     goroutine while records flow (pebble: writes or uploads the files).
//     Call Finish or Cancel exactly once; Close cancels what was not started.
//  5. When the coordinator completes or aborts checkpoint n, call
//     NotifyCheckpointComplete(n) / NotifyCheckpointAborted(n): an
//     incremental snapshot only reuses files of checkpoints confirmed this way.
//  6. Close the backend when the subtask stops. If the node crashed, Close it
//     and remove its local directory (RemoveLocalDir). Close tolerates a
//     directory that has already vanished, but do not keep writing to a
//     pebble backend whose directory is gone: Pebble cannot flush, and once
//     its memtables are full a write blocks.
//
// Contract for the checkpoint coordinator:
//
//  1. Collect each subtask's KeyedStateHandle and OperatorSnapshot into a
//     CheckpointMetadata and call storage.CompleteCheckpoint; it writes
//     _metadata, registers shared files, and deletes checkpoints (and shared
//     files) the retention policy subsumes. On failure call AbortCheckpoint.
//  2. To restore, take storage.Checkpoints() newest first; Load and Verify
//     each; use the first that passes (an error names the file and the
//     checkpoint, so it can be shown and the previous one tried).
//  3. For a new parallelism use rescale.NewPlan: new subtask i restores from
//     the keyed handles of the old subtasks in Plan.Subtasks[i].Reads, and
//     RestoreOperatorBackends repartitions operator state.
package state
