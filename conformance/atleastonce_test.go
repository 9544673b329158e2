package conformance

import (
	"fmt"

	"github.com/statelab/statelab/engine"
)

// atLeastOnceBarriersDoNotBlock: aligned-barriers-hold-first-input's job,
// input and crash with checkpointing mode AT_LEAST_ONCE. The barriers are only
// counted (Flink: CheckpointBarrierTracker; StateLab: the same subtask code
// without blocking), so the input whose barrier came first goes on while
// count waits for the other's (flinkref: tokenizer#1 at 4 ms per record, so
// its barriers come late; count#0 crashes after its 300th record once a
// checkpoint completed): the checkpoint's state holds records after the
// barrier, and after the crash count restores every record before the
// sources' restored offsets and more — the records after them are read and
// counted again. The committed output is not compared: counts restored ahead
// of the offsets make later counts too high on both, by how much depends on
// timing. Found by running Flink: with tokenizer#1 at 2 ms per record and
// the crash after count#0's first record, 1 run in 5 restored an exact cut
// (checkpoint 1 at offsets 23/23 and 75/75: the late barrier came within
// Flink's 100 ms buffer timeout, before tokenizer#0's records after its
// barrier had left its output buffer); at 5 ms with a 300-line input,
// checkpoint 1 completed only after the input was read and no crash came.
// With 4 ms and the crash from the 300th record Flink still restored an
// exact cut in 2 of 8 runs under -race (offsets 73/75 and 29/29; why is not
// known yet);
// then only "nothing before the offsets is missing" is compared and the run
// says so.
func atLeastOnceBarriersDoNotBlock() *scenario {
	return &scenario{
		name: "at-least-once-barriers-do-not-block",
		claim: "With checkpointing mode AT_LEAST_ONCE barriers are counted and no input is held (CheckpointBarrierTracker): " +
			"a checkpoint's state holds records that came after its barrier on an input, so after a crash count restores " +
			"more than the records before the sources' restored offsets, and those records are counted again",
		spec: wordCount(2, "exactly-once", map[string]any{"interval": "20ms", "minPause": "100ms", "mode": "at-least-once"},
			map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "100ms"}),
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {genLines(82, 600, 3)}},
		phases: []phase{{
			flinkFaults: []flinkFault{
				{Kind: "slow", Task: "source#0", Millis: 1},
				{Kind: "slow", Task: "source#1", Millis: 1},
				{Kind: "slow", Task: "tokenizer#1", Millis: 4},
				{Kind: "throw", Task: "count#0", AfterRecords: 300, AfterCompleted: 1},
			},
			statelabFaults: []slFault{{cmd: engine.CmdCrashSubtask, task: "count#0", afterRecords: 300, afterCompleted: 1, captureRestored: true}},
		}},
		slots: 4,
		check: checkAtLeastOnceBarriers,
	}
}

// restoredAhead: the restored counts hold every record before the offsets
// (no word below its prefix count) and at least one record after them.
func restoredAhead(got, want map[string]int64) bool {
	for w, n := range want {
		if got[w] < n {
			return false
		}
	}
	return total64(got) > total64(want)
}

func checkAtLeastOnceBarriers(j *judge, sl *slResult, fl *trace) {
	sc := catalogueScenario("at-least-once-barriers-do-not-block")
	p := fl.Phases[0]
	j.true("Flink restarted after the crash", len(p.RestartedSubtasks) > 0, p.RestartedSubtasks)
	var restored int64
	if r := p.Checkpoints.LatestRestored; r != nil {
		restored = r.ID
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
	flAhead := restored > 0 && len(offsets) == 2 && restoredAhead(flGot, flWant)
	j.t.Logf("Flink: restored checkpoint %d at source offsets %v: count restored %d words, the input before the offsets has %d",
		restored, offsets, total64(flGot), total64(flWant))
	flAll := restored > 0 && len(offsets) == 2 && restoredAhead(flGot, flWant) || fmt.Sprint(flGot) == fmt.Sprint(flWant)
	j.true("Flink's count restored every record before the restored offsets", restored > 0 && flAll,
		fmt.Sprintf("restored %d words, input before the offsets %d", total64(flGot), total64(flWant)))
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
	var in int64
	for _, n := range q.afterFaultIn {
		in += n
	}
	j.true("StateLab's count had taken in nothing since its restore when its state was read", in == 0, q.afterFaultIn)
	slGot, slWant := mergeKeys(q.afterFaultKeys["count"]), prefixCounts(sc, "source", slOffsets)
	slAhead := q.afterFaultRestored > 0 && len(slOffsets) == 2 && restoredAhead(slGot, slWant)
	j.t.Logf("StateLab: restored checkpoint %d at source offsets %v: count restored %d words, the input before the offsets has %d",
		q.afterFaultRestored, slOffsets, total64(slGot), total64(slWant))
	if !flAhead {
		// Flink's checkpoint was an exact cut this time (see the scenario's
		// comment): only that nothing before the offsets is missing is compared
		j.t.Logf("not compared: Flink's restored checkpoint held no record after its barrier this run; StateLab's held some: %v", slAhead)
		j.true("StateLab's count restored every record before the restored offsets",
			q.afterFaultRestored > 0 && (slAhead || fmt.Sprint(slGot) == fmt.Sprint(slWant)), q.afterFaultKeys["count"])
		return
	}
	j.equal("count restored every record before the restored offsets and some after them", slAhead, flAhead)
}
