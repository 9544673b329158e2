package engine

// barrierMode is the checkpointing mode the job's subtasks handle barriers
// with. It is the spec's mode when periodic checkpoints are configured; with
// no interval it is at-least-once, whatever the spec asks, as Flink does:
// StreamGraph.getCheckpointingMode returns AT_LEAST_ONCE when checkpointing
// is not enabled ("the at-least-once input handler is slightly cheaper … so
// we use that one if checkpointing is not enabled"), StreamingJobGraphGenerator
// writes that mode into every task's configuration, and
// InputProcessorUtil.createCheckpointBarrierHandler then builds a
// CheckpointBarrierTracker, which counts barriers and blocks no input. The
// checkpoints and savepoints of such a job are taken by hand only
// (POST /jobs/:id/checkpoints, a savepoint, a stop-with-savepoint), and each
// of them is handled by that tracker: a subtask with several inputs goes on
// reading the inputs whose barrier already came, so its snapshot may hold
// records after the barrier (measured on Flink 2.3.0 and 1.20.5:
// conformance no-interval-barriers-do-not-block). A stop-with-savepoint stays
// a consistent cut: the sources emit nothing after its barrier.
//
// Unaligned checkpoints are turned off with it (unalignedOn), as
// StreamingJobGraphGenerator does for any mode but EXACTLY_ONCE.
func (c *core) barrierMode() CheckpointMode {
	return c.spec.Checkpointing.BarrierMode()
}

// BarrierMode is the checkpointing mode a job with these settings handles
// its barriers with: Mode when an interval is set (checkpointing enabled),
// at-least-once with none (core.barrierMode says why).
func (c CheckpointingSpec) BarrierMode() CheckpointMode {
	if c.Interval <= 0 {
		return AtLeastOnce
	}
	return c.Mode
}
