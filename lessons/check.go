package lessons

import (
	"fmt"
	"slices"
	"strings"

	"github.com/statelab/statelab/engine"
)

// StateReader reads one subtask's state for the state inspector; the
// engine's Stepper is one. Predicates that look inside keyed state need it.
type StateReader interface {
	TaskState(task string, limit int) (engine.TaskStateView, error)
}

// Observation is what a step's checks judge: the job when the step's
// actions were performed (Start), the job now (Now), the engine's events in
// between, and optionally a way to read subtask state.
type Observation struct {
	Start  *engine.Snapshot
	Now    *engine.Snapshot
	Events []engine.Event
	State  StateReader
}

// Check is one predicate of the catalogue with its arguments.
type Check struct {
	Name string
	// Args are normalized: whole numbers as int, text as string, lists of
	// lists as [][]int or [][]string.
	Args map[string]any
	p    *predicate
}

// String renders the check as "name{arg: value, …}", the form failures use.
func (c Check) String() string { return c.Name + formatArgs(c.Args) }

// Describe says in lang what the check checks, as one sentence.
func (c Check) Describe(lang Lang) string {
	if c.p == nil {
		return c.String()
	}
	d := c.p.describe[lang]
	if d == nil {
		d = c.p.describe[EN]
	}
	return d(args(c.Args))
}

// NeedsState reports whether the check reads subtask state (Observation.State).
func (c Check) NeedsState() bool { return c.p != nil && c.p.state }

// Eval judges the check on o; when it does not hold, why says what was seen.
func (c Check) Eval(o *Observation) (ok bool, why string) {
	if c.p == nil {
		return false, fmt.Sprintf("unknown predicate %q", c.Name)
	}
	if o == nil || o.Now == nil {
		return false, "no snapshot to judge"
	}
	if o.Start == nil {
		o.Start = o.Now
	}
	if c.p.state && o.State == nil {
		return false, "this check reads subtask state, but no state reader was given"
	}
	return c.p.eval(args(c.Args), o)
}

// Result is the outcome of a step's checks.
type Result struct {
	Done   bool          `json:"done"`
	Checks []CheckResult `json:"checks"`
}

// CheckResult is one check's outcome.
type CheckResult struct {
	Check string `json:"check"`
	OK    bool   `json:"ok"`
	Why   string `json:"why,omitempty"`
}

// Evaluate judges every check of the step on o.
func (s *Step) Evaluate(o *Observation) Result {
	r := Result{Done: true}
	for _, c := range s.Checks {
		ok, why := c.Eval(o)
		r.Checks = append(r.Checks, CheckResult{Check: c.String(), OK: ok, Why: why})
		r.Done = r.Done && ok
	}
	return r
}

// Tracker follows one step of a lesson on a live engine, for a viewer that
// shows a tick when the step is done: create it when the step's actions are
// performed (with the snapshot of that moment), feed it the engine's events,
// and ask it with a fresh snapshot.
//
// A learner may perform a step's action more than once: a second click
// that the engine refuses (the TaskManager is already lost, the subtask
// already failed), or a second crash after the first one's restart. Each
// such moment is added with Restart, and the step is done when its checks
// hold from any of them: "this step" means since one of the learner's
// actions, and a repeated click must not move the start past what the
// first one caused (the job restarted before the second click, so
// "restarted in this step" measured from the second could never hold).
//
// A Tracker is not safe for concurrent use; the web keeps one per session
// and calls it from the session's goroutine.
type Tracker struct {
	step *Step
	// starts are the moments the step was acted on, oldest first (at
	// most maxStarts: the first and the latest ones).
	starts []engine.Snapshot
	events []engine.Event
}

// maxTrackedEvents bounds the events a Tracker keeps; only checks that look
// at events need them, and they look for one kind each.
const maxTrackedEvents = 100000

// maxStarts bounds the moments a Tracker judges from: the step's first
// action and the latest ones.
const maxStarts = 8

// NewTracker starts tracking step from start.
func NewTracker(step *Step, start engine.Snapshot) *Tracker {
	return &Tracker{step: step, starts: []engine.Snapshot{start}}
}

// Restart adds a moment the step was acted on again; the events observed
// so far are kept (they happened in this step).
func (t *Tracker) Restart(start engine.Snapshot) {
	if len(t.starts) == maxStarts {
		// Keep the first action and the latest ones.
		t.starts = append(t.starts[:1], t.starts[2:]...)
	}
	t.starts = append(t.starts, start)
}

// Starts is how many moments the step is judged from.
func (t *Tracker) Starts() int { return len(t.starts) }

// Observe records events the engine published since the tracker started.
func (t *Tracker) Observe(events ...engine.Event) {
	for _, e := range events {
		if relevantEvent(e.Kind) && len(t.events) < maxTrackedEvents {
			t.events = append(t.events, e)
		}
	}
}

// Check judges the step on now, from each moment it was acted on, the
// latest first; state may be nil if no check needs it. The result is the
// first that is done, else the latest moment's.
func (t *Tracker) Check(now engine.Snapshot, state StateReader) Result {
	var latest Result
	for i := len(t.starts) - 1; i >= 0; i-- {
		r := t.step.Evaluate(&Observation{Start: &t.starts[i], Now: &now, Events: t.events, State: state})
		if r.Done {
			return r
		}
		if i == len(t.starts)-1 {
			latest = r
		}
	}
	return latest
}

// relevantEvent lists the event kinds predicates read.
func relevantEvent(k engine.EventKind) bool {
	return k == engine.EvChannelBlocked || k == engine.EvRescalePlan || k == engine.EvTaskManager || k == engine.EvTaskStatus ||
		k == engine.EvRestoreRequested
}

// TrackedEvent reports whether checks read events of kind k: a viewer that
// restarts a Tracker hands it the step's events of these kinds again.
func TrackedEvent(k engine.EventKind) bool { return relevantEvent(k) }

// --- the catalogue -------------------------------------------------------------

type argKind int

const (
	kInt argKind = iota
	kString
	kBool
	kScalar     // a number or text, compared as text
	kCheckpoint // "latest", 0 or a checkpoint id
	kIntMatrix  // [[0, 4], [5, 9]]
	kTextMatrix // [[p0, p1], [p2]]
)

func (k argKind) String() string {
	return [...]string{"a whole number", "text", "true or false", "a number or text", `"latest", 0 or a checkpoint id`,
		"a list of lists of whole numbers", "a list of lists of text"}[k]
}

// refKind says what an argument names in the job.
type refKind int

const (
	refNone refKind = iota
	refOperator
	refKeyed
	refSource
	refSink
)

type argSpec struct {
	name     string
	kind     argKind
	required bool
	ref      refKind
}

type predicate struct {
	name string
	args []argSpec
	// oneOf lists arguments of which at least one must be given.
	oneOf    []string
	state    bool
	describe map[Lang]func(a args) string
	eval     func(a args, o *Observation) (bool, string)
	// lint checks arguments against the job the step meets.
	lint func(a args, js *jobState) error
}

// args are a check's normalized arguments.
type args map[string]any

func (a args) int(k string) int      { n, _ := a[k].(int); return n }
func (a args) str(k string) string   { s, _ := a[k].(string); return s }
func (a args) has(k string) bool     { _, ok := a[k]; return ok }
func (a args) bool(k string) bool    { b, _ := a[k].(bool); return b }
func (a args) ints(k string) [][]int { m, _ := a[k].([][]int); return m }
func (a args) texts(k string) [][]string {
	m, _ := a[k].([][]string)
	return m
}

// normalize checks and converts one argument value from YAML.
func normalize(kind argKind, v any) (any, error) {
	switch kind {
	case kInt:
		return toInt(v)
	case kString:
		if s, ok := v.(string); ok && s != "" {
			return s, nil
		}
	case kBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case kScalar:
		switch t := v.(type) {
		case string:
			return t, nil
		case int, int64, float64:
			n, err := toInt(t)
			if err != nil {
				return nil, err
			}
			return fmt.Sprint(n), nil
		}
	case kCheckpoint:
		if s, ok := v.(string); ok && s == "latest" {
			return s, nil
		}
		if n, err := toInt(v); err == nil && n >= 0 {
			return n, nil
		}
	case kIntMatrix, kTextMatrix:
		rows, ok := v.([]any)
		if !ok {
			break
		}
		var ints [][]int
		var texts [][]string
		for _, r := range rows {
			cells, ok := r.([]any)
			if !ok {
				return nil, fmt.Errorf("want %s, got the row %v", kind, r)
			}
			ir, tr := []int{}, []string{}
			for _, c := range cells {
				if kind == kIntMatrix {
					n, err := toInt(c)
					if err != nil {
						return nil, err
					}
					ir = append(ir, n)
				} else {
					s, err := normalize(kScalar, c)
					if err != nil {
						return nil, err
					}
					tr = append(tr, s.(string))
				}
			}
			ints, texts = append(ints, ir), append(texts, tr)
		}
		if kind == kIntMatrix {
			return ints, nil
		}
		return texts, nil
	}
	return nil, fmt.Errorf("want %s, got %v", kind, v)
}

var catalogue = map[string]*predicate{}

// PredicateNames lists the catalogue, sorted.
func PredicateNames() []string {
	names := make([]string, 0, len(catalogue))
	for n := range catalogue {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func register(p *predicate) { catalogue[p.name] = p }

// newCheck validates a check against the catalogue.
func newCheck(name string, raw map[string]any) (Check, error) {
	p, ok := catalogue[name]
	if !ok {
		return Check{Name: name, Args: raw}, fmt.Errorf("unknown predicate %q (known: %s)", name, strings.Join(PredicateNames(), ", "))
	}
	c := Check{Name: name, Args: map[string]any{}, p: p}
	known := map[string]argSpec{}
	for _, s := range p.args {
		known[s.name] = s
	}
	for k, v := range raw {
		s, ok := known[k]
		if !ok {
			names := make([]string, 0, len(p.args))
			for _, s := range p.args {
				names = append(names, s.name)
			}
			if len(names) == 0 {
				return c, fmt.Errorf("%s takes no arguments, but has %q", name, k)
			}
			return c, fmt.Errorf("%s has unknown argument %q (known: %s)", name, k, strings.Join(names, ", "))
		}
		nv, err := normalize(s.kind, v)
		if err != nil {
			return c, fmt.Errorf("%s argument %s: %w", name, k, err)
		}
		c.Args[k] = nv
	}
	for _, s := range p.args {
		if _, ok := c.Args[s.name]; s.required && !ok {
			return c, fmt.Errorf("%s needs argument %q", name, s.name)
		}
	}
	if len(p.oneOf) > 0 {
		found := false
		for _, k := range p.oneOf {
			found = found || args(c.Args).has(k)
		}
		if !found {
			return c, fmt.Errorf("%s needs at least one of %s", name, strings.Join(p.oneOf, ", "))
		}
	}
	return c, nil
}

// lintRefs checks that the operators and sinks a check names exist in the
// job the step meets, with the right kind.
func (c Check) lintRefs(js *jobState) error {
	for _, s := range c.p.args {
		v, ok := c.Args[s.name].(string)
		if !ok || s.ref == refNone {
			continue
		}
		o, found := js.spec.Operator(v)
		if !found {
			return fmt.Errorf("%s: job %s has no operator %q (it has %s)", c.Name, js.name, v, js.operatorIDs())
		}
		switch {
		case s.ref == refKeyed && !keyedKind(o.Kind):
			return fmt.Errorf("%s: operator %q is a %s, not a keyed operator", c.Name, v, o.Kind)
		case s.ref == refSource && o.Kind != engine.KindSource:
			return fmt.Errorf("%s: operator %q is a %s, not a source", c.Name, v, o.Kind)
		case s.ref == refSink && o.Kind != engine.KindSink:
			return fmt.Errorf("%s: operator %q is a %s, not a sink", c.Name, v, o.Kind)
		}
	}
	if c.p.lint != nil {
		return c.p.lint(args(c.Args), js)
	}
	return nil
}

func keyedKind(k string) bool {
	return k == engine.KindCount || k == engine.KindSum || k == engine.KindWindowCount || k == engine.KindAlerts
}
