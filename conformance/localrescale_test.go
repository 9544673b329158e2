package conformance

import (
	"fmt"
	"strings"
)

// keyedRestore is one keyed state backend a Flink restore created (flinkref's
// LocalState.java, from BackendRestorerProcedure's TRACE log): the task, the
// alternative of PrioritizedOperatorSubtaskState it restored from (with a
// local alternative there are two: 1 is the local copy, or a mix of local
// and remote handles; the last is always the job manager's, remote), and
// whether the handles it restored from lie under the local state root
// (taskmanager.state.local.root-dirs), with the handles' classes
// (KeyGroupsStateHandle, IncrementalRemoteKeyedStateHandle,
// IncrementalLocalKeyedStateHandle).
type keyedRestore struct {
	Task         string   `json:"task"`
	Alternative  int      `json:"alternative"`
	Alternatives int      `json:"alternatives"`
	Local        bool     `json:"local"`
	Handles      []string `json:"handles"`
}

// fromLocal: the restore read local handles (the first of two alternatives,
// under the local state root).
func (r keyedRestore) fromLocal() bool {
	return r.Alternatives > 1 && r.Alternative < r.Alternatives && r.Local
}

// reactiveRescaleLocalState: reactive-rescale-from-checkpoint's in-job
// rescale from a checkpoint with local recovery on, on the heap backend or
// (-rocksdb) on the embedded LSM backend with incremental checkpoints. Two
// TaskManagers of one slot run every operator at 2; checkpoint 1 by hand
// (each subtask keeps a local copy of it); a third TaskManager joins and
// the job restarts from checkpoint 1 at 3. count#0 stays in the slot it had
// and finds its local copy of checkpoint 1 (key groups 0-63); it now owns
// 0-42. The heap backend's handle is cut to 0-42 (KeyGroupsStateHandle
// .getIntersection) and no longer matches the local copy's range, so Flink
// reads it remotely; RocksDB's incremental handle is handed over whole
// (0-63), matches the local one, and Flink restores count#0 from the local
// copy (PrioritizedOperatorSubtaskState, FLINK-33341, Flink 1.19 on).
// count#1 (new TaskManager) and count#2 (in old count#1's slot, where the
// copy is filed under subtask index 1) find none and read remotely.
//
// 2 -> 3 on TaskManagers of one slot, not reactive-rescale-from-checkpoint's
// 2 -> 4 on TaskManagers of two: the adaptive scheduler places the restarted
// pipelines by the state each would find in a slot (StateLocalitySlotAssigner:
// the key groups a new subtask shares with the slot's old subtask, by the old
// subtask's state size, highest first). At 2 -> 4 (and 1 -> 2) new subtasks 0
// and 1 score alike for old subtask 0's slot, the tie is broken by IDs, and
// whether count#0 found its copy varied from run to run (Flink 2.3.0,
// RocksDB: 1 of 4 runs at 2 -> 4, 1 of 2 at 1 -> 2); at 2 -> 3 count#0 (43 key
// groups of old subtask 0's) and count#2 (42 of old subtask 1's) outscore
// count#1 (21 and 22) and keep the old slots.
func reactiveRescaleLocalState(backend string) *scenario {
	cp := map[string]any{"localRecovery": true}
	if backend == "pebble" {
		cp["incremental"] = true
	}
	spec := wordCount(2, "exactly-once", cp, nil)
	spec["cluster"] = map[string]any{"reactive": true}
	name := "reactive-rescale-local-state"
	if backend == "pebble" {
		spec = withBackend(spec, "pebble")
		name += "-rocksdb"
	}
	sc := reactiveRescale()
	sc.name = name
	sc.claim = "In reactive mode with local recovery on, the rescale from a checkpoint reads keyed state from the local " +
		"copy the subtask of the same index kept, where the handle it is given still matches that copy's key-group range: " +
		"on RocksDB with incremental checkpoints the handle is handed over whole and count#0 restores from its local copy " +
		"(FLINK-33341), on the heap backend the handle is cut to the new range and is read from checkpoint storage"
	sc.spec = spec
	sc.lines = map[string][][]string{"source": {genLines(91, 40, 3), genLines(92, 10, 3)}}
	sc.taskManagers, sc.slots = 2, 1
	sc.check = checkReactiveRescaleLocalState(backend == "pebble")
	return sc
}

func checkReactiveRescaleLocalState(incremental bool) func(j *judge, sl *slResult, fl *trace) {
	return func(j *judge, sl *slResult, fl *trace) {
		p := fl.Phases[0]
		j.true("Flink's steps all completed", stepErrors(&p) == "", p.Steps)
		restored, found := countLocalLookups(j, p)
		used := map[string]bool{}
		for _, r := range p.KeyedRestores {
			j.t.Logf("Flink: %s restored from alternative %d of %d (under the local root: %v; %v)", r.Task, r.Alternative, r.Alternatives, r.Local, r.Handles)
			if strings.HasPrefix(r.Task, "count#") {
				used[r.Task] = r.fromLocal()
			}
		}
		j.t.Logf("Flink: count's key groups %v", flinkKeyGroups(&p, "count"))
		// What the scenario is about: count#0 kept its slot and found its
		// local copy of the checkpoint restored; count#1 (new TaskManager)
		// has none.
		j.true("Flink restored checkpoint 1; count#0 found its local copy of it, count#1 did not",
			restored == 1 && found["count#0"] && !found["count#1"], found)
		j.true("Flink restored the three count subtasks", len(used) == 3, p.KeyedRestores)
		flLocal, flRemote := false, false
		for _, u := range used {
			flLocal, flRemote = flLocal || u, flRemote || !u
		}
		if incremental {
			j.true("Flink (RocksDB, incremental) restored count#0 from its local copy, count#1 and count#2 remotely",
				used["count#0"] && !used["count#1"] && !used["count#2"], used)
		} else {
			j.true("Flink (heap) restored every count subtask remotely, count#0's local copy unused",
				!used["count#0"] && !used["count#1"] && !used["count#2"], used)
		}
		if sl == nil {
			return
		}
		// Where the rescaled count subtasks went: Flink's lookups find a
		// local copy only for a subtask placed in the slot its own index
		// held (the copy is filed under the slot and the subtask index);
		// StateLab's subtask finds one on the TaskManager its index ran on
		// before the TaskManager joined: a new job's subtask i takes the
		// i-th free slot, so count#i ran on tm-(i+1) (engine's
		// TestLocalRecoveryReactiveRescale checks it).
		q := sl.phases[0]
		flFound, slFound := map[string]bool{}, map[string]bool{}
		for _, l := range p.LocalStateLookups {
			if l.Checkpoint == restored && strings.HasPrefix(l.Task, "count#") {
				flFound[l.Task] = l.Found
			}
		}
		for i := range 3 {
			task := fmt.Sprintf("count#%d", i)
			slFound[task] = i < 2 && q.placedAtEnd[task] == fmt.Sprintf("tm-%d", i+1)
		}
		j.t.Logf("StateLab: placement after the TaskManager joined %v", q.placedAtEnd)
		j.equal("the count subtasks placed where their index held the local copy (kept their slot)", slFound, flFound)
		r := q.latestRestore
		j.true("StateLab restored checkpoint 1", r != nil && r.Checkpoint == 1, r)
		if r == nil {
			return
		}
		j.t.Logf("StateLab: restored checkpoint %d: %d keyed bytes from local copies, %d from checkpoint storage",
			r.Checkpoint, r.LocalBytes, r.RemoteBytes)
		j.equal("keyed state read from local copies on the rescale", r.LocalBytes > 0, flLocal)
		j.equal("keyed state read from checkpoint storage on the rescale", r.RemoteBytes > 0, flRemote)
	}
}
