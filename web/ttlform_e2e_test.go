package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
)

// jsFieldShown reports whether the sandbox form shows the field of id.
func jsFieldShown(id string) string {
	return `!document.getElementById('` + id + `').closest('.field').hidden`
}

// A person picks the alerts template in the sandbox form, sees its time
// domain and state TTL fields (and no time domain for the word count),
// chooses processing time and a 2 s TTL that also returns expired state,
// starts the job and finds both in the session's settings (its scenario).
// Then the word count with a 200 ms TTL: the inspector marks an entry
// expired once its TTL has passed on the job's clock.
func TestBrowserSandboxFormSetsTTLAndTimeDomain(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url+"/sandbox?lang=en"), chromedp.WaitVisible(chromedp.CSS(`#sandbox-form`)))
	b.clickLive(`input[name=template][value=wordcount]`)
	b.waitJS(5*time.Second, "the TTL field for the word count", jsFieldShown("ttl"))
	assert.False(t, eval[bool](b, jsFieldShown("timeDomain")), "the word count has no timers to time out")
	assert.True(t, eval[bool](b, `document.getElementById('ttlStateVisibility').disabled`), "the TTL's details wait for a TTL")
	b.clickLive(`input[name=template][value=alerts]`)
	b.waitJS(5*time.Second, "the time domain field for alerts", jsFieldShown("timeDomain")+` && `+jsFieldShown("ttl"))
	b.run(chromedp.SetValue(chromedp.CSS(`#ttl`), "2s"))
	// SetValue fires no change event: a person's choice does.
	b.waitJS(5*time.Second, "the TTL's details enabled",
		`(document.getElementById('sandbox-form').dispatchEvent(new Event('change')), !document.getElementById('ttlStateVisibility').disabled)`)
	b.run(chromedp.SetValue(chromedp.CSS(`#ttlStateVisibility`), "ReturnExpiredIfNotCleanedUp"),
		chromedp.SetValue(chromedp.CSS(`#timeDomain`), "processing"))
	b.shot("sandbox-form-ttl-time-domain")
	b.clickLive(`#sandbox-form button[type=submit]`)
	b.waitJS(20*time.Second, "the live view", `document.getElementById('workspace')?.dataset.ready === 'true'`)
	b.waitJS(20*time.Second, "the session's scenario", `(() => {
	  if (window.__scenario === undefined) {
	    window.__scenario = null;
	    fetch('/api/sessions/' + encodeURIComponent(window.statelab.model.snap.session) + '/scenario')
	      .then(r => r.json()).then(s => { window.__scenario = s; });
	  }
	  return window.__scenario !== null; })()`)
	settings := eval[map[string]string](b, `window.__scenario.settings`)
	assert.Equal(t, "alerts", eval[string](b, `window.__scenario.template`))
	assert.Equal(t, "2s", settings["ttl"])
	assert.Equal(t, "ReturnExpiredIfNotCleanedUp", settings["ttlStateVisibility"])
	assert.Equal(t, "processing", settings["timeDomain"])

	b.run(chromedp.Navigate(b.url+"/sandbox?lang=en"), chromedp.WaitVisible(chromedp.CSS(`#sandbox-form`)))
	b.clickLive(`input[name=template][value=wordcount]`)
	b.run(chromedp.SetValue(chromedp.CSS(`#ttl`), "200ms"))
	b.clickLive(`#sandbox-form button[type=submit]`)
	b.waitJS(20*time.Second, "the live view", `document.getElementById('workspace')?.dataset.ready === 'true' && document.querySelectorAll('.box-button').length > 0`)
	// While words keep coming, each access of count's state also cleans
	// up the next 5 entries (incremental cleanup), so an expired entry is
	// seldom there to be seen; once the sources have read their input
	// nothing cleans up and the words not counted for 200 ms of job time
	// stay, expired. 64x reads the input in a few seconds.
	for range 6 {
		b.clickLive(`#btn-faster`)
	}
	b.clickLive(`input[name=tool][value=inspect]`)
	const expired = `[...document.querySelectorAll('#inspector .pill')].some(p => p.textContent === 'expired')`
	deadline := time.Now().Add(120 * time.Second)
	for !eval[bool](b, expired) {
		if time.Now().After(deadline) {
			b.shot("ttl-no-expired-entry")
			t.Fatalf("no entry of count#0 shown expired within 120 s with a 200 ms TTL")
		}
		b.clickLive(`.box-button[data-task="count#0"]`) // the inspector reads the state again
		time.Sleep(time.Second)
	}
	b.shot("ttl-expired-entry")
}
