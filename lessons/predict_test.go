package lessons

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// withPrediction adds a key-owner prediction to the fixture's first step,
// with its question and why in both languages.
func withPrediction(t *testing.T, f map[string]string, predict string) {
	t.Helper()
	replace(t, f, "01-tiny/scenario.yaml", "  - id: type\n", "  - id: type\n    predict: "+predict+"\n")
	for _, file := range []string{"01-tiny/lesson.en.md", "01-tiny/lesson.zh.md"} {
		s := f[file]
		i := strings.Index(s, "{step=type}\n") + len("{step=type}\n")
		f[file] = s[:i] + "\n> [!predict]\n> Which subtask owns `a`?\n\n> [!why]\n> Its key group is in that subtask's range.\n" + s[i:]
	}
}

// The answer is Flink's, computed, never written in the scenario: the
// article's key a is in key group 1 at max parallelism 10, so subtask 0 owns
// it at p = 2 and at p = 3 (issue 19, from Flink's murmur hash); flink is in
// key group 4, subtask 1 at p = 3 (lesson 08's key-owner check, which the
// engine passes).
func TestPredictionAnswerIsFlinks(t *testing.T) {
	for _, tc := range []struct {
		key  string
		p    int
		want string
	}{{"a", 2, "count#0"}, {"a", 3, "count#0"}, {"flink", 3, "count#1"}, {"flink", 2, "count#0"}} {
		js := &jobState{spec: mustJob(t)}
		js.spec.Operators[2].MaxParallelism = 10
		p, err := newPrediction(&predictFile{Kind: "key-owner", Operator: "count", Key: tc.key, Parallelism: tc.p}, js)
		require.NoError(t, err)
		assert.Equal(t, tc.want, p.Answer, "%s at p=%d", tc.key, tc.p)
		assert.Len(t, p.Choices, tc.p)
	}
}

// The moved key groups are counted against an independent walk of Flink's
// ranges (KeyGroupRangeAssignment: range i starts at ceil(i*max/p)), not
// read back from rescale's plan.
func TestPredictionKeyGroupsMoved(t *testing.T) {
	owner := func(maxP, p, g int) int {
		for i := p - 1; i >= 0; i-- {
			if g >= (i*maxP+p-1)/p {
				return i
			}
		}
		return 0
	}
	for _, tc := range []struct{ maxP, from, to int }{{10, 2, 3}, {128, 2, 3}, {128, 2, 4}, {10, 3, 2}} {
		want := 0
		for g := 0; g < tc.maxP; g++ {
			if owner(tc.maxP, tc.from, g) != owner(tc.maxP, tc.to, g) {
				want++
			}
		}
		js := &jobState{spec: mustJob(t)}
		js.spec.Operators[2].MaxParallelism = tc.maxP
		p, err := newPrediction(&predictFile{Kind: "key-groups-moved", Operator: "count", From: tc.from, To: tc.to}, js)
		require.NoError(t, err)
		assert.Equal(t, strconv.Itoa(want), p.Answer, "%+v", tc)
		assert.Nil(t, p.Choices)
		assert.Equal(t, tc.maxP, p.Max)
	}
	// Lesson 08's figures, which its checks have the engine confirm.
	js := &jobState{spec: mustJob(t)}
	js.spec.Operators[2].MaxParallelism = 10
	p, err := newPrediction(&predictFile{Kind: "key-groups-moved", Operator: "count", From: 2, To: 3}, js)
	require.NoError(t, err)
	assert.Equal(t, "4", p.Answer)
	html := predictHTML(EN, "s", p, "Q", "W")
	assert.Contains(t, html, `<input type="number" name="answer" min="0" max="10"`)
}

func mustJob(t *testing.T) *engine.JobSpec {
	t.Helper()
	c, err := Load(mapFS(fixture()))
	require.NoError(t, err)
	spec, err := c.Lessons[0].Job(MainJob)
	require.NoError(t, err)
	require.Equal(t, "count", spec.Operators[2].ID)
	return spec
}

func TestPredictionLoadsAndRendersItsCard(t *testing.T) {
	f := fixture()
	withPrediction(t, f, "{kind: key-owner, operator: count, key: a, parallelism: 1}")
	c, err := Load(mapFS(f))
	require.NoError(t, err)
	st := c.Lessons[0].Steps[0]
	require.NotNil(t, st.Predict)
	assert.Equal(t, "Which subtask owns `a`?", st.Text[EN].Question)
	assert.NotContains(t, st.Text[EN].BodyHTML, "[!predict]", "the blocks leave the body")
	for _, lang := range Langs {
		v := c.Lessons[0].View(lang, c)
		require.NotNil(t, v.Steps[0].Predict)
		body := v.Steps[0].BodyHTML
		assert.True(t, strings.HasPrefix(body, `<form class="predict" data-predict="count#0"`), body)
		assert.Contains(t, body, `<input type="radio" name="answer" value="count#0">`)
		assert.Contains(t, body, "Which subtask owns <code>a</code>?")
		assert.Contains(t, body, `<div class="predict-result" hidden>`)
		assert.Nil(t, v.Steps[1].Predict)
	}
	assert.Contains(t, c.Lessons[0].View(ZH, c).Steps[0].BodyHTML, "提交我的答案")
}

func TestPredictionLint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, f map[string]string)
		want   string
	}{
		{"unknown kind", func(t *testing.T, f map[string]string) {
			withPrediction(t, f, "{kind: key-group, operator: count, key: a, parallelism: 1}")
		}, `predict: kind "key-group" is unknown`},
		{"unknown operator", func(t *testing.T, f map[string]string) {
			withPrediction(t, f, "{kind: key-owner, operator: counter, key: a, parallelism: 1}")
		}, `predict: the job has no operator "counter"`},
		{"parallelism above max", func(t *testing.T, f map[string]string) {
			withPrediction(t, f, "{kind: key-owner, operator: count, key: a, parallelism: 129}")
		}, "predict: parallelism 129 is not within 1..128"},
		{"no why", func(t *testing.T, f map[string]string) {
			withPrediction(t, f, "{kind: key-owner, operator: count, key: a, parallelism: 1}")
			replace(t, f, "01-tiny/lesson.zh.md", "> [!why]\n", "")
		}, "needs one > [!predict] block (the question) and one > [!why] block"},
		{"a question without predict", func(t *testing.T, f map[string]string) {
			withPrediction(t, f, "{kind: key-owner, operator: count, key: a, parallelism: 1}")
			replace(t, f, "01-tiny/scenario.yaml", "    predict: {kind: key-owner, operator: count, key: a, parallelism: 1}\n", "")
		}, "the scenario's step has no predict:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fixture()
			tc.break_(t, f)
			_, err := Load(mapFS(f))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// Five offsets over two subtasks: 3 and 2 (Flink's SPLIT_DISTRIBUTE, the
// split lesson 06's source-partitions check has the engine confirm); over
// three, 2, 2 and 1.
func TestPredictionOffsetsSplit(t *testing.T) {
	js := &jobState{spec: mustJob(t)}
	js.spec.Operators[0].Options["partitions"] = 5
	for _, tc := range []struct {
		p, subtask int
		want       string
	}{{2, 0, "3"}, {2, 1, "2"}, {3, 0, "2"}, {3, 2, "1"}} {
		p, err := newPrediction(&predictFile{Kind: "offsets-split", Operator: "source", Parallelism: tc.p, Subtask: tc.subtask}, js)
		require.NoError(t, err)
		assert.Equal(t, tc.want, p.Answer, "%+v", tc)
		assert.Equal(t, 5, p.Max)
	}
	_, err := newPrediction(&predictFile{Kind: "offsets-split", Operator: "count", Parallelism: 2}, js)
	require.ErrorContains(t, err, "offsets-split needs a source")
	_, err = newPrediction(&predictFile{Kind: "offsets-split", Operator: "source", Parallelism: 2, Subtask: 2}, js)
	require.ErrorContains(t, err, "subtask 2 of parallelism 2 does not exist")
}
