package web

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBrowserCheckpointByHandWaits: a person presses "Checkpoint" while a
// checkpoint is still in progress. As in Flink (CheckpointRequestDecider,
// max-concurrent-checkpoints 1), the new one waits: the toast says so in
// the page's language instead of pointing at barriers leaving the sources,
// the checkpoints panel shows one waiting, and once the first completes the
// second starts by itself. The job is paused in teaching mode, so the first
// checkpoint stays in progress until the person steps it along.
// openPausedWordCount opens a word count without periodic checkpoints in
// teaching mode, every subtask running, and pauses it as a person does.
func openPausedWordCount(t *testing.T, query string) *browserEnv {
	b := newBrowser(t)
	b.openLive("template=wordcount&seed=4&interval=0&" + query)
	b.waitJS(30*time.Second, "every subtask running", jsAllRunning)
	if !eval[bool](b, `window.statelab.model.snap.paused`) {
		b.clickLive(`#btn-play`)
		b.waitJS(10*time.Second, "paused", `window.statelab.model.snap.paused`)
	}
	return b
}

func TestBrowserCheckpointByHandWaits(t *testing.T) {
	t.Parallel()
	// English on a laptop (the browser's 1280 wide default), Chinese on a
	// phone (390×844): the toast and the panel's line must fit both.
	for _, lang := range []string{"en", "zh"} {
		b := openPausedWordCount(t, "lang="+lang)
		if lang == "zh" {
			b.run(chromedp.EmulateViewport(390, 844))
		}
		const history = `window.statelab.model.snap.checkpoints.history.filter(c => !c.savepoint)`
		b.clickLive(`#btn-checkpoint`)
		b.waitJS(10*time.Second, "checkpoint 1 in progress", history+`.some(c => c.id === 1 && c.status === 'IN_PROGRESS')`)
		b.waitJS(10*time.Second, "the first toast", `!document.getElementById('toast').hidden`)
		first := eval[string](b, `document.getElementById('toast').textContent`)
		b.clickLive(`#btn-checkpoint`)
		b.waitJS(10*time.Second, "the toast of the second request", fmt.Sprintf(`(t => !t.hidden && t.textContent !== %q)(document.getElementById('toast'))`, first))
		said := eval[string](b, `document.getElementById('toast').textContent`)
		want := map[string]string{"en": "checkpoint 1 is still in progress", "zh": "检查点 1 仍在进行中"}[lang]
		assert.Contains(t, said, want, "%s: the toast says the checkpoint waits", lang)
		assert.Contains(t, said, "max-concurrent-checkpoints", lang)
		assert.True(t, eval[bool](b, `(r => r.width > 0 && r.left >= 0 && r.right <= innerWidth + 1)(document.getElementById('toast').getBoundingClientRect())`),
			"%s: the toast lies inside the window", lang)
		assert.LessOrEqual(t, eval[int](b, `document.documentElement.scrollWidth`), eval[int](b, `innerWidth`), "%s: the page does not scroll sideways", lang)
		b.waitJS(10*time.Second, "one waiting in the checkpoints panel", `window.statelab.model.snap.checkpoints.queued === 1 && document.querySelector('.cp-queued') !== null`)
		panel := eval[string](b, `document.querySelector('.cp-queued').textContent`)
		assert.True(t, strings.HasPrefix(panel, "1 "), "%s: the panel counts one waiting: %q", lang, panel)
		require.Equal(t, 1, eval[int](b, history+`.length`), "%s: no second checkpoint starts while the first is in progress", lang)
		b.shot("checkpoint-waits-" + lang)
		// Play: checkpoint 1 completes and the waiting one starts after it.
		b.clickLive(`#btn-play`)
		b.waitJS(60*time.Second, "checkpoint 2 started after 1 completed", history+`.length >= 2`)
		h := eval[[]map[string]any](b, history+`.slice(0, 2).map(c => ({id: c.id, status: c.status, trigger: c.triggerTime, end: c.triggerTime + (c.endToEndDuration || 0)}))`)
		assert.Equal(t, "COMPLETED", h[0]["status"], "%s: checkpoint 1 completed", lang)
		assert.GreaterOrEqual(t, h[1]["trigger"].(float64), h[0]["end"].(float64), "%s: checkpoint 2 started when 1 had ended", lang)
		b.waitJS(10*time.Second, "nothing waiting any more", `!window.statelab.model.snap.checkpoints.queued && document.querySelector('.cp-queued') === null`)
	}

	// With maxConcurrentCheckpoints=2 (a sandbox setting) the second starts
	// at once beside the first, and the third waits.
	b := openPausedWordCount(t, "maxConcurrentCheckpoints=2&lang=en")
	require.Equal(t, 2, eval[int](b, `window.statelab.model.snap.checkpoints.maxConcurrent`))
	const inProgress = `window.statelab.model.snap.checkpoints.history.filter(c => c.status === 'IN_PROGRESS').length`
	for n := 1; n <= 2; n++ {
		b.clickLive(`#btn-checkpoint`)
		b.waitJS(10*time.Second, fmt.Sprintf("%d in progress", n), fmt.Sprintf(`%s === %d`, inProgress, n))
		b.waitJS(10*time.Second, "the toast", `!document.getElementById('toast').hidden`)
		assert.Contains(t, eval[string](b, `document.getElementById('toast').textContent`), "Checkpoint triggered", "request %d of 2 starts at once", n)
		b.run(chromedp.Evaluate[chromedp.Void](`document.getElementById('toast').hidden = true`))
	}
	b.clickLive(`#btn-checkpoint`)
	b.waitJS(10*time.Second, "the third waits", `window.statelab.model.snap.checkpoints.queued === 1`)
	b.waitJS(10*time.Second, "the toast", `!document.getElementById('toast').hidden`)
	assert.Contains(t, eval[string](b, `document.getElementById('toast').textContent`), "Flink runs at most 2 at a time")
	assert.Equal(t, 2, eval[int](b, inProgress), "no third checkpoint in progress")
}
