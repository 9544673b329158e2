package lessons

import (
	"fmt"
	"regexp"
	"strings"
)

// The Markdown of a lesson: front matter, an introduction, one level-2
// section per step marked {step=id}, and an optional closing section marked
// {end}. A step's hint is a block quote opened by "> [!hint]".

// lessonDoc is one lesson.<lang>.md, parsed.
type lessonDoc struct {
	title, summary string
	intro          string
	sections       []docSection
	end            *docSection
}

type docSection struct {
	id    string // step id ("" for the end section)
	title string // heading text, Markdown
	body  string // Markdown without the hint
	hint  string // Markdown of the hint block ("" when missing)
	line  int    // line of the heading, 1-based
	hints int    // number of hint blocks found
	// hintList is each hint block's Markdown, in order (a capstone step
	// may have several, unlocked one after another).
	hintList []string
}

var (
	headingMarker = regexp.MustCompile(`^##\s+(.*?)\s*\{(step=([a-z0-9][a-z0-9-]*)|end)\}\s*$`)
	anyH2         = regexp.MustCompile(`^##\s`)
	hintOpen      = regexp.MustCompile(`^>\s*\[!hint\]\s*$`)
)

// parseLessonDoc splits a lesson's Markdown. Problems are returned as
// messages naming the line.
func parseLessonDoc(src string) (*lessonDoc, []string) {
	var problems []string
	bad := func(line int, format string, a ...any) {
		problems = append(problems, fmt.Sprintf("line %d: %s", line, fmt.Sprintf(format, a...)))
	}
	src = strings.ReplaceAll(src, "\r\n", "\n")
	lines := strings.Split(src, "\n")
	doc := &lessonDoc{}

	// Front matter.
	i := 0
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "---" {
		bad(1, "the file must start with front matter: a line ---, then title: and summary:, then ---")
		return doc, problems
	}
	closed := false
	for i = 1; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "---" {
			closed = true
			i++
			break
		}
		if l == "" {
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			bad(i+1, "front matter line %q is not key: value", l)
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "title":
			doc.title = v
		case "summary":
			doc.summary = v
		default:
			bad(i+1, "unknown front matter key %q (want title or summary)", strings.TrimSpace(k))
		}
	}
	if !closed {
		bad(1, "the front matter is not closed by a line ---")
		return doc, problems
	}
	if doc.title == "" {
		bad(1, "front matter has no title")
	}
	if doc.summary == "" {
		bad(1, "front matter has no summary")
	}

	// Sections.
	var cur *docSection
	var buf []string
	flush := func() {
		text := strings.Join(buf, "\n")
		buf = buf[:0]
		if cur == nil {
			doc.intro = strings.TrimSpace(text)
			return
		}
		cur.body, cur.hint, cur.hints = splitHint(text)
		cur.hintList = splitHints(text)
		if cur.id == "" {
			s := *cur
			doc.end = &s
		} else {
			doc.sections = append(doc.sections, *cur)
		}
	}
	inFence := false
	for ; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
		}
		if !inFence && anyH2.MatchString(l) {
			m := headingMarker.FindStringSubmatch(l)
			if m == nil {
				bad(i+1, "level-2 heading %q has no {step=id} or {end} marker", strings.TrimSpace(l))
				buf = append(buf, l)
				continue
			}
			if doc.end != nil || (cur != nil && cur.id == "") {
				bad(i+1, "section %q comes after the {end} section", m[1])
			}
			flush()
			cur = &docSection{id: m[3], title: strings.TrimSpace(m[1]), line: i + 1}
			if cur.title == "" {
				bad(i+1, "the heading has no title before its marker")
			}
			continue
		}
		buf = append(buf, l)
	}
	flush()
	return doc, problems
}

// splitHints returns each "> [!hint]" block quote of a section.
func splitHints(text string) []string {
	lines := strings.Split(text, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		if !hintOpen.MatchString(strings.TrimSpace(lines[i])) {
			continue
		}
		var h []string
		j := i + 1
		for ; j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), ">"); j++ {
			l := strings.TrimPrefix(strings.TrimSpace(lines[j]), ">")
			h = append(h, strings.TrimPrefix(l, " "))
		}
		out = append(out, strings.TrimSpace(strings.Join(h, "\n")))
		i = j - 1
	}
	return out
}

// splitHint takes the "> [!hint]" block quote out of a section.
func splitHint(text string) (body, hint string, n int) {
	lines := strings.Split(text, "\n")
	var out, h []string
	for i := 0; i < len(lines); i++ {
		if !hintOpen.MatchString(strings.TrimSpace(lines[i])) {
			out = append(out, lines[i])
			continue
		}
		n++
		j := i + 1
		for ; j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), ">"); j++ {
			l := strings.TrimPrefix(strings.TrimSpace(lines[j]), ">")
			h = append(h, strings.TrimPrefix(l, " "))
		}
		i = j - 1
	}
	return strings.TrimSpace(strings.Join(out, "\n")), strings.TrimSpace(strings.Join(h, "\n")), n
}
