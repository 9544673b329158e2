package lessons

import (
	"html"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"
)

// RenderMarkdown renders the Markdown subset lessons use (docs/lessons.md)
// to HTML. It never passes the source's HTML through: every character of
// the text is escaped, so the result is safe to insert into a page.
func RenderMarkdown(src string) string {
	var b strings.Builder
	renderBlocks(&b, strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n"))
	return b.String()
}

var (
	reHeading  = regexp.MustCompile(`^(#{1,4})\s+(.*)$`)
	reBullet   = regexp.MustCompile(`^[-*]\s+(.*)$`)
	reNumber   = regexp.MustCompile(`^\d+\.\s+(.*)$`)
	reTableSep = regexp.MustCompile(`^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$`)
)

func renderBlocks(b *strings.Builder, lines []string) {
	for i := 0; i < len(lines); {
		line := lines[i]
		t := strings.TrimSpace(line)
		switch {
		case t == "":
			i++
		case strings.HasPrefix(t, "```"):
			j := i + 1
			var code []string
			for ; j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), "```"); j++ {
				code = append(code, lines[j])
			}
			b.WriteString("<pre><code>")
			b.WriteString(html.EscapeString(strings.Join(code, "\n")))
			b.WriteString("</code></pre>\n")
			i = j + 1
		case t == "---" || t == "***":
			b.WriteString("<hr>\n")
			i++
		case reHeading.MatchString(t):
			m := reHeading.FindStringSubmatch(t)
			level := len(m[1])
			if level < 2 {
				level = 2
			}
			tag := "h" + string(rune('0'+level))
			b.WriteString("<" + tag + ">" + renderInline(m[2]) + "</" + tag + ">\n")
			i++
		case strings.HasPrefix(t, ">"):
			j := i
			var inner []string
			for ; j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), ">"); j++ {
				l := strings.TrimPrefix(strings.TrimSpace(lines[j]), ">")
				inner = append(inner, strings.TrimPrefix(l, " "))
			}
			b.WriteString("<blockquote>\n")
			renderBlocks(b, inner)
			b.WriteString("</blockquote>\n")
			i = j
		case strings.HasPrefix(t, "|") && i+1 < len(lines) && reTableSep.MatchString(strings.TrimSpace(lines[i+1])):
			i = renderTable(b, lines, i)
		case reBullet.MatchString(t) || reNumber.MatchString(t):
			i = renderList(b, lines, i)
		default:
			j := i
			var para []string
			for ; j < len(lines); j++ {
				l := strings.TrimSpace(lines[j])
				if l == "" || (j > i && startsBlock(lines, j)) {
					break
				}
				para = append(para, l)
			}
			b.WriteString("<p>" + renderInline(strings.Join(para, "\n")) + "</p>\n")
			i = j
		}
	}
}

// startsBlock reports whether line j begins a block other than a paragraph.
func startsBlock(lines []string, j int) bool {
	t := strings.TrimSpace(lines[j])
	return strings.HasPrefix(t, "```") || strings.HasPrefix(t, ">") || reHeading.MatchString(t) ||
		reBullet.MatchString(t) || reNumber.MatchString(t) || t == "---" ||
		(strings.HasPrefix(t, "|") && j+1 < len(lines) && reTableSep.MatchString(strings.TrimSpace(lines[j+1])))
}

func renderList(b *strings.Builder, lines []string, i int) int {
	ordered := reNumber.MatchString(strings.TrimSpace(lines[i]))
	tag := "ul"
	if ordered {
		tag = "ol"
	}
	b.WriteString("<" + tag + ">\n")
	var item []string
	emit := func() {
		if item != nil {
			b.WriteString("<li>" + renderInline(strings.Join(item, "\n")) + "</li>\n")
		}
		item = nil
	}
	for i < len(lines) {
		raw := lines[i]
		t := strings.TrimSpace(raw)
		var m []string
		if ordered {
			m = reNumber.FindStringSubmatch(t)
		} else {
			m = reBullet.FindStringSubmatch(t)
		}
		switch {
		case m != nil && !strings.HasPrefix(raw, "  "):
			emit()
			item = []string{m[1]}
		case t != "" && item != nil && strings.HasPrefix(raw, "  "):
			item = append(item, t) // continuation of the item
		default:
			emit()
			b.WriteString("</" + tag + ">\n")
			return i
		}
		i++
	}
	emit()
	b.WriteString("</" + tag + ">\n")
	return i
}

func renderTable(b *strings.Builder, lines []string, i int) int {
	b.WriteString("<table>\n<thead><tr>")
	for _, c := range tableCells(lines[i]) {
		b.WriteString("<th>" + renderInline(c) + "</th>")
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	i += 2
	for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
		b.WriteString("<tr>")
		for _, c := range tableCells(lines[i]) {
			b.WriteString("<td>" + renderInline(c) + "</td>")
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
	return i
}

// tableCells splits a table row on | outside code spans.
func tableCells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	row = strings.TrimSuffix(row, "|")
	var cells []string
	var cur strings.Builder
	inCode := false
	for _, r := range row {
		switch {
		case r == '`':
			inCode = !inCode
			cur.WriteRune(r)
		case r == '|' && !inCode:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// renderInline renders code spans, links, **strong** and *emphasis*,
// escaping everything else.
func renderInline(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case s[i] == '`':
			if j := strings.IndexByte(s[i+1:], '`'); j >= 0 {
				b.WriteString("<code>" + html.EscapeString(s[i+1:i+1+j]) + "</code>")
				i += j + 2
				continue
			}
		case s[i] == '[':
			if text, url, n, ok := parseLink(s[i:]); ok {
				if safeURL(url) {
					b.WriteString(`<a href="` + html.EscapeString(url) + `">` + renderInline(text) + "</a>")
				} else {
					b.WriteString(renderInline(text))
				}
				i += n
				continue
			}
		case strings.HasPrefix(s[i:], "**"):
			if j := strings.Index(s[i+2:], "**"); j > 0 {
				b.WriteString("<strong>" + renderInline(s[i+2:i+2+j]) + "</strong>")
				i += j + 4
				continue
			}
		case s[i] == '*' && i+1 < len(s) && s[i+1] != ' ':
			if j := strings.IndexByte(s[i+1:], '*'); j > 0 && s[i+j] != ' ' {
				b.WriteString("<em>" + renderInline(s[i+1:i+1+j]) + "</em>")
				i += j + 2
				continue
			}
		case s[i] == '\n':
			// A soft line break renders as a space, which Chinese does not
			// put between characters: between two wide characters the
			// break joins the lines ("相连\n的" is "相连的", not "相连 的").
			if !eastAsianBreak(s[:i], s[i+1:]) {
				b.WriteByte('\n')
			}
			i++
			continue
		}
		// One UTF-8 sequence, escaped.
		n := 1
		for n < 4 && i+n < len(s) && s[i+n]&0xC0 == 0x80 {
			n++
		}
		b.WriteString(html.EscapeString(s[i : i+n]))
		i += n
	}
	return b.String()
}

// eastAsianBreak reports whether a soft line break between before and after
// joins two East Asian wide or fullwidth characters (Han, kana, CJK
// punctuation), ignoring emphasis marks at the break: CommonMark's
// East Asian line-break rule, as CSS Text's segment-break transformation
// describes it. Hangul, written with spaces, keeps the space.
func eastAsianBreak(before, after string) bool {
	before = strings.TrimRight(before, "*_")
	after = strings.TrimLeft(after, "*_")
	p, _ := utf8.DecodeLastRuneInString(before)
	n, _ := utf8.DecodeRuneInString(after)
	return wideNoSpace(p) && wideNoSpace(n)
}

func wideNoSpace(r rune) bool {
	if r == utf8.RuneError || unicode.Is(unicode.Hangul, r) {
		return false
	}
	k := width.LookupRune(r).Kind()
	return k == width.EastAsianWide || k == width.EastAsianFullwidth
}

func parseLink(s string) (text, url string, n int, ok bool) {
	close := strings.Index(s, "](")
	if close < 0 {
		return "", "", 0, false
	}
	// The URL ends at the ")" that balances its "(" (URLs may hold parens).
	depth := 0
	for j := close + 2; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return s[1:close], s[close+2 : j], j + 1, true
			}
			depth--
		case ' ', '\n':
			return "", "", 0, false
		}
	}
	return "", "", 0, false
}

// safeURL allows web links, site paths and anchors, never javascript: or data:.
func safeURL(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") ||
		strings.HasPrefix(u, "/") || strings.HasPrefix(u, "#")
}

// plainText strips the inline Markdown of a heading for lists and titles.
func plainText(s string) string {
	r := strings.NewReplacer("`", "", "**", "", "*", "")
	return strings.TrimSpace(r.Replace(s))
}
