package lessons

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/statelab/statelab/engine"
)

// Lang is a language of the lesson texts.
type Lang string

// The languages every lesson is written in.
const (
	EN Lang = "en"
	ZH Lang = "zh"
)

// Langs lists the languages in the order the UI offers them.
var Langs = []Lang{EN, ZH}

// MainJob names the scenario's main job in a reset action.
const MainJob = "main"

// Lesson is one lesson: its texts in every language and its scenario.
type Lesson struct {
	// Slug is the folder name, e.g. "01-why-state"; it is the deep link.
	Slug string
	// Number is the leading number of the slug.
	Number  int
	Minutes int
	Seed    int64
	// Text is the lesson's words per language.
	Text map[Lang]*Text
	// Steps in order.
	Steps []*Step

	// After lists the lessons this one builds on (their slugs, all with
	// smaller numbers): the course map's prerequisites.
	After []string
	// Measured is the time the lesson took in the browser journey that
	// measures the course (nil: not measured).
	Measured *Measured
	// Capstone, when set, makes the lesson a capstone (issue 19): its
	// steps are goals with no "do it for me", and each step may have up
	// to MaxCapstoneHints hints, unlocked one after another.
	Capstone *Capstone

	job      *engine.JobSpec
	variants map[string]*engine.JobSpec
}

// Capstone is the capstone's setting: hint k (from 1) of a step unlocks
// k × HintEvery seconds after the step became the current one.
type Capstone struct {
	HintEvery int `yaml:"hintEvery"`
}

// MaxCapstoneHints bounds a capstone step's hints.
const MaxCapstoneHints = 3

// Text is a lesson's words in one language. The Markdown fields are the
// source; the HTML fields are rendered from them (every character of the
// source escaped, only StateLab's own tags added), safe to insert as is.
type Text struct {
	Title     string // plain text
	Summary   string // plain text
	Intro     string // Markdown before the first step
	IntroHTML string
	End       string // Markdown of the closing section
	EndTitle  string
	EndHTML   string
}

// Step is one step of a lesson.
type Step struct {
	ID    string
	Index int // 0-based position in the lesson
	// Actions are protocol commands, performed in order.
	Actions []Action
	// Checks must all hold for the step to be done.
	Checks []Check
	// Within is how many engine steps the checks may take to hold.
	Within int
	// Line is the step's line in scenario.yaml (1-based; 0 when unknown).
	Line int
	// Predict is the question the step asks before its action (nil: none).
	Predict *Prediction
	// Text is the step's words per language.
	Text map[Lang]*StepText
}

// StepText is a step's title, body and hint in one language.
type StepText struct {
	Title     string // plain text of the heading
	TitleHTML string // the heading's inline Markdown, rendered
	Body      string // Markdown
	BodyHTML  string
	Hint      string // Markdown (every hint block, joined)
	HintHTML  string
	// HintsHTML is each hint block, rendered, in order: one for a lesson
	// step, up to MaxCapstoneHints for a capstone step.
	HintsHTML []string
	// Question and Why are the prediction's question and explanation
	// (the > [!predict] and > [!why] blocks), when the step predicts.
	Question     string
	QuestionHTML string
	Why          string
	WhyHTML      string
}

// Action is one protocol command of a step, as the web protocol spells it:
// "do it for me" sends {"type":"command","name":Name,"args":Args}.
type Action struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args,omitempty"`
	// ExpectRefused marks an action the lesson expects the engine to refuse.
	ExpectRefused bool `json:"expectRefused,omitempty"`
}

// String renders the action as "name{arg: value, …}".
func (a Action) String() string { return a.Name + formatArgs(a.Args) }

// Driver reports whether the action controls the viewer or the run (pause,
// resume, step, speed, reset, snapshot) rather than the job.
func (a Action) Driver() bool {
	switch a.Name {
	case cmdPause, cmdResume, cmdStep, cmdSpeed, cmdReset, cmdSnapshot:
		return true
	}
	return false
}

// MarshalArgs returns the action's args as a JSON object ("{}" when none).
func (a Action) MarshalArgs() json.RawMessage {
	if len(a.Args) == 0 {
		return json.RawMessage("{}")
	}
	b, err := json.Marshal(a.Args)
	if err != nil {
		// Args come from YAML scalars and lists, validated by the lint.
		panic(fmt.Sprintf("lessons: marshal args of %s: %v", a.Name, err))
	}
	return b
}

// Job returns a copy of the job the lesson starts with: its main job
// ("main" or "") or a variant, with the lesson's seed.
func (l *Lesson) Job(name string) (*engine.JobSpec, error) {
	var s *engine.JobSpec
	if name == "" || name == MainJob {
		s = l.job
	} else {
		s = l.variants[name]
	}
	if s == nil {
		return nil, fmt.Errorf("lesson %s has no job variant %q (it has %s)", l.Slug, name, strings.Join(l.JobNames(), ", "))
	}
	return s.Clone(), nil
}

// JobNames lists "main" and the variants, sorted.
func (l *Lesson) JobNames() []string {
	names := []string{MainJob}
	for k := range l.variants {
		names = append(names, k)
	}
	sort.Strings(names[1:])
	return names
}

// Step returns the step with the given id.
func (l *Lesson) Step(id string) (*Step, bool) {
	for _, s := range l.Steps {
		if s.ID == id {
			return s, true
		}
	}
	return nil, false
}

// Title returns the lesson's title in lang, falling back to English.
func (l *Lesson) Title(lang Lang) string {
	if t, ok := l.Text[lang]; ok {
		return t.Title
	}
	return l.Text[EN].Title
}

// formatArgs renders args sorted by name: "{index: 0, operator: count}".
func formatArgs(args map[string]any) string {
	if len(args) == 0 {
		return "{}"
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %s", k, formatValue(args[k]))
	}
	b.WriteByte('}')
	return b.String()
}

func formatValue(v any) string {
	switch t := v.(type) {
	case string:
		if t == "" || strings.ContainsAny(t, " ,:{}[]\"") {
			return fmt.Sprintf("%q", t)
		}
		return t
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = formatValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case [][]string:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = "[" + strings.Join(e, ", ") + "]"
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case [][]int:
		parts := make([]string, len(t))
		for i, e := range t {
			s := make([]string, len(e))
			for j, n := range e {
				s[j] = fmt.Sprint(n)
			}
			parts[i] = "[" + strings.Join(s, ", ") + "]"
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// Measured is a lesson's time in the browser journey TestJourneyCourseTimes
// (web/lesson_course_e2e_test.go), which walks every lesson at 1× and acts
// as soon as each step allows: Seconds from the page opening to the last
// tick, what a learner who acts at once waits for the job.
type Measured struct {
	Seconds int `yaml:"seconds"`
}

// Reading speeds for the course map's reading time: words per minute for
// English, characters per minute for Chinese (common figures for technical
// text read with care).
const (
	readWordsPerMinute = 200
	readCharsPerMinute = 300
)

// ReadingSeconds is how long the lesson's text takes to read in lang at
// readWordsPerMinute (English) or readCharsPerMinute (Chinese, counting
// Han characters; Latin words among them count as words).
func (l *Lesson) ReadingSeconds(lang Lang) int {
	t, ok := l.Text[lang]
	if !ok {
		lang, t = EN, l.Text[EN]
	}
	parts := []string{t.Intro, t.End}
	for _, st := range l.Steps {
		if x := st.Text[lang]; x != nil {
			parts = append(parts, x.Body, x.Question, x.Why)
		}
	}
	words, han := 0, 0
	for _, p := range parts {
		inWord := false
		for _, r := range p {
			switch {
			case unicode.Is(unicode.Han, r):
				han++
				inWord = false
			case unicode.IsLetter(r) || unicode.IsDigit(r):
				if !inWord {
					words++
				}
				inWord = true
			default:
				inWord = false
			}
		}
	}
	return words*60/readWordsPerMinute + han*60/readCharsPerMinute
}

// checkAfter lints the prerequisites: each names a lesson of the course
// with a smaller number.
func checkAfter(ls []*Lesson) []Problem {
	num := map[string]int{}
	for _, l := range ls {
		num[l.Slug] = l.Number
	}
	var problems []Problem
	for _, l := range ls {
		for _, a := range l.After {
			n, ok := num[a]
			switch {
			case !ok:
				problems = append(problems, Problem{Lesson: l.Slug, File: "scenario.yaml", Msg: fmt.Sprintf("after: there is no lesson %q in the course", a)})
			case n >= l.Number:
				problems = append(problems, Problem{Lesson: l.Slug, File: "scenario.yaml", Msg: fmt.Sprintf("after: %s comes later in the course; a lesson builds only on earlier ones", a)})
			}
		}
	}
	return problems
}
