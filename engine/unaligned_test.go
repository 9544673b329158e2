package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unalignedJob: two sources keyed into one count, then a sink. Checkpoints
// are triggered by hand.
func unalignedJob(records int) *JobSpec {
	return &JobSpec{
		Name: "unaligned", Seed: 11,
		Operators: []OperatorSpec{
			{ID: "source", Kind: KindSource, Parallelism: 2, Options: map[string]any{"partitions": 2, "records": records, "keys": 40, "wordsPerLine": 1}},
			{ID: "count", Kind: KindCount, Parallelism: 1},
			{ID: "sink", Kind: KindSink, Parallelism: 1},
		},
		Edges: []EdgeSpec{
			{From: "source", To: "count", Partitioner: Hash},
			{From: "count", To: "sink", Partitioner: Forward},
		},
		// Checkpointing enabled (an interval never reached): with none
		// Flink turns unaligned checkpoints off (barriermode.go).
		Checkpointing: CheckpointingSpec{Unaligned: true, Interval: intervalNeverReached},
		Cluster:       ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 2},
		Runtime:       RuntimeSpec{FIFO: true, ChannelCapacity: 50},
		Restart:       RestartSpec{Strategy: RestartFixedDelay, Attempts: 10, Delay: ms(1)},
	}
}

func queuedRecords(t *testing.T, s *Stepper, channel string) int {
	n := 0
	for _, q := range channelView(t, s.Snapshot(), channel).Queued {
		n += q.Records
	}
	return n
}

func startJob(t *testing.T, s *Stepper) {
	t.Helper()
	for i := 0; i < 50; i++ {
		settle(t, s)
		snap := s.Snapshot()
		if allRunning(&snap) {
			return
		}
	}
	t.Fatal("the job never ran")
}

// An unaligned checkpoint: the barrier overtakes the records queued in the
// channel (they become the sender's channel state), the receiver snapshots
// at its first barrier without blocking anything, persists what still
// arrives before the other input's barrier, and acknowledges with the
// channel state once every barrier arrived. A restore from that checkpoint
// replays the channel state, and the output is exactly once.
func TestUnalignedCheckpointPersistsAndRestoresInFlightRecords(t *testing.T) {
	for _, backend := range []Backend{BackendMemory, BackendFS, BackendPebble} {
		t.Run(string(backend), func(t *testing.T) {
			spec := unalignedJob(400)
			spec.Backend = backend
			s, log := newTestStepper(t, spec)
			startJob(t, s)
			for range 3 {
				poll(t, s, "source#0")
				poll(t, s, "source#1")
			}
			// Some of source#0's records reach count first.
			deliver(t, s, "source#0->count#0")
			queued0 := queuedRecords(t, s, "source#0->count#0")
			require.Positive(t, queuedRecords(t, s, "source#1->count#0"))
			require.Positive(t, queued0)

			require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
			settleJM(t, s)
			sendControl(t, s, "source#0") // the trigger: source#0 snapshots and sends barrier 1
			ch := channelView(t, s.Snapshot(), "source#0->count#0")
			require.NotEmpty(t, ch.Queued)
			assert.Equal(t, QueuedElement{Kind: "barrier", Checkpoint: 1, Unaligned: true}, ch.Queued[0], "the barrier went to the head of the queue")
			over := log.kinds(EvBarrierOvertook)
			require.Len(t, over, 1)
			assert.Equal(t, queued0, over[0].Records, "it overtook every queued record")

			deliver(t, s, "source#0->count#0") // count#0 gets the barrier first: it snapshots now
			assert.False(t, channelView(t, s.Snapshot(), "source#1->count#0").Blocked, "unaligned: nothing blocks")
			assert.False(t, channelView(t, s.Snapshot(), "source#0->count#0").Blocked)
			require.Len(t, unalignedEvents(log, "count#0"), 1)
			// Records behind the barrier on source#0 are processed (they are
			// source#0's channel state), and so are source#1's records
			// ahead of its barrier (count#0's input channel state).
			drain(t, s, "source#0->count#0")
			inflight := queuedRecords(t, s, "source#1->count#0")
			drain(t, s, "source#1->count#0")
			require.Empty(t, log.kinds(EvCheckpointAck))
			sendControl(t, s, "source#1")
			deliver(t, s, "source#1->count#0")
			_, err := s.RunUntil(func(sn *Snapshot) bool { return sn.Checkpoints.Counts.Completed == 1 }, 10000)
			require.NoError(t, err)

			done := unalignedEvents(log, "count#0")
			require.Len(t, done, 2)
			assert.Equal(t, inflight, done[1].Records, "count#0 persisted what arrived on source#1 before its barrier")
			var cp CheckpointStats
			for _, c := range s.Snapshot().Checkpoints.History {
				if c.ID == 1 {
					cp = c
				}
			}
			assert.True(t, cp.Unaligned)
			assert.Positive(t, cp.ChannelStateSize)
			var sum int64
			for _, a := range cp.Subtasks {
				sum += a.ChannelStateSize
				if a.Task == "count#0" || a.Task == "source#0" {
					assert.True(t, a.Unaligned, a.Task)
					assert.Positive(t, a.ChannelStateSize, a.Task)
				}
			}
			assert.Equal(t, cp.ChannelStateSize, sum)

			// Crash count#0 at once: the restore must replay the channel
			// state of checkpoint 1, or records are lost.
			require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
			_, err = s.RunUntil(func(sn *Snapshot) bool { return sn.Job.Status == JobRunning && allRunning(sn) }, 10000)
			require.NoError(t, err)
			var replayed int
			for _, e := range log.kinds(EvUnalignedCheckpoint) {
				if strings.Contains(e.Message, "replayed") {
					replayed += e.Records
					if e.Task == "source#0" {
						assert.Contains(t, e.Message, fmt.Sprintf("%d sent again", queued0))
					}
				}
			}
			assert.Equal(t, inflight, replayed, "count#0 processed its input channel state again")
			runToEnd(t, s)
			cmp, err := s.Compare()
			require.NoError(t, err)
			assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
		})
	}
}

func unalignedEvents(log *eventLog, task string) []Event {
	var out []Event
	for _, e := range log.kinds(EvUnalignedCheckpoint) {
		if e.Task == task {
			out = append(out, e)
		}
	}
	return out
}

// settleJM delivers the JobManager's pending messages (not the subtasks').
func settleJM(t *testing.T, s *Stepper) {
	for s.canStep(func(cd candidate) bool { return cd.kind == candJM }) {
		s.stepWhere(t, "jm", func(cd candidate) bool { return cd.kind == candJM })
	}
}

// aligned-checkpoint-timeout: the checkpoint starts aligned (no overtaking,
// the first input blocks) and switches to unaligned when the alignment is
// still going on after the timeout; then the blocked input unblocks and what
// arrives on the other input before its barrier is channel state.
func TestAlignedCheckpointTimeoutSwitchesToUnaligned(t *testing.T) {
	spec := unalignedJob(2000)
	spec.Checkpointing.AlignedCheckpointTimeout = ms(20)
	spec.Runtime.ChannelCapacity = 500
	s, log := newTestStepper(t, spec)
	startJob(t, s)
	for range 10 {
		poll(t, s, "source#1")
	}
	poll(t, s, "source#0")
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	settleJM(t, s)
	sendControl(t, s, "source#0")
	ch := channelView(t, s.Snapshot(), "source#0->count#0")
	assert.Equal(t, QueuedElement{Kind: "barrier", Checkpoint: 1}, ch.Queued[len(ch.Queued)-1], "aligned: the barrier queues behind the records")
	assert.Empty(t, log.kinds(EvBarrierOvertook))
	deliverBarrier(t, s, "source#0->count#0")
	require.True(t, channelView(t, s.Snapshot(), "source#0->count#0").Blocked, "it aligns first")
	require.Empty(t, log.kinds(EvUnalignedCheckpoint))

	// source#1's backlog keeps the alignment going past the timeout.
	for i := 0; len(log.kinds(EvUnalignedCheckpoint)) == 0; i++ {
		require.Less(t, i, 400, "the alignment never timed out")
		if queuedRecords(t, s, "source#1->count#0") == 0 {
			poll(t, s, "source#1")
		}
		deliver(t, s, "source#1->count#0")
	}
	s.mu.Lock()
	at := s.clock
	s.mu.Unlock()
	assert.GreaterOrEqual(t, at, 20*time.Millisecond)
	assert.False(t, channelView(t, s.Snapshot(), "source#0->count#0").Blocked, "unaligned now: unblocked")
	persisted := queuedRecords(t, s, "source#1->count#0")
	drain(t, s, "source#1->count#0")
	sendControl(t, s, "source#1")
	// source#1 sends its barrier unaligned? No: the checkpoint started
	// aligned; count#0 has switched, the source's barrier is still aligned
	// and arrives behind the records it sent.
	_, err := s.RunUntil(func(sn *Snapshot) bool { return sn.Checkpoints.Counts.Completed == 1 }, 10000)
	require.NoError(t, err)
	cp := s.Snapshot().Checkpoints.History[0]
	assert.True(t, cp.Unaligned)
	assert.Positive(t, cp.ChannelStateSize)
	done := log.kinds(EvUnalignedCheckpoint)
	assert.GreaterOrEqual(t, done[len(done)-1].Records, persisted)

	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
}

func TestUnalignedSpecValidation(t *testing.T) {
	s := unalignedJob(10)
	s.Checkpointing.AlignedCheckpointTimeout = 0
	s.Checkpointing.Mode = AtLeastOnce
	require.NoError(t, s.Validate(), "Flink runs unaligned with at-least-once, turning unaligned off")

	s = unalignedJob(10)
	s.Checkpointing.Unaligned = false
	s.Checkpointing.AlignedCheckpointTimeout = ms(10)
	err := s.Validate()
	require.ErrorIs(t, err, ErrInvalidSpec)
	assert.Contains(t, err.Error(), "unaligned: true")
}

// Unaligned checkpoints asked for with mode at-least-once: Flink turns
// unaligned off (StreamingJobGraphGenerator.configureCheckpointing logs a
// warning and calls enableUnalignedCheckpoints(false)) and runs the job at
// least once, barriers counted, not aligned and not overtaking; the
// checkpoints view says the setting was ignored. (Before, StateLab refused
// the spec: conformance's audit found Flink does not.)
func TestUnalignedWithAtLeastOnceIsTurnedOff(t *testing.T) {
	spec := unalignedJob(300)
	spec.Checkpointing.AlignedCheckpointTimeout = 0
	spec.Checkpointing.Mode = AtLeastOnce
	spec.Checkpointing.Interval = ms(20)
	s, log := newTestStepper(t, spec)
	startJob(t, s)
	_, err := s.RunUntil(func(sn *Snapshot) bool { return sn.Checkpoints.Counts.Completed >= 2 }, 200000)
	require.NoError(t, err)
	assert.Empty(t, log.kinds(EvBarrierOvertook), "no barrier overtakes records")
	assert.Empty(t, log.kinds(EvChannelBlocked), "at-least-once blocks no input")
	cv := s.Snapshot().Checkpoints
	assert.False(t, cv.Unaligned)
	assert.True(t, cv.UnalignedIgnored)
	for _, h := range cv.History {
		assert.False(t, h.Unaligned, "checkpoint %d", h.ID)
	}
}

// Savepoints are always aligned, even with unaligned checkpoints on.
func TestSavepointStaysAligned(t *testing.T) {
	s, log := newTestStepper(t, unalignedJob(300))
	startJob(t, s)
	for range 3 {
		poll(t, s, "source#0")
	}
	require.NoError(t, s.Do(Command{Name: CmdTriggerSavepoint}))
	_, err := s.RunUntil(func(sn *Snapshot) bool { return sn.Checkpoints.Counts.Completed == 1 }, 10000)
	require.NoError(t, err)
	assert.Empty(t, log.kinds(EvBarrierOvertook))
	assert.False(t, s.Snapshot().Checkpoints.History[0].Unaligned)
}

// Chaos with unaligned checkpoints (and with chaining on top): seeded
// random schedules, periodic checkpoints and subtask crashes; the
// two-phase-commit sink's output is exactly once for every seed.
func TestUnalignedChaosExactlyOnce(t *testing.T) {
	overtook, withState := 0, 0
	defer func() {
		assert.Positive(t, overtook, "barriers overtook records")
		assert.Positive(t, withState, "checkpoints held channel state")
	}()
	for _, chained := range []bool{false, true} {
		for seed := int64(1); seed <= 6; seed++ {
			t.Run(fmt.Sprintf("chained=%v/seed=%d", chained, seed), func(t *testing.T) {
				spec := ChaosSpec(seed, 800, BackendMemory, SinkExactlyOnce)
				spec.Checkpointing.Unaligned = true
				spec.Checkpointing.Interval = ms(5)
				spec.Runtime.FIFO = false
				spec.Runtime.ChannelCapacity = 8
				if chained {
					on := true
					spec.Chaining = &on
					spec.Edges[2].Partitioner = Forward
				}
				spec.Cluster.Failover = FailoverRegion
				s, log := newTestStepper(t, spec)
				rng := rand.New(rand.NewPCG(uint64(seed), 99))
				crashes := 0
				for i := 0; i < 40 && crashes < 3; i++ {
					s.Steps(50 + rng.IntN(200))
					snap := s.Snapshot()
					if !allRunning(&snap) || snap.Job.Status != JobRunning {
						continue
					}
					ops := snap.Job.Operators
					o := ops[rng.IntN(len(ops))]
					st := o.Subtasks[rng.IntN(len(o.Subtasks))]
					if snap.Checkpoints.Counts.Completed == 0 || rng.IntN(3) != 0 {
						continue
					}
					require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: st.Name}))
					crashes++
				}
				runToEnd(t, s)
				cmp, err := s.Compare()
				require.NoError(t, err)
				assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
				overtook += len(log.kinds(EvBarrierOvertook))
				unaligned := 0
				for _, c := range s.Snapshot().Checkpoints.History {
					if c.Unaligned {
						unaligned++
					}
					if c.ChannelStateSize > 0 {
						withState++
					}
				}
				assert.Positive(t, unaligned)
			})
		}
	}
}

// The Stepper stays deterministic with chaining and unaligned checkpoints:
// the same spec, seed and commands give the same events.
func TestChainedUnalignedSameSeedSameEvents(t *testing.T) {
	cmds := []LoggedCommand{
		{Step: 300, Command: Command{Name: CmdCrashSubtask, Task: "tokenizer#1"}},
		{Step: 900, Command: Command{Name: CmdCrashTaskManager, TaskManager: "tm-2"}},
		{Step: 950, Command: Command{Name: CmdRestartTaskManager, TaskManager: "tm-2"}},
	}
	spec := ChaosSpec(11, 600, BackendMemory, SinkExactlyOnce)
	on := true
	spec.Chaining = &on
	spec.Checkpointing.Unaligned = true
	spec.Checkpointing.Interval = ms(5)
	a, _ := runLogged(t, spec, 2500, cmds)
	b, _ := runLogged(t, spec, 2500, cmds)
	require.Greater(t, len(a), 500)
	require.Equal(t, len(a), len(b))
	for i := range a {
		require.Equal(t, a[i], b[i], "event %d differs", i)
	}
	joined := strings.Join(a, "\n")
	assert.Contains(t, joined, string(EvBarrierOvertook))
	assert.Contains(t, joined, "fails as one task")
}

// On the Live driver, with barriers overtaking records that other
// goroutines are taking out of the same channels: crashes (one inside a
// chain), a rescale and a reactive-free restart still give exactly-once
// output, and checkpoints carried channel state.
func TestLiveUnalignedCrashAndRescale(t *testing.T) {
	for _, chained := range []bool{false, true} {
		t.Run(fmt.Sprintf("chained=%v", chained), func(t *testing.T) {
			spec := wordCount(6000, 2, 2, 0)
			spec.Checkpointing.Interval = ms(5)
			spec.Checkpointing.Unaligned = true
			spec.Operators[0].Options["rate"] = 6000.0
			spec.Restart.Delay = ms(5)
			spec.Runtime.ChannelCapacity = 4
			if chained {
				on := true
				spec.Chaining = &on
			}
			l, err := NewLive(spec, Options{Dir: t.TempDir()})
			require.NoError(t, err)
			defer l.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			require.NoError(t, l.Start(ctx))
			waitFor := func(what string, pred func(s *Snapshot) bool) {
				t.Helper()
				for !func() bool { s := l.Snapshot(); return pred(&s) }() {
					require.NoError(t, ctx.Err(), what)
					time.Sleep(time.Millisecond)
				}
			}
			waitFor("a checkpoint", func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed > 1 })
			require.NoError(t, l.Do(Command{Name: CmdCrashSubtask, Task: "tokenizer#1"}))
			waitFor("restart", func(s *Snapshot) bool { return s.Job.Attempt == 2 && allRunning(s) })
			waitFor("another checkpoint", func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed > 3 })
			require.NoError(t, l.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
			waitFor("restart", func(s *Snapshot) bool { return s.Job.Attempt == 3 && allRunning(s) })
			require.NoError(t, l.Do(Command{Name: CmdRescale, Operator: "count", Parallelism: 3}))
			waitFor("rescale", func(s *Snapshot) bool { return s.Counters.Rescales == 1 && allRunning(s) })
			require.NoError(t, l.WaitDrained(ctx))
			cmp, err := l.Compare()
			require.NoError(t, err)
			assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
			unaligned := 0
			for _, c := range l.Snapshot().Checkpoints.History {
				if c.Unaligned {
					unaligned++
				}
			}
			assert.Positive(t, unaligned)
		})
	}
}

// Reactive mode restores the latest checkpoint with a new parallelism: the
// channel state of an unaligned checkpoint is redistributed (input state by
// key group to the keyed count's new subtasks, output state sent again
// through the edge's partitioner), and the output stays exactly once.
func TestUnalignedChannelStateAcrossReactiveRescale(t *testing.T) {
	spec := unalignedJob(600)
	spec.Cluster = ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 2, Reactive: true}
	spec.Operators[2].Options = map[string]any{"semantics": SinkExactlyOnce}
	s, log := newTestStepper(t, spec)
	startJob(t, s)
	for range 4 {
		poll(t, s, "source#0")
		poll(t, s, "source#1")
	}
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	settleJM(t, s)
	sendControl(t, s, "source#0")
	deliverBarrier(t, s, "source#0->count#0")
	inflight := queuedRecords(t, s, "source#1->count#1") + queuedRecords(t, s, "source#1->count#0")
	require.Positive(t, inflight)
	for _, ch := range []string{"source#1->count#0", "source#1->count#1"} {
		drain(t, s, ch)
	}
	_, err := s.RunUntil(func(sn *Snapshot) bool { return sn.Checkpoints.Counts.Completed == 1 }, 10000)
	require.NoError(t, err)
	require.Positive(t, s.Snapshot().Checkpoints.History[0].ChannelStateSize)

	require.NoError(t, s.Do(Command{Name: CmdAddTaskManager}))
	_, err = s.RunUntil(func(sn *Snapshot) bool { return sn.Counters.Rescales == 1 && allRunning(sn) }, 20000)
	require.NoError(t, err)
	for _, o := range s.Snapshot().Job.Operators {
		assert.Equal(t, 4, o.Parallelism, o.ID)
	}
	replayed := 0
	for _, e := range log.kinds(EvUnalignedCheckpoint) {
		if strings.Contains(e.Message, "replayed") {
			replayed++
		}
	}
	assert.Positive(t, replayed, "channel state was replayed after the rescale")
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
}

// A fork taken while a subtask holds an unaligned checkpoint's
// acknowledgement (waiting for its other input's barrier) copies it: the
// original and the fork both complete the checkpoint and end exactly once.
func TestForkDuringUnalignedCheckpoint(t *testing.T) {
	spec := unalignedJob(400)
	spec.Backend = BackendPebble
	s, _ := newTestStepper(t, spec)
	startJob(t, s)
	for range 3 {
		poll(t, s, "source#0")
		poll(t, s, "source#1")
	}
	require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
	settleJM(t, s)
	sendControl(t, s, "source#0")
	deliverBarrier(t, s, "source#0->count#0")
	s.mu.Lock()
	require.NotNil(t, s.c.ex.byName["count#0"].unal, "count#0 holds its acknowledgement")
	s.mu.Unlock()
	f, err := s.Fork(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer f.Close()
	for _, st := range []*Stepper{s, f} {
		_, err := st.RunUntil(func(sn *Snapshot) bool { return sn.Checkpoints.Counts.Completed >= 1 }, 20000)
		require.NoError(t, err)
		require.NoError(t, st.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
		runToEnd(t, st)
		cmp, err := st.Compare()
		require.NoError(t, err)
		assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
	}
}

// The chaos harness with chaining and unaligned checkpoints (statelab
// chaos --chaining --unaligned): seeded crashes of subtasks (inside the
// source -> tokenizer chain too) and TaskManagers, and rescales of the
// keyed count, exactly once on every backend and on both drivers.
func TestChaosChainingUnaligned(t *testing.T) {
	type tc struct {
		backend Backend
		driver  string
		seeds   []int64
		records int
	}
	tests := []tc{
		{BackendMemory, "step", []int64{21, 22, 23, 24}, 600},
		{BackendFS, "step", []int64{25, 26}, 400},
		{BackendPebble, "step", []int64{27}, 300},
		{BackendMemory, "live", []int64{28}, 600},
	}
	if testing.Short() {
		tests = tests[:1]
	}
	for _, c := range tests {
		for _, seed := range c.seeds {
			t.Run(fmt.Sprintf("%s/%s/%d", c.backend, c.driver, seed), func(t *testing.T) {
				res, err := RunChaos(context.Background(), ChaosConfig{Seed: seed, Records: c.records, Crashes: 3, Rescales: 2,
					Backend: c.backend, Driver: c.driver, Sink: SinkExactlyOnce, Chaining: true, Unaligned: true, Dir: t.TempDir()})
				require.NoError(t, err)
				assert.True(t, res.OK, "%s\n%v\n%v", res.Summary(), res.Actions, res.Diff(10))
				assert.Empty(t, res.Comparison.Duplicates)
				assert.Empty(t, res.Comparison.Losses)
			})
		}
	}
}
