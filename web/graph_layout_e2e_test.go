package web

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// jsHeadersOverlap lists what is wrong with the job graph's operator
// headers, measured with getBoundingClientRect: two headers whose boxes
// overlap, a header whose content (name, parallelism field and buttons, max
// parallelism) runs past its own box, and a header that reaches down into
// the TaskManager bands.
const jsHeadersOverlap = `(() => {
  const out = [];
  const heads = [...document.querySelectorAll('#graph .op-head')];
  const rect = (el) => el.getBoundingClientRect();
  const bandTop = Math.min(...[...document.querySelectorAll('#graph rect.band')].map((b) => rect(b).top));
  const name = (el) => el.dataset.op;
  for (let i = 0; i < heads.length; i++) {
    const a = rect(heads[i]);
    for (let k = i + 1; k < heads.length; k++) {
      const b = rect(heads[k]);
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 0.5 && h > 0.5) out.push(name(heads[i]) + ' and ' + name(heads[k]) + ' overlap by ' + Math.round(w) + ' px');
    }
    for (const part of heads[i].querySelectorAll('.op-name, .op-par, .op-par > *, .op-max, .op-chain')) {
      const r = rect(part);
      if (r.width === 0) continue;
      if (r.left < a.left - 0.5 || r.right > a.right + 0.5)
        out.push(name(heads[i]) + ': ' + part.className + ' spans ' + Math.round(r.left) + '–' + Math.round(r.right) + ', its header ' + Math.round(a.left) + '–' + Math.round(a.right));
    }
    if (heads[i].scrollWidth > heads[i].clientWidth + 1) out.push(name(heads[i]) + ': content ' + heads[i].scrollWidth + ' px wide in ' + heads[i].clientWidth);
    if (a.bottom > bandTop + 0.5) out.push(name(heads[i]) + ': reaches ' + Math.round(a.bottom - bandTop) + ' px into the TaskManager bands');
  }
  // Subtask boxes of neighbouring columns do not overlap either.
  const boxes = [...document.querySelectorAll('#graph .box-button')].map((b) => [b.dataset.task, rect(b)]);
  for (let i = 0; i < boxes.length; i++) for (let k = i + 1; k < boxes.length; k++) {
    const [an, a] = boxes[i], [bn, b] = boxes[k];
    if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5) out.push('boxes ' + an + ' and ' + bn + ' overlap');
  }
  // The edge labels under the bands keep apart.
  const labels = [...document.querySelectorAll('#graph text.edge-label, #graph text.edge-rate')].filter((t) => t.textContent !== '').map((t) => [t.textContent, rect(t)]);
  for (let i = 0; i < labels.length; i++) for (let k = i + 1; k < labels.length; k++) {
    const [an, a] = labels[i], [bn, b] = labels[k];
    if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5) out.push('edge labels ' + JSON.stringify(an) + ' and ' + JSON.stringify(bn) + ' overlap');
  }
  return out;
})()`

// jsGraphInView scrolls the page to the job graph, as a person does before
// looking at it.
const jsGraphInView = `window.scrollTo(0, document.querySelector('.panel-graph').getBoundingClientRect().top + window.scrollY - (document.querySelector('.toolbar')?.getBoundingClientRect().bottom || 0) - 8)`

// TestBrowserGraphHeadersReadable: lesson 12's job graph has two sources
// in its first column (source and rules) and six columns; at a laptop's
// 1280 px and a phone's 390 and 360 px, in English and Chinese, no operator
// header overlaps another or runs past its box, no subtask box overlaps
// another, the edge labels keep apart, and the page does not scroll
// sideways (the graph scrolls inside its own panel when it needs more room);
// the sandbox's word count at 360 px likewise.
func TestBrowserGraphHeadersReadable(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	// A busy 2-core machine under -race: room beyond newBrowser's 3 minutes.
	b := newBrowserFor(t, 10*time.Minute, nil)
	j := newJourney(b, "graph-layout")
	check := func(page string) {
		t.Helper()
		j.waitJS(30*time.Second, "the graph of "+page, `document.getElementById('workspace')?.dataset.ready === 'true' && document.querySelectorAll('#graph .op-head').length > 0 && document.querySelectorAll('#graph text.edge-label').length > 0`)
		// The layout follows the panel's width: wait for a frame after the
		// last resize.
		_, err := chromedp.Run(j.ctx, chromedp.Evaluate[bool](`new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, chromedp.EvalAwaitPromise))
		require.NoError(t, err, "wait for a frame")
		if bad := eval[[]string](j.browserEnv, jsHeadersOverlap); len(bad) > 0 {
			t.Errorf("%s: the job graph overlaps:\n  %s", page, strings.Join(bad, "\n  "))
		}
		if over := eval[[]string](j.browserEnv, jsOverflow); len(over) > 0 {
			t.Errorf("%s is wider than the window:\n  %s", page, strings.Join(over, "\n  "))
		}
		j.run(chromedp.Evaluate[chromedp.Void](jsGraphInView))
		j.window(strings.NewReplacer(" ", "-", "/", "-").Replace(page))
	}
	// One lesson page per language; the window narrows under it (the graph
	// lays itself out again for its panel's new width).
	for _, lang := range []string{"en", "zh"} {
		j.run(chromedp.EmulateViewport(1280, 800))
		j.visit("/lessons/12-broadcast-and-union-state?lang=" + lang)
		check(fmt.Sprintf("lesson 12 %s at 1280", lang))
		w := map[string]int64{"en": 360, "zh": 390}[lang]
		j.run(chromedp.EmulateViewport(w, 800))
		check(fmt.Sprintf("lesson 12 %s at %d", lang, w))
	}
	j.run(chromedp.EmulateViewport(360, 740))
	j.openLive("template=wordcount&seed=1&lang=en")
	check("sandbox en at 360")
	// The whole graph is there to scroll to: its last column inside the
	// graph's scroll width.
	if !eval[bool](j.browserEnv, `(g => [...g.querySelectorAll('.op-head')].every(h => h.offsetLeft + h.offsetWidth <= g.scrollWidth))(document.getElementById('graph'))`) {
		t.Errorf("at 360 px the graph neither fits nor scrolls inside its panel")
	}
}
