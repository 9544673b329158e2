package web

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsFlashing counts the inspector rows whose highlight is animating.
const jsFlashing = `document.getAnimations().filter(a => a.playState === 'running' && a.effect?.target?.classList?.contains('flash')).length`

// jsInspectorValues is the inspector's values, joined.
const jsInspectorValues = `[...document.querySelectorAll('#inspector table.keyed tbody td.num')].map(td => td.textContent).join(',')`

// TestBrowserInspectorFlashesRowsOnScreen: a row of the state inspector
// whose value changes flashes while the inspector is on screen, by fading
// the highlight behind it (an opacity animation, which the compositor runs,
// where one of the row's background colour restyled and redrew the page
// every frame: half of a live word count page's main thread, measured with
// the Performance domain's TaskDuration, 6.4–8.0 s of 10 s against 3.5–4.1
// s without the flashes). Scrolled away, the values still change but no
// row animates.
func TestBrowserInspectorFlashesRowsOnScreen(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	for _, c := range []struct {
		w, h int64
		lang string
	}{{1280, 800, "en"}, {390, 844, "zh"}} {
		t.Run(fmt.Sprintf("%d-%s", c.w, c.lang), func(t *testing.T) {
			b := newBrowser(t).withMotion()
			b.run(chromedp.EmulateViewport(c.w, c.h))
			b.openLive("template=wordcount&seed=1&lang=" + c.lang)
			b.waitJS(30*time.Second, "the inspector's keyed state", `document.querySelectorAll('#inspector table.keyed tbody tr').length > 3`)

			require.True(t, eval[bool](b, `(document.getElementById('inspector').scrollIntoView({block: 'center'}), true)`))
			b.waitJS(30*time.Second, "a row flashing", jsFlashing+` > 0`)
			b.shot(fmt.Sprintf("inspector-flash-%d-%s", c.w, c.lang))
			// The highlight sits behind the row's text, not over it.
			assert.Equal(t, "-1", eval[string](b, `getComputedStyle(document.querySelector('#inspector .flash')).zIndex`))

			// Away from the inspector: values change, nothing flashes.
			require.True(t, eval[bool](b, `(window.scrollTo(0, 0), document.getElementById('inspector').getBoundingClientRect().top > innerHeight)`), "the inspector is below the fold at the top of the page")
			time.Sleep(time.Second) // the flashes started on screen end (800 ms)
			before := eval[string](b, jsInspectorValues)
			b.waitJS(30*time.Second, "values changing off screen", jsInspectorValues+` !== `+strconv.Quote(before))
			assert.Zero(t, eval[int](b, jsFlashing), "no row animates off screen")
		})
	}
}
