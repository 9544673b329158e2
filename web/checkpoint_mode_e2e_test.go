package web

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A learner turns periodic checkpoints off in the sandbox form (the job
// still asks for exactly-once) and reads in the checkpoints panel that its
// barriers are counted, not aligned, as Flink handles a job without a
// checkpoint interval (StreamGraph.getCheckpointingMode; measured on Flink
// by the conformance scenario no-interval-barriers-do-not-block) — English
// on a laptop, Chinese on a phone. With an interval the panel says
// exactly-once and shows no such note.
func TestBrowserNoIntervalSaysBarriersAreNotAligned(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	for _, lang := range []string{"en", "zh"} {
		cat := catalogue(t, lang)
		b := startFromSandboxForm(t, lang, "interval", "0s", "sandbox.intervalOffShort")
		require.True(t, eval[bool](b, `window.statelab.model.snap.checkpoints.modeNoInterval === true`), "%s: the job asks for exactly-once without an interval", lang)
		b.waitJS(10*time.Second, "the panel's note", `document.querySelector('#checkpoints .cp-mode-no-interval') !== null`)
		assert.Equal(t, cat["cp.modeNoInterval"], eval[string](b, `document.querySelector('#checkpoints .cp-mode-no-interval').textContent`), lang)
		mode := eval[string](b, `document.querySelector('#checkpoints .cp-mode').textContent`)
		assert.True(t, strings.HasPrefix(mode, cat["mode.at-least-once"]), "%s: the mode line says at-least-once: %q", lang, mode)
		assert.Contains(t, mode, cat["cp.manual"], lang)
		assert.LessOrEqual(t, eval[int](b, `document.documentElement.scrollWidth`), eval[int](b, `innerWidth`), "%s: the page does not scroll sideways", lang)
		b.run(chromedp.Evaluate[chromedp.Void](`document.getElementById('checkpoints').scrollIntoView({block: 'start'})`))
		b.shot("no-interval-mode-" + lang)
	}
	// With periodic checkpoints: exactly-once, no note.
	b := newBrowser(t)
	b.openLive("template=wordcount&seed=4&interval=200ms&lang=en")
	b.waitJS(20*time.Second, "the checkpoints panel", `document.querySelector('#checkpoints .cp-mode') !== null`)
	assert.True(t, strings.HasPrefix(eval[string](b, `document.querySelector('#checkpoints .cp-mode').textContent`), catalogue(t, "en")["mode.exactly-once"]))
	assert.False(t, eval[bool](b, `document.querySelector('#checkpoints .cp-mode-no-interval') !== null`))
}
