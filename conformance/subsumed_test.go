package conformance

import (
	"fmt"
	"sort"
	"strings"

	"github.com/statelab/statelab/engine"
)

// Barrier n+1 before barrier n. With aligned barriers every channel carries
// n before n+1, so a subtask sees barrier n+1 first only when an upstream
// task never sent barrier n. Flink has such a task: a source whose reader is
// an ExternallyInducedSourceReader decides itself when its task takes a
// checkpoint (shouldTriggerCheckpoint); SourceOperatorStreamTask keeps the
// coordinator's trigger of n as untriggered until the reader induces n, and
// once the reader induced n+1 it drops the older triggers
// (cleanupOldCheckpoints) with no barrier, acknowledgement or decline.
// flinkref's skip-checkpoint fault makes source#1's reader such a reader and
// has it induce every checkpoint but n (PartitionSource.InducedReader);
// StateLab's Options.SkipCheckpoint drops source#1's trigger of n.
// Downstream, count#0 and count#1 align checkpoint n on tokenizer#0's
// channel when tokenizer#1's channel brings barrier n+1:
// SingleCheckpointBarrierHandler.checkNewCheckpoint aborts n with
// CHECKPOINT_DECLINED_SUBSUMED, CheckpointFailureManager does not count that
// reason, and n+1 completes.

// skipCheckpoint is the slFault that makes a source subtask take no part in
// one checkpoint (engine.Options.SkipCheckpoint), as flinkref's
// skip-checkpoint fault does with an externally induced source reader.
const skipCheckpoint = "skip-checkpoint"

// stepNewerWhilePending: a checkpoint by hand (n) and, once n's barrier
// reached the subtasks that align it, a second one (n+1) while n is pending
// (max-concurrent-checkpoints 2); waits for both to end, a failure of either
// being the step's outcome, not an error. Flink: flinkref's
// checkpoint-while-pending step, which asks for the second once the
// scenario's stall-checkpoint faults fired (here a stall of 0 ms at
// tokenizer#0's snapshot of n, which Flink takes after it forwarded barrier
// n); StateLab: the second is asked for once every subtask of
// subsumedAligner aligns n.
const stepNewerWhilePending = "checkpoint-newer-while-pending"

// subsumedAligner is the operator whose subtasks align checkpoint n when
// stepNewerWhilePending asks for n+1 on StateLab.
const subsumedAligner = "count"

func checkpointSubsumed() *scenario {
	return &scenario{
		name: "newer-barrier-subsumes-pending",
		claim: "A subtask aligning checkpoint n that gets barrier n+1 on another input gives n up " +
			"(SingleCheckpointBarrierHandler.checkNewCheckpoint): n fails with CHECKPOINT_DECLINED_SUBSUMED, which " +
			"CheckpointFailureManager does not count, so with tolerable-failed-checkpoints 0 the job runs on, and n+1 " +
			"completes. Word count at 2, max-concurrent-checkpoints 2, checkpoints by hand; source#1 never emits " +
			"barrier n (Flink: an externally induced source reader that induces every checkpoint but n)",
		// An interval (never reached): with no interval Flink takes
		// checkpoints by hand with CheckpointBarrierTracker, which does not
		// align (found by running it: StreamingJobGraphGenerator makes the
		// barriers AT_LEAST_ONCE when no periodic checkpoints are
		// configured), and nothing is subsumed.
		spec:       wordCount(2, "exactly-once", map[string]any{"interval": "2000000h", "timeout": "10s", "maxConcurrent": 2, "tolerableFailed": 0}, nil),
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {genLines(103, 40, 3), genLines(104, 10, 3)}},
		phases: []phase{{
			// Flink: no checkpoint id, so flinkref's step arms both faults
			// with the id of the first checkpoint it triggers: Flink 2.3.0
			// took one or two periodic checkpoints of its own as the job
			// started (with this interval too, and before the steps), so its
			// ids are not StateLab's. StateLab takes none: the step's first
			// is checkpoint 2 there. The 0 ms stall only marks when
			// flinkref's step asks for n+1 (StateLab's step waits for the
			// alignment itself).
			flinkFaults: []flinkFault{
				{Kind: skipCheckpoint, Task: "source#1"},
				{Kind: "stall-checkpoint", Task: "tokenizer#0", Millis: 0},
			},
			statelabFaults: []slFault{{cmd: skipCheckpoint, task: "source#1", checkpoint: 2}},
			steps:          []string{stepCheckpoint, stepNewerWhilePending},
			cancel:         true,
		}},
		slots: 4,
		check: checkSubsumed,
	}
}

// runNewerWhilePending is stepNewerWhilePending on StateLab. It returns n.
func runNewerWhilePending(s *engine.Stepper) (int64, error) {
	var last int64
	for _, h := range s.Snapshot().Checkpoints.History {
		last = max(last, h.ID)
	}
	n := last + 1
	if err := s.Do(engine.Command{Name: engine.CmdTriggerCheckpoint}); err != nil {
		return 0, err
	}
	if _, err := s.RunUntil(func(sn *engine.Snapshot) bool {
		for _, o := range sn.Job.Operators {
			if o.ID != subsumedAligner {
				continue
			}
			for _, st := range o.Subtasks {
				if st.Aligning != n {
					return false
				}
			}
		}
		return true
	}, stepsPerPhase); err != nil {
		return n, fmt.Errorf("waiting for %s to align checkpoint %d: %w", subsumedAligner, n, err)
	}
	if err := s.Do(engine.Command{Name: engine.CmdTriggerCheckpoint}); err != nil {
		return n, err
	}
	_, err := s.RunUntil(func(sn *engine.Snapshot) bool {
		ended := 0
		for _, h := range sn.Checkpoints.History {
			if h.ID >= n && h.Status != engine.CheckpointInProgress {
				ended++
			}
		}
		return ended == 2
	}, stepsPerPhase)
	if err != nil {
		return n, fmt.Errorf("waiting for checkpoints %d and %d: %w", n, n+1, err)
	}
	return n, nil
}

// ackedPast: whether any of acked is a subtask that must not acknowledge
// checkpoint n: count (it declined), sink (behind count), or source#1 and
// tokenizer#1 (source#1 skipped n). Which of source#0 and tokenizer#0 did
// before n failed depends on timing (their acknowledgements race the
// decline), so it is logged, not compared.
func ackedPast(acked []string) bool {
	for _, a := range acked {
		if a != "source#0" && a != "tokenizer#0" {
			return true
		}
	}
	return false
}

// subsumedReason is the CheckpointFailureReason a Flink failure message
// names (CheckpointFailureReason's messages), "" for another.
func subsumedReason(msg string) string {
	switch {
	case strings.Contains(msg, "barrier from newer checkpoint"):
		return string(engine.CheckpointDeclinedSubsumed)
	case strings.Contains(msg, "Checkpoint has been subsumed"):
		return string(engine.CheckpointSubsumed)
	}
	return ""
}

// checkSubsumed compares, for checkpoints n-1 (the step by hand before), n
// (skipped by source#1) and n+1: how each ended (the failed one's
// CheckpointFailureReason), that no subtask past the aligning one
// acknowledged checkpoint n, that the job neither failed over nor restarted a
// subtask (tolerable-failed-checkpoints 0), and the committed output.
func checkSubsumed(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	// n: the checkpoint source#1 skipped (the step's first)
	var n int64
	for _, e := range p.Events {
		if e.Event == skipCheckpoint && e.Task == "source#1" {
			n = e.Checkpoint
		}
	}
	j.true("Flink's source#1 reader skipped a checkpoint", n > 1, p.Events)
	var fEnded []string
	var fAcked []string
	fReason := ""
	for _, h := range p.Checkpoints.History {
		if h.Savepoint || h.ID < n-1 || h.ID > n+1 {
			continue
		}
		fEnded = append(fEnded, fmt.Sprintf("n%+d %s", h.ID-n, h.Status))
		if h.ID == n {
			fReason = subsumedReason(h.Failure)
			for task := range h.AlignmentBy {
				fAcked = append(fAcked, strings.TrimPrefix(task, "Source: "))
			}
			j.t.Logf("Flink: checkpoint %d's failure: %q", n, h.Failure)
		}
	}
	sort.Strings(fAcked)
	fRestarting := false
	for _, s := range p.StatusTransitions {
		fRestarting = fRestarting || s.Status == "RESTARTING" || s.Status == "FAILING"
	}
	for _, st := range p.Steps {
		if st.Error != "" {
			j.t.Logf("Flink's step %s: %s", st.Kind, st.Error)
		}
	}
	j.t.Logf("Flink: source#1 skipped checkpoint n = %d; checkpoints %v, n failed as %s, acknowledged by %v; statuses %v",
		n, fEnded, fReason, fAcked, p.StatusTransitions)
	j.true("Flink: checkpoints n-1 and n+1 completed, n failed", fmt.Sprint(fEnded) == "[n-1 COMPLETED n+0 FAILED n+1 COMPLETED]", fEnded)
	j.true("Flink: no failover, no subtask restarted", !fRestarting && len(p.RestartedSubtasks) == 0, p.RestartedSubtasks)
	checkExactOutput(j, sl, fl, wordCountOutput(catalogueLines("newer-barrier-subsumes-pending")[:1]...))
	if sl == nil {
		return
	}
	sp := sl.phases[0]
	var sEnded []string
	var sAcked []string
	sReason := ""
	const sn = 2 // the checkpoint StateLab's source#1 skips
	for _, h := range sp.history {
		if h.Savepoint || h.ID < sn-1 || h.ID > sn+1 {
			continue
		}
		sEnded = append(sEnded, fmt.Sprintf("n%+d %s", h.ID-sn, h.Status))
		if h.ID == sn {
			for task := range h.Alignment {
				sAcked = append(sAcked, task)
			}
		}
	}
	sort.Strings(sAcked)
	for _, f := range sp.failedCheckpoints {
		if f.ID == sn {
			sReason = f.Reason
			j.t.Logf("StateLab: checkpoint %d's failure: %q", sn, f.Message)
		}
	}
	j.t.Logf("StateLab: source#1 skipped checkpoint n = 2; checkpoints %v, n failed as %s, acknowledged by %v; restarted %v, restart attempts %d",
		sEnded, sReason, sAcked, sp.restarted, sp.restartAttempt)
	j.equal("how checkpoints n-1, n and n+1 ended", sEnded, fEnded)
	j.equal("why checkpoint n failed (CheckpointFailureReason)", sReason, fReason)
	j.equal("a subtask at or past the aligning count, or on source#1's path, acknowledged checkpoint n",
		ackedPast(sAcked), ackedPast(fAcked))
	j.equal("the job failed over or restarted a subtask (the failure not counted)",
		len(sp.restarted) > 0 || sp.restartAttempt > 0 || sp.finalStatus == string(engine.JobFailed), fRestarting)
}
