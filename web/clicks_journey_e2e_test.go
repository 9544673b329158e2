package web

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// choose picks an option of a <select> (or ticks a checkbox) as a person's
// choice does: the value changes and the control fires input and change.
func (j *journey) choose(sel, value string) {
	j.t.Helper()
	j.waitJS(20*time.Second, "the control "+sel, fmt.Sprintf(`(el => !!el && !el.disabled && el.getBoundingClientRect().width > 0)(document.querySelector(%q))`, sel))
	j.run(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(el => { if (el.type === 'checkbox') el.checked = %q === 'true'; else el.value = %q;
	  el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true})); })(document.querySelector(%q))`, value, value, sel)))
}

// upgrade is what lesson 16 asks of the Upgrade… dialog: open it from the
// toolbar, start from the newest savepoint (savepoint n, the dialog's first
// choice), choose the change and the operator, type a uid, tick or untick
// allowNonRestoredState and press Upgrade. refused: the dialog shows Flink's
// refusal and stays open (it is closed with its Close button); otherwise it
// closes as the new job starts.
func upgrade(n int, change, op, uid string, allow, refused bool) learnerAct {
	return func(j *journey) {
		j.ready("the upgrade")
		j.waitJS(lessonTickWait, fmt.Sprintf("savepoint %d retained", n), fmt.Sprintf(`(%s.checkpoints.retained || []).some(c => c.savepoint && c.id === %d)`, jsSnap, n))
		j.clickLive(`#btn-upgrade`)
		j.waitJS(10*time.Second, "the upgrade dialog", `document.getElementById('upgrade').open`)
		j.waitJS(10*time.Second, fmt.Sprintf("savepoint %d chosen", n), fmt.Sprintf(`document.getElementById('upgrade-checkpoint').value === '%d'`, n))
		j.choose(`#upgrade-change`, change)
		j.choose(`#upgrade-operator`, op)
		if uid != "" {
			j.waitJS(5*time.Second, "the uid field", `!document.getElementById('upgrade-uid').closest('label').hidden`)
			j.run(chromedp.SendKeys(chromedp.CSS(`#upgrade-uid`), uid))
		}
		j.choose(`#upgrade-allow`, fmt.Sprint(allow))
		j.window(fmt.Sprintf("16-upgrade-%s-%s-allow-%v", change, op, allow))
		j.clickLive(`#upgrade-submit`)
		if refused {
			j.waitJS(lessonTickWait, "Flink's refusal in the dialog", `document.getElementById('upgrade-result').className === 'error'`)
			j.window("16-upgrade-refused")
			j.clickLive(`#upgrade-close`)
			j.waitJS(10*time.Second, "the dialog closed", `!document.getElementById('upgrade').open`)
			return
		}
		j.waitJS(lessonTickWait, "the dialog closed as the new job starts", `!document.getElementById('upgrade').open`)
	}
}

// typeUntilActed chooses the source beside the toolbar's record box, types
// the line and presses Enter, until the lesson counts it as the step's
// action: a line typed while the page reconnected (a busy machine drops a
// connection that falls behind) is lost, and a person types it again.
func typeUntilActed(source, text string) learnerAct {
	return func(j *journey) {
		n := eval[int](j.browserEnv, jsLessonState+`.lesson.step`)
		acted := fmt.Sprintf(`(m => m.acted || m.completed.includes(%d))(%s.lesson)`, n, jsLessonState)
		for try := 0; ; try++ {
			j.waitJS(20*time.Second, "the record box's choice of source", `(s => s && !s.hidden && !s.disabled && s.getBoundingClientRect().width > 0)(document.getElementById('inject-source'))`)
			j.choose(`#inject-source`, source)
			if try > 0 {
				// The page clears the box only once a send succeeded: a
				// send still waiting for its answer leaves the first line
				// there, and typing on would append to it ("block
				// flinkblock flink"). A person clears the box first.
				j.t.Logf("typing %q into %s again (try %d): the first line never counted", text, source, try+1)
				j.run(chromedp.SetValue(`#inject-text`, ""))
			}
			typeLine(text)(j)
			ok := j.holdsWithin(45*time.Second, acted)
			if ok {
				j.window(fmt.Sprintf("typed-into-%s", source))
				return
			}
			require.Less(j.t, try, 3, "the line %q typed into %s never counted", text, source)
		}
	}
}

// byHandCourse: lessons 12 (all three steps), 16 and 17 through the
// controls a person uses — the record box's choice of source, the
// parallelism field on an operator's head, a subtask box, a TaskManager's
// Crash button, the toolbar's savepoint button and the Upgrade… dialog —
// never "do it for me".
var byHandCourse = []learnerLesson{
	{"12-broadcast-and-union-state", "en", []learnerAct{
		typeUntilActed("rules", "block flink"),
		rescaleUntil("filter", 3),
		rescaleUntil("tally", 3),
	}},
	{"16-savepoint-upgrades", "en", []learnerAct{
		toolbar("btn-savepoint"),
		upgrade(1, "remove-operator", "tally", "", false, true),
		upgrade(1, "remove-operator", "tally", "", true, false),
		toolbar("btn-savepoint"),
		upgrade(2, "set-uid", "count", "count-v2", true, false),
	}},
	{"17-timers-after-restore", "en", []learnerAct{
		nil,
		crashSubtask("alerts#0"),
		rescaleUntil("alerts", 3),
	}},
}

// TestJourneyLessonsByHand: a learner completes lessons 12, 16 and 17
// through the visible controls only (issue 13: every step doable by a
// person, each step ticking because of what the person did).
func TestJourneyLessonsByHand(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowserFor(t, 30*time.Minute, func(c *Config) { c.MaxSessions = 100 })
	j := newJourney(b, "by-hand")
	j.run(chromedp.EmulateViewport(1280, 800))
	var times []string
	only := lessonFilter()
	speed := 16
	if v, err := strconv.Atoi(os.Getenv("JOURNEY_SPEED")); err == nil {
		speed = v // 64 tries the fastest on a busy machine
	}
	for _, l := range byHandCourse {
		if only != "" && !strings.Contains(l.slug, only) {
			continue
		}
		// 16×: at 64× a busy machine's browser falls behind the event
		// stream and reconnects, losing what was typed meanwhile.
		times = append(times, fmt.Sprintf("%s %s %s", l.slug[:2], l.lang, j.learnAt(l, speed)))
	}
	require.NotEmpty(t, times)
	t.Logf("lessons by hand: %s", strings.Join(times, ", "))
}

// lessonFilter is $JOURNEY_LESSON, a part of a lesson's slug: the by-hand
// journey then walks only that lesson (for working on one).
func lessonFilter() string { return os.Getenv("JOURNEY_LESSON") }
