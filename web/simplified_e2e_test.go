package web

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// jsHasSentence is a JavaScript expression: some element sel selects holds
// a catalogue sentence whose one placeholder {d} may be any text (the
// parts before and after it, in that order).
func jsHasSentence(sel, sentence string) string {
	parts := strings.SplitN(sentence, "{d}", 2)
	after := ""
	if len(parts) == 2 {
		after = parts[1]
	}
	return fmt.Sprintf(`[...document.querySelectorAll(%s)].some((e) => { const s = e.textContent, i = s.indexOf(%s);
	  return i >= 0 && s.indexOf(%s, i + %d) >= 0; })`, strconv.Quote(sel), strconv.Quote(parts[0]), strconv.Quote(after), len([]rune(parts[0])))
}

// A person opens a sandbox whose checkpoints are aligned with an
// aligned-checkpoint-timeout (unaligned=true, alignedCheckpointTimeout):
// the checkpoint panel says the checkpoints start aligned and turn
// unaligned after the timeout, and, as the story of the first checkpoint
// does, what StateLab simplifies there (it switches only in the receiving
// subtask; Flink also times out a barrier in a sender's output buffer),
// in English at 1280 px and in Chinese at 390 px. A sandbox without the
// timeout does not say it.
func TestBrowserAlignedTimeoutSaysWhatIsSimplified(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	for _, tc := range []struct {
		lang  string
		width int64
	}{{"en", 1280}, {"zh", 390}} {
		cat := catalogue(t, tc.lang)
		simplified := cat["explain.simplified.alignedTimeout"]
		require.Contains(t, simplified, "{d}")
		b.run(chromedp.EmulateViewport(tc.width, 900))
		b.openLive("template=wordcount&seed=3&interval=200ms&unaligned=true&alignedCheckpointTimeout=20ms&lang=" + tc.lang)
		b.waitJS(20*time.Second, tc.lang+": the checkpoint panel says what is simplified", jsHasSentence(`#checkpoints .cp-simplified`, simplified))
		b.waitJS(20*time.Second, tc.lang+": the mode names the timeout", jsHasSentence(`#checkpoints .cp-mode`, cat["mode.exactly-once-alignedTimeout"]))
		assert.Contains(t, eval[string](b, `document.querySelector('#checkpoints .cp-simplified').textContent`), "20", "%s: the timeout itself", tc.lang)
		b.waitJS(90*time.Second, tc.lang+": the first checkpoint's story says it too", jsHasSentence(`#explain .story li.st-simplified`, simplified))
		b.waitJS(5*time.Second, tc.lang+": the story says the checkpoint starts aligned", jsHasSentence(`#explain .story li`, strings.SplitN(cat["explain.cp.triggeredAlignedTimeout"], "{n}", 2)[0]+"{d}"))
		assert.Empty(t, eval[[]string](b, jsWiderThanScreen(`#checkpoints .cp-summary, #explain .story`)), "%s at %d px: nothing wider than the screen", tc.lang, tc.width)
		b.shot(fmt.Sprintf("aligned-timeout-simplified-%s-%d", tc.lang, tc.width))
	}
	b.openLive("template=wordcount&seed=3&interval=200ms&unaligned=true&lang=en")
	b.waitJS(90*time.Second, "the first checkpoint's story, unaligned from the start",
		jsHasSentence(`#explain .story li`, strings.SplitN(catalogue(t, "en")["explain.cp.triggeredUnaligned"], "{n}", 2)[0]+"{d}"))
	assert.Zero(t, eval[int](b, `document.querySelectorAll('#checkpoints .cp-simplified, #explain .story li.st-simplified').length`),
		"every checkpoint starts unaligned: nothing to say")
}

// failoverStoryIn is failoverStory with snapshots between the batches of
// events, as the socket brings them: the live view's model gets each
// snapshot, then the events after it, and the text of the failover
// stories the explain view tells (the current one and the one before) in
// lang comes back.
func failoverStoryIn(t *testing.T, b *browserEnv, lang string, parts []storyPart) string {
	t.Helper()
	var feed strings.Builder
	for _, p := range parts {
		feed.WriteString("m.applySnapshot(" + toJSON(t, p.snap) + ");\n")
		feed.WriteString("{ const evs = " + toJSON(t, p.events) + "; for (let i = 0; i < evs.length; i += 16) m.applyEvents(evs.slice(i, i + 16)); }\n")
	}
	js := `(async () => { const i18n = await import('/static/js/i18n.js'); await i18n.loadCatalog('` + lang + `');
	  const { Model } = await import('/static/js/model.js'); const { ExplainView } = await import('/static/js/views/explain.js');
	  const m = new Model(); const v = new ExplainView(document.createElement('div'), m, {});
	  m.on((c) => v.onChange(c));
	  ` + feed.String() + `
	  const eps = [v.previous, v.episode].filter((ep) => ep && ep.kind === 'failover');
	  return eps.map((ep) => [ep.title, ...ep.steps.map((s) => typeof s.text === 'function' ? s.text() : s.text)].join('\n')).join('\n'); })()`
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	return got
}

// storyPart is a snapshot and the events that came after it.
type storyPart struct {
	snap   engine.Snapshot
	events []engine.Event
}

// In the etl job (two pipelined regions) a lost TaskManager's region waits
// for a slot (tm-2's only slot runs the other pipeline); then source#1
// crashes. Flink's DefaultScheduler would restart only source#1's region
// (RestartPipelinedRegionFailoverStrategy; the waiting region keeps its
// slot request); StateLab restarts the whole job there, and the story
// says so once — the failover of the whole job, then what StateLab
// simplifies, naming the region Flink would restart — in English and
// Chinese; the same when the other pipeline's TaskManager is lost instead,
// and not when no region waits.
func TestBrowserStoryFailureWhileRegionWaitsSaysWhatIsSimplified(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	w := regionWaitsInETL(t)
	mark := len(*w.events)
	require.NoError(t, w.s.Do(engine.Command{Name: engine.CmdCrashSubtask, Task: "source#1"}))
	_, err := w.s.RunUntil(func(s *engine.Snapshot) bool {
		return s.Job.WaitingForResources && s.Job.Attempt > w.waiting.Job.Attempt
	}, 500000)
	require.NoError(t, err, "StateLab restarts the whole job, which then waits for two slots")
	crash := (*w.events)[mark:]
	start, lost, waiting := w.start, w.lost, w.waiting

	// The other TaskManager lost instead, in a second run.
	w2 := regionWaitsInETL(t)
	mark = len(*w2.events)
	require.NoError(t, w2.s.Do(engine.Command{Name: engine.CmdCrashTaskManager, TaskManager: w2.tmOf["source#1"]}))
	_, err = w2.s.RunUntil(func(s *engine.Snapshot) bool { return s.Job.Attempt > w2.waiting.Job.Attempt }, 500000)
	require.NoError(t, err, "StateLab restarts the whole job")
	lost2 := (*w2.events)[mark:]

	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url + "/"))
	for _, lang := range []string{"en", "zh"} {
		cat := catalogue(t, lang)
		simplified := cat["explain.simplified.wholeJob.waiting"]
		require.Contains(t, simplified, "{tasks}")
		parts := strings.SplitN(simplified, "{tasks}", 2)
		got := failoverStoryIn(t, b, lang, []storyPart{{start, lost}, {waiting, crash}})
		t.Logf("%s story:\n%s", lang, got)
		assert.Equal(t, 1, strings.Count(got, parts[0]), "%s: the simplification is said once:\n%s", lang, got)
		// The crash has a story of its own, after the lost TaskManager's,
		// and the failover and the simplification are told in it.
		title := strings.ReplaceAll(cat["explain.crashSubtask.title"], "{task}", "source#1")
		require.Contains(t, got, title, "%s: the crash has its own story:\n%s", lang, got)
		own := got[strings.Index(got, title):]
		assert.Contains(t, own, parts[0]+"source#1, map#1, sink#1"+parts[1], "%s: it names the region Flink would restart:\n%s", lang, got)
		whole := strings.SplitN(cat["explain.failover"], "{strategy}", 2)[0]
		assert.Contains(t, own, whole, "%s: the story tells a failover of the whole job:\n%s", lang, got)
		assert.NotContains(t, own, strings.SplitN(cat["explain.failover.region"], "{task}", 2)[0], "%s: no region failover told:\n%s", lang, got)

		tmStory := failoverStoryIn(t, b, lang, []storyPart{{w2.start, w2.lost}, {w2.waiting, lost2}})
		assert.Equal(t, 1, strings.Count(tmStory, parts[0]), "%s: a lost TaskManager, said once:\n%s", lang, tmStory)
		assert.Contains(t, tmStory, parts[0]+"source#1, map#1, sink#1"+parts[1], "%s: %s", lang, tmStory)

		// The same crash with no region waiting is a region failover, as
		// Flink's: nothing simplified to say.
		before, evs := storyRun(t, url.Values{"seed": {"5"}}, engine.Command{Name: engine.CmdCrashSubtask, Task: "source#1"})
		plain := failoverStory(t, b, lang, before, evs)
		assert.NotContains(t, plain, parts[0], "%s: a region failover as Flink's:\n%s", lang, plain)

		// While a rescale takes its savepoint (no template of several
		// regions can rescale: forward edges keep their parallelism equal,
		// so the snapshot says a rescale is under way), StateLab fails the
		// whole job over too, where Flink would restart the region; once
		// the savepoint completed (stopping) Flink fails over globally
		// (StopWithSavepointTerminationHandlerImpl): nothing to say.
		failed := engine.Event{Kind: engine.EvTaskFailed, Task: "source#1", Operator: "source", Message: "source#1 failed: crashed"}
		rescaleSentence := strings.SplitN(cat["explain.simplified.wholeJob.rescale"], "{tasks}", 2)
		for _, phase := range []string{"savepoint", "stopping"} {
			during := start
			during.Job.Rescale = &engine.RescaleView{Operator: "map", From: 2, To: 3, Phase: phase}
			story := failoverStory(t, b, lang, during, []engine.Event{failed})
			if phase == "stopping" {
				assert.NotContains(t, story, rescaleSentence[0], "%s: %s", lang, story)
				continue
			}
			assert.Contains(t, story, rescaleSentence[0]+"source#1, map#1, sink#1"+rescaleSentence[1], "%s: %s", lang, story)
		}
	}
	for _, at := range []struct {
		lang  string
		width int64
	}{{"en", 1280}, {"zh", 390}} {
		parts := strings.SplitN(catalogue(t, at.lang)["explain.simplified.wholeJob.waiting"], "{tasks}", 2)
		showFailoverStory(t, b, at.lang, at.width, []storyPart{{start, lost}, {waiting, crash}},
			[]string{parts[0] + "source#1, map#1, sink#1" + parts[1]}, "story-region-waits-simplified")
	}
}

// In the etl job a lost TaskManager's region waits for a slot until
// slot.request.timeout passes. Flink fails only the waiting region's tasks
// (DefaultScheduler: the slot request fails with a
// NoResourceAvailableException, handled as those tasks' failure by
// RestartPipelinedRegionFailoverStrategy) and the other pipeline keeps
// running; StateLab fails the whole job over, and the story says so once,
// in English and Chinese — not again when the whole job then waits. It
// also says once that StateLab waits where a standalone Flink past its
// start-up time fails the slot request at once.
func TestBrowserStorySlotTimeoutWhileRegionWaitsSaysWhatIsSimplified(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	s, events := stepperFromTemplate(t, "etl", url.Values{"seed": {"5"}, "heartbeatTimeout": {"50ms"}, "slotRequestTimeout": {"300ms"},
		"restart": {"fixed-delay"}, "restartAttempts": {"3"}, "restartDelay": {"10ms"}})
	_, err := s.RunUntil(runningWithACheckpoint, 500000)
	require.NoError(t, err)
	start := s.Snapshot()
	var tm string
	for _, o := range start.Job.Operators {
		for _, st := range o.Subtasks {
			if st.Name == "source#0" {
				tm = st.TaskManager
			}
		}
	}
	mark := len(*events)
	require.NoError(t, s.Do(engine.Command{Name: engine.CmdCrashTaskManager, TaskManager: tm}))
	_, err = s.RunUntil(func(s *engine.Snapshot) bool { return s.Job.WaitingForResources }, 500000)
	require.NoError(t, err, "region 0 waits for a slot")
	waiting := s.Snapshot()
	lost := (*events)[mark:]
	mark = len(*events)
	_, err = s.RunUntil(func(s *engine.Snapshot) bool { return s.Job.Status == engine.JobFailed }, 2000000)
	require.NoError(t, err, "every restart waits for two slots and times out, until the strategy gives up")
	rest := (*events)[mark:]
	timeouts := 0
	for _, e := range rest {
		if e.Kind == engine.EvJobStatus && strings.Contains(e.Message, "NoResourceAvailableException") {
			timeouts++
		}
	}
	require.Greater(t, timeouts, 1, "the region's timeout, then the whole job's")

	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url + "/"))
	for _, lang := range []string{"en", "zh"} {
		simplified := catalogue(t, lang)["explain.simplified.wholeJob.slotTimeout"]
		require.NotEmpty(t, simplified)
		got := failoverStoryIn(t, b, lang, []storyPart{{start, lost}, {waiting, rest}})
		assert.Equal(t, 1, strings.Count(got, simplified), "%s: said once, for the region's timeout:\n%s", lang, got)
		// The wait itself: a standalone Flink past its start-up time would
		// not wait (conformance slot-request-timeout); said once, though the
		// job waits again after each restart.
		wait := catalogue(t, lang)["explain.simplified.slotWait"]
		require.NotEmpty(t, wait)
		assert.Equal(t, 1, strings.Count(got, wait), "%s: the wait's simplification, once:\n%s", lang, got)
	}
	for _, at := range []struct {
		lang  string
		width int64
	}{{"en", 1280}, {"zh", 390}} {
		cat := catalogue(t, at.lang)
		showFailoverStory(t, b, at.lang, at.width, []storyPart{{start, lost}, {waiting, rest}},
			[]string{cat["explain.simplified.wholeJob.slotTimeout"], cat["explain.jobFailed"]}, "story-slot-timeout-simplified")
		// The engine's reason is Flink's exception text, English in both
		// languages: a detail under the translated step, not inside it.
		assert.Contains(t, eval[string](b, `[...document.querySelectorAll('#explain li.st-bad > .story-detail li')].map((e) => e.textContent).join('\n')`),
			"NoResourceAvailableException", "%s: the reason hangs under the job's failure", at.lang)
		showFailoverStory(t, b, at.lang, at.width, []storyPart{{start, lost}},
			[]string{cat["explain.simplified.slotWait"]}, "story-slot-wait-simplified")
	}
}

// etlWait is an etl run whose pipeline 0 lost its TaskManager and waits
// for a slot (the other TaskManager's only slot runs pipeline 1).
type etlWait struct {
	s              *engine.Stepper
	events         *[]engine.Event
	start, waiting engine.Snapshot
	lost           []engine.Event // from start to waiting
	tmOf           map[string]string
}

func regionWaitsInETL(t *testing.T) etlWait {
	t.Helper()
	s, events := stepperFromTemplate(t, "etl", url.Values{"seed": {"5"}, "heartbeatTimeout": {"50ms"},
		"restart": {"fixed-delay"}, "restartAttempts": {"5"}, "restartDelay": {"10ms"}})
	_, err := s.RunUntil(runningWithACheckpoint, 500000)
	require.NoError(t, err)
	w := etlWait{s: s, events: events, start: s.Snapshot(), tmOf: map[string]string{}}
	for _, o := range w.start.Job.Operators {
		for _, st := range o.Subtasks {
			w.tmOf[st.Name] = st.TaskManager
		}
	}
	require.NotEqual(t, w.tmOf["source#0"], w.tmOf["source#1"], "each pipeline on a TaskManager of its own")
	mark := len(*events)
	require.NoError(t, s.Do(engine.Command{Name: engine.CmdCrashTaskManager, TaskManager: w.tmOf["source#0"]}))
	_, err = s.RunUntil(func(s *engine.Snapshot) bool { return s.Job.WaitingForResources }, 500000)
	require.NoError(t, err, "region 0 waits for a slot")
	w.waiting = s.Snapshot()
	require.Equal(t, engine.JobRunning, w.waiting.Job.Status)
	w.lost = (*events)[mark:]
	return w
}

// showFailoverStory draws the story the explain view tells from parts in
// lang, in the live page's explain panel at width px, checks that nothing
// in it is wider than the screen and that it holds every sentence in
// want, and keeps a screenshot named name: the learner's view of the
// sentences the other checks read as text.
func showFailoverStory(t *testing.T, b *browserEnv, lang string, width int64, parts []storyPart, want []string, name string) {
	t.Helper()
	var feed strings.Builder
	for _, p := range parts {
		feed.WriteString("m.applySnapshot(" + toJSON(t, p.snap) + ");\n")
		feed.WriteString("{ const evs = " + toJSON(t, p.events) + "; for (let i = 0; i < evs.length; i += 16) m.applyEvents(evs.slice(i, i + 16)); }\n")
	}
	b.run(chromedp.EmulateViewport(width, 900), chromedp.Navigate(b.url+"/sandbox?lang="+lang))
	js := `(async () => { const i18n = await import('/static/js/i18n.js'); await i18n.loadCatalog('` + lang + `');
	  document.body.innerHTML = '<main class="story-shot"><section class="panel explain" id="explain"><header><h2>' + i18n.t('explain.title') + '</h2></header><div id="explain-body"></div></section></main>';
	  const { Model } = await import('/static/js/model.js'); const { ExplainView } = await import('/static/js/views/explain.js');
	  const m = new Model(); const v = new ExplainView(document.getElementById('explain-body'), m, {});
	  m.on((c) => v.onChange(c));
	  ` + feed.String() + `
	  v.previousOpen = true; v.dirty = true; v.render();
	  return document.getElementById('explain').textContent; })()`
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	for _, s := range want {
		assert.Contains(t, got, s, "%s at %d px: the panel shows it", lang, width)
	}
	assert.Empty(t, eval[[]string](b, jsWiderThanScreen(`#explain`)), "%s at %d px: nothing wider than the screen", lang, width)
	b.shot(fmt.Sprintf("%s-%s-%d", name, lang, width))
}

// A job that asks for unaligned checkpoints with mode at-least-once runs
// with unaligned turned off, as Flink does (StreamingJobGraphGenerator; the
// engine's TestUnalignedWithAtLeastOnceIsTurnedOff): the checkpoint panel
// says so, in English at 1280 px and in Chinese at 390 px, and says
// nothing of it for a job without the setting.
func TestBrowserCheckpointPanelSaysUnalignedWasTurnedOff(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	s, _ := stepperFromTemplate(t, "wordcount", url.Values{"seed": {"3"}})
	_, err := s.RunUntil(runningWithACheckpoint, 500000)
	require.NoError(t, err)
	snap := s.Snapshot()
	plain := snap
	snap.Checkpoints.Mode = engine.AtLeastOnce
	snap.Checkpoints.UnalignedIgnored = true
	b := newBrowser(t)
	panel := func(lang string, width int64, sn engine.Snapshot) string {
		b.run(chromedp.EmulateViewport(width, 900), chromedp.Navigate(b.url+"/sandbox?lang="+lang))
		js := `(async () => { const i18n = await import('/static/js/i18n.js'); await i18n.loadCatalog('` + lang + `');
		  document.body.innerHTML = '<main><section class="panel" id="checkpoints"></section></main>';
		  const { Model } = await import('/static/js/model.js'); const { CheckpointsView } = await import('/static/js/views/checkpoints.js');
		  const m = new Model(); const v = new CheckpointsView(document.getElementById('checkpoints'), m);
		  m.applySnapshot(` + toJSON(t, sn) + `); v.dirty = true; v.render();
		  return document.querySelector('#checkpoints .cp-summary').textContent; })()`
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		require.NoError(t, err)
		return got
	}
	for _, at := range []struct {
		lang  string
		width int64
	}{{"en", 1280}, {"zh", 390}} {
		cat := catalogue(t, at.lang)
		got := panel(at.lang, at.width, snap)
		assert.Contains(t, got, cat["cp.unalignedIgnored"], "%s: the panel says unaligned was turned off", at.lang)
		assert.Contains(t, got, cat["mode.at-least-once"], "%s: and that the job checkpoints at least once", at.lang)
		assert.Empty(t, eval[[]string](b, jsWiderThanScreen(`#checkpoints .cp-summary`)), "%s at %d px: nothing wider than the screen", at.lang, at.width)
		b.shot(fmt.Sprintf("cp-unaligned-ignored-%s-%d", at.lang, at.width))
		assert.NotContains(t, panel(at.lang, at.width, plain), cat["cp.unalignedIgnored"], "%s: not for a job without the setting", at.lang)
	}
}
