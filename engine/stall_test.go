package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A snapshot stalled past execution.checkpointing.timeout makes its
// checkpoint expire (Options.SnapshotStall, the fault the conformance
// scenario expired-checkpoint injects on both StateLab and Flink). With
// tolerable-failed-checkpoints 0 the job fails over; without the stall the
// same run has no failed checkpoint.
func TestSnapshotStallExpiresCheckpoint(t *testing.T) {
	run := func(stall bool) (*Stepper, *eventLog) {
		spec := wordCount(3000, 2, 2, 0)
		spec.Checkpointing.Interval = ms(100)
		spec.Checkpointing.Timeout = ms(800)
		spec.Checkpointing.TolerableFailed = 0
		opts := Options{Dir: t.TempDir()}
		log := &eventLog{}
		opts.RecordEvents = log.add
		var asked []int64
		if stall {
			opts.SnapshotStall = func(task string, id int64) time.Duration {
				if task == "count#0" {
					asked = append(asked, id)
				}
				if task == "count#0" && id == 2 {
					return 2500 * time.Millisecond
				}
				return 0
			}
		}
		s, err := NewStepper(spec, opts)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		_, err = s.RunUntil(func(sn *Snapshot) bool { return sn.Checkpoints.Counts.Completed >= 3 }, 200000)
		require.NoError(t, err)
		if stall {
			assert.Contains(t, asked, int64(2), "the hook is asked for count#0's snapshot of checkpoint 2")
		}
		return s, log
	}

	s, log := run(true)
	snap := s.Snapshot()
	var failed []CheckpointStats
	for _, h := range snap.Checkpoints.History {
		if h.Status == CheckpointFailed {
			failed = append(failed, h)
		}
	}
	require.Len(t, failed, 1, "checkpoint 2 expired, no other failed")
	assert.Equal(t, int64(2), failed[0].ID)
	assert.Equal(t, CheckpointExpired, failed[0].FailureReason)
	var statuses []string
	for _, e := range log.kinds(EvJobStatus) {
		statuses = append(statuses, e.Status)
	}
	assert.Contains(t, statuses, string(JobRestarting), "tolerable 0: the expiry fails the job over")
	assert.GreaterOrEqual(t, snap.Job.Attempt, 2)

	s, log = run(false)
	assert.Zero(t, s.Snapshot().Checkpoints.Counts.Failed, "without the stall nothing expires")
	for _, e := range log.kinds(EvJobStatus) {
		assert.NotEqual(t, string(JobRestarting), e.Status)
	}
}
