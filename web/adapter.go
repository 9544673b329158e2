package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/statelab/statelab/engine"
)

// TeachingPace is the Stepper's virtual seconds per real second at speed 1:
// slow enough to follow a batch from channel to channel (a step costs about
// half a millisecond of virtual time, so some 40 steps a second).
const TeachingPace = 0.02

// NewEngine is the EngineFactory of the real engine: a Stepper (teaching
// mode) or the Live driver (full speed), playing from the start. A running
// job can change driver without losing anything (SetDriver).
func NewEngine(logger *slog.Logger) EngineFactory {
	return func(ctx context.Context, run RunConfig) (Engine, error) {
		opts := engine.Options{Dir: run.DataDir, Logger: logger}
		switch run.Driver {
		case DriverStepper, "":
			st, err := engine.NewStepper(run.Spec, opts)
			if err != nil {
				return nil, specError(err)
			}
			if err := st.SetSpeed(TeachingPace); err != nil {
				_ = st.Close()
				return nil, err
			}
			e := &driverEngine{st: st, factor: 1}
			_ = e.Resume()
			return e, nil
		case DriverLive:
			l, err := engine.NewLive(run.Spec, opts)
			if err != nil {
				return nil, specError(err)
			}
			// The engine's goroutines live until Close, not until the
			// request that started the session ends.
			if err := l.Start(context.Background()); err != nil {
				_ = l.Close()
				return nil, err
			}
			return &driverEngine{l: l, factor: 1}, nil
		default:
			return nil, fmt.Errorf("%w: driver %q is unknown; choose %q (teaching) or %q (full speed)", ErrBadArgs, run.Driver, DriverStepper, DriverLive)
		}
	}
}

func specError(err error) error {
	if errors.Is(err, engine.ErrInvalidSpec) {
		return fmt.Errorf("%w: %w", ErrBadArgs, err)
	}
	return err
}

// engineCommand turns a protocol command into the engine's.
func engineCommand(c Command) engine.Command {
	ec := engine.Command{Name: c.Name, TaskManager: c.TaskManager, Operator: c.Operator, Parallelism: c.Parallelism, Text: c.Text}
	if c.Name == CmdCrashSubtask {
		ec.Task = fmt.Sprintf("%s#%d", c.Operator, c.Index)
	}
	if c.Name == CmdInject {
		ec.Partition = c.Partition
	}
	if c.Name == CmdAddTaskManager {
		ec.Slots = c.Slots
	}
	if c.Name == CmdRestore {
		ec.Checkpoint = c.Checkpoint
	}
	if c.Name == CmdUpgrade {
		ec.Checkpoint, ec.Change, ec.Kind, ec.UID, ec.UIDHash = c.Checkpoint, c.Change, c.Kind, c.UID, c.UIDHash
		ec.MaxParallelism, ec.AllowNonRestoredState = c.MaxParallelism, c.AllowNonRestoredState
	}
	return ec
}

// commandError maps the engine's sentinels to reply codes.
func commandError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, engine.ErrBadCommand), errors.Is(err, engine.ErrUnknown):
		return fmt.Errorf("%w: %w", ErrBadArgs, err)
	default:
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
}

type engineSub struct{ s *engine.Subscription }

func (s engineSub) Events() <-chan engine.Event { return s.s.C }
func (s engineSub) Dropped() int64              { return s.s.Dropped() }
func (s engineSub) Pending() int                { return s.s.Pending() }
func (s engineSub) Close()                      { s.s.Close() }

// driverEngine runs a job on one of the engine's drivers: exactly one of st
// and l is set. On the Stepper, Play runs in a goroutine while playing. Both
// drivers share the job's core, so a subscription outlives a change of
// driver.
type driverEngine struct {
	// swap guards which driver runs: SetDriver and Close hold it for
	// writing; calls that go to the driver hold it for reading, so none
	// reaches a driver that has just handed the job on. mu guards the
	// play state; st and l change only with both held.
	swap   sync.RWMutex
	mu     sync.Mutex
	st     *engine.Stepper
	l      *engine.Live
	factor float64
	// livePaused: Live's play state as Pause, Resume and SetDriver left
	// it (Playing reads it instead of a Snapshot).
	livePaused bool
	cancel     context.CancelFunc // of the Stepper's Play
	done       chan struct{}      // closed when Play returns
	closed     bool
}

var (
	_ Engine         = (*driverEngine)(nil)
	_ DriverSwitcher = (*driverEngine)(nil)
)

// with calls fn with the driver in use, which cannot change meanwhile.
func (e *driverEngine) with(fn func(d engine.Engine)) {
	e.swap.RLock()
	defer e.swap.RUnlock()
	if e.st != nil {
		fn(e.st)
		return
	}
	fn(e.l)
}

// Snapshot returns the driver's snapshot with the speed factor as the
// protocol counts it.
func (e *driverEngine) Snapshot() (snap engine.Snapshot) {
	e.with(func(d engine.Engine) { snap = e.snapshot(d) })
	return snap
}

func (e *driverEngine) snapshot(d engine.Engine) engine.Snapshot {
	snap := d.Snapshot() // both drivers compare the sinks (engine/snapshot.go)
	e.mu.Lock()
	snap.Speed = e.factor
	e.mu.Unlock()
	return snap
}

func (e *driverEngine) Inspect(task string) (v engine.TaskStateView, err error) {
	e.with(func(d engine.Engine) { v, err = d.TaskState(task, 0) })
	return v, commandError(err)
}

func (e *driverEngine) Subscribe(buffer int) (s Subscription) {
	e.with(func(d engine.Engine) { s = engineSub{d.Subscribe(buffer)} })
	return s
}

func (e *driverEngine) Apply(_ context.Context, c Command) (err error) {
	e.with(func(d engine.Engine) { err = d.Do(engineCommand(c)) })
	if err == nil {
		e.wakeIdle()
	}
	return commandError(err)
}

// wakeIdle plays on a run whose Play stopped by itself because nothing
// more could happen (every source read, every task idle), not because
// someone paused it: a command may have given it work — a line typed into
// an idle word count must travel, not wait for a Play the learner does not
// know to press. A run paused by hand stays paused.
func (e *driverEngine) wakeIdle() {
	e.mu.Lock()
	idle := false
	if e.st != nil && e.done != nil && !e.closed {
		select {
		case <-e.done:
			idle = true
		default:
		}
	}
	e.mu.Unlock()
	if idle {
		_ = e.Resume()
	}
}

// Resume starts the run: Play in a goroutine on the Stepper.
func (e *driverEngine) Resume() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("%w: the run has ended", ErrRefused)
	}
	if e.l != nil {
		e.l.Resume()
		e.livePaused = false
		return nil
	}
	if e.done != nil {
		select {
		case <-e.done: // Play returned by itself (nothing more could happen)
		default:
			return nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	e.cancel, e.done = cancel, done
	st := e.st
	go func() {
		defer close(done)
		_ = st.Play(ctx)
	}()
	return nil
}

// Pause stops the run and, on the Stepper, waits for Play to return, so a
// Step after Pause never races with a playing tick.
func (e *driverEngine) Pause() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.l != nil {
		e.l.Pause()
		e.livePaused = true
		return nil
	}
	e.stopPlayLocked()
	return nil
}

func (e *driverEngine) stopPlayLocked() {
	if e.done == nil {
		return
	}
	e.st.Pause()
	e.cancel()
	<-e.done
	e.done, e.cancel = nil, nil
}

// Playing reports whether the run plays: on the Stepper, whether Play runs
// (it returns by itself when nothing more can happen); on Live, whether it
// was paused. It is cheaper than a Snapshot, which the reaper would
// otherwise take of every unwatched session on each of its ticks (idle.go).
func (e *driverEngine) Playing() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return false
	case e.l != nil:
		return !e.livePaused
	case e.done == nil:
		return false
	}
	select {
	case <-e.done:
		return false
	default:
		return true
	}
}

// Step pauses a playing run, then performs n steps (teaching mode only).
func (e *driverEngine) Step(n int) error {
	e.mu.Lock()
	if e.l != nil {
		e.mu.Unlock()
		return fmt.Errorf("%w: stepping needs teaching mode (the Stepper); at full speed every subtask runs on its own goroutine. Switch to teaching mode to step", ErrRefused)
	}
	e.stopPlayLocked()
	st := e.st
	e.mu.Unlock()
	if st.Steps(n) == 0 {
		return fmt.Errorf("%w: nothing more can happen: every source is read and every task idle; type a record into the source or reset", ErrRefused)
	}
	return nil
}

// SetSpeed sets the speed factor: 1 is the teaching pace on the Stepper,
// real time on Live.
func (e *driverEngine) SetSpeed(f float64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var err error
	if e.l != nil {
		err = e.l.SetSpeed(f)
	} else {
		err = e.st.SetSpeed(TeachingPace * f)
	}
	if err != nil {
		return commandError(err)
	}
	e.factor = f
	return nil
}

// SetDriver hands the running job to the other driver: nothing is lost,
// the clock carries on, and the speed factor starts again at 1. Playing
// stays playing.
func (e *driverEngine) SetDriver(driver string) error {
	e.swap.Lock()
	defer e.swap.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("%w: the run has ended", ErrRefused)
	}
	switch {
	case driver == DriverLive && e.st != nil:
		playing := e.done != nil
		e.stopPlayLocked()
		l, err := e.st.ToLive(context.Background())
		if err != nil {
			return commandError(err)
		}
		e.st, e.l, e.factor, e.livePaused = nil, l, 1, !playing
		if !playing {
			l.Pause()
		}
	case driver == DriverStepper && e.l != nil:
		snap := e.l.Snapshot()
		st, err := e.l.ToStepper()
		if err != nil {
			return commandError(err)
		}
		e.l, e.st, e.factor = nil, st, 1
		if err := st.SetSpeed(TeachingPace); err != nil {
			return err
		}
		if !snap.Paused {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			e.cancel, e.done = cancel, done
			go func() {
				defer close(done)
				_ = st.Play(ctx)
			}()
		}
	}
	return nil
}

func (e *driverEngine) Close() error {
	e.swap.Lock()
	defer e.swap.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if e.l != nil {
		return e.l.Close()
	}
	e.stopPlayLocked()
	return e.st.Close()
}
