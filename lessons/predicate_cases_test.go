package lessons

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// stateOf is a StateReader over fixed subtask state: what the engine's
// state inspector would return for each task.
type stateOf map[string]engine.TaskStateView

func (s stateOf) TaskState(task string, _ int) (engine.TaskStateView, error) {
	v, ok := s[task]
	if !ok {
		return engine.TaskStateView{}, fmt.Errorf("no subtask %s", task)
	}
	return v, nil
}

// predicateCase is one predicate with arguments, an observation where it
// must hold and one where it must not.
type predicateCase struct {
	name        string
	args        map[string]any
	holds, nope func() *Observation
}

func obsNow(s *engine.Snapshot) func() *Observation {
	return func() *Observation { return &Observation{Start: &engine.Snapshot{}, Now: s} }
}

func obsStep(start, now *engine.Snapshot, events ...engine.Event) func() *Observation {
	return func() *Observation { return &Observation{Start: start, Now: now, Events: events} }
}

// keyedState builds a snapshot of a keyed operator "count" over 128 key
// groups in two subtasks ([0, 63], [64, 127]) and the state its subtasks
// hold: each key in the key group Flink's murmur hash gives it, stored by
// the subtask named in where (or by its owner when where is absent).
func keyedState(values map[string]string, where map[string]int) (*engine.Snapshot, stateOf) {
	snap := snapWith(keyedOp("count", 128, [2]int{0, 63}, [2]int{64, 127}))
	st := stateOf{"count#0": {Task: "count#0"}, "count#1": {Task: "count#1"}}
	for k, v := range values {
		kg := rescale.KeyGroupForString(k, 128)
		owner := kg / 64
		if w, ok := where[k]; ok {
			owner = w
		}
		task := fmt.Sprintf("count#%d", owner)
		view := st[task]
		view.Keyed = append(view.Keyed, state.Entry{State: "counts", KeyGroup: kg, Key: k, Value: v})
		st[task] = view
	}
	return snap, st
}

// withTimer copies st and registers an event-time timer of key on count#sub.
func withTimer(st stateOf, sub int, key string) stateOf {
	out := stateOf{}
	for k, v := range st {
		out[k] = v
	}
	task := fmt.Sprintf("count#%d", sub)
	v := out[task]
	v.Timers = append(append([]state.Timer(nil), v.Timers...), state.Timer{Domain: state.EventTime, Timestamp: 1000, Key: key, KeyGroup: rescale.KeyGroupForString(key, 128)})
	out[task] = v
	return out
}

// withTTL gives key's entries a TTL, last accessed at 1 s, expired or not.
func withTTL(st stateOf, key string, expired bool) stateOf {
	out := stateOf{}
	for task, v := range st {
		v.Keyed = append([]state.Entry(nil), v.Keyed...)
		for i := range v.Keyed {
			if v.Keyed[i].Key == key {
				v.Keyed[i].LastAccess, v.Keyed[i].Expired = 1000, expired
			}
		}
		out[task] = v
	}
	return out
}

func withState(snap *engine.Snapshot, st stateOf) func() *Observation {
	return func() *Observation { return &Observation{Start: snap, Now: snap, State: st} }
}

func predicateCases(t *testing.T) []predicateCase {
	job := func(status engine.JobStatus) *engine.Snapshot {
		s := snapWith(keyedOp("count", 128, [2]int{0, 127}))
		s.Job.Status = status
		return s
	}
	crashed := job(engine.JobRunning)
	crashed.Job.Operators[0].Subtasks[0].Status = engine.TaskFailed
	waiting := job(engine.JobCreated)
	waiting.Job.WaitingForResources, waiting.Job.SlotsNeeded, waiting.Job.SlotsAvailable = true, 4, 2
	restarts := func(n int) *engine.Snapshot { s := job(engine.JobRunning); s.Counters.Restarts = n; return s }
	tms := func(status ...string) *engine.Snapshot {
		s := job(engine.JobRunning)
		for i, st := range status {
			s.TaskManagers = append(s.TaskManagers, engine.TaskManagerView{ID: fmt.Sprintf("tm-%d", i+1), Status: st, Slots: 2})
		}
		return s
	}
	alive, lost := engine.TMAlive, engine.TMLost
	restored := func(n int, r *engine.RestoreStats) *engine.Snapshot {
		s := job(engine.JobRunning)
		s.Counters.Restores, s.Checkpoints.LatestRestore = n, r
		return s
	}
	cps := func(fs ...func(c *engine.CheckpointsView)) *engine.Snapshot {
		s := job(engine.JobRunning)
		for _, f := range fs {
			f(&s.Checkpoints)
		}
		return s
	}
	incremental := func(stateSize, written int64) *engine.Snapshot {
		return cps(func(c *engine.CheckpointsView) {
			c.History = []engine.CheckpointStats{{ID: 1, Status: engine.CheckpointCompleted, StateSize: stateSize, CheckpointedSize: written}}
		})
	}
	rescaled := func(plan *rescale.Plan, elements int) engine.Event {
		info := &engine.RescaleInfo{Operator: "count", From: 2, To: 3, Plan: plan}
		for range 3 {
			m := map[string][]string{"tallies": {}}
			for e := range elements {
				m["tallies"] = append(m["tallies"], fmt.Sprint(e))
			}
			info.OperatorState = append(info.OperatorState, m)
		}
		return engine.Event{Kind: engine.EvRescalePlan, Rescale: info}
	}
	plan, err := rescale.NewPlan(128, 2, 3)
	require.NoError(t, err)
	offsets := func(parts ...[]int) *engine.Snapshot {
		src := engine.OperatorView{ID: "source", Kind: engine.KindSource, Parallelism: len(parts)}
		for i, ps := range parts {
			st := engine.SubtaskView{Index: i, Name: fmt.Sprintf("source#%d", i), OperatorState: map[string][]string{"offsets": {}}}
			for _, p := range ps {
				st.OperatorState["offsets"] = append(st.OperatorState["offsets"], fmt.Sprintf(`{"partition":%d,"offset":1}`, p))
			}
			src.Subtasks = append(src.Subtasks, st)
		}
		s := snapWith(src)
		s.Sources = []engine.SourceView{{Operator: "source"}}
		for _, ps := range parts {
			for _, p := range ps {
				s.Sources[0].Partitions = append(s.Sources[0].Partitions, engine.PartitionView{Partition: p, Offset: 10, Checkpointed: -1})
			}
		}
		return s
	}
	matrix := func(rows ...[]any) []any {
		out := make([]any, len(rows))
		for i, r := range rows {
			out[i] = r
		}
		return out
	}
	disk := func(local, read int64) *engine.Snapshot {
		s := snapWith(keyedOp("count", 128, [2]int{0, 63}, [2]int{64, 127}))
		for i := range s.Job.Operators[0].Subtasks {
			s.Job.Operators[0].Subtasks[i].State = &state.BackendMetrics{LocalDiskBytes: local, RestoreBytesRead: read}
		}
		s.Job.Operators[0].Subtasks[1].State.LocalDiskBytes += 100 // the check looks at every subtask, not one
		s.Job.Operators[0].Subtasks[1].State.RestoreBytesRead += 100
		return s
	}
	sink := func(c engine.Comparison) *engine.Snapshot {
		c.Sink, c.Supported, c.Mode = "sink", true, "exact"
		s := job(engine.JobRunning)
		s.Sinks = []engine.SinkView{{Operator: "sink", Committed: c.Committed, Comparison: &c}}
		return s
	}
	dup := engine.Diff{Key: "/help", Window: "[0s, 15s)", Value: 20, Expected: 1, Committed: 2}
	twoOwners := snapWith(keyedOp("count", 128, [2]int{0, 63}, [2]int{64, 127}))
	threeOwners := snapWith(keyedOp("count", 128, [2]int{0, 42}, [2]int{43, 85}, [2]int{86, 127}))
	refused := func(name string) *engine.Snapshot {
		s := job(engine.JobRunning)
		s.Commands = []engine.LoggedCommand{{Command: engine.Command{Name: "rescale"}}, {Command: engine.Command{Name: name}, Failed: true}}
		return s
	}
	upgradeRefused := func(msg string) *engine.Snapshot {
		s := job(engine.JobRunning)
		s.Commands = []engine.LoggedCommand{{Command: engine.Command{Name: "rescale"}}, {Command: engine.Command{Name: engine.CmdUpgrade}, Failed: true, Error: msg}}
		return s
	}
	before := &engine.Snapshot{Commands: []engine.LoggedCommand{{Command: engine.Command{Name: "rescale"}}}}

	// "be" and "or" hash to key groups of different subtasks; the fixtures
	// below find out which, so nothing is copied from the code under test.
	snapKV, stKV := keyedState(map[string]string{"be": "3", "or": "1"}, nil)
	beOwner := rescale.KeyGroupForString("be", 128) / 64
	_, stMisplaced := keyedState(map[string]string{"be": "3", "or": "1"}, map[string]int{"be": 1 - beOwner})
	_, stEmpty := keyedState(nil, nil)

	return []predicateCase{
		{"job-status", map[string]any{"status": "RUNNING"}, obsNow(job(engine.JobRunning)), obsNow(job(engine.JobRestarting))},
		{"all-running", nil, obsNow(job(engine.JobRunning)), obsNow(crashed)},
		{"waiting-for-resources", nil, obsNow(waiting), obsNow(job(engine.JobRunning))},
		{"restarted", map[string]any{"min": 2}, obsStep(restarts(1), restarts(3)), obsStep(restarts(2), restarts(3))},
		// A region of two restarted; a job's first deployment (no stop before) is not a redeployment.
		{"redeployed-subtasks", map[string]any{"n": 2},
			obsStep(job(engine.JobRunning), job(engine.JobRunning), taskStatus("a#1", engine.TaskFailed), taskStatus("b#1", engine.TaskCanceled),
				taskStatus("a#1", engine.TaskDeploying), taskStatus("b#1", engine.TaskDeploying), taskStatus("c#0", engine.TaskDeploying)),
			obsStep(job(engine.JobRunning), job(engine.JobRunning), taskStatus("a#1", engine.TaskFailed), taskStatus("a#1", engine.TaskDeploying),
				taskStatus("b#1", engine.TaskDeploying), taskStatus("c#0", engine.TaskDeploying))},
		{"restored-locally", map[string]any{"local": true},
			obsStep(restored(0, nil), restored(1, &engine.RestoreStats{Checkpoint: 3, LocalBytes: 900})),
			obsStep(restored(0, nil), restored(1, &engine.RestoreStats{Checkpoint: 3, LocalBytes: 900, RemoteBytes: 10}))},
		{"checkpoint-failed", map[string]any{"min": 2, "reason": string(engine.CheckpointAsyncException)},
			obsStep(cps(failedCP(1, engine.CheckpointAsyncException)), cps(failedCP(1, engine.CheckpointAsyncException), failedCP(2, engine.CheckpointAsyncException), failedCP(3, engine.CheckpointAsyncException))),
			obsStep(cps(failedCP(1, engine.CheckpointAsyncException)), cps(failedCP(1, engine.CheckpointAsyncException), failedCP(2, engine.CheckpointAsyncException), failedCP(3, engine.CheckpointExpired)))},
		{"parallelism", map[string]any{"operator": "count", "n": 2}, obsNow(twoOwners), obsNow(threeOwners)},
		{"max-parallelism", map[string]any{"operator": "count", "n": 128}, obsNow(twoOwners), obsNow(snapWith(keyedOp("count", 64, [2]int{0, 63})))},
		{"taskmanagers", map[string]any{"alive": 2}, obsNow(tms(alive, alive, lost)), obsNow(tms(alive, lost, lost))},
		{"taskmanager-lost", map[string]any{"taskManager": "tm-2"}, obsStep(tms(alive, alive), tms(alive, lost)), obsStep(tms(alive, lost), tms(alive, lost))},
		{"checkpointing", map[string]any{"periodic": true, "mode": "exactly-once"},
			obsNow(cps(func(c *engine.CheckpointsView) { c.Interval, c.Mode = time.Second, engine.ExactlyOnce })),
			obsNow(cps(func(c *engine.CheckpointsView) { c.Interval, c.Mode = time.Second, engine.AtLeastOnce }))},
		{"checkpoint-completed", map[string]any{"min": 1},
			obsNow(cps(func(c *engine.CheckpointsView) {
				c.History = []engine.CheckpointStats{{ID: 1, Status: engine.CheckpointCompleted}}
				c.Counts.Completed = 1
			})),
			obsNow(cps(func(c *engine.CheckpointsView) {
				c.History = []engine.CheckpointStats{{ID: 1, Savepoint: true, Status: engine.CheckpointCompleted}}
				c.Counts.Completed = 1
			}))},
		{"savepoint-completed", map[string]any{"min": 1},
			obsNow(cps(func(c *engine.CheckpointsView) {
				c.History = []engine.CheckpointStats{{ID: 1, Savepoint: true, Status: engine.CheckpointCompleted}}
				c.Counts.Completed = 1
			})),
			obsNow(cps(func(c *engine.CheckpointsView) {
				c.History = []engine.CheckpointStats{{ID: 1, Savepoint: true, Status: engine.CheckpointInProgress}}
			}))},
		{"checkpoint-storage", map[string]any{"kind": "filesystem"},
			obsNow(cps(func(c *engine.CheckpointsView) { c.Storage.Kind = state.FileSystemStorage })),
			obsNow(cps(func(c *engine.CheckpointsView) { c.Storage.Kind = state.JobManagerStorage }))},
		{"checkpoint-incremental", map[string]any{"min": 1}, obsNow(incremental(1000, 200)), obsNow(incremental(1000, 1000))},
		{"shared-files", map[string]any{"min": 3},
			obsNow(cps(func(c *engine.CheckpointsView) { c.Storage.SharedFiles = 3 })),
			obsNow(cps(func(c *engine.CheckpointsView) { c.Storage.SharedFiles = 2 }))},
		{"retained-checkpoints", map[string]any{"n": 2},
			obsNow(cps(func(c *engine.CheckpointsView) { c.Storage.Retained = 2 })),
			obsNow(cps(func(c *engine.CheckpointsView) { c.Storage.Retained = 3 }))},
		{"channel-blocked", map[string]any{"operator": "count"},
			obsStep(twoOwners, twoOwners, engine.Event{Kind: engine.EvChannelBlocked, Task: "count#1"}),
			obsStep(twoOwners, twoOwners, engine.Event{Kind: engine.EvChannelBlocked, Task: "counter#1"})},
		{"restored-from", map[string]any{"checkpoint": 0}, obsNow(job(engine.JobRunning)), func() *Observation {
			s := job(engine.JobRunning)
			s.Job.Operators[0].Subtasks[0].RestoredFrom = 4
			return &Observation{Start: &engine.Snapshot{}, Now: s}
		}},
		{"restored-operator-state", map[string]any{"operator": "count", "state": "tallies", "elements": 2},
			obsStep(twoOwners, threeOwners, rescaled(&plan, 2)), obsStep(twoOwners, threeOwners, rescaled(&plan, 1))},
		{"source-partitions", map[string]any{"operator": "source", "equals": matrix([]any{"p0", "p1"}, []any{"p2"})},
			obsNow(offsets([]int{0, 1}, []int{2})), obsNow(offsets([]int{0, 2}, []int{1}))},
		{"operator-state", map[string]any{"operator": "source", "state": "offsets", "equals": matrix([]any{`{"partition":3,"offset":1}`})},
			obsNow(offsets([]int{3})), obsNow(offsets([]int{4}))},
		{"source-read", map[string]any{"min": 20}, obsNow(offsets([]int{0, 1})), obsNow(offsets([]int{0}))},
		{"keyed-state", map[string]any{"operator": "count", "key": "be", "equals": "3"}, withState(snapKV, stKV), withState(snapKV, stMisplaced)},
		{"key-owner", map[string]any{"operator": "count", "key": "be", "subtask": beOwner}, withState(snapKV, stKV), withState(snapKV, stMisplaced)},
		{"keys-in-own-key-groups", map[string]any{"operator": "count"}, withState(snapKV, stKV), withState(snapKV, stMisplaced)},
		{"key-group-ranges", map[string]any{"operator": "count", "equals": matrix([]any{0, 63}, []any{64, 127})}, obsNow(twoOwners), obsNow(threeOwners)},
		{"key-group-moved", map[string]any{"operator": "count", "group": 50, "from": 0, "to": 1}, obsStep(twoOwners, threeOwners), obsStep(threeOwners, twoOwners)},
		{"key-groups-moved", map[string]any{"operator": "count", "n": 0}, obsStep(twoOwners, twoOwners), obsStep(twoOwners, threeOwners)},
		{"key-group-reads", map[string]any{"operator": "count", "subtask": 0, "equals": matrix([]any{0, 0, 42})},
			obsStep(twoOwners, threeOwners, rescaled(&plan, 1)), obsStep(twoOwners, threeOwners)},
		{"backend-local-disk", map[string]any{"operator": "count", "min": 500}, obsNow(disk(500, 0)), obsNow(disk(499, 0))},
		{"restore-read", map[string]any{"operator": "count", "min": 500}, obsNow(disk(0, 500)), obsNow(disk(0, 499))},
		{"sink-committed", map[string]any{"min": 12}, obsNow(sink(engine.Comparison{Committed: 12})), obsNow(sink(engine.Comparison{Committed: 11}))},
		{"sink-duplicates", map[string]any{"min": 2},
			obsNow(sink(engine.Comparison{Committed: 14, Duplicates: []engine.Diff{dup}, DuplicateRecords: 2})),
			obsNow(sink(engine.Comparison{Committed: 13, Duplicates: []engine.Diff{dup}, DuplicateRecords: 1}))},
		{"no-sink-duplicates", nil, obsNow(sink(engine.Comparison{Committed: 12})),
			obsNow(sink(engine.Comparison{Committed: 13, Duplicates: []engine.Diff{dup}, DuplicateRecords: 1}))},
		{"no-sink-losses", nil, obsNow(sink(engine.Comparison{Committed: 12})),
			obsNow(sink(engine.Comparison{Committed: 11, Losses: []engine.Diff{{Key: "/news", Value: 20, Expected: 1}}, LostRecords: 1}))},
		{"window-counts-exact", map[string]any{"n": 20, "min": 2}, obsNow(sink(engine.Comparison{Committed: 2})),
			obsNow(sink(engine.Comparison{Committed: 2, Unexpected: []engine.Diff{{Key: "/help", Value: 19, Committed: 1}}}))},
		{"command-refused", map[string]any{"name": "restore"}, obsStep(before, refused("restore")), obsStep(before, refused("rescale"))},
		// A timer of "be" on its owner holds; the same timer on the other subtask does not.
		{"timer-pending", map[string]any{"operator": "count", "key": "be", "subtask": beOwner},
			withState(snapKV, withTimer(stKV, beOwner, "be")), withState(snapKV, withTimer(stKV, 1-beOwner, "be"))},
		// Flink's refusal (Checkpoints.loadAndValidateCheckpoint), naming tally's state; another
		// refusal (a max parallelism mismatch) does not count.
		{"upgrade-refused", map[string]any{"operator": "tally"}, obsStep(before, upgradeRefused("Failed to rollback to checkpoint/savepoint checkpoint 1. Cannot map checkpoint/savepoint state for operator 9f to the new program, because the operator is not available in the new program. (That state is tally (uid \"tally\", ID 9f); …)")),
			obsStep(before, upgradeRefused("Failed to rollback to checkpoint/savepoint checkpoint 1. Max parallelism mismatch between checkpoint/savepoint state and new program."))},
		{"upgraded", map[string]any{"dropped": "tally", "restores": "count", "empty": "sink"},
			obsStep(before, job(engine.JobRunning), engine.Event{Kind: engine.EvRestoreRequested, Message: `upgrade from savepoint 1 (as flink run -s would) to tally removed: count (uid "count", ID 1a) restores its own state; sink (ID 2b, generated) starts with empty state; skipped: the state of tally (uid "tally", ID 3c) (allowNonRestoredState)`}),
			obsStep(before, job(engine.JobRunning), engine.Event{Kind: engine.EvRestoreRequested, Message: `upgrade from savepoint 1 (as flink run -s would) to the same job: count (uid "count", ID 1a) restores its own state; sink (ID 2b, generated) restores its own state; tally (uid "tally", ID 3c) restores its own state`})},
		// be's TTL state, last accessed at 1 s: expired holds, not yet expired does not.
		{"state-expired", map[string]any{"operator": "count", "key": "be"},
			withState(snapKV, withTTL(stKV, "be", true)), withState(snapKV, withTTL(stKV, "be", false))},
		// A checkpoint taken unaligned with in-flight records; one that found no record in flight does not count.
		{"checkpoint-unaligned", map[string]any{"min": 1},
			obsNow(cps(func(c *engine.CheckpointsView) {
				c.History = []engine.CheckpointStats{{ID: 1, Status: engine.CheckpointCompleted, Unaligned: true, ChannelStateSize: 640}}
			})),
			obsNow(cps(func(c *engine.CheckpointsView) {
				c.History = []engine.CheckpointStats{{ID: 1, Status: engine.CheckpointCompleted, Unaligned: true}}
			}))},
		// keys-in-own-key-groups also needs at least one key.
		{"keys-in-own-key-groups", map[string]any{"operator": "count"}, withState(snapKV, stKV), withState(snapKV, stEmpty)},
	}
}

// Every predicate of the catalogue holds on an observation made for it and
// does not hold on one that differs in what the predicate is about.
func TestEveryPredicateHoldsAndFails(t *testing.T) {
	cases := predicateCases(t)
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			c := mustCheck(t, tc.name, tc.args)
			ok, why := c.Eval(tc.holds())
			assert.True(t, ok, "%s %v should hold: %s", tc.name, tc.args, why)
			ok, why = c.Eval(tc.nope())
			assert.False(t, ok, "%s %v should not hold", tc.name, tc.args)
			assert.NotEmpty(t, why, "%s says why it does not hold", tc.name)
		})
	}
	for _, name := range PredicateNames() {
		assert.True(t, covered[name], "predicate %s has no case in predicateCases", name)
	}
}

func taskStatus(task string, s engine.TaskStatus) engine.Event {
	return engine.Event{Kind: engine.EvTaskStatus, Task: task, Status: string(s)}
}

// failedCP adds a failed checkpoint to a snapshot's history.
func failedCP(id int64, reason engine.CheckpointFailureReason) func(c *engine.CheckpointsView) {
	return func(c *engine.CheckpointsView) {
		c.History = append(c.History, engine.CheckpointStats{ID: id, Status: engine.CheckpointFailed, FailureReason: reason})
	}
}
