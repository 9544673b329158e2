package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// A rescale inside one job (reactive mode: a TaskManager joins and the job
// restarts from the latest checkpoint at 3) with local recovery on reads
// the local copy count#0 kept, on its TaskManager, only where the handle it
// is given still has the copy's key-group range: the embedded LSM backend's
// incremental handle is handed over whole (Flink's
// IncrementalRemoteKeyedStateHandle), a full snapshot's (heap) is cut to
// the new subtask's range (KeyGroupsStateHandle.getIntersection) and read
// from checkpoint storage. Conformance reactive-rescale-local-state(-rocksdb)
// measured both on Flink 2.3.0 and 1.20.5.
func TestLocalRecoveryReactiveRescale(t *testing.T) {
	for _, backend := range []Backend{BackendMemory, BackendFS, BackendPebble} {
		t.Run(string(backend), func(t *testing.T) {
			spec := localRecoveryJob(backend, true)
			spec.Cluster.Reactive = true
			s, _ := newTestStepper(t, spec)
			_, err := s.RunUntil(allRunning, 1000)
			require.NoError(t, err)
			s.Steps(150)
			id := completeCheckpoint(t, s)
			before := s.Snapshot()
			assert.Equal(t, "tm-1", subtaskView(t, before, "count#0").TaskManager)
			assert.Equal(t, "tm-2", subtaskView(t, before, "count#1").TaskManager)
			require.NoError(t, s.Do(Command{Name: CmdAddTaskManager}))
			_, err = s.RunUntil(func(s *Snapshot) bool {
				return s.Counters.Rescales == 1 && allRunning(s) && s.Checkpoints.LatestRestore != nil
			}, 20000)
			require.NoError(t, err)
			snap := s.Snapshot()
			// Placed by state locality (StateLocalitySlotAssigner): count#0
			// (43 key groups of old count#0's) keeps tm-1, count#2 (42 of old
			// count#1's) takes tm-2, count#1 (21 and 22) the new tm-3.
			assert.Equal(t, "tm-1", subtaskView(t, snap, "count#0").TaskManager, "count#0 kept its slot")
			assert.Equal(t, "tm-2", subtaskView(t, snap, "count#2").TaskManager, "count#2 took old count#1's slot")
			assert.Equal(t, "tm-3", subtaskView(t, snap, "count#1").TaskManager, "count#1 went to the new TaskManager")
			r := snap.Checkpoints.LatestRestore
			assert.Equal(t, id, r.Checkpoint)
			assert.Positive(t, r.RemoteBytes, "count#1 and count#2 read checkpoint storage")
			if backend == BackendPebble {
				assert.Positive(t, r.LocalBytes, "count#0 read its whole old handle from the local copy")
			} else {
				assert.Zero(t, r.LocalBytes, "count#0's handle is cut to 0-42: no local match")
			}
			runToEnd(t, s)
			cmp, err := s.Compare()
			require.NoError(t, err)
			assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
		})
	}
}

// localHandleFiles follows PrioritizedOperatorSubtaskState: only the old
// subtask of the same index has a local copy, and its handle is replaced by
// the local one only when their key-group ranges are equal.
func TestLocalHandleFiles(t *testing.T) {
	kg := func(a, b int) rescale.KeyGroupRange { return rescale.KeyGroupRange{Start: a, End: b} }
	full := func(name string, r rescale.KeyGroupRange) *state.KeyedStateHandle {
		return &state.KeyedStateHandle{Format: state.FormatFull, KeyGroupRange: r, File: &state.FileRef{Path: name}}
	}
	incr := func(name string, r rescale.KeyGroupRange) *state.KeyedStateHandle {
		return &state.KeyedStateHandle{Format: state.FormatIncremental, KeyGroupRange: r,
			SharedFiles: []state.SSTFile{{LocalName: "000001.sst", File: state.FileRef{Path: name + ".sst"}}}}
	}
	cases := []struct {
		name    string
		index   int
		handles []*state.KeyedStateHandle
		reads   []rescale.Read
		want    []string
	}{
		{"same parallelism", 1, []*state.KeyedStateHandle{full("b", kg(64, 127))},
			[]rescale.Read{{OldSubtask: 1, Range: kg(64, 127)}}, []string{"b"}},
		{"up, full handle cut", 0, []*state.KeyedStateHandle{full("a", kg(0, 63))},
			[]rescale.Read{{OldSubtask: 0, Range: kg(0, 42)}}, nil},
		{"up, incremental handle whole", 0, []*state.KeyedStateHandle{incr("a", kg(0, 63))},
			[]rescale.Read{{OldSubtask: 0, Range: kg(0, 42)}}, []string{"a.sst"}},
		{"up, another index", 2, []*state.KeyedStateHandle{incr("b", kg(64, 127))},
			[]rescale.Read{{OldSubtask: 1, Range: kg(86, 127)}}, nil},
		// a mix (tryCreateMixedLocalAndRemoteAlternative): old subtask 1's
		// handle from the local copy, old subtask 0's remotely
		{"up, two handles, one of the same index", 1, []*state.KeyedStateHandle{incr("a", kg(0, 63)), incr("b", kg(64, 127))},
			[]rescale.Read{{OldSubtask: 0, Range: kg(43, 63)}, {OldSubtask: 1, Range: kg(64, 85)}}, []string{"b.sst"}},
		{"down, own handle whole, the other remote", 0, []*state.KeyedStateHandle{full("a", kg(0, 31)), full("b", kg(32, 63))},
			[]rescale.Read{{OldSubtask: 0, Range: kg(0, 31)}, {OldSubtask: 1, Range: kg(32, 63)}}, []string{"a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for p := range localHandleFiles(c.index, c.handles, c.reads) {
				got = append(got, p)
			}
			assert.ElementsMatch(t, c.want, got)
		})
	}
}
