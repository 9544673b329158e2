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

// unalignedNeedsExactlyOnce: unaligned-channel-state-restore's job, input and
// slow sinks (flinkref: 2 ms per record, so what count sends waits in the
// network buffers when a barrier passes; StateLab: its Stepper's channels
// hold records as its schedule leaves them), with checkpointing mode
// AT_LEAST_ONCE and unaligned checkpoints asked for. Flink does not refuse
// the job: StreamingJobGraphGenerator logs "Unaligned checkpoints can only be
// used with checkpointing mode EXACTLY_ONCE" and turns unaligned off
// (CheckpointConfig.enableUnalignedCheckpoints(false)), so every checkpoint
// is taken with counted barriers (CheckpointBarrierTracker): none unaligned,
// nothing in flight persisted as channel state. StateLab does the same
// (core.unalignedOn; engine's TestUnalignedWithAtLeastOnceIsTurnedOff). The
// same job in exactly-once mode persists channel state on both
// (unaligned-channel-state-restore), so the records in flight are there for
// a barrier to overtake: with the mode left at exactly-once, Flink 2.3.0
// took 104 of this job's 105 checkpoints unaligned with 1.3 MB of channel
// state, StateLab 9 of 9 with 105 KB. The sources take 3 ms per record, so
// they run as long as the sinks drain: with sources at full speed they
// finished at once and Flink completed one checkpoint (later ones declined
// by finishing tasks). How many complete is timing (Flink 7–10 in 8 runs,
// StateLab 5), so only that some did is compared; Flink's checkpoints
// declined as the job finishes (2–4, "task is closing", "unknown task") are
// not. No failure: at-least-once then commits every result exactly once,
// and the output is compared so.
func unalignedNeedsExactlyOnce() *scenario {
	return &scenario{
		name: "unaligned-needs-exactly-once",
		claim: "Unaligned checkpoints need checkpointing mode EXACTLY_ONCE: a job that asks for them with AT_LEAST_ONCE runs, " +
			"with unaligned turned off (StreamingJobGraphGenerator: \"Unaligned checkpoints can only be used with checkpointing " +
			"mode EXACTLY_ONCE\"): its checkpoints complete, none is unaligned and none persists in-flight records as channel " +
			"state, though records are in flight at every barrier",
		spec: wordCount(2, "exactly-once", map[string]any{"unaligned": true, "mode": "at-least-once", "interval": "20ms"},
			map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "100ms"}),
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {genLines(86, 900, 3)}},
		phases: []phase{{
			flinkFaults: []flinkFault{
				{Kind: "slow", Task: "source#0", Millis: 3},
				{Kind: "slow", Task: "source#1", Millis: 3},
				{Kind: "slow", Task: "sink#0", Millis: 2},
				{Kind: "slow", Task: "sink#1", Millis: 2},
			},
		}},
		slots: 4,
		check: checkUnalignedNeedsExactlyOnce,
	}
}

// checkpointsTaken counts completed checkpoints (not savepoints), those
// reported unaligned, and the channel state they persisted in all.
type checkpointsTaken struct {
	Completed, Unaligned int
	ChannelState         int64
}

func checkUnalignedNeedsExactlyOnce(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	var f checkpointsTaken
	for _, h := range p.Checkpoints.History {
		if h.Status == "COMPLETED" && !h.Savepoint {
			f.Completed++
			if h.Unaligned {
				f.Unaligned++
			}
			f.ChannelState += h.PersistedData
		}
	}
	j.t.Logf("Flink: %+v (checkpoint counts: %d completed, %d failed)", f, p.Checkpoints.Completed, p.Checkpoints.Failed)
	j.true("Flink completed checkpoints while records were in flight", f.Completed > 0, p.Checkpoints.History)
	j.true("Flink's job ran without a restart", len(p.RestartedSubtasks) == 0, p.RestartedSubtasks)
	checkExactOutput(j, sl, fl, wordCountOutput(catalogueLines("unaligned-needs-exactly-once")...))
	if sl == nil {
		return
	}
	q := sl.phases[0]
	var s checkpointsTaken
	for _, h := range q.history {
		if h.Status == engine.CheckpointCompleted && !h.Savepoint {
			s.Completed++
			if h.Unaligned {
				s.Unaligned++
			}
			s.ChannelState += h.ChannelState
		}
	}
	j.t.Logf("StateLab: %+v (checkpoint counts: %+v)", s, q.checkpoints)
	j.equal("restarted subtasks", q.restarted, []string(nil))
	// How many checkpoints complete depends on timing (wall clock on Flink),
	// so what is compared is that some did, and how they were taken.
	j.equal("checkpoints completed; how many unaligned; channel state persisted (bytes)",
		[]any{s.Completed > 0, s.Unaligned, s.ChannelState}, []any{f.Completed > 0, f.Unaligned, f.ChannelState})
}
