package web

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
)

// TestBrowserLessonPrediction: lesson 08's step 2 asks, before the rescale,
// which subtask will own the article's key a after 2 → 3. The learner picks
// an answer and commits it; the result stays hidden while they act; when
// the step ticks the engine's answer shows beside theirs, with the why.
func TestBrowserLessonPrediction(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	l, ok := course(t).Lesson("08-key-groups")
	require.True(t, ok)
	st := l.Steps[1]
	require.NotNil(t, st.Predict, "step 2 predicts")
	// Flink's rule, computed here from the rescale package: key group of a
	// at max parallelism 10, and its owner at parallelism 3.
	want := "count#" + string(rune('0'+rescale.OperatorIndexForKeyGroup(10, 3, rescale.KeyGroupForString("a", 10))))
	wrong := "count#2" // the article's 97 % 10 = 7 rule
	require.NotEqual(t, want, wrong)

	b.run(chromedp.Navigate(b.url + "/lessons/" + l.Slug + "?lang=en#step-2"))
	b.waitJS(30*time.Second, "the lesson's live view", `document.getElementById('workspace')?.dataset.ready === 'true'`)
	b.waitLesson(lessonTickWait, "step 2 is current", `m.step === 2`)
	card := `.steps .step[data-step="2"] form.predict`
	assert.True(t, eval[bool](b, `!!document.querySelector('`+card+`')`), "the prediction card is in step 2")
	assert.Equal(t, 3, eval[int](b, `document.querySelectorAll('`+card+` input[type=radio]').length`), "one choice per subtask at p = 3")
	assert.True(t, eval[bool](b, `document.querySelector('`+card+` .predict-result').hidden`), "the answer is hidden before the learner acts")

	b.click(card + ` input[value="` + wrong + `"]`)
	b.click(card + ` .predict-commit`)
	b.waitJS(5*time.Second, "the answer committed", `!document.querySelector('`+card+` .predict-committed').hidden`)
	assert.True(t, eval[bool](b, `document.querySelector('`+card+` .predict-commit').disabled`))
	assert.True(t, eval[bool](b, `document.querySelector('`+card+` .predict-result').hidden`), "still hidden until the step is done")

	b.waitJS(30*time.Second, "do it for me can be pressed", `!document.querySelector('.steps .step[data-step="2"] [data-do]').disabled`)
	b.click(`.steps .step[data-step="2"] [data-do]`)
	b.waitTick(2, st.ID)
	b.waitJS(5*time.Second, "the engine's answer shown", `!document.querySelector('`+card+` .predict-result').hidden`)
	assert.Equal(t, wrong, eval[string](b, `document.querySelector('`+card+` .predict-mine').textContent`))
	assert.Equal(t, want, eval[string](b, `document.querySelector('`+card+` .predict-engine').textContent`))
	assert.False(t, eval[bool](b, `document.querySelector('`+card+` .predict-wrong').hidden`), "a wrong answer is explained")
	assert.True(t, eval[bool](b, `document.querySelector('`+card+` .predict-right').hidden`))
	assert.Contains(t, eval[string](b, `document.querySelector('`+card+` .predict-why').innerText`), "murmurHash")
	assert.True(t, eval[bool](b, `(() => { const r = document.querySelector('`+card+` .predict-result').getBoundingClientRect(); return r.width > 0 && r.height > 0; })()`), "the result is drawn")
	b.run(chromedp.Evaluate[chromedp.Void](`document.querySelector('` + card + `').scrollIntoView({block: 'start', behavior: 'instant'})`))
	b.view("lesson-08-prediction")

	// Step 4 asks for a number: how many of 128 key groups move at 2 -> 3.
	// Typed right (counted here from Flink's ranges), it is confirmed.
	moved := 0
	for g := 0; g < 128; g++ {
		if rescale.OperatorIndexForKeyGroup(128, 2, g) != rescale.OperatorIndexForKeyGroup(128, 3, g) {
			moved++
		}
	}
	b.waitLesson(lessonTickWait, "step 3 is current", `m.step === 3`)
	b.waitJS(30*time.Second, "step 3's do it for me", `!document.querySelector('.steps .step[data-step="3"] [data-do]').disabled`)
	b.click(`.steps .step[data-step="3"] [data-do]`)
	b.waitTick(3, l.Steps[2].ID)
	b.waitLesson(lessonTickWait, "step 4 is current", `m.step === 4`)
	card4 := `.steps .step[data-step="4"] form.predict`
	b.run(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector('%s input[type=number]').value = '%d'`, card4, moved)))
	b.click(card4 + ` .predict-commit`)
	b.waitJS(5*time.Second, "the number committed", `!document.querySelector('`+card4+` .predict-committed').hidden`)
	b.waitJS(30*time.Second, "step 4's do it for me", `!document.querySelector('.steps .step[data-step="4"] [data-do]').disabled`)
	b.click(`.steps .step[data-step="4"] [data-do]`)
	b.waitTick(4, l.Steps[3].ID)
	b.waitJS(5*time.Second, "the engine's number shown", `!document.querySelector('`+card4+` .predict-result').hidden`)
	assert.Equal(t, fmt.Sprint(moved), eval[string](b, `document.querySelector('`+card4+` .predict-engine').textContent`))
	assert.False(t, eval[bool](b, `document.querySelector('`+card4+` .predict-right').hidden`), "a right answer is confirmed")
	assert.True(t, eval[bool](b, `document.querySelector('`+card4+` .predict-wrong').hidden`))
}

// TestBrowserLessonPredictionYesNo: lesson 04's crash step asks, in
// Chinese, whether the crash will put a result twice into the committed
// output, on a phone (390 px) and a laptop (1280 px). The card fits the
// width; the learner answers 会 (yes, wrong: the sink is transactional),
// does the step, and sees 不会 with the why — the step ticks all the same.
func TestBrowserLessonPredictionYesNo(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	l, ok := course(t).Lesson("04-checkpoints-and-barriers")
	require.True(t, ok)
	st := l.Steps[2]
	require.NotNil(t, st.Predict, "step 3 predicts")
	require.Equal(t, "duplicates", st.Predict.Kind)
	for _, width := range []int64{390, 1280} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			b.run(chromedp.EmulateViewport(width, 800))
			b.run(chromedp.Navigate("about:blank")) // the same address again would not load a new page
			b.run(chromedp.Navigate(b.url + "/lessons/" + l.Slug + "?lang=zh#step-3"))
			b.waitJS(30*time.Second, "the lesson's live view", `document.getElementById('workspace')?.dataset.ready === 'true'`)
			b.waitLesson(lessonTickWait, "step 3 is current", `m.step === 3`)
			card := `.steps .step[data-step="3"] form.predict`
			b.run(chromedp.Evaluate[chromedp.Void](`document.querySelector('` + card + `').scrollIntoView({block: 'start', behavior: 'instant'})`))
			assert.Equal(t, "会 不会", eval[string](b, `[...document.querySelectorAll('`+card+` .predict-choices label')].map(l => l.textContent.trim()).join(' ')`))
			// The card and its choices stay inside the page's width.
			assert.True(t, eval[bool](b, fmt.Sprintf(`(() => { const r = document.querySelector('%s').getBoundingClientRect();
				return r.width > 0 && r.left >= 0 && r.right <= %d && document.documentElement.scrollWidth <= %d; })()`, card, width, width)),
				"the card fits %d px", width)
			b.click(card + ` input[value="yes"]`)
			b.click(card + ` .predict-commit`)
			b.waitJS(5*time.Second, "the answer committed", `!document.querySelector('`+card+` .predict-committed').hidden`)
			b.waitJS(30*time.Second, "do it for me can be pressed", `!document.querySelector('.steps .step[data-step="3"] [data-do]').disabled`)
			b.click(`.steps .step[data-step="3"] [data-do]`)
			b.waitTick(3, st.ID)
			b.waitJS(5*time.Second, "the engine's answer shown", `!document.querySelector('`+card+` .predict-result').hidden`)
			assert.Equal(t, "会", eval[string](b, `document.querySelector('`+card+` .predict-mine').textContent`))
			assert.Equal(t, "不会", eval[string](b, `document.querySelector('`+card+` .predict-engine').textContent`))
			assert.False(t, eval[bool](b, `document.querySelector('`+card+` .predict-wrong').hidden`), "a wrong answer is explained")
			assert.Contains(t, eval[string](b, `document.querySelector('`+card+` .predict-why').innerText`), "事务")
			assert.True(t, eval[bool](b, fmt.Sprintf(`(() => { const r = document.querySelector('%s .predict-result').getBoundingClientRect();
				return r.width > 0 && r.right <= %d; })()`, card, width)), "the result fits %d px", width)
			b.run(chromedp.Evaluate[chromedp.Void](`document.querySelector('` + card + `').scrollIntoView({block: 'start', behavior: 'instant'})`))
			b.view(fmt.Sprintf("lesson-04-prediction-zh-%d", width))
		})
	}
}
