package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
)

// A learner takes a savepoint, opens Upgrade…, gives count a uid it did not
// have and submits: Flink's refusal shows in the dialog and the job runs on
// unchanged. With allowNonRestoredState ticked the changed job starts, the
// dialog closes and count now shows its uid and a new operator ID.
func TestBrowserUpgradeFromSavepoint(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.openLive("template=wordcount&seed=5&interval=200ms&lang=en")
	for range 3 {
		b.clickLive(`#btn-faster`)
	}
	b.waitJS(60*time.Second, "every subtask running", jsAllRunning)
	b.clickLive(`#btn-savepoint`)
	b.waitJS(60*time.Second, "a retained savepoint", `(window.statelab.model.snap.checkpoints.retained || []).some(c => c.savepoint)`)
	countID := eval[string](b, `window.statelab.model.snap.job.operators.find(o => o.id === 'count').operatorId`)
	assert.Len(t, countID, 32)

	b.clickLive(`#btn-upgrade`)
	b.waitJS(10*time.Second, "the upgrade dialog", `document.getElementById('upgrade').open`)
	assert.Equal(t, 4, eval[int](b, `document.querySelectorAll('#upgrade-ids tr').length`), "one row per operator")
	assert.Contains(t, eval[string](b, `document.getElementById('upgrade-ids').innerText`), countID)
	assert.True(t, eval[bool](b, `document.getElementById('upgrade-checkpoint').selectedOptions[0].textContent.startsWith('savepoint')`), "the newest savepoint comes first")
	b.run(chromedp.SetValue(chromedp.CSS(`#upgrade-change`), "set-uid"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('upgrade-change').dispatchEvent(new Event('change'))`),
		chromedp.SetValue(chromedp.CSS(`#upgrade-operator`), "count"))
	b.waitJS(5*time.Second, "the uid field", `!document.getElementById('upgrade-uid').closest('label').hidden && !document.getElementById('upgrade-uid-hash').closest('label').hidden && document.getElementById('upgrade-kind').closest('label').hidden`)
	b.run(chromedp.SendKeys(chromedp.CSS(`#upgrade-uid`), "count"))
	b.clickLive(`#upgrade-submit`)
	b.waitJS(30*time.Second, "Flink's refusal in the dialog", `document.getElementById('upgrade-result').className === 'error'`)
	msg := eval[string](b, `document.getElementById('upgrade-result').textContent`)
	assert.Contains(t, msg, "Cannot map checkpoint/savepoint state for operator "+countID+" to the new program")
	assert.Contains(t, msg, "--allowNonRestoredState")
	b.shot("upgrade-refused")
	assert.Equal(t, "", eval[string](b, `window.statelab.model.snap.job.operators.find(o => o.id === 'count').uid || ''`), "the refused upgrade changed nothing")

	b.clickLive(`#upgrade-allow`)
	b.clickLive(`#upgrade-submit`)
	b.waitJS(30*time.Second, "the dialog closed", `!document.getElementById('upgrade').open`)
	b.waitJS(60*time.Second, "count with its uid, running", `window.statelab.model.snap.job.operators.find(o => o.id === 'count').uid === 'count' && `+jsAllRunning)
	assert.NotEqual(t, countID, eval[string](b, `window.statelab.model.snap.job.operators.find(o => o.id === 'count').operatorId`))
	b.shot("upgrade-accepted")

	// The same control in Chinese.
	b.openLive("template=wordcount&seed=5&lang=zh")
	assert.Equal(t, "升级…", eval[string](b, `document.getElementById('btn-upgrade').textContent.trim()`))
}
