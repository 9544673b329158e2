// Package catalog is StateLab's one definition of the commands a client
// sends over the web protocol: each command's name, its arguments with their
// types and bounds, who may send it (a classroom's presenter, or a follower
// too), whether the engine records it in the command log (and so a scenario
// or share link replays it), and whether a lesson step may use it.
//
// Its consumers read it rather than restate it: the protocol parser
// (web/protocol.go and the files that register more commands), the lessons'
// action lint (lessons/actions.go), the scenario checker (web/share.go) and
// the command table of docs/protocol.md. web's TestCommandCatalogue fails
// when any of them disagrees with it. To add a command, add it here, then
// give web a parser for it (and the engine a case, if the engine runs it).
//
// The package sits between engine and lessons: it imports engine (for the
// engine's command names and bounds) and rescale, and lessons and web import
// it.
package catalog

import (
	"fmt"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/rescale"
)

// Type is an argument's JSON type.
type Type string

// Argument types.
const (
	Int    Type = "int"    // a whole number
	Number Type = "number" // any JSON number
	Text   Type = "text"   // a string
	Bool   Type = "bool"
)

// Arg is one argument of a command.
type Arg struct {
	Name string
	Type Type
	// Required arguments must be present; Command.OneOf may ask for one of
	// several optional ones instead.
	Required bool
	// Min and Max bound a number (inclusive) when HasMin and HasMax are set.
	Min, Max       float64
	HasMin, HasMax bool
	// MaxRunes bounds a text's length in characters (0: no bound here).
	MaxRunes int
	// Values lists the only values a text may take (empty: any).
	Values []string
	// NotInLessons marks an argument a lesson step may not give (the
	// lesson runner plays one driver, so a driver switch has no meaning
	// there).
	NotInLessons bool
}

// Command is one protocol command.
type Command struct {
	Name string
	Args []Arg
	// OneOf lists arguments of which at least one must be given.
	OneOf []string
	// Follower is set when a classroom follower (a view that follows a
	// session and does not control it) may send it; every other command
	// is the presenter's (a control command).
	Follower bool
	// Recorded is set when the engine applies it and logs it: the command
	// log, scenarios and share links carry it and a replay applies it again.
	Recorded bool
	// Lesson is set when a lesson step may perform it as an action.
	Lesson bool
}

// Arg returns the argument called name.
func (c Command) Arg(name string) (Arg, bool) {
	for _, a := range c.Args {
		if a.Name == name {
			return a, true
		}
	}
	return Arg{}, false
}

// Bounds of the protocol's arguments.
const (
	MaxStepCount  = 10000 // step's count
	MinSpeed      = 0.05  // speed's factor
	MaxSpeed      = 100.0
	MaxInjectText = 1000 // inject's text, in characters
	// MaxReplaySteps bounds the step a seek or fork names (a replay longer
	// than that is about a minute of CPU); a server's --max-replay-steps
	// may bound it lower.
	MaxReplaySteps = 500000
)

func bounded(name string, t Type, min, max float64, required bool) Arg {
	return Arg{Name: name, Type: t, Required: required, Min: min, Max: max, HasMin: true, HasMax: true}
}

func atLeast(name string, t Type, min float64, required bool) Arg {
	return Arg{Name: name, Type: t, Required: required, Min: min, HasMin: true}
}

var drivers = []string{"step", "live"}

// Commands lists the protocol's commands in the order docs/protocol.md
// documents them.
var Commands = []Command{
	{Name: "pause", Lesson: true},
	{Name: "resume", Lesson: true},
	{Name: "step", Args: []Arg{bounded("count", Int, 1, MaxStepCount, false)}, Lesson: true},
	{Name: "speed", Args: []Arg{bounded("factor", Number, MinSpeed, MaxSpeed, false),
		{Name: "driver", Type: Text, Values: drivers, NotInLessons: true}}, OneOf: []string{"factor", "driver"}, Lesson: true},
	{Name: engine.CmdCrashSubtask, Args: []Arg{{Name: "operator", Type: Text, Required: true}, {Name: "index", Type: Int, Required: true}},
		Recorded: true, Lesson: true},
	{Name: engine.CmdCrashTaskManager, Args: []Arg{{Name: "taskManager", Type: Text, Required: true}}, Recorded: true, Lesson: true},
	{Name: engine.CmdRestartTaskManager, Args: []Arg{{Name: "taskManager", Type: Text, Required: true}}, Recorded: true, Lesson: true},
	{Name: engine.CmdAddTaskManager, Args: []Arg{bounded("slots", Int, 1, engine.MaxSlotsPerTaskManager, false)}, Recorded: true, Lesson: true},
	{Name: engine.CmdTriggerCheckpoint, Recorded: true, Lesson: true},
	{Name: engine.CmdTriggerSavepoint, Recorded: true, Lesson: true},
	// A rescale's parallelism is also bounded by the operator's max
	// parallelism and the server's --max-parallelism; Flink's own bound
	// is rescale.UpperBoundMaxParallelism.
	{Name: engine.CmdRescale, Args: []Arg{{Name: "operator", Type: Text, Required: true},
		bounded("parallelism", Int, 1, rescale.UpperBoundMaxParallelism, true)}, Recorded: true, Lesson: true},
	{Name: engine.CmdInject, Args: []Arg{{Name: "text", Type: Text, Required: true, MaxRunes: MaxInjectText},
		atLeast("partition", Int, 0, false), {Name: "operator", Type: Text}}, Recorded: true, Lesson: true},
	{Name: "reset", Args: []Arg{{Name: "seed", Type: Int}, {Name: "driver", Type: Text, Values: drivers, NotInLessons: true},
		{Name: "job", Type: Text}}, Lesson: true},
	{Name: "snapshot", Follower: true, Lesson: true},
	{Name: engine.CmdRestore, Args: []Arg{atLeast("checkpoint", Int, 1, true)}, Recorded: true},
	// upgrade: a changed job from a retained checkpoint or savepoint
	// (engine.CmdUpgrade; docs/protocol.md, "Upgrading a job").
	{Name: engine.CmdUpgrade, Args: []Arg{atLeast("checkpoint", Int, 1, true),
		{Name: "change", Type: Text, Required: true, Values: engine.UpgradeChanges},
		{Name: "operator", Type: Text}, {Name: "kind", Type: Text, Values: engine.UpgradeAddKinds},
		{Name: "uid", Type: Text, MaxRunes: engine.MaxUIDLength}, {Name: "uidHash", Type: Text, MaxRunes: 32},
		bounded("parallelism", Int, 1, rescale.UpperBoundMaxParallelism, false),
		bounded("maxParallelism", Int, 1, rescale.UpperBoundMaxParallelism, false),
		{Name: "allowNonRestoredState", Type: Bool}}, Recorded: true, Lesson: true},
	// Lesson sessions (docs/protocol.md, "Lesson commands").
	{Name: "lesson-status", Follower: true},
	{Name: "lesson-do", Args: []Arg{atLeast("step", Int, 1, true)}},
	{Name: "lesson-replay", Args: []Arg{atLeast("step", Int, 1, true)}},
	// Time travel and classrooms (docs/protocol.md, "Time travel").
	{Name: "seek", Args: []Arg{bounded("step", Int, -1, MaxReplaySteps, true)}},
	{Name: "fork", Args: []Arg{bounded("step", Int, -1, MaxReplaySteps, false)}, Follower: true},
}

var byName = func() map[string]Command {
	m := make(map[string]Command, len(Commands))
	for _, c := range Commands {
		if _, dup := m[c.Name]; dup {
			panic(fmt.Sprintf("catalog: command %s is listed twice", c.Name))
		}
		m[c.Name] = c
	}
	return m
}()

// Lookup returns the command called name.
func Lookup(name string) (Command, bool) {
	c, ok := byName[name]
	return c, ok
}

// Names lists the commands' names in the documented order; filter, when
// not nil, keeps only the commands it accepts.
func Names(filter func(Command) bool) []string {
	var out []string
	for _, c := range Commands {
		if filter == nil || filter(c) {
			out = append(out, c.Name)
		}
	}
	return out
}

// Bound returns the bounds of command's argument arg; it panics when the
// argument is not bounded on both sides, so a consumer's constant cannot
// silently drift from a catalogue that changed.
func Bound(command, arg string) (min, max float64) {
	a, ok := byName[command].Arg(arg)
	if !ok || !a.HasMin || !a.HasMax {
		panic(fmt.Sprintf("catalog: %s has no bounded argument %s", command, arg))
	}
	return a.Min, a.Max
}
