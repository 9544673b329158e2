package engine

import (
	"time"

	"github.com/statelab/statelab/state"
)

// Processing-time timers fire on the subtask's processing-time clock, the
// driver's virtual clock (Flink's InternalTimerServiceImpl.onProcessingTime,
// called by the task's ProcessingTimeService). The timers live in the keyed
// backend (state.TimerService), so they survive a crash and move with
// their key groups on a rescale; both drivers ask a chain for its earliest
// processing-time timer and fire the due ones in the subtask's own turn:
//
//   - the Stepper makes a chain whose earliest timer is due a candidate of
//     its seeded pick, and an idle Stepper advances its clock to the
//     earliest timer (nextWake);
//   - Live's subtask goroutine fires due timers before taking input and
//     sleeps at most until the earliest one.
//
// A restored timer whose time has passed is due at once, as Flink's
// InternalTimerServiceImpl.startTimerService schedules the earliest restored
// timer and the ProcessingTimeService runs a timer in the past immediately.

// procTimeOperator is an operator with processing-time timers (Flink's
// Triggerable.onProcessingTime).
type procTimeOperator interface {
	timerService() *state.TimerService
	// onProcessingTime fires every processing-time timer due at now
	// (milliseconds of the subtask's processing time).
	onProcessingTime(t *subtask, now int64) error
}

// procTimerDue is the processing-time timers of one subtask: its timer
// service, when the operator fires processing-time timers and has one.
func (t *subtask) procTimers() (procTimeOperator, *state.TimerService) {
	if t.fn == nil || t.getStatus() != TaskRunning {
		return nil, nil
	}
	op, ok := t.fn.(procTimeOperator)
	if !ok {
		return nil, nil
	}
	ts := op.timerService()
	if ts == nil || ts.Len(state.ProcessingTime) == 0 {
		return nil, nil
	}
	return op, ts
}

// nextProcTimer returns the virtual time of the earliest processing-time
// timer of t and every subtask chained after it.
func (t *subtask) nextProcTimer() (time.Duration, bool) {
	var at time.Duration
	ok := false
	if _, ts := t.procTimers(); ts != nil {
		if tm, has := ts.Next(state.ProcessingTime); has {
			at, ok = time.Duration(tm.Timestamp)*time.Millisecond, true
		}
	}
	for _, oe := range t.outs {
		for _, ch := range oe.chans {
			if !ch.chained {
				continue
			}
			if w, has := ch.to.nextProcTimer(); has && (!ok || w < at) {
				at, ok = w, true
			}
		}
	}
	return at, ok
}

// procTimerDue reports whether a processing-time timer of t's chain is due
// at virtual time now.
func (t *subtask) procTimerDue(now time.Duration) bool {
	at, ok := t.nextProcTimer()
	return ok && at <= now
}

// fireProcTimers fires the due processing-time timers of t and of every
// subtask chained after it at t.now; what a chained subtask emits or sends
// ends in t's outputs, which the driver moves on (afterHandle).
func (t *subtask) fireProcTimers() error {
	var err error
	if op, _ := t.procTimers(); op != nil {
		err = op.onProcessingTime(t, t.NowMillis())
		t.flush()
		if err != nil {
			return err
		}
	}
	for _, oe := range t.outs {
		for _, ch := range oe.chans {
			if !ch.chained {
				continue
			}
			d := ch.to
			if _, ok := d.nextProcTimer(); !ok {
				continue
			}
			d.now = t.now
			derr := d.fireProcTimers()
			derr = d.runChain(derr)
			t.adoptOutputs(d)
			if derr != nil {
				if _, ok := derr.(*chainedError); !ok {
					derr = &chainedError{task: d, err: derr}
				}
				return derr
			}
		}
	}
	return nil
}
