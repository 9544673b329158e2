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
