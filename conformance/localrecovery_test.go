package conformance

import (
	"strings"

	"github.com/statelab/statelab/engine"
)

// localRecoveryCrash: with local recovery on, a subtask crash after two
// completed checkpoints restarts the job (one region) in the same slots,
// and each keyed subtask restores its state from the local copy its
// TaskManager kept of the checkpoint restored. Flink's trace does not say
// where a restore read its state; flinkref records TaskLocalStateStoreImpl's
// lookups ("Found registered local state for checkpoint N in subtask ...",
// DEBUG, LocalState.java), which TaskStateManagerImpl makes for each
// subtask it restores and whose copy it then reads first. StateLab counts
// the keyed bytes a restore read from local copies and from checkpoint
// storage (RestoreStats.LocalBytes, RemoteBytes).
func localRecoveryCrash() *scenario {
	return &scenario{
		name: "local-recovery-crash-reads-local-copy",
		claim: "With local recovery on (state.backend.local-recovery, execution.state-recovery.from-local) each checkpoint's " +
			"keyed state is also written to the TaskManager's local disk, and after a subtask crash the restarted keyed " +
			"subtasks, placed back in their slots, restore from that local copy of the checkpoint restored, not from " +
			"checkpoint storage",
		spec: wordCount(2, "exactly-once", map[string]any{"interval": "50ms", "localRecovery": true},
			map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "100ms"}),
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {genLines(87, 600, 3)}},
		phases: []phase{{
			// the sources slowed so that checkpoints complete before the crash
			flinkFaults: []flinkFault{
				{Kind: "slow", Task: "source#0", Millis: 2},
				{Kind: "slow", Task: "source#1", Millis: 2},
				{Kind: "throw", Task: "count#0", AfterRecords: 300, AfterCompleted: 2},
			},
			statelabFaults: []slFault{{cmd: engine.CmdCrashSubtask, task: "count#0", afterRecords: 300, afterCompleted: 2}},
		}},
		slots: 4,
		check: checkLocalRecoveryCrash,
	}
}

// countLocalLookups is the checkpoint Flink restored in phase p and, for
// each count subtask, whether its lookup of that checkpoint's local copy
// found one (TaskLocalStateStoreImpl.retrieveLocalState's log).
func countLocalLookups(j *judge, p phaseTrace) (int64, map[string]bool) {
	var restored int64
	if r := p.Checkpoints.LatestRestored; r != nil {
		restored = r.ID
	}
	found := map[string]bool{}
	for _, l := range p.LocalStateLookups {
		if l.Checkpoint == restored && (l.Task == "count#0" || l.Task == "count#1") {
			found[l.Task] = l.Found
		}
	}
	j.t.Logf("Flink: restored checkpoint %d; local-state lookups %+v", restored, p.LocalStateLookups)
	return restored, found
}

func checkLocalRecoveryCrash(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	j.true("Flink restarted after the crash", len(p.RestartedSubtasks) > 0, p.RestartedSubtasks)
	restored, found := countLocalLookups(j, p)
	flLocal := restored > 0 && len(found) == 2 && found["count#0"] && found["count#1"]
	j.true("Flink restored a checkpoint and both count subtasks found their local copy of it", flLocal, found)
	checkExactOutput(j, sl, fl, wordCountOutput(catalogueLines("local-recovery-crash-reads-local-copy")...))
	if sl == nil {
		return
	}
	q := sl.phases[0]
	r := q.latestRestore
	j.true("StateLab restored a checkpoint after the crash", r != nil && r.Checkpoint > 0, r)
	if r == nil {
		return
	}
	j.t.Logf("StateLab: restored checkpoint %d: %d keyed bytes from local copies, %d from checkpoint storage",
		r.Checkpoint, r.LocalBytes, r.RemoteBytes)
	slLocal := r.Checkpoint > 0 && r.LocalBytes > 0 && r.RemoteBytes == 0
	j.equal("every keyed subtask restored from its local copy of the checkpoint restored", slLocal, flLocal)
	if !slLocal {
		j.t.Logf("StateLab read %d bytes from checkpoint storage and %d locally", r.RemoteBytes, r.LocalBytes)
	}
}

// localRecoveryLostTaskManager: with local recovery on, count#0's
// TaskManager is lost (three TaskManagers of one slot, no replacement) after
// two completed checkpoints. Every subtask restarts (one region); the
// survivors go back to their slots and count#1 reads its local copy, while
// count#0, placed on the free TaskManager, has none there and reads the
// checkpoint from checkpoint storage.
func localRecoveryLostTaskManager() *scenario {
	return &scenario{
		name: "local-recovery-lost-taskmanager-falls-back",
		claim: "With local recovery on, a keyed subtask whose TaskManager was lost restores from checkpoint storage (its " +
			"local copy went with the TaskManager), while a keyed subtask placed back on its surviving TaskManager restores " +
			"from its local copy",
		spec: wordCount(2, "exactly-once", map[string]any{"interval": "50ms", "localRecovery": true},
			map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "100ms"}),
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {genLines(88, 600, 3)}},
		phases: []phase{{
			// Millis -1: no replacement TaskManager (the third one is free)
			flinkFaults: []flinkFault{
				{Kind: "slow", Task: "source#0", Millis: 2},
				{Kind: "slow", Task: "source#1", Millis: 2},
				{Kind: "tm-lost", Task: "count#0", AfterRecords: 300, AfterCompleted: 2, Millis: -1},
			},
			statelabFaults: []slFault{{cmd: engine.CmdCrashTaskManager, task: "count#0", afterRecords: 300, afterCompleted: 2}},
			awaitFaults:    true,
		}},
		taskManagers: 3,
		slots:        1,
		check:        checkLocalRecoveryLostTaskManager,
		differs: []difference{
			{why: "Flink notices a killed TaskManager after heartbeat.timeout (50 s) or when its process exits " +
				"(MiniCluster's terminateTaskManager tells the JobManager at once); StateLab waits 100 ms of job time " +
				"by default, so a lesson does not stall", ui: "explain.simplified.heartbeat"},
		},
	}
}

func checkLocalRecoveryLostTaskManager(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	j.true("Flink lost one TaskManager", len(p.LostTaskManagers) == 1, len(p.LostTaskManagers))
	restored, found := countLocalLookups(j, p)
	// A lookup for each count subtask: count#1 found its copy, count#0 (on
	// the free TaskManager) did not.
	flMixed := restored > 0 && len(found) == 2 && !found["count#0"] && found["count#1"]
	j.true("Flink restored a checkpoint; count#1 found its local copy, count#0 did not", flMixed, found)
	checkExactOutput(j, sl, fl, wordCountOutput(catalogueLines("local-recovery-lost-taskmanager-falls-back")...))
	if sl == nil {
		return
	}
	r := sl.phases[0].latestRestore
	j.true("StateLab restored a checkpoint after the TaskManager was lost", r != nil && r.Checkpoint > 0, r)
	if r == nil {
		return
	}
	j.t.Logf("StateLab: restored checkpoint %d: %d keyed bytes from local copies, %d from checkpoint storage",
		r.Checkpoint, r.LocalBytes, r.RemoteBytes)
	// Two count subtasks: some keyed bytes from a local copy (count#1) and
	// some from checkpoint storage (count#0).
	slMixed := r.Checkpoint > 0 && r.LocalBytes > 0 && r.RemoteBytes > 0
	j.equal("the surviving keyed subtask restored from its local copy, the lost TaskManager's from checkpoint storage",
		slMixed, flMixed)
}

// localRecoveryKeepsLatest: with local recovery on, three checkpoints by
// hand one after another; after each, every count subtask holds the local
// copy of that checkpoint only: a TaskManager discards the local copies of
// older checkpoints when a newer one's completion reaches it
// (TaskLocalStateStoreImpl.confirmCheckpoint prunes the checkpoints below
// the confirmed one; StateLab: confirmLocalState). flinkref lists the chk_N
// directories of each subtask under taskmanager.state.local.root-dirs once
// the listing settled; StateLab lists its TaskManagers' localState files.
func localRecoveryKeepsLatest() *scenario {
	return &scenario{
		name: "local-recovery-keeps-latest-local-copy",
		claim: "With local recovery on, each completed checkpoint's keyed state has a local copy on the subtask's " +
			"TaskManager, and only the latest confirmed checkpoint's copy is kept: older ones are deleted when a newer " +
			"checkpoint's completion is confirmed to the tasks (TaskLocalStateStoreImpl.confirmCheckpoint)",
		spec:       wordCount(2, "exactly-once", map[string]any{"localRecovery": true}, nil),
		partitions: map[string]int{"source": 2},
		// the phase's input, and one chunk more that holds the sources (never read)
		lines:  map[string][][]string{"source": {genLines(89, 30, 3), genLines(90, 10, 3)}},
		phases: []phase{{steps: []string{stepCheckpoint, stepCheckpoint, stepCheckpoint}, cancel: true}},
		slots:  4,
		check:  checkLocalRecoveryKeepsLatest,
	}
}

// keyedLocal keeps the count subtasks' entries of a listing.
func keyedLocal(m map[string][]int64) map[string][]int64 {
	out := map[string][]int64{}
	for task, ids := range m {
		if strings.HasPrefix(task, "count#") {
			out[task] = ids
		}
	}
	return out
}

func checkLocalRecoveryKeepsLatest(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	ids := flinkStepIDs(&p)
	j.true("Flink took every checkpoint by hand", len(ids) == 3 && stepErrors(&p) == "", p.Steps)
	var flLocal []map[string][]int64
	for _, st := range p.Steps {
		flLocal = append(flLocal, keyedLocal(st.LocalCheckpoints))
	}
	j.t.Logf("Flink: checkpoints %v; local copies after each (count subtasks) %v", ids, flLocal)
	if sl == nil {
		return
	}
	q := sl.phases[0]
	j.equal("the checkpoints taken by hand", q.steps, ids)
	var slLocal []map[string][]int64
	for _, m := range q.localAfterSteps {
		slLocal = append(slLocal, keyedLocal(m))
	}
	j.t.Logf("StateLab: local copies after each (count subtasks) %v", slLocal)
	j.equal("the checkpoints each count subtask holds a local copy of after each checkpoint", slLocal, flLocal)
}
