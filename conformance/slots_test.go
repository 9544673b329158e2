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
	// RESTARTING to FAILING (wall clock, a lower bound: at least the timeout).
	var waitFrom, failedAt int64 = -1, -1
	for k, st := range p.StatusTransitions {
		if st.Status == "RUNNING" && k > 0 && p.StatusTransitions[k-1].Status == "RESTARTING" {
			waitFrom = st.AtMillis
		}
		if st.Status == "FAILING" && failedAt < 0 {
			failedAt = st.AtMillis
		}
	}
	j.true("Flink waited slot.request.timeout (2 s) for the slots", waitFrom >= 0 && failedAt-waitFrom >= 2000, []int64{waitFrom, failedAt})
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
