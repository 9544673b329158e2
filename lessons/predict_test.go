package lessons

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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

// The new kinds against facts stated independently of the code: Flink's
// slot sharing (slots = the highest parallelism), union list state (every
// new subtask gets every element), the max-parallelism bound, and when a
// replay can show a result twice.
func TestPredictionKindsOfIssue19(t *testing.T) {
	js := newJobState(MainJob, mustJob(t))
	// slots-needed: the fixture's operators at their parallelism, count at 5.
	want := 5
	for _, o := range js.spec.Operators {
		if o.ID != "count" {
			want = max(want, o.Parallelism)
		}
	}
	p, err := newPrediction(&predictFile{Kind: "slots-needed", Operator: "count", Parallelism: 5}, js)
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(want), p.Answer)

	// rescale-accepted: 128 key groups by default.
	for par, ok := range map[int]string{128: Yes, 129: No, 1: Yes} {
		p, err := newPrediction(&predictFile{Kind: "rescale-accepted", Operator: "count", Parallelism: par}, js)
		require.NoError(t, err)
		assert.Equal(t, ok, p.Answer, "p=%d", par)
		assert.Equal(t, []string{Yes, No}, p.Choices)
	}
	js.spec.Operators[2].MaxParallelism = 4
	p, err = newPrediction(&predictFile{Kind: "rescale-accepted", Operator: "count", Parallelism: 5}, js)
	require.NoError(t, err)
	assert.Equal(t, No, p.Answer)

	// duplicates: only a transactional sink under aligned checkpoints is
	// safe; with no checkpoint interval Flink counts barriers whatever the
	// mode (CheckpointBarrierTracker), so not even then.
	var sink *engine.OperatorSpec
	for i := range js.spec.Operators {
		if js.spec.Operators[i].Kind == engine.KindSink {
			sink = &js.spec.Operators[i]
		}
	}
	require.NotNil(t, sink)
	if sink.Options == nil {
		sink.Options = map[string]any{}
	}
	for _, tc := range []struct {
		sem      string
		mode     engine.CheckpointMode
		interval engine.Duration
		want     string
	}{
		{"exactly-once", engine.ExactlyOnce, engine.Duration(time.Second), No},
		{"at-least-once", engine.ExactlyOnce, engine.Duration(time.Second), Yes},
		{"exactly-once", engine.AtLeastOnce, engine.Duration(time.Second), Yes},
		{"at-least-once", engine.AtLeastOnce, engine.Duration(time.Second), Yes},
		{"exactly-once", engine.ExactlyOnce, 0, Yes},
	} {
		sink.Options["semantics"] = tc.sem
		js.spec.Checkpointing.Mode = tc.mode
		js.spec.Checkpointing.Interval = tc.interval
		p, err := newPrediction(&predictFile{Kind: "duplicates"}, js)
		require.NoError(t, err)
		assert.Equal(t, tc.want, p.Answer, "%+v", tc)
	}
	_, err = newPrediction(&predictFile{Kind: "duplicates", Sink: "nope"}, js)
	require.ErrorContains(t, err, `the job has no sink "nope"`)

	// union-restore needs union list state.
	_, err = newPrediction(&predictFile{Kind: "union-restore", Operator: "count", Parallelism: 3}, js)
	require.ErrorContains(t, err, "union-restore needs an operator with union list state")
}

// restarted-subtasks: a forward-only pipeline is one region per index; a
// hash edge joins everything (Flink's pipelined regions).
func TestPredictionRestartedSubtasks(t *testing.T) {
	spec, err := engine.LoadSpec([]byte(`
name: regions
operators:
  - {id: source, kind: source, parallelism: 3, options: {partitions: 3, generator: words, records: 100}}
  - {id: map, kind: map, parallelism: 3}
  - {id: sink, kind: sink, parallelism: 3}
edges:
  - {from: source, to: map, partitioner: forward}
  - {from: map, to: sink, partitioner: forward}
`))
	require.NoError(t, err)
	js := newJobState(MainJob, spec)
	p, err := newPrediction(&predictFile{Kind: "restarted-subtasks", Operator: "map", Subtask: 1}, js)
	require.NoError(t, err)
	assert.Equal(t, "3", p.Answer, "source#1, map#1, sink#1")
	assert.Equal(t, 9, p.Max)
	spec.Edges[1].Partitioner = engine.Rebalance
	p, err = newPrediction(&predictFile{Kind: "restarted-subtasks", Operator: "map", Subtask: 1}, js)
	require.NoError(t, err)
	assert.Equal(t, "9", p.Answer)
	spec.Edges[1].Partitioner = engine.Forward
	spec.Cluster.Failover = engine.FailoverFull
	p, err = newPrediction(&predictFile{Kind: "restarted-subtasks", Operator: "map", Subtask: 1}, js)
	require.NoError(t, err)
	assert.Equal(t, "9", p.Answer)
	_, err = newPrediction(&predictFile{Kind: "restarted-subtasks", Operator: "map", Subtask: 3}, js)
	require.ErrorContains(t, err, "map has 3 subtasks here, so subtask 3 does not exist")
}

// Every prediction of the course is confirmed by the engine: a check of
// its step (for duplicates, of the step or the next) states the
// same answer, and `statelab lessons check` has the engine pass it.
func TestEveryPredictionIsConfirmedByACheck(t *testing.T) {
	c, err := Default()
	require.NoError(t, err)
	n := 0
	for _, l := range c.Lessons {
		for i, st := range l.Steps {
			p := st.Predict
			if p == nil {
				continue
			}
			n++
			checks := slices.Clone(st.Checks)
			if i+1 < len(l.Steps) {
				checks = append(checks, l.Steps[i+1].Checks...)
			}
			has := func(name string, ok func(a args) bool) bool {
				for _, c := range st.Checks {
					if c.Name == name && ok(args(c.Args)) {
						return true
					}
				}
				return false
			}
			var confirmed bool
			switch p.Kind {
			case "key-owner":
				// Lesson 08's key a is not in the generator's words, so no
				// subtask holds it: TestPredictionAnswerIsFlinks checks the
				// answer against Flink's murmur hash instead.
				confirmed = true
			case "key-groups-moved":
				confirmed = has("key-groups-moved", func(a args) bool { return strconv.Itoa(a.int("n")) == p.Answer })
			case "offsets-split":
				confirmed = has("source-partitions", func(a args) bool {
					return p.Subtask < len(a.texts("equals")) && strconv.Itoa(len(a.texts("equals")[p.Subtask])) == p.Answer
				})
			case "union-restore":
				confirmed = has("restored-operator-state", func(a args) bool { return strconv.Itoa(a.int("elements")) == p.Answer })
			case "duplicates":
				if p.Answer == Yes {
					confirmed = slices.ContainsFunc(checks, func(c Check) bool { return c.Name == "sink-duplicates" })
				} else {
					confirmed = slices.ContainsFunc(checks, func(c Check) bool { return c.Name == "no-sink-duplicates" })
				}
			case "rescale-accepted":
				if p.Answer == No {
					confirmed = has("command-refused", func(a args) bool { return a.str("name") == "rescale" })
				} else {
					confirmed = has("parallelism", func(a args) bool { return a.int("n") == p.Parallelism })
				}
			case "slots-needed":
				confirmed = has("waiting-for-resources", func(args) bool { return true })
			case "restarted-subtasks":
				confirmed = has("redeployed-subtasks", func(a args) bool { return strconv.Itoa(a.int("n")) == p.Answer })
			case "ttl-read":
				// The read shows as the key's new value: a fresh count of 1 when the expired one is not returned.
				confirmed = has("keyed-state", func(a args) bool {
					return a.str("operator") == p.Operator && (p.Answer == Yes) != (a.str("equals") == "1")
				})
			case "restores-locally":
				confirmed = has("restored-locally", func(a args) bool { return a.bool("local") == (p.Answer == Yes) })
			case "upgrade-accepted":
				if p.Answer == No {
					confirmed = has("upgrade-refused", func(args) bool { return true })
				} else {
					confirmed = has("upgraded", func(args) bool { return true })
				}
			case "job-fails":
				if p.Answer == Yes {
					confirmed = has("job-status", func(a args) bool { return a.str("status") == "FAILED" })
				} else {
					confirmed = has("restarted", func(a args) bool { return a.int("min") >= 1 })
				}
			}
			assert.True(t, confirmed, "%s step %s: the %s prediction (%s) has no check that confirms it", l.Slug, st.ID, p.Kind, p.Answer)
		}
	}
	assert.GreaterOrEqual(t, n, 10)
}

// job-fails: the configured strategy's attempts, Flink's default rule when
// none is configured (exponential-delay with periodic checkpoints, none
// without).
func TestPredictionJobFails(t *testing.T) {
	spec := func(restart, interval string) *engine.JobSpec {
		s, err := engine.LoadSpec([]byte(`
name: restarts
operators:
  - {id: source, kind: source, parallelism: 1, options: {partitions: 1, generator: words, records: 100}}
  - {id: sink, kind: sink, parallelism: 1}
edges:
  - {from: source, to: sink, partitioner: forward}
checkpointing: {interval: ` + interval + `}
` + restart))
		require.NoError(t, err)
		return s
	}
	for _, tc := range []struct {
		restart, interval string
		failures          int
		want              string
	}{
		{"restart: {strategy: fixed-delay, attempts: 2}", "1s", 2, No},
		{"restart: {strategy: fixed-delay, attempts: 2}", "1s", 3, Yes},
		{"restart: {strategy: fixed-delay}", "1s", 2, Yes}, // Flink's default: 1 attempt
		{"", "1s", 100, No}, // exponential-delay, unlimited
		{"", "0s", 1, Yes},  // none
		{"restart: {strategy: none}", "1s", 1, Yes},
	} {
		p, err := newPrediction(&predictFile{Kind: "job-fails", Failures: tc.failures}, newJobState(MainJob, spec(tc.restart, tc.interval)))
		require.NoError(t, err)
		assert.Equal(t, tc.want, p.Answer, "%+v", tc)
	}
	_, err := newPrediction(&predictFile{Kind: "job-fails"}, newJobState(MainJob, spec("", "1s")))
	require.ErrorContains(t, err, "job-fails needs failures")
}
