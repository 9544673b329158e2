package engine

import (
	"fmt"
	"slices"
	"strings"
	"sync"

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
	// The offsets the sources restart from, checked before anything stops.
	at, err := c.checkpointOffsets(meta)
	if err != nil {
		return fmt.Errorf("%w from checkpoint %d: %w", ErrRestore, id, err)
	}
	what := "checkpoint"
	if meta.Savepoint {
		what = "savepoint"
	}
	c.resubmit(meta, nil, func() Event {
		// Counted once the old job has stopped: nothing reads or commits
		// any more.
		reread, rewritten := c.restoreCost(meta, at)
		return Event{Kind: EvRestoreRequested, Checkpoint: id, Records: int(reread), Value: rewritten,
			Message: fmt.Sprintf("restore from %s %d (as flink run -s would): the sources read %d record(s) again that were read after it; a two-phase-commit sink writes again the %d record(s) it committed after it, so they appear twice against the ground truth",
				what, id, reread, rewritten)}
	})
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
// spec set, the new job is that spec (an upgrade); ev, called once the old
// job has stopped, announces it.
//
// Checkpoint ids follow Flink's CheckpointCoordinator.restoreSavepoint: the
// restored checkpoint is the new job's first completed one and
// checkpointIdCounter.setCount(id + 1) makes its next checkpoint id + 1. The
// old job's checkpoints after id are not the new job's; in Flink they stay
// in the old job's own directory (named by its JobID). StateLab keeps one
// checkpoint directory per run, where the new job's ids would meet them, so
// they are discarded (the story says so); the old job's earlier ones stay
// retained for an explicit restore, never for a failover.
func (c *core) resubmit(meta *state.CheckpointMetadata, spec *JobSpec, ev func() Event) {
	id := meta.CheckpointID
	infos := c.storage.Checkpoints()
	for _, p := range c.coord.pendingList() {
		c.abortCheckpoint(p, JobFailure, fmt.Sprintf("the job is cancelled to restore checkpoint %d", id))
	}
	c.cancelExecution(nil)
	if !c.terminal {
		c.setJobStatus(JobCanceled, fmt.Sprintf("job %s was cancelled to start again from checkpoint %d", c.spec.Name, id))
	}
	e := ev()
	c.terminal = false
	c.rs = restartState{}
	c.cfm = checkpointFailureManager{lastSucceeded: id}
	c.failures = 0
	if c.ignored == nil {
		c.ignored = map[int64]bool{}
	}
	var dropped []string
	for _, in := range infos {
		switch {
		case in.ID < id:
			c.ignored[in.ID] = true
		case in.ID > id:
			if err := c.storage.DiscardCheckpoint(in.ID); err != nil {
				c.logger.Warn("discard the old job's checkpoint", "checkpoint", in.ID, "err", err)
				continue
			}
			dropped = append(dropped, fmt.Sprint(in.ID))
		}
	}
	// Ids after id are the new job's from now on.
	for k := range c.ignored {
		if k >= id {
			delete(c.ignored, k)
		}
	}
	for k := range c.recoverable {
		if k > id {
			delete(c.recoverable, k)
		}
	}
	c.coord.nextID = id + 1
	c.coord.history = slices.DeleteFunc(c.coord.history, func(h *CheckpointStats) bool { return h.ID > id })
	c.offCache = offsetsCache{}
	c.commits.forgetAfter(id)
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
	e.Message += fmt.Sprintf(". The new job numbers its checkpoints from %d (CheckpointCoordinator resets its checkpoint ID counter to the restored one's ID plus one)", id+1)
	if len(dropped) > 0 {
		e.Message += fmt.Sprintf("; the old job's later checkpoint(s) %s are discarded (in Flink they stay in the old job's own directory)", strings.Join(dropped, ", "))
	}
	c.publish(e)
	c.setJobStatus(JobCreated, fmt.Sprintf("job %s submitted again from %s %d", c.spec.Name, what, id))
	c.deploy()
}

// restoreCost counts what a restore from meta repeats: source records read
// after it (by the execution being replaced; at holds meta's offsets) and
// records a two-phase-commit sink committed in transactions of checkpoints
// after it (commitLedger: the sink store keeps only its last transactions).
func (c *core) restoreCost(meta *state.CheckpointMetadata, at map[string]map[int]int64) (reread int64, rewritten int64) {
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
	return reread, c.commits.after(meta.CheckpointID)
}

// commitLedger counts the records two-phase-commit sinks committed, by the
// checkpoint whose transactions held them, for the restore command's cost.
// Subtasks report commits from their own goroutines (Live), hence mu.
type commitLedger struct {
	mu sync.Mutex
	n  map[int64]int64
}

// note records a committed transaction (an EvTxnCommitted event).
func (l *commitLedger) note(e Event) {
	if e.Kind != EvTxnCommitted || e.Records == 0 {
		return
	}
	l.mu.Lock()
	if l.n == nil {
		l.n = map[int64]int64{}
	}
	l.n[e.Checkpoint] += int64(e.Records)
	l.mu.Unlock()
}

// after is the records committed in transactions of checkpoints after id.
func (l *commitLedger) after(id int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for cp, k := range l.n {
		if cp > id {
			n += k
		}
	}
	return n
}

// forgetAfter drops the commits of checkpoints after id: a job started
// again from id numbers its own checkpoints from id + 1, and what the old
// job committed after id is written again by the new one (counted then).
func (l *commitLedger) forgetAfter(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for cp := range l.n {
		if cp > id {
			delete(l.n, cp)
		}
	}
}
