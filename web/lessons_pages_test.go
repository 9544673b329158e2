package web

import (
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/docs"
	"github.com/statelab/statelab/lessons"
	"github.com/statelab/statelab/web/pages"
)

// get serves one request and returns the status and body.
func get(t *testing.T, ts *testServer, path, lang string) (int, string) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.Host = "127.0.0.1" // the server answers only its own host names (guard.go)
	if lang != "" {
		req.AddCookie(&http.Cookie{Name: langCookie, Value: lang})
	}
	w := httptest.NewRecorder()
	ts.srv.Handler().ServeHTTP(w, req)
	return w.Code, w.Body.String()
}

var tagRe = regexp.MustCompile(`<[^>]*>`)

// text is the page's visible text, roughly: tags removed, entities decoded.
func text(body string) string { return html.UnescapeString(tagRe.ReplaceAllString(body, " ")) }

func TestLessonListBothLanguages(t *testing.T) {
	ts := newTestServer(t, nil)
	c := course(t)
	tests := []struct {
		lang, title, meta, glossary string
	}{
		{"en", "Lessons", "6 min · 5 steps", "Glossary"},
		{"zh", "课程", "6 分钟 · 5 步", "术语表"},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			code, body := get(t, ts, "/lessons", tt.lang)
			require.Equal(t, http.StatusOK, code)
			assert.Contains(t, body, `<html lang="`+tt.lang+`"`)
			assert.Contains(t, body, `src="/static/js/lessons.js"`, "the progress script")
			assert.Contains(t, body, `href="/glossary"`)
			assert.Contains(t, text(body), tt.glossary)
			// One entry per lesson, in order, with its step count for the
			// progress bar and its title in the page's language.
			entries := regexp.MustCompile(`data-lesson="([^"]+)" data-steps="(\d+)"`).FindAllStringSubmatch(body, -1)
			require.Len(t, entries, len(c.Lessons))
			for i, l := range c.Lessons {
				assert.Equal(t, l.Slug, entries[i][1])
				assert.Equal(t, strconv.Itoa(len(l.Steps)), entries[i][2], l.Slug)
				assert.Contains(t, text(body), l.Text[lessons.Lang(tt.lang)].Title)
				assert.Contains(t, text(body), l.Text[lessons.Lang(tt.lang)].Summary)
			}
			// Lesson 1 takes 6 minutes and has 5 steps (its scenario).
			assert.Contains(t, text(body), tt.meta)
			assert.Contains(t, body, `<progress max="5" value="0"`)
		})
	}
}

func TestLessonPageBothLanguages(t *testing.T) {
	ts := newTestServer(t, nil)
	tests := []struct {
		lang, heading, step1, check1, doIt, hint, prev, next string
	}{
		{"en", "Lesson 4 · 9 min · 6 steps", "Trigger a checkpoint and watch alignment", "A channel into count was blocked for barrier alignment.",
			"Do it for me", "Hint", "State backends", "Failure and recovery"},
		{"zh", "第 4 课 · 9 分钟 · 6 步", "触发检查点，观察对齐", "某个流入 count 的通道因屏障对齐而被阻塞。",
			"帮我做", "提示", "状态后端", "故障与恢复"},
	}
	l, ok := course(t).Lesson("04-checkpoints-and-barriers")
	require.True(t, ok)
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			code, body := get(t, ts, "/lessons/04-checkpoints-and-barriers", tt.lang)
			require.Equal(t, http.StatusOK, code)
			page := text(body)
			assert.Contains(t, page, tt.heading)
			assert.Contains(t, page, l.Text[lessons.Lang(tt.lang)].Title)
			for i := range l.Steps {
				assert.Contains(t, body, `id="step-`+strconv.Itoa(i+1)+`"`, "deep link anchor of step %d", i+1)
			}
			assert.Contains(t, page, tt.step1)
			assert.Contains(t, page, tt.check1, "the check as a sentence")
			assert.Contains(t, page, tt.doIt)
			assert.Contains(t, page, tt.hint)
			// "do it for me" shows the commands it sends.
			assert.Contains(t, page, `crash-subtask {"index":0,"operator":"count"}`)
			assert.Contains(t, page, `reset {"job":"at-least-once"}`)
			// The step that switches jobs has the learner's own button for it.
			assert.Contains(t, body, `data-job="at-least-once" data-step="5"`)
			assert.Contains(t, page, map[string]string{"en": "Start the job wordcount-at-least-once", "zh": "启动作业 wordcount-at-least-once"}[tt.lang])
			// Previous and next lesson, titled in the page's language.
			assert.Regexp(t, `rel="prev" href="/lessons/03-state-backends"`, body)
			assert.Regexp(t, `rel="next" href="/lessons/05-failure-and-recovery"`, body)
			assert.Contains(t, page, tt.prev)
			assert.Contains(t, page, tt.next)
			// The live view opens the lesson's own session.
			assert.Contains(t, body, `data-ws="lesson=04-checkpoints-and-barriers"`)
			assert.Contains(t, body, `src="/static/js/lesson.js"`)
			assert.Contains(t, body, `id="workspace"`)
			assert.NotContains(t, body, "<script>", "no inline script (the CSP refuses it)")
		})
	}
}

func TestLessonPageEnds(t *testing.T) {
	ts := newTestServer(t, nil)
	_, first := get(t, ts, "/lessons/01-why-state", "en")
	assert.NotContains(t, first, `rel="prev"`, "the first lesson has no previous one")
	assert.Contains(t, first, `rel="next" href="/lessons/02-keyed-and-operator-state"`)
	c := course(t)
	_, last := get(t, ts, "/lessons/"+c.Lessons[len(c.Lessons)-1].Slug, "en")
	assert.NotContains(t, last, `rel="next"`, "the last lesson has no next one")
	assert.Contains(t, text(last), "All lessons")
}

func TestUnknownLessonIsA404ThatListsTheLessons(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, tt := range []struct{ lang, title, says string }{
		{"en", "No such lesson", "There is no lesson 99-nope."},
		{"zh", "没有这一课", "没有 99-nope 这一课。"},
	} {
		t.Run(tt.lang, func(t *testing.T) {
			code, body := get(t, ts, "/lessons/99-nope", tt.lang)
			assert.Equal(t, http.StatusNotFound, code)
			assert.Contains(t, text(body), tt.title)
			assert.Contains(t, text(body), tt.says)
			assert.Equal(t, len(course(t).Lessons), strings.Count(body, `<a href="/lessons/`), "every lesson is offered")
			assert.Contains(t, body, `href="/lessons/01-why-state"`)
		})
	}
	// The slug is text, never markup.
	code, body := get(t, ts, "/lessons/%3Cb%3Ex", "en")
	assert.Equal(t, http.StatusNotFound, code)
	assert.NotContains(t, body, "<b>x")
}

func TestGlossaryBothLanguages(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, tt := range []struct {
		lang  string
		terms []string
	}{
		{"en", []string{"key group", "键组", "KeyGroupRangeAssignment", "EmbeddedRocksDBStateBackend"}},
		{"zh", []string{"键组", "状态后端", "保存点", "KeyGroupRangeAssignment"}},
	} {
		t.Run(tt.lang, func(t *testing.T) {
			code, body := get(t, ts, "/glossary", tt.lang)
			require.Equal(t, http.StatusOK, code)
			assert.Contains(t, body, "<table>")
			for _, term := range tt.terms {
				assert.Contains(t, text(body), term)
			}
		})
	}
	_, en := get(t, ts, "/glossary", "en")
	_, zh := get(t, ts, "/glossary", "zh")
	assert.NotEqual(t, en, zh, "each language has its own glossary page")
}

// TestLessonPageJoinsItsSessionOnALanguageSwitch: the language links carry
// the session, so switching language keeps the engine and the steps done.
func TestLessonPageJoinsItsSessionOnALanguageSwitch(t *testing.T) {
	ts := newTestServer(t, nil)
	lc := dialLesson(t, ts, "lesson=01-why-state")
	_ = lc
	var id string
	for _, s := range ts.srv.sessions.all() {
		id = s.ID
	}
	require.NotEmpty(t, id)
	_, body := get(t, ts, "/lessons/01-why-state?lang=zh&session="+id, "")
	assert.Contains(t, body, `data-ws="session=`+id+`"`)
	// Another lesson's session, or none, starts a new one.
	_, body = get(t, ts, "/lessons/02-keyed-and-operator-state?session="+id, "")
	assert.Contains(t, body, `data-ws="lesson=02-keyed-and-operator-state"`)
	_, body = get(t, ts, "/lessons/01-why-state?session=gone", "")
	assert.Contains(t, body, `data-ws="lesson=01-why-state"`)
}

// The capstone's page: no "do it for me", each hint locked until its time
// (data-unlock: k × hintEvery seconds), and the goal-only line in place of
// the commands a step sends.
func TestCapstonePage(t *testing.T) {
	ts := newTestServer(t, nil)
	l := capstoneLesson(t)
	for _, lang := range []string{"en", "zh"} {
		_, body := get(t, ts, "/lessons/"+l.Slug, lang)
		assert.Contains(t, body, `class="lesson capstone"`)
		assert.NotContains(t, body, "data-do=", "no do it for me")
		every := l.Capstone.HintEvery
		assert.Contains(t, body, fmt.Sprintf(`<details class="hint" data-unlock="%d" hidden>`, every))
		assert.Contains(t, body, fmt.Sprintf(`<details class="hint" data-unlock="%d" hidden>`, 2*every))
		assert.Contains(t, body, "data-hint-locked")
	}
	_, en := get(t, ts, "/lessons/"+l.Slug, "en")
	assert.Contains(t, text(en), "There is no “do it for me” here.")
	_, zh := get(t, ts, "/lessons/"+l.Slug, "zh")
	assert.Contains(t, text(zh), "提示 2")
}

// TestCourseMap: /course lists every lesson once, each on a level below
// every lesson it builds on, with its prerequisites named, its time and a
// progress bar (lessons.js fills it from localStorage); in both languages.
func TestCourseMap(t *testing.T) {
	ts := newTestServer(t, nil)
	c := course(t)
	for _, lang := range []string{"en", "zh"} {
		code, body := get(t, ts, "/course", lang)
		require.Equal(t, http.StatusOK, code)
		levels := regexp.MustCompile(`(?s)<li class="course-level">(.*?)</ul></li>`).FindAllStringSubmatch(body, -1)
		require.NotEmpty(t, levels)
		levelOf := map[string]int{}
		for i, lv := range levels {
			for _, m := range regexp.MustCompile(`data-lesson="([^"]+)"`).FindAllStringSubmatch(lv[1], -1) {
				_, dup := levelOf[m[1]]
				require.False(t, dup, "%s appears twice", m[1])
				levelOf[m[1]] = i
			}
		}
		require.Len(t, levelOf, len(c.Lessons), "every lesson is on the map")
		for _, l := range c.Lessons {
			for _, a := range l.After {
				assert.Less(t, levelOf[a], levelOf[l.Slug], "%s builds on %s, so it sits below it", l.Slug, a)
			}
			if len(l.After) == 0 {
				assert.Zero(t, levelOf[l.Slug], "%s builds on nothing: level 1", l.Slug)
			}
			assert.Contains(t, body, `data-after="`+strings.Join(l.After, " ")+`"`)
		}
		assert.Contains(t, body, `<progress max=`)
		assert.Contains(t, body, `src="/static/js/lessons.js"`)
	}
	_, en := get(t, ts, "/course", "en")
	assert.Contains(t, text(en), "Course map")
	assert.Contains(t, text(en), "min reading")
	_, zh := get(t, ts, "/course", "zh")
	assert.Contains(t, text(zh), "课程地图")
	assert.Contains(t, text(zh), "前置课程")
}

// A lesson's time on the map is its reading time plus the job time the
// browser journey measured, rounded to the minute.
func TestCourseMapTimes(t *testing.T) {
	c := course(t)
	p := pages.Page{Lang: "en", T: func(k string) string {
		return map[string]string{"course.time": "~{minutes}", "course.breakdown": "{reading}|{job}", "course.unmeasured": "{reading}|-"}[k]
	}}
	m := courseMap(c, p)
	seen := 0
	for _, level := range m.Levels {
		for _, card := range level {
			l, ok := c.Lesson(card.Slug)
			require.True(t, ok)
			seen++
			read := l.ReadingSeconds(lessons.EN)
			assert.Positive(t, read, "%s has text to read", l.Slug)
			if l.Measured != nil {
				assert.Equal(t, fmt.Sprintf("~%d", max(1, (read+l.Measured.Seconds+30)/60)), card.Time, l.Slug)
				assert.Equal(t, fmt.Sprintf("%d|%d:%02d", max(1, (read+30)/60), l.Measured.Seconds/60, l.Measured.Seconds%60), card.Breakdown, l.Slug)
			} else {
				// Not measured yet (TestJourneyCourseTimes, docs/lessons.md):
				// the map says so instead of showing a figure nobody took.
				assert.Equal(t, fmt.Sprintf("~%d", max(1, (read+30)/60)), card.Time, l.Slug)
				assert.Equal(t, fmt.Sprintf("%d|-", max(1, (read+30)/60)), card.Breakdown, l.Slug)
			}
		}
	}
	assert.Equal(t, len(c.Lessons), seen)
}

// TestTeachingPage: /teaching is docs/teaching.md (and teaching.zh.md in
// Chinese) as a page: its title, its class plan, the language link kept on
// the page, links to other documents shown as their path.
func TestTeachingPage(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, tc := range []struct{ lang, file, link string }{{"en", "teaching.md", "/teaching?lang=zh"}, {"zh", "teaching.zh.md", "/teaching?lang=en"}} {
		src, err := fs.ReadFile(docs.Teaching, tc.file)
		require.NoError(t, err)
		first, _, _ := strings.Cut(string(src), "\n")
		title := strings.TrimPrefix(first, "# ")
		code, body := get(t, ts, "/teaching", tc.lang)
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, "<h1>"+html.EscapeString(title)+"</h1>", tc.lang)
		assert.Contains(t, body, "45", "the 45-minute plan")
		assert.Contains(t, body, "--classroom wordcount")
		if strings.Contains(string(src), ".md)") {
			assert.NotRegexp(t, `href="[a-z.]+\.md"`, body, "no link to a file the server does not serve")
		}
		if strings.Contains(string(src), "teaching.zh.md)") || strings.Contains(string(src), "teaching.md)") {
			assert.Contains(t, body, `href="`+html.EscapeString(tc.link)+`"`)
		}
	}
	_, lessonsPage := get(t, ts, "/lessons", "en")
	assert.Contains(t, lessonsPage, `href="/teaching"`)
	assert.Contains(t, lessonsPage, `href="/course"`)
}
