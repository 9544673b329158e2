package engine

import "fmt"

// CheckpointFailureReason is why a checkpoint failed, named as Flink's
// org.apache.flink.runtime.checkpoint.CheckpointFailureReason names it.
type CheckpointFailureReason string

// The failure reasons StateLab produces.
const (
	// CheckpointExpired: the checkpoint did not complete within
	// execution.checkpointing.timeout. Counts.
	CheckpointExpired CheckpointFailureReason = "CHECKPOINT_EXPIRED"
	// CheckpointDeclined: a subtask could not take its snapshot. Counts.
	CheckpointDeclined CheckpointFailureReason = "CHECKPOINT_DECLINED"
	// CheckpointAsyncException: the asynchronous part of a snapshot failed
	// (for example the jobmanager storage's size cap). Counts.
	CheckpointAsyncException CheckpointFailureReason = "CHECKPOINT_ASYNC_EXCEPTION"
	// IOException: writing the checkpoint failed. Counts.
	IOException CheckpointFailureReason = "IO_EXCEPTION"
	// FinalizeCheckpointFailure: the metadata could not be written. Never
	// counts (Flink 1.17+).
	FinalizeCheckpointFailure CheckpointFailureReason = "FINALIZE_CHECKPOINT_FAILURE"
	// CheckpointDeclinedSubsumed: a subtask saw barrier n+1 before it had
	// aligned n. Never counts.
	CheckpointDeclinedSubsumed CheckpointFailureReason = "CHECKPOINT_DECLINED_SUBSUMED"
	// CheckpointDeclinedTaskNotReady: a source was not running when told to
	// trigger. Never counts.
	CheckpointDeclinedTaskNotReady CheckpointFailureReason = "CHECKPOINT_DECLINED_TASK_NOT_READY"
	// CheckpointSubsumed: a newer checkpoint completed first. Never counts.
	CheckpointSubsumed CheckpointFailureReason = "CHECKPOINT_SUBSUMED"
	// JobFailure: the job failed (or failed over) while it was pending.
	// Never counts.
	JobFailure CheckpointFailureReason = "JOB_FAILURE"
	// NotAllRequiredTasksRunning: a trigger found a subtask not RUNNING.
	// Never counts (and StateLab's periodic trigger simply skips).
	NotAllRequiredTasksRunning CheckpointFailureReason = "NOT_ALL_REQUIRED_TASKS_RUNNING"
)

// ExceededTolerableFailuresMessage is Flink's
// CheckpointFailureManager.EXCEEDED_CHECKPOINT_TOLERABLE_FAILURE_MESSAGE.
const ExceededTolerableFailuresMessage = "Exceeded checkpoint tolerable failure threshold."

// Counts reports whether a failure of this reason counts toward
// execution.checkpointing.tolerable-failed-checkpoints, as
// CheckpointFailureManager.checkFailureCounter decides: only failures that
// say something about the checkpoint itself (expired, declined, an
// asynchronous or I/O error) count; those caused by scheduling, subsumption
// or a failover never do.
func (r CheckpointFailureReason) Counts() bool {
	switch r {
	case IOException, CheckpointAsyncException, CheckpointDeclined, CheckpointExpired:
		return true
	}
	return false
}

// checkpointFailureManager is Flink's CheckpointFailureManager: it counts
// continuous checkpoint failures and fails the job over when they exceed
// the tolerable number. Plain data, so a fork copies it.
type checkpointFailureManager struct {
	continuous    int
	counted       map[int64]bool
	lastSucceeded int64
}

// onSuccess is handleCheckpointSuccess: a newer completed checkpoint
// clears the count.
func (m *checkpointFailureManager) onSuccess(id int64) {
	if id > m.lastSucceeded {
		m.lastSucceeded = id
		m.continuous = 0
		clear(m.counted)
	}
}

// onFailure is checkFailureAgainstCounter for checkpoint id failing for
// reason. It returns true when the job must fail over. Savepoint failures
// on the JobManager (expiry) never count: a savepoint is a manual action
// that a failover would not help.
func (m *checkpointFailureManager) onFailure(id int64, reason CheckpointFailureReason, savepoint bool, tolerable int) bool {
	if savepoint && reason == CheckpointExpired {
		return false
	}
	if id <= m.lastSucceeded {
		return false
	}
	if reason.Counts() {
		if m.counted == nil {
			m.counted = map[int64]bool{}
		}
		if !m.counted[id] {
			m.counted[id] = true
			m.continuous++
		}
	}
	if m.continuous > tolerable {
		m.continuous = 0
		clear(m.counted)
		return true
	}
	return false
}

// checkpointFailed runs the failure manager for an aborted checkpoint and,
// past the threshold, fails the job over as Flink's does.
func (c *core) checkpointFailed(p *pendingCheckpoint, reason CheckpointFailureReason) {
	tol := c.spec.Checkpointing.TolerableFailed
	if !c.cfm.onFailure(p.id, reason, p.savepoint, tol) {
		return
	}
	c.fail(nil, fmt.Sprintf("%s The latest checkpoint (%d) failed due to %s; %d failed checkpoint(s) in a row are tolerated (execution.checkpointing.tolerable-failed-checkpoints = %d)",
		ExceededTolerableFailuresMessage, p.id, reason, tol, tol))
}
