package lessons

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

func loadFixture(t *testing.T, files map[string]string) *Lesson {
	t.Helper()
	c, err := Load(mapFS(files))
	require.NoError(t, err)
	return c.Lessons[0]
}

func TestRunFixturePasses(t *testing.T) {
	l := loadFixture(t, fixture())
	rep, err := l.Run(context.Background(), RunOptions{})
	require.NoError(t, err)
	require.Len(t, rep.Steps, 2)
	assert.Equal(t, "type", rep.Steps[0].ID)
	assert.Positive(t, rep.Steps[0].EngineSteps, "the injected line had to travel")
}

// A scenario whose check cannot hold fails with the lesson, the step and the
// predicate named.
func TestRunBrokenScenarioNamesLessonStepPredicate(t *testing.T) {
	files := fixture()
	// "a b a" counts a twice, never three times.
	replace(t, files, "01-tiny/scenario.yaml", "{operator: count, key: a, equals: 2}", "{operator: count, key: a, equals: 3}")
	l := loadFixture(t, files)
	_, err := l.Run(context.Background(), RunOptions{})
	var f *Failure
	require.True(t, errors.As(err, &f), "a *Failure: %v", err)
	assert.Equal(t, "01-tiny", f.Lesson)
	assert.Equal(t, "type", f.Step)
	assert.Equal(t, 0, f.StepIndex)
	assert.Equal(t, "keyed-state{equals: 3, key: a, operator: count}", f.Check)
	assert.Contains(t, f.Why, "count#0 holds a=2")
	assert.Contains(t, err.Error(), `lesson 01-tiny, step 1 "type": check keyed-state{equals: 3, key: a, operator: count} did not hold`)
}

func TestRunRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, action, want string
	}{
		// Default max parallelism for parallelism 1 is 128.
		{"a refusal the lesson did not expect", "{name: rescale, args: {operator: count, parallelism: 129}}", "the engine refused rescale{operator: count, parallelism: 129}"},
		{"an expected refusal that did not come", "{name: add-taskmanager, expect: refused}", "the engine accepted add-taskmanager{}, but the lesson expects it to be refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := fixture()
			replace(t, files, "01-tiny/scenario.yaml", "{name: trigger-checkpoint}", tc.action)
			l := loadFixture(t, files)
			_, err := l.Run(context.Background(), RunOptions{})
			var f *Failure
			require.True(t, errors.As(err, &f), "a *Failure: %v", err)
			assert.Equal(t, "save", f.Step)
			assert.Equal(t, "", f.Check, "an action failed, not a check")
			assert.Contains(t, f.Why, tc.want)
		})
	}
}

func TestRunExpectedRefusalPasses(t *testing.T) {
	files := fixture()
	replace(t, files, "01-tiny/scenario.yaml", "{name: trigger-checkpoint}", "{name: rescale, args: {operator: count, parallelism: 129}, expect: refused}")
	replace(t, files, "01-tiny/scenario.yaml", "checkpoint-completed: {new: 1}", "command-refused: {name: rescale}")
	_, err := loadFixture(t, files).Run(context.Background(), RunOptions{})
	require.NoError(t, err)
}

func TestRunResetToVariant(t *testing.T) {
	files := fixture()
	// After the reset the new job has counted nothing: a is absent, so the
	// check that a counts 2 in the first step cannot be met again; check
	// the variant's own name instead through a fresh count.
	replace(t, files, "01-tiny/scenario.yaml", "{name: trigger-checkpoint}", "{name: reset, args: {job: other}}\n      - {name: inject, args: {text: \"a\"}}")
	replace(t, files, "01-tiny/scenario.yaml", "checkpoint-completed: {new: 1}", "keyed-state: {operator: count, key: a, equals: 1}")
	_, err := loadFixture(t, files).Run(context.Background(), RunOptions{})
	require.NoError(t, err, "a count of 1 shows the reset started a new job")
}

func TestPlayToStopsBeforeTheStep(t *testing.T) {
	l := loadFixture(t, fixture())
	pos, err := l.PlayTo(context.Background(), 1, RunOptions{})
	require.NoError(t, err)
	defer pos.Stepper.Close()
	assert.Equal(t, MainJob, pos.Job)
	snap := pos.Stepper.Snapshot()
	assert.Equal(t, 0, snap.Checkpoints.Counts.Completed, "step 2's checkpoint is not taken yet")
	v, err := pos.Stepper.TaskState("count#0", 0)
	require.NoError(t, err)
	require.NotEmpty(t, v.Keyed, "step 1 was played")

	// The tracker judges step 2 live, as the web would.
	tr := NewTracker(l.Steps[1], snap)
	assert.False(t, tr.Check(snap, pos.Stepper).Done)
	require.NoError(t, pos.Stepper.Do(engine.Command{Name: engine.CmdTriggerCheckpoint}))
	pos.Stepper.Steps(200)
	assert.True(t, tr.Check(pos.Stepper.Snapshot(), pos.Stepper).Done)

	_, err = l.PlayTo(context.Background(), 2, RunOptions{})
	require.ErrorContains(t, err, "has steps 1..2, not 3")
}

func TestCheckAllUnknownSlug(t *testing.T) {
	c, err := Load(mapFS(fixture()))
	require.NoError(t, err)
	err = c.CheckAll(context.Background(), []string{"99-nope"}, RunOptions{}, nil)
	require.ErrorIs(t, err, ErrUnknownLesson)
}

// With a data directory, a reset to the same job starts empty: it must not
// restore the checkpoint the previous engine left there.
func TestRunResetWithDirStartsEmpty(t *testing.T) {
	files := fixture()
	replace(t, files, "01-tiny/scenario.yaml", "      - checkpoint-completed: {new: 1}\n    within: 500\n",
		"      - checkpoint-completed: {new: 1}\n    within: 500\n  - id: again\n    actions:\n      - {name: reset, args: {job: main}}\n      - {name: inject, args: {text: \"a\"}}\n    check:\n      - keyed-state: {operator: count, key: a, equals: 1}\n    within: 500\n")
	replace(t, files, "01-tiny/lesson.en.md", "## Done {end}", "## Again {step=again}\n\nStart over.\n\n> [!hint]\n> h\n\n## Done {end}")
	replace(t, files, "01-tiny/lesson.zh.md", "> 按钮在检查点面板里。\n", "> 按钮在检查点面板里。\n\n## 重来 {step=again}\n\n重新开始。\n\n> [!hint]\n> 提示\n")
	_, err := loadFixture(t, files).Run(context.Background(), RunOptions{Dir: t.TempDir()})
	require.NoError(t, err)
}
