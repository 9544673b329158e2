package lessons

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/statelab/statelab/catalog"
	"github.com/statelab/statelab/engine"
)

// Command names of the web protocol (docs/protocol.md). The engine knows
// the job commands; the driver controls belong to whoever runs the engine.
const (
	cmdPause              = "pause"
	cmdResume             = "resume"
	cmdStep               = "step"
	cmdSpeed              = "speed"
	cmdCrashSubtask       = engine.CmdCrashSubtask
	cmdCrashTaskManager   = engine.CmdCrashTaskManager
	cmdRestartTaskManager = engine.CmdRestartTaskManager
	cmdAddTaskManager     = engine.CmdAddTaskManager
	cmdTriggerCheckpoint  = engine.CmdTriggerCheckpoint
	cmdTriggerSavepoint   = engine.CmdTriggerSavepoint
	cmdRescale            = engine.CmdRescale
	cmdInject             = engine.CmdInject
	cmdUpgrade            = engine.CmdUpgrade
	cmdReset              = "reset"
	cmdSnapshot           = "snapshot"
)

// CommandNames lists the protocol commands a step may use, in the
// protocol's order: the catalogue's commands marked Lesson.
var CommandNames = catalog.Names(func(c catalog.Command) bool { return c.Lesson })

// Argument limits, the protocol's (package catalog).
const (
	maxStepCount  = catalog.MaxStepCount
	minSpeed      = catalog.MinSpeed
	maxSpeed      = catalog.MaxSpeed
	maxInjectText = catalog.MaxInjectText
	maxSlots      = engine.MaxSlotsPerTaskManager
)

// actionArgs are the arguments each command accepts in a lesson: name ->
// required. They are the catalogue's, less those a lesson may not give
// (a driver switch); of a command's one-of arguments the one a lesson may
// give is required.
var actionArgs = func() map[string]map[string]bool {
	m := map[string]map[string]bool{}
	for _, c := range catalog.Commands {
		if !c.Lesson {
			continue
		}
		allowed := map[string]bool{}
		var oneOf []string
		for _, a := range c.Args {
			if a.NotInLessons {
				continue
			}
			allowed[a.Name] = a.Required
			if slices.Contains(c.OneOf, a.Name) {
				oneOf = append(oneOf, a.Name)
			}
		}
		if len(oneOf) == 1 {
			allowed[oneOf[0]] = true
		}
		m[c.Name] = allowed
	}
	return m
}()

// jobState is what the lint knows of the job at a point of the lesson: the
// spec, the current parallelisms and the TaskManagers.
type jobState struct {
	name string
	spec *engine.JobSpec
	par  map[string]int
	tms  int
}

func newJobState(name string, spec *engine.JobSpec) *jobState {
	js := &jobState{name: name, spec: spec, par: map[string]int{}, tms: spec.Cluster.TaskManagers}
	for _, o := range spec.Operators {
		js.par[o.ID] = o.Parallelism
	}
	return js
}

func (js *jobState) operatorIDs() string {
	ids := make([]string, len(js.spec.Operators))
	for i, o := range js.spec.Operators {
		ids[i] = o.ID
	}
	return strings.Join(ids, ", ")
}

// checkAction validates an action as the protocol would, and against the
// job it will meet. It updates js for rescale, add-taskmanager and reset.
func (l *Lesson) checkAction(a Action, js **jobState) error {
	allowed, ok := actionArgs[a.Name]
	if !ok {
		return fmt.Errorf("unknown command %q (known: %s)", a.Name, strings.Join(CommandNames, ", "))
	}
	for k := range a.Args {
		if _, ok := allowed[k]; !ok {
			names := make([]string, 0, len(allowed))
			for n := range allowed {
				names = append(names, n)
			}
			slices.Sort(names)
			if len(names) == 0 {
				return fmt.Errorf("%s takes no arguments, but has %q", a.Name, k)
			}
			return fmt.Errorf("%s has unknown argument %q (known: %s)", a.Name, k, strings.Join(names, ", "))
		}
	}
	for k, req := range allowed {
		if _, ok := a.Args[k]; req && !ok {
			return fmt.Errorf("%s needs argument %q", a.Name, k)
		}
	}
	if a.ExpectRefused && a.Driver() {
		return fmt.Errorf("%s is a viewer control; only job commands can be expected to be refused", a.Name)
	}
	j := *js
	switch a.Name {
	case cmdStep:
		if _, ok := a.Args["count"]; ok {
			n, err := argInt(a.Args, "count")
			if err != nil {
				return fmt.Errorf("step: %w", err)
			}
			if n < 1 || n > maxStepCount {
				return fmt.Errorf("step: count %d is not within 1..%d", n, maxStepCount)
			}
		}
	case cmdSpeed:
		f, err := argFloat(a.Args, "factor")
		if err != nil {
			return fmt.Errorf("speed: %w", err)
		}
		if math.IsNaN(f) || f < minSpeed || f > maxSpeed {
			return fmt.Errorf("speed: factor %g is not within %g..%g", f, minSpeed, maxSpeed)
		}
	case cmdCrashSubtask:
		op, err := argString(a.Args, "operator")
		if err != nil {
			return fmt.Errorf("crash-subtask: %w", err)
		}
		idx, err := argInt(a.Args, "index")
		if err != nil {
			return fmt.Errorf("crash-subtask: %w", err)
		}
		p, ok := j.par[op]
		if !ok {
			return fmt.Errorf("crash-subtask: job %s has no operator %q (it has %s)", j.name, op, j.operatorIDs())
		}
		if idx < 0 || idx >= p {
			return fmt.Errorf("crash-subtask: %s has %d subtasks here, so index %d does not exist", op, p, idx)
		}
	case cmdCrashTaskManager, cmdRestartTaskManager:
		tm, err := argString(a.Args, "taskManager")
		if err != nil {
			return fmt.Errorf("%s: %w", a.Name, err)
		}
		var n int
		if _, err := fmt.Sscanf(tm, "tm-%d", &n); err != nil || n < 1 || n > j.tms || tm != fmt.Sprintf("tm-%d", n) {
			return fmt.Errorf("%s: there is no TaskManager %q; the cluster has tm-1 … tm-%d here", a.Name, tm, j.tms)
		}
	case cmdAddTaskManager:
		if _, ok := a.Args["slots"]; ok {
			n, err := argInt(a.Args, "slots")
			if err != nil {
				return fmt.Errorf("add-taskmanager: %w", err)
			}
			if n < 1 || n > maxSlots {
				return fmt.Errorf("add-taskmanager: slots %d is not within 1..%d", n, maxSlots)
			}
		}
		j.tms++
	case cmdRescale:
		op, err := argString(a.Args, "operator")
		if err != nil {
			return fmt.Errorf("rescale: %w", err)
		}
		p, err := argInt(a.Args, "parallelism")
		if err != nil {
			return fmt.Errorf("rescale: %w", err)
		}
		if _, ok := j.par[op]; !ok {
			return fmt.Errorf("rescale: job %s has no operator %q (it has %s)", j.name, op, j.operatorIDs())
		}
		if lo, hi := catalog.Bound(cmdRescale, "parallelism"); float64(p) < lo || float64(p) > hi {
			return fmt.Errorf("rescale: parallelism %d is not within %g..%g", p, lo, hi)
		}
		if !a.ExpectRefused {
			j.par[op] = p
		}
	case cmdInject:
		text, err := argString(a.Args, "text")
		if err != nil {
			return fmt.Errorf("inject: %w", err)
		}
		if strings.TrimSpace(text) == "" || utf8.RuneCountInString(text) > maxInjectText {
			return fmt.Errorf("inject: text must be 1..%d characters and not blank", maxInjectText)
		}
		src := ""
		if _, ok := a.Args["operator"]; ok {
			if src, err = argString(a.Args, "operator"); err != nil {
				return fmt.Errorf("inject: %w", err)
			}
		}
		o := firstSource(j.spec, src)
		if o == nil {
			return fmt.Errorf("inject: job %s has no source %q", j.name, src)
		}
		if _, ok := a.Args["partition"]; ok {
			p, err := argInt(a.Args, "partition")
			if err != nil {
				return fmt.Errorf("inject: %w", err)
			}
			if parts := sourcePartitions(o); p < 0 || p >= parts {
				return fmt.Errorf("inject: source %s has partitions 0..%d, not %d", o.ID, parts-1, p)
			}
		}
	case cmdUpgrade:
		if err := checkCatalogArgs(a); err != nil {
			return err
		}
		if err := j.upgrade(a); err != nil {
			return fmt.Errorf("upgrade: %w", err)
		}
	case cmdReset:
		name := MainJob
		if _, ok := a.Args["job"]; ok {
			var err error
			if name, err = argString(a.Args, "job"); err != nil {
				return fmt.Errorf("reset: %w", err)
			}
		}
		if _, ok := a.Args["seed"]; ok {
			if _, err := argInt(a.Args, "seed"); err != nil {
				return fmt.Errorf("reset: %w", err)
			}
		}
		spec, err := l.Job(name)
		if err != nil {
			return fmt.Errorf("reset: %w", err)
		}
		*js = newJobState(name, spec)
	default:
		// A command the lint has no rules of its own for: the catalogue's
		// types and bounds, as the protocol checks them.
		return checkCatalogArgs(a)
	}
	return nil
}

// checkCatalogArgs checks a's arguments against the command catalogue:
// their type, numeric bounds, length and allowed values.
func checkCatalogArgs(a Action) error {
	c, ok := catalog.Lookup(a.Name)
	if !ok {
		return nil
	}
	for k, v := range a.Args {
		arg, ok := c.Arg(k)
		if !ok {
			continue
		}
		switch arg.Type {
		case catalog.Int, catalog.Number:
			var f float64
			if arg.Type == catalog.Int {
				n, err := argInt(a.Args, k)
				if err != nil {
					return fmt.Errorf("%s: %w", a.Name, err)
				}
				f = float64(n)
			} else {
				var err error
				if f, err = argFloat(a.Args, k); err != nil {
					return fmt.Errorf("%s: %w", a.Name, err)
				}
			}
			if (arg.HasMin && f < arg.Min) || (arg.HasMax && f > arg.Max) {
				return fmt.Errorf("%s: %s %g is out of bounds (%s)", a.Name, k, f, boundsText(arg))
			}
		case catalog.Text:
			s, err := argString(a.Args, k)
			if err != nil {
				return fmt.Errorf("%s: %w", a.Name, err)
			}
			if arg.MaxRunes > 0 && utf8.RuneCountInString(s) > arg.MaxRunes {
				return fmt.Errorf("%s: %s is longer than %d characters", a.Name, k, arg.MaxRunes)
			}
			if len(arg.Values) > 0 && !slices.Contains(arg.Values, s) {
				return fmt.Errorf("%s: %s %q is not one of %s", a.Name, k, s, strings.Join(arg.Values, ", "))
			}
		case catalog.Bool:
			if _, ok := v.(bool); !ok {
				return fmt.Errorf("%s: argument %s: want true or false, got %v", a.Name, k, v)
			}
		}
	}
	return nil
}

func boundsText(a catalog.Arg) string {
	switch {
	case a.HasMin && a.HasMax:
		return fmt.Sprintf("%g to %g", a.Min, a.Max)
	case a.HasMin:
		return fmt.Sprintf("at least %g", a.Min)
	}
	return fmt.Sprintf("at most %g", a.Max)
}

// firstSource returns the source operator named id, or the first source
// when id is empty (the protocol's default for inject).
func firstSource(spec *engine.JobSpec, id string) *engine.OperatorSpec {
	for i := range spec.Operators {
		o := &spec.Operators[i]
		if o.Kind == engine.KindSource && (id == "" || o.ID == id) {
			return o
		}
	}
	return nil
}

func sourcePartitions(o *engine.OperatorSpec) int {
	if v, ok := o.Options["partitions"]; ok {
		if n, err := toInt(v); err == nil {
			return n
		}
	}
	return o.Parallelism
}

// engineCommand turns a job action into the engine's command, filling in
// the protocol's defaults against the current snapshot.
func engineCommand(a Action, snap *engine.Snapshot) (engine.Command, error) {
	c := engine.Command{Name: a.Name}
	var err error
	switch a.Name {
	case cmdCrashSubtask:
		op, _ := argString(a.Args, "operator")
		idx, _ := argInt(a.Args, "index")
		c.Task = fmt.Sprintf("%s#%d", op, idx)
	case cmdCrashTaskManager, cmdRestartTaskManager:
		c.TaskManager, err = argString(a.Args, "taskManager")
	case cmdAddTaskManager, cmdTriggerCheckpoint, cmdTriggerSavepoint:
	case cmdRescale:
		c.Operator, _ = argString(a.Args, "operator")
		c.Parallelism, err = argInt(a.Args, "parallelism")
	case cmdUpgrade:
		n, _ := argInt(a.Args, "checkpoint")
		c.Checkpoint = int64(n)
		c.Change, _ = argString(a.Args, "change")
		c.Operator, _ = a.Args["operator"].(string)
		c.Kind, _ = a.Args["kind"].(string)
		c.UID, _ = a.Args["uid"].(string)
		c.UIDHash, _ = a.Args["uidHash"].(string)
		if _, ok := a.Args["parallelism"]; ok {
			c.Parallelism, _ = argInt(a.Args, "parallelism")
		}
		if _, ok := a.Args["maxParallelism"]; ok {
			c.MaxParallelism, _ = argInt(a.Args, "maxParallelism")
		}
		c.AllowNonRestoredState, _ = a.Args["allowNonRestoredState"].(bool)
	case cmdInject:
		c.Text, _ = argString(a.Args, "text")
		c.Partition = -1
		if _, ok := a.Args["partition"]; ok {
			c.Partition, _ = argInt(a.Args, "partition")
		}
		if _, ok := a.Args["operator"]; ok {
			c.Operator, _ = argString(a.Args, "operator")
		} else {
			for _, o := range snap.Job.Operators {
				if o.Kind == engine.KindSource {
					c.Operator = o.ID
					break
				}
			}
		}
	default:
		return c, fmt.Errorf("%s is not a job command", a.Name)
	}
	return c, err
}

// --- typed access to YAML values ---------------------------------------------

func toInt(v any) (int, error) {
	switch t := v.(type) {
	case int:
		return t, nil
	case int64:
		return int(t), nil
	case uint64:
		return int(t), nil
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int(t), nil
		}
	}
	return 0, fmt.Errorf("want a whole number, got %v", v)
}

func argInt(args map[string]any, k string) (int, error) {
	n, err := toInt(args[k])
	if err != nil {
		return 0, fmt.Errorf("argument %s: %w", k, err)
	}
	return n, nil
}

func argFloat(args map[string]any, k string) (float64, error) {
	switch t := args[k].(type) {
	case int:
		return float64(t), nil
	case float64:
		return t, nil
	}
	return 0, fmt.Errorf("argument %s: want a number, got %v", k, args[k])
}

func argString(args map[string]any, k string) (string, error) {
	s, ok := args[k].(string)
	if !ok {
		return "", fmt.Errorf("argument %s: want text, got %v", k, args[k])
	}
	return s, nil
}
