package web

import (
	"strings"
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

// jsSelectLabelsCut lists the options of the visible selects matched by
// the CSS selector sel whose text does not fit the closed select (a phone
// shows the chosen option cut off, with no way to read the rest but
// opening the list).
func jsSelectLabelsCut(sel string) string {
	return strings.Replace(jsSelectLabelsCutIn, "SELECTS", sel, 1)
}

const jsSelectLabelsCutIn = `(() => {
  const ctx = document.createElement('canvas').getContext('2d'), cut = [];
  for (const s of document.querySelectorAll('SELECTS')) {
    if (s.offsetParent === null) continue;
    const cs = getComputedStyle(s);
    ctx.font = cs.font;
    // The closed select's arrow takes about 20 px beside the padding.
    const room = s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20;
    for (const o of s.options) {
      const w = ctx.measureText(o.text).width;
      if (w > room) cut.push(s.id + ': "' + o.text + '" ' + Math.round(w) + ' px in ' + Math.round(room) + ' px');
    }
  }
  return cut; })()`

// On a phone, in both languages, every choice of the sandbox form's
// selects reads whole when chosen: the TTL details, the heartbeat rule, the
// time domain (the alerts job shows them all once a TTL is set).
func TestBrowserSandboxFormChoicesFitOnAPhone(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.run(chromedp.EmulateViewport(390, 844))
	for _, lang := range []string{"en", "zh"} {
		b.run(chromedp.Navigate(b.url+"/sandbox?lang="+lang), chromedp.WaitVisible(chromedp.CSS(`#sandbox-form`)))
		b.clickLive(`input[name=template][value=alerts]`)
		b.waitJS(5*time.Second, "the alerts job's fields", jsFieldShown("timeDomain")+` && `+jsFieldShown("ttl"))
		b.run(chromedp.SetValue(chromedp.CSS(`#ttl`), "2s"))
		b.waitJS(5*time.Second, "the TTL's details enabled",
			`(document.getElementById('sandbox-form').dispatchEvent(new Event('change')), !document.getElementById('ttlStateVisibility').disabled)`)
		assert.Empty(t, eval[[]string](b, jsSelectLabelsCut(`#sandbox-form select`)), "%s at 390 px: choices cut off when chosen", lang)
		// The short label's whole sentence shows under the select while it
		// is the chosen one, and goes when the choice says it all.
		b.run(chromedp.SetValue(chromedp.CSS(`#backend`), "pebble"), chromedp.SetValue(chromedp.CSS(`#interval`), "0s"),
			chromedp.SetValue(chromedp.CSS(`#ttlStateVisibility`), "ReturnExpiredIfNotCleanedUp"))
		b.run(chromedp.Evaluate[chromedp.Void](`document.getElementById('sandbox-form').dispatchEvent(new Event('change'))`))
		assert.Contains(t, eval[string](b, `document.getElementById('backend-hint').textContent`), "EmbeddedRocksDBStateBackend", lang)
		assert.Contains(t, eval[string](b, `document.getElementById('interval-hint').textContent`), "Flink", lang)
		b.shot("sandbox-form-390-" + lang)
		b.run(chromedp.SetValue(chromedp.CSS(`#interval`), "200ms"))
		b.run(chromedp.Evaluate[chromedp.Void](`document.getElementById('sandbox-form').dispatchEvent(new Event('change'))`))
		assert.True(t, eval[bool](b, `document.getElementById('interval-hint').hidden`), "%s: no hint for 200 ms", lang)
		if lang == "zh" {
			assert.Contains(t, eval[string](b, `document.getElementById('ttlStateVisibility-hint').textContent`), "尚未清理时仍返回")
		}
	}
}
