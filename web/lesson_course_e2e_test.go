package web

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsJobClock follows the job's clock across the lesson's jobs: a reset
// starts a new job at time 0, so the time each job reached is added up.
const jsJobClock = `(() => { const c = { total: 0, last: 0 }; window.__jobClock = c;
  setInterval(() => { const at = window.statelab?.model?.snap?.at || 0; if (at < c.last) c.total += c.last; c.last = at; }, 20); })()`

// TestJourneyCourseTimes measures the course map's times: every lesson in
// English at 64×, pressing each step's "do it for me" (the capstone, which
// has none, through its job controls), and reports per lesson the job time
// the lesson needed — what a learner at 1× waits for the job — and the
// wall time the journey took. With COURSE_TIMES=FILE it writes them as
// the lines lessons/content/course.yaml records.
func TestJourneyCourseTimes(t *testing.T) {
	b := newBrowserFor(t, 40*time.Minute, nil)
	j := newJourney(b, "course")
	j.run(chromedp.EmulateViewport(1280, 800))
	var lines []string
	for _, l := range course(t).Lessons {
		began := time.Now()
		j.visit("/lessons/" + l.Slug + "?lang=en")
		j.waitJS(20*time.Second, "the lesson's status", `(s => s && s.lesson && s.lesson.step === 1)(`+jsLessonState+`)`)
		j.run(chromedp.Evaluate[chromedp.Void](jsJobClock))
		for range 6 {
			j.clickLive(`#btn-faster`)
			time.Sleep(150 * time.Millisecond)
		}
		j.waitJS(20*time.Second, "speed 64×", jsSnap+`.speed === 64`)
		for i, st := range l.Steps {
			n := i + 1
			j.waitJS(lessonTickWait, fmt.Sprintf("%s step %d current", l.Slug, n),
				fmt.Sprintf(`(s => s && s.lesson && (s.lesson.step === %d || s.lesson.completed.includes(%d)))(%s)`, n, n, jsLessonState))
			switch {
			case l.Capstone != nil && n == 1:
				then(rescaleUntil("source", 2), rescaleUntil("window", 3))(j)
			case l.Capstone != nil && n == 2:
				crashTaskManager("tm-1")(j)
			case len(st.Actions) > 0:
				do := fmt.Sprintf(`.steps .step[data-step="%d"] [data-do]`, n)
				j.waitJS(lessonTickWait, fmt.Sprintf("%s step %d: do it for me", l.Slug, n),
					fmt.Sprintf(`(s => s.lesson.completed.includes(%d) || !document.querySelector('%s').disabled)(%s)`, n, do, jsLessonState))
				if !eval[bool](j.browserEnv, fmt.Sprintf(`%s.lesson.completed.includes(%d)`, jsLessonState, n)) {
					j.clickSteady(do)
				}
			}
			j.waitStepTick(l.Slug, n)
		}
		j.waitJS(20*time.Second, "the finished lesson", `(s => s && s.lesson && s.lesson.finished)(`+jsLessonState+`)`)
		ns := eval[float64](j.browserEnv, `(c => c.total + c.last)(window.__jobClock)`)
		job := time.Duration(ns).Round(time.Second)
		wall := time.Since(began).Round(time.Second)
		require.Positive(t, job, "%s: the job's clock moved", l.Slug)
		lines = append(lines, fmt.Sprintf("%s: {jobSeconds: %d, journeySeconds: %d}", l.Slug, int(job.Seconds()), int(wall.Seconds())))
		t.Logf("course: %s job time %s, journey %s", l.Slug, job, wall)
	}
	if f := os.Getenv("COURSE_TIMES"); f != "" {
		require.NoError(t, os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	}
}

// TestBrowserCourseMap: with lesson 01 finished in this browser
// (localStorage, as lesson.js writes it), the course map marks 01 finished,
// the lessons that build only on 01 ready, and 03 waiting for 02; the page
// fits a phone (390 px) and a laptop (1280 px), in English and Chinese.
func TestBrowserCourseMap(t *testing.T) {
	b := newBrowser(t)
	c := course(t)
	first := c.Lessons[0]
	b.run(chromedp.Navigate(b.url + "/course?lang=en"))
	steps := make([]int, len(first.Steps))
	for i := range steps {
		steps[i] = i + 1
	}
	b.run(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('statelab.lesson.%s', JSON.stringify({done: %s, total: %d}))`,
		first.Slug, strings.ReplaceAll(fmt.Sprint(steps), " ", ","), len(steps))))
	for _, lang := range []string{"en", "zh"} {
		for _, width := range []int64{390, 1280} {
			b.run(chromedp.EmulateViewport(width, 900))
			b.run(chromedp.Navigate(fmt.Sprintf("%s/course?lang=%s&w=%d", b.url, lang, width)))
			b.waitJS(10*time.Second, "the progress drawn", `document.querySelector('a[data-lesson="`+first.Slug+`"]').classList.contains('finished')`)
			for _, l := range c.Lessons[1:] {
				onlyFirst := len(l.After) > 0 && strings.Join(l.After, " ") == first.Slug
				ready := eval[bool](b, `document.querySelector('a[data-lesson="`+l.Slug+`"]').classList.contains('ready')`)
				assert.Equal(t, onlyFirst, ready, "%s (%s): ready exactly when it builds on %s alone", l.Slug, lang, first.Slug)
			}
			if l, ok := c.Lesson("03-state-backends"); ok && strings.Join(l.After, " ") == "02-keyed-and-operator-state" {
				status := eval[string](b, `document.querySelector('a[data-lesson="03-state-backends"] [data-course-status]').textContent`)
				assert.Contains(t, status, "02", "03 waits for 02")
			}
			assert.LessOrEqual(t, eval[int](b, `document.documentElement.scrollWidth`), int(width), "the map fits %d px", width)
			b.view(fmt.Sprintf("course-map-%s-%d", lang, width))
		}
	}
}
