package lessons

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// The lesson mutation test: a step's check must hold only because of what
// the learner did in that step. Every lesson is played headlessly; at the
// start of every step that asks the learner to act, a fork of the engine
// plays the step again with its actions taken away (all of them, and each
// one alone) or replaced by what the UI offers next to them — crash a
// subtask instead of its TaskManager, rescale by one instead of to N, reset
// the job that runs instead of switching to a variant, type part of the
// line — and the step's
// check must NOT hold, for longer than the step's own bound.

// mutant is a step played another way.
type mutant struct {
	what    string
	actions []Action
}

// A mutant is judged for mutationHorizon times the engine steps the step
// took with its real action, at least mutationFloor and at most the step's
// own bound: a learner who does not act may wait far longer than the action
// needs, and the check must still not hold. (The real steps take tens to a
// few hundred engine steps; the bound keeps the test to seconds.)
const (
	mutationHorizon = 10
	mutationFloor   = 2000
)

func TestLessonMutationNoActionStepTicksWithoutItsAction(t *testing.T) {
	c, err := Default()
	require.NoError(t, err)
	total := 0
	for _, l := range c.Lessons {
		t.Run(l.Slug, func(t *testing.T) {
			began := time.Now()
			defer func() { t.Logf("%s in %s", l.Slug, time.Since(began).Round(time.Millisecond)) }()
			r := &runner{l: l, opts: RunOptions{Dir: t.TempDir()}}
			defer r.close()
			require.NoError(t, r.start(MainJob, l.Seed))
			for _, st := range l.Steps {
				if !learnerActs(st) {
					_, err := r.play(context.Background(), st)
					require.NoError(t, err, "the lesson itself must pass")
					continue
				}
				// The step's start, kept to play the mutants from after the
				// step itself has shown how long its action takes.
				base, err := r.s.Fork(engine.Options{Dir: t.TempDir()})
				require.NoError(t, err)
				snap := base.Snapshot()
				baseJob, baseSeed := r.job, r.seed
				took, err := r.play(context.Background(), st)
				require.NoError(t, err, "the lesson itself must pass")
				bound := min(st.Within, max(mutationFloor, mutationHorizon*int(took)))
				for _, m := range mutants(st, &snap) {
					total++
					if why := playMutant(t, r.l, base, baseJob, baseSeed, st, m, bound); why != "" {
						t.Errorf("step %d %q %s: the check held (%s) — it must need the step's own action", st.Index+1, st.ID, m.what, why)
					}
				}
				require.NoError(t, base.Close())
			}
		})
	}
	t.Logf("%d mutants played", total)
	require.Positive(t, total)
}

// mutants lists the ways to play st without its action. snap is the job
// at the step's start.
func mutants(st *Step, snap *engine.Snapshot) []mutant {
	keep := func(a Action) bool { return a.Driver() && a.Name != cmdReset }
	var out []mutant
	var none []Action
	acting := 0
	for _, a := range st.Actions {
		if keep(a) {
			none = append(none, a)
		} else {
			acting++
		}
	}
	out = append(out, mutant{what: "with no action", actions: none})
	for i, a := range st.Actions {
		if keep(a) {
			continue
		}
		without := slices.Delete(slices.Clone(st.Actions), i, i+1)
		if acting > 1 {
			out = append(out, mutant{what: "without " + a.String(), actions: without})
		}
		for _, n := range neighbours(a, snap) {
			with := slices.Clone(st.Actions)
			with[i] = n
			out = append(out, mutant{what: fmt.Sprintf("with %s instead of %s", n, a), actions: with})
		}
	}
	return out
}

// neighbours are the actions the UI offers beside a: a subtask's crash
// beside its TaskManager's, a rescale by one beside a rescale to N, a reset
// of the job that runs beside a reset to a variant, and another line in the
// text box (the step's line without its first word).
func neighbours(a Action, snap *engine.Snapshot) []Action {
	if a.ExpectRefused {
		return nil
	}
	var out []Action
	switch a.Name {
	case cmdCrashTaskManager:
		// One subtask of that TaskManager, a keyed one when it runs one:
		// the state the lesson is about lives there.
		tm, _ := argString(a.Args, "taskManager")
		var pick *engine.SubtaskView
		var pickOp string
		for _, op := range snap.Job.Operators {
			for i, st := range op.Subtasks {
				if st.TaskManager == tm && (pick == nil || (op.Keyed && !isKeyed(snap, pickOp))) {
					pick, pickOp = &op.Subtasks[i], op.ID
				}
			}
		}
		if pick != nil {
			out = append(out, Action{Name: cmdCrashSubtask, Args: map[string]any{"operator": pickOp, "index": pick.Index}})
		}
	case cmdRescale:
		op, _ := argString(a.Args, "operator")
		to, _ := argInt(a.Args, "parallelism")
		v, _ := operatorView(snap, op)
		if v == nil {
			break // the operator appears after a reset in the same step
		}
		for _, p := range []int{v.Parallelism - 1, v.Parallelism + 1} {
			if p >= 1 && p != to && p <= v.MaxParallelism {
				out = append(out, Action{Name: cmdRescale, Args: map[string]any{"operator": op, "parallelism": p}})
			}
		}
	case cmdInject:
		// A line typed half: the text without its first word.
		text, _ := argString(a.Args, "text")
		if i := strings.IndexByte(text, ' '); i > 0 {
			n := Action{Name: cmdInject, Args: maps.Clone(a.Args)}
			n.Args["text"] = text[i+1:]
			out = append(out, n)
		}
	case cmdReset:
		if job, _ := a.Args["job"].(string); job != "" && job != MainJob {
			out = append(out, Action{Name: cmdReset})
		}
	}
	return out
}

func isKeyed(snap *engine.Snapshot, id string) bool {
	op, _ := operatorView(snap, id)
	return op != nil && op.Keyed
}

// playMutant plays m on a fork of base (the engine at the step's start)
// for bound engine steps and returns why the step's checks held ("" when
// they did not, as they must not).
func playMutant(t *testing.T, l *Lesson, base *engine.Stepper, job string, seed int64, st *Step, m mutant, bound int) string {
	t.Helper()
	mr := &runner{l: l, opts: RunOptions{Dir: t.TempDir()}, job: job, seed: seed}
	fk, err := base.Fork(engine.Options{Dir: t.TempDir(), RecordEvents: mr.record})
	require.NoError(t, err)
	mr.s = fk
	defer mr.close()
	ms := *st
	ms.Actions = m.actions
	ms.Within = bound
	_, err = mr.play(context.Background(), &ms)
	var f *Failure
	switch {
	case err == nil:
		return "every check held"
	case errors.As(err, &f):
		return "" // a check did not hold, or the mutated actions were refused
	default:
		require.NoError(t, err)
	}
	return ""
}

// Lesson 11's dead end: a learner who pressed + once (count 2 → 3) saw the
// step tick and could then never get count to 4. Now the step waits for 4,
// and the next step's "do it for me" (one more TaskManager) holds even if
// the learner had added one already.
func TestLesson11PlusOnceDoesNotTickAndExtraTaskManagerIsFine(t *testing.T) {
	c, err := Default()
	require.NoError(t, err)
	l, ok := c.Lesson("11-savepoints-and-scaling-out")
	require.True(t, ok)
	ctx := context.Background()
	rescale := func(p int) Action {
		return Action{Name: cmdRescale, Args: map[string]any{"operator": "count", "parallelism": p}}
	}

	r := &runner{l: l, opts: RunOptions{Dir: t.TempDir()}}
	defer r.close()
	require.NoError(t, r.start(MainJob, l.Seed))
	_, err = r.play(ctx, l.Steps[0])
	require.NoError(t, err)
	plus := *l.Steps[1]
	plus.Actions = []Action{rescale(3)}
	_, err = r.play(ctx, &plus)
	var f *Failure
	require.ErrorAs(t, err, &f, "count at 3 must not tick the step that asks for 4")
	assert.Equal(t, "parallelism{n: 4, operator: count}", f.Check)

	r2 := &runner{l: l, opts: RunOptions{Dir: t.TempDir()}}
	defer r2.close()
	require.NoError(t, r2.start(MainJob, l.Seed))
	for _, st := range l.Steps[:2] {
		_, err = r2.play(ctx, st)
		require.NoError(t, err)
	}
	twice := *l.Steps[2]
	twice.Actions = []Action{{Name: cmdAddTaskManager}, {Name: cmdAddTaskManager}}
	_, err = r2.play(ctx, &twice)
	require.NoError(t, err, "a TaskManager more than needed does not break the last step")
}
