package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The min pause (execution.checkpointing.min-pause) counts from the last
// completed checkpoint only, as Flink's: CheckpointCoordinator sets
// lastCheckpointCompletionRelativeTime in cleanupAfterCompletedCheckpoint
// and nowhere on an abort, and CheckpointRequestDecider.
// nextTriggerDelayMillis measures the pause from it. So after a checkpoint
// expired, the next periodic one starts as soon as a tick asks for it (a
// tick queued during the expired one: at once), not a min pause after the
// abort. Measured on Flink 2.3.0 and 1.20.5 with the conformance scenario
// min-pause-after-expired-checkpoint. A checkpoint after a completed one
// still waits the pause.
func TestMinPauseCountsFromLastCompletedNotAbort(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval Duration
		// abortToNext: from checkpoint 2's expiry to checkpoint 3's trigger
		abortToNext time.Duration
	}{
		// Ticks every 10 ms: those while 2 is pending are queued, and the
		// oldest starts checkpoint 3 as 2 expires.
		{name: "queued tick starts at once", interval: ms(10), abortToNext: 0},
		// Ticks every 40 ms: none comes while 2 is pending (80 to 110 ms);
		// the tick of 120 ms starts 3, 95 ms after 1 completed (before:
		// dropped, 3 rescheduled for 110 + 25 ms).
		{name: "next tick starts it", interval: ms(40), abortToNext: 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := periodicSpec(tc.interval, ms(25), 1)
			spec.Checkpointing.Timeout = ms(30)
			spec.Checkpointing.TolerableFailed = 10
			s, log := newTestStepper(t, spec)
			settle(t, s)
			advanceTimer(t, s) // checkpoint 1
			completeAll(t, s, 1)
			done := log.kinds(EvCheckpointDone)
			require.Len(t, done, 1)
			end1 := done[0].At
			// No control reaches a source unless delivered: checkpoint 2
			// stays pending until its timeout.
			for i := 0; len(log.kinds(EvCheckpointAbort)) == 0; i++ {
				require.Less(t, i, 20)
				advanceTimer(t, s)
			}
			abort := log.kinds(EvCheckpointAbort)[0]
			require.Equal(t, int64(2), abort.Checkpoint)
			require.Equal(t, CheckpointExpired, abort.Stats.FailureReason)
			trig := log.kinds(EvCheckpointTrigger)
			require.Len(t, trig, 2)
			require.GreaterOrEqual(t, trig[1].At, end1+ms(25).D(), "checkpoint 2 waited the pause after 1 completed")
			startQueued(t, s)
			for i := 0; len(pendingIDs(s)) == 0; i++ {
				require.Less(t, i, 20)
				advanceTimer(t, s)
			}
			trig = log.kinds(EvCheckpointTrigger)
			require.Len(t, trig, 3)
			assert.Equal(t, abort.At+tc.abortToNext, trig[2].At,
				"checkpoint 3 does not wait the min pause after 2 expired (1 completed at %v, 2 expired at %v)", end1, abort.At)
			assert.EqualValues(t, 1, s.Snapshot().Checkpoints.Counts.Failed)

			// After a completed checkpoint the pause holds.
			completeAll(t, s, 3)
			done = log.kinds(EvCheckpointDone)
			end3 := done[len(done)-1].At
			for i := 0; len(log.kinds(EvCheckpointTrigger)) < 4; i++ {
				require.Less(t, i, 20)
				advanceTimer(t, s)
			}
			trig = log.kinds(EvCheckpointTrigger)
			assert.GreaterOrEqual(t, trig[3].At, end3+ms(25).D(), "checkpoint 4 waits the pause after 3 completed")
		})
	}
}
