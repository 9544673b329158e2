package lessons

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRenderMarkdown(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"paragraph with inline", "A **bold** and *soft* `code<x>` word.",
			"<p>A <strong>bold</strong> and <em>soft</em> <code>code&lt;x&gt;</code> word.</p>\n"},
		{"html is escaped", `<script>alert("x")</script> & more`,
			"<p>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; more</p>\n"},
		{"safe link", "[Flink](https://flink.apache.org)", `<p><a href="https://flink.apache.org">Flink</a></p>` + "\n"},
		{"unsafe link keeps only the text", "[click](javascript:alert(1))", "<p>click</p>\n"},
		{"multiplication is not emphasis", "p * 2 and 3 * 4", "<p>p * 2 and 3 * 4</p>\n"},
		{"heading", "### Where *older* ones differ", "<h3>Where <em>older</em> ones differ</h3>\n"},
		{"bullet list with continuation", "- one\n  more\n- two", "<ul>\n<li>one\nmore</li>\n<li>two</li>\n</ul>\n"},
		{"numbered list", "1. a\n2. b", "<ol>\n<li>a</li>\n<li>b</li>\n</ol>\n"},
		{"code block keeps text", "```\nx < y\n  z\n```", "<pre><code>x &lt; y\n  z</code></pre>\n"},
		{"table with code containing a pipe", "| a | b |\n|---|---|\n| `x|y` | 2 |",
			"<table>\n<thead><tr><th>a</th><th>b</th></tr></thead>\n<tbody>\n<tr><td><code>x|y</code></td><td>2</td></tr>\n</tbody>\n</table>\n"},
		{"block quote", "> quoted\n> text", "<blockquote>\n<p>quoted\ntext</p>\n</blockquote>\n"},
		{"chinese", "状态与**检查点**", "<p>状态与<strong>检查点</strong></p>\n"},
		{"chinese soft break joins the characters", "与之相连\n的任务", "<p>与之相连的任务</p>\n"},
		{"chinese soft break after emphasis and punctuation", "**检查点**\n和屏障。\n然后", "<p><strong>检查点</strong>和屏障。然后</p>\n"},
		{"chinese beside latin keeps the break", "使用\nFlink 的\n`count#0`\n状态", "<p>使用\nFlink 的\n<code>count#0</code>\n状态</p>\n"},
		{"chinese in a list item", "- 一\n  二", "<ul>\n<li>一二</li>\n</ul>\n"},
		{"english keeps the break", "one\ntwo", "<p>one\ntwo</p>\n"},
		{"paragraph ends before a list", "intro\n- item", "<p>intro</p>\n<ul>\n<li>item</li>\n</ul>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, RenderMarkdown(tc.in))
		})
	}
}

func TestParseLessonDocHint(t *testing.T) {
	doc, problems := parseLessonDoc("---\ntitle: T\nsummary: S\n---\n\nIntro.\n\n## Step one {step=one}\n\nBody.\n\n> [!hint]\n> Look\n> here.\n\nAfter.\n\n```\n## not a heading\n```\n")
	assert.Empty(t, problems)
	assert.Equal(t, "Intro.", doc.intro)
	if assert.Len(t, doc.sections, 1) {
		s := doc.sections[0]
		assert.Equal(t, "one", s.id)
		assert.Equal(t, "Step one", s.title)
		assert.Equal(t, "Look\nhere.", s.hint)
		assert.Equal(t, 1, s.hints)
		assert.Contains(t, s.body, "After.")
		assert.Contains(t, s.body, "## not a heading", "a heading inside a code block is text")
	}
}
