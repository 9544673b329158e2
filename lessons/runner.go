package lessons

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/statelab/statelab/engine"
)

// RunOptions configure a headless run of a lesson.
type RunOptions struct {
	// Dir is where the engine keeps checkpoints and local disks; empty
	// means a temporary directory per run, removed when it ends.
	Dir string
	// Logger receives the engine's diagnostics; nil discards them.
	Logger *slog.Logger
}

// readyWithin bounds the engine steps spent waiting for a job to run before
// an action (deploying and restoring take a few hundred).
const readyWithin = 20000

// Report is the outcome of a run that passed.
type Report struct {
	Lesson string
	Steps  []StepReport
	// EngineSteps is the sum over the steps.
	EngineSteps int64
	Elapsed     time.Duration
}

// StepReport is one step of a run.
type StepReport struct {
	ID string
	// EngineSteps is how many engine events the step took, actions and
	// waiting included.
	EngineSteps int64
}

// Failure says which step of which lesson failed and why. Check is the
// predicate that did not hold ("" when an action failed).
type Failure struct {
	Lesson    string
	Step      string
	StepIndex int
	Check     string
	Why       string
}

func (f *Failure) Error() string {
	if f.Check != "" {
		return fmt.Sprintf("lesson %s, step %d %q: check %s did not hold: %s", f.Lesson, f.StepIndex+1, f.Step, f.Check, f.Why)
	}
	return fmt.Sprintf("lesson %s, step %d %q: %s", f.Lesson, f.StepIndex+1, f.Step, f.Why)
}

// Run plays the lesson headlessly on the Stepper: for every step it performs
// the actions, then runs the engine until every check holds, within the
// step's bound. A failing step is returned as a *Failure.
func (l *Lesson) Run(ctx context.Context, opts RunOptions) (*Report, error) {
	began := time.Now()
	r := &runner{l: l, opts: opts}
	defer r.close()
	if err := r.start(MainJob, l.Seed); err != nil {
		return nil, err
	}
	rep := &Report{Lesson: l.Slug}
	for _, st := range l.Steps {
		n, err := r.play(ctx, st)
		if err != nil {
			return rep, err
		}
		rep.Steps = append(rep.Steps, StepReport{ID: st.ID, EngineSteps: n})
		rep.EngineSteps += n
	}
	rep.Elapsed = time.Since(began)
	return rep, nil
}

// Position is a lesson played up to the start of one step: the engine is
// ready for that step's actions ("replay this step", deep links).
type Position struct {
	Stepper *engine.Stepper
	// Job is the job running: "main" or a variant a reset chose.
	Job  string
	Seed int64
}

// PlayTo plays steps 0 … step-1 headlessly and returns the engine at the
// start of step (0 = the lesson's start). The caller owns the Stepper and
// must Close it.
func (l *Lesson) PlayTo(ctx context.Context, step int, opts RunOptions) (*Position, error) {
	if step < 0 || step >= len(l.Steps) {
		return nil, fmt.Errorf("lesson %s has steps 1..%d, not %d", l.Slug, len(l.Steps), step+1)
	}
	r := &runner{l: l, opts: opts}
	if err := r.start(MainJob, l.Seed); err != nil {
		return nil, err
	}
	for _, st := range l.Steps[:step] {
		if _, err := r.play(ctx, st); err != nil {
			r.close()
			return nil, err
		}
	}
	pos := &Position{Stepper: r.s, Job: r.job, Seed: r.seed}
	r.s = nil // handed over
	return pos, nil
}

// runner drives one Stepper through a lesson.
type runner struct {
	l    *Lesson
	opts RunOptions
	s    *engine.Stepper
	job  string
	seed int64
	runs int // engines started, to name their directories

	mu     sync.Mutex
	events []engine.Event
}

func (r *runner) close() {
	if r.s != nil {
		_ = r.s.Close()
		r.s = nil
	}
}

// start (re)creates the engine on a job of the lesson.
func (r *runner) start(job string, seed int64) error {
	r.close()
	spec, err := r.l.Job(job)
	if err != nil {
		return err
	}
	spec.Seed = seed
	// Every engine gets a directory of its own: a reset to the same job
	// must start empty, not find the previous run's checkpoints.
	dir := ""
	if r.opts.Dir != "" {
		r.runs++
		dir = filepath.Join(r.opts.Dir, fmt.Sprintf("%s-%d-%s", r.l.Slug, r.runs, job))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("lesson %s: make the engine's directory: %w", r.l.Slug, err)
		}
	}
	s, err := engine.NewStepper(spec, engine.Options{Dir: dir, Logger: r.opts.Logger, RecordEvents: r.record})
	if err != nil {
		return fmt.Errorf("lesson %s: start job %s: %w", r.l.Slug, job, err)
	}
	r.s, r.job, r.seed = s, job, seed
	r.mu.Lock()
	r.events = nil
	r.mu.Unlock()
	return nil
}

// record keeps the events checks read. The engine calls it synchronously.
func (r *runner) record(e engine.Event) {
	if !relevantEvent(e.Kind) {
		return
	}
	r.mu.Lock()
	if len(r.events) < maxTrackedEvents {
		r.events = append(r.events, e)
	}
	r.mu.Unlock()
}

func (r *runner) takeEvents() []engine.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]engine.Event(nil), r.events...)
}

func (r *runner) fail(st *Step, check, format string, a ...any) *Failure {
	return &Failure{Lesson: r.l.Slug, Step: st.ID, StepIndex: st.Index, Check: check, Why: fmt.Sprintf(format, a...)}
}

// play performs one step and waits for its checks; it returns the engine
// steps taken.
func (r *runner) play(ctx context.Context, st *Step) (int64, error) {
	start := r.s.Snapshot()
	first := start.Step
	r.mu.Lock()
	r.events = nil
	r.mu.Unlock()
	var taken int64 // engine steps of earlier engines (before a reset)
	for _, a := range st.Actions {
		if a.Driver() {
			switch a.Name {
			case cmdStep:
				n := 1
				if _, ok := a.Args["count"]; ok {
					n, _ = argInt(a.Args, "count")
				}
				r.s.Steps(n)
			case cmdReset:
				job, seed := MainJob, r.l.Seed
				if v, ok := a.Args["job"]; ok {
					job, _ = v.(string)
				}
				if _, ok := a.Args["seed"]; ok {
					n, _ := argInt(a.Args, "seed")
					seed = int64(n)
				}
				taken += r.s.Snapshot().Step - first
				if err := r.start(job, seed); err != nil {
					return taken, r.fail(st, "", "action %s: %v", a, err)
				}
				start = r.s.Snapshot()
				first = start.Step
			}
			// pause, resume, speed and snapshot only matter to a viewer.
			continue
		}
		if err := r.waitReady(ctx, st, a); err != nil {
			return taken, err
		}
		snap := r.s.Snapshot()
		cmd, err := engineCommand(a, &snap)
		if err != nil {
			return taken, r.fail(st, "", "action %s: %v", a, err)
		}
		err = r.s.Do(cmd)
		switch {
		case a.ExpectRefused && err == nil:
			return taken, r.fail(st, "", "the engine accepted %s, but the lesson expects it to be refused", a)
		case !a.ExpectRefused && err != nil:
			return taken, r.fail(st, "", "the engine refused %s: %v", a, err)
		}
	}

	// A snapshot compares every sink with its ground truth and costs far
	// more than an engine step, so checks are judged at a growing stride.
	// Checks describe lasting conditions (a transient one, such as a
	// blocked channel, is read from the events), so overshooting is safe.
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return taken + n, err
		}
		now := r.s.Snapshot()
		obs := &Observation{Start: &start, Now: &now, Events: r.takeEvents(), State: r.s}
		res := st.Evaluate(obs)
		n = now.Step - first
		if res.Done {
			return taken + n, nil
		}
		if n >= int64(st.Within) {
			c, why := firstFailing(res)
			return taken + n, r.fail(st, c, "not within %d engine steps: %s", st.Within, why)
		}
		stride := min(max(int(n/2), 8), 1024, st.Within-int(n))
		if r.s.Steps(stride) == 0 {
			now = r.s.Snapshot()
			obs.Now = &now
			if res = st.Evaluate(obs); res.Done {
				return taken + n, nil
			}
			c, why := firstFailing(res)
			return taken + n, r.fail(st, c, "nothing more can happen in the engine (job %s): %s", now.Job.Status, why)
		}
	}
}

func firstFailing(res Result) (string, string) {
	for _, c := range res.Checks {
		if !c.OK {
			return c.Check, c.Why
		}
	}
	return "", "unknown"
}

// waitReady advances the engine until a command can act on a running job:
// every subtask RUNNING, no rescale under way. A job that waits for
// resources or has stopped for good is ready as it is.
func (r *runner) waitReady(ctx context.Context, st *Step, a Action) error {
	for i := 0; ; {
		if err := ctx.Err(); err != nil {
			return err
		}
		snap := r.s.Snapshot()
		if why := NotReady(&snap); why == "" {
			return nil
		} else if i >= readyWithin {
			return r.fail(st, "", "before %s: the job did not become ready within %d engine steps: %s", a, readyWithin, why)
		}
		stride := min(max(i/2, 4), 256)
		if r.s.Steps(stride) == 0 {
			return r.fail(st, "", "before %s: nothing more can happen in the engine (job %s)", a, snap.Job.Status)
		}
		i += stride
	}
}

// NotReady says why the job cannot take a lesson's command yet ("" = it
// can): it is not running, a rescale is under way, or a subtask is not
// running yet. A job waiting for resources, or one that has ended, takes
// the command at once (a lesson may add a TaskManager, or reset). The
// runner and the web lesson sessions wait by this one rule.
func NotReady(s *engine.Snapshot) string {
	j := s.Job
	if j.WaitingForResources {
		return ""
	}
	switch j.Status {
	case engine.JobFailed, engine.JobCanceled, engine.JobFinished:
		return ""
	case engine.JobRunning:
	default:
		return "the job is " + string(j.Status)
	}
	if j.Rescale != nil {
		return "a rescale of " + j.Rescale.Operator + " is under way"
	}
	var waiting []string
	for _, op := range j.Operators {
		for _, t := range op.Subtasks {
			if t.Status != engine.TaskRunning && t.Status != engine.TaskFinished {
				waiting = append(waiting, t.Name+" is "+string(t.Status))
			}
		}
	}
	return strings.Join(waiting, ", ")
}

// CheckAll runs the lessons (all when slugs is empty) one after another and
// calls report after each. It returns the first failure; unknown slugs are
// an error before anything runs.
func (c *Catalog) CheckAll(ctx context.Context, slugs []string, opts RunOptions, report func(*Report, error)) error {
	ls := c.Lessons
	if len(slugs) > 0 {
		ls = nil
		for _, s := range slugs {
			l, ok := c.Lesson(s)
			if !ok {
				return fmt.Errorf("%w: %q (run 'statelab lessons list')", ErrUnknownLesson, s)
			}
			ls = append(ls, l)
		}
	}
	var first error
	for _, l := range ls {
		rep, err := l.Run(ctx, opts)
		if report != nil {
			report(rep, err)
		}
		if err != nil && first == nil {
			first = err
		}
		if errors.Is(err, context.Canceled) {
			return err
		}
	}
	return first
}

// ErrUnknownLesson is returned for a slug no lesson has.
var ErrUnknownLesson = errors.New("lessons: no such lesson")
