package lessons

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twoHints gives the fixture's first step a second hint, in both languages.
func twoHints(t *testing.T, f map[string]string) {
	t.Helper()
	replace(t, f, "01-tiny/lesson.en.md", "> The box is under the source.\n", "> The box is under the source.\n\n> [!hint]\n> Press Enter.\n")
	replace(t, f, "01-tiny/lesson.zh.md", "{step=type}\n", "{step=type}\n\n> [!hint]\n> 按回车。\n")
}

// A capstone's steps may have up to three hints, unlocked one after
// another; an ordinary lesson keeps one per step.
func TestCapstoneHints(t *testing.T) {
	f := fixture()
	twoHints(t, f)
	_, err := Load(mapFS(f))
	require.ErrorContains(t, err, "the step has 2 hints; keep one (only a capstone's steps have several)")

	f = fixture()
	twoHints(t, f)
	f["01-tiny/scenario.yaml"] = "capstone: {hintEvery: 45}\n" + f["01-tiny/scenario.yaml"]
	c, err := Load(mapFS(f))
	require.NoError(t, err)
	l := c.Lessons[0]
	require.NotNil(t, l.Capstone)
	v := l.View(EN, c)
	assert.True(t, v.Capstone)
	assert.Equal(t, 45, v.HintEvery)
	require.Len(t, v.Steps[0].HintsHTML, 2)
	assert.Contains(t, v.Steps[0].HintsHTML[0], "The box is under the source.")
	assert.Contains(t, v.Steps[0].HintsHTML[1], "Press Enter.")
	assert.NotContains(t, v.Steps[0].HintsHTML[0], "Press Enter.", "each hint is its own block")
	require.Len(t, v.Steps[1].HintsHTML, 1)

	f["01-tiny/scenario.yaml"] = strings.Replace(f["01-tiny/scenario.yaml"], "hintEvery: 45", "hintEvery: 1", 1)
	_, err = Load(mapFS(f))
	require.ErrorContains(t, err, "capstone: hintEvery is 1; give the seconds between hints, 10 to 600")
}

// The course's capstone: the article's figure (source 1 -> 2, the keyed
// window operator 2 -> 3), then a lost TaskManager; its last goal is exact
// window counts with no duplicates and no losses, and it is the last lesson.
func TestCourseCapstone(t *testing.T) {
	c, err := Default()
	require.NoError(t, err)
	l := c.Lessons[len(c.Lessons)-1]
	require.NotNil(t, l.Capstone, "the course ends with its capstone")
	job, err := l.Job(MainJob)
	require.NoError(t, err)
	par := map[string]int{}
	for _, o := range job.Operators {
		par[o.ID] = o.Parallelism
	}
	assert.Equal(t, 1, par["source"])
	assert.Equal(t, 2, par["window"])
	var rescales []string
	for _, a := range l.Steps[0].Actions {
		rescales = append(rescales, a.String())
	}
	assert.ElementsMatch(t, []string{"rescale{operator: source, parallelism: 2}", "rescale{operator: window, parallelism: 3}"}, rescales)
	assert.Equal(t, "crash-taskmanager", l.Steps[1].Actions[0].Name)
	var last []string
	for _, ch := range l.Steps[len(l.Steps)-1].Checks {
		last = append(last, ch.Name)
	}
	assert.Subset(t, last, []string{"window-counts-exact", "no-sink-duplicates", "no-sink-losses"})
	for _, st := range l.Steps {
		for _, lang := range Langs {
			assert.NotEmpty(t, st.Text[lang].HintsHTML, "%s %s has hints", st.ID, lang)
		}
	}
}
