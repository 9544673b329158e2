package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Live driver runs the same subtasks on goroutines: word count reaches
// the end of input with exactly-once output, events flow to subscribers,
// the state inspector answers, and Pause freezes the clock.
func TestLiveWordCount(t *testing.T) {
	spec := wordCount(3000, 2, 2, 0)
	spec.Checkpointing.Interval = ms(20)
	l, err := NewLive(spec, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer l.Close()
	sub := l.Subscribe(10000)
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, l.Start(ctx))
	require.NoError(t, l.WaitDrained(ctx))
	cmp, err := l.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
	assert.Equal(t, int64(3000), cmp[0].Records)

	snap := l.Snapshot()
	assert.Equal(t, "live", snap.Driver)
	assert.Equal(t, JobRunning, snap.Job.Status)
	assert.Positive(t, snap.Checkpoints.Counts.Completed)
	for _, p := range snap.Sources[0].Partitions {
		assert.Equal(t, p.End, p.Offset, "partition %d read to its end", p.Partition)
		assert.GreaterOrEqual(t, p.Owner, 0)
	}
	v, err := l.TaskState("count#0", 5)
	require.NoError(t, err)
	assert.Len(t, v.Keyed, 5)
	assert.NotNil(t, v.KeyGroups)

	kinds := map[EventKind]bool{}
	for done := false; !done; {
		select {
		case e := <-sub.C:
			kinds[e.Kind] = true
		default:
			done = true
		}
	}
	assert.True(t, kinds[EvCheckpointDone])
	assert.True(t, kinds[EvTaskStatus])
	assert.False(t, kinds[EvRecordsSent], "Live publishes no per-batch events")

	l.Pause()
	a := l.Snapshot().At
	// Let wall time pass: a clock still running would move At. A slow
	// machine only makes this check stricter.
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, a, l.Snapshot().At, "the clock stops while paused")
	assert.True(t, l.Snapshot().Paused)
	l.Resume()
	require.NoError(t, l.SetSpeed(4))
	require.Error(t, l.SetSpeed(0))
}

// A crash on the Live driver restarts the job from its checkpoint.
func TestLiveCrashAndRescale(t *testing.T) {
	spec := wordCount(4000, 2, 2, 0)
	spec.Checkpointing.Interval = ms(10)
	spec.Operators[0].Options["rate"] = 8000.0
	spec.Restart.Delay = ms(5)
	l, err := NewLive(spec, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, l.Start(ctx))
	waitFor := func(what string, pred func(s *Snapshot) bool) {
		t.Helper()
		for !func() bool { s := l.Snapshot(); return pred(&s) }() {
			require.NoError(t, ctx.Err(), what)
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("a checkpoint", func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed > 0 })
	require.NoError(t, l.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
	waitFor("restart", func(s *Snapshot) bool { return s.Job.Attempt == 2 && allRunning(s) })
	require.NoError(t, l.Do(Command{Name: CmdRescale, Operator: "count", Parallelism: 3}))
	waitFor("rescale", func(s *Snapshot) bool { return s.Counters.Rescales == 1 && allRunning(s) })
	assert.Len(t, l.Snapshot().Job.Operators[2].Subtasks, 3)
	require.NoError(t, l.WaitDrained(ctx))
	cmp, err := l.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
	assert.Equal(t, 2, l.Snapshot().Counters.Restores)
}

func TestLiveChaos(t *testing.T) {
	tests := []struct {
		backend Backend
		sink    string
		seeds   []int64
	}{
		{BackendMemory, SinkExactlyOnce, []int64{1, 2}},
		{BackendMemory, SinkAtLeastOnce, []int64{3}},
		{BackendFS, SinkExactlyOnce, []int64{4}},
		{BackendPebble, SinkExactlyOnce, []int64{5}},
	}
	if testing.Short() {
		tests = tests[:1]
	}
	for _, c := range tests {
		for _, seed := range c.seeds {
			t.Run(fmt.Sprintf("%s/%s/%d", c.backend, c.sink, seed), func(t *testing.T) {
				res, err := RunChaos(context.Background(), ChaosConfig{Seed: seed, Records: 600, Crashes: 3, Rescales: 2,
					Backend: c.backend, Sink: c.sink, Driver: "live", Dir: t.TempDir(), liveSpan: 250 * time.Millisecond})
				require.NoError(t, err)
				assert.True(t, res.OK, "%s\n%v\n%v", res.Summary(), res.Actions, res.Diff(10))
				assert.Equal(t, 3, res.Crashes)
				assert.Equal(t, 2, res.Rescales)
			})
		}
	}
}

// TestLiveSnapshotShowsSubtaskFigures: at full speed a snapshot shows what
// the Stepper's shows of each subtask — a source's partitions and offsets,
// its operator state, a keyed subtask's state figures — as the subtasks
// publish them, and the sink beside the ground truth. Once the job has
// drained they equal the Stepper's figures for the same job, key for key.
func TestLiveSnapshotShowsSubtaskFigures(t *testing.T) {
	for _, backend := range []Backend{BackendMemory, BackendPebble} {
		t.Run(string(backend), func(t *testing.T) {
			spec := func() *JobSpec {
				s := wordCount(4000, 2, 2, 0)
				s.Backend = backend
				s.Checkpointing.Interval = ms(20)
				return s
			}
			st, err := NewStepper(spec(), Options{Dir: t.TempDir()})
			require.NoError(t, err)
			defer st.Close()
			runToEnd(t, st)
			want := st.Snapshot()

			l, err := NewLive(spec(), Options{Dir: t.TempDir()})
			require.NoError(t, err)
			defer l.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			require.NoError(t, l.Start(ctx))
			require.NoError(t, l.WaitDrained(ctx))

			// The last figures are published when the subtasks run out
			// of work, and keyed ones at most every second.
			var got Snapshot
			same := func() bool {
				got = l.Snapshot()
				for _, name := range []string{"source#0", "source#1", "count#0", "count#1"} {
					g, w := subtaskView(t, got, name), subtaskView(t, want, name)
					if !assert.ObjectsAreEqual(w.Offsets, g.Offsets) || !assert.ObjectsAreEqual(w.OperatorState, g.OperatorState) {
						return false
					}
					if (w.State == nil) != (g.State == nil) || w.State != nil && (w.State.Keys != g.State.Keys || w.State.Bytes != g.State.Bytes) {
						return false
					}
				}
				return true
			}
			assert.Eventually(t, same, 10*time.Second, 20*time.Millisecond, "Live figures equal the Stepper's for the same job")
			src := subtaskView(t, got, "source#0")
			require.NotEmpty(t, src.Offsets, "a source subtask's partitions and offsets")
			assert.NotEmpty(t, src.OperatorState, "a source subtask's offsets as operator state")
			cnt := subtaskView(t, got, "count#0")
			require.NotNil(t, cnt.State, "a keyed subtask's state figures")
			assert.Positive(t, cnt.State.Keys)
			require.NotNil(t, got.Sinks[0].Comparison, "the sink beside the ground truth")
			assert.True(t, got.Sinks[0].Comparison.ExactlyOnce)
		})
	}
}

// A Live that was never started cannot hand over or fork its job, and
// says so (not "closed").
func TestLiveNotStartedCannotForkOrHandOver(t *testing.T) {
	l, err := NewLive(wordCount(100, 1, 1, 0), Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer l.Close()
	_, err = l.Fork(Options{Dir: t.TempDir()})
	require.ErrorIs(t, err, ErrNotRunning)
	assert.Contains(t, err.Error(), "call Start first")
	_, err = l.ToStepper()
	require.ErrorIs(t, err, ErrNotRunning)
	assert.Contains(t, err.Error(), "hand over")
}

// A rate-limited source that waits for its next poll at a slow speed wakes
// when the speed goes up: the learner who presses "faster" sees records
// flow at once, not after the wait computed at the old speed. One record
// per job second at 1/1000 is one record per 1000 s of wall time; at
// 1000× the next is due within milliseconds.
func TestLiveSpeedUpWakesAWaitingSource(t *testing.T) {
	spec := wordCount(100000, 1, 1, 0)
	spec.Operators[0].Options["partitions"] = 1
	spec.Operators[0].Options["rate"] = 1.0
	spec.Runtime = RuntimeSpec{BatchSize: 1}
	l, err := NewLive(spec, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, l.SetSpeed(0.001))
	require.NoError(t, l.Start(ctx))
	read := func() int64 { return subtaskView(t, l.Snapshot(), "source#0").RecordsOut }
	// The first record is read at once; the second is 1000 s away.
	for read() < 1 {
		require.NoError(t, ctx.Err(), "the first record")
		time.Sleep(time.Millisecond)
	}
	first := read()
	require.NoError(t, l.SetSpeed(1000))
	for read() < first+5 {
		// Without the wake the source sleeps out the wait computed at
		// 1/1000 (about 1000 s) and the context's 2 minutes end first.
		require.NoError(t, ctx.Err(), "records after the speed-up (read %d, %d before it)", read(), first)
		time.Sleep(time.Millisecond)
	}
}
