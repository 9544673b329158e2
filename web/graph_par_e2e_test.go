package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
)

// TestBrowserParallelismFieldSurvivesARebuild: a person types a number into
// count's parallelism field, and before they press Enter the job graph
// rebuilds (a new shape: a crash, a restore, a rescale elsewhere). The new
// field keeps the focus and what they typed, and Enter rescales to it.
// Before, the new field showed the old parallelism and Enter asked for
// nothing (TestSiteJourney under load: count stayed at 2 for 2 minutes).
func TestBrowserParallelismFieldSurvivesARebuild(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	j := newJourney(b, "par-rebuild")
	j.visit("/sandbox/live?template=wordcount&seed=1&taskManagers=2&slots=2&lang=en")
	j.waitJS(60*time.Second, "every subtask running", jsAllRunning)
	j.run(chromedp.SendKeys(chromedp.CSS("#par-count"), kb.End+"\b\b\b\b3"))
	// The graph rebuilds (as a new shape makes it) with the digit typed and
	// no Enter yet; the old field is marked to tell the new one from it.
	j.run(chromedp.Evaluate[chromedp.Void](`document.getElementById('par-count').dataset.old = '1';
	  window.statelab.graph.shape = ''; window.statelab.graph.dirty = true`))
	j.waitJS(20*time.Second, "the graph rebuilt", `!!document.getElementById('par-count') && !document.getElementById('par-count').dataset.old`)
	assert.Equal(t, "par-count", eval[string](j.browserEnv, `document.activeElement?.id || ''`), "the new field has the focus")
	assert.Equal(t, "3", eval[string](j.browserEnv, `document.getElementById('par-count').value`), "the new field keeps what was typed")
	j.run(chromedp.KeyEvent("\r"))
	j.waitJS(120*time.Second, "count at parallelism 3, running",
		jsSnap+`.job.operators.find(o => o.id === 'count').parallelism === 3 && `+jsAllRunning)
	j.window("rescaled")
}
