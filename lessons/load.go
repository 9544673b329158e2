package lessons

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/statelab/statelab/engine"
)

//go:embed content
var embedded embed.FS

// Catalog is every lesson, in order, and the glossary.
type Catalog struct {
	Lessons []*Lesson
	// Glossary is the glossary page per language.
	Glossary map[Lang]*Page
}

// Page is a Markdown page with front matter (the glossary).
type Page struct {
	Title    string
	Summary  string
	Markdown string
	HTML     string
}

// Lesson returns the lesson with the given slug.
func (c *Catalog) Lesson(slug string) (*Lesson, bool) {
	for _, l := range c.Lessons {
		if l.Slug == slug {
			return l, true
		}
	}
	return nil, false
}

// Neighbours returns the lessons before and after slug (nil at the ends).
func (c *Catalog) Neighbours(slug string) (prev, next *Lesson) {
	for i, l := range c.Lessons {
		if l.Slug == slug {
			if i > 0 {
				prev = c.Lessons[i-1]
			}
			if i+1 < len(c.Lessons) {
				next = c.Lessons[i+1]
			}
		}
	}
	return prev, next
}

var (
	defaultOnce    sync.Once
	defaultCatalog *Catalog
	defaultErr     error
)

// Default returns the embedded lessons, loaded and linted once.
func Default() (*Catalog, error) {
	defaultOnce.Do(func() {
		sub, err := fs.Sub(embedded, "content")
		if err != nil {
			defaultErr = fmt.Errorf("open embedded lessons: %w", err)
			return
		}
		defaultCatalog, defaultErr = Load(sub)
	})
	return defaultCatalog, defaultErr
}

// Problem is one defect the lint found.
type Problem struct {
	Lesson string // slug, or "" for the content folder
	File   string
	Step   string // step id, when the problem is in a step
	Line   int    // 1-based line in File, when known
	Msg    string
}

// At renders the problem as a compiler does, "root/lesson/file:line: step
// s: msg", for a lesson folder read from root (an instructor's directory).
func (p Problem) At(root string) string {
	var b strings.Builder
	if p.File != "" || p.Lesson != "" {
		b.WriteString(filepath.Join(root, p.Lesson, p.File))
		if p.Line > 0 {
			b.WriteString(":" + strconv.Itoa(p.Line))
		}
		b.WriteString(": ")
	}
	if p.Step != "" {
		b.WriteString("step " + p.Step + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Lesson != "" {
		b.WriteString("lesson " + p.Lesson)
	}
	if p.File != "" {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.File)
		if p.Line > 0 {
			b.WriteString(":" + strconv.Itoa(p.Line))
		}
	}
	if p.Step != "" {
		b.WriteString(", step " + p.Step)
	}
	b.WriteString(": " + p.Msg)
	return b.String()
}

// LintError lists every problem found while loading lessons.
type LintError struct{ Problems []Problem }

func (e *LintError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("lessons: %d problem(s):\n  %s", len(e.Problems), strings.Join(lines, "\n  "))
}

// ErrLint is wrapped by every LintError, for errors.Is.
var ErrLint = errors.New("lessons: lint failed")

func (e *LintError) Unwrap() error { return ErrLint }

var (
	reLineMsg  = regexp.MustCompile(`(?s)^line (\d+): (.*)$`)
	reYAMLLine = regexp.MustCompile(`\bline (\d+):`)
	reSlug     = regexp.MustCompile(`^(\d{2})-[a-z0-9]+(-[a-z0-9]+)*$`)
	reID       = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	reJobName  = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

// Limits a scenario must keep.
const (
	defaultWithin = 20000
	maxWithin     = 1_000_000
	minMinutes    = 5
	maxMinutes    = 10
)

// Load reads every lesson folder (NN-slug) and the glossary from fsys and
// lints them. It returns a *LintError listing every problem found.
func Load(fsys fs.FS) (*Catalog, error) {
	c := &Catalog{Glossary: map[Lang]*Page{}}
	var problems []Problem
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read lessons: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	c.Lessons, problems = loadFolders(fsys, names)
	problems = append(problems, checkAfter(c.Lessons)...)
	for _, lang := range Langs {
		name := "glossary." + string(lang) + ".md"
		src, err := fs.ReadFile(fsys, name)
		if errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, Problem{File: name, Msg: "the glossary is missing in this language"})
			continue
		} else if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		doc, ps := parseLessonDoc(string(src))
		for _, p := range ps {
			problems = append(problems, Problem{File: name, Msg: p})
		}
		c.Glossary[lang] = &Page{Title: doc.title, Summary: doc.summary, Markdown: doc.intro, HTML: RenderMarkdown(doc.intro)}
	}
	if len(c.Lessons) == 0 && len(problems) == 0 {
		problems = append(problems, Problem{Msg: "no lessons found"})
	}
	if len(problems) > 0 {
		return c, &LintError{Problems: problems}
	}
	return c, nil
}

// loadFolders loads and lints the lesson folders names of fsys, in order.
func loadFolders(fsys fs.FS, names []string) ([]*Lesson, []Problem) {
	var out []*Lesson
	var problems []Problem
	for _, name := range names {
		if !reSlug.MatchString(name) {
			problems = append(problems, Problem{Lesson: name, Msg: "a lesson folder is named NN-words, in lower case (e.g. 01-why-state)"})
			continue
		}
		l, ps := loadLesson(fsys, name)
		problems = append(problems, ps...)
		if len(ps) == 0 {
			out = append(out, l)
		}
	}
	for i, l := range out {
		if i > 0 && out[i-1].Number == l.Number {
			problems = append(problems, Problem{Lesson: l.Slug, Msg: fmt.Sprintf("number %02d is used by %s too", l.Number, out[i-1].Slug)})
		}
	}
	return out, problems
}

// scenarioFile is scenario.yaml as written.
type scenarioFile struct {
	Minutes  int                  `yaml:"minutes"`
	Seed     *int64               `yaml:"seed"`
	Job      yaml.Node            `yaml:"job"`
	Variants map[string]yaml.Node `yaml:"variants"`
	Steps    []stepFile           `yaml:"steps"`
	Capstone *Capstone            `yaml:"capstone"`
	After    []string             `yaml:"after"`
	Measured *Measured            `yaml:"measured"`
}

type stepFile struct {
	ID      string           `yaml:"id"`
	Actions []actionFile     `yaml:"actions"`
	Check   []map[string]any `yaml:"check"`
	Within  int              `yaml:"within"`
	Predict *predictFile     `yaml:"predict"`
}

type actionFile struct {
	Name   string         `yaml:"name"`
	Args   map[string]any `yaml:"args"`
	Expect string         `yaml:"expect"`
}

func loadLesson(fsys fs.FS, slug string) (*Lesson, []Problem) {
	var problems []Problem
	var lines scenarioLines
	badAt := func(file, step string, line int, format string, a ...any) {
		msg := fmt.Sprintf(format, a...)
		// The Markdown parser and the YAML decoder name the line in the
		// message; it moves to the Line field, so it prints as file:line.
		if m := reLineMsg.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		} else if m := reYAMLLine.FindStringSubmatch(msg); m != nil && line == 0 {
			line, _ = strconv.Atoi(m[1])
		}
		problems = append(problems, Problem{Lesson: slug, File: file, Step: step, Line: line, Msg: msg})
	}
	bad := func(file, step, format string, a ...any) { badAt(file, step, 0, format, a...) }
	n, _ := strconv.Atoi(reSlug.FindStringSubmatch(slug)[1])
	l := &Lesson{Slug: slug, Number: n, Text: map[Lang]*Text{}, variants: map[string]*engine.JobSpec{}}

	// The scenario.
	const sf = "scenario.yaml"
	raw, err := fs.ReadFile(fsys, path.Join(slug, sf))
	if err != nil {
		bad(sf, "", "cannot read the scenario: %v", err)
		return nil, problems
	}
	lines = lineIndex(raw)
	var scen scenarioFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&scen); err != nil {
		bad(sf, "", "cannot read the scenario: %v", err)
		return nil, problems
	}
	l.Minutes = scen.Minutes
	l.After = scen.After
	if m := scen.Measured; m != nil {
		if m.Seconds < 1 {
			bad(sf, "", "measured: seconds is the figure TestJourneyCourseTimes reports, 1 or more")
		}
		l.Measured = m
	}
	if c := scen.Capstone; c != nil {
		if c.HintEvery < 10 || c.HintEvery > 600 {
			bad(sf, "", "capstone: hintEvery is %d; give the seconds between hints, 10 to 600", c.HintEvery)
		}
		l.Capstone = c
	}
	if l.Minutes < minMinutes || l.Minutes > maxMinutes {
		bad(sf, "", "minutes is %d; a lesson takes %d to %d minutes", l.Minutes, minMinutes, maxMinutes)
	}
	if scen.Seed == nil {
		bad(sf, "", "the scenario has no seed; give one so every run is the same")
	} else {
		l.Seed = *scen.Seed
	}
	if scen.Job.Kind == 0 {
		bad(sf, "", "the scenario has no job")
	} else if spec, err := decodeJob(&scen.Job, l.Seed); err != nil {
		bad(sf, "", "job: %v", err)
	} else {
		l.job = spec
	}
	for name, node := range scen.Variants {
		if name == MainJob || !reID.MatchString(name) {
			bad(sf, "", "variant name %q: use lower-case words and dashes, not %q", name, MainJob)
			continue
		}
		spec, err := decodeJob(&node, l.Seed)
		if err != nil {
			bad(sf, "", "variant %s: %v", name, err)
			continue
		}
		l.variants[name] = spec
	}
	if len(scen.Steps) == 0 {
		bad(sf, "", "the scenario has no steps")
	}
	if l.job == nil {
		return nil, problems
	}

	js := newJobState(MainJob, l.job)
	seen := map[string]bool{}
	for i, sfStep := range scen.Steps {
		st := &Step{ID: sfStep.ID, Index: i, Within: sfStep.Within, Text: map[Lang]*StepText{}, Line: lines.step(i)}
		name := st.ID
		if name == "" {
			name = fmt.Sprintf("#%d", i+1)
		}
		bad := func(file, step, format string, a ...any) { badAt(file, step, st.Line, format, a...) }
		switch {
		case !reID.MatchString(st.ID):
			bad(sf, name, "step id %q: use lower-case words and dashes", st.ID)
		case seen[st.ID]:
			bad(sf, name, "step id %q is used twice", st.ID)
		}
		seen[st.ID] = true
		if st.Within == 0 {
			st.Within = defaultWithin
		}
		if st.Within < 1 || st.Within > maxWithin {
			bad(sf, name, "within %d is not within 1..%d", st.Within, maxWithin)
		}
		// A prediction is about the job the step's acting meets: after the
		// resets that open the step, before anything else it does.
		predicted := sfStep.Predict == nil
		if !predicted {
			for _, af := range sfStep.Actions {
				if af.Name == cmdUpgrade {
					sfStep.Predict.upgrade = af.Args
					break
				}
			}
		}
		predict := func() {
			if predicted {
				return
			}
			predicted = true
			p, err := newPrediction(sfStep.Predict, js)
			if err != nil {
				bad(sf, name, "%v", err)
			}
			st.Predict = p
		}
		for k, af := range sfStep.Actions {
			if af.Name != cmdReset {
				predict()
			}
			bad := func(file, step, format string, a ...any) {
				badAt(file, step, lines.item(i, "actions", k), format, a...)
			}
			a := Action{Name: af.Name, Args: af.Args}
			switch af.Expect {
			case "":
			case "refused":
				a.ExpectRefused = true
			default:
				bad(sf, name, "action %s: expect %q is unknown (the only value is refused)", af.Name, af.Expect)
			}
			if err := l.checkAction(a, &js); err != nil {
				bad(sf, name, "action %s: %v", a, err)
			}
			st.Actions = append(st.Actions, a)
		}
		predict()
		if len(sfStep.Check) == 0 {
			bad(sf, name, "the step has no check; say what must hold when it is done")
		}
		for k, item := range sfStep.Check {
			bad := func(file, step, format string, a ...any) { badAt(file, step, lines.item(i, "check", k), format, a...) }
			if len(item) != 1 {
				bad(sf, name, "a check item is one predicate: `- name: {args}`, not %v", item)
				continue
			}
			for pname, v := range item {
				argMap, ok := v.(map[string]any)
				if v == nil {
					argMap, ok = map[string]any{}, true
				}
				if !ok {
					bad(sf, name, "check %s: its arguments must be a map, e.g. {min: 1}", pname)
					continue
				}
				c, err := newCheck(pname, argMap)
				if err != nil {
					bad(sf, name, "check %v", err)
					continue
				}
				if err := c.lintRefs(js); err != nil {
					bad(sf, name, "check %v", err)
					continue
				}
				st.Checks = append(st.Checks, c)
			}
		}
		l.Steps = append(l.Steps, st)
	}

	// The texts.
	for _, lang := range Langs {
		file := "lesson." + string(lang) + ".md"
		src, err := fs.ReadFile(fsys, path.Join(slug, file))
		if err != nil {
			bad(file, "", "the %s translation is missing", lang)
			continue
		}
		doc, ps := parseLessonDoc(string(src))
		for _, p := range ps {
			bad(file, "", "%s", p)
		}
		t := &Text{Title: doc.title, Summary: doc.summary, Intro: doc.intro, IntroHTML: RenderMarkdown(doc.intro)}
		if doc.end != nil {
			t.End, t.EndTitle, t.EndHTML = doc.end.body, plainText(doc.end.title), RenderMarkdown(doc.end.body)
		}
		if strings.TrimSpace(doc.intro) == "" {
			bad(file, "", "the lesson has no introduction before its first step")
		}
		l.Text[lang] = t
		sections := map[string]docSection{}
		var order []string
		for _, s := range doc.sections {
			if _, dup := sections[s.id]; dup {
				bad(file, s.id, "line %d: the step has two sections", s.line)
				continue
			}
			sections[s.id] = s
			order = append(order, s.id)
			if _, ok := l.Step(s.id); !ok {
				bad(file, s.id, "line %d: a section for a step the scenario does not have", s.line)
			}
		}
		var want []string
		for _, st := range l.Steps {
			want = append(want, st.ID)
			s, ok := sections[st.ID]
			if !ok {
				bad(file, st.ID, "the step has no section {step=%s} in %s", st.ID, lang)
				continue
			}
			switch {
			case strings.TrimSpace(s.body) == "":
				bad(file, st.ID, "line %d: the step has no text", s.line)
			case s.hints == 0:
				bad(file, st.ID, "line %d: the step has no hint (a block quote opened by > [!hint])", s.line)
			case s.hints > 1 && l.Capstone == nil:
				bad(file, st.ID, "line %d: the step has %d hints; keep one (only a capstone's steps have several)", s.line, s.hints)
			case s.hints > MaxCapstoneHints:
				bad(file, st.ID, "line %d: the step has %d hints; a capstone step has at most %d", s.line, s.hints, MaxCapstoneHints)
			case strings.TrimSpace(s.hint) == "":
				bad(file, st.ID, "line %d: the hint is empty", s.line)
			}
			body, question, nq := takeBlock(s.body, predictOpen)
			body, why, nw := takeBlock(body, whyOpen)
			switch {
			case st.Predict == nil && nq+nw > 0:
				bad(file, st.ID, "line %d: a > [!predict] or > [!why] block, but the scenario's step has no predict:", s.line)
			case st.Predict != nil && (nq != 1 || nw != 1 || question == "" || why == ""):
				bad(file, st.ID, "line %d: the step predicts, so its section needs one > [!predict] block (the question) and one > [!why] block (shown with the engine's answer)", s.line)
			}
			var hintsHTML []string
			for _, h := range s.hintList {
				hintsHTML = append(hintsHTML, RenderMarkdown(h))
			}
			st.Text[lang] = &StepText{Title: plainText(s.title), TitleHTML: renderInline(s.title), Body: body,
				BodyHTML: RenderMarkdown(body), Hint: s.hint, HintHTML: RenderMarkdown(s.hint), HintsHTML: hintsHTML,
				Question: question, QuestionHTML: RenderMarkdown(question), Why: why, WhyHTML: RenderMarkdown(why)}
		}
		if len(order) == len(want) && !slices.Equal(order, want) {
			bad(file, "", "the sections are in the order %s, the scenario's steps in the order %s",
				strings.Join(order, ", "), strings.Join(want, ", "))
		}
	}
	return l, problems
}

// decodeJob reads a job spec from its YAML node (anchors resolved) and lets
// the engine validate it.
func decodeJob(node *yaml.Node, seed int64) (*engine.JobSpec, error) {
	var v any
	if err := node.Decode(&v); err != nil {
		return nil, err
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return nil, err
	}
	spec, err := engine.LoadSpec(b)
	if err != nil {
		return nil, err
	}
	if !reJobName.MatchString(spec.Name) {
		return nil, fmt.Errorf("job name %q: use letters, digits, '.', '_' and '-' (it names the checkpoint directory)", spec.Name)
	}
	spec.Seed = seed
	return spec, nil
}
