package conformance

import (
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
