package web

import (
	"context"

	"github.com/statelab/statelab/engine"
)

// Engine is what a session needs from a running job. The real implementation
// adapts engine.Stepper / engine.Live (see adapter.go); tests use doubles.
//
// Every method may be called from any goroutine; an implementation
// serialises access to its driver itself.
type Engine interface {
	// Snapshot returns the whole picture now, as plain data.
	Snapshot() engine.Snapshot
	// Inspect returns the keyed and operator state of one subtask
	// ("count#1"), for the state inspector.
	Inspect(task string) (engine.TaskStateView, error)
	// Subscribe delivers events in order until cancel is called or the
	// engine closes. It never blocks the engine: when the subscriber falls
	// behind, events are dropped and Dropped counts them (the session then
	// sends a fresh snapshot).
	Subscribe(buffer int) Subscription
	// Apply performs a control command (crash, rescale, checkpoint, inject,
	// ...). It returns an error the session maps to a protocol error code;
	// wrap ErrBadArgs or ErrRefused to choose the code.
	Apply(ctx context.Context, cmd Command) error
	// Step advances a paused teaching-mode run by n engine steps.
	Step(n int) error
	// Pause stops the run's clock; Resume starts it again.
	Pause() error
	Resume() error
	// SetSpeed sets how fast the run plays: 1 is the default teaching pace
	// (or real time at full speed).
	SetSpeed(factor float64) error
	// Close stops the run and releases its resources (goroutines, Pebble).
	Close() error
}

// DriverSwitcher is an Engine that can hand its running job to the other
// driver (DriverStepper or DriverLive) without losing records, barriers or
// pending checkpoints. It is optional: the session refuses a switch on an
// engine without it.
type DriverSwitcher interface {
	SetDriver(driver string) error
}

// Subscription is a stream of engine events.
type Subscription interface {
	Events() <-chan engine.Event
	Dropped() int64
	Close()
}

// Event is an engine event as it travels on the wire (see docs/protocol.md).
type Event = engine.Event

// EngineFactory starts a job for a session. dataDir is a fresh directory the
// engine may use for Pebble working directories and checkpoints; it is
// removed when the session ends.
type EngineFactory func(ctx context.Context, cfg RunConfig) (Engine, error)

// RunConfig is what a session asks an EngineFactory to start.
type RunConfig struct {
	Spec    *engine.JobSpec
	from    *replayPlan // set: replay a recorded run (timetravel.go)
	Driver  string      // DriverStepper or DriverLive
	DataDir string
	// Start, when set, starts this session's engines (the first and every
	// reset's) instead of Config.Engines: a lesson session plays its lesson
	// on the real Stepper (lessons.go).
	Start EngineFactory
}

// Drivers, as the protocol and `statelab chaos --driver` name them.
const (
	DriverStepper = "step" // teaching mode: one engine event per step, virtual time
	DriverLive    = "live" // full speed: a goroutine per subtask, real time
)

// Command is a parsed, validated client command, as the engine applies it.
type Command struct {
	Name        string  `json:"name"`
	Operator    string  `json:"operator,omitempty"`
	Index       int     `json:"index,omitempty"`
	TaskManager string  `json:"taskManager,omitempty"`
	Parallelism int     `json:"parallelism,omitempty"`
	Count       int     `json:"count,omitempty"`
	Factor      float64 `json:"factor,omitempty"`
	Text        string  `json:"text,omitempty"`
	Partition   int     `json:"partition,omitempty"` // -1: let the source choose
	Seed        int64   `json:"seed,omitempty"`
	Target      int64   `json:"target,omitempty"` // seek, fork: args.step (-1: the present)
	Driver      string  `json:"driver,omitempty"`
	Job         string  `json:"job,omitempty"`        // reset: a lesson's job variant
	LessonStep  int     `json:"lessonStep,omitempty"` // lesson commands: a step, from 1
	Slots       int     `json:"slots,omitempty"`      // add-taskmanager: 0 = the cluster's slots per TaskManager
	Checkpoint  int64   `json:"checkpoint,omitempty"` // restore: a retained checkpoint or savepoint id
	// Change, Kind, UID, MaxParallelism and AllowNonRestoredState are an
	// upgrade's (upgrade.go).
	Change                string `json:"change,omitempty"`
	Kind                  string `json:"kind,omitempty"`
	UID                   string `json:"uid,omitempty"`
	UIDHash               string `json:"uidHash,omitempty"`
	MaxParallelism        int    `json:"maxParallelism,omitempty"`
	AllowNonRestoredState bool   `json:"allowNonRestoredState,omitempty"`
}
