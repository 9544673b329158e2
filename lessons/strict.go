package lessons

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/statelab/statelab/engine"
)

// Strictness, as the lesson mutation test (mutation_test.go) judges it: a
// learner who does nothing may wait far longer than the action needs, and
// the check must still not hold.
const (
	strictHorizon = 10   // times the engine steps the step took with its action
	strictFloor   = 2000 // engine steps at least
)

// RunStrict plays the lesson as Run does and, at every step that asks the
// learner to act on the job, also plays the step again on a fork of the
// engine (forks get temporary directories) with those actions taken away (viewer controls kept). If the
// step's checks hold without the actions, the step fails: its check
// already holds before its step, so it proves nothing about what the
// learner did. It is the "with no action" half of the mutation test, for
// lessons written outside this repository (statelab lessons check --dir).
func (l *Lesson) RunStrict(ctx context.Context, opts RunOptions) (*Report, error) {
	began := time.Now()
	r := &runner{l: l, opts: opts}
	defer r.close()
	if err := r.start(MainJob, l.Seed); err != nil {
		return nil, err
	}
	rep := &Report{Lesson: l.Slug}
	for _, st := range l.Steps {
		var base *engine.Stepper
		baseJob, baseSeed := r.job, r.seed
		if learnerActs(st) {
			b, err := r.s.Fork(engine.Options{Logger: opts.Logger})
			if err != nil {
				return rep, fmt.Errorf("lesson %s: fork the engine: %w", l.Slug, err)
			}
			base = b
		}
		n, err := r.play(ctx, st)
		if err != nil {
			if base != nil {
				_ = base.Close()
			}
			return rep, err
		}
		if base != nil {
			bound := min(st.Within, max(strictFloor, strictHorizon*int(n)))
			held, err := l.holdsWithout(ctx, base, baseJob, baseSeed, st, bound, opts)
			_ = base.Close()
			if err != nil {
				return rep, err
			}
			if held {
				return rep, &Failure{Lesson: l.Slug, Step: st.ID, StepIndex: st.Index,
					Why: fmt.Sprintf("the check already holds before its step: played without the step's actions for %d engine steps, every check held. "+
						"A check must need what the learner does: compare with the step's start (new: instead of min:, restarted, key-groups-moved), "+
						"use a word the job's generator never writes, or name what the action changes (taskmanager-lost)", bound)}
			}
		}
		rep.Steps = append(rep.Steps, StepReport{ID: st.ID, EngineSteps: n})
		rep.EngineSteps += n
	}
	rep.Elapsed = time.Since(began)
	return rep, nil
}

// learnerActs reports whether the step asks the learner to do something to
// the job (viewer controls do not count; a reset to a job does).
func learnerActs(st *Step) bool {
	for _, a := range st.Actions {
		if !a.Driver() || a.Name == cmdReset {
			return true
		}
	}
	return false
}

// holdsWithout plays st on a fork of base with only its viewer controls
// (pause, step, speed …) for bound engine steps and reports whether every
// check held.
func (l *Lesson) holdsWithout(ctx context.Context, base *engine.Stepper, job string, seed int64, st *Step, bound int, opts RunOptions) (bool, error) {
	mr := &runner{l: l, opts: opts, job: job, seed: seed}
	fk, err := base.Fork(engine.Options{Logger: opts.Logger, RecordEvents: mr.record})
	if err != nil {
		return false, fmt.Errorf("lesson %s: fork the engine: %w", l.Slug, err)
	}
	mr.s = fk
	defer mr.close()
	ms := *st
	ms.Actions = nil
	for _, a := range st.Actions {
		if a.Driver() && a.Name != cmdReset {
			ms.Actions = append(ms.Actions, a)
		}
	}
	ms.Within = bound
	_, err = mr.play(ctx, &ms)
	var f *Failure
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &f):
		return false, nil
	}
	return false, err
}
