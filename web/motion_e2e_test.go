package web

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsRecordsSent is how many records the job's channels have carried (the
// newest snapshot's counters).
const jsRecordsSent = `window.statelab.model.snap.channels.reduce((n, c) => n + c.sent, 0)`

// jsAnimations counts the animations and transitions running now.
const jsAnimations = `document.getAnimations().filter(a => a.playState === 'running').length`

// jsCountStarts has the page count every transition and animation that
// starts from now on (window.motionStarts).
const jsCountStarts = `(window.motionStarts = 0, ['transitionrun', 'animationstart'].forEach(type =>
  document.addEventListener(type, () => window.motionStarts++, true)), true)`

// TestBrowserReducedMotion: a person whose system asks for reduced motion
// (prefers-reduced-motion: reduce) sees records flow without anything
// moving: no dots travel along the job graph's channels while records are
// sent, no transition or animation starts (not even one of 1 ms: app.css
// once gave every element 1 ms transitions of every property, and each
// attribute a live view wrote became a transition and an extra frame
// drawn), and a note under
// the graph says, in the page's language, where the records in flight are
// shown instead (the queues and the edges' rates). The same page asked for
// motion again moves dots and hides the note. At 1280 px in English and at
// 390 px in 中文 (screenshots reduced-motion-WIDTH-LANG).
func TestBrowserReducedMotion(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	for _, c := range []struct {
		w, h int64
		lang string
		note string
	}{{1280, 800, "en", "reduced motion"}, {390, 844, "zh", "减少动态效果"}} {
		t.Run(fmt.Sprintf("%d-%s", c.w, c.lang), func(t *testing.T) {
			b := newBrowser(t) // reduced motion, as every test's tab unless withMotion
			b.run(chromedp.EmulateViewport(c.w, c.h))
			b.openLive("template=wordcount&seed=1&lang=" + c.lang)
			b.waitJS(30*time.Second, "every subtask running", jsAllRunning)
			require.True(t, eval[bool](b, `matchMedia('(prefers-reduced-motion: reduce)').matches`))

			note := `document.getElementById('graph-motion-note')`
			assert.True(t, eval[bool](b, note+`.checkVisibility()`), "the note under the graph shows")
			assert.Contains(t, eval[string](b, note+`.textContent`), c.note)
			assert.True(t, eval[bool](b, note+`.getBoundingClientRect().right <= document.documentElement.clientWidth`), "the note fits the page's width")

			// With the graph on screen (dots move only there), records flow
			// for two seconds and more; no dot moves, nothing animates.
			require.True(t, eval[bool](b, `(document.getElementById('graph').scrollIntoView({block: 'center'}), true)`))
			require.True(t, eval[bool](b, jsCountStarts))
			sent := eval[int](b, jsRecordsSent)
			const still = `(document.querySelectorAll('#graph .packet').length === 0 && (` + jsAnimations + `) === 0)`
			assert.False(t, b.holdsWithin(2*time.Second, `!`+still), "a dot or an animation moved under reduced motion")
			b.waitJS(30*time.Second, "records sent", jsRecordsSent+` > `+strconv.Itoa(sent))
			b.waitJS(30*time.Second, "an edge's rate", `[...document.querySelectorAll('#graph text.edge-rate')].some(e => /\d/.test(e.textContent))`)
			assert.True(t, eval[bool](b, still), "no dot and no animation after records were sent")
			assert.Zero(t, eval[int](b, `window.motionStarts`), "transitions or animations started while records were sent")
			b.shot(fmt.Sprintf("reduced-motion-%d-%s", c.w, c.lang))

			// With motion, the same page moves dots and hides the note.
			b.withMotion()
			b.waitJS(30*time.Second, "dots moving", `document.querySelectorAll('#graph .packet').length > 0`)
			assert.False(t, eval[bool](b, note+`.checkVisibility()`), "the note hides with motion")
		})
	}
}
