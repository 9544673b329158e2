package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/state"
)

// procAlertsJob is alertsJob timing out on processing time (Flink's
// processing-time CountWithTimeoutFunction): a rate-limited source, so
// the input takes about 150 ms of processing time and keys fall silent
// for longer than the 20 ms timeout while it runs.
func procAlertsJob(backend Backend, alertsP int) *JobSpec {
	spec := alertsJob(backend, alertsP, "20ms")
	spec.Operators[0].Options["rate"] = 1000.0
	spec.Operators[1].Options["timeDomain"] = TimeDomainProcessing
	return spec
}

// topicCounts counts the source topic's records per key: the reference.
// Every event joins exactly one session, so once every timer has fired
// and committed, a key's alerts add up to its records.
func topicCounts(c *core) map[string]int64 {
	tp := c.topics["source"]
	var recs []Record
	for p := range tp.partitions {
		recs = tp.read(recs, p, 0, int(tp.end(p)))
	}
	out := map[string]int64{}
	for _, r := range recs {
		out[r.Key]++
	}
	return out
}

// alertSums adds up the committed alerts' counts per key.
func alertSums(c *core) (sums map[string]int64, alerts int) {
	committed, _ := c.sinks["sink"].view(true)
	sums = map[string]int64{}
	for _, r := range committed {
		sums[r.Key] += r.Value
	}
	return sums, len(committed)
}

// procTimers lists the processing-time timers the alerts subtasks hold.
func procTimers(t *testing.T, s *Stepper) []state.Timer {
	t.Helper()
	var out []state.Timer
	for _, o := range s.Snapshot().Job.Operators {
		if o.ID != "alerts" {
			continue
		}
		for _, st := range o.Subtasks {
			v, err := s.TaskState(st.Name, 0)
			require.NoError(t, err)
			for _, tm := range v.Timers {
				if tm.Domain == state.ProcessingTime {
					out = append(out, tm)
				}
			}
		}
	}
	return out
}

// finishProcAlerts runs until the input is read, every processing-time
// timer has fired and everything is committed.
func finishProcAlerts(t *testing.T, s *Stepper) {
	t.Helper()
	for range 200 {
		s.Steps(500)
		if len(procTimers(t, s)) == 0 {
			runToEnd(t, s)
			if len(procTimers(t, s)) == 0 {
				return
			}
		}
	}
	t.Fatalf("processing-time timers still pending: %v", procTimers(t, s))
}

// checkAlertSums compares the committed alerts with the topic.
func checkAlertSums(t *testing.T, s *Stepper) int {
	t.Helper()
	s.mu.Lock()
	want := topicCounts(s.c)
	got, n := alertSums(s.c)
	s.mu.Unlock()
	assert.Equal(t, want, got, "every event is counted in exactly one committed alert")
	return n
}

// Processing-time timers fire on the Stepper: keys alert while the input
// still flows, and every event ends in exactly one alert.
func TestProcessingTimeAlertsFireOnStepper(t *testing.T) {
	s, log := newTestStepper(t, procAlertsJob(BackendMemory, 2))
	s.Steps(150)
	require.NotEmpty(t, procTimers(t, s), "each event registers a processing-time timer")
	finishProcAlerts(t, s)
	n := checkAlertSums(t, s)
	assert.Greater(t, n, 40, "keys alert more than once: timers fire while the input flows")
	fired := log.kinds(EvTimerFired)
	assert.Len(t, fired, n, "one timer-fired event per alert")
	for _, e := range fired {
		assert.Contains(t, e.Message, "fired at processing time", e.Message)
	}
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.False(t, cmp[0].Supported, "processing-time output has no ground truth from the topic")
	assert.Contains(t, cmp[0].Reason, "processing-time")
}

// A processing-time timer checkpointed in the keyed backend fires exactly
// once after a crash and a restore, and after a rescale 2 -> 3.
func TestProcessingTimeTimersFireOnceAfterCrashAndRescale(t *testing.T) {
	for _, backend := range []Backend{BackendMemory, BackendPebble} {
		t.Run(string(backend), func(t *testing.T) {
			s, _ := newTestStepper(t, procAlertsJob(backend, 2))
			s.Steps(120)
			completeCheckpoint(t, s)
			require.NotEmpty(t, procTimers(t, s), "timers are pending at the checkpoint")
			s.Steps(60)
			require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "alerts#0"}))
			_, err := s.RunUntil(runningAgain(2), 20000)
			require.NoError(t, err)
			s.Steps(40)
			completeCheckpoint(t, s)
			require.NotEmpty(t, procTimers(t, s), "timers are pending at the rescale's savepoint")
			rescaleTo(t, s, "alerts", 3)
			require.NotEmpty(t, procTimers(t, s), "the rescale moved the timers with their key groups")
			finishProcAlerts(t, s)
			checkAlertSums(t, s)
		})
	}
}

// A restored processing-time timer whose time has passed fires at once
// (Flink's InternalTimerServiceImpl.startTimerService schedules the
// earliest restored timer, and a timer in the past runs immediately): the
// restart delay (200 ms) is longer than the timeout (20 ms), so every timer
// restored from the checkpoint is overdue, and each fires once, right after
// its subtask restored.
func TestRestoredProcessingTimeTimersDueFireAtOnce(t *testing.T) {
	spec := procAlertsJob(BackendMemory, 2)
	spec.Restart.Delay = ms(200)
	s, log := newTestStepper(t, spec)
	s.Steps(120)
	completeCheckpoint(t, s)
	checkpointed := procTimers(t, s)
	require.NotEmpty(t, checkpointed)
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "alerts#0"}))
	_, err := s.RunUntil(runningAgain(2), 20000)
	require.NoError(t, err)
	s.Steps(200)
	restoredAt := map[string]time.Duration{}
	for _, e := range log.kinds(EvRestore) {
		if strings.HasPrefix(e.Task, "alerts#") {
			restoredAt[e.Task] = e.At // the last restore: attempt 2
		}
	}
	require.Len(t, restoredAt, 2)
	for _, tm := range checkpointed {
		task := ""
		for name := range restoredAt {
			v, err := s.TaskState(name, 0)
			require.NoError(t, err)
			if v.KeyGroups != nil && tm.KeyGroup >= v.KeyGroups.Start && tm.KeyGroup <= v.KeyGroups.End {
				task = name
			}
		}
		require.NotEmpty(t, task, "timer %v belongs to a subtask", tm)
		at := restoredAt[task]
		require.LessOrEqual(t, time.Duration(tm.Timestamp)*time.Millisecond, at, "timer %v is overdue at the restore", tm)
		what := fmt.Sprintf("timer %d of %s fired", tm.Timestamp, tm.Key)
		var fired []Event
		for _, e := range log.kinds(EvTimerFired) {
			if e.Task == task && e.At >= at && strings.Contains(e.Message, what) {
				fired = append(fired, e)
			}
		}
		if assert.Len(t, fired, 1, "%s once after the restore", what) {
			assert.Less(t, fired[0].At-at, 5*time.Millisecond, "%s at once, not a timeout later", what)
		}
	}
	finishProcAlerts(t, s)
	checkAlertSums(t, s)
}

// An idle Stepper, with nothing to do but a processing-time timer in the
// future, advances its clock to that timer (and not to a later JobManager
// timer: the periodic checkpoint an hour away).
func TestIdleStepperAdvancesToProcessingTimeTimer(t *testing.T) {
	spec := procAlertsJob(BackendMemory, 2)
	spec.Operators[0].Options["rate"] = 0.0 // read the input at once
	spec.Operators[1].Options["timeout"] = "500ms"
	spec.Checkpointing = CheckpointingSpec{Interval: Duration(time.Hour)}
	s, log := newTestStepper(t, spec)
	idle := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.candidates(nil)) == 0
	}
	for i := 0; !idle(); i++ {
		require.Less(t, i, 100000, "the job never went idle")
		require.True(t, s.Step())
	}
	timers := procTimers(t, s)
	require.NotEmpty(t, timers, "the alerts wait for their timeouts")
	earliest := timers[0].Timestamp
	for _, tm := range timers {
		earliest = min(earliest, tm.Timestamp)
	}
	_, before := s.Position()
	due := time.Duration(earliest) * time.Millisecond
	require.Less(t, before, due, "the timer is in the future")
	fired := len(log.kinds(EvTimerFired))
	require.True(t, s.Step(), "an idle Stepper with a pending timer can step")
	_, after := s.Position()
	assert.GreaterOrEqual(t, after, due, "the clock advanced to the timer")
	assert.Less(t, after, due+time.Millisecond, "and no further than the step's own cost")
	assert.Greater(t, len(log.kinds(EvTimerFired)), fired, "the step fired the timer")
}

// Processing-time timers fire on Live too: the subtask's goroutine wakes
// up for the earliest one on the virtual clock.
func TestProcessingTimeTimersFireOnLive(t *testing.T) {
	spec := procAlertsJob(BackendMemory, 2)
	spec.Checkpointing = CheckpointingSpec{Interval: ms(50)}
	log := &eventLog{}
	l, err := NewLive(spec, Options{Dir: t.TempDir(), RecordEvents: log.add})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	require.NoError(t, l.Start(ctx))
	defer func() { _ = l.Close() }()
	want := topicCounts(l.c)
	var got map[string]int64
	var n int
	for ctx.Err() == nil {
		got, n = alertSums(l.c)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, want, got, "every event is counted in exactly one committed alert")
	assert.Greater(t, n, 40, "keys alert more than once")
	for _, e := range log.kinds(EvTimerFired) {
		assert.True(t, strings.Contains(e.Message, "fired at processing time"), e.Message)
	}
}

// The alerts operator's timeDomain option takes event or processing, and
// says so when it gets anything else.
func TestAlertsTimeDomainOption(t *testing.T) {
	spec := procAlertsJob(BackendMemory, 2)
	o, err := parseOptions(&spec.Operators[1])
	require.NoError(t, err)
	assert.Equal(t, TimeDomainProcessing, o.TimeDomain)
	spec.Operators[1].Options = map[string]any{"timeout": "1s"}
	o, err = parseOptions(&spec.Operators[1])
	require.NoError(t, err)
	assert.Equal(t, TimeDomainEvent, o.TimeDomain, "event time is the default")
	spec.Operators[1].Options["timeDomain"] = "wall-clock"
	_, err = NewStepper(spec, Options{Dir: t.TempDir()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `option "timeDomain": want event`)
}
