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
// mode) or the Live driver (full speed), playing from the start.
func NewEngine(logger *slog.Logger) EngineFactory {
	return func(ctx context.Context, run RunConfig) (Engine, error) {
		opts := engine.Options{Dir: run.DataDir, Logger: logger}
		switch run.Driver {
		case DriverStepper, "":
			st, err := engine.NewStepper(run.Spec, opts)
			if err != nil {
				return nil, specError(err)
			}
			e := &stepperEngine{st: st, factor: 1}
			if err := st.SetSpeed(TeachingPace); err != nil {
				_ = st.Close()
				return nil, err
			}
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
			return &liveEngine{l: l}, nil
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

// stepperEngine runs an engine.Stepper: Play in a goroutine while playing.
type stepperEngine struct {
	st *engine.Stepper

	mu     sync.Mutex
	factor float64
	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

var _ Engine = (*stepperEngine)(nil)

type engineSub struct{ s *engine.Subscription }

func (s engineSub) Events() <-chan engine.Event { return s.s.C }
func (s engineSub) Dropped() int64              { return s.s.Dropped() }
func (s engineSub) Close()                      { s.s.Close() }

func (e *stepperEngine) Snapshot() engine.Snapshot {
	snap := e.st.Snapshot()
	e.mu.Lock()
	snap.Speed = e.factor
	e.mu.Unlock()
	return snap
}

func (e *stepperEngine) Inspect(task string) (engine.TaskStateView, error) {
	v, err := e.st.TaskState(task, 0)
	return v, commandError(err)
}

func (e *stepperEngine) Subscribe(buffer int) Subscription {
	return engineSub{e.st.Subscribe(buffer)}
}

func (e *stepperEngine) Apply(_ context.Context, c Command) error {
	return commandError(e.st.Do(engineCommand(c)))
}

// Resume starts Play in a goroutine unless it runs already.
func (e *stepperEngine) Resume() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("%w: the run has ended", ErrRefused)
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
	go func() {
		defer close(done)
		_ = e.st.Play(ctx)
	}()
	return nil
}

// Pause stops Play and waits for it to return, so a Step after Pause never
// races with a playing tick.
func (e *stepperEngine) Pause() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopLocked()
	return nil
}

func (e *stepperEngine) stopLocked() {
	if e.done == nil {
		return
	}
	e.st.Pause()
	e.cancel()
	<-e.done
	e.done, e.cancel = nil, nil
}

// Step pauses a playing run, then performs n steps.
func (e *stepperEngine) Step(n int) error {
	e.mu.Lock()
	e.stopLocked()
	e.mu.Unlock()
	if e.st.Steps(n) == 0 {
		return fmt.Errorf("%w: nothing more can happen: every source is read and every task idle; type a record into the source or reset", ErrRefused)
	}
	return nil
}

func (e *stepperEngine) SetSpeed(f float64) error {
	if err := e.st.SetSpeed(TeachingPace * f); err != nil {
		return commandError(err)
	}
	e.mu.Lock()
	e.factor = f
	e.mu.Unlock()
	return nil
}

func (e *stepperEngine) Close() error {
	e.mu.Lock()
	e.stopLocked()
	e.closed = true
	e.mu.Unlock()
	return e.st.Close()
}

// liveEngine runs an engine.Live: a goroutine per subtask, real time times
// the speed factor.
type liveEngine struct {
	l *engine.Live
}

var _ Engine = (*liveEngine)(nil)

// Snapshot adds the sink comparison, which the Live driver leaves to Compare.
func (e *liveEngine) Snapshot() engine.Snapshot {
	snap := e.l.Snapshot()
	if cmps, err := e.l.Compare(); err == nil {
		for i := range snap.Sinks {
			for j := range cmps {
				if cmps[j].Sink == snap.Sinks[i].Operator {
					c := cmps[j]
					snap.Sinks[i].Comparison = &c
				}
			}
		}
	}
	return snap
}

func (e *liveEngine) Inspect(task string) (engine.TaskStateView, error) {
	v, err := e.l.TaskState(task, 0)
	return v, commandError(err)
}

func (e *liveEngine) Subscribe(buffer int) Subscription { return engineSub{e.l.Subscribe(buffer)} }

func (e *liveEngine) Apply(_ context.Context, c Command) error {
	return commandError(e.l.Do(engineCommand(c)))
}

func (e *liveEngine) Step(int) error {
	return fmt.Errorf("%w: stepping needs teaching mode (the Stepper); at full speed every subtask runs on its own goroutine. Switch to teaching mode to step", ErrRefused)
}

func (e *liveEngine) Pause() error  { e.l.Pause(); return nil }
func (e *liveEngine) Resume() error { e.l.Resume(); return nil }

func (e *liveEngine) SetSpeed(f float64) error { return commandError(e.l.SetSpeed(f)) }

func (e *liveEngine) Close() error { return e.l.Close() }
