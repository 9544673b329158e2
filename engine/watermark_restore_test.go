package engine

import (
	"strings"
	"testing"

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
