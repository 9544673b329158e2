package engine

import "fmt"

// JobManager timers are data, not closures: what a timer does is named by
// its kind and arguments, so a copy of a running job (Fork) re-arms every
// pending timer on the copy, and both drivers fire them the same way.

type timerKind uint8

const (
	timerPeriodic         timerKind = iota + 1 // the checkpoint interval elapsed
	timerTimeout                               // checkpoint id of attempt expires
	timerRestart                               // the restart delay of attempt elapsed
	timerAck                                   // a subtask's acknowledgement arrives (its asynchronous part done)
	timerSlotRequest                           // slot.request.timeout of attempt elapsed
	timerHeartbeat                             // the heartbeat of TaskManager tm timed out
	timerRegionRestart                         // the restart delay of pending region id (epoch) elapsed
	timerQueuedCheckpoint                      // a pending checkpoint ended: start the queued requests that fit
)

// timer is one pending JobManager timer.
type timer struct {
	kind    timerKind
	id      int64
	attempt int
	msg     jmMsg
	tm      string
}

// fire runs a due timer in the JobManager's context.
func (c *core) fire(tm timer) {
	switch tm.kind {
	case timerPeriodic:
		c.periodicCheckpoint()
	case timerQueuedCheckpoint:
		c.executeQueuedRequests()
	case timerTimeout:
		if q := c.coord.pending[tm.id]; q != nil && q.attempt == tm.attempt {
			c.abortCheckpoint(q, CheckpointExpired, fmt.Sprintf("checkpoint expired before completing (execution.checkpointing.timeout %v)", c.spec.Checkpointing.Timeout.D()))
		}
	case timerRestart:
		if c.attempt == tm.attempt && c.status == JobRestarting {
			c.deploy()
		}
	case timerRegionRestart:
		if c.attempt == tm.attempt {
			c.restartRegion(int(tm.id))
		}
	case timerHeartbeat:
		if c.attempt == tm.attempt {
			c.heartbeatTimedOut(tm.tm)
		}
	case timerSlotRequest:
		if c.attempt == tm.attempt && c.waiting && !c.terminal {
			c.fail(nil, fmt.Sprintf("NoResourceAvailableException: could not acquire the %d slots the job needs within slot.request.timeout (%v)",
				slotsNeeded(c.par), c.spec.Cluster.SlotRequestTimeout.D()))
		}
	case timerAck:
		// A subtask whose TaskManager died never finishes its upload.
		if st := tm.msg.task.getStatus(); (st == TaskRunning || st == TaskFinished) && !tm.msg.task.dead.Load() {
			c.drv.sendJM(tm.msg)
		}
	}
}
