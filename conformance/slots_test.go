package conformance

import (
	"strings"

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
