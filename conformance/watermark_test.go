package conformance

import (
	"fmt"
	"sort"

	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// watermarksNotCheckpointed decides that watermarks are not checkpointed:
// event-time alerts at 2 (timers on a KeyedProcessFunction), 30 single-word
// lines; once a checkpoint holding the whole input completed source#0 fails,
// and every subtask restores it. Compared: the restored checkpoint was taken
// while the alerts subtasks' event time had moved on (Flink: each alerts
// subtask's timer service's current watermark in its snapshotState, which
// flinkref now records; StateLab: each alerts subtask's last watermark event
// before it acknowledged the checkpoint), and each restored alerts subtask's
// event time at its restore: Long.MIN_VALUE on both (Flink: the timer
// service's current watermark as the new attempt opens, after its state was
// restored, InternalTimerServiceImpl starting at Long.MIN_VALUE; StateLab:
// the subtask's watermark right after the step it restored in, before any
// other step). The fault is the one proctime-timers-due-after-restore uses.
func watermarksNotCheckpointed() *scenario {
	spec := alertsJob()
	spec["checkpointing"] = map[string]any{"interval": "100ms"}
	return &scenario{
		name: "watermarks-not-checkpointed",
		claim: "Watermarks are not checkpointed: a subtask restored from a checkpoint taken at a later event time starts at " +
			"Long.MIN_VALUE and waits for its sources' new watermarks",
		spec:       spec,
		partitions: map[string]int{"source": 2},
		lines: map[string][][]string{"source": {
			genLines(101, 30, 1), // read before the crash
			genLines(102, 10, 1), // holds the sources, never read
		}},
		phases: []phase{{
			// as in proctime-timers-due-after-restore: Flink's fault waits
			// until both sources read their 30 records and three more
			// checkpoints completed; StateLab's first checkpoint holds the
			// whole input
			flinkFaults:    []flinkFault{{Kind: "throw", Task: "source#0", AfterRecords: 30, AfterCompleted: 3, OnPoll: true}},
			statelabFaults: []slFault{{cmd: engine.CmdCrashSubtask, task: "source#0", afterRecords: 15, afterCompleted: 1, captureRestored: true}},
			awaitFaults:    true,
			// the sources are held at the end of the input (a phase with
			// steps), so that the job runs on: with finished sources Flink's
			// job ended before the fault fired. A checkpoint by hand after
			// the restore, then the job is cancelled.
			steps:         []string{stepCheckpoint},
			cancel:        true,
			periodicSteps: true, // (flinkref lists no retained checkpoints)
		}},
		slots: 4,
		check: checkWatermarksNotCheckpointed,
	}
}

// restoredEventTime is, for one side, the checkpoint restored, each alerts
// subtask's watermark when that checkpoint was taken and as it restored.
type restoredEventTime struct {
	Checkpoint int64
	AtCheckpoint,
	AtRestore map[string]int64
}

func fmtWatermarks(m map[string]int64) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	out := ""
	for _, k := range ks {
		w := fmt.Sprint(m[k])
		if m[k] == engine.MinWatermark {
			w = "Long.MIN_VALUE"
		}
		out += fmt.Sprintf(" %s=%s", k, w)
	}
	return out
}

// verdict: a checkpoint was restored; it was taken with some alerts
// subtask's event time past Long.MIN_VALUE; how many alerts subtasks
// restored, and how many of them at Long.MIN_VALUE.
func (r restoredEventTime) verdict() []any {
	moved := false
	for _, w := range r.AtCheckpoint {
		moved = moved || w > engine.MinWatermark
	}
	atMin := 0
	for _, w := range r.AtRestore {
		if w == engine.MinWatermark {
			atMin++
		}
	}
	return []any{r.Checkpoint > 0, moved, len(r.AtRestore), atMin}
}

func checkWatermarksNotCheckpointed(j *judge, sl *slResult, fl *trace) {
	require.Len(j.t, fl.Phases, 1)
	p := fl.Phases[0]
	f := restoredEventTime{AtCheckpoint: map[string]int64{}, AtRestore: map[string]int64{}}
	if p.Checkpoints.LatestRestored != nil {
		f.Checkpoint = p.Checkpoints.LatestRestored.ID
	}
	for _, e := range p.Events {
		if e.Operator != "alerts" || e.Watermark == nil {
			continue
		}
		switch {
		case e.Event == "snapshot" && e.Attempt == 0 && e.Checkpoint == f.Checkpoint:
			f.AtCheckpoint[e.Task] = *e.Watermark
		case e.Event == "timers" && e.Attempt > 0:
			if _, ok := f.AtRestore[e.Task]; !ok { // its first attempt after the crash
				f.AtRestore[e.Task] = *e.Watermark
			}
		}
	}
	j.t.Logf("Flink: checkpoint %d restored; alerts' watermarks at it:%s; as they restored:%s", f.Checkpoint, fmtWatermarks(f.AtCheckpoint), fmtWatermarks(f.AtRestore))
	j.true("Flink restored a checkpoint into new alerts attempts", f.Checkpoint > 0 && len(f.AtRestore) == 2, p.Checkpoints)
	if sl == nil {
		return
	}
	sp := sl.phases[0]
	s := restoredEventTime{Checkpoint: sp.afterFaultRestored, AtCheckpoint: sp.ackWatermarks[sp.afterFaultRestored], AtRestore: sp.restoredWatermarks}
	j.t.Logf("StateLab: checkpoint %d restored; alerts' watermarks at it:%s; as they restored:%s", s.Checkpoint, fmtWatermarks(s.AtCheckpoint), fmtWatermarks(s.AtRestore))
	j.equal("checkpoint restored; taken past Long.MIN_VALUE; alerts subtasks restored; of them at Long.MIN_VALUE",
		s.verdict(), f.verdict())
}
