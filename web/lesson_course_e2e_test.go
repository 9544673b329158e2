package web

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJourneyCourseTimes measures the course map's times: every lesson in
// English at 1× (the speed a learner who does not touch the speed buttons
// sees), pressing each acting step's "do it for me" as soon as the step is
// current (the capstone, which has none, through its job controls), and
// reports per lesson the seconds from the page opening to the last tick:
// how long a learner who acts at once waits for the job. With
// COURSE_TIMES=FILE it writes them as the lines the lessons' scenario.yaml
// record (measured: {seconds: N}). It is a measurement, run on request
// (COURSE_TIMES set): every lesson's steps are walked by
// TestLessonDoItForMeWalksEveryLesson and the journeys through visible
// controls, and this walk alone took over four minutes under -race in CI.
// COURSE_ONLY=18,19 measures only the lessons whose slugs start so.
func TestJourneyCourseTimes(t *testing.T) {
	if os.Getenv("COURSE_TIMES") == "" {
		t.Skip("a measurement: set COURSE_TIMES=FILE (COURSE_TIMES=- only logs them) to measure the course map's times")
	}
	// Every lesson page starts a session of its own, and ended ones linger
	// until their idle timeout: room for all of them.
	b := newBrowserFor(t, 60*time.Minute, func(c *Config) { c.MaxSessions = 100 })
	j := newJourney(b, "course")
	j.run(chromedp.EmulateViewport(1280, 800))
	var lines []string
	only := strings.Fields(strings.ReplaceAll(os.Getenv("COURSE_ONLY"), ",", " "))
	for _, l := range course(t).Lessons {
		if len(only) > 0 && !slices.ContainsFunc(only, func(p string) bool { return strings.HasPrefix(l.Slug, p) }) {
			continue
		}
		j.visit("/lessons/" + l.Slug + "?lang=en")
		began := time.Now()
		j.waitJS(lessonTickWait, "the lesson's status", `(s => s && s.lesson && s.lesson.step === 1)(`+jsLessonState+`)`)
		require.Equal(t, 1.0, eval[float64](j.browserEnv, jsSnap+`.speed`), "the lesson runs at 1×")
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
				// By script, as the lesson tests do: the text column scrolls
				// smoothly to the current step under the pointer.
				j.run(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(b => b && !b.disabled && b.click())(document.querySelector('%s'))`, do)))
			}
			j.waitStepTick(l.Slug, n)
		}
		j.waitJS(lessonTickWait, "the finished lesson", `(s => s && s.lesson && s.lesson.finished)(`+jsLessonState+`)`)
		took := time.Since(began).Round(time.Second)
		lines = append(lines, fmt.Sprintf("%s: {seconds: %d}", l.Slug, int(took.Seconds())))
		t.Logf("course: %s took %s at 1×", l.Slug, took)
	}
	if f := os.Getenv("COURSE_TIMES"); f != "-" {
		require.NoError(t, os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	}
}

// TestBrowserCourseMap: with lesson 01 finished in this browser
// (localStorage, as lesson.js writes it), the course map marks 01 finished,
// the lessons that build only on 01 ready, and 03 waiting for 02; the page
// fits a phone (390 px) and a laptop (1280 px), in English and Chinese.
func TestBrowserCourseMap(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
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
