package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
)

// A person turns on operator chaining and unaligned checkpoints in the
// sandbox: the job graph names each chain as Flink's Web UI does and draws
// the chained channels apart, and a completed checkpoint shows in the
// table as unaligned with the in-flight data it holds.
func TestBrowserChainsAndUnalignedCheckpoints(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.openLive("template=wordcount&seed=3&interval=50ms&chaining=true&unaligned=true&lang=en")
	b.waitJS(20*time.Second, "the chain named in the graph",
		`[...document.querySelectorAll('#graph .op-chain')].some(e => e.textContent.includes('Source: source -> tokenizer'))`)
	assert.Positive(t, eval[int](b, `document.querySelectorAll('#graph path.chan.chained').length`), "chained channels are drawn as such")
	for range 3 {
		b.clickLive(`#btn-faster`)
	}
	b.waitJS(90*time.Second, "an unaligned checkpoint in the table",
		`[...document.querySelectorAll('table.checkpoints td')].some(e => e.textContent.startsWith('unaligned ·'))`)
	b.shot("chains-and-unaligned")
	b.waitJS(5*time.Second, "the mode says unaligned", `document.querySelector('.cp-mode')?.textContent.includes('unaligned barriers')`)
	b.openLive("template=wordcount&seed=3&chaining=true&lang=zh")
	b.waitJS(20*time.Second, "the chain's title in Chinese",
		`[...document.querySelectorAll('#graph .op-chain')].some(e => e.title.startsWith('算子链'))`)
}

// The sandbox form turns both on: the person picks "On" for operator
// chaining and "Unaligned" barriers, starts the job, and sees the chain.
func TestBrowserSandboxFormChainingAndUnaligned(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url+"/sandbox?lang=en"), chromedp.WaitVisible(chromedp.CSS(`#sandbox-form`)))
	// The form starts where the sandbox's jobs are (chaining: false) and
	// names Flink's default, on.
	assert.Equal(t, "false", eval[string](b, `document.getElementById('chaining').value`))
	assert.Contains(t, eval[string](b, `document.querySelector('#chaining option[value="true"]').textContent`), "Flink's default")
	assert.Contains(t, eval[string](b, `document.getElementById('chaining').title`), "Flink's default is on: a job that does not say otherwise chains")
	b.run(chromedp.SetValue(chromedp.CSS(`#chaining`), "true"), chromedp.SetValue(chromedp.CSS(`#unaligned`), "true"))
	b.clickLive(`#sandbox-form button[type=submit]`)
	b.waitJS(20*time.Second, "the live view", `document.getElementById('workspace')?.dataset.ready === 'true'`)
	b.waitJS(20*time.Second, "the chain named in the graph",
		`[...document.querySelectorAll('#graph .op-chain')].some(e => e.textContent.includes('Source: source -> tokenizer'))`)
	for range 3 {
		b.clickLive(`#btn-faster`)
	}
	b.waitJS(90*time.Second, "an unaligned checkpoint", `window.statelab.model.snap.checkpoints.history.some(c => c.unaligned && c.status === 'COMPLETED')`)
}
