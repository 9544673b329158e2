package engine

import (
	"fmt"
	"time"

	"github.com/statelab/statelab/state"
)

// alerts is a KeyedProcessFunction: per key it alerts when no event came
// within a timeout of event time, with the number of events since the last
// alert (the CountWithTimeoutFunction of Flink's Process Function
// documentation). Input may be out of order across partitions, so an event
// first waits in MapState "pending" (timestamp -> events) with an
// event-time timer at its timestamp (namespace "event"); when the watermark
// passes it, the event joins the key's session: "count" grows, "last" moves
// to its time, and the alert timer (namespace "") moves from the old last
// plus the timeout to the new one (delete, register). When the watermark
// passes the alert timer, onTimer emits the alert and clears the key. Timers
// fire in timestamp order, so a gap of at least the timeout always alerts
// before the next event joins.
//
// The timers live in the keyed backend (timer service "user-timers", as
// Flink's KeyedProcessOperator names it): an alert due after a crash or a
// rescale fires once, on the subtask that owns the key's key group.
//
// With option timeDomain: processing the function times out on processing
// time instead, as the processing-time CountWithTimeoutFunction of Flink's
// documentation does: each event sets "last" to the subtask's processing
// time (ctx.timerService().currentProcessingTime()) and moves the key's
// processing-time timer to last plus the timeout
// (registerProcessingTimeTimer); the timer fires on the subtask's
// processing-time clock (proctime.go). No event waits in "pending" then:
// processing time needs no watermark to be in order.
type alerts struct {
	noState
	timeout  int64 // milliseconds
	procTime bool  // time out on processing time (timeDomain: processing)
	pending  state.MapState[int64, int64]
	last     state.ValueState[int64]
	count    state.ValueState[int64]
	timers   *state.TimerService
}

// eventNS is the namespace of the timers that release pending events.
const eventNS = "event"

func (a *alerts) open(t *subtask, _ *restoreSpec, _ *RestoreInfo) error {
	var err error
	opts := t.stateOptions()
	if a.pending, err = state.Map(t.keyed, "pending", state.Int64Codec, state.Int64Codec, opts...); err != nil {
		return fmt.Errorf("register pending state: %w", err)
	}
	if a.last, err = state.Value(t.keyed, "last", state.Int64Codec, opts...); err != nil {
		return fmt.Errorf("register last state: %w", err)
	}
	if a.count, err = state.Value(t.keyed, "count", state.Int64Codec, opts...); err != nil {
		return fmt.Errorf("register count state: %w", err)
	}
	if a.timers, err = state.NewTimerService(t.keyed, "user-timers"); err != nil {
		return fmt.Errorf("register timers: %w", err)
	}
	a.procTime = t.op.opts.TimeDomain == TimeDomainProcessing
	return nil
}

func (a *alerts) timerService() *state.TimerService { return a.timers }

func (a *alerts) process(t *subtask, _ int, recs []Record) error {
	if a.procTime {
		return a.processProcTime(t, recs)
	}
	for i, r := range recs {
		if _, err := t.setKeyOf(recs, i); err != nil {
			return err
		}
		n, _, err := a.pending.Get(r.Timestamp)
		if err != nil {
			return err
		}
		if err := a.pending.Put(r.Timestamp, n+1); err != nil {
			return err
		}
		if err := a.timers.Register(state.EventTime, eventNS, r.Timestamp); err != nil {
			return err
		}
		t.updates++
	}
	return nil
}

// onEvent releases the events pending at ts into the key's session.
func (a *alerts) onEvent(ts int64) error {
	n, ok, err := a.pending.Get(ts)
	if err != nil || !ok {
		return err
	}
	if err := a.pending.Remove(ts); err != nil {
		return err
	}
	last, had, err := a.last.Value()
	if err != nil {
		return err
	}
	c, _, err := a.count.Value()
	if err != nil {
		return err
	}
	if had {
		if err := a.timers.Delete(state.EventTime, "", last+a.timeout); err != nil {
			return err
		}
	}
	if err := a.last.Update(ts); err != nil {
		return err
	}
	if err := a.count.Update(c + n); err != nil {
		return err
	}
	return a.timers.Register(state.EventTime, "", ts+a.timeout)
}

// alertText is what an alert says; the truth computes the same text.
func alertText(last, timeout int64) string {
	return fmt.Sprintf("no event for %v after %s", time.Duration(timeout)*time.Millisecond, fmtMillis(last))
}

func (a *alerts) watermark(t *subtask, wm int64) error {
	return a.timers.Advance(state.EventTime, wm, func(tm state.Timer) error {
		if tm.Namespace == eventNS {
			return a.onEvent(tm.Timestamp)
		}
		return a.onAlertTimer(t, tm, "watermark "+fmtWatermark(wm), wm)
	})
}

// onAlertTimer emits the key's alert when tm is its current deadline.
func (a *alerts) onAlertTimer(t *subtask, tm state.Timer, at string, wm int64) error {
	last, ok, err := a.last.Value()
	if err != nil || !ok || tm.Timestamp != last+a.timeout {
		return err // a stale timer: a newer event moved the deadline
	}
	n, _, err := a.count.Value()
	if err != nil {
		return err
	}
	if err := a.last.Clear(); err != nil {
		return err
	}
	if err := a.count.Clear(); err != nil {
		return err
	}
	text := alertText(last, a.timeout)
	t.emit(Record{Key: tm.Key, Value: n, Text: text, Timestamp: tm.Timestamp})
	if t.verbose {
		t.event(Event{Kind: EvTimerFired, Key: tm.Key, Value: n, Watermark: wm,
			Message: fmt.Sprintf("%s: timer %d of %s fired at %s: %s (%d events)", t.name, tm.Timestamp, tm.Key, at, text, n)})
	}
	return nil
}

// processProcTime counts each event into its key's session and moves the
// key's processing-time deadline to now plus the timeout.
func (a *alerts) processProcTime(t *subtask, recs []Record) error {
	now := t.NowMillis()
	for i := range recs {
		if _, err := t.setKeyOf(recs, i); err != nil {
			return err
		}
		last, had, err := a.last.Value()
		if err != nil {
			return err
		}
		c, _, err := a.count.Value()
		if err != nil {
			return err
		}
		if had && last != now {
			if err := a.timers.Delete(state.ProcessingTime, "", last+a.timeout); err != nil {
				return err
			}
		}
		if err := a.last.Update(now); err != nil {
			return err
		}
		if err := a.count.Update(c + 1); err != nil {
			return err
		}
		if err := a.timers.Register(state.ProcessingTime, "", now+a.timeout); err != nil {
			return err
		}
		t.updates++
	}
	return nil
}

// onProcessingTime fires the alerts due at processing time now
// (milliseconds): Flink's KeyedProcessOperator.onProcessingTime calling
// the function's onTimer.
func (a *alerts) onProcessingTime(t *subtask, now int64) error {
	return a.timers.Advance(state.ProcessingTime, now, func(tm state.Timer) error {
		return a.onAlertTimer(t, tm, "processing time "+fmtMillis(now), t.wm.Load())
	})
}

// timerOwner is an operator with a timer service, which the state
// inspector shows.
type timerOwner interface {
	timerService() *state.TimerService
}

// timerView lists a timer service's timers for the state inspector: event
// time first, then processing time, each in firing order.
func timerView(ts *state.TimerService, limit int) []state.Timer {
	out := ts.Timers(state.EventTime, limit)
	if limit <= 0 || len(out) < limit {
		rest := 0
		if limit > 0 {
			rest = limit - len(out)
		}
		out = append(out, ts.Timers(state.ProcessingTime, rest)...)
	}
	return out
}

// NowMillis is the subtask's processing time in milliseconds, the clock of
// state TTL (Flink's TtlTimeProvider). The subtask itself is the clock, so
// a fork's copy of a state handle reads the copy's time.
func (t *subtask) NowMillis() int64 { return int64(t.now / time.Millisecond) }

// stateOptions are the options of the operator's keyed states: its TTL.
func (t *subtask) stateOptions() []state.Option {
	ttl := t.op.opts.TTL
	if ttl == nil {
		return nil
	}
	c := *ttl
	c.Clock = t
	return []state.Option{state.WithTTL(c)}
}
