package web

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/statelab/statelab/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The page's model (static/js/model.js) keeps the checkpoint history
// between snapshots from the checkpoint events. After the restore command a
// job numbers its checkpoints from N + 1 as Flink's does (an id is used
// again), so the model must not merge the new job's checkpoint into the old
// job's entry of the same id, nor keep the old job's later ones. A real
// run of the wordcount template: four checkpoints, a restore from the
// second, then the new job's checkpoint 3; the model gets the snapshot from
// before the restore and every event after it (the most a page can miss,
// snapshots coming only now and then), and must end with the engine's own
// history.
func TestBrowserModelKeysCheckpointsAcrossRestore(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	s, events := stepperFromTemplate(t, "wordcount", url.Values{"seed": {"3"}, "retainedCheckpoints": {"3"}, "interval": {"100ms"}})
	_, err := s.RunUntil(func(s *engine.Snapshot) bool { return s.Checkpoints.Counts.Completed >= 4 }, 500000)
	require.NoError(t, err)
	before := s.Snapshot()
	var retained []int64
	for _, c := range before.Checkpoints.Retained {
		retained = append(retained, c.ID)
	}
	require.Len(t, retained, 3, "three retained checkpoints: %v", retained)
	from := retained[0]
	mark := len(*events)
	require.NoError(t, s.Do(engine.Command{Name: engine.CmdRestore, Checkpoint: from}))
	_, err = s.RunUntil(func(s *engine.Snapshot) bool {
		h := s.Checkpoints.History
		return len(h) > 0 && h[len(h)-1].ID == from+1 && h[len(h)-1].Status == "COMPLETED"
	}, 500000)
	require.NoError(t, err)
	after := s.Snapshot()
	type entry struct {
		ID          int64  `json:"id"`
		Status      string `json:"status"`
		TriggerTime int64  `json:"triggerTime"`
		Acked       int    `json:"acknowledged"`
	}
	var want []entry
	for _, c := range after.Checkpoints.History {
		want = append(want, entry{c.ID, c.Status, int64(c.TriggerTime), c.Acknowledged})
	}
	require.Greater(t, before.Checkpoints.History[len(before.Checkpoints.History)-1].ID, from+1,
		"the old job had checkpoints after %d + 1, which the new job's ids meet", from)

	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url + "/"))
	js := `(async () => { const { Model } = await import('/static/js/model.js'); const m = new Model();
	  m.applySnapshot(` + toJSON(t, before) + `);
	  const evs = ` + toJSON(t, (*events)[mark:]) + `;
	  for (let i = 0; i < evs.length; i += 16) m.applyEvents(evs.slice(i, i + 16));
	  return m.snap.checkpoints.history.map((c) => ({ id: c.id, status: c.status, triggerTime: c.triggerTime, acknowledged: c.acknowledged })); })()`
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]entry](js, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Equal(t, want, got, "the model's history is the engine's: the new job's checkpoint %d only, none of the old job's after %d", from+1, from)
}

// everyTaskRunning holds when the job and every subtask run.
func everyTaskRunning(s *engine.Snapshot) bool {
	for _, o := range s.Job.Operators {
		for _, st := range o.Subtasks {
			if st.Status != engine.TaskRunning {
				return false
			}
		}
	}
	return s.Job.Status == engine.JobRunning
}

// runningWithACheckpoint holds once a checkpoint has completed and all runs.
func runningWithACheckpoint(s *engine.Snapshot) bool {
	return s.Checkpoints.Counts.Completed >= 1 && everyTaskRunning(s)
}

// storyRun runs the template with the sandbox settings q on a Stepper until
// a checkpoint has completed, applies cmd, runs until the job is RUNNING
// again, and returns the snapshot before cmd and every event after it.
func storyRun(t *testing.T, q url.Values, cmd engine.Command) (engine.Snapshot, []engine.Event) {
	t.Helper()
	s, events := stepperFromTemplate(t, "etl", q)
	_, err := s.RunUntil(runningWithACheckpoint, 500000)
	require.NoError(t, err)
	before := s.Snapshot()
	mark := len(*events)
	require.NoError(t, s.Do(cmd))
	_, err = s.RunUntil(func(s *engine.Snapshot) bool { return s.Job.Status != engine.JobRunning }, 500000)
	require.NoError(t, err)
	_, err = s.RunUntil(everyTaskRunning, 500000)
	require.NoError(t, err)
	return before, (*events)[mark:]
}

// stepperFromTemplate starts a Stepper on the sandbox template name with
// the settings q (as the sandbox form sends them), recording every event
// into the slice it returns.
func stepperFromTemplate(t *testing.T, name string, q url.Values) (*engine.Stepper, *[]engine.Event) {
	t.Helper()
	return stepperFromTemplateIn(t, t.TempDir(), name, q)
}

// stepperFromTemplateIn is stepperFromTemplate with the engine's data
// directory dir (checkpoints in dir/checkpoints/JOB/chk-N).
func stepperFromTemplateIn(t *testing.T, dir, name string, q url.Values) (*engine.Stepper, *[]engine.Event) {
	t.Helper()
	tpl, ok := Template(name)
	require.True(t, ok, "template %s", name)
	set, err := ParseSettings(tpl, q)
	require.NoError(t, err)
	spec, err := tpl.Build(set)
	require.NoError(t, err)
	events := new([]engine.Event)
	s, err := engine.NewStepper(spec, engine.Options{Dir: dir, RecordEvents: func(e engine.Event) { *events = append(*events, e) }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, events
}

// The story of a failure says what Flink restarts. With the default
// scheduler and region failover (Flink's default), a crash of source#0 in
// the etl job restarts its pipelined region only (source#0, map#0, sink#0).
// In reactive mode Flink's AdaptiveScheduler has no region failover and
// restarts the whole job on any failure, so the story must not speak of
// pipelined regions there, for a crashed subtask or a lost TaskManager.
func TestBrowserStoryRegionsAndReactiveMode(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	crash := engine.Command{Name: engine.CmdCrashSubtask, Task: "source#0"}
	lose := engine.Command{Name: engine.CmdCrashTaskManager, TaskManager: "tm-1"}
	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url + "/"))
	story := func(lang string, before engine.Snapshot, evs []engine.Event) string {
		return failoverStory(t, b, lang, before, evs)
	}

	before, evs := storyRun(t, url.Values{"seed": {"5"}}, crash)
	en := story("en", before, evs)
	assert.Contains(t, en, "pipelined region of source#0")
	assert.Contains(t, en, "source#0, map#0, sink#0")
	assert.NotContains(t, en, "every subtask is cancelled", "region failover cancels one region, not every subtask")
	assert.NotContains(t, en, "Every subtask restores", "region failover restores one region, not every subtask")
	assert.Contains(t, story("zh", before, evs), "流水线区域")

	for _, cmd := range []engine.Command{crash, lose} {
		before, evs := storyRun(t, url.Values{"seed": {"5"}, "scheduler": {"reactive"}}, cmd)
		en := story("en", before, evs)
		require.NotEmpty(t, en, "a failover story for %s", cmd.Name)
		assert.NotContains(t, en, "pipelined region", "%s in reactive mode: the whole job restarts\n%s", cmd.Name, en)
		assert.Contains(t, en, "restarts the whole job", cmd.Name)
		zh := story("zh", before, evs)
		assert.NotContains(t, zh, "流水线区域", cmd.Name)
		assert.Contains(t, zh, "整个作业", cmd.Name)
	}
}

// failoverStory feeds the live view's model the snapshot before and the
// events after it, in batches as the socket brings them, and returns the
// text of the failover stories the explain view tells (lang: en or zh).
func failoverStory(t *testing.T, b *browserEnv, lang string, before engine.Snapshot, evs []engine.Event) string {
	t.Helper()
	js := `(async () => { const i18n = await import('/static/js/i18n.js'); await i18n.loadCatalog('` + lang + `');
	  const { Model } = await import('/static/js/model.js'); const { ExplainView } = await import('/static/js/views/explain.js');
	  const m = new Model(); const v = new ExplainView(document.createElement('div'), m, {});
	  m.on((c) => v.onChange(c));
	  m.applySnapshot(` + toJSON(t, before) + `);
	  const evs = ` + toJSON(t, evs) + `;
	  for (let i = 0; i < evs.length; i += 16) m.applyEvents(evs.slice(i, i + 16));
	  const eps = [v.previous, v.episode].filter((ep) => ep && ep.kind === 'failover');
	  return eps.map((ep) => [ep.title, ...ep.steps.map((s) => typeof s.text === 'function' ? s.text() : s.text)].join('\n')).join('\n'); })()`
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	return got
}

// TestBrowserStoryBrokenCheckpointSaysWhatIsSimplified: a broken latest
// checkpoint (a keyed state file corrupted) fails every restore, and the
// story says so, then says once what StateLab simplifies there — it checks
// the files before deploying the restarted subtasks, where Flink deploys
// them and they fail reading (conformance broken-latest-checkpoint names
// this sentence), in English and Chinese.
func TestBrowserStoryBrokenCheckpointSaysWhatIsSimplified(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	dir := t.TempDir()
	s, events := stepperFromTemplateIn(t, dir, "wordcount", url.Values{"seed": {"4"}, "backend": {"fs"}, "interval": {"100ms"},
		"retainedCheckpoints": {"2"}, "restart": {"fixed-delay"}, "restartAttempts": {"2"}, "restartDelay": {"10ms"}})
	_, err := s.RunUntil(func(s *engine.Snapshot) bool { return s.Checkpoints.Counts.Completed >= 2 }, 500000)
	require.NoError(t, err)
	before := s.Snapshot()
	latest := before.Checkpoints.Retained[len(before.Checkpoints.Retained)-1].ID
	chk := filepath.Join(dir, "checkpoints", before.Job.Name, fmt.Sprintf("chk-%d", latest))
	entries, err := os.ReadDir(chk)
	require.NoError(t, err)
	var victim string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "count") {
			victim = filepath.Join(chk, e.Name())
		}
	}
	require.NotEmpty(t, victim, "a keyed state file of count in %s", chk)
	data, err := os.ReadFile(victim)
	require.NoError(t, err)
	data[len(data)/2] ^= 0xff
	require.NoError(t, os.WriteFile(victim, data, 0o644))
	mark := len(*events)
	require.NoError(t, s.Do(engine.Command{Name: engine.CmdCrashSubtask, Task: "sink#0"}))
	_, err = s.RunUntil(func(s *engine.Snapshot) bool { return s.Job.Status == engine.JobFailed }, 500000)
	require.NoError(t, err, "the strategy gives up after its 2 restarts")
	evs := (*events)[mark:]

	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url + "/"))
	for _, lang := range []string{"en", "zh"} {
		cat := catalogue(t, lang)
		got := failoverStory(t, b, lang, before, evs)
		simplified := cat["explain.simplified.restoreChecksFirst"]
		require.NotEmpty(t, simplified)
		assert.Equal(t, 1, strings.Count(got, simplified), "%s: the simplification is said once for two failed restores:\n%s", lang, got)
		assert.Equal(t, 2, strings.Count(got, strings.SplitN(cat["explain.restoreFailed.step"], "{n}", 2)[0]), "%s: each failed restore is told:\n%s", lang, got)
	}
}

// catalogue reads the UI's message catalogue of lang (static/i18n).
func catalogue(t *testing.T, lang string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "static", "i18n", lang+".json"))
	require.NoError(t, err)
	var cat map[string]string
	require.NoError(t, json.Unmarshal(raw, &cat))
	return cat
}
