package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
)

// A learner turns on local recovery in the sandbox form, crashes a count
// subtask and reads in the checkpoints panel that the restore came from the
// TaskManagers' local copies.
func TestBrowserLocalRecoveryFromTheSandboxForm(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url+"/sandbox?lang=en"), chromedp.WaitVisible(chromedp.CSS(`#sandbox-form`)))
	b.run(chromedp.SetValue(chromedp.CSS(`#localRecovery`), "true"))
	b.clickLive(`#sandbox-form button[type=submit]`)
	b.waitJS(20*time.Second, "the live view", `document.getElementById('workspace')?.dataset.ready === 'true'`)
	for range 3 {
		b.clickLive(`#btn-faster`)
	}
	b.waitJS(60*time.Second, "a completed checkpoint", `window.statelab.model.snap.checkpoints.counts.completed >= 1 && `+jsAllRunning)
	b.clickLive(`.box-button[data-task="count#0"]`)
	b.waitJS(60*time.Second, "a restore with local bytes", `(window.statelab.model.snap.checkpoints.latestRestore?.localBytes || 0) > 0`)
	b.waitJS(10*time.Second, "the panel's figure", `(document.querySelector('#checkpoints .cp-restore-bytes')?.textContent || '').includes('locally')`)
	assert.Contains(t, eval[string](b, `document.querySelector('#checkpoints .cp-restore-bytes').textContent`), "0 B from checkpoint storage",
		"every byte came from the local copies (without local recovery, localBytes stays 0 and the wait above fails)")
	b.shot("local-recovery-restore")
}
