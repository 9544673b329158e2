package lessons

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/rescale"
)

func mustCheck(t *testing.T, name string, a map[string]any) Check {
	t.Helper()
	c, err := newCheck(name, a)
	require.NoError(t, err)
	return c
}

// keyedOp builds an operator view with the given ranges.
func keyedOp(id string, maxPar int, ranges ...[2]int) engine.OperatorView {
	op := engine.OperatorView{ID: id, Kind: engine.KindCount, Parallelism: len(ranges), MaxParallelism: maxPar, Keyed: true}
	for i, r := range ranges {
		kg := rescale.KeyGroupRange{Start: r[0], End: r[1]}
		op.Subtasks = append(op.Subtasks, engine.SubtaskView{Index: i, Name: id + "#" + string(rune('0'+i)), Status: engine.TaskRunning, KeyGroups: &kg})
	}
	return op
}

func snapWith(ops ...engine.OperatorView) *engine.Snapshot {
	return &engine.Snapshot{Job: engine.JobView{Status: engine.JobRunning, Operators: ops}}
}

func TestKeyGroupMoves(t *testing.T) {
	// Max parallelism 10, 2 -> 3 (Flink's ranges, by hand: start = ceil(i*10/p)).
	before := snapWith(keyedOp("count", 10, [2]int{0, 4}, [2]int{5, 9}))
	after := snapWith(keyedOp("count", 10, [2]int{0, 3}, [2]int{4, 6}, [2]int{7, 9}))
	obs := &Observation{Start: before, Now: after}
	for _, tc := range []struct {
		name string
		args map[string]any
		ok   bool
	}{
		{"key-groups-moved", map[string]any{"operator": "count", "n": 4}, true}, // 4, 7, 8, 9
		{"key-groups-moved", map[string]any{"operator": "count", "n": 3}, false},
		{"key-group-moved", map[string]any{"operator": "count", "group": 4, "from": 0, "to": 1}, true},
		{"key-group-moved", map[string]any{"operator": "count", "group": 5, "from": 1, "to": 1}, true},
		{"key-group-moved", map[string]any{"operator": "count", "group": 7, "from": 1, "to": 1}, false},
		{"key-group-ranges", map[string]any{"operator": "count", "equals": []any{[]any{0, 3}, []any{4, 6}, []any{7, 9}}}, true},
		{"key-group-ranges", map[string]any{"operator": "count", "equals": []any{[]any{0, 2}, []any{3, 5}, []any{6, 9}}}, false},
	} {
		ok, why := mustCheck(t, tc.name, tc.args).Eval(obs)
		assert.Equal(t, tc.ok, ok, "%s %v: %s", tc.name, tc.args, why)
	}
}

func TestCheckpointCounts(t *testing.T) {
	hist := func(ids ...int64) []engine.CheckpointStats {
		var h []engine.CheckpointStats
		for _, id := range ids {
			h = append(h, engine.CheckpointStats{ID: id, Status: engine.CheckpointCompleted})
		}
		return h
	}
	start := &engine.Snapshot{}
	start.Checkpoints.History = hist(1, 2)
	start.Checkpoints.Counts.Completed = 2
	now := &engine.Snapshot{}
	now.Checkpoints.History = append(hist(1, 2, 3), engine.CheckpointStats{ID: 4, Savepoint: true, Status: engine.CheckpointCompleted},
		engine.CheckpointStats{ID: 5, Status: engine.CheckpointInProgress})
	now.Checkpoints.Counts.Completed = 4 // three checkpoints and a savepoint
	obs := &Observation{Start: start, Now: now}
	for _, tc := range []struct {
		name string
		args map[string]any
		ok   bool
	}{
		{"checkpoint-completed", map[string]any{"min": 3}, true},
		{"checkpoint-completed", map[string]any{"min": 4}, false}, // the savepoint does not count
		{"checkpoint-completed", map[string]any{"new": 1}, true},
		{"checkpoint-completed", map[string]any{"new": 2}, false}, // 5 is still in progress
		{"savepoint-completed", map[string]any{"new": 1}, true},
		{"savepoint-completed", map[string]any{"min": 2}, false},
	} {
		ok, why := mustCheck(t, tc.name, tc.args).Eval(obs)
		assert.Equal(t, tc.ok, ok, "%s %v: %s", tc.name, tc.args, why)
	}
}

func TestRestoredFrom(t *testing.T) {
	start := snapWith(keyedOp("count", 128, [2]int{0, 127}))
	start.Checkpoints.History = []engine.CheckpointStats{{ID: 6, Status: engine.CheckpointCompleted}, {ID: 7, Status: engine.CheckpointInProgress}}
	restored := func(from int64, restores int, savepoint bool) *engine.Snapshot {
		s := snapWith(keyedOp("count", 128, [2]int{0, 127}))
		s.Job.Operators[0].Subtasks[0].RestoredFrom = from
		s.Counters.Restores = restores
		s.Checkpoints.LatestRestore = &engine.RestoreStats{Checkpoint: from, Savepoint: savepoint}
		return s
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		now  *engine.Snapshot
		ok   bool
	}{
		{"latest is the newest completed at the start", map[string]any{"checkpoint": "latest"}, restored(6, 1, false), true},
		{"an older checkpoint is not the latest", map[string]any{"checkpoint": "latest"}, restored(5, 1, false), false},
		{"the restore must happen in the step", map[string]any{"checkpoint": "latest"}, restored(6, 0, false), false},
		{"an explicit id", map[string]any{"checkpoint": 6, "operator": "count"}, restored(6, 1, false), true},
		{"fresh start", map[string]any{"checkpoint": 0}, restored(0, 0, false), true},
		{"fresh start refuses a restore", map[string]any{"checkpoint": 0}, restored(6, 1, false), false},
		{"savepoint", map[string]any{"savepoint": true}, restored(9, 0, true), true},
		{"a checkpoint is not a savepoint", map[string]any{"savepoint": true}, restored(6, 1, false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := mustCheck(t, "restored-from", tc.args).Eval(&Observation{Start: start, Now: tc.now})
			assert.Equal(t, tc.ok, ok, why)
		})
	}
}

func TestSourcePartitionsAndOperatorState(t *testing.T) {
	src := engine.OperatorView{ID: "source", Kind: engine.KindSource, Parallelism: 2, Subtasks: []engine.SubtaskView{
		{Index: 0, Name: "source#0", OperatorState: map[string][]string{"offsets": {`{"partition":0,"offset":7}`, `{"partition":1,"offset":3}`, `{"partition":2,"offset":0}`}}},
		{Index: 1, Name: "source#1", OperatorState: map[string][]string{"offsets": {`{"partition":3,"offset":1}`, `{"partition":4,"offset":9}`}}},
	}}
	obs := &Observation{Now: snapWith(src)}
	eq := func(rows ...[]any) []any {
		out := make([]any, len(rows))
		for i, r := range rows {
			out[i] = r
		}
		return out
	}
	ok, why := mustCheck(t, "source-partitions", map[string]any{"operator": "source",
		"equals": eq([]any{"p0", "p1", "p2"}, []any{"p3", "p4"})}).Eval(obs)
	assert.True(t, ok, why)
	ok, _ = mustCheck(t, "source-partitions", map[string]any{"operator": "source",
		"equals": eq([]any{"p0", "p2", "p4"}, []any{"p1", "p3"})}).Eval(obs)
	assert.False(t, ok, "the article's mod assignment is not what the state holds")
	ok, why = mustCheck(t, "operator-state", map[string]any{"operator": "source", "state": "offsets",
		"equals": eq([]any{`{"partition":0,"offset":7}`, `{"partition":1,"offset":3}`, `{"partition":2,"offset":0}`}, []any{`{"partition":3,"offset":1}`, `{"partition":4,"offset":9}`})}).Eval(obs)
	assert.True(t, ok, why)
}

func TestSinkPredicates(t *testing.T) {
	snap := func(c engine.Comparison) *engine.Snapshot {
		c.Sink, c.Supported, c.Mode = "sink", true, "exact"
		return &engine.Snapshot{Sinks: []engine.SinkView{{Operator: "sink", Committed: c.Committed, Comparison: &c}}}
	}
	clean := engine.Comparison{Committed: 12}
	dup := engine.Comparison{Committed: 14, Duplicates: []engine.Diff{{Key: "/help", Window: "[0s, 15s)", Value: 20, Expected: 1, Committed: 2}}, DuplicateRecords: 2}
	wrong := engine.Comparison{Committed: 12, Unexpected: []engine.Diff{{Key: "/help", Value: 19, Committed: 1}}}
	lost := engine.Comparison{Committed: 11, Losses: []engine.Diff{{Key: "/news", Value: 20, Expected: 1}}, LostRecords: 1}
	for _, tc := range []struct {
		name string
		args map[string]any
		c    engine.Comparison
		ok   bool
	}{
		{"window-counts-exact", map[string]any{"n": 20, "min": 12}, clean, true},
		{"window-counts-exact", map[string]any{"n": 20, "min": 13}, clean, false},
		{"window-counts-exact", map[string]any{"n": 20}, dup, false},
		{"window-counts-exact", map[string]any{"n": 20}, wrong, false},
		{"no-sink-duplicates", nil, clean, true},
		{"no-sink-duplicates", nil, dup, false},
		{"sink-duplicates", map[string]any{"min": 2}, dup, true},
		{"sink-duplicates", map[string]any{"min": 3}, dup, false},
		{"no-sink-losses", nil, clean, true},
		{"no-sink-losses", nil, lost, false},
		{"sink-committed", map[string]any{"sink": "sink", "min": 12}, clean, true},
	} {
		ok, why := mustCheck(t, tc.name, tc.args).Eval(&Observation{Now: snap(tc.c)})
		assert.Equal(t, tc.ok, ok, "%s %v: %s", tc.name, tc.args, why)
	}
}

func TestEventAndCommandPredicates(t *testing.T) {
	start := &engine.Snapshot{Commands: []engine.LoggedCommand{{Command: engine.Command{Name: "rescale"}, Failed: true}}}
	now := &engine.Snapshot{Commands: append(start.Commands, engine.LoggedCommand{Command: engine.Command{Name: "trigger-checkpoint"}})}
	ok, _ := mustCheck(t, "command-refused", map[string]any{"name": "rescale"}).Eval(&Observation{Start: start, Now: now})
	assert.False(t, ok, "a refusal before the step does not count")
	now.Commands = append(now.Commands, engine.LoggedCommand{Command: engine.Command{Name: "rescale"}, Failed: true})
	ok, why := mustCheck(t, "command-refused", map[string]any{"name": "rescale"}).Eval(&Observation{Start: start, Now: now})
	assert.True(t, ok, why)

	events := []engine.Event{{Kind: engine.EvChannelBlocked, Task: "counter#0"}}
	c := mustCheck(t, "channel-blocked", map[string]any{"operator": "count"})
	ok, _ = c.Eval(&Observation{Now: now, Events: events})
	assert.False(t, ok, "counter#0 is not a subtask of count")
	ok, why = c.Eval(&Observation{Now: now, Events: append(events, engine.Event{Kind: engine.EvChannelBlocked, Task: "count#1"})})
	assert.True(t, ok, why)

	plan, err := rescale.NewPlan(128, 2, 3)
	require.NoError(t, err)
	rev := []engine.Event{{Kind: engine.EvRescalePlan, Rescale: &engine.RescaleInfo{Operator: "count", From: 2, To: 3, Plan: &plan,
		OperatorState: []map[string][]string{{"tallies": {"a", "b"}}, {"tallies": {"a", "b"}}, {"tallies": {"a", "b"}}}}}}
	reads := mustCheck(t, "key-group-reads", map[string]any{"operator": "count", "subtask": 1, "equals": []any{[]any{0, 43, 63}, []any{1, 64, 85}}})
	ok, why = reads.Eval(&Observation{Now: now, Events: rev})
	assert.True(t, ok, why)
	ok, why = mustCheck(t, "restored-operator-state", map[string]any{"operator": "count", "state": "tallies", "elements": 2}).Eval(&Observation{Now: now, Events: rev})
	assert.True(t, ok, why)
	ok, _ = mustCheck(t, "restored-operator-state", map[string]any{"operator": "count", "state": "tallies", "elements": 1}).Eval(&Observation{Now: now, Events: rev})
	assert.False(t, ok)
}

// Every predicate explains itself in both languages, so the UI can show the
// check beside the step's text.
func TestEveryPredicateDescribedInBothLanguages(t *testing.T) {
	samples := map[argKind]any{kInt: 2, kString: "count", kBool: true, kScalar: "be", kCheckpoint: "latest",
		kIntMatrix: []any{[]any{0, 4}, []any{5, 9}}, kTextMatrix: []any{[]any{"p0"}}}
	for _, name := range PredicateNames() {
		p := catalogue[name]
		a := map[string]any{}
		for _, s := range p.args {
			a[s.name] = samples[s.kind]
		}
		if name == "key-group-reads" {
			a["equals"] = []any{[]any{0, 43, 63}}
		}
		c := mustCheck(t, name, a)
		en, zh := c.Describe(EN), c.Describe(ZH)
		assert.NotEmpty(t, en, name)
		assert.NotEmpty(t, zh, name)
		assert.NotEqual(t, en, zh, "%s has no Chinese description", name)
	}
}

// A count of one reads in the singular, in the description and in the
// reason a check does not hold yet.
func TestCheckpointCountsAgreeInNumber(t *testing.T) {
	one := mustCheck(t, "checkpoint-completed", map[string]any{"min": 1})
	assert.Equal(t, "At least 1 checkpoint has completed.", one.Describe(EN))
	two := mustCheck(t, "savepoint-completed", map[string]any{"min": 2})
	assert.Equal(t, "At least 2 savepoints have completed.", two.Describe(EN))
	inc := mustCheck(t, "checkpoint-incremental", map[string]any{"min": 1})
	assert.Equal(t, "At least 1 checkpoint uploaded less than its full state size.", inc.Describe(EN))
}
