package web

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	msg := b.submitUpgrade(`document.getElementById('upgrade-result').className === 'error'`)
	assert.Contains(t, msg, "Cannot map checkpoint/savepoint state for operator "+countID+" to the new program")
	assert.Contains(t, msg, "--allowNonRestoredState")
	b.shot("upgrade-refused")
	assert.Equal(t, "", eval[string](b, `window.statelab.model.snap.job.operators.find(o => o.id === 'count').uid || ''`), "the refused upgrade changed nothing")

	b.clickLive(`#upgrade-allow`)
	b.submitUpgrade(`!document.getElementById('upgrade').open`)
	b.waitJS(60*time.Second, "count with its uid, running", `window.statelab.model.snap.job.operators.find(o => o.id === 'count').uid === 'count' && `+jsAllRunning)
	assert.NotEqual(t, countID, eval[string](b, `window.statelab.model.snap.job.operators.find(o => o.id === 'count').operatorId`))
	b.shot("upgrade-accepted")

	// The same control in Chinese.
	b.openLive("template=wordcount&seed=5&lang=zh")
	assert.Equal(t, "升级…", eval[string](b, `document.getElementById('btn-upgrade').textContent.trim()`))
}

// submitUpgrade presses the dialog's submit button until done holds and
// returns the dialog's result text. A person whose command was lost with
// the connection — on a busy machine the server closes a view that falls
// behind the event stream ("too slow: … reconnect"), and the page
// reconnects — presses it again once the page is back.
func (b *browserEnv) submitUpgrade(done string) string {
	b.t.Helper()
	const result = `document.getElementById('upgrade-result').textContent`
	const lost = `/too slow|connection|reconnect/i.test(` + result + `)`
	for try := 1; ; try++ {
		// A retry waits for an answer other than the lost one shown.
		before := eval[string](b, result)
		b.clickLive(`#upgrade-submit`)
		b.waitJS(30*time.Second, "the upgrade's answer", fmt.Sprintf(`((%s) && !(%s)) || ((%s) && %s !== %q)`, done, lost, lost, result, before))
		if eval[bool](b, done) && !eval[bool](b, lost) {
			return eval[string](b, result)
		}
		require.Less(b.t, try, 3, "the upgrade command lost %d times: %s", try, eval[string](b, result))
		b.t.Logf("upgrade attempt %d lost with the connection (%q); submitting again once the page is back", try, eval[string](b, result))
		b.waitJS(60*time.Second, "the page connected again", jsAllRunning+` && window.statelab.conn && window.statelab.conn.ws && window.statelab.conn.ws.readyState === 1`)
	}
}
