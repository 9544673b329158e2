package web

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// A lost TaskManager's story says how the JobManager noticed. With the
// sandbox's heartbeatInterval set the job follows Flink's heartbeat rule
// (engine/heartbeat.go, measured on Flink by the conformance scenario
// taskmanager-killed-heartbeat), so the story tells that rule with the
// job's figures and not StateLab's simplification; without it the story
// keeps saying what is simplified. In English and Chinese.
func TestBrowserStoryHeartbeatRuleWhenTheJobSetsIt(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	lose := engine.Command{Name: engine.CmdCrashTaskManager, TaskManager: "tm-1"}
	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url + "/"))
	// before returns the part of a catalogue text before its first {…}.
	before := func(text string) string {
		i := strings.Index(text, "{")
		require.Positive(t, i, text)
		return text[:i]
	}
	for _, tc := range []struct {
		name   string
		tpl    string
		q      url.Values
		key    string // the step that must be told
		values []string
	}{
		{"threshold", "etl", url.Values{"seed": {"5"}, "heartbeatInterval": {"200ms"}, "heartbeatTimeout": {"2s"}},
			"explain.tmLost.heartbeatRule", []string{"200 ms", "2.00 s", " 2 "}},
		{"timeout only", "etl", url.Values{"seed": {"5"}, "heartbeatInterval": {"200ms"}, "heartbeatTimeout": {"2s"}, "heartbeatRpcFailureThreshold": {"-1"}},
			"explain.tmLost.heartbeatTimeoutOnly", []string{"200 ms", "2.00 s"}},
		{"simplified", "etl", url.Values{"seed": {"5"}}, "explain.simplified.heartbeat", nil},
		// Hash edges between the TaskManagers: a subtask on tm-2 reads from
		// tm-1 over the network, which Flink notices first (not modelled).
		{"network", "wordcount", url.Values{"seed": {"5"}, "taskManagers": {"2"}, "slots": {"1"}, "parallelism": {"2"}, "heartbeatInterval": {"200ms"}, "heartbeatTimeout": {"2s"}},
			"explain.tmLost.heartbeatRule", []string{"200 ms", "2.00 s", " 2 "}},
	} {
		// The job's region waits for a slot after the loss (etl: one slot
		// per TaskManager), so the run stops once the job left RUNNING.
		s, events := stepperFromTemplate(t, tc.tpl, tc.q)
		_, err := s.RunUntil(runningWithACheckpoint, 500000)
		require.NoError(t, err)
		start := s.Snapshot()
		mark := len(*events)
		require.NoError(t, s.Do(lose))
		_, err = s.RunUntil(func(s *engine.Snapshot) bool { return s.Job.Status != engine.JobRunning }, 500000)
		require.NoError(t, err, tc.name)
		evs := (*events)[mark:]
		var lost string
		for _, e := range evs {
			if e.Kind == engine.EvTaskManager && e.Status == engine.TMLost {
				lost = e.Message
			}
		}
		require.NotEmpty(t, lost, tc.name)
		for _, lang := range []string{"en", "zh"} {
			cat := catalogue(t, lang)
			got := failoverStory(t, b, lang, start, evs)
			t.Logf("%s %s:\n%s", tc.name, lang, got)
			require.NotEmpty(t, got, "%s %s: a failover story", tc.name, lang)
			want := cat[tc.key]
			require.NotEmpty(t, want, tc.key)
			if tc.values == nil {
				assert.Contains(t, got, want, "%s %s", tc.name, lang)
				assert.NotContains(t, got, before(cat["explain.tmLost.heartbeatRule"]), "%s %s", tc.name, lang)
				continue
			}
			assert.Contains(t, got, before(want), "%s %s:\n%s", tc.name, lang, got)
			for _, v := range tc.values {
				assert.Contains(t, got, v, "%s %s: the job's figure %q", tc.name, lang, v)
			}
			assert.NotContains(t, got, cat["explain.simplified.heartbeat"], "%s %s: Flink's rule is not simplified", tc.name, lang)
			network := before(cat["explain.simplified.heartbeatNetwork"])
			if tc.tpl == "etl" {
				assert.NotContains(t, got, network, "%s %s: each etl pipeline runs on one TaskManager, nothing reads over the network", tc.name, lang)
				continue
			}
			assert.Contains(t, got, network, "%s %s: a reader on another TaskManager", tc.name, lang)
			// The readers named are the subtasks on other TaskManagers that
			// a channel from a subtask of tm-1 reaches.
			tmOf := map[string]string{}
			for _, o := range start.Job.Operators {
				for _, st := range o.Subtasks {
					tmOf[st.Name] = st.TaskManager
				}
			}
			readers := 0
			for _, ch := range start.Channels {
				if tmOf[ch.From] == "tm-1" && tmOf[ch.To] != "tm-1" {
					readers++
					assert.Contains(t, got, ch.To, "%s %s: reader %s named", tc.name, lang, ch.To)
				}
			}
			require.Positive(t, readers, "the wordcount run has a channel from tm-1 to another TaskManager")
		}
	}
}

// A learner picks Flink's heartbeat rule in the sandbox form, starts the
// job, crashes TaskManager tm-1 with its button and reads in the story how
// the JobManager noticed: requests every 200 ms, two failed in a row —
// English on a laptop, Chinese on a phone (390×844). Without the form's
// choice the story tells the simplification instead and this test fails.
func TestBrowserHeartbeatRuleFromTheSandboxForm(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	for _, lang := range []string{"en", "zh"} {
		cat := catalogue(t, lang)
		b := startFromSandboxForm(t, lang, "heartbeatInterval", "200ms", "sandbox.heartbeatFlink")
		hb := eval[map[string]any](b, `window.statelab.model.snap.job.heartbeat`)
		require.Equal(t, 200e6, hb["interval"], "%s: the job got the form's heartbeat.interval", lang)
		b.waitJS(60*time.Second, "every subtask running", jsAllRunning)
		b.clickLive(fmt.Sprintf(`button[aria-label=%q]`, strings.ReplaceAll(cat["graph.crashTmLabel"], "{tm}", "tm-1")))
		rule := cat["explain.tmLost.heartbeatRule"]
		rule = rule[:strings.Index(rule, "{")]
		b.waitJS(30*time.Second, "the story's heartbeat step", fmt.Sprintf(`(document.getElementById('explain-body')?.innerText || '').includes(%q)`, rule))
		story := eval[string](b, `document.getElementById('explain-body').innerText`)
		assert.Contains(t, story, "200 ms", lang)
		assert.NotContains(t, story, cat["explain.simplified.heartbeat"], "%s: Flink's rule, not the simplification", lang)
		assert.LessOrEqual(t, eval[int](b, `document.documentElement.scrollWidth`), eval[int](b, `innerWidth`), "%s: the page does not scroll sideways", lang)
		b.run(chromedp.Evaluate[chromedp.Void](`document.getElementById('explain-body').scrollIntoView({block: 'start'})`))
		b.shot("heartbeat-rule-" + lang)
	}
}

// startFromSandboxForm opens the sandbox form in lang (English at the
// browser's laptop width, Chinese on a 390×844 phone), checks that the
// select field offers value under the catalogue's label labelKey, picks it
// as a person does, starts the job and waits for the live view.
func startFromSandboxForm(t *testing.T, lang, field, value, labelKey string) *browserEnv {
	t.Helper()
	b := newBrowser(t)
	if lang == "zh" {
		b.run(chromedp.EmulateViewport(390, 844))
	}
	b.run(chromedp.Navigate(b.url+"/sandbox?lang="+lang), chromedp.WaitVisible(chromedp.CSS(`#sandbox-form`)))
	assert.Equal(t, catalogue(t, lang)[labelKey], eval[string](b, fmt.Sprintf(`document.querySelector('#%s option[value=%q]').textContent`, field, value)), lang)
	b.run(chromedp.SetValue(chromedp.CSS("#"+field), value))
	b.clickLive(`#sandbox-form button[type=submit]`)
	b.waitJS(20*time.Second, "the live view", `document.getElementById('workspace')?.dataset.ready === 'true'`)
	return b
}
