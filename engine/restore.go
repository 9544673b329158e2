package engine

import (
	"fmt"
	"strings"

	"github.com/statelab/statelab/state"
)

// ErrRestore wraps a restore that cannot start (restore command) or that
// failed (a broken checkpoint).
var ErrRestore = fmt.Errorf("engine: cannot restore")

// chooseCheckpoint returns the checkpoint the next execution restores: the
// one a restore command asked for, a rescale's savepoint, or else the newest
// retained checkpoint (a savepoint only if the job was restored from it,
// which Flink registers as a checkpoint). As Flink's CheckpointCoordinator,
// it never falls back past a broken one: a missing or corrupt file fails
// the restore, naming the file, and the restart strategy decides what
// follows. Going back to an older checkpoint is the user's explicit
// restore command.
func (c *core) chooseCheckpoint() (*state.CheckpointMetadata, error) {
	infos := c.storage.Checkpoints()
	pick := int64(0)
	switch {
	case c.restoreOverride != 0:
		pick = c.restoreOverride
	case c.rescaling != nil && c.rescaling.savepoint != 0 && c.rescaling.phase == "restoring":
		pick = c.rescaling.savepoint
	default:
		for i := len(infos) - 1; i >= 0; i-- {
			id := infos[i].ID
			if c.ignored[id] {
				continue
			}
			if infos[i].Savepoint && !c.recoverable[id] {
				continue
			}
			pick = id
			break
		}
	}
	if pick == 0 {
		return nil, nil
	}
	meta, err := c.storage.Load(pick)
	if err == nil {
		err = c.storage.Verify(meta)
	}
	if err != nil {
		return nil, fmt.Errorf("%w from checkpoint %d: %w", ErrRestore, pick, err)
	}
	return meta, nil
}

// restoreFailed fails the job over because its checkpoint could not be
// restored. The restart strategy applies: with a broken latest checkpoint
// every restart fails again, as in Flink, until the strategy gives up or
// the user restores an older checkpoint.
func (c *core) restoreFailed(err error) {
	id := c.restoreOverride
	c.restoreOverride = 0
	msg := fmt.Sprintf("restore failed: %v", err)
	c.publish(Event{Kind: EvRestoreFailed, Checkpoint: id, Message: msg + "; StateLab, like Flink, does not fall back to an older checkpoint on its own (restore one explicitly with the restore command)"})
	c.fail(nil, msg)
}

// restoreFrom is the restore command: the job starts again from retained
// checkpoint or savepoint id, as `flink run -s <path>` would start a new
// job from it. What it costs is said in the event: every record the
// sources read after id is read again, and a two-phase-commit sink writes
// again what it committed after id (duplicates against the ground truth).
func (c *core) restoreFrom(id int64) error {
	meta, err := c.retainedCheckpoint(id)
	if err != nil {
		return err
	}
	reread, rewritten, err := c.restoreCost(meta)
	if err != nil {
		return fmt.Errorf("%w from checkpoint %d: %w", ErrRestore, id, err)
	}
	what := "checkpoint"
	if meta.Savepoint {
		what = "savepoint"
	}
	c.resubmit(meta, nil, Event{Kind: EvRestoreRequested, Checkpoint: id, Records: int(reread), Value: rewritten,
		Message: fmt.Sprintf("restore from %s %d (as flink run -s would): the sources read %d record(s) again that were read after it; a two-phase-commit sink writes again the %d record(s) it committed after it, so they appear twice against the ground truth",
			what, id, reread, rewritten)})
	return nil
}

// retainedCheckpoint loads and verifies retained checkpoint or savepoint id
// for a restore command; it refuses while a rescale is in progress.
func (c *core) retainedCheckpoint(id int64) (*state.CheckpointMetadata, error) {
	infos := c.storage.Checkpoints()
	var ids []string
	found := false
	for _, in := range infos {
		ids = append(ids, fmt.Sprint(in.ID))
		if in.ID == id {
			found = true
		}
	}
	if !found {
		have := "none is retained"
		if len(ids) > 0 {
			have = "retained: " + strings.Join(ids, ", ")
		}
		return nil, fmt.Errorf("%w: no retained checkpoint or savepoint %d (%s; checkpointing.retained keeps more)", ErrBadCommand, id, have)
	}
	if c.rescaling != nil {
		return nil, fmt.Errorf("%w: a rescale of %s is in progress; restore when it is done", ErrRestore, c.rescaling.operator)
	}
	meta, err := c.storage.Load(id)
	if err == nil {
		err = c.storage.Verify(meta)
	}
	if err != nil {
		return nil, fmt.Errorf("%w from checkpoint %d: %w", ErrRestore, id, err)
	}
	return meta, nil
}

// resubmit cancels the running job (if any) and submits it again from
// checkpoint meta, as a new job run with -s: a fresh restart strategy and
// checkpoint failure count, and a checkpoint history of its own. With
// spec set, the new job is that spec (an upgrade); ev announces it.
func (c *core) resubmit(meta *state.CheckpointMetadata, spec *JobSpec, ev Event) {
	id := meta.CheckpointID
	infos := c.storage.Checkpoints()
	for _, p := range c.coord.pendingList() {
		c.abortCheckpoint(p, JobFailure, fmt.Sprintf("the job is cancelled to restore checkpoint %d", id))
	}
	c.cancelExecution(nil)
	if !c.terminal {
		c.setJobStatus(JobCanceled, fmt.Sprintf("job %s was cancelled to start again from checkpoint %d", c.spec.Name, id))
	}
	c.terminal = false
	c.rs = restartState{}
	c.cfm = checkpointFailureManager{lastSucceeded: id}
	c.failures = 0
	if c.ignored == nil {
		c.ignored = map[int64]bool{}
	}
	for _, in := range infos {
		if in.ID != id {
			c.ignored[in.ID] = true
		}
	}
	delete(c.ignored, id)
	c.recoverable[id] = true
	c.restoreOverride = id
	if spec != nil {
		c.swapSpec(spec)
	}
	what := "checkpoint"
	if meta.Savepoint {
		what = "savepoint"
	}
	c.counters.ManualRestores++
	c.publish(ev)
	c.setJobStatus(JobCreated, fmt.Sprintf("job %s submitted again from %s %d", c.spec.Name, what, id))
	c.deploy()
}

// restoreCost counts what a restore from meta repeats: source records read
// after it (by the execution being replaced) and sink records committed
// after it.
func (c *core) restoreCost(meta *state.CheckpointMetadata) (reread int64, rewritten int64, err error) {
	at, err := c.checkpointOffsets(meta)
	if err != nil {
		return 0, 0, err
	}
	if c.ex != nil {
		for _, t := range c.ex.tasks {
			if t.src == nil {
				continue
			}
			for _, pc := range t.src.parts {
				if d := pc.offset - at[t.op.spec.ID][pc.partition]; d > 0 {
					reread += d
				}
			}
		}
	}
	for _, s := range c.sinks {
		s.mu.Lock()
		for _, id := range s.order {
			if t := s.txns[id]; t.status == TxnCommitted && t.checkpoint > meta.CheckpointID {
				rewritten += int64(t.n)
			}
		}
		s.mu.Unlock()
	}
	return reread, rewritten, nil
}
