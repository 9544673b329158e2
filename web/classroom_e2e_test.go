package web

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tab opens another tab of b's browser.
func (b *browserEnv) tab() *browserEnv {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	b.t.Cleanup(cancel)
	require.NoError(b.t, chromedp.Do(ctx), "open a tab")
	nb := &browserEnv{t: b.t, ctx: ctx, url: b.url, srv: b.srv, motion: b.motion}
	nb.emulateMotion()
	return nb
}

const jsReady = `document.getElementById('workspace')?.dataset.ready === 'true' && document.querySelectorAll('.box-button').length > 0`

// TestBrowserClassroom: a presenter and two followers in three tabs. The
// presenter crashes a TaskManager and both followers see it; a follower's
// control is refused; a follower forks and rescales its own copy while the
// presenter's run stays as it was; the presenter travels back in time.
func TestBrowserClassroom(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	info, err := b.srv.CreateClassroom(ClassroomRequest{Template: "wordcount", Settings: map[string]any{"seed": "3", "slots": "2", "interval": "200ms"}}, b.url)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(info.PresenterURL, b.url+"/classroom/"))

	presenter := b
	presenter.run(chromedp.Navigate(info.PresenterURL + "&lang=en"))
	presenter.waitJS(20*time.Second, "the presenter's live view", jsReady)
	f1, f2 := b.tab(), b.tab()
	for _, f := range []*browserEnv{f1, f2} {
		f.run(chromedp.Navigate(b.url + "/join/" + strings.ToLower(info.Code) + "?lang=en"))
		f.waitJS(20*time.Second, "a follower's live view", jsReady)
		assert.Equal(t, info.Session, eval[string](f, `window.statelab.model.snap.session`), "followers watch the presenter's session")
		// While following, the controls show greyed out, with the reason.
		f.waitJS(10*time.Second, "greyed-out controls", `document.getElementById('btn-play').disabled && document.getElementById('btn-checkpoint').disabled`)
	}
	presenter.waitJS(10*time.Second, "the follower count", `document.getElementById('followers').textContent.includes('2 following')`)
	assert.True(t, eval[bool](presenter, `document.getElementById('join-qr').complete && document.getElementById('join-qr').naturalWidth > 100`), "the QR code is drawn")
	assert.Equal(t, info.Code, eval[string](presenter, `document.getElementById('join-code-big').textContent`))

	// Faster, through the presenter's speed buttons, until a checkpoint.
	for range 2 {
		presenter.clickLive(`#btn-faster`)
		time.Sleep(150 * time.Millisecond)
	}
	presenter.waitJS(60*time.Second, "every subtask running and a checkpoint", jsAllRunning+` && window.statelab.model.snap.checkpoints.counts.completed >= 1`)
	presenter.shot("20-classroom-presenter")

	// The presenter crashes tm-1; both followers see it lost.
	presenter.clickLive(`button[aria-label="Crash TaskManager tm-1"]`)
	for i, f := range []*browserEnv{f1, f2} {
		f.waitJS(20*time.Second, "tm-1 lost on a follower", `window.statelab.model.snap.taskManagers.find(t => t.id === 'tm-1').status === 'LOST' && document.querySelectorAll('#graph rect.band.lost').length === 1`)
		f.waitJS(20*time.Second, "the story on a follower", `document.getElementById('explain-body').innerText.includes('TaskManager tm-1 crashed')`)
		// A follower did not crash it: the story says the presenter did.
		f.waitJS(10*time.Second, "the presenter named as who acted", `document.getElementById('explain-body').innerText.includes('The presenter crashed TaskManager tm-1')`)
		assert.NotContains(t, eval[string](f, `document.getElementById('explain-body').innerText`), "You crashed")
		if i == 0 {
			f.shot("21-classroom-follower-sees-crash")
		}
	}

	presenter.waitJS(10*time.Second, "the presenter's own story", `document.getElementById('explain-body').innerText.includes('You crashed TaskManager tm-1')`)

	// A follower's controls are disabled; a command sent anyway is refused
	// by the server.
	assert.True(t, eval[bool](f1, `document.querySelector('button[aria-label="Crash TaskManager tm-2"]').disabled`), "a follower cannot crash a TaskManager")
	code, err := chromedp.Run(f1.ctx, chromedp.Evaluate[string](`window.statelab.conn.command('rescale', {operator: 'count', parallelism: 3}).then(() => 'ack', (e) => e.code)`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Equal(t, "forbidden", code)
	f1.shot("22-classroom-follower-refused")
	assert.Equal(t, "ALIVE", eval[string](presenter, `window.statelab.model.snap.taskManagers.find(t => t.id === 'tm-2').status`), "nothing happened")

	// The presenter brings tm-1 back; the run recovers.
	presenter.clickLive(`.tm-label button[data-focus="tm:tm-1"]`)
	presenter.waitJS(60*time.Second, "every subtask running again", jsAllRunning+` && window.statelab.model.snap.taskManagers.every(t => t.status === 'ALIVE')`)

	// Follower 2 forks and rescales its own copy.
	f2.clickLive(`#btn-fork`)
	f2.waitJS(20*time.Second, "its own copy", `document.getElementById('classroom').dataset.mode === 'fork' && window.statelab.model.snap.session !== '`+info.Session+`'`)
	f2.waitJS(5*time.Second, "controls in the copy", `!document.getElementById('btn-play').disabled && !document.getElementById('btn-follow').hidden`)
	commands := eval[int](f2, `window.statelab.model.snap.commands.length`)
	assert.GreaterOrEqual(t, commands, 2, "the copy carries the presenter's crash and restart")
	// The copy at the presenter's pace: faster, as the presenter went.
	for range 2 {
		f2.clickLive(`#btn-faster`)
		time.Sleep(150 * time.Millisecond)
	}
	f2.waitJS(60*time.Second, "every subtask of the copy running", jsAllRunning)
	f2.clickLive(`.op-head[data-op="count"] button[aria-label="Rescale count to 3"]`)
	f2.waitJS(90*time.Second, "count at parallelism 3 in the copy",
		`window.statelab.model.snap.job.operators.find(o => o.id === 'count').parallelism === 3 && `+jsAllRunning)
	f2.shot("23-classroom-fork-rescaled")
	assert.Equal(t, 2, eval[int](presenter, `window.statelab.model.snap.job.operators.find(o => o.id === 'count').parallelism`), "the presenter's run is untouched")
	assert.Equal(t, 2, eval[int](f1, `window.statelab.model.snap.job.operators.find(o => o.id === 'count').parallelism`), "and so is what follower 1 sees")

	// The copy exports its job graph as SVG and PNG (client side).
	svgLen, err := chromedp.Run(f2.ctx, chromedp.Evaluate[int](`import('/static/js/timeline.js').then(m => { const g = m.graphSVG(); return g.text.includes('<svg') && g.text.includes('fill:') ? g.text.length : -1; })`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Greater(t, svgLen, 1000)
	pngLen, err := chromedp.Run(f2.ctx, chromedp.Evaluate[int](`import('/static/js/timeline.js').then(m => m.graphPNG(m.graphSVG())).then(b => b.type === 'image/png' ? b.size : -1)`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Greater(t, pngLen, 1000)

	// Back to following: the presenter's run again.
	f2.clickLive(`#btn-follow`)
	f2.waitJS(20*time.Second, "following again", `document.getElementById('classroom').dataset.mode === 'follow' && window.statelab.model.snap.session === '`+info.Session+`'`)

	// The presenter's timeline marks the crash; PageUp travels back in time
	// and every follower sees the past; Present returns.
	presenter.waitJS(10*time.Second, "crash and restore marks", `document.querySelectorAll('#timeline .mark-crash').length >= 1 && document.querySelectorAll('#timeline .mark-checkpoint').length >= 1`)
	presenter.clickLive(`#btn-play`)
	presenter.waitJS(30*time.Second, "paused", `window.statelab.model.snap.paused`)
	head := eval[int](presenter, `window.statelab.model.snap.step`)
	presenter.run(chromedp.KeyEvent(kb.PageUp))
	presenter.waitJS(30*time.Second, "the past on the presenter", `document.getElementById('timeline').classList.contains('viewing') && window.statelab.model.snap.step < `+itoa(int64(head)))
	f1.waitJS(30*time.Second, "the past on a follower", `document.getElementById('timeline').classList.contains('viewing')`)
	presenter.shot("24-classroom-time-travel")
	presenter.clickLive(`#tl-present`)
	presenter.waitJS(30*time.Second, "the present again", `!document.getElementById('timeline').classList.contains('viewing') && window.statelab.model.snap.step === `+itoa(int64(head)))
}
