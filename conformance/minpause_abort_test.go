package conformance

import (
	"sort"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// minPauseAfterExpired: periodic checkpoints every 100 ms with a min pause
// of 250 ms and a checkpoint timeout of 300 ms; count#0's synchronous
// snapshot of checkpoint 2 stalls 450 ms, so checkpoint 2 expires
// (tolerable-failed-checkpoints 10: the job keeps running). Flink's min
// pause counts from the last completed checkpoint only
// (CheckpointCoordinator.lastCheckpointCompletionRelativeTime is set in
// cleanupAfterCompletedCheckpoint, never on an abort;
// CheckpointRequestDecider.nextTriggerDelayMillis reads it): when 2
// expires, more than the pause has passed since 1 completed, so the tick
// queued during 2 starts checkpoint 3 at once, not a min pause after the
// abort.
func minPauseAfterExpired() *scenario {
	return &scenario{
		name: "min-pause-after-expired-checkpoint",
		claim: "The min pause counts from the last completed checkpoint, not from an aborted one: with min-pause 250 ms, " +
			"interval 100 ms and timeout 300 ms, the checkpoint after one that expired is triggered as soon as it expired " +
			"(a tick queued meanwhile), while each checkpoint after a completed one waits the pause",
		spec:       pacedWordCount(map[string]any{"interval": "100ms", "minPause": "250ms", "timeout": "300ms", "tolerableFailed": 10}),
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {{}, genLines(101, 1500, 3), genLines(102, 10, 3)}},
		phases: []phase{{
			flinkFaults: []flinkFault{
				{Kind: "slow", Task: "source#0", Millis: 2},
				{Kind: "slow", Task: "source#1", Millis: 2},
				{Kind: "stall-checkpoint", Task: "count#0", Checkpoint: 2, Millis: 450},
			},
			statelabFaults: []slFault{{cmd: stallSnapshot, task: "count#0", checkpoint: 2, stall: 450 * time.Millisecond}},
			steps:          []string{stepRead},
			cancel:         true,
			periodicSteps:  true,
		}},
		slots:        4,
		flinkCluster: map[string]string{"web.checkpoints.history": "1000"},
		check: func(j *judge, sl *slResult, fl *trace) {
			checkPauseAfterAbort(j, sl, fl, 2, 100*time.Millisecond, 250*time.Millisecond)
		},
	}
}

// pauseGaps gives, for the spans sorted by trigger, the gap from failed's
// end to the next trigger (-1: none) and the least gap from a completed
// checkpoint's end to the next trigger (-1: none).
func pauseGaps(sp []span, failed int64) (afterFailed, leastAfterCompleted time.Duration) {
	sort.Slice(sp, func(a, b int) bool { return sp[a].Trigger < sp[b].Trigger })
	afterFailed, leastAfterCompleted = -1, -1
	for i := 1; i < len(sp); i++ {
		g := sp[i].Trigger - sp[i-1].End
		if sp[i-1].ID == failed {
			afterFailed = g
		}
		if sp[i-1].Status == engine.CheckpointCompleted { // Flink's status too
			if leastAfterCompleted < 0 || g < leastAfterCompleted {
				leastAfterCompleted = g
			}
		}
	}
	return afterFailed, leastAfterCompleted
}

// checkPauseAfterAbort compares when the checkpoint after the expired one
// is triggered: within a quarter interval of its failure (the min pause
// counted from the last completed checkpoint, long past) or only a pause
// after it; and that after every completed checkpoint the next waits the
// pause. Flink's spans end at the latest acknowledgement or the failure.
func checkPauseAfterAbort(j *judge, sl *slResult, fl *trace, failed int64, interval, pause time.Duration) {
	require.Len(j.t, fl.Phases, 1)
	var f []span
	fExpired := false
	for _, h := range fl.Phases[0].Checkpoints.History {
		end := h.LatestAckTimestamp
		if h.Status == "FAILED" {
			end = h.FailureTimestamp
		}
		if h.Savepoint || (h.Status != "COMPLETED" && h.Status != "FAILED") || end < 0 {
			continue
		}
		if h.ID == failed {
			fExpired = h.Status == "FAILED" && strings.HasPrefix(h.Failure, flinkExpired)
		}
		f = append(f, span{ID: h.ID, Status: h.Status, Trigger: time.Duration(h.TriggerTimestamp) * time.Millisecond, End: time.Duration(end) * time.Millisecond})
	}
	fAfter, fLeast := pauseGaps(f, failed)
	j.t.Logf("Flink: %d checkpoints, checkpoint %d expired: %v; the next was triggered %v after it failed; least gap after a completed one %v",
		len(f), failed, fExpired, fAfter, fLeast)
	j.true("Flink's checkpoint expired", fExpired, f)
	j.true("Flink took several periodic checkpoints after it", len(f) >= 4, f)
	if sl == nil {
		return
	}
	var s []span
	sExpired := false
	for _, fc := range sl.phases[0].failedCheckpoints {
		if fc.ID == failed {
			sExpired = fc.Reason == string(engine.CheckpointExpired)
		}
	}
	for _, h := range sl.phases[0].history {
		if h.Savepoint || (h.Status != engine.CheckpointCompleted && h.Status != engine.CheckpointFailed) {
			continue
		}
		s = append(s, span{ID: h.ID, Status: h.Status, Trigger: h.Trigger, End: h.End})
	}
	sAfter, sLeast := pauseGaps(s, failed)
	j.t.Logf("StateLab: %d checkpoints, checkpoint %d expired: %v; the next was triggered %v after it failed; least gap after a completed one %v",
		len(s), failed, sExpired, sAfter, sLeast)
	j.true("StateLab took several periodic checkpoints after it", len(s) >= 4, s)
	j.equal("the checkpoint expired", sExpired, fExpired)
	j.equal("the next checkpoint triggered within a quarter interval after the expired one failed (no min pause from an abort)",
		sAfter >= 0 && sAfter < interval/4, fAfter >= 0 && fAfter < interval/4)
	j.equal("each checkpoint after a completed one triggered at least the min pause after it", sLeast >= pause, fLeast >= pause)
}
