package pages

import "github.com/statelab/statelab/lessons"

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
