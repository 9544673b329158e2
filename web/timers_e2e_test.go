package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A person opens the alerts sandbox with a short state TTL, inspects an
// alerts subtask and sees its pending timers (keyed state, in firing
// order, with the watermark) and keyed entries with their last access;
// then crashes the subtask and sees the timers again after the restore.
// In Chinese the timers table is labelled in Chinese.
func TestBrowserInspectorShowsTimersAndTTL(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.openLive("template=alerts&seed=3&interval=100ms&ttl=20s&lang=en")
	b.waitJS(20*time.Second, "every subtask running", jsAllRunning)
	b.clickLive(`#btn-faster`)
	b.waitJS(60*time.Second, "a completed checkpoint", `window.statelab.model.snap.checkpoints.counts.completed >= 1`)
	b.clickLive(`input[name=tool][value=inspect]`)
	b.clickLive(`.box-button[data-task="alerts#0"]`)
	b.waitJS(30*time.Second, "the inspector's timers table",
		`document.querySelectorAll('#inspector .timers table tbody tr').length > 0`)
	heading := eval[string](b, `document.querySelector('#inspector .timers h3').innerText`)
	assert.Contains(t, heading, "Timers")
	assert.Contains(t, heading, "watermark")
	assert.Positive(t, eval[int](b, `[...document.querySelectorAll('#inspector table.keyed tbody td')].filter(td => (td.title || '').startsWith('last access at')).length`),
		"TTL entries show their last access")
	b.shot("timers-inspector")

	b.clickLive(`input[name=tool][value=crash]`)
	b.clickLive(`.box-button[data-task="alerts#0"]`)
	b.waitJS(60*time.Second, "a restore", `window.statelab.model.snap.counters.restores >= 1`)
	b.waitJS(60*time.Second, "every subtask running again", jsAllRunning)
	b.clickLive(`input[name=tool][value=inspect]`)
	b.clickLive(`.box-button[data-task="alerts#0"]`)
	b.waitJS(30*time.Second, "timers again after the restore",
		`document.querySelectorAll('#inspector .timers table tbody tr').length > 0`)

	b.openLive("template=alerts&seed=3&lang=zh")
	b.waitJS(20*time.Second, "every subtask running", jsAllRunning)
	b.clickLive(`input[name=tool][value=inspect]`)
	b.clickLive(`.box-button[data-task="alerts#0"]`)
	b.waitJS(30*time.Second, "the timers heading in Chinese",
		`(document.querySelector('#inspector .timers h3')?.innerText || '').includes('定时器')`)
}
