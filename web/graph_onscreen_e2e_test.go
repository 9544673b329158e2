package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsPackets counts the records drawn travelling on the graph's channels.
const jsPackets = `document.querySelectorAll('#graph circle.packet').length`

// TestBrowserGraphMovesRecordsOnlyOnScreen: records travel on the job
// graph as dots while the graph is on screen; scrolled away from it (a
// person reading the log below), no dot is drawn or moved — they would
// redraw the page every frame for nobody — while the boxes' counts still
// follow the job; back at the graph, the dots travel again.
func TestBrowserGraphMovesRecordsOnlyOnScreen(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t).withMotion()
	b.run(chromedp.EmulateViewport(390, 844))
	b.openLive("template=wordcount&seed=1&lang=en")
	// On a phone the story comes first and the graph below it.
	require.True(t, eval[bool](b, `(document.getElementById('graph').scrollIntoView(), true)`))
	b.waitJS(30*time.Second, "records travelling on the graph", jsPackets+` > 0`)

	require.True(t, eval[bool](b, `(document.getElementById('log').scrollIntoView(), document.getElementById('graph').getBoundingClientRect().bottom < 0)`),
		"the graph is above the screen once the log is shown")
	b.shot("graph-off-screen-log")
	time.Sleep(time.Second) // the observer reports, dots in flight are dropped
	const jsRecords = `String(window.statelab.model.snap.job.operators.find(o => o.id === 'count').subtasks.reduce((n, s) => n + (s.recordsIn || 0), 0))`
	before := eval[string](b, jsRecords)
	for i := range 10 {
		assert.Zero(t, eval[int](b, jsPackets), "no dot drawn off screen (look %d)", i)
		time.Sleep(200 * time.Millisecond)
	}
	assert.NotEqual(t, before, eval[string](b, jsRecords), "the job ran on meanwhile")

	require.True(t, eval[bool](b, `(document.getElementById('graph').scrollIntoView(), true)`))
	b.waitJS(30*time.Second, "records travelling again", jsPackets+` > 0`)
}
