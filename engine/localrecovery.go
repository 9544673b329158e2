package engine

import (
	"path/filepath"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// Local recovery (state.backend.local-recovery), as Flink's
// TaskLocalStateStoreImpl and TaskStateManagerImpl do it:
//
//  1. While a subtask writes a checkpoint's keyed state to checkpoint
//     storage it also writes a copy to its TaskManager's local disk
//     (state.TaskLocalStore.Duplicating). Savepoints get no local copy.
//  2. When a checkpoint completes and none is in flight, every TaskManager
//     keeps only the local copies of that checkpoint (confirmLocalState).
//  3. A restore reads a keyed state handle's files from the local copies on
//     the subtask's TaskManager when Flink would take the handle's local
//     alternative, and from checkpoint storage otherwise (a lost
//     TaskManager's disk is wiped). The execution counts the bytes read from
//     each side (RestoreStats). Flink's TaskStateManagerImpl looks up the
//     local copy the subtask's own index kept of the checkpoint restored,
//     and PrioritizedOperatorSubtaskState takes a local handle in place of
//     the job manager's only where both have the same key-group range
//     (tryCreateMixedLocalAndRemoteAlternative, FLINK-33341, Flink 1.19
//     on). So a rescale inside one job (reactive mode's, from a checkpoint)
//     reads local state only from the old subtask of the same index, and
//     only where its handle is not cut to the new range: an incremental
//     (RocksDB) handle is handed over whole (IncrementalRemoteKeyedStateHandle
//     .getIntersection returns the handle itself), so the subtask that kept
//     its index reads it locally; a full snapshot's handle (heap,
//     KeyGroupsStateHandle) is cut to the key groups the new subtask owns,
//     and a cut handle has no local match, so it is read remotely unless the
//     new subtask owns all of the old one's key groups (a rescale down;
//     read in Flink's code, not run).
//     Measured on Flink 2.3.0 and 1.20.5: conformance
//     reactive-rescale-local-state(-rocksdb). Flink files a local copy
//     under its slot (allocation), StateLab under its TaskManager: the same
//     wherever a subtask keeps its slot, as the scheduler places it with
//     local recovery on.

// localStore is TaskManager tm's task-local state store for this job.
func (c *core) localStore(tm *taskManager) *state.TaskLocalStore {
	return state.NewTaskLocalStore(c.fsys, filepath.Join(tm.localDir, "localState", state.SafeDirName(c.spec.Name)))
}

// snapshotStorage is where subtask t writes its keyed snapshot: checkpoint
// storage, and with local recovery on a checkpoint (not a savepoint) also
// its TaskManager's local disk.
func (t *subtask) snapshotStorage(savepoint bool) state.CheckpointStorage {
	if !t.c.spec.Checkpointing.LocalRecovery || savepoint || t.tm == nil {
		return t.c.storage
	}
	return t.c.localStore(t.tm).Duplicating(t.c.storage)
}

// restoreStorage is what subtask t reads restore r's keyed state through:
// with local recovery on, the files of the handles Flink would read from
// the subtask's local copy (localHandleFiles) through the local copies on
// its TaskManager first, every other file from checkpoint storage; always
// counting the bytes into the execution's figures. It is made when the
// subtask opens its state (a fork copies the restore spec, whose storage
// must stay the job's own).
func (t *subtask) restoreStorage(r *restoreSpec) state.CheckpointStorage {
	stats := t.ex.recovery
	if stats == nil {
		stats = &state.RecoveryStats{}
	}
	var local map[string]bool
	if t.c.spec.Checkpointing.LocalRecovery && t.tm != nil {
		local = localHandleFiles(t.index, r.keyed, r.reads)
	}
	return &restoreStorage{CheckpointStorage: r.storage, c: t.c, t: t, local: local, stats: stats}
}

// localHandleFiles lists the files of the keyed handles that subtask index
// may read from its local copy, as Flink's PrioritizedOperatorSubtaskState
// decides: the local alternative is the copy the same subtask index kept
// (TaskStateManagerImpl's lookup is by job, vertex and subtask index), and
// a job manager handle is replaced by a local one only when their key-group
// ranges are equal. handles[k] is read for reads[k].Range; an incremental
// handle is handed over whole, a full one cut to that range.
func localHandleFiles(index int, handles []*state.KeyedStateHandle, reads []rescale.Read) map[string]bool {
	out := map[string]bool{}
	for k, h := range handles {
		if h == nil || k >= len(reads) || reads[k].OldSubtask != index {
			continue
		}
		if h.Format != state.FormatIncremental && reads[k].Range != h.KeyGroupRange {
			continue // a cut handle: its key-group range is not the local copy's
		}
		for _, f := range h.Files() {
			out[f.Path] = true
		}
	}
	return out
}

type restoreStorage struct {
	state.CheckpointStorage
	c     *core
	t     *subtask
	local map[string]bool
	stats *state.RecoveryStats
}

func (r *restoreStorage) OpenFile(ref state.FileRef) (state.FileReader, error) {
	if r.local[ref.Path] {
		return r.c.localStore(r.t.tm).Prioritized(r.CheckpointStorage, r.stats).OpenFile(ref)
	}
	f, err := r.CheckpointStorage.OpenFile(ref)
	if err != nil {
		return nil, err
	}
	return &remoteCount{FileReader: f, stats: r.stats}, nil
}

// remoteCount counts reads from checkpoint storage.
type remoteCount struct {
	state.FileReader
	stats *state.RecoveryStats
}

func (r *remoteCount) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.FileReader.ReadAt(p, off)
	r.stats.Remote.Add(int64(n))
	return n, err
}

// confirmLocalState drops every TaskManager's local copies but those of
// completed checkpoint meta, once no checkpoint is in flight (one that is
// may be writing local copies right now).
func (c *core) confirmLocalState(meta *state.CheckpointMetadata) {
	if !c.spec.Checkpointing.LocalRecovery || meta.Savepoint || len(c.coord.pending) > 0 {
		return
	}
	keep := map[string]bool{}
	for _, f := range meta.Files() {
		keep[f.Path] = true
	}
	for _, tm := range c.tms {
		if !tm.alive {
			continue
		}
		if err := c.localStore(tm).Retain(keep); err != nil {
			c.logger.Warn("discard task-local state", "tm", tm.id, "err", err)
		}
	}
}
