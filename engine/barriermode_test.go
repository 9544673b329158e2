package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// intervalNeverReached is a checkpoint interval the tests never reach: it
// enables checkpointing, so barriers are handled in the spec's mode, while
// every checkpoint is still taken by hand.
const intervalNeverReached = Duration(1000 * time.Hour)

// With no checkpoint interval a checkpoint by hand is not aligned, though the
// spec asks for exactly-once: Flink builds CheckpointBarrierTracker when
// checkpointing is not enabled (StreamGraph.getCheckpointingMode returns
// AT_LEAST_ONCE; conformance no-interval-barriers-do-not-block measured it).
// TestBarrierAlignmentBlocksChannel's steps: merge does not block a's
// channel, a3 and a4 (behind a's barrier) go through before b's barrier and
// land in checkpoint 1.
func TestNoIntervalCheckpointByHandDoesNotAlign(t *testing.T) {
	spec := alignSpec(ExactlyOnce)
	spec.Checkpointing.Interval = 0
	s, log := newTestStepper(t, spec)
	settle(t, s)
	poll(t, s, "a#0") // a1 a2
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	sendControl(t, s, "a#0") // barrier 1 behind a1 a2
	poll(t, s, "a#0")        // a3 a4, behind the barrier
	deliverBarrier(t, s, "a#0->merge#0")
	assert.False(t, channelView(t, s.Snapshot(), "a#0->merge#0").Blocked, "no interval: barriers are counted, not aligned")
	deliver(t, s, "a#0->merge#0") // a3 a4 go through
	assert.Equal(t, int64(4), subtaskView(t, s.Snapshot(), "merge#0").RecordsIn, "a1-a4 taken in before b's barrier")
	drain(t, s, "merge#0->sink#0")
	poll(t, s, "b#0")
	deliver(t, s, "b#0->merge#0")
	sendControl(t, s, "b#0")
	deliverBarrier(t, s, "b#0->merge#0")
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed == 1 }, 1000)
	require.NoError(t, err)
	n, ok := precommitted(log, "sink#0", 1)
	require.True(t, ok)
	assert.Equal(t, 6, n, "a3 a4 entered checkpoint 1")
	assert.Empty(t, log.kinds(EvChannelBlocked))
	cv := s.Snapshot().Checkpoints
	assert.Equal(t, AtLeastOnce, cv.Mode, "the checkpoints view says how barriers are handled")
	assert.True(t, cv.ModeNoInterval)
}

// With an interval (never reached) the same spec's view says exactly-once.
func TestIntervalKeepsTheSpecMode(t *testing.T) {
	s, _ := newTestStepper(t, alignSpec(ExactlyOnce))
	cv := s.Snapshot().Checkpoints
	assert.Equal(t, ExactlyOnce, cv.Mode)
	assert.False(t, cv.ModeNoInterval)
	spec := alignSpec(AtLeastOnce)
	spec.Checkpointing.Interval = 0
	s, _ = newTestStepper(t, spec)
	cv = s.Snapshot().Checkpoints
	assert.Equal(t, AtLeastOnce, cv.Mode)
	assert.False(t, cv.ModeNoInterval, "at-least-once asked for")
}

// A savepoint of a job with no interval is not aligned either: the tracker
// counts every barrier, a savepoint's too (CheckpointOptions asks for an
// aligned savepoint, but CheckpointBarrierTracker has no alignment to do).
func TestNoIntervalSavepointDoesNotAlign(t *testing.T) {
	spec := alignSpec(ExactlyOnce)
	spec.Checkpointing.Interval = 0
	s, log := newTestStepper(t, spec)
	settle(t, s)
	poll(t, s, "a#0")
	require.NoError(t, s.Do(Command{Name: CmdTriggerSavepoint}))
	sendControl(t, s, "a#0")
	poll(t, s, "a#0")
	deliverBarrier(t, s, "a#0->merge#0")
	assert.False(t, channelView(t, s.Snapshot(), "a#0->merge#0").Blocked)
	deliver(t, s, "a#0->merge#0")
	assert.Equal(t, int64(4), subtaskView(t, s.Snapshot(), "merge#0").RecordsIn, "a3 a4 taken in before b's barrier")
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed == 1 }, 1000)
	require.NoError(t, err)
	assert.True(t, s.Snapshot().Checkpoints.History[0].Savepoint)
	assert.Empty(t, log.kinds(EvChannelBlocked))
}

// With no interval unaligned checkpoints are turned off, as with mode
// at-least-once (StreamingJobGraphGenerator: "Unaligned checkpoints can only
// be used with checkpointing mode EXACTLY_ONCE"): a checkpoint by hand is
// taken with counted barriers, none overtakes a record, no channel state.
func TestNoIntervalTurnsUnalignedOff(t *testing.T) {
	spec := unalignedJob(400)
	spec.Checkpointing.Interval = 0
	s, log := newTestStepper(t, spec)
	startJob(t, s)
	for range 3 {
		poll(t, s, "source#0")
		poll(t, s, "source#1")
	}
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed == 1 }, 20000)
	require.NoError(t, err)
	h := s.Snapshot().Checkpoints.History[0]
	assert.False(t, h.Unaligned)
	assert.Zero(t, h.ChannelStateSize)
	assert.Empty(t, log.kinds(EvBarrierOvertook))
	assert.False(t, s.Snapshot().Checkpoints.Unaligned)
	assert.True(t, s.Snapshot().Checkpoints.UnalignedIgnored, "the view says unaligned was turned off")
}

// A stop-with-savepoint of a job with no interval stays a consistent cut
// though its barriers are only counted: the sources emit nothing after its
// barrier, so no input carries a record behind it. Rescales (a
// stop-with-savepoint and a restore) of alertsJob with no interval, and the
// output is exactly once.
func TestNoIntervalStopWithSavepointRescaleIsExact(t *testing.T) {
	for _, pp := range [][2]int{{2, 3}, {3, 2}} {
		spec := alertsJob(BackendMemory, pp[0], "60ms")
		spec.Checkpointing.Interval = 0
		s, log := newTestStepper(t, spec)
		s.Steps(150)
		rescaleTo(t, s, "alerts", pp[1])
		s.Steps(150)
		rescaleTo(t, s, "alerts", pp[0])
		runToEnd(t, s)
		assert.Empty(t, log.kinds(EvChannelBlocked), "no interval: nothing aligned")
		cmp, err := s.Compare()
		require.NoError(t, err)
		assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
	}
}
