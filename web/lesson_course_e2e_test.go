package web

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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
