package conformance

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// Min pause and max concurrent checkpoints (execution.checkpointing.min-pause,
// default 0; execution.checkpointing.max-concurrent-checkpoints, default 1;
// StateLab's checkpointing.maxConcurrent). Flink's CheckpointRequestDecider queues
// a periodic request while a checkpoint is pending, one per tick, and runs the
// oldest when a pending one ends, or, before the min pause has passed since the
// last completion, drops it and reschedules the trigger at the pause's end;
// StateLab's coordinator does the same (core.periodicCheckpoint,
// executeQueuedRequests).

// maxConcurrentOne: periodic checkpoints every 100 ms, and count#0's
// synchronous snapshot of checkpoint 2 stalls 400 ms (flinkref's
// stall-checkpoint, StateLab's engine.Options.SnapshotStall): no checkpoint
// is triggered while it is pending, and the ticks of the stall, queued, give
// checkpoints back to back once it ended.
func maxConcurrentOne() *scenario {
	return &scenario{
		name: "max-concurrent-checkpoints-one",
		claim: "At most one checkpoint is pending (max-concurrent-checkpoints 1, the default): while checkpoint 2 is stalled " +
			"four intervals long no periodic checkpoint is triggered; the ticks meanwhile are queued, so once it completed the next " +
			"checkpoints come back to back",
		spec:       pacedWordCount(map[string]any{"interval": "100ms"}),
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {{}, genLines(95, 600, 3), genLines(97, 10, 3)}},
		phases: []phase{{
			flinkFaults: []flinkFault{
				{Kind: "slow", Task: "source#0", Millis: 2},
				{Kind: "slow", Task: "source#1", Millis: 2},
				{Kind: "stall-checkpoint", Task: "count#0", Checkpoint: 2, Millis: 400},
			},
			statelabFaults: []slFault{{cmd: stallSnapshot, task: "count#0", checkpoint: 2, stall: 400 * time.Millisecond}},
			steps:          []string{stepRead},
			cancel:         true,
			periodicSteps:  true,
		}},
		slots: 4,
		// Flink keeps the latest 10 checkpoints in its statistics by default.
		flinkCluster: map[string]string{"web.checkpoints.history": "1000"},
		check: func(j *judge, sl *slResult, fl *trace) {
			checkCheckpointSpans(j, sl, fl, 2, 400*time.Millisecond, 0)
			checkQueuedTicks(j, sl, fl, 2, 100*time.Millisecond)
		},
	}
}

// maxConcurrentTwo: maxConcurrentOne's job and stall with
// max-concurrent-checkpoints 2: while checkpoint 2 is stalled a second
// checkpoint is triggered, never a third.
func maxConcurrentTwo() *scenario {
	sc := maxConcurrentOne()
	sc.name = "max-concurrent-checkpoints-two"
	sc.claim = "With max-concurrent-checkpoints 2 a periodic checkpoint is triggered while checkpoint 2 is stalled, " +
		"and never more than two are pending"
	sc.spec = pacedWordCount(map[string]any{"interval": "100ms", "maxConcurrent": 2})
	sc.check = func(j *judge, sl *slResult, fl *trace) { checkTwoPending(j, sl, fl, 2, 400*time.Millisecond) }
	return sc
}

// checkpointByHandWaits: a checkpoint by hand while another is pending
// (max-concurrent-checkpoints 1, no periodic checkpoints): count#0's
// snapshot of checkpoint 1 stalls 400 ms, and checkpoint 2 is asked for
// while it is pending. Flink's CheckpointCoordinator.triggerCheckpoint
// (CheckpointType) makes a request that is neither periodic nor forced;
// CheckpointRequestDecider queues it and runs it when 1 completes
// (completePendingCheckpoint -> scheduleTriggerRequest). StateLab queues it
// too (core.requestCheckpoint) and starts it when 1 ends.
func checkpointByHandWaits() *scenario {
	return &scenario{
		name: "checkpoint-by-hand-waits-for-pending",
		claim: "A checkpoint asked for by hand while another is pending (max-concurrent-checkpoints 1) waits: it is " +
			"neither refused nor started at once, and it is triggered when the pending one has ended",
		spec:       wordCount(2, "exactly-once", map[string]any{"timeout": "10s"}, nil),
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {genLines(99, 40, 3), genLines(100, 10, 3)}},
		phases: []phase{{
			flinkFaults:    []flinkFault{{Kind: "stall-checkpoint", Task: "count#0", Checkpoint: 1, Millis: 400}},
			statelabFaults: []slFault{{cmd: stallSnapshot, task: "count#0", checkpoint: 1, stall: 400 * time.Millisecond}},
			steps:          []string{stepCheckpointWhilePending},
			cancel:         true,
		}},
		slots:        4,
		flinkCluster: map[string]string{"web.checkpoints.history": "1000"},
		check:        checkByHandWaits,
	}
}

// checkByHandWaits compares the two checkpoints by hand: both completed,
// never two pending at once, and the second triggered after the first
// ended (Flink: its latest acknowledgement; the coordinator completes it
// just after). Logs how long the second waited: on Flink from the request
// to its trigger, on StateLab from the first's trigger (it is asked for
// right after) to its own.
func checkByHandWaits(j *judge, sl *slResult, fl *trace) {
	require.Len(j.t, fl.Phases, 1)
	p := fl.Phases[0]
	require.Len(j.t, p.Steps, 1)
	st := p.Steps[0]
	j.true("Flink's step took both checkpoints", st.Error == "" && st.ID > 0 && st.Second == st.ID+1, st)
	var f []span
	for _, h := range p.Checkpoints.History {
		if h.Savepoint || h.Status != "COMPLETED" || h.LatestAckTimestamp < 0 {
			continue
		}
		f = append(f, span{ID: h.ID, Status: h.Status, Trigger: time.Duration(h.TriggerTimestamp) * time.Millisecond, End: time.Duration(h.LatestAckTimestamp) * time.Millisecond})
	}
	fOver, _, fGap := spansStats(f, st.ID)
	fMost := mostPending(f)
	j.true("Flink completed the two checkpoints", len(f) == 2, f)
	var fWait time.Duration
	if len(f) == 2 {
		fWait = f[1].Trigger - time.Duration(st.RequestedAt)*time.Millisecond
	}
	j.t.Logf("Flink: %d checkpoints, at most %d pending, the second waited %v from its request, triggered %v after the first's latest acknowledgement",
		len(f), fMost, fWait, fGap)
	if sl == nil {
		return
	}
	var s []span
	for _, h := range sl.phases[0].history {
		if h.Savepoint || h.Status != engine.CheckpointCompleted {
			continue
		}
		s = append(s, span{ID: h.ID, Status: h.Status, Trigger: h.Trigger, End: h.End})
	}
	sOver, _, sGap := spansStats(s, 1)
	sMost := mostPending(s)
	j.true("StateLab completed the two checkpoints", len(s) == 2, s)
	var sWait time.Duration
	if len(s) == 2 {
		sWait = s[1].Trigger - s[0].Trigger
	}
	j.t.Logf("StateLab: %d checkpoints, at most %d pending, the second waited %v, triggered %v after the first ended", len(s), sMost, sWait, sGap)
	j.equal("the most checkpoints pending at once", sMost, fMost)
	j.equal("the second triggered while the first was pending", sOver > 0, fOver > 0)
	j.equal("the second triggered once the first ended", sGap >= 0 && len(s) == 2, fGap >= 0 && len(f) == 2)
	j.equal("the second waited most of the stall", sWait >= 300*time.Millisecond, fWait >= 300*time.Millisecond)
}

// mostPending is the most checkpoints pending at once among spans.
func mostPending(sp []span) int {
	most := 0
	for _, a := range sp {
		n := 0
		for _, b := range sp {
			if b.Trigger <= a.Trigger && a.Trigger < b.End {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// checkTwoPending compares, for max-concurrent-checkpoints 2, whether a
// checkpoint was triggered while another was pending and the most pending
// at once. How many overlapped is not compared (Flink: 2–7 in seven runs).
// Both queue the periodic ticks while two are pending and run one when a
// pending one ends, and StateLab's trigger fires the ticks its stalled
// step jumped over at once (a fixed rate, as Flink's ScheduledTrigger), so
// StateLab's run reaches the bound of two: a StateLab without the bound
// fails (checked: at most 5 pending).
func checkTwoPending(j *judge, sl *slResult, fl *trace, stalled int64, stall time.Duration) {
	require.Len(j.t, fl.Phases, 1)
	var f []span
	for _, h := range fl.Phases[0].Checkpoints.History {
		end := h.LatestAckTimestamp
		if h.Status == "FAILED" {
			end = h.FailureTimestamp
		}
		if h.Savepoint || (h.Status != "COMPLETED" && h.Status != "FAILED") || end < 0 {
			continue
		}
		f = append(f, span{ID: h.ID, Status: h.Status, Trigger: time.Duration(h.TriggerTimestamp) * time.Millisecond, End: time.Duration(end) * time.Millisecond})
	}
	fOver, _, _ := spansStats(f, stalled) // sorts f by trigger
	fMost := mostPending(f)
	var fFailed []int64
	for i, x := range f {
		// The latest may have failed as the job was cancelled.
		if x.Status == "FAILED" && i < len(f)-1 {
			fFailed = append(fFailed, x.ID)
		}
	}
	j.t.Logf("Flink: %d checkpoints, %d triggered while another was pending, at most %d pending, failed %v", len(f), fOver, fMost, fFailed)
	j.true("Flink took several periodic checkpoints", len(f) >= 3, f)
	if sl == nil {
		return
	}
	var s []span
	var sFailed []int64
	for _, h := range sl.phases[0].history {
		if h.Savepoint || (h.Status != engine.CheckpointCompleted && h.Status != engine.CheckpointFailed) {
			continue
		}
		s = append(s, span{ID: h.ID, Status: h.Status, Trigger: h.Trigger, End: h.End})
		if h.Status == engine.CheckpointFailed {
			sFailed = append(sFailed, h.ID)
		}
	}
	sOver, _, _ := spansStats(s, stalled)
	sMost := mostPending(s)
	j.t.Logf("StateLab: %d checkpoints, %d triggered while another was pending, at most %d pending, failed %v", len(s), sOver, sMost, sFailed)
	j.true("StateLab took several periodic checkpoints", len(s) >= 3, s)
	j.equal("a checkpoint was triggered while another was pending", sOver > 0, fOver > 0)
	j.equal("the most checkpoints pending at once", sMost, fMost)
	j.equal("no checkpoint failed (but one pending at the cancel)", len(sFailed) == 0, len(fFailed) == 0)
}

// minPauseBetween: periodic checkpoints every 50 ms with a min pause of
// 250 ms: each checkpoint is triggered at least 250 ms after the previous
// one completed.
func minPauseBetween() *scenario {
	return &scenario{
		name: "min-pause-between-checkpoints",
		claim: "With execution.checkpointing.min-pause 250 ms and an interval of 50 ms each checkpoint is triggered at least " +
			"250 ms after the previous one completed",
		spec:       pacedWordCount(map[string]any{"interval": "50ms", "minPause": "250ms"}),
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {{}, genLines(96, 1500, 3), genLines(98, 10, 3)}},
		phases: []phase{{
			flinkFaults: []flinkFault{
				{Kind: "slow", Task: "source#0", Millis: 2},
				{Kind: "slow", Task: "source#1", Millis: 2},
			},
			steps:         []string{stepRead},
			cancel:        true,
			periodicSteps: true,
		}},
		slots:        4,
		flinkCluster: map[string]string{"web.checkpoints.history": "1000"},
		check: func(j *judge, sl *slResult, fl *trace) {
			sMin, fMin := checkCheckpointSpans(j, sl, fl, 0, 0, 250*time.Millisecond)
			if sl != nil {
				// The decider reschedules the trigger for the pause's end
				// (rescheduleTrigger): the least gap is the pause, not the
				// pause rounded up to the next tick of 50 ms.
				j.equal("the least gap ends within a quarter interval after the min pause (the trigger rescheduled for its end)",
					sMin < 250*time.Millisecond+50*time.Millisecond/4, fMin < 250*time.Millisecond+50*time.Millisecond/4)
			}
		},
	}
}

// pacedWordCount is word count at 2 whose sources take 2 ms per record:
// on StateLab the source option rate (500 records per second of job time),
// on flinkref a slow fault on each source subtask (flinkref ignores rate).
// The job is idle until a read step gives it 600 lines, which take about
// 600 ms to read, and is cancelled after it (held at the end of its input,
// no source finishes: in Flink's run with finishing sources the checkpoint
// that came as they finished ignored the min pause, not looked into).
func pacedWordCount(checkpointing map[string]any) map[string]any {
	s := wordCount(2, "exactly-once", checkpointing, nil)
	src := s["operators"].([]any)[0].(map[string]any)
	opts, _ := src["options"].(map[string]any)
	if opts == nil {
		opts = map[string]any{}
		src["options"] = opts
	}
	opts["rate"] = 500.0
	return s
}

// span is one checkpoint from its trigger to its completion or failure.
type span struct {
	ID           int64
	Status       string
	Trigger, End time.Duration
}

// checkQueuedTicks compares what comes after the stalled checkpoint ends:
// the periodic ticks during its stall were queued (Flink's
// CheckpointRequestDecider, one request per tick), so the next checkpoint is
// triggered as soon as it ended and the queued ones follow back to back,
// each as soon as the one before it ended, rather than at the next tick.
// Back to back: triggered less than a quarter interval after the previous
// one ended (Flink: its latest acknowledgement; its coordinator completes it
// a few ms later). Compared: whether the first came back to back, and
// whether at least three did (four ticks fall in the stall).
func checkQueuedTicks(j *judge, sl *slResult, fl *trace, stalled int64, interval time.Duration) {
	var f []span
	for _, h := range fl.Phases[0].Checkpoints.History {
		if h.Savepoint || h.Status != "COMPLETED" || h.LatestAckTimestamp < 0 {
			continue
		}
		f = append(f, span{ID: h.ID, Status: h.Status, Trigger: time.Duration(h.TriggerTimestamp) * time.Millisecond, End: time.Duration(h.LatestAckTimestamp) * time.Millisecond})
	}
	fFirst, fRun, fGaps := backToBack(f, stalled, interval/4)
	j.t.Logf("Flink: after checkpoint %d ended the next was triggered %v later; %d back to back (%s)", stalled, fFirst, fRun, strings.Join(fGaps, "; "))
	if sl == nil {
		return
	}
	var s []span
	for _, h := range sl.phases[0].history {
		if h.Savepoint || h.Status != engine.CheckpointCompleted {
			continue
		}
		s = append(s, span{ID: h.ID, Status: h.Status, Trigger: h.Trigger, End: h.End})
	}
	sFirst, sRun, sGaps := backToBack(s, stalled, interval/4)
	j.t.Logf("StateLab: after checkpoint %d ended the next was triggered %v later; %d back to back (%s)", stalled, sFirst, sRun, strings.Join(sGaps, "; "))
	j.equal("the next checkpoint triggered as soon as the stalled one ended", sFirst >= 0 && sFirst < interval/4, fFirst >= 0 && fFirst < interval/4)
	j.equal("at least three checkpoints back to back after it (the ticks of the stall queued)", sRun >= 3, fRun >= 3)
}

// backToBack gives, for the completed spans sorted by trigger, the gap from
// checkpoint after's end to the next trigger (-1: none), how many
// checkpoints after it were each triggered less than within after the one
// before ended, and those gaps.
func backToBack(sp []span, after int64, within time.Duration) (first time.Duration, run int, gaps []string) {
	sort.Slice(sp, func(a, b int) bool { return sp[a].Trigger < sp[b].Trigger })
	first = -1
	i := slices.IndexFunc(sp, func(x span) bool { return x.ID == after })
	if i < 0 || i == len(sp)-1 {
		return first, 0, nil
	}
	first = sp[i+1].Trigger - sp[i].End
	for k := i + 1; k < len(sp); k++ {
		g := sp[k].Trigger - sp[k-1].End
		gaps = append(gaps, fmt.Sprintf("%d after %v, took %v", sp[k].ID, g, sp[k].End-sp[k].Trigger))
		if g >= within {
			break
		}
		run++
	}
	return first, run, gaps
}

// spansOverlap counts the checkpoints triggered before the one before them
// ended, and gives the least time from one's end to the next's trigger and
// that gap after checkpoint after (0: none).
func spansStats(sp []span, after int64) (overlaps int, minGap, gapAfter time.Duration) {
	sort.Slice(sp, func(a, b int) bool { return sp[a].Trigger < sp[b].Trigger })
	minGap = -1
	for i := 1; i < len(sp); i++ {
		g := sp[i].Trigger - sp[i-1].End
		if g < 0 {
			overlaps++
		}
		if minGap < 0 || g < minGap {
			minGap = g
		}
		if sp[i-1].ID == after {
			gapAfter = g
		}
	}
	return overlaps, minGap, gapAfter
}

// checkCheckpointSpans compares the periodic checkpoints' spans: none
// overlaps another (at most one pending), the stalled one (stalled > 0)
// lasted at least stall, and each trigger came at least pause after the
// previous checkpoint ended. Flink's spans end at the latest acknowledgement
// (the coordinator completes the checkpoint after it, so a gap measured from
// it is not shorter than Flink's own) or the failure.
func checkCheckpointSpans(j *judge, sl *slResult, fl *trace, stalled int64, stall, pause time.Duration) (sMin, fMin time.Duration) {
	require.Len(j.t, fl.Phases, 1)
	p := fl.Phases[0]
	var f []span
	var fStall time.Duration
	for _, h := range p.Checkpoints.History {
		end := h.LatestAckTimestamp
		if h.Status == "FAILED" {
			end = h.FailureTimestamp
		}
		if h.Savepoint || (h.Status != "COMPLETED" && h.Status != "FAILED") || end < 0 {
			continue
		}
		s := span{ID: h.ID, Status: h.Status, Trigger: time.Duration(h.TriggerTimestamp) * time.Millisecond, End: time.Duration(end) * time.Millisecond}
		if h.ID == stalled {
			fStall = s.End - s.Trigger
		}
		f = append(f, s)
	}
	fOver, fMin, fAfter := spansStats(f, stalled)
	j.t.Logf("Flink: %d checkpoints, %d triggered while another was pending, least gap from an end to the next trigger %v, checkpoint %d took %v and the next came %v after it",
		len(f), fOver, fMin, stalled, fStall, fAfter)
	j.true("Flink took several periodic checkpoints", len(f) >= 3, f)
	if stalled > 0 {
		j.true("Flink's stalled checkpoint lasted the stall", fStall >= stall, fStall)
	}
	if sl == nil {
		return -1, fMin
	}
	var s []span
	var sStall time.Duration
	for _, h := range sl.phases[0].history {
		if h.Savepoint || (h.Status != engine.CheckpointCompleted && h.Status != engine.CheckpointFailed) {
			continue
		}
		s = append(s, span{ID: h.ID, Status: h.Status, Trigger: h.Trigger, End: h.End})
		if h.ID == stalled {
			sStall = h.End - h.Trigger
		}
	}
	sOver, sMin, sAfter := spansStats(s, stalled)
	j.t.Logf("StateLab: %d checkpoints, %d triggered while another was pending, least gap from an end to the next trigger %v, checkpoint %d took %v and the next came %v after it",
		len(s), sOver, sMin, stalled, sStall, sAfter)
	j.true("StateLab took several periodic checkpoints", len(s) >= 3, s)
	j.equal("checkpoints triggered while another was pending", sOver, fOver)
	if stalled > 0 {
		j.equal("the stalled checkpoint lasted the stall", sStall >= stall, fStall >= stall)
	}
	if pause > 0 {
		j.equal("each checkpoint triggered at least the min pause after the previous one ended", sMin >= pause, fMin >= pause)
	}
	return sMin, fMin
}
