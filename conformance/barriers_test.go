package conformance

import (
	"fmt"
	"strings"
	"time"

	"github.com/statelab/statelab/engine"
)

// The barrier scenarios: what a checkpoint barrier does to the records in
// flight, unaligned (they become channel state, restored after a crash) and
// aligned (an input whose barrier came first is held until the others'
// arrive).

// unalignedChannelStateRestore: with unaligned checkpoints and a slow sink
// (flinkref: 2 ms per record, so what count sends waits in the network
// buffers; StateLab: its Stepper's channels hold records as its schedule
// leaves them), a checkpoint completes with in-flight records persisted as
// channel state, and then sink#0 crashes. The restore must put those records
// back (Flink: SequentialChannelStateReader, RecoveredInputChannel; StateLab:
// engine/unaligned.go's replay), or they are lost: every word count is
// committed exactly once.
func unalignedChannelStateRestore() *scenario {
	return &scenario{
		name: "unaligned-channel-state-restore",
		claim: "With unaligned checkpoints (execution.checkpointing.unaligned.enabled) the barrier overtakes the records in " +
			"flight and they are persisted as channel state (ChannelStateWriter); after a crash the job restores a checkpoint " +
			"that holds channel state and replays those records before new input (SequentialChannelStateReader, " +
			"RecoveredInputChannel): nothing in flight at the barrier is lost or counted twice",
		spec: wordCount(2, "exactly-once", map[string]any{"unaligned": true, "interval": "20ms"},
			map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "100ms"}),
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {genLines(80, 300, 3)}},
		phases: []phase{{
			flinkFaults: []flinkFault{
				{Kind: "slow", Task: "sink#0", Millis: 2},
				{Kind: "slow", Task: "sink#1", Millis: 2},
				{Kind: "throw", Task: "sink#0", AfterRecords: 1, AfterChannelState: true},
			},
			statelabFaults: []slFault{{cmd: engine.CmdCrashSubtask, task: "sink#0", afterRecords: 1, afterChannelState: true}},
		}},
		slots: 4,
		check: checkChannelStateRestore,
	}
}

func checkChannelStateRestore(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	j.true("Flink completed an unaligned checkpoint with in-flight data persisted before the crash", p.ChannelStateCheckpoint > 0, p.Checkpoints.History)
	j.true("Flink restarted after the crash", len(p.RestartedSubtasks) > 0, p.RestartedSubtasks)
	var restored int64
	if r := p.Checkpoints.LatestRestored; r != nil {
		restored = r.ID
	}
	flUnaligned, flChannel := false, false
	for _, h := range p.Checkpoints.History {
		if h.ID == restored {
			flUnaligned, flChannel = h.Unaligned, h.PersistedData > 0
			j.t.Logf("Flink: crashed after checkpoint %d completed with channel state; restored checkpoint %d: unaligned %v, %d bytes of channel state, by %v",
				p.ChannelStateCheckpoint, restored, h.Unaligned, h.PersistedData, h.PersistedBy)
		}
	}
	checkExactOutput(j, sl, fl, wordCountOutput(catalogueLines("unaligned-channel-state-restore")...))
	if sl == nil {
		return
	}
	q := sl.phases[0]
	j.true("StateLab completed an unaligned checkpoint with channel state before the crash", q.channelStateCheckpoint > 0, q.history)
	j.true("StateLab restarted after the crash", len(q.restarted) > 0, q.restarted)
	ids := map[int64]bool{}
	for _, e := range q.restores {
		if e.Checkpoint > 0 { // the first deployment restores nothing (checkpoint 0)
			ids[e.Checkpoint] = true
		}
	}
	slUnaligned, slChannel := false, false
	if len(ids) == 1 {
		for _, h := range q.history {
			if ids[h.ID] {
				slUnaligned, slChannel = h.Unaligned, h.ChannelState > 0
				j.t.Logf("StateLab: crashed after checkpoint %d completed with channel state; restored checkpoint %d: unaligned %v, %d bytes of channel state, %d records replayed",
					q.channelStateCheckpoint, h.ID, h.Unaligned, h.ChannelState, q.replayed)
			}
		}
	}
	j.true("StateLab's subtasks all restored one checkpoint", len(ids) == 1, keysOf(ids))
	j.true("StateLab replayed the channel state it restored", !slChannel || q.replayed > 0, q.replayed)
	j.equal("the checkpoint restored after the crash: unaligned, holding channel state", []bool{slUnaligned, slChannel}, []bool{flUnaligned, flChannel})
}

// alignedBarriersHold: with aligned checkpoints (the default,
// execution.checkpointing.mode EXACTLY_ONCE, unaligned off) a subtask with
// several inputs that received barrier n on one of them holds that input
// until barrier n came on every other (Flink's SingleCheckpointBarrierHandler,
// WaitingForFirstBarrier → CollectingBarriers; StateLab's
// subtask.handleBarrier), so the records after the barrier are not in the
// checkpoint's state and nothing in flight is persisted. flinkref's sources
// take 1 ms per record and tokenizer#1 2 ms, so records queue before
// tokenizer#1 and its barriers reach count after tokenizer#0's; StateLab's
// Stepper delivers as its schedule does. Checkpoints come every 20 ms with
// at least 100 ms between them (minPause), so that count is not aligning
// all the time. count#0
// crashes once a checkpoint completed; the restored state is then compared
// with the input: count's restored counts are exactly the words of the
// records before the restored source offsets.
func alignedBarriersHold() *scenario {
	return &scenario{
		name: "aligned-barriers-hold-first-input",
		claim: "With aligned checkpoints a subtask with two inputs holds the input whose barrier came first until the other's " +
			"arrives (SingleCheckpointBarrierHandler): the records after a barrier are not in the checkpoint's state, none is " +
			"persisted as channel state, and after a crash count restores exactly the counts of the records before the " +
			"sources' restored offsets",
		spec: wordCount(2, "exactly-once", map[string]any{"interval": "20ms", "minPause": "100ms"},
			map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "100ms"}),
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {genLines(81, 300, 3)}},
		phases: []phase{{
			flinkFaults: []flinkFault{
				{Kind: "slow", Task: "source#0", Millis: 1},
				{Kind: "slow", Task: "source#1", Millis: 1},
				{Kind: "slow", Task: "tokenizer#1", Millis: 2},
				{Kind: "throw", Task: "count#0", AfterRecords: 1, AfterCompleted: 1},
			},
			statelabFaults: []slFault{{cmd: engine.CmdCrashSubtask, task: "count#0", afterRecords: 1, afterCompleted: 1, captureRestored: true}},
		}},
		slots: 4,
		check: checkAlignedBarriers,
	}
}

// prefixCounts is each word's count over the source's records before the
// given offset of each partition (the tokenizer's rule: ASCII white space,
// lower-cased).
func prefixCounts(sc *scenario, src string, offsets map[int]int64) map[string]int64 {
	parts, _ := sc.layout(src)
	out := map[string]int64{}
	for p, off := range offsets {
		for _, r := range parts[p][:min(off, int64(len(parts[p])))] {
			for _, w := range strings.Fields(r.Text) {
				out[strings.ToLower(w)]++
			}
		}
	}
	return out
}

func mergeKeys(by map[int]map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, m := range by {
		for k, v := range m {
			out[k] += v
		}
	}
	return out
}

func checkAlignedBarriers(j *judge, sl *slResult, fl *trace) {
	sc := catalogueScenario("aligned-barriers-hold-first-input")
	p := fl.Phases[0]
	j.true("Flink restarted after the crash", len(p.RestartedSubtasks) > 0, p.RestartedSubtasks)
	var restored int64
	if r := p.Checkpoints.LatestRestored; r != nil {
		restored = r.ID
	}
	flAligned, flNoChannel := false, false
	var flHeld int64 // the longest alignment of a count subtask in any completed checkpoint (ms)
	for _, h := range p.Checkpoints.History {
		if h.ID == restored {
			flAligned, flNoChannel = !h.Unaligned, h.PersistedData == 0
		}
		if h.Status == "COMPLETED" && !h.Savepoint {
			for task, ms := range h.AlignmentBy {
				if strings.HasPrefix(task, "count#") {
					flHeld = max(flHeld, ms)
				}
			}
		}
	}
	offsets := map[int]int64{}
	for _, e := range p.lastEvents("open", "source") {
		for _, sp := range e.RestoredSplits {
			offsets[sp.Partition] = sp.Offset
		}
	}
	counts := map[int]map[string]int64{}
	for sub, e := range p.lastEvents("open", "count") {
		counts[sub] = e.RestoredKeys
	}
	flGot, flWant := mergeKeys(counts), prefixCounts(sc, "source", offsets)
	flCut := restored > 0 && len(offsets) == 2 && fmt.Sprint(flGot) == fmt.Sprint(flWant)
	j.t.Logf("Flink: restored checkpoint %d (aligned %v, no channel state %v) at source offsets %v: count restored %d words, the input before the offsets has %d; longest alignment at count %d ms",
		restored, flAligned, flNoChannel, offsets, total64(flGot), total64(flWant), flHeld)
	j.true("Flink's count restored exactly the counts of the records before the restored offsets", flCut, fmt.Sprintf("restored %v, input %v", flGot, flWant))
	j.true("Flink's count held an input while it aligned barriers", flHeld > 0, flHeld)
	checkExactOutput(j, sl, fl, wordCountOutput(catalogueLines("aligned-barriers-hold-first-input")...))
	if sl == nil {
		return
	}
	q := sl.phases[0]
	j.true("StateLab restarted after the crash", len(q.restarted) > 0, q.restarted)
	slOffsets := map[int]int64{}
	for _, os := range q.afterFaultOffsets {
		for _, o := range os {
			slOffsets[o.Partition] = o.Offset
		}
	}
	slAligned, slNoChannel := false, false
	var slHeld time.Duration
	for _, h := range q.history {
		if h.ID == q.afterFaultRestored {
			slAligned, slNoChannel = !h.Unaligned, h.ChannelState == 0
		}
		if h.Status == engine.CheckpointCompleted && !h.Savepoint {
			for task, d := range h.Alignment {
				if strings.HasPrefix(task, "count#") {
					slHeld = max(slHeld, d)
				}
			}
		}
	}
	var in int64
	for _, n := range q.afterFaultIn {
		in += n
	}
	j.true("StateLab's count had taken in nothing since its restore when its state was read", in == 0, q.afterFaultIn)
	slGot, slWant := mergeKeys(q.afterFaultKeys["count"]), prefixCounts(sc, "source", slOffsets)
	slCut := q.afterFaultRestored > 0 && len(slOffsets) == 2 && fmt.Sprint(slGot) == fmt.Sprint(slWant)
	j.t.Logf("StateLab: restored checkpoint %d (aligned %v, no channel state %v) at source offsets %v: count restored %d words, the input before the offsets has %d; longest alignment at count %s",
		q.afterFaultRestored, slAligned, slNoChannel, slOffsets, total64(slGot), total64(slWant), slHeld)
	j.equal("the restored checkpoint: aligned, no channel state, count's state exactly the records before the restored offsets",
		[]bool{slAligned, slNoChannel, slCut}, []bool{flAligned, flNoChannel, flCut})
	j.equal("count held an input while it aligned barriers (alignment > 0 in a completed checkpoint)", slHeld > 0, flHeld > 0)
}

func total64(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// abortedCheckpoint: checkpoint 1, more input, checkpoint 2 that expires
// (count#0's synchronous snapshot of it stalls 2.5 s past an 800 ms timeout;
// tolerable-failed-checkpoints 5, so the job does not fail over; one sink
// subtask, see below), more
// input, checkpoint 3, all by hand. An aborted checkpoint notifies no task
// of completion, so a two-phase-commit sink commits nothing on it; Flink
// tells each task it was aborted (CheckpointCoordinator: notifyCheckpointAborted),
// and the sink keeps the transaction it pre-committed in it
// (TwoPhaseCommitSinkFunction does not abort it): checkpoint 3's
// notification commits it with its own.
//
// The sink runs at parallelism 1 and is the one that stalls: StateLab's
// Stepper models a stalled snapshot as time that passes for the whole job
// (its one virtual clock jumps by the stall), so checkpoint 2 expires before
// the other subtasks handle its barrier, where in Flink they go on during
// the stall and every sink subtask pre-commits checkpoint 2's transaction
// (found by running Flink: with two sinks and count#0 stalling, StateLab's
// sink#1 never pre-committed checkpoint 2 and its records went into
// checkpoint 3's transaction). With one sink, stalled after its barrier, the
// checkpoint's transaction holds the same records on both.
func abortedCheckpoint() *scenario {
	return &scenario{
		name: "aborted-checkpoint-commits-on-next",
		claim: "A checkpoint that fails (here it expires: execution.checkpointing.timeout) notifies no task of completion, " +
			"so a two-phase-commit sink commits nothing on it; the transaction it pre-committed in that checkpoint stays " +
			"pending (TwoPhaseCommitSinkFunction keeps it on notifyCheckpointAborted) and the next completed checkpoint " +
			"commits it with its own (notifyCheckpointComplete commits every pending transaction up to its id); below " +
			"tolerable-failed-checkpoints the job runs on",
		spec:       withParallelism(wordCount(2, "exactly-once", map[string]any{"timeout": "800ms", "tolerableFailed": 5}, nil), "sink", 1),
		partitions: map[string]int{"source": 2},
		lines: map[string][][]string{"source": {
			genLines(82, 30, 3), // the phase's input: checkpoint 1 holds it
			genLines(83, 20, 3), // read before checkpoint 2 (expires)
			genLines(84, 20, 3), // read before checkpoint 3
			genLines(85, 10, 3), // holds the sources, never read
		}},
		phases: []phase{{
			flinkFaults:    []flinkFault{{Kind: "stall-checkpoint", Task: "sink#0", Checkpoint: 2, Millis: 2500}},
			statelabFaults: []slFault{{cmd: stallSnapshot, task: "sink#0", checkpoint: 2, stall: 2500 * time.Millisecond}},
			steps:          []string{stepCheckpoint, stepRead, stepCheckpointFails, stepRead, stepCheckpoint},
			cancel:         true,
		}},
		slots: 4,
		check: checkAbortedCheckpoint,
	}
}

func checkAbortedCheckpoint(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	var flHist []string
	for _, h := range p.Checkpoints.History {
		if h.Savepoint {
			continue
		}
		e := fmt.Sprintf("%d %s", h.ID, h.Status)
		if strings.Contains(h.Failure, "expired") {
			e += " (expired)"
		}
		flHist = append(flHist, e)
	}
	notified := flinkNotified(&p)
	aborted := map[string][]string{}
	for _, e := range p.Events {
		if e.Event == "aborted" && e.Operator == "sink" {
			aborted[e.Task] = append(aborted[e.Task], fmt.Sprintf("aborted %d, pending after it %v", e.Checkpoint, e.Pending))
		}
	}
	j.t.Logf("Flink: checkpoints %v; sink notified %v; told of aborts %v", flHist, notified, aborted)
	j.true("Flink told every sink subtask that checkpoint 2 was aborted, and it kept checkpoint 2's transaction pending",
		len(aborted) > 0 && len(aborted) == len(notified) && func() bool {
			for _, a := range aborted {
				if len(a) != 1 || !strings.HasPrefix(a[0], "aborted 2,") || !strings.Contains(a[0], "{2 ") {
					return false
				}
			}
			return true
		}(), aborted)
	j.true("Flink's job ran on (no restart)", len(p.RestartedSubtasks) == 0, p.RestartedSubtasks)
	checkExactOutput(j, sl, fl, wordCountOutput(catalogueLines("aborted-checkpoint-commits-on-next")[:3]...))
	if sl == nil {
		return
	}
	q := sl.phases[0]
	var slHist []string
	for _, h := range q.history {
		if h.Savepoint {
			continue
		}
		e := fmt.Sprintf("%d %s", h.ID, h.Status)
		for _, f := range q.failedCheckpoints {
			if f.ID == h.ID && f.Reason == "CHECKPOINT_EXPIRED" {
				e += " (expired)"
			}
		}
		slHist = append(slHist, e)
	}
	j.equal("the checkpoints taken by hand, and which failed why", slHist, flHist)
	j.equal("the checkpoints each sink subtask was notified of", notifiedIDs(q.notified), notifiedIDs(notified))
	j.equal("the records committed on each notification, by the checkpoint that pre-committed them",
		committedOn(q.notified), committedOn(notified))
	j.equal("subtasks restarted", q.restarted, []string(nil))
}
