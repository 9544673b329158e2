package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Watermarks are not checkpointed, in Flink or here. A restored subtask's
// watermark is Long.MIN_VALUE (StreamTask's input watermark status starts
// from nothing, and the InternalTimerService's currentWatermark is
// Long.MIN_VALUE until a watermark arrives): its event time moves only when
// the restarted sources emit watermarks again. Lesson 17 says so.
//
// The test holds back every delivery into the alerts subtasks after the
// crash, so the restored alerts#0 runs with its sources' new watermarks
// still in its input channels. Its watermark must then be MinWatermark: a
// driver that restored the watermark the subtask had at the checkpoint
// (above MinWatermark, asserted first) fails here. Once the channels
// deliver, the subtask's first watermark is one its sources emitted after
// the restore. TestTimersFireAfterCrashAndRescale's check that the watermark
// after a restore is lower than just before the crash cannot tell the two
// apart: the checkpoint's watermark is lower too.
func TestRestoredSubtaskStartsWithoutWatermark(t *testing.T) {
	for _, backend := range []Backend{BackendMemory, BackendFS, BackendPebble} {
		t.Run(string(backend), func(t *testing.T) {
			s, log := newTestStepper(t, alertsJob(backend, 2, "60ms"))
			s.Steps(120)
			wmBefore := subtaskView(t, s.Snapshot(), "alerts#0").Watermark
			require.Greater(t, wmBefore, MinWatermark, "alerts#0 had a watermark before the checkpoint")
			require.Less(t, wmBefore, MaxWatermark, "the input is not read to its end")
			id := completeCheckpoint(t, s)
			v, err := s.TaskState("alerts#0", 0)
			require.NoError(t, err)
			require.NotEmpty(t, v.Timers, "alerts#0 checkpointed pending timers")

			wmEvents := len(log.kinds(EvWatermark))
			require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "alerts#0"}))
			notIntoAlerts := func(cd candidate) bool {
				return cd.kind != candDeliver || !strings.HasPrefix(cd.t.name, "alerts#")
			}
			for i := 0; ; i++ {
				require.Less(t, i, 50000, "alerts#0 never ran again")
				st := subtaskView(t, s.Snapshot(), "alerts#0")
				if st.Status == TaskRunning && st.RestoredFrom == id {
					break
				}
				if s.canStep(notIntoAlerts) {
					s.stepWhere(t, "step without delivering to alerts", notIntoAlerts)
				} else {
					advanceTimer(t, s)
				}
			}
			st := subtaskView(t, s.Snapshot(), "alerts#0")
			assert.Equal(t, MinWatermark, st.Watermark, "restored from checkpoint %d, before any watermark arrived (it had %d before)", id, wmBefore)
			v, err = s.TaskState("alerts#0", 0)
			require.NoError(t, err)
			assert.Equal(t, MinWatermark, v.Watermark, "the inspector's watermark")
			assert.NotEmpty(t, v.Timers, "the timers came back with the keyed state")

			// The sources, rewound to the checkpoint's offsets, emitted
			// watermarks again; delivered, they move alerts#0's event time.
			fromSources := map[int64]bool{}
			var first int64
			got := false
			for i := 0; !got; i++ {
				require.Less(t, i, 50000, "alerts#0 never received a watermark after the restore")
				require.True(t, s.Step(), "the job stopped")
				for _, e := range log.kinds(EvWatermark)[wmEvents:] {
					switch {
					case strings.HasPrefix(e.Task, "source#"):
						fromSources[e.Watermark] = true
					case e.Task == "alerts#0" && !got:
						first, got = e.Watermark, true
					}
				}
			}
			assert.True(t, fromSources[first], "alerts#0's first watermark after the restore, %d, is one its sources emitted after the restore (%v)", first, fromSources)
			assert.Equal(t, first, subtaskView(t, s.Snapshot(), "alerts#0").Watermark)
		})
	}
}

// The same on the Live driver, where deliveries cannot be held back: the
// source is one subtask reading two partitions, one record per poll, at one
// record per second of job time. Its watermark is the lower of its
// partitions' and stays Long.MIN_VALUE until it has read both, so after the
// restore it has read one partition and holds the other back for a second
// of job time. The clock runs at 100x until the checkpoint, then at 1/1000,
// so that second lasts 1000 s of wall time, while the test looks at the
// restored alerts#0: its watermark must be MinWatermark, not the one it had
// at the checkpoint. (That it moves again once the watermarks arrive is
// TestRestoredSubtaskStartsWithoutWatermark's second half, on the Stepper.)
func TestLiveRestoredSubtaskStartsWithoutWatermark(t *testing.T) {
	spec := alertsJob(BackendMemory, 2, "60ms")
	spec.Operators[0].Parallelism = 1
	spec.Operators[0].Options["partitions"] = 2
	spec.Operators[0].Options["records"] = 100000
	spec.Operators[0].Options["rate"] = 1.0
	spec.Runtime = RuntimeSpec{BatchSize: 1}
	l, err := NewLive(spec, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, l.SetSpeed(100))
	require.NoError(t, l.Start(ctx))
	// alerts0 is alerts#0's view; a snapshot taken while the job
	// redeploys may not list it.
	alerts0 := func(s *Snapshot) (SubtaskView, bool) {
		for _, o := range s.Job.Operators {
			for _, st := range o.Subtasks {
				if st.Name == "alerts#0" {
					return st, true
				}
			}
		}
		return SubtaskView{}, false
	}
	wmOf := func(s *Snapshot) int64 {
		if st, ok := alerts0(s); ok {
			return st.Watermark
		}
		return MinWatermark
	}
	waitFor := func(what string, pred func(s *Snapshot) bool) Snapshot {
		t.Helper()
		for {
			s := l.Snapshot()
			if pred(&s) {
				return s
			}
			require.NoError(t, ctx.Err(), what)
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("alerts#0's first watermark", func(s *Snapshot) bool { return wmOf(s) > MinWatermark })
	require.NoError(t, l.Do(Command{Name: CmdTriggerCheckpoint}))
	snap := waitFor("a checkpoint", func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed > 0 })
	id := snap.Checkpoints.History[len(snap.Checkpoints.History)-1].ID
	wmBefore := wmOf(&snap)
	require.Greater(t, wmBefore, MinWatermark)
	require.Less(t, wmBefore, MaxWatermark)

	require.NoError(t, l.SetSpeed(0.001))
	require.NoError(t, l.Do(Command{Name: CmdCrashSubtask, Task: "alerts#0"}))
	snap = waitFor("alerts#0 restored", func(s *Snapshot) bool {
		st, ok := alerts0(s)
		return ok && s.Job.Attempt >= 2 && st.Status == TaskRunning && st.RestoredFrom == id
	})
	assert.Equal(t, MinWatermark, wmOf(&snap), "restored from checkpoint %d; it had %d before", id, wmBefore)
	v, err := l.TaskState("alerts#0", 0)
	require.NoError(t, err)
	assert.Equal(t, MinWatermark, v.Watermark, "the inspector's watermark")
}
