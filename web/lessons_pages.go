package web

import (
	"fmt"
	"io/fs"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/statelab/statelab/docs"
	"github.com/statelab/statelab/lessons"
	"github.com/statelab/statelab/web/pages"
)

// The lesson pages: the list (/lessons), a lesson beside its live view
// (/lessons/{slug}, deep links /lessons/{slug}#step-3), and the glossary.

func (srv *Server) lessonItems(p pages.Page) []pages.LessonItem {
	items := make([]pages.LessonItem, 0, len(srv.cfg.Lessons.Lessons))
	for _, l := range srv.cfg.Lessons.Lessons {
		items = append(items, lessonItem(l, p))
	}
	return items
}

func lessonItem(l *lessons.Lesson, p pages.Page) pages.LessonItem {
	t, ok := l.Text[lessons.Lang(p.Lang)]
	if !ok {
		t = l.Text[lessons.EN]
	}
	return pages.LessonItem{Slug: l.Slug, Number: l.Number, Title: t.Title, Summary: t.Summary, Minutes: l.Minutes, Steps: len(l.Steps),
		Meta: fill(p.T("lessons.meta"), "minutes", strconv.Itoa(l.Minutes), "steps", strconv.Itoa(len(l.Steps)))}
}

// fill replaces {name} placeholders of a catalogue text, as the browser's
// t() does.
func fill(text string, kv ...string) string {
	for i := 0; i+1 < len(kv); i += 2 {
		text = strings.ReplaceAll(text, "{"+kv[i]+"}", kv[i+1])
	}
	return text
}

func (srv *Server) handleLessons(w http.ResponseWriter, r *http.Request) {
	p := srv.page(w, r, "lessons", "lessons.title")
	p.Script = "/static/js/lessons.js"
	srv.render(w, r, http.StatusOK, pages.LessonIndex(p, srv.lessonItems(p)))
}

func (srv *Server) handleLesson(w http.ResponseWriter, r *http.Request) {
	p := srv.page(w, r, "lessons", "lessons.title")
	lang := lessons.Lang(p.Lang)
	cat := srv.cfg.Lessons
	slug := r.PathValue("slug")
	l, ok := cat.Lesson(slug)
	if !ok {
		p.Title = p.T("lessons.missing")
		p.Script = "/static/js/lessons.js"
		srv.render(w, r, http.StatusNotFound, pages.LessonMissing(p, fmt.Sprintf(p.T("lessons.unknown"), slug), srv.lessonItems(p)))
		return
	}
	d := pages.LessonPage{View: l.View(lang, cat)}
	d.Heading = fill(p.T("lessons.lessonN"), "n", strconv.Itoa(l.Number)) + " · " + lessonItem(l, p).Meta
	for _, st := range d.View.Steps {
		var acts []string
		for _, a := range st.Actions {
			s := a.Name
			if args := string(a.Args); args != "{}" {
				s += " " + args
			}
			acts = append(acts, s)
		}
		d.Actions = append(d.Actions, acts)
	}
	prev, next := cat.Neighbours(slug)
	if prev != nil {
		it := lessonItem(prev, p)
		d.Prev = &it
	}
	if next != nil {
		it := lessonItem(next, p)
		d.Next = &it
	}
	// A language switch keeps the learner's session (and so the engine and
	// the steps done): the page joins it when it still runs this lesson.
	d.Workspace.WSQuery = "lesson=" + slug
	if id := r.URL.Query().Get("session"); id != "" {
		if s, ok := srv.Session(id); ok && s.Template == "lesson:"+slug {
			d.Workspace.WSQuery = "session=" + id
		}
	}
	p.Title = d.View.Title
	p.Script = "/static/js/lesson.js"
	p.Wide = true
	srv.render(w, r, http.StatusOK, pages.Lesson(p, d))
}

func (srv *Server) handleGlossary(w http.ResponseWriter, r *http.Request) {
	p := srv.page(w, r, "lessons", "glossary.title")
	g, ok := srv.cfg.Lessons.Glossary[lessons.Lang(p.Lang)]
	if !ok {
		g = srv.cfg.Lessons.Glossary[lessons.EN]
	}
	if g == nil {
		srv.render(w, r, http.StatusNotFound, pages.NotFound(p, fmt.Sprintf(p.T("notfound.text"), r.URL.Path)))
		return
	}
	p.Title = strings.TrimSpace(g.Title)
	srv.render(w, r, http.StatusOK, pages.Glossary(p, pages.GlossaryPage{Title: g.Title, Summary: g.Summary, HTML: g.HTML}))
}

// handleCourseMap serves /course: every lesson by level, with what it
// builds on and how long it takes.
func (srv *Server) handleCourseMap(w http.ResponseWriter, r *http.Request) {
	p := srv.page(w, r, "lessons", "course.title")
	p.Script = "/static/js/lessons.js"
	srv.render(w, r, http.StatusOK, pages.CourseMap(p, courseMap(srv.cfg.Lessons, p)))
}

// courseMap groups the lessons by level: a lesson with no prerequisite is
// on level 1, any other one level below the deepest lesson it builds on.
func courseMap(cat *lessons.Catalog, p pages.Page) pages.CourseMapPage {
	lang := lessons.Lang(p.Lang)
	level := map[string]int{}
	var m pages.CourseMapPage
	for _, l := range cat.Lessons { // in order: prerequisites come first
		lv := 0
		var after []pages.LessonItem
		var nums, slugs []string
		for _, a := range l.After {
			lv = max(lv, level[a]+1)
			if al, ok := cat.Lesson(a); ok {
				after = append(after, lessonItem(al, p))
				nums = append(nums, fmt.Sprintf("%02d", al.Number))
				slugs = append(slugs, a)
			}
		}
		level[l.Slug] = lv
		for len(m.Levels) <= lv {
			m.Levels = append(m.Levels, nil)
		}
		reading := l.ReadingSeconds(lang)
		c := pages.CourseCard{LessonItem: lessonItem(l, p), After: after, AfterText: strings.Join(nums, ", "), AfterSlugs: strings.Join(slugs, " ")}
		readMin := strconv.Itoa(max(1, (reading+30)/60))
		if ms := l.Measured; ms != nil {
			c.Time = fill(p.T("course.time"), "minutes", strconv.Itoa(max(1, (reading+ms.Seconds+30)/60)))
			c.Breakdown = fill(p.T("course.breakdown"), "reading", readMin, "job", clockText(ms.Seconds))
		} else {
			c.Time = fill(p.T("course.time"), "minutes", strconv.Itoa(max(1, (reading+30)/60)))
			c.Breakdown = fill(p.T("course.unmeasured"), "reading", readMin)
		}
		m.Levels[lv] = append(m.Levels[lv], c)
	}
	return m
}

// clockText renders seconds as m:ss.
func clockText(s int) string { return fmt.Sprintf("%d:%02d", s/60, s%60) }

var (
	teachingLink = regexp.MustCompile(`\]\((teaching(\.zh)?\.md)\)`)
	docLink      = regexp.MustCompile(`\[([^\]]+)\]\(([a-z-]+\.md)\)`)
)

// handleTeaching serves /teaching: docs/teaching.md (teaching.zh.md in
// Chinese) as a page. Links between the two languages stay on the page;
// links to other documents become their path in the repository, which is
// where an instructor reads them.
func (srv *Server) handleTeaching(w http.ResponseWriter, r *http.Request) {
	p := srv.page(w, r, "lessons", "teaching.title")
	name := "teaching.md"
	if p.Lang == "zh" {
		name = "teaching.zh.md"
	}
	src, err := fs.ReadFile(docs.Teaching, name)
	if err != nil {
		srv.render(w, r, http.StatusNotFound, pages.NotFound(p, fmt.Sprintf(p.T("notfound.text"), r.URL.Path)))
		return
	}
	md := strings.ReplaceAll(string(src), "\r\n", "\n")
	title := p.T("teaching.title")
	if first, rest, ok := strings.Cut(md, "\n"); ok && strings.HasPrefix(first, "# ") {
		title, md = strings.TrimSpace(strings.TrimPrefix(first, "# ")), rest
	}
	md = teachingLink.ReplaceAllStringFunc(md, func(s string) string {
		if strings.Contains(s, ".zh.") {
			return "](/teaching?lang=zh)"
		}
		return "](/teaching?lang=en)"
	})
	md = docLink.ReplaceAllString(md, "`docs/$2`")
	p.Title = title
	srv.render(w, r, http.StatusOK, pages.Teaching(p, pages.GlossaryPage{Title: title, HTML: lessons.RenderMarkdown(md)}))
}
