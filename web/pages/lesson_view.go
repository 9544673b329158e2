package pages

import (
	"strings"

	"github.com/statelab/statelab/lessons"
)

// LessonItem is one lesson in the lesson list (and in the list a missing
// lesson's page offers instead).
type LessonItem struct {
	Slug    string
	Number  int
	Title   string
	Summary string
	Minutes int
	Steps   int
	// Meta is "6 min · 5 steps" in the page's language.
	Meta string
}

// LessonPage is a lesson page: the lesson's text in one language beside the
// live view of the lesson's own session.
type LessonPage struct {
	// View is the lesson as the lessons package renders it: HTML already
	// escaped, checks as sentences, step anchors.
	View lessons.LessonView
	// Heading is "Lesson 1 · 6 min · 5 steps" in the page's language.
	Heading string
	// Actions are, per step, the commands "do it for me" sends, as text.
	Actions [][]string
	// Prev and Next are the neighbouring lessons (nil at the ends).
	Prev, Next *LessonItem
	Workspace  Workspace
}

// GlossaryPage is the glossary in one language.
type GlossaryPage struct {
	Title   string
	Summary string
	HTML    string // rendered from the glossary's Markdown, escaped
}

// fill replaces {name} placeholders of a catalogue text, as the browser's
// t() does.
func fill(text string, kv ...string) string {
	for i := 0; i+1 < len(kv); i += 2 {
		text = strings.ReplaceAll(text, "{"+kv[i]+"}", kv[i+1])
	}
	return text
}

// CourseMapPage is the course map: the lessons grouped by level.
type CourseMapPage struct {
	Levels [][]CourseCard
}

// CourseCard is one lesson on the course map.
type CourseCard struct {
	LessonItem
	// After are the lessons this one builds on; AfterText names them
	// ("04, 05"), AfterSlugs lists their slugs separated by spaces (for
	// lessons.js).
	After      []LessonItem
	AfterText  string
	AfterSlugs string
	// Time is the total ("≈ 9 min"), Breakdown its parts (reading, and
	// the measured job time).
	Time      string
	Breakdown string
}
