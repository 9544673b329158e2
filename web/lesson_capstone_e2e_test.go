package web

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/lessons"
)

// capstoneLesson is the course's capstone.
func capstoneLesson(t *testing.T) *lessons.Lesson {
	t.Helper()
	for _, l := range course(t).Lessons {
		if l.Capstone != nil {
			return l
		}
	}
	t.Fatal("the course has no capstone")
	return nil
}

// TestJourneyCapstone: a learner completes the capstone through the visible
// controls only — the parallelism fields of source and window, a
// TaskManager's Crash button — on a page that offers no "do it for me".
// First, on a paused run, the first hint of step 1 is locked and says when
// it unlocks, and unlocks after the lesson's interval while the second
// stays locked. The server's course has the capstone's hints 10 s apart
// (the least a lesson may give) instead of its 60 s: the same page and
// timer, 50 s less waiting.
func TestJourneyCapstone(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	cat, l := quickHints(t, 10)
	b := newBrowserFor(t, 20*time.Minute, func(c *Config) { c.Lessons = cat })
	j := newJourney(b, "capstone")
	j.run(chromedp.EmulateViewport(1280, 800))

	// The hint's time counts from when step 1 became current, which is
	// after the page began to load: measured from before the visit, an
	// unlock in time is never early (from after the status, on a busy
	// machine it was: 55.9 s of 60).
	began := time.Now()
	j.visit("/lessons/" + l.Slug + "?lang=en")
	j.waitJS(lessonTickWait, "the lesson's status", `(s => s && s.lesson && s.lesson.step === 1)(`+jsLessonState+`)`)
	j.clickLive(`#btn-play`) // pause: the hints unlock with the page's time, not the job's
	assert.Zero(t, eval[int](j.browserEnv, `document.querySelectorAll('[data-do]').length`), "no do it for me in a capstone")
	hints := `.steps .step[data-step="1"] details[data-unlock]`
	require.GreaterOrEqual(t, eval[int](j.browserEnv, `document.querySelectorAll('`+hints+`').length`), 2)
	assert.True(t, eval[bool](j.browserEnv, `[...document.querySelectorAll('`+hints+`')].every(d => d.hidden)`), "every hint locked at first")
	assert.Contains(t, eval[string](j.browserEnv, `document.querySelector('.steps .step[data-step="1"] [data-hint-locked]').textContent`), "Hint 1 unlocks in")
	every := time.Duration(l.Capstone.HintEvery) * time.Second
	j.waitJS(every+30*time.Second, "hint 1 unlocked", `!document.querySelector('`+hints+`').hidden`)
	assert.GreaterOrEqual(t, time.Since(began), every-2*time.Second, "not before its time")
	assert.True(t, eval[bool](j.browserEnv, `document.querySelectorAll('`+hints+`')[1].hidden`), "hint 2 still locked")
	assert.Contains(t, eval[string](j.browserEnv, `document.querySelector('.steps .step[data-step="1"] [data-hint-locked]').textContent`), "Hint 2 unlocks in")
	j.window("capstone-hint-1")

	// The whole capstone, from a fresh page, through the job's controls.
	took := j.learn(learnerLesson{l.Slug, "en", []learnerAct{
		then(rescaleUntil("source", 2), rescaleUntil("window", 3)),
		crashTaskManager("tm-1"),
		nil,
	}})
	t.Logf("capstone: %s", took)
	// The goal the engine judged: exact counts, nothing twice, nothing lost.
	sink := eval[map[string]any](j.browserEnv, fmt.Sprintf(`(s => ({ exactly: s.sinks[0].comparison?.exactlyOnce ?? null, committed: s.sinks[0].committed }))(%s)`, jsSnap))
	t.Logf("sink at the end: %v", sink)
}

// quickHints returns a copy of the course whose capstone unlocks its hints
// every seconds apart, and that capstone; the shared course is untouched.
func quickHints(t *testing.T, every int) (*lessons.Catalog, *lessons.Lesson) {
	t.Helper()
	orig := capstoneLesson(t)
	require.Greater(t, orig.Capstone.HintEvery, every, "the capstone's own interval is longer")
	cat := *course(t)
	cat.Lessons = append([]*lessons.Lesson(nil), cat.Lessons...)
	for i, l := range cat.Lessons {
		if l == orig {
			quick, cp := *l, *l.Capstone
			cp.HintEvery = every
			quick.Capstone = &cp
			cat.Lessons[i] = &quick
			return &cat, &quick
		}
	}
	t.Fatal("the capstone is not in the course")
	return nil, nil
}

// rescaleUntil types p into the operator's parallelism field until the
// engine takes the rescale: a person whose typing landed while the graph
// redrew (the field replaced under the cursor) types again.
func rescaleUntil(op string, p int) learnerAct {
	return func(j *journey) {
		taken := fmt.Sprintf(`(s => !!s.job.rescale || s.job.operators.some(o => o.id === %q && o.parallelism === %d))(%s)`, op, p, jsSnap)
		for try := 0; ; try++ {
			rescaleTo(op, p)(j)
			deadline := time.Now().Add(15 * time.Second)
			for time.Now().Before(deadline) && !eval[bool](j.browserEnv, taken) {
				time.Sleep(200 * time.Millisecond)
			}
			if eval[bool](j.browserEnv, taken) {
				return
			}
			require.Less(j.t, try, 4, "the rescale of %s to %d was never taken", op, p)
		}
	}
}
