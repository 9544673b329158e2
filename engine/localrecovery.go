package engine

import (
	"path/filepath"

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
//  3. A restore at the same parallelism reads each file's local copy when
//     the subtask's TaskManager holds it, and checkpoint storage otherwise
//     (a lost TaskManager's disk is wiped; a rescale reads other subtasks'
//     state, which Flink's local recovery does not cover either). The
//     execution counts the bytes read from each side (RestoreStats).

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
// with local recovery on and only its own old state to read (the same
// subtask at the same parallelism), the local copies on its TaskManager
// first; always counting the bytes into the execution's figures. It is
// made when the subtask opens its state (a fork copies the restore spec,
// whose storage must stay the job's own).
func (t *subtask) restoreStorage(r *restoreSpec) state.CheckpointStorage {
	stats := t.ex.recovery
	if stats == nil {
		stats = &state.RecoveryStats{}
	}
	own := len(r.reads) == 1 && r.reads[0].OldSubtask == t.index && r.reads[0].Range == t.op.keyGroupRange(t.index)
	local := t.c.spec.Checkpointing.LocalRecovery && own && t.tm != nil
	return &restoreStorage{CheckpointStorage: r.storage, c: t.c, t: t, local: local, stats: stats}
}

type restoreStorage struct {
	state.CheckpointStorage
	c     *core
	t     *subtask
	local bool
	stats *state.RecoveryStats
}

func (r *restoreStorage) OpenFile(ref state.FileRef) (state.FileReader, error) {
	if r.local {
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
