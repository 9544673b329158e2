package engine

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/state"
)

// alertsJob: words keyed by line, an alerts operator with an event-time
// timeout, and a two-phase-commit sink. Timestamps are record indexes (ms),
// so rare words are silent for longer than the timeout and alert.
func alertsJob(backend Backend, alertsP int, timeout string) *JobSpec {
	return &JobSpec{
		Name: "alerts", Seed: 11,
		Operators: []OperatorSpec{
			{ID: "source", Kind: KindSource, Parallelism: 2, Options: map[string]any{"partitions": 4, "records": 600, "keys": 40, "wordsPerLine": 1}},
			{ID: "alerts", Kind: KindAlerts, Parallelism: alertsP, MaxParallelism: 128, Options: map[string]any{"timeout": timeout}},
			{ID: "sink", Kind: KindSink, Parallelism: 1},
		},
		Edges: []EdgeSpec{
			{From: "source", To: "alerts", Partitioner: Hash},
			{From: "alerts", To: "sink", Partitioner: Rebalance},
		},
		Backend: backend,
		// Checkpoints by hand, aligned: checkpointing is enabled with an
		// interval never reached (with none, barriers are counted and a
		// restore may count records twice: barriermode.go).
		Checkpointing: CheckpointingSpec{Interval: intervalNeverReached},
		Cluster:       ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 4},
		Runtime:       RuntimeSpec{FIFO: true},
		Restart:       RestartSpec{Strategy: RestartFixedDelay, Attempts: 100, Delay: ms(1)},
	}
}

// pendingTimers counts the timers held by the alerts subtasks now.
func pendingTimers(t *testing.T, s *Stepper) int {
	t.Helper()
	n := 0
	for _, o := range s.Snapshot().Job.Operators {
		if o.ID != "alerts" {
			continue
		}
		for _, st := range o.Subtasks {
			v, err := s.TaskState(st.Name, 0)
			require.NoError(t, err)
			n += len(v.Timers)
		}
	}
	return n
}

// Without failures the alerts are the truth's: one per silence, computed
// from the topic alone.
func TestAlertsMatchTheTruth(t *testing.T) {
	s, log := newTestStepper(t, alertsJob(BackendMemory, 2, "60ms"))
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	require.True(t, cmp[0].Supported, cmp[0].Reason)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
	assert.Greater(t, cmp[0].Expected, 40, "the job alerts more than once per key")
	assert.Len(t, log.kinds(EvTimerFired), cmp[0].Committed, "one timer-fired event per alert")
}

// A timer checkpointed in the keyed backend fires after a crash and a
// restore, and after a rescale (2->3 and 3->2): the committed alerts are
// exactly once, on every backend.
func TestTimersFireAfterCrashAndRescale(t *testing.T) {
	for _, backend := range []Backend{BackendMemory, BackendFS, BackendPebble} {
		for _, pp := range [][2]int{{2, 3}, {3, 2}} {
			t.Run(fmt.Sprintf("%s_%dto%d", backend, pp[0], pp[1]), func(t *testing.T) {
				s, _ := newTestStepper(t, alertsJob(backend, pp[0], "60ms"))
				s.Steps(120)
				completeCheckpoint(t, s)
				require.Positive(t, pendingTimers(t, s), "timers are pending at the checkpoint")
				s.Steps(60)
				v, err := s.TaskState("alerts#0", 0)
				require.NoError(t, err)
				wmBefore := v.Watermark
				require.Positive(t, wmBefore, "the watermark had advanced before the crash")
				require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "alerts#0"}))
				_, err = s.RunUntil(runningAgain(2), 20000)
				require.NoError(t, err)
				require.Positive(t, pendingTimers(t, s), "the restore brought the timers back")
				v, err = s.TaskState("alerts#0", 0)
				require.NoError(t, err)
				assert.Less(t, v.Watermark, wmBefore, "watermarks are not checkpointed: the restored subtask starts again from its sources")
				s.Steps(100)
				rescaleTo(t, s, "alerts", pp[1])
				require.Positive(t, pendingTimers(t, s), "the rescale moved the timers with their key groups")
				runToEnd(t, s)
				assert.Zero(t, pendingTimers(t, s), "the end of input fires every timer")
				cmp, err := s.Compare()
				require.NoError(t, err)
				assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
			})
		}
	}
}

// Window timers are keyed state too: the restored backend holds them under
// Flink's state name, and windows fire from them after a restore.
func TestWindowTimersAreKeyedState(t *testing.T) {
	spec := &JobSpec{
		Name: "clicks", Seed: 5,
		Operators: []OperatorSpec{
			{ID: "source", Kind: KindSource, Parallelism: 1, Options: map[string]any{"generator": GeneratorClicks, "records": 600, "windowSize": "1s", "clicksPerWindow": 5}},
			{ID: "window", Kind: KindWindowCount, Parallelism: 2, Options: map[string]any{"size": "1s"}},
			{ID: "sink", Kind: KindSink, Parallelism: 1},
		},
		Edges: []EdgeSpec{
			{From: "source", To: "window", Partitioner: Hash},
			{From: "window", To: "sink", Partitioner: Rebalance},
		},
		Cluster: ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 4},
		Runtime: RuntimeSpec{FIFO: true},
		Restart: RestartSpec{Strategy: RestartFixedDelay, Attempts: 10, Delay: ms(1)},
	}
	s, _ := newTestStepper(t, spec)
	s.Steps(80)
	completeCheckpoint(t, s)
	v, err := s.TaskState("window#0", 0)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, e := range v.Keyed {
		names[e.State] = true
	}
	assert.True(t, names[state.TimerStateName("window-timers", state.EventTime)], "window timers are entries of %v", names)
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "window#1"}))
	_, err = s.RunUntil(runningAgain(2), 20000)
	require.NoError(t, err)
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
}
