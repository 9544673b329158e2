package engine

import (
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
)

func rescaleTo(t *testing.T, s *Stepper, op string, p int) {
	t.Helper()
	require.NoError(t, s.Do(Command{Name: CmdRescale, Operator: op, Parallelism: p}))
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Job.Rescale == nil && s.Job.Status == JobRunning && allRunning(s) }, 20000)
	require.NoError(t, err)
}

func allRunning(s *Snapshot) bool {
	for _, o := range s.Job.Operators {
		for _, st := range o.Subtasks {
			if st.Status != TaskRunning {
				return false
			}
		}
	}
	return true
}

func partitionsOf(r *RestoreInfo) []int {
	var out []int
	for _, po := range r.Offsets {
		out = append(out, po.Partition)
	}
	return out
}

// The article's first rescale: a source reading 5 partitions goes from 1 to
// 2 subtasks. Its offsets are split-distribute ListState, which Flink's
// RoundRobinOperatorStateRepartitioner cuts into contiguous chunks: subtask 0
// gets [p0 p1 p2], subtask 1 gets [p3 p4], each at the offset it had reached.
// With union ListState every subtask sees all five and keeps partition mod 2
// (the article's connector's rule): [p0 p2 p4] and [p1 p3].
func TestArticleSourceRescale(t *testing.T) {
	tests := []struct {
		mode string
		want [][]int
	}{
		{OffsetsSplit, [][]int{{0, 1, 2}, {3, 4}}},
		{OffsetsUnion, [][]int{{0, 2, 4}, {1, 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			spec := &JobSpec{
				Name: "article-source", Seed: 3,
				Operators: []OperatorSpec{
					{ID: "source", Kind: KindSource, Parallelism: 1, Options: map[string]any{"partitions": 5, "records": 500, "offsets": tc.mode}},
					{ID: "sink", Kind: KindSink, Parallelism: 1},
				},
				Edges:   []EdgeSpec{{From: "source", To: "sink", Partitioner: Rebalance}},
				Cluster: ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 2},
			}
			s, log := newTestStepper(t, spec)
			s.Steps(120)
			require.NoError(t, s.Do(Command{Name: CmdRescale, Operator: "source", Parallelism: 2}))
			_, err := s.RunUntil(func(s *Snapshot) bool { return s.Counters.Rescales == 1 }, 20000)
			require.NoError(t, err)

			// The savepoint's offsets are where each new subtask starts.
			sp := log.kinds(EvRescalePlan)
			require.Len(t, sp, 1)
			assert.Equal(t, 1, sp[0].Rescale.From)
			assert.Equal(t, 2, sp[0].Rescale.To)
			assert.Nil(t, sp[0].Rescale.Plan, "a source has no keyed state")
			require.Len(t, sp[0].Rescale.OperatorState, 2)
			saved := map[int]int64{}
			snap := s.Snapshot()
			for _, p := range snap.Sources[0].Partitions {
				saved[p.Partition] = p.Checkpointed
			}
			restored := restoreEvents(log, 2)
			for i, want := range tc.want {
				r := restored[taskName("source", i)]
				require.NotNil(t, r)
				assert.Equal(t, want, partitionsOf(r), "source#%d", i)
				for _, po := range r.Offsets {
					assert.Positive(t, po.Offset, "partition %d was read before the rescale", po.Partition)
					assert.Equal(t, saved[po.Partition], po.Offset)
				}
			}
			runToEnd(t, s)
			cmp, err := s.Compare()
			require.NoError(t, err)
			assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
		})
	}
}

// The article's second rescale: a keyed operator with max parallelism 10
// goes from 2 to 3 subtasks. Flink's ranges: before [0,4] [5,9]; after
// [0,3] [4,6] [7,9]. New subtask 1 reads key group 4 from old subtask 0 and
// key groups 5..6 from old subtask 1. Every key keeps its count and lands in
// the subtask that owns its key group.
func TestArticleKeyedRescale(t *testing.T) {
	s, log := newTestStepper(t, wordCount(300, 2, 2, 10))
	s.Steps(400)
	before := map[string]string{}
	for i := 0; i < 2; i++ {
		v, err := s.TaskState(taskName("count", i), 0)
		require.NoError(t, err)
		want := rescale.KeyGroupRangeForOperator(10, 2, i)
		assert.Equal(t, &want, v.KeyGroups)
		for _, e := range v.Keyed {
			before[e.Key] = e.Value
		}
	}
	require.NotEmpty(t, before)
	rescaleTo(t, s, "count", 3)

	plans := log.kinds(EvRescalePlan)
	require.Len(t, plans, 1)
	p := plans[0].Rescale.Plan
	require.NotNil(t, p)
	assert.Equal(t, 10, p.MaxParallelism)
	assert.Equal(t, []rescale.SubtaskAssignment{
		{Subtask: 0, Range: rescale.KeyGroupRange{Start: 0, End: 3}, Reads: []rescale.Read{{OldSubtask: 0, Range: rescale.KeyGroupRange{Start: 0, End: 3}}}},
		{Subtask: 1, Range: rescale.KeyGroupRange{Start: 4, End: 6}, Reads: []rescale.Read{
			{OldSubtask: 0, Range: rescale.KeyGroupRange{Start: 4, End: 4}}, {OldSubtask: 1, Range: rescale.KeyGroupRange{Start: 5, End: 6}}}},
		{Subtask: 2, Range: rescale.KeyGroupRange{Start: 7, End: 9}, Reads: []rescale.Read{{OldSubtask: 1, Range: rescale.KeyGroupRange{Start: 7, End: 9}}}},
	}, p.Subtasks)

	snap := s.Snapshot()
	var ranges []rescale.KeyGroupRange
	for _, st := range snap.Job.Operators[2].Subtasks {
		ranges = append(ranges, *st.KeyGroups)
	}
	assert.Equal(t, []rescale.KeyGroupRange{{Start: 0, End: 3}, {Start: 4, End: 6}, {Start: 7, End: 9}}, ranges)

	// Every key is restored into the subtask owning its key group, with the
	// count it had at the savepoint: no key lost, none twice.
	after := map[string]string{}
	for i := 0; i < 3; i++ {
		v, err := s.TaskState(taskName("count", i), 0)
		require.NoError(t, err)
		for _, e := range v.Keyed {
			assert.True(t, ranges[i].Contains(e.KeyGroup), "key %s in key group %d restored into count#%d %v", e.Key, e.KeyGroup, i, ranges[i])
			assert.Equal(t, rescale.KeyGroupForString(e.Key, 10), e.KeyGroup)
			_, dup := after[e.Key]
			assert.False(t, dup, "key %s restored twice", e.Key)
			after[e.Key] = e.Value
		}
	}
	// Between the first reads and these, records only went forward: every
	// key is back, with a count at least as large.
	var keys []string
	for k := range before {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		require.Contains(t, after, k)
		b, _ := strconv.Atoi(before[k])
		a, _ := strconv.Atoi(after[k])
		assert.GreaterOrEqual(t, a, b, "count of %s", k)
	}
	restores := restoreEvents(log, 2)
	assert.Equal(t, []rescale.Read{{OldSubtask: 0, Range: rescale.KeyGroupRange{Start: 4, End: 4}}, {OldSubtask: 1, Range: rescale.KeyGroupRange{Start: 5, End: 6}}},
		restores["count#1"].Reads)

	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
}

func TestRescaleRefused(t *testing.T) {
	s, _ := newTestStepper(t, wordCount(100, 2, 2, 10))
	_, err := s.RunUntil(allRunning, 1000)
	require.NoError(t, err)
	tests := []struct {
		name    string
		cmd     Command
		is      error
		message string
	}{
		{"above max parallelism", Command{Name: CmdRescale, Operator: "count", Parallelism: 11}, rescale.ErrAboveMax, "parallelism 11 is above max parallelism 10"},
		{"zero", Command{Name: CmdRescale, Operator: "count", Parallelism: 0}, rescale.ErrParallelism, "parallelism 0 is not within"},
		{"forward edge", Command{Name: CmdRescale, Operator: "tokenizer", Parallelism: 3}, ErrRescale, "forward partitioning does not allow change of parallelism"},
		{"unknown operator", Command{Name: CmdRescale, Operator: "nope", Parallelism: 3}, ErrUnknown, `no operator "nope"`},
		{"same parallelism", Command{Name: CmdRescale, Operator: "count", Parallelism: 2}, ErrRescale, "already has 2 subtasks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Do(tc.cmd)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.is), "%v", err)
			assert.Contains(t, err.Error(), tc.message)
		})
	}
	assert.Equal(t, 2, s.Snapshot().Job.Operators[2].Parallelism)
	log := s.CommandLog()
	require.Len(t, log, len(tests))
	assert.True(t, log[0].Failed)
}

// A rescale needs more slots than there are: the job stops with a savepoint
// and then waits for resources until a TaskManager is added.
func TestRescaleWaitsForSlots(t *testing.T) {
	spec := wordCount(200, 1, 1, 0)
	spec.Cluster = ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 2}
	s, _ := newTestStepper(t, spec)
	s.Steps(100)
	require.NoError(t, s.Do(Command{Name: CmdRescale, Operator: "count", Parallelism: 4}))
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Job.WaitingForResources }, 20000)
	require.NoError(t, err)
	snap := s.Snapshot()
	assert.Equal(t, 4, snap.Job.SlotsNeeded)
	assert.Equal(t, "restoring", snap.Job.Rescale.Phase)
	require.NoError(t, s.Do(Command{Name: CmdAddTaskManager}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Counters.Rescales == 1 }, 20000)
	require.NoError(t, err)
	assert.Len(t, s.Snapshot().TaskManagers, 2)
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
}

// Reactive mode: every operator runs with as many subtasks as there are
// slots; adding a TaskManager scales the job up.
func TestReactiveMode(t *testing.T) {
	spec := wordCount(200, 1, 1, 0)
	spec.Edges[0].Partitioner = Forward
	spec.Cluster = ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 2, Reactive: true}
	s, _ := newTestStepper(t, spec)
	_, err := s.RunUntil(allRunning, 1000)
	require.NoError(t, err)
	for _, o := range s.Snapshot().Job.Operators {
		assert.Equal(t, 2, o.Parallelism, o.ID)
	}
	s.Steps(100)
	require.NoError(t, s.Do(Command{Name: CmdAddTaskManager}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Counters.Rescales == 1 }, 20000)
	require.NoError(t, err)
	for _, o := range s.Snapshot().Job.Operators {
		assert.Equal(t, 4, o.Parallelism, o.ID)
	}
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
}

// A crash after the rescale's savepoint completed (while subtasks are
// finishing) still lands on the new parallelism: the restart restores from
// that savepoint.
func TestCrashWhileStoppingWithSavepoint(t *testing.T) {
	s, log := newTestStepper(t, wordCount(300, 2, 2, 0))
	s.Steps(200)
	require.NoError(t, s.Do(Command{Name: CmdRescale, Operator: "count", Parallelism: 3}))
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Job.Rescale != nil && s.Job.Rescale.Phase == "stopping" }, 20000)
	require.NoError(t, err)
	sp := s.Snapshot().Job.Rescale.Savepoint
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#1"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Counters.Rescales == 1 && allRunning(s) }, 20000)
	require.NoError(t, err)
	snap := s.Snapshot()
	assert.Len(t, snap.Job.Operators[2].Subtasks, 3)
	assert.Equal(t, sp, subtaskView(t, snap, "count#2").RestoredFrom)
	assert.Empty(t, log.kinds(EvRescaleFailed))
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
}

// A restore event records the operator state Flink's repartitioner hands the
// subtask, before the operator looks at it, and separately what the operator
// kept. With union offsets both new source subtasks receive all five
// partitions at their savepoint offsets; subtask 0 keeps p0 p2 p4, subtask 1
// keeps p1 p3 (partition mod 2). With split offsets the repartitioner
// already cut the list ([p0 p1 p2], [p3 p4]) and the source keeps it all.
func TestRestoreEventShowsRestoredAndKeptOperatorState(t *testing.T) {
	tests := []struct {
		mode     string
		restored [][]int
		kept     [][]int
	}{
		{OffsetsUnion, [][]int{{0, 1, 2, 3, 4}, {0, 1, 2, 3, 4}}, [][]int{{0, 2, 4}, {1, 3}}},
		{OffsetsSplit, [][]int{{0, 1, 2}, {3, 4}}, [][]int{{0, 1, 2}, {3, 4}}},
	}
	partitions := func(t *testing.T, elems []string) ([]int, []int64) {
		var ps []int
		var offs []int64
		for _, e := range elems {
			var po PartitionOffset
			require.NoError(t, json.Unmarshal([]byte(e), &po), e)
			ps = append(ps, po.Partition)
			offs = append(offs, po.Offset)
		}
		return ps, offs
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			spec := &JobSpec{
				Name: "offsets", Seed: 3,
				Operators: []OperatorSpec{
					{ID: "source", Kind: KindSource, Parallelism: 1, Options: map[string]any{"partitions": 5, "records": 500, "offsets": tc.mode}},
					{ID: "sink", Kind: KindSink, Parallelism: 1},
				},
				Edges:   []EdgeSpec{{From: "source", To: "sink", Partitioner: Rebalance}},
				Cluster: ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 2},
			}
			s, log := newTestStepper(t, spec)
			s.Steps(120)
			rescaleTo(t, s, "source", 2)
			saved := map[int]int64{}
			for _, p := range s.Snapshot().Sources[0].Partitions {
				saved[p.Partition] = p.Checkpointed
			}
			restored := restoreEvents(log, 2)
			for i := range 2 {
				r := restored[taskName("source", i)]
				require.NotNil(t, r)
				got, offs := partitions(t, r.OperatorState["offsets"])
				assert.Equal(t, tc.restored[i], got, "source#%d restored", i)
				for j, p := range got {
					assert.Equal(t, saved[p], offs[j], "source#%d restored partition %d at its savepoint offset", i, p)
				}
				kept, _ := partitions(t, r.KeptOperatorState["offsets"])
				assert.Equal(t, tc.kept[i], kept, "source#%d kept", i)
				assert.Equal(t, tc.kept[i], partitionsOf(r), "source#%d reads what it kept", i)
			}
		})
	}
}
