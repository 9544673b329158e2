package lessons

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFixtureLoads(t *testing.T) {
	c, err := Load(mapFS(fixture()))
	require.NoError(t, err)
	require.Len(t, c.Lessons, 1)
	l := c.Lessons[0]
	assert.Equal(t, "01-tiny", l.Slug)
	assert.Equal(t, 1, l.Number)
	assert.Equal(t, 5, l.Minutes)
	require.Len(t, l.Steps, 2)
	st := l.Steps[0]
	assert.Equal(t, "type", st.ID)
	assert.Equal(t, 500, st.Within)
	assert.Equal(t, "Type a line", st.Text[EN].Title)
	assert.Equal(t, "输入一行", st.Text[ZH].Title)
	assert.Equal(t, "The box is under the source.", st.Text[EN].Hint)
	assert.NotContains(t, st.Text[EN].Body, "[!hint]", "the hint is taken out of the body")
	assert.Equal(t, "Tiny", l.Text[EN].Title)
	assert.Equal(t, "Done", l.Text[EN].EndTitle)
	assert.Equal(t, "", l.Text[ZH].End, "the closing section is optional")
	assert.Equal(t, []string{"main", "other"}, l.JobNames())
	assert.Equal(t, `{"text":"a b a"}`, string(st.Actions[0].MarshalArgs()))
	assert.Equal(t, `keyed-state{equals: 2, key: a, operator: count}`, st.Checks[0].String())
	assert.Contains(t, c.Glossary[ZH].HTML, "<td>状态</td>")
}

// Every defect the lint promises to catch, each on its own.
func TestLintCatchesEachDefect(t *testing.T) {
	const sc, en, zh = "01-tiny/scenario.yaml", "01-tiny/lesson.en.md", "01-tiny/lesson.zh.md"
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, f map[string]string)
		step   string // the step the problem names ("" = none expected)
		want   string
	}{
		{"missing translation", func(t *testing.T, f map[string]string) { delete(f, zh) }, "", "the zh translation is missing"},
		{"step missing in a translation", func(t *testing.T, f map[string]string) {
			replace(t, f, zh, "## 做一次检查点 {step=save}", "## 做一次检查点 {step=saved}")
		}, "save", "no section {step=save} in zh"},
		{"section for no step", func(t *testing.T, f map[string]string) {
			replace(t, f, en, "## Done {end}", "## Extra {step=extra}\n\nMore.\n\n> [!hint]\n> h\n\n## Done {end}")
		}, "extra", "a section for a step the scenario does not have"},
		{"sections out of order", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "  - id: type\n", "  - id: typex\n")
			replace(t, f, sc, "  - id: save\n", "  - id: type\n")
			replace(t, f, sc, "  - id: typex\n", "  - id: save\n")
		}, "", "the sections are in the order type, save, the scenario's steps in the order save, type"},
		{"step without hint", func(t *testing.T, f map[string]string) {
			replace(t, f, en, "> [!hint]\n> The button is in the checkpoint panel.\n", "")
		}, "save", "the step has no hint"},
		{"heading without marker", func(t *testing.T, f map[string]string) {
			replace(t, f, en, "## Done {end}", "## Done")
		}, "", `level-2 heading "## Done" has no {step=id} or {end} marker`},
		{"front matter without summary", func(t *testing.T, f map[string]string) {
			replace(t, f, zh, "summary: 一个小课程。\n", "")
		}, "", "front matter has no summary"},
		{"step with no check", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "    check:\n      - checkpoint-completed: {new: 1}\n", "")
		}, "save", "the step has no check"},
		{"unknown predicate", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "checkpoint-completed: {new: 1}", "checkpoint-done: {new: 1}")
		}, "save", `unknown predicate "checkpoint-done"`},
		{"predicate without a required argument", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "{operator: count, key: a, equals: 2}", "{operator: count, key: a}")
		}, "type", `keyed-state needs argument "equals"`},
		{"predicate with an unknown argument", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "{new: 1}", "{new: 1, latest: true}")
		}, "save", `checkpoint-completed has unknown argument "latest"`},
		{"predicate argument of the wrong type", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "{new: 1}", "{new: one}")
		}, "save", "checkpoint-completed argument new: want a whole number"},
		{"predicate naming an unknown operator", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "{operator: count, key: a, equals: 2}", "{operator: counter, key: a, equals: 2}")
		}, "type", `job main has no operator "counter"`},
		{"keyed predicate on a stateless operator", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "{operator: count, key: a, equals: 2}", "{operator: tokenizer, key: a, equals: 2}")
		}, "type", `operator "tokenizer" is a tokenizer, not a keyed operator`},
		{"window check against a job without clicks", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "checkpoint-completed: {new: 1}", "window-counts-exact: {n: 20}")
		}, "save", "has no click source"},
		{"unknown command", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "{name: trigger-checkpoint}", "{name: checkpoint}")
		}, "save", `unknown command "checkpoint"`},
		{"command with an unknown argument", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "{name: trigger-checkpoint}", "{name: rescale, args: {operator: count, paralelism: 2}}")
		}, "save", `rescale has unknown argument "paralelism"`},
		{"command without a required argument", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "{name: trigger-checkpoint}", "{name: rescale, args: {operator: count}}")
		}, "save", `rescale needs argument "parallelism"`},
		{"crash of a subtask that does not exist", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "{name: trigger-checkpoint}", "{name: crash-subtask, args: {operator: count, index: 1}}")
		}, "save", "count has 1 subtasks here, so index 1 does not exist"},
		{"crash of a TaskManager that does not exist", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "{name: trigger-checkpoint}", "{name: crash-taskmanager, args: {taskManager: tm-2}}")
		}, "save", `there is no TaskManager "tm-2"`},
		{"inject into a partition that does not exist", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, `{text: "a b a"}`, `{text: "a b a", partition: 3}`)
		}, "type", "source source has partitions 0..0, not 3"},
		{"step count out of range", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "{name: trigger-checkpoint}", "{name: step, args: {count: 0}}")
		}, "save", "step: count 0 is not within 1..10000"},
		{"reset to an unknown variant", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "{name: trigger-checkpoint}", "{name: reset, args: {job: fs}}")
		}, "save", `has no job variant "fs"`},
		{"unknown expectation", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "{name: trigger-checkpoint}", "{name: trigger-checkpoint, expect: failure}")
		}, "save", `expect "failure" is unknown`},
		{"job the engine refuses", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "{from: tokenizer, to: count, partitioner: hash}\n    - {from: count", "{from: tokenizer, to: count, partitioner: rebalance}\n    - {from: count")
		}, "", "keyed operator \"count\" needs hash (keyBy) inputs"},
		{"job name unfit for a directory", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "name: tiny\n", "name: tiny job\n")
		}, "", `job name "tiny job"`},
		{"minutes out of range", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "minutes: 5", "minutes: 30")
		}, "", "minutes is 30; a lesson takes 5 to 10 minutes"},
		{"unknown scenario field", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "seed: 1\n", "seed: 1\nbackend: pebble\n")
		}, "", "field backend not found"},
		{"duplicate step id", func(t *testing.T, f map[string]string) {
			replace(t, f, sc, "  - id: save\n", "  - id: type\n")
		}, "type", `step id "type" is used twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := fixture()
			tc.break_(t, files)
			_, err := Load(mapFS(files))
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrLint), "a lint error: %v", err)
			var le *LintError
			require.True(t, errors.As(err, &le))
			var found *Problem
			for i, p := range le.Problems {
				if strings.Contains(p.Msg, tc.want) {
					found = &le.Problems[i]
				}
			}
			require.NotNil(t, found, "no problem says %q; got:\n%v", tc.want, err)
			assert.Equal(t, "01-tiny", found.Lesson)
			if tc.step != "" {
				assert.Equal(t, tc.step, found.Step, "the problem names the step")
			}
		})
	}
}

func TestLintNeedsLessonsAndGlossary(t *testing.T) {
	files := fixture()
	delete(files, "glossary.zh.md")
	_, err := Load(mapFS(files))
	require.ErrorContains(t, err, "glossary.zh.md: the glossary is missing in this language")

	files = fixture()
	files["2-bad/scenario.yaml"] = fixtureScenario
	_, err = Load(mapFS(files))
	require.ErrorContains(t, err, "lesson 2-bad: a lesson folder is named NN-words")
}
