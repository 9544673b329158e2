package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
)

// jsPrevious is the explain panel's earlier story (a <details>), if shown.
const jsPrevious = `document.querySelector('#explain-body details.previous')`

// TestBrowserExplainKeepsOpenDetails: the explain panel redraws its whole
// body whenever its story gets a step, and the earlier story sits in a
// <details> under the current one. A learner who opened it to read it
// must find it open after the next redraw (the story of their next
// action), and one who closed it must find it closed (issue 22). Each
// redraw is made sure of by marking the node and waiting for a new one;
// the stories are the checkpoints the toolbar's button triggers.
func TestBrowserExplainKeepsOpenDetails(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.openLive("template=wordcount&seed=3&interval=200ms&lang=en")
	b.waitJS(60*time.Second, "every subtask running", jsAllRunning)

	// title is the current story's title.
	title := func() string {
		return eval[string](b, `document.querySelector('#explain-body .episode h3')?.innerText || ''`)
	}
	// trigger starts a story of its own (a checkpoint the learner
	// triggered) after marking the current <details>, and waits for the
	// panel to draw it: the marked node is gone, a new one is there.
	trigger := func() {
		t.Helper()
		b.run(chromedp.Evaluate[chromedp.Void](`(d => { if (d) d.dataset.marked = 'yes'; })(` + jsPrevious + `)`))
		b.clickLive(`#btn-checkpoint`)
		b.waitJS(60*time.Second, "the panel drawn again with the triggered checkpoint's story",
			jsPrevious+` !== null && `+jsPrevious+`.dataset.marked !== 'yes' && document.getElementById('explain-body').innerText.includes('You triggered a checkpoint')`)
	}

	// The first checkpoint tells its own story; the triggered one pushes
	// it into the <details>, closed.
	b.waitJS(60*time.Second, "a first story", `document.querySelector('#explain-body .episode') !== null`)
	trigger()
	assert.False(t, eval[bool](b, jsPrevious+`.open`), "the earlier story starts closed")

	// Open it as a person does, by its summary; a redraw may replace the
	// node between a press and its release, so click until it is open.
	toggle := func(want bool) {
		t.Helper()
		for try := 0; ; try++ {
			b.clickLive(`#explain-body details.previous > summary`)
			ok, _ := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`new Promise(r => { const t0 = Date.now(); const f = () => {
			  const d = `+jsPrevious+`; if (d && d.open === `+boolJS(want)+`) r(true); else if (Date.now() - t0 > 10000) r(false); else setTimeout(f, 100); }; f(); })`, chromedp.EvalAwaitPromise))
			if ok {
				return
			}
			if try == 2 {
				b.shot("explain-details-toggle")
				t.Fatalf("three clicks on the earlier story's summary and it is still not open=%v", want)
			}
		}
	}
	toggle(true)
	before := title()
	trigger()
	assert.True(t, eval[bool](b, jsPrevious+`.open`), "the earlier story stays open across a redraw")
	trigger()
	assert.True(t, eval[bool](b, jsPrevious+`.open`), "and across the next one")
	assert.NotEqual(t, "", before, "the panel titles its story")

	toggle(false)
	trigger()
	assert.False(t, eval[bool](b, jsPrevious+`.open`), "closed again, it stays closed across a redraw")
}

func boolJS(v bool) string {
	if v {
		return "true"
	}
	return "false"
}
