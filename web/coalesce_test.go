package web

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

func TestCoalescerMergesDataKeepsOrderAroundBarriers(t *testing.T) {
	ch := "tokenizer#0->count#1"
	var c coalescer
	c.add(engine.Event{Seq: 1, Kind: engine.EvRecordsSent, Channel: ch, Records: 16})
	c.add(engine.Event{Seq: 2, Kind: engine.EvRecordsSent, Channel: "other", Records: 1})
	c.add(engine.Event{Seq: 3, Kind: engine.EvRecordsSent, Channel: ch, Records: 4})
	c.add(engine.Event{Seq: 4, Kind: engine.EvBarrierSent, Channel: ch, Checkpoint: 7})
	c.add(engine.Event{Seq: 5, Kind: engine.EvRecordsSent, Channel: ch, Records: 2})
	c.add(engine.Event{Seq: 6, Kind: engine.EvStateUpdated, Task: "count#1", Updates: []engine.StateUpdate{{Key: "a", State: "count", Value: 1}, {Key: "b", State: "count", Value: 1}}})
	c.add(engine.Event{Seq: 7, Kind: engine.EvStateUpdated, Task: "count#1", Updates: []engine.StateUpdate{{Key: "a", State: "count", Value: 2}}})
	evs := c.take()
	require.Len(t, evs, 5)
	assert.Equal(t, 20, evs[0].Records, "16 + 4 on the same channel before the barrier")
	assert.Equal(t, int64(3), evs[0].Seq, "a merged event carries its newest sequence number")
	assert.Equal(t, "other", evs[1].Channel)
	assert.Equal(t, engine.EvBarrierSent, evs[2].Kind)
	assert.Equal(t, 2, evs[3].Records, "records after the barrier are not merged into those before it")
	assert.Equal(t, []engine.StateUpdate{{Key: "a", State: "count", Value: 2}, {Key: "b", State: "count", Value: 1}}, evs[4].Updates,
		"the newest value of each key, in first-written order")
	assert.Equal(t, 0, c.len(), "take starts a new frame")
	c.add(engine.Event{Kind: engine.EvRecordsSent, Channel: ch, Records: 1})
	assert.Equal(t, 1, c.take()[0].Records, "no merge into the previous frame")
}

func TestCoalescerDoesNotAliasEngineSlices(t *testing.T) {
	up := []engine.StateUpdate{{Key: "a", State: "count", Value: 1}}
	var c coalescer
	c.add(engine.Event{Kind: engine.EvStateUpdated, Task: "t", Updates: up})
	c.add(engine.Event{Kind: engine.EvStateUpdated, Task: "t", Updates: []engine.StateUpdate{{Key: "a", State: "count", Value: 9}}})
	assert.Equal(t, int64(1), up[0].Value, "the engine's event is never modified")
}

func TestTrimSnapshotBoundsListsKeepsTotals(t *testing.T) {
	diffs := make([]engine.Diff, 500)
	cmds := make([]engine.LoggedCommand, 300)
	for i := range cmds {
		cmds[i].Step = int64(i)
	}
	snap := engine.Snapshot{
		Sinks:    []engine.SinkView{{Operator: "sink", Comparison: &engine.Comparison{Losses: diffs, Duplicates: diffs[:3], LostRecords: 500, Expected: 900}}},
		Commands: cmds,
	}
	got := trimSnapshot(snap)
	c := got.Sinks[0].Comparison
	assert.Len(t, c.Losses, maxWireDiffs)
	assert.Len(t, c.Duplicates, 3)
	assert.Equal(t, 500, c.LostRecords)
	assert.Equal(t, 900, c.Expected)
	require.Len(t, got.Commands, maxWireCommands)
	assert.Equal(t, int64(200), got.Commands[0].Step, "the newest commands are kept")
}
