package web

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
)

// A command the engine refuses shows its reason in a toast. The reason is
// the server's English message; a page in Chinese first says, in Chinese,
// that the engine refused it and that the reason follows in the original
// (before, the 中文 page showed only the English sentence). The command
// goes through the page's own send, the path its buttons take.
func TestRefusalToastSpeaksThePagesLanguage(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	for _, at := range []struct {
		lang  string
		width int64
	}{{"zh", 390}, {"en", 1280}} {
		cat := catalogue(t, at.lang)
		b.run(chromedp.EmulateViewport(at.width, 900))
		b.openLive("template=wordcount&seed=1&lang=" + at.lang)
		eval[bool](b, `(window.statelab.send('restart-taskmanager', { taskManager: 'tm-1' }).catch((e) => { window.refusedCode = e.code; }), true)`)
		b.waitJS(20*time.Second, at.lang+": the refusal's toast", `(t => !t.hidden && t.classList.contains('error'))(document.getElementById('toast'))`)
		got := eval[string](b, `document.getElementById('toast').textContent`)
		code := eval[string](b, `window.refusedCode || ''`)
		lead := strings.SplitN(cat["error."+code], "{message}", 2)[0]
		assert.NotEmpty(t, lead, "%s: the catalogue has a sentence for code %q", at.lang, code)
		assert.True(t, strings.HasPrefix(got, lead), "%s: the toast begins in the page's language (%q): %q", at.lang, lead, got)
		assert.Contains(t, got, "crash it first", "%s: and keeps the engine's reason", at.lang)
		assert.Empty(t, eval[[]string](b, jsWiderThanScreen(`#toast`)), "%s at %d px: the toast fits the screen", at.lang, at.width)
		b.shot("refusal-toast-" + at.lang)
	}
}
