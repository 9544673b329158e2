package conformance

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// slotRequestTimeout: a TaskManager of two (one slot each) is lost and none
// replaces it. The job is one region (hash edge), so every subtask restarts
// and needs both slots again; one is left. The restart waits for slots up to
// slot.request.timeout (here 2 s, JobManagerOptions.SLOT_REQUEST_TIMEOUT,
// read from the JobManager's configuration), then the slot request fails
// with a TimeoutException, and with fixed-delay's one attempt spent on the
// loss the job FAILED.
func slotRequestTimeout() *scenario {
	return &scenario{
		name: "slot-request-timeout",
		claim: "Slots that never come fail the restarted job after slot.request.timeout (2 s here; JobManagerOptions.SLOT_REQUEST_TIMEOUT: " +
			"Flink's root cause is the slot request's TimeoutException), and the restart strategy decides: with fixed-delay's " +
			"one attempt spent on the lost TaskManager, the job FAILED",
		spec: func() map[string]any {
			s := wordCount(2, "at-least-once", nil, map[string]any{"strategy": "fixed-delay", "attempts": 1, "delay": "100ms"})
			s["cluster"] = map[string]any{"slotRequestTimeout": "2s"}
			return s
		}(),
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {genLines(72, 60, 3)}},
		phases: []phase{{
			// Millis -1: no replacement TaskManager
			flinkFaults:    []flinkFault{{Kind: "tm-lost", Task: "count#0", AfterRecords: 20, TaskManager: 0, Millis: -1}},
			statelabFaults: []slFault{{cmd: engine.CmdCrashTaskManager, task: "count#0", afterRecords: 20}},
			holdInput:      true,
		}},
		// A standalone resource manager past its start-up time tells the
		// JobMaster at once that the registered TaskManagers cannot give the
		// slots (DeclarativeSlotPoolBridge.notifyNotEnoughResourcesAvailable:
		// "Could not acquire the minimum required resources"), and the job
		// fails without waiting; within it (or with an active resource
		// manager, which would start a TaskManager) the request waits for
		// slot.request.timeout, as StateLab's does. The start-up time
		// (resourcemanager.standalone.start-up-time, default
		// slot.request.timeout) is set long so that the timeout is what
		// decides; the fail-at-once case differs (docs/flink-fidelity.md).
		flinkCluster: map[string]string{"resourcemanager.standalone.start-up-time": "10 min"},
		taskManagers: 2,
		slots:        1,
		check:        checkSlotRequestTimeout,
		differs: []difference{
			{why: "A standalone Flink cluster past its start-up time (resourcemanager.standalone.start-up-time) fails a " +
				"slot request its registered TaskManagers cannot give at once (NoResourceAvailableException \"Could not " +
				"acquire the minimum required resources\"); StateLab always waits slot.request.timeout, as Flink does " +
				"within the start-up time or with a resource manager that starts TaskManagers, so a learner can add one " +
				"(this scenario sets the start-up time long on Flink)", ui: "explain.simplified.slotWait"},
			{why: "Flink notices a killed TaskManager after heartbeat.timeout (50 s) or when its process exits " +
				"(MiniCluster's terminateTaskManager tells the JobManager at once); StateLab waits 100 ms of job time " +
				"by default, so a lesson does not stall", ui: "explain.simplified.heartbeat"},
		},
	}
}

func checkSlotRequestTimeout(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	j.true("Flink lost a TaskManager", len(p.LostTaskManagers) == 1, len(p.LostTaskManagers))
	j.true("Flink's job FAILED", p.FinalStatus == "FAILED", p.FinalStatus)
	// The root cause of Flink's failure is the slot request's timeout
	// (java.util.concurrent.TimeoutException "Timeout has occurred: PT2S";
	// 1.20 says "2000 ms").
	timeout := p.Failure != nil && strings.Contains(p.Failure.RootCause, "TimeoutException") &&
		(strings.Contains(p.Failure.RootCause, "PT2S") || strings.Contains(p.Failure.RootCause, "2000 ms"))
	j.true("Flink failed when the slot request timed out after 2 s", timeout, p.Failure)
	// How long the restarted job waited for slots: from its RUNNING after
	// RESTARTING to FAILING, as the status polls saw them (wall clock; seen
	// 2009-2038 ms). The polls may see either change late on a busy machine,
	// so the bound is 1.5 s: enough to tell the timeout from failing at once
	// (130 ms without the long start-up time).
	var waitFrom, failedAt int64 = -1, -1
	for k, st := range p.StatusTransitions {
		if st.Status == "RUNNING" && k > 0 && p.StatusTransitions[k-1].Status == "RESTARTING" {
			waitFrom = st.AtMillis
		}
		if st.Status == "FAILING" && failedAt < 0 {
			failedAt = st.AtMillis
		}
	}
	j.true("Flink waited about slot.request.timeout (2 s) for the slots", waitFrom >= 0 && failedAt-waitFrom >= 1500, []int64{waitFrom, failedAt})
	j.t.Logf("Flink: statuses %v, failure %+v", flinkPath(&p), p.Failure)
	if sl == nil {
		return
	}
	ph := sl.phases[0]
	timedOut := false
	for _, m := range ph.statusMessages {
		timedOut = timedOut || strings.Contains(m, "slot.request.timeout")
	}
	j.true("StateLab failed for want of slots (slot.request.timeout)", timedOut, ph.statusMessages)
	j.equal("final job status", ph.finalStatus, p.FinalStatus)
	j.equal("job statuses after the loss", jobPath(ph.statusesAfterFault), flinkPath(&p))
}

// reactiveRescale: reactive mode (scheduler-mode: reactive, Flink's
// AdaptiveScheduler) on one TaskManager of two slots runs every operator at
// parallelism 2; checkpoint 1 by hand; a second TaskManager joins, and the
// job restarts from the latest completed checkpoint (1) at parallelism 4,
// with no savepoint.
func reactiveRescale() *scenario {
	return &scenario{
		name: "reactive-rescale-from-checkpoint",
		claim: "In reactive mode (scheduler-mode: reactive, AdaptiveScheduler) a TaskManager that joins makes the job restart " +
			"with the new slots from the latest completed checkpoint, no savepoint: every operator at parallelism 4 " +
			"(Executing -> Restarting -> CreatingExecutionGraph), count's key groups split four ways",
		spec: func() map[string]any {
			s := wordCount(2, "exactly-once", nil, nil)
			s["cluster"] = map[string]any{"reactive": true}
			return s
		}(),
		partitions: map[string]int{"source": 4},
		lines:      map[string][][]string{"source": {genLines(73, 40, 3), genLines(74, 10, 3)}},
		phases:     []phase{{steps: []string{stepCheckpoint, stepAddTaskManager}, cancel: true, statusesFromStart: true}},
		// Reactive mode on the MiniCluster, and a rescale as soon as the
		// slots come: no cooldown or stabilization wait (Flink 2.x's
		// executing.* options, 1.20's scaling-interval.min).
		flinkCluster: map[string]string{
			"scheduler-mode": "reactive",
			// not Flink's: the MiniCluster's TaskManagers talk over the
			// network, so the one that joins can exchange data (flinkref's Pool)
			"flinkref.network": "true",
			"jobmanager.adaptive-scheduler.scaling-interval.min":                     "0 ms",
			"jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling":       "0 ms",
			"jobmanager.adaptive-scheduler.executing.resource-stabilization-timeout": "0 ms",
			"jobmanager.adaptive-scheduler.resource-stabilization-timeout":           "0 ms",
		},
		taskManagers: 1,
		slots:        2,
		check:        checkReactiveRescale,
	}
}

func checkReactiveRescale(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	j.true("Flink's steps all completed", stepErrors(&p) == "", p.Steps)
	var restored int64
	restoredSavepoint := true
	if r := p.Checkpoints.LatestRestored; r != nil {
		restored = r.ID
	}
	for _, h := range p.Checkpoints.History {
		restoredSavepoint = restoredSavepoint && !h.Savepoint
	}
	j.true("Flink took no savepoint", restoredSavepoint, p.Checkpoints.History)
	j.t.Logf("Flink: statuses %v, restored %d, count's key groups %v", flinkPath(&p), restored, flinkKeyGroups(&p, "count"))
	if sl == nil {
		return
	}
	ph := sl.phases[0]
	slRestored := map[int64]bool{}
	for _, e := range ph.restores {
		if e.Checkpoint > 0 { // the first deployment restores nothing (checkpoint 0)
			slRestored[e.Checkpoint] = true
		}
	}
	noSavepoint := true
	for _, h := range ph.history {
		noSavepoint = noSavepoint && !h.Savepoint
	}
	j.equal("no savepoint taken", noSavepoint, restoredSavepoint)
	j.equal("the checkpoint the rescaled job restored", keysOf(slRestored), []int64{restored})
	j.equal("count's key-group ranges after the TaskManager joined", ph.finalKeyGroups["count"], flinkKeyGroups(&p, "count"))
	path := jobPath(ph.statusesAfterFault)
	if len(path) > 0 && path[0] == "RUNNING" {
		path = path[1:]
	}
	j.equal("job statuses after the TaskManager joined", path, flinkPath(&p))
}

// restartKeepsPreviousSlots: with local recovery on, a restarted subtask
// goes back to the slot it held (Flink's JobMaster picks
// PreviousAllocationSlotSelectionStrategy when StateRecoveryOptions.LOCAL_RECOVERY
// is on, SlotSelectionStrategyUtils), so its local copy of the state is on
// the same TaskManager; the subtasks of a lost TaskManager take a free slot.
// Three TaskManagers of one slot; the job (two slot-sharing groups) runs on
// two; count#0's TaskManager is lost with no replacement, the job is one
// region, so every subtask restarts: the other TaskManager's subtasks stay,
// the lost ones go to the third. Without the preference, StateLab gives
// subtask i the i-th free slot, which would move the survivors.
func restartKeepsPreviousSlots() *scenario {
	return restartPlacement(true)
}

// restartPlacement is restartKeepsPreviousSlots with local recovery on or
// off. Off, Flink's JobMaster picks LocationPreferenceSlotSelectionStrategy
// and the restarted subtasks' placement varied from run to run (three runs
// on Flink 2.3.0: once the survivors moved to the third TaskManager and the
// lost ones to the survivors', as StateLab's i-th free slot does; twice
// otherwise), so only the placement with local recovery is compared.
func restartPlacement(localRecovery bool) *scenario {
	return &scenario{
		name: "restart-keeps-previous-slots",
		claim: "With local recovery on (execution.state-recovery.from-local) a restarted subtask is placed back in the slot it " +
			"held (PreviousAllocationSlotSelectionStrategy), so it can read its local state copy; the subtasks of a lost " +
			"TaskManager take a free slot on another",
		spec: wordCount(2, "exactly-once", map[string]any{"interval": "50ms", "localRecovery": localRecovery},
			map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "100ms"}),
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {genLines(86, 80, 3)}},
		phases: []phase{{
			// Millis -1: no replacement TaskManager (the third one is free)
			flinkFaults:    []flinkFault{{Kind: "tm-lost", Task: "count#0", AfterRecords: 20, Millis: -1}},
			statelabFaults: []slFault{{cmd: engine.CmdCrashTaskManager, task: "count#0", afterRecords: 20}},
			awaitFaults:    true,
		}},
		taskManagers: 3,
		slots:        1,
		check:        checkPlacement(localRecovery),
		differs: []difference{
			{why: "Flink notices a killed TaskManager after heartbeat.timeout (50 s) or when its process exits " +
				"(MiniCluster's terminateTaskManager tells the JobManager at once); StateLab waits 100 ms of job time " +
				"by default, so a lesson does not stall", ui: "explain.simplified.heartbeat"},
		},
	}
}

// stayedAndMoved splits the subtasks that ran on a TaskManager other than
// the lost one into those placed on the same TaskManager after the restart
// and those that moved, and lists where the lost TaskManager's went (by
// whether it is a TaskManager that ran none of the job's subtasks before).
func stayedAndMoved(before, after map[string]string, lost string) (stayed, moved, lostToFree []string) {
	used := map[string]bool{}
	for _, tm := range before {
		used[tm] = true
	}
	for task, tm := range before {
		switch {
		case tm == lost:
			if a := after[task]; a != "" && !used[a] {
				lostToFree = append(lostToFree, task)
			}
		case after[task] == tm:
			stayed = append(stayed, task)
		default:
			moved = append(moved, task)
		}
	}
	return sorted(stayed), sorted(moved), sorted(lostToFree)
}

func checkPlacement(localRecovery bool) func(j *judge, sl *slResult, fl *trace) {
	return func(j *judge, sl *slResult, fl *trace) { checkPreviousSlots(j, sl, fl, localRecovery) }
}

func checkPreviousSlots(j *judge, sl *slResult, fl *trace, localRecovery bool) {
	p := fl.Phases[0]
	require.Len(j.t, p.LostTaskManagers, 1, "Flink lost one TaskManager")
	var lost struct {
		ResourceID string              `json:"resourceId"`
		ByTM       map[string][]string `json:"subtasksByTaskManager"`
	}
	require.NoError(j.t, json.Unmarshal(p.LostTaskManagers[0], &lost))
	before := map[string]string{}
	for tm, tasks := range lost.ByTM {
		for _, task := range tasks {
			before[task] = tm
		}
	}
	after := map[string]string{}
	for _, v := range p.Vertices {
		name := strings.TrimPrefix(v.Name, "Source: ")
		for _, st := range v.Subtasks {
			after[fmt.Sprintf("%s#%d", name, st.Subtask)] = st.TaskManager
		}
	}
	flStayed, flMoved, flFree := stayedAndMoved(before, after, lost.ResourceID)
	j.t.Logf("Flink: before %v, after %v; lost %s", before, after, lost.ResourceID)
	j.true("Flink restarted every subtask (one region)", len(p.RestartedSubtasks) == 8, p.RestartedSubtasks)
	if localRecovery {
		j.true("Flink put every subtask of the lost TaskManager on the free one", len(flFree) == len(lost.ByTM[lost.ResourceID]) && len(flFree) > 0, flFree)
	}
	checkExactOutput(j, sl, fl, wordCountOutput(catalogueLines("restart-keeps-previous-slots")...))
	if sl == nil {
		return
	}
	q := sl.phases[0]
	slLost := q.placedAtFault["count#0"]
	slStayed, slMoved, slFree := stayedAndMoved(q.placedAtFault, q.placedAtEnd, slLost)
	j.t.Logf("StateLab: before %v, after %v; lost %s", q.placedAtFault, q.placedAtEnd, slLost)
	j.equal("the subtasks of the surviving TaskManager placed back on it", slStayed, flStayed)
	j.equal("the subtasks of the surviving TaskManager that moved", slMoved, flMoved)
	j.equal("the lost TaskManager's subtasks placed on the free TaskManager", slFree, flFree)
}
