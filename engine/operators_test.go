package engine

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
)

// clickSpec is the Operations Playground's click event count: clicks on 6
// pages, exactly perWindow per page in every 15 s event-time window, counted
// per page and window.
func clickSpec(windows, perWindow int) *JobSpec {
	return &JobSpec{
		Name: "clicks", Seed: 5,
		Operators: []OperatorSpec{
			{ID: "clicks", Kind: KindSource, Parallelism: 2, Options: map[string]any{"generator": "clicks", "partitions": 3,
				"records": windows * 6 * perWindow, "clicksPerWindow": perWindow, "windowSize": "15s"}},
			{ID: "window", Kind: KindWindowCount, Parallelism: 2, Options: map[string]any{"size": "15s"}},
			{ID: "sink", Kind: KindSink},
		},
		Edges: []EdgeSpec{
			{From: "clicks", To: "window", Partitioner: Hash},
			{From: "window", To: "sink", Partitioner: Rebalance},
		},
		Checkpointing: CheckpointingSpec{Interval: ms(30)},
		Cluster:       ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 1},
		Restart:       RestartSpec{Strategy: RestartFixedDelay, Attempts: 5, Delay: ms(5)},
	}
}

func windowCounts(t *testing.T, s *Stepper) map[string]int64 {
	t.Helper()
	s.mu.Lock()
	committed, _ := s.c.sinks["sink"].view(true)
	s.mu.Unlock()
	out := map[string]int64{}
	for _, r := range committed {
		k := r.Key + " " + r.Text
		_, dup := out[k]
		assert.False(t, dup, "window %s emitted twice", k)
		out[k] = r.Value
	}
	return out
}

// Every window of every page counts exactly N, with or without a TaskManager
// crash in the middle (the restored windows keep their partial counts, the
// sources rewind to the checkpoint, and the two-phase sink hides the rest).
func TestClickWindowsExactlyN(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := "no failure"
		if crash {
			name = "TaskManager crash"
		}
		t.Run(name, func(t *testing.T) {
			s, _ := newTestStepper(t, clickSpec(5, 20))
			if crash {
				_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 2 }, 20000)
				require.NoError(t, err)
				s.Steps(30)
				require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-2"}))
				s.Steps(50)
				require.NoError(t, s.Do(Command{Name: CmdRestartTaskManager, TaskManager: "tm-2"}))
			}
			runToEnd(t, s)
			counts := windowCounts(t, s)
			require.Len(t, counts, 5*6, "6 pages × 5 windows")
			for k, n := range counts {
				assert.Equal(t, int64(20), n, k)
			}
			assert.Contains(t, counts, "/help [0s, 15s)")
			cmp, err := s.Compare()
			require.NoError(t, err)
			assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
			if crash {
				assert.Equal(t, 1, s.Snapshot().Counters.Restores)
			}
		})
	}
}

// Watermarks: a source's watermark is the lowest of its partitions' highest
// timestamps minus 1; at the end of input it is +∞, which fires every window.
func TestWatermarksReachEnd(t *testing.T) {
	s, log := newTestStepper(t, clickSpec(2, 5))
	runToEnd(t, s)
	snap := s.Snapshot()
	for _, st := range snap.Job.Operators[1].Subtasks {
		assert.Equal(t, MaxWatermark, st.Watermark, st.Name)
	}
	var fired []string
	for _, e := range log.kinds(EvWindowFired) {
		fired = append(fired, e.Key+" "+e.Window)
	}
	sort.Strings(fired)
	assert.Len(t, fired, 12)
	assert.Equal(t, "/about [0s, 15s)", fired[0])
}

// Rules on the broadcast input reach every subtask's BroadcastState; the
// main input is filtered by them on each subtask. After a rescale every new
// subtask holds the same rules.
func TestBroadcastState(t *testing.T) {
	spec := &JobSpec{
		Name: "rules", Seed: 2,
		Operators: []OperatorSpec{
			{ID: "rules", Kind: KindSource, Options: map[string]any{"generator": "none", "lines": []any{"block flink", "block state"}}},
			{ID: "words", Kind: KindSource, Options: map[string]any{"generator": "none"}},
			{ID: "tokenizer", Kind: KindTokenizer},
			{ID: "filter", Kind: KindBroadcastFilter, Parallelism: 2},
			{ID: "sink", Kind: KindSink, Options: map[string]any{"semantics": "at-least-once"}},
		},
		Edges: []EdgeSpec{
			{From: "rules", To: "filter", Partitioner: Broadcast},
			{From: "words", To: "tokenizer"},
			{From: "tokenizer", To: "filter", Partitioner: Rebalance},
			{From: "filter", To: "sink", Partitioner: Rebalance},
		},
		Cluster: ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 3},
		Runtime: RuntimeSpec{FIFO: true},
	}
	s, _ := newTestStepper(t, spec)
	_, err := s.RunUntil(func(s *Snapshot) bool {
		for _, st := range s.Job.Operators[3].Subtasks {
			if len(st.OperatorState["rules"]) != 2 {
				return false
			}
		}
		return true
	}, 2000)
	require.NoError(t, err)
	require.NoError(t, s.Do(Command{Name: CmdInject, Operator: "words", Partition: 0, Text: "flink keeps state in key groups"}))
	runToEnd(t, s)
	s.mu.Lock()
	committed, _ := s.c.sinks["sink"].view(true)
	s.mu.Unlock()
	var words []string
	for _, r := range committed {
		words = append(words, r.Key)
	}
	sort.Strings(words)
	assert.Equal(t, []string{"groups", "in", "keeps", "key"}, words)

	rescaleTo(t, s, "filter", 3)
	for _, st := range s.Snapshot().Job.Operators[3].Subtasks {
		assert.Equal(t, []string{"flink=block", "state=block"}, st.OperatorState["rules"], st.Name)
	}
}

// Union list state: after a rescale every subtask receives every old
// subtask's entry, so each learns the job-wide total.
func TestUnionListState(t *testing.T) {
	spec := &JobSpec{
		Name: "tally", Seed: 2,
		Operators: []OperatorSpec{
			{ID: "source", Kind: KindSource, Parallelism: 2, Options: map[string]any{"records": 100, "partitions": 2}},
			{ID: "tally", Kind: KindTally, Parallelism: 2},
			{ID: "sink", Kind: KindSink},
		},
		Edges:   []EdgeSpec{{From: "source", To: "tally", Partitioner: Rebalance}, {From: "tally", To: "sink", Partitioner: Rebalance}},
		Cluster: ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 3},
	}
	s, log := newTestStepper(t, spec)
	runToEnd(t, s)
	rescaleTo(t, s, "tally", 3)
	restored := restoreEvents(log, 2)
	for i := 0; i < 3; i++ {
		r := restored[taskName("tally", i)]
		require.NotNil(t, r)
		entries := r.OperatorState["tallies"]
		require.Len(t, entries, 2, "tally#%d sees both old subtasks' entries", i)
		assert.True(t, strings.Contains(entries[0], `"subtask":0`) && strings.Contains(entries[1], `"subtask":1`), "%v", entries)
	}
}

var _ = time.Second

// A hash edge carries the key group it computed for each record in the
// batch (batch.kgs), and the keyed count downstream uses it: every batch on
// tokenizer -> count has one key group per record, each the one Flink's
// KeyGroupForString gives and inside the receiving subtask's range, and
// forward edges carry none. A wrong key group would put the count in the
// wrong key group (or fail the subtask), which the run's exactly-once
// comparison below would show.
func TestHashEdgeCarriesKeyGroups(t *testing.T) {
	s, _ := newTestStepper(t, wordCount(400, 2, 3, 16))
	checked := 0
	for i := 0; i < 400 && s.Step(); i++ {
		for _, ch := range s.c.ex.channels {
			ch.mu.Lock()
			for _, e := range ch.q[ch.qh:] {
				if e.kind != elemRecords {
					continue
				}
				if ch.from.op.spec.ID != "tokenizer" {
					assert.Empty(t, e.batch.kgs, ch.name)
					continue
				}
				require.Len(t, e.batch.kgs, len(e.batch.recs), ch.name)
				r := ch.to.op.keyGroupRange(ch.to.index)
				for j, rec := range e.batch.recs {
					kg := int(e.batch.kgs[j])
					assert.Equal(t, rescale.KeyGroupForString(rec.Key, 16), kg, rec.Key)
					assert.True(t, r.Contains(kg), "%s: key group %d outside %v", ch.name, kg, r)
					checked++
				}
			}
			ch.mu.Unlock()
		}
	}
	require.Positive(t, checked)
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce)
}
