package web

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Browser tests of the lesson pages (see e2e_test.go for the harness).

// jsLesson reads the lesson page's state (lesson.js).
const jsLesson = `window.statelab?.lesson`

func (b *browserEnv) waitLesson(d time.Duration, what, cond string) {
	b.t.Helper()
	b.waitJS(d, what, `(() => { const s = `+jsLesson+`; const m = s && s.lesson; if (!m) return false; return `+cond+`; })()`)
}

type tickState struct {
	Ticked bool   `json:"ticked"`
	Error  string `json:"error"`
	Checks string `json:"checks"`
}

// waitTick waits for step's tick as long as the server may wait for the job
// before a command (lessonTickWait), and fails at once with the server's
// reason when "do it for me" stopped.
func (b *browserEnv) waitTick(step int, id string) {
	b.t.Helper()
	deadline := time.Now().Add(lessonTickWait)
	for {
		st, err := chromedp.Run(b.ctx, chromedp.Evaluate[tickState](fmt.Sprintf(`(() => { const s = `+jsLesson+`; const m = s && s.lesson;
			return { ticked: !!s && s.ticks.includes(%d), error: (m && m.error) || '', checks: m ? JSON.stringify(m.checks) : '' }; })()`, step)))
		switch {
		case err == nil && st.Ticked:
			return
		case err == nil && st.Error != "":
			b.shot(fmt.Sprintf("step-%d-failed", step))
			b.t.Fatalf("step %d (%s): do it for me stopped: %s", step, id, st.Error)
		case time.Now().After(deadline):
			b.shot(fmt.Sprintf("step-%d-timeout", step))
			b.t.Fatalf("step %d (%s): no tick after %s; checks %s; last error %v", step, id, lessonTickWait, st.Checks, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// view saves what the window shows: a lesson page's text column scrolls on
// its own beside the live view, which a full-page screenshot (made by
// stretching the window) would redraw.
func (b *browserEnv) view(name string) {
	b.t.Helper()
	buf, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	require.NoError(b.t, err)
	p := filepath.Join(artifactsDir(b.t), name+".png")
	require.NoError(b.t, os.WriteFile(p, buf, 0o644))
	b.t.Logf("screenshot %s", p)
}

// click clicks a button by script: the text column scrolls smoothly to the
// current step, so a click at the button's coordinates could land beside it.
func (b *browserEnv) click(sel string) {
	b.t.Helper()
	b.run(chromedp.Evaluate[chromedp.Void](`document.querySelector('` + sel + `').click()`))
}

// TestBrowserLessonWalkthrough walks lesson 4 end to end with "do it for
// me" and sees every step's tick; then the language switch keeps the
// session, the progress shows on the list, a deep link opens a lesson at
// its step, and "replay this step" goes back.
func TestBrowserLessonWalkthrough(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	l, ok := course(t).Lesson("04-checkpoints-and-barriers")
	require.True(t, ok)
	n := len(l.Steps)

	b.run(chromedp.Navigate(b.url + "/lessons/" + l.Slug + "?lang=en"))
	b.waitJS(20*time.Second, "the lesson's live view", `document.getElementById('workspace')?.dataset.ready === 'true'`)
	b.waitLesson(20*time.Second, "the lesson's status", `m.step === 1`)
	assert.Equal(t, "lesson:"+l.Slug, eval[string](b, `window.statelab.model.snap.template`))
	b.waitJS(20*time.Second, "every subtask running", jsAllRunning)
	b.view("lesson-01-en-start")
	// Fast, so the walk takes seconds; the checks do not depend on speed.
	b.run(chromedp.Evaluate[chromedp.Void](`window.statelab.send('speed', {factor: 100})`))

	for i, st := range l.Steps {
		step := i + 1
		sel := fmt.Sprintf(`.steps .step[data-step="%d"]`, step)
		b.waitLesson(lessonTickWait, fmt.Sprintf("step %d is current", step), fmt.Sprintf(`m.step === %d || s.ticks.includes(%d)`, step, step))
		if len(st.Actions) > 0 {
			b.waitJS(30*time.Second, fmt.Sprintf("step %d's do it for me can be pressed", step),
				fmt.Sprintf(`!document.querySelector('%s [data-do]').disabled`, sel))
			assert.True(t, eval[bool](b, fmt.Sprintf(`document.querySelector('%s').classList.contains('current')`, sel)), "step %d is the current step", step)
			b.click(sel + ` [data-do]`)
		}
		b.waitTick(step, st.ID)
		b.waitJS(5*time.Second, fmt.Sprintf("step %d drawn done", step), fmt.Sprintf(`document.querySelector('%s').classList.contains('done')`, sel))
		assert.Equal(t, len(st.Checks), eval[int](b, fmt.Sprintf(`document.querySelectorAll('%s .checks li.ok').length`, sel)), "every check of step %d shows ok", step)
		assert.Empty(t, eval[string](b, fmt.Sprintf(`document.querySelector('%s .step-error').textContent`, sel)))
		if step == 1 {
			b.view("lesson-02-en-first-tick")
		}
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	assert.Equal(t, want, eval[[]int](b, jsLesson+`.ticks`), "every step ticked on the page, in order")
	b.waitLesson(10*time.Second, "the finished lesson", `m.finished`)
	b.waitJS(5*time.Second, "the banner", `!document.getElementById('lesson-banner').hidden`)
	assert.Contains(t, eval[string](b, `document.getElementById('lesson-banner').innerText`), "Lesson complete")
	assert.Equal(t, n, eval[int](b, `JSON.parse(localStorage.getItem('statelab.lesson.`+l.Slug+`')).done.length`), "the progress is kept in the browser")
	b.waitJS(5*time.Second, "the banner in view", `(() => { const r = document.getElementById('lesson-banner').getBoundingClientRect();
		const box = document.querySelector('.lesson-text').getBoundingClientRect(); return r.top >= box.top && r.bottom <= box.bottom; })()`)
	b.view("lesson-03-en-finished")

	// The language switch keeps the session: the steps stay done.
	session := eval[string](b, `window.statelab.model.snap.session`)
	b.run(chromedp.Click(chromedp.CSS(`[data-lang-link="zh"]`)))
	b.waitJS(20*time.Second, "the Chinese page", `document.documentElement.lang === 'zh' && document.getElementById('workspace')?.dataset.ready === 'true'`)
	b.waitLesson(20*time.Second, "the lesson's status in Chinese", `m.finished`)
	assert.Equal(t, session, eval[string](b, `window.statelab.model.snap.session`), "the same session")
	assert.Equal(t, n, eval[int](b, `document.querySelectorAll('.steps .step.done').length`))
	page := eval[string](b, `document.querySelector('.lesson-text').innerText`)
	for _, term := range []string{"检查点", "屏障", "帮我做", "完成条件"} {
		assert.Contains(t, page, term)
	}
	assert.Contains(t, eval[string](b, `document.getElementById('lesson-banner').innerText`), "本课完成")
	b.view("lesson-04-zh-finished")

	// The list shows the lesson finished (and is remembered in Chinese).
	b.run(chromedp.Navigate(b.url + "/lessons"))
	b.waitJS(10*time.Second, "the progress on the list", `document.querySelector('a[data-lesson="`+l.Slug+`"]').classList.contains('finished')`)
	assert.Equal(t, "zh", eval[string](b, `document.documentElement.lang`), "the language is remembered")
	assert.Equal(t, float64(n), eval[float64](b, `document.querySelector('a[data-lesson="`+l.Slug+`"] progress').value`))
	assert.Contains(t, eval[string](b, `document.getElementById('lessons-overall').textContent`), fmt.Sprintf("1/%d", len(course(t).Lessons)))
	b.shot("lesson-05-zh-list")

	// A deep link opens lesson 1 at step 4: the server played steps 1 to 3.
	b.run(chromedp.Navigate(b.url + "/lessons/01-why-state?lang=en#step-4"))
	b.waitLesson(30*time.Second, "step 4 current", `m.lesson === '01-why-state' && m.step === 4`)
	assert.Equal(t, []int{1, 2, 3}, eval[[]int](b, jsLesson+`.lesson.completed`))
	assert.Empty(t, eval[[]int](b, jsLesson+`.ticks`), "steps played to reach the link are not ticks")
	assert.True(t, eval[bool](b, `document.querySelector('.step[data-step="4"]').classList.contains('current')`))
	// The text column shows the linked step.
	b.waitJS(5*time.Second, "step 4 at the top of the text column",
		`Math.abs(document.querySelector('.lesson-text').getBoundingClientRect().top - document.querySelector('.step[data-step="4"]').getBoundingClientRect().top) < 40`)
	b.waitJS(10*time.Second, "the replayed state in the inspector's source", `window.statelab.model.snap.sources[0].partitions[0].end === 1`)
	b.view("lesson-06-en-deep-link")

	// Replay step 2: the engine goes back to where step 2 begins.
	b.click(`.step[data-step="2"] [data-replay]`)
	b.waitLesson(30*time.Second, "step 2 current again", `m.step === 2`)
	assert.Equal(t, "#step-2", eval[string](b, `location.hash`))
	assert.Equal(t, []int{1}, eval[[]int](b, jsLesson+`.lesson.completed`))
	b.click(`.step[data-step="2"] [data-do]`)
	b.waitLesson(lessonTickWait, "the tick of the replayed step", `s.ticks.includes(2)`)
	assert.Equal(t, 2, eval[int](b, jsLesson+`.ticks[0]`), "the replayed step is the first tick of this page")
	b.waitJS(5*time.Second, "the current step in view", `(() => { const el = document.querySelector('.step.current'); if (!el) return false;
		const r = el.getBoundingClientRect(), box = document.querySelector('.lesson-text').getBoundingClientRect();
		return Math.abs(r.top - box.top) < 40; })()`)
	b.view("lesson-07-en-replayed")
}

func TestBrowserLessonPagesLookRight(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	for _, lang := range []string{"en", "zh"} {
		b.run(chromedp.Navigate(b.url + "/lessons?lang=" + lang))
		b.waitJS(10*time.Second, "the list", fmt.Sprintf(`document.querySelectorAll('.lesson-list a').length === %d`, len(course(t).Lessons)))
		b.shot("lesson-10-" + lang + "-list")
		b.run(chromedp.Navigate(b.url + "/glossary?lang=" + lang))
		b.waitJS(10*time.Second, "the glossary", `document.querySelectorAll('.glossary table tr').length > 20`)
		b.shot("lesson-11-" + lang + "-glossary")
		b.run(chromedp.Navigate(b.url + "/lessons/99-nope?lang=" + lang))
		b.waitJS(10*time.Second, "the missing lesson's page", fmt.Sprintf(`document.querySelectorAll('.lesson-list a').length === %d`, len(course(t).Lessons)))
		b.shot("lesson-12-" + lang + "-missing")
		b.run(chromedp.Navigate(b.url + "/lessons/08-key-groups?lang=" + lang))
		b.waitLesson(20*time.Second, "the lesson's status", `m.step >= 1`)
		b.waitJS(20*time.Second, "every subtask running", jsAllRunning)
		// The hint opens; the text column and the live view sit side by side.
		b.clickLive(`.step.current .hint summary`)
		left := eval[float64](b, `document.querySelector('.lesson-live').getBoundingClientRect().left`)
		right := eval[float64](b, `document.querySelector('.lesson-text').getBoundingClientRect().right`)
		assert.Greater(t, left, right, "the live view is beside the text")
		b.view("lesson-13-" + lang + "-key-groups")
		if lang == "zh" {
			text := eval[string](b, `document.querySelector('.lesson-text').innerText`)
			assert.True(t, strings.Contains(text, "键组") && strings.Contains(text, "最大并行度"), "Flink's Chinese terms")
		}
	}
}
