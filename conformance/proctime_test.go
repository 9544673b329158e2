package conformance

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// procTimersDueAfterRestore: processing-time alerts (timeout 2 s) for
// single-word lines; once a checkpoint completed after the sources read all
// 30 records source#0 fails (flinkref: a throw on a poll, onPoll; StateLab:
// crash-subtask once it read them and a checkpoint completed: its first
// holds them), and fixed-delay waits 3 s
// before the restart. The restored timers are then all past their time:
// they fire at once after the restore (Flink: InternalTimerServiceImpl.
// startTimerService schedules the earliest restored timer and the
// ProcessingTimeService runs one in the past immediately; StateLab:
// engine/proctime.go, a restored timer whose time has passed is due), not a
// timeout after it, and every alert is committed once. Processing time is
// the wall clock on Flink and job time on StateLab (its backoff passes
// virtually), so only the outcome is compared.
func procTimersDueAfterRestore() *scenario {
	return &scenario{
		name: "proctime-timers-due-after-restore",
		claim: "Processing-time timers restored past their time fire at once after the restore (InternalTimerServiceImpl." +
			"startTimerService): a crash once checkpoint 1 completed and a 3 s restart delay, longer than the alerts' 2 s " +
			"timeout: every alert fires after the restore, within half a timeout of it, and is committed exactly once",
		spec:       procAlertsJob(),
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {genLines(99, 30, 1)}},
		phases: []phase{{
			// Flink's fault waits until both sources read their 30 records
			// and three more checkpoints completed: the third was triggered
			// after they read them, whichever was pending then and however
			// late the runner's statistics poll saw one complete (found by
			// running Flink: waiting for any completed checkpoint, or for
			// one completed after the read, it fired after a checkpoint that
			// held none or part of the input, in a warm JVM, and the records
			// read again began new sessions); StateLab's first checkpoint
			// holds the whole input (its Stepper is deterministic)
			flinkFaults:    []flinkFault{{Kind: "throw", Task: "source#0", AfterRecords: 30, AfterCompleted: 3, OnPoll: true}},
			statelabFaults: []slFault{{cmd: engine.CmdCrashSubtask, task: "source#0", afterRecords: 15, afterCompleted: 1}},
			awaitFaults:    true,
		}},
		slots: 4,
		check: checkProcTimersDue,
	}
}

const procAlertsTimeout = 2 * time.Second

func procAlertsJob() map[string]any {
	return map[string]any{
		"name": "processing-time alerts",
		"operators": []any{op("source", "source", 2, nil),
			map[string]any{"id": "alerts", "kind": "alerts", "parallelism": 2, "maxParallelism": 128,
				"options": map[string]any{"timeout": procAlertsTimeout.String(), "timeDomain": "processing"}},
			op("sink", "sink", 2, map[string]any{"semantics": "exactly-once"})},
		"edges":         []any{edge("source", "alerts", "hash"), edge("alerts", "sink", "rebalance")},
		"checkpointing": map[string]any{"interval": "100ms"},
		"restart":       map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "3s"},
	}
}

// firedAfterRestore is how a side's alerts fired: before the crash, after
// it, how many of those were past their time when the subtask restored,
// and the longest time from the restore to one firing.
type firedAfterRestore struct {
	Before, After, Overdue int
	Longest                time.Duration
}

func (f firedAfterRestore) outcome() []any {
	return []any{f.Before, f.After, f.Overdue == f.After, f.Longest < procAlertsTimeout/2}
}

func checkProcTimersDue(j *judge, sl *slResult, fl *trace) {
	require.Len(j.t, fl.Phases, 1)
	p := fl.Phases[0]
	j.true("Flink restarted after the crash", len(p.RestartedSubtasks) > 0, p.RestartedSubtasks)
	// Each word of the input is one key's one session: its alert counts it.
	want := map[string]int{}
	n := map[string]int{}
	for _, ls := range catalogueLines("proctime-timers-due-after-restore") {
		for _, l := range ls {
			for _, w := range strings.Fields(l) {
				n[strings.ToLower(w)]++
			}
		}
	}
	for w, c := range n {
		want[fmt.Sprintf("%s=%d", w, c)]++
	}
	checkExactOutput(j, sl, fl, want)
	var f firedAfterRestore
	for _, e := range p.Events {
		if e.Event != "alert" || e.Operator != "alerts" {
			continue
		}
		if e.Attempt == 0 {
			f.Before++
			continue
		}
		f.After++
		if e.Timer < e.OpenedAt {
			f.Overdue++
		}
		f.Longest = max(f.Longest, time.Duration(e.FiredAt-e.OpenedAt)*time.Millisecond)
	}
	j.t.Logf("Flink: %+v (of %d keys)", f, len(want))
	if sl == nil {
		return
	}
	q := sl.phases[0]
	var s firedAfterRestore
	// Each alerts subtask's restore of a checkpoint (the first deployment's
	// restores checkpoint 0), then the timers it fired, in job time (a
	// restore before a timer fired at the same instant).
	events := append(append([]engine.Event{}, q.restores...), q.timersFired...)
	sort.SliceStable(events, func(a, b int) bool { return events[a].At < events[b].At })
	restoredAt := map[string]time.Duration{}
	for _, e := range events {
		if e.Kind == engine.EvRestore {
			if e.Checkpoint > 0 {
				restoredAt[e.Task] = e.At
			}
			continue
		}
		at, ok := restoredAt[e.Task]
		if !ok {
			s.Before++
			continue
		}
		var ts int64
		if k := strings.Index(e.Message, ": timer "); k >= 0 {
			fmt.Sscanf(e.Message[k+len(": timer "):], "%d", &ts)
		}
		s.After++
		if time.Duration(ts)*time.Millisecond < at {
			s.Overdue++
		}
		s.Longest = max(s.Longest, e.At-at)
	}
	j.t.Logf("StateLab: %+v", s)
	j.equal("alerts fired before the crash, after the restore, all of them past their time then, all within half a timeout of it",
		s.outcome(), f.outcome())
}
