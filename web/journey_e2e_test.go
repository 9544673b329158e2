package web

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/lessons"
	"github.com/statelab/statelab/rescale"
)

// Journeys are browser tests of what a person does: they click and type
// only what a person sees, collect every uncaught exception and every failed
// request of the app's own URLs (there must be none), run axe-core on every
// page they visit, and save screenshots to $ARTIFACTS.

// axeInstall is the command that installs axe-core where the tests find it.
const axeInstall = "npm install --no-save --prefix web/testdata axe-core@4"

// axeSource returns axe-core's script: $AXE_CORE (a path to axe.min.js),
// web/testdata/node_modules or ~/node_modules. Without it the test is
// skipped, or fails under E2E=1.
func axeSource(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	var candidates []string
	if p := os.Getenv("AXE_CORE"); p != "" {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, filepath.Join(filepath.Dir(file), "testdata", "node_modules", "axe-core", "axe.min.js"))
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, "node_modules", "axe-core", "axe.min.js"))
	}
	for _, p := range candidates {
		if b, err := os.ReadFile(p); err == nil {
			return string(b)
		}
	}
	msg := "axe-core 4.x is not installed; from the repository's root run: " + axeInstall + " (or set AXE_CORE to an axe.min.js)"
	if os.Getenv("E2E") == "1" {
		t.Fatal("E2E=1 but " + msg)
	}
	t.Skip(msg)
	return ""
}

// journey is a browser tab that records what went wrong on its pages.
type journey struct {
	*browserEnv
	name string
	axe  string

	mu       sync.Mutex
	requests map[network.RequestID]string
	problems []string
}

// newJourney opens a tab of b's browser that watches for exceptions and
// failed requests.
func newJourney(b *browserEnv, name string) *journey { return openJourney(b, name, false) }

// newPerson is newJourney in a browser context of its own (its own cookies
// and storage): a second person on another machine.
func newPerson(b *browserEnv, name string) *journey { return openJourney(b, name, true) }

func openJourney(b *browserEnv, name string, isolated bool) *journey {
	b.t.Helper()
	j := &journey{name: name, requests: map[network.RequestID]string{}, axe: axeSource(b.t)}
	opts := []chromedp.ContextOption{chromedp.WithListener(j.listen)}
	if isolated {
		opts = append(opts, chromedp.WithNewBrowserContext())
	}
	ctx, cancel := chromedp.NewContext(b.ctx, opts...)
	b.t.Cleanup(cancel)
	require.NoError(b.t, chromedp.Do(ctx), "open a tab")
	j.browserEnv = &browserEnv{t: b.t, ctx: ctx, url: b.url, srv: b.srv, motion: b.motion}
	j.emulateMotion()
	b.t.Cleanup(func() {
		if p := j.problemList(); len(p) > 0 {
			b.t.Errorf("journey %s: %d problems in the browser:\n  %s", name, len(p), strings.Join(p, "\n  "))
		}
	})
	return j
}

func (j *journey) listen(ev any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch e := ev.(type) {
	case *cdpruntime.EventExceptionThrown:
		d := e.ExceptionDetails
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + d.Exception.Description
		}
		j.problems = append(j.problems, "uncaught: "+text+" at "+d.URL)
	case *network.EventRequestWillBeSent:
		j.requests[e.RequestID] = e.Request.URL
	case *network.EventResponseReceived:
		if e.Response.Status >= 400 && strings.HasPrefix(e.Response.URL, j.url) {
			j.problems = append(j.problems, fmt.Sprintf("HTTP %d from %s", e.Response.Status, e.Response.URL))
		}
	case *network.EventLoadingFailed:
		u := j.requests[e.RequestID]
		if !e.Canceled && strings.HasPrefix(u, j.url) {
			j.problems = append(j.problems, "request failed: "+u+": "+e.ErrorText)
		}
	}
}

func (j *journey) problemList() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.problems)
}

// shot saves a screenshot of the whole page, named after the journey.
func (j *journey) shot(name string) string { return j.browserEnv.shot(j.name + "-" + name) }

// window saves what the window shows (a phone's screen), named after the journey.
func (j *journey) window(name string) {
	j.t.Helper()
	buf, err := chromedp.Run(j.ctx, chromedp.CaptureScreenshot())
	require.NoError(j.t, err)
	p := filepath.Join(artifactsDir(j.t), j.name+"-"+name+".png")
	require.NoError(j.t, os.WriteFile(p, buf, 0o644))
}

// jsOverflow lists the elements that reach past the right edge of the
// viewport, innermost first, when the page scrolls sideways.
const jsOverflow = `(() => {
  const w = window.innerWidth, doc = document.documentElement;
  if (doc.scrollWidth <= w) return [];
  const out = [];
  const clipped = (el) => { for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) if (getComputedStyle(p).overflowX !== 'visible') return true; return false; };
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= w + 0.5 || clipped(el)) continue;
    if ([...el.children].some(c => c.getBoundingClientRect().right > w + 0.5)) continue;
    let path = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.classList.length ? '.' + [...el.classList].join('.') : '');
    for (let p = el.parentElement; p && p !== document.body && path.length < 120; p = p.parentElement)
      path = p.tagName.toLowerCase() + (p.id ? '#' + p.id : '') + (p.classList.length ? '.' + [...p.classList][0] : '') + ' > ' + path;
    out.push(path + ' right=' + Math.round(r.right));
    if (out.length >= 8) break;
  }
  return ['scrollWidth ' + doc.scrollWidth + ' > innerWidth ' + w, ...out];
})()`

// jsButtonsOverflow lists the visible buttons and links styled as buttons
// whose text runs past their edge ("Next lesson →" over its border).
const jsButtonsOverflow = `[...document.querySelectorAll('.button, button')].filter(el => el.offsetParent !== null && el.clientWidth > 0 &&
  el.scrollWidth > el.clientWidth + 1).map(el => (el.id ? '#' + el.id + ' ' : '') + JSON.stringify(el.textContent.trim().slice(0, 60)) + ' ' + el.scrollWidth + '>' + el.clientWidth)`

// fits checks that the page does not scroll sideways and that no button's
// text runs past its edge.
func (j *journey) fits(page string) {
	j.t.Helper()
	over := eval[[]string](j.browserEnv, jsOverflow)
	if len(over) > 0 {
		j.t.Errorf("%s is wider than the window:\n  %s", page, strings.Join(over, "\n  "))
	}
	if bad := eval[[]string](j.browserEnv, jsButtonsOverflow); len(bad) > 0 {
		j.t.Errorf("%s: text runs past its button:\n  %s", page, strings.Join(bad, "\n  "))
	}
	if cut := eval[[]string](j.browserEnv, jsSelectLabelsCut("select")); len(cut) > 0 {
		j.t.Errorf("%s: choices cut off when chosen:\n  %s", page, strings.Join(cut, "\n  "))
	}
}

// axeViolation is one failed axe rule with a few of its nodes.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Count  int      `json:"count"`
	Nodes  []string `json:"nodes"`
}

// accessible runs axe-core's WCAG 2.1 A and AA rules on the page.
func (j *journey) accessible(page string) {
	j.t.Helper()
	if !eval[bool](j.browserEnv, `typeof window.axe === 'object'`) {
		_, err := chromedp.Run(j.ctx, chromedp.Evaluate[chromedp.Void](j.axe))
		require.NoError(j.t, err, "inject axe-core")
	}
	js := `axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}, resultTypes: ['violations']})
	  .then(r => r.violations.map(v => ({id: v.id, impact: v.impact || '', help: v.help, count: v.nodes.length,
	    nodes: v.nodes.slice(0, 4).map(n => n.target.join(' ') + ' — ' + (n.failureSummary || '').replace(/\s+/g, ' ').slice(0, 220))})))`
	vs, err := chromedp.Run(j.ctx, chromedp.Evaluate[[]axeViolation](js, chromedp.EvalAwaitPromise))
	require.NoError(j.t, err, "run axe-core on %s", page)
	for _, v := range vs {
		j.t.Errorf("%s: axe %s (%s, %d nodes): %s\n    %s", page, v.ID, v.Impact, v.Count, v.Help, strings.Join(v.Nodes, "\n    "))
	}
}

// visit opens a page and waits until it has drawn what it shows.
func (j *journey) visit(path string) {
	j.t.Helper()
	j.run(chromedp.Navigate(j.url + path))
	j.waitJS(30*time.Second, "the page "+path, `document.readyState === 'complete' && (!document.getElementById('workspace') || document.getElementById('workspace').dataset.ready === 'true')`)
}

// clickUntil clicks sel until cond holds: a click on a subtask box that
// lands while the graph redraws does nothing visible, and a person clicks
// again (three clicks at most, 15 s after each).
func (j *journey) clickUntil(sel, what, cond string) {
	j.t.Helper()
	for try := 0; ; try++ {
		// A person scrolls what they click to where they see it: not under
		// the sticky toolbar, where a click lands on the toolbar instead.
		j.run(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q)?.scrollIntoView({block: 'center'})`, sel)))
		j.clickLive(sel)
		ok := j.holdsWithin(15*time.Second, cond)
		if ok {
			return
		}
		// What the page shows after the click: the connection, the toast.
		page := j.evalQuiet(jsSpeedPress)
		if try == 2 {
			j.shot("timeout-" + strings.ReplaceAll(what, " ", "-"))
			j.t.Fatalf("three clicks on %s and still not %s (%s); the page: %s", sel, what, cond, page)
		}
		j.t.Logf("click %d on %s: not %s within 15 s; the page: %s", try+1, sel, what, page)
	}
}

// TestJourneyPhoneAndLaptop opens every page at a phone's 390×844 and a
// laptop's 1280×800, in English and Chinese: no page scrolls sideways and
// axe-core finds no WCAG 2.1 AA violation. Each size and language is a
// subtest with a server and a tab of its own, run in parallel: one tab
// visiting all 136 pages one after another was the package's longest test
// (355 s under load, the others long finished).
func TestJourneyPhoneAndLaptop(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	cat, err := lessons.Default()
	require.NoError(t, err)
	// Filters for working on one page: JOURNEY_PAGES (comma-separated parts
	// of paths), JOURNEY_SIZES ("390" or "1280"), JOURNEY_LANGS ("en" or "zh").
	only := os.Getenv("JOURNEY_PAGES")
	for _, size := range [][2]int64{{390, 844}, {1280, 800}} {
		if v := os.Getenv("JOURNEY_SIZES"); v != "" && !strings.Contains(v, fmt.Sprint(size[0])) {
			continue
		}
		for _, lang := range []string{"en", "zh"} {
			if v := os.Getenv("JOURNEY_LANGS"); v != "" && !strings.Contains(v, lang) {
				continue
			}
			t.Run(fmt.Sprintf("%d-%s", size[0], lang), func(t *testing.T) {
				t.Parallel()
				phoneAndLaptop(t, cat, size, lang, only)
			})
		}
	}
}

// phoneAndLaptop visits every page at one size in one language.
func phoneAndLaptop(t *testing.T, cat *lessons.Catalog, size [2]int64, lang, only string) {
	// Every live page starts a session of its own, and ended ones linger
	// until their idle timeout: room for all of them.
	b := newBrowserFor(t, 20*time.Minute, func(c *Config) { c.MaxSessions = 200 })
	j := newJourney(b, "phone-laptop") // screenshots phone-laptop-SIZE-LANG-PAGE.png
	room, err := b.srv.CreateClassroom(ClassroomRequest{Template: "wordcount"}, b.url)
	require.NoError(t, err)
	pagesToVisit := []string{"/", "/sandbox", "/sandbox/live?template=wordcount&seed=1", "/lessons", "/course", "/teaching", "/glossary",
		"/classroom", "/join", "/join/" + room.Code, strings.TrimPrefix(room.PresenterURL, b.url), "/attach", "/performance"}
	if resp, err := http.Get(b.url + "/savepoint"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			pagesToVisit = append(pagesToVisit, "/savepoint")
		}
	}
	for _, l := range cat.Lessons {
		pagesToVisit = append(pagesToVisit, "/lessons/"+l.Slug)
	}
	j.run(chromedp.EmulateViewport(size[0], size[1]))
	for _, p := range pagesToVisit {
		if only != "" && !slices.ContainsFunc(strings.Split(only, ","), func(s string) bool { return strings.Contains(p, s) }) {
			continue
		}
		sep := "?"
		if strings.Contains(p, "?") {
			sep = "&"
		}
		j.visit(p + sep + "lang=" + lang)
		name := fmt.Sprintf("%s %s at %dx%d", p, lang, size[0], size[1])
		j.fits(name)
		j.accessible(name)
		if strings.HasPrefix(p, "/lessons/") {
			// Switching language keeps the step, but step 1 needs no jump to #step-1.
			if eval[bool](j.browserEnv, `window.statelab?.model?.ready === true && document.querySelector('.step.current')?.dataset.step === '1'`) {
				require.False(t, eval[bool](j.browserEnv, `[...document.querySelectorAll('[data-lang-link]')].some(a => a.href.endsWith('#step-1'))`), "%s: the language switch jumps to #step-1", name)
			}
		}
		// Screenshots are named by page, never by a room's code or token.
		slug := strings.Trim(strings.NewReplacer("/", "-", "?", "-", "=", "-", "&", "-").Replace(p), "-")
		switch {
		case slug == "":
			slug = "home"
		case strings.HasPrefix(p, "/join/"):
			slug = "classroom-follower"
		case strings.HasPrefix(p, "/classroom/"):
			slug = "classroom-presenter"
		}
		j.window(fmt.Sprintf("%d-%s-%s", size[0], lang, slug))
	}
}

// jsBoxesFit: every text of every subtask box ends inside the box.
const jsBoxesFit = `[...document.querySelectorAll('#graph g.box')].every(g => { const w = g.querySelector('.box-rect').getBBox().width;
  return [...g.querySelectorAll('text')].every(t => t.textContent === '' || t.getBBox().x + t.getBBox().width <= w + 0.5); })`

// jsModel reads the live view's model (only to wait and to check; every
// action goes through what the page shows).
const jsSnap = `window.statelab.model.snap`

// typeNumber replaces the number in a field by typing, as a person does:
// End, backspaces, the digits, Enter.
func (j *journey) typeNumber(sel string, n int) {
	j.t.Helper()
	j.run(chromedp.SendKeys(chromedp.CSS(sel), kb.End+"\b\b\b\b"+fmt.Sprint(n)+"\r"))
}

// jsStepsAgreeWhilePlaying reads the header's step and the timeline's,
// every 50 ms while the run plays, until they agree at three different steps
// (or 60 s pass); it returns the steps where they agreed.
const jsStepsAgreeWhilePlaying = `new Promise((done) => {
  const agreed = new Set(), t0 = Date.now();
  const f = () => {
    const s = window.statelab.model.snap;
    const m = /step (\d+)/.exec(document.getElementById('clock').textContent);
    const tl = /^step (\d+) of (\d+)$/.exec(document.getElementById('tl-pos').textContent);
    if (!s.paused && m && tl && m[1] === tl[1] && tl[1] === tl[2]) agreed.add(Number(m[1]));
    if (agreed.size >= 3 || Date.now() - t0 > 60000) done([...agreed].slice(0, 3));
    else setTimeout(f, 50);
  };
  f();
})`

// TestJourneyExplorer: a person explores the sandbox — starts one from the
// home page, crashes a TaskManager, adds one, rescales count to 4 with the
// field on its head, travels back in time and reads a story about the step
// shown, forks there, and opens the share link of the fork, which replays
// the same run.
func TestJourneyExplorer(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowserFor(t, 8*time.Minute, nil)
	j := newJourney(b, "explorer")
	j.run(chromedp.EmulateViewport(1280, 800))
	j.visit("/?lang=en")
	j.accessible("home")
	j.clickLive(`a.entry.primary`)
	j.waitJS(20*time.Second, "the sandbox chooser", `document.getElementById('sandbox-form') !== null`)
	j.accessible("sandbox chooser")
	j.clickLive(`#sandbox-form button[type=submit]`)
	j.waitJS(30*time.Second, "the live view", `document.getElementById('workspace')?.dataset.ready === 'true' && document.querySelectorAll('.box-button').length > 0`)
	for range 2 {
		j.clickLive(`#btn-faster`)
		time.Sleep(150 * time.Millisecond)
	}
	j.waitJS(60*time.Second, "every subtask running and a checkpoint", jsAllRunning+` && `+jsSnap+`.checkpoints.counts.completed >= 1`)
	j.accessible("sandbox live")
	j.shot("01-running")
	// While the run plays, the header and the timeline count the same steps:
	// read together, they show the same step at three different steps (a
	// count of other steps, 20 against 16, never would; a frame's lag only
	// delays it).
	agree, err := chromedp.Run(j.ctx, chromedp.Evaluate[[]int](jsStepsAgreeWhilePlaying, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Len(t, agree, 3, "the header's and the timeline's step while the run plays (agreed at %v)", agree)

	// Type a line into the source: the story says where it went, what it
	// waits behind, and ends when the source has read it.
	j.run(chromedp.SendKeys(chromedp.CSS(`#inject-text`), "hello flink\r"))
	j.waitJS(20*time.Second, "the typed line's story", `(t => t.includes('You typed "hello flink"') && /appended to partition \d of source's topic, at offset/.test(t))(document.getElementById('explain-body').innerText)`)
	j.shot("01b-typed-line")
	for range 3 {
		j.clickLive(`#btn-faster`)
		time.Sleep(150 * time.Millisecond)
	}
	j.waitJS(180*time.Second, "the typed line read", `document.getElementById('explain-body').innerText.includes('read your line')`)
	// …then follows it: each word to the count subtask that owns its key
	// group (as Flink's KeyGroupRangeAssignment computes it), the counts rising
	// in that subtask's state, and the checkpoint that commits them at the sink.
	maxPar := eval[int](j.browserEnv, `window.statelab.model.operator('count').maxParallelism`)
	countPar := eval[int](j.browserEnv, `window.statelab.model.operator('count').parallelism`)
	typed := eval[string](j.browserEnv, `document.getElementById('explain-body').innerText`)
	for _, w := range []string{"hello", "flink"} {
		kg := rescale.KeyGroupForString(w, maxPar)
		require.Contains(t, typed, fmt.Sprintf("%s → key group %d → count#%d", w, kg, rescale.OperatorIndexForKeyGroup(maxPar, countPar, kg)))
	}
	j.waitJS(120*time.Second, "the words counted", `/Counted: count#\d holds hello = \d+/.test(document.getElementById('explain-body').innerText)`)
	j.waitJS(180*time.Second, "the counts committed", `document.getElementById('explain-body').innerText.includes("your line's counts are in the committed output")`)
	j.shot("01c-typed-line-committed")
	// Thousands of records in and out: every subtask box's text stays inside it.
	require.True(t, eval[bool](j.browserEnv, jsBoxesFit), "a subtask box's text crosses its border")
	for range 3 {
		j.clickLive(`#btn-slower`)
		time.Sleep(150 * time.Millisecond)
	}

	// Crash a TaskManager: the job waits for a slot, and the badge says so.
	// (clicked again if a redraw swallowed the click, as a person would)
	j.clickUntil(`button[aria-label="Crash TaskManager tm-1"]`, "tm-1 lost", jsSnap+`.taskManagers.some(tm => tm.id === 'tm-1' && tm.status === 'LOST')`)
	j.waitJS(30*time.Second, "the story of the lost TaskManager", `document.getElementById('explain-body').innerText.includes('TaskManager tm-1 crashed')`)
	// Where StateLab differs from Flink here, the story says so and why.
	j.waitJS(10*time.Second, "the heartbeat simplification", `document.querySelector('#explain-body .st-simplified')?.innerText.includes('heartbeat.timeout (50 s by default)')`)
	j.waitJS(30*time.Second, "the badge waiting for resources", `document.getElementById('job-status').textContent.includes('waiting for resources: needs 2 slots, has 1')`)
	j.shot("02-taskmanager-lost")

	// Add a TaskManager: the job runs again.
	j.clickLive(`#btn-add-tm`)
	j.waitJS(90*time.Second, "every subtask running on the new TaskManager", jsAllRunning+` && `+jsSnap+`.taskManagers.length === 3`)
	j.waitJS(10*time.Second, "the badge without waiting", `!document.getElementById('job-status').textContent.includes('waiting')`)

	// Rescale count to 4 by typing into the field on its head: four slots
	// are needed, two are alive; restart tm-1 and add one more.
	j.typeNumber(`.op-head[data-op="count"] input.par-input`, 4)
	j.waitJS(60*time.Second, "the rescale waiting for slots", `document.getElementById('job-status').textContent.includes('needs 4 slots, has 2')`)
	j.shot("03-rescale-waits-for-slots")
	j.clickLive(`.tm-label button[data-focus="tm:tm-1"]`) // Restart
	j.clickLive(`#btn-add-tm`)
	j.waitJS(120*time.Second, "count at parallelism 4, running",
		`window.statelab.model.operator('count').parallelism === 4 && `+jsAllRunning)
	j.waitJS(20*time.Second, "the rescale's story", `document.getElementById('explain-body').innerText.includes('count runs with 4 subtasks')`)
	j.shot("04-count-at-4")
	head := eval[int](j.browserEnv, jsSnap+`.step`)

	// Back in time with the keyboard on the timeline: the story tells the
	// step shown, not the present.
	j.clickLive(`#btn-play`)
	j.waitJS(10*time.Second, "paused", jsSnap+`.paused`)
	// The header and the timeline count the same steps.
	j.waitJS(10*time.Second, "the header's step on the timeline", `(() => { const m = /step (\d+)/.exec(document.getElementById('clock').textContent);
	  return m && document.getElementById('tl-pos').textContent === 'step ' + m[1] + ' of ' + m[1]; })()`)
	j.run(chromedp.Focus(chromedp.CSS(`#tl-range`)), chromedp.KeyEvent(kb.Home))
	for range 3 {
		j.run(chromedp.KeyEvent(kb.PageUp))
	}
	j.waitJS(60*time.Second, "a past step on screen", `document.getElementById('timeline').classList.contains('viewing') && `+jsSnap+`.step < `+fmt.Sprint(head))
	j.waitJS(60*time.Second, "the seeks to settle", `window.statelab.timeline.tl.view === `+jsSnap+`.step && Number(document.getElementById('tl-range').value) === `+jsSnap+`.step && `+jsSnap+`.step > 0`)
	j.waitJS(30*time.Second, "the story of the step shown", `(() => { const s = `+jsSnap+`; const text = document.getElementById('explain-body').innerText;
	  return text.includes('Step ' + s.step + ', in the past') && text.includes('count ' + s.job.operators.find(o => o.id === 'count').parallelism); })()`)
	past := eval[int](j.browserEnv, jsSnap+`.step`)
	require.Less(t, past, head)
	story := eval[string](j.browserEnv, `document.getElementById('explain-body').innerText`)
	require.NotContains(t, story, "count runs with 4 subtasks", "the present's story is not beside the past")
	require.NotContains(t, eval[string](j.browserEnv, `document.getElementById('log').innerText`), "rescale of count from 2 to 4", "the event log shows nothing after the step shown")
	j.shot("05-past-step")

	// Fork here: a copy of the run up to that step, which plays on and says
	// what it is.
	old := eval[string](j.browserEnv, jsSnap+`.session`)
	j.clickLive(`#tl-fork`)
	j.waitJS(30*time.Second, "the fork's page", `new URLSearchParams(location.search).get('session') !== '`+old+`' && document.getElementById('workspace')?.dataset.ready === 'true'`)
	j.waitJS(20*time.Second, "the fork's story", `document.getElementById('explain-body').innerText.includes('This is your fork of step `+fmt.Sprint(past)+`')`)
	j.waitJS(30*time.Second, "the fork playing", `!`+jsSnap+`.paused && `+jsSnap+`.step > `+fmt.Sprint(past))
	j.accessible("fork")
	j.shot("06-fork")
	j.clickLive(`#btn-play`)
	j.waitJS(10*time.Second, "the fork paused", jsSnap+`.paused`)
	forkStep := eval[int](j.browserEnv, jsSnap+`.step`)
	forkSeed := eval[int](j.browserEnv, jsSnap+`.seed`)
	forkPar := eval[int](j.browserEnv, `window.statelab.model.operator('count').parallelism`)

	// Share link: the same run, replayed.
	j.clickLive(`#share-menu summary`)
	j.clickLive(`#share-copy`)
	j.waitJS(20*time.Second, "the share link", `!document.getElementById('share-link').hidden && document.getElementById('share-link').value.startsWith('http')`)
	link := eval[string](j.browserEnv, `document.getElementById('share-link').value`)
	j.shot("07-share-link")
	// The same menu exports the job as a Flink project: the button downloads
	// the fork's zip (the download is caught in the page, headless chromium
	// saves none), and that address answers with one.
	require.Equal(t, "Export as a Flink project (zip)", eval[string](j.browserEnv, `document.getElementById('share-flink').textContent`))
	j.run(chromedp.Evaluate[chromedp.Void](`window.__downloads = []; HTMLAnchorElement.prototype.click = function () { window.__downloads.push(this.href); }`))
	j.clickLive(`#share-flink`)
	j.waitJS(10*time.Second, "the export's download", `window.__downloads.length === 1`)
	exportURL := eval[string](j.browserEnv, `window.__downloads[0]`)
	require.True(t, strings.HasSuffix(exportURL, "/api/sessions/"+eval[string](j.browserEnv, jsSnap+`.session`)+"/export-flink"), exportURL)
	resp, err := http.Get(exportURL)
	require.NoError(t, err)
	zipped, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(zipped))
	require.Equal(t, "application/zip", resp.Header.Get("Content-Type"))
	require.True(t, bytes.HasPrefix(zipped, []byte("PK")), "a zip")
	j.run(chromedp.Navigate(link))
	j.waitJS(20*time.Second, "the replay page", `document.getElementById('replay-form') !== null`)
	j.accessible("replay page")
	j.clickLive(`#replay-form button[type=submit]`)
	j.waitJS(60*time.Second, "the shared run", `document.getElementById('workspace')?.dataset.ready === 'true' && `+jsSnap+`.step >= `+fmt.Sprint(forkStep))
	require.Equal(t, forkSeed, eval[int](j.browserEnv, jsSnap+`.seed`), "the same seed")
	require.Equal(t, forkPar, eval[int](j.browserEnv, `window.statelab.model.operator('count').parallelism`), "the same parallelism of count")
	j.accessible("shared run")
	j.shot("08-shared-run")

	// The language switch keeps the run: the same session, in Chinese.
	session := eval[string](j.browserEnv, jsSnap+`.session`)
	j.clickLive(`a[data-lang-link="zh"]`)
	j.waitJS(30*time.Second, "the run in Chinese", `document.documentElement.lang === 'zh' && document.getElementById('workspace')?.dataset.ready === 'true' && `+jsSnap+`.session === '`+session+`'`)
	j.waitJS(10*time.Second, "Chinese panels", `document.body.innerText.includes('作业图') && document.body.innerText.includes('键组')`)
	j.accessible("shared run zh")
	j.shot("09-shared-run-zh")
	// 现在 ("now") never sits on a checkpoint's number; the sink is not "sink Sink".
	j.waitJS(30*time.Second, "a checkpoint on the timeline", `document.querySelectorAll('#checkpoints text.cp-id').length > 0`)
	require.True(t, eval[bool](j.browserEnv, `(() => { const n = document.querySelector('#checkpoints text.now').getBBox();
	  return [...document.querySelectorAll('#checkpoints text.cp-id')].every(el => { const b = el.getBBox();
	    return b.x + b.width <= n.x || b.x >= n.x + n.width || b.y + b.height <= n.y || b.y >= n.y + n.height; }); })()`), "现在 overlaps a checkpoint's label")
	require.NotRegexp(t, `(?i)sink\s*sink`, eval[string](j.browserEnv, `document.querySelector('.op-head[data-op="sink"] .op-name').textContent`))
	require.True(t, eval[bool](j.browserEnv, jsBoxesFit), "a subtask box's text crosses its border")
}

const jsFollowerReady = `document.getElementById('workspace')?.dataset.ready === 'true' && document.querySelectorAll('.box-button').length > 0`

// TestJourneyTeacher: a teacher starts a classroom with the form on
// /classroom, lands on the presenter page with its code and QR code; a
// student in another browser joins by typing the code; the teacher crashes a
// TaskManager and rescales count; the student sees both, cannot control the
// run (greyed-out controls, said why), forks, tries a crash in the copy, and
// goes back to following.
func TestJourneyTeacher(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowserFor(t, 8*time.Minute, nil)
	teacher := newJourney(b, "teacher")
	teacher.run(chromedp.EmulateViewport(1280, 800))
	teacher.visit("/classroom?lang=en")
	teacher.accessible("classroom start")
	teacher.clickLive(`#classroom-form button[type=submit]`)
	teacher.waitJS(30*time.Second, "the presenter page", `document.getElementById('join-code-big') !== null && `+jsFollowerReady)
	code := eval[string](teacher.browserEnv, `document.getElementById('join-code-big').textContent`)
	require.Len(t, code, 6)
	teacher.waitJS(10*time.Second, "the QR code", `document.getElementById('join-qr').complete && document.getElementById('join-qr').naturalWidth > 100`)
	teacher.accessible("presenter")
	teacher.shot("01-presenter")

	student := newPerson(b, "student")
	student.run(chromedp.EmulateViewport(1280, 800))
	student.visit("/classroom?lang=en")
	student.run(chromedp.SendKeys(chromedp.CSS(`#join-code`), strings.ToLower(code)))
	student.clickLive(`#join-form button[type=submit]`)
	student.waitJS(30*time.Second, "the follower's view", `document.getElementById('classroom')?.dataset.mode === 'follow' && `+jsFollowerReady)
	room := eval[string](student.browserEnv, jsSnap+`.session`)
	require.Equal(t, room, eval[string](teacher.browserEnv, jsSnap+`.session`), "the student watches the teacher's run")
	teacher.waitJS(10*time.Second, "the follower count", `document.getElementById('followers').textContent.includes('1 following')`)

	// The student's controls are there, greyed out, with the reason.
	student.waitJS(10*time.Second, "greyed-out controls", `document.getElementById('btn-play').disabled && document.getElementById('btn-add-tm').disabled &&
	  [...document.querySelectorAll('.tm-label button, .op-head button, .op-head input')].every(b => b.disabled)`)
	require.Contains(t, eval[string](student.browserEnv, `document.getElementById('room-hint').innerText`), "greyed out because the presenter")
	student.accessible("follower")
	student.shot("02-follower")

	for range 2 {
		teacher.clickLive(`#btn-faster`)
		time.Sleep(150 * time.Millisecond)
	}
	teacher.waitJS(60*time.Second, "every subtask running and a checkpoint", jsAllRunning+` && `+jsSnap+`.checkpoints.counts.completed >= 1`)

	// The teacher crashes a TaskManager; the student sees it.
	teacher.clickLive(`button[aria-label="Crash TaskManager tm-1"]`)
	student.waitJS(30*time.Second, "the crash on the student's screen", `document.getElementById('explain-body').innerText.includes('The presenter crashed TaskManager tm-1') && document.querySelectorAll('#graph rect.band.lost').length === 1`)
	student.shot("03-follower-sees-crash")
	teacher.clickLive(`.tm-label button[data-focus="tm:tm-1"]`) // Restart
	teacher.waitJS(60*time.Second, "every subtask running again", jsAllRunning)

	// The teacher rescales count to 3 with the field, and adds the TaskManager it needs.
	teacher.typeNumber(`.op-head[data-op="count"] input.par-input`, 3)
	teacher.waitJS(60*time.Second, "the rescale waiting for a slot", `document.getElementById('job-status').textContent.includes('waiting for resources')`)
	teacher.clickLive(`#btn-add-tm`)
	student.waitJS(120*time.Second, "count at 3 on the student's screen", `window.statelab.model.operator('count').parallelism === 3 && `+jsAllRunning+` &&
	  document.getElementById('explain-body').innerText.includes('Rescaling count from 2 to 3')`)
	student.waitJS(10*time.Second, "still greyed out", `document.getElementById('btn-play').disabled && [...document.querySelectorAll('.op-head button, .op-head input')].every(b => b.disabled)`)
	// A click on a subtask inspects it: the crash tool is not offered.
	student.clickLive(`.box-button[data-task="count#2"]`)
	student.waitJS(10*time.Second, "count#2 in the inspector", `document.getElementById('inspect-task').value === 'count#2'`)
	require.Equal(t, 0, eval[int](student.browserEnv, jsSnap+`.counters.failovers - `+fmt.Sprint(eval[int](teacher.browserEnv, jsSnap+`.counters.failovers`))), "the student's click crashed nothing")
	student.shot("04-follower-sees-rescale")
	teacher.shot("05-presenter-rescaled")

	// Fork: the student's own copy, with working controls.
	failovers := eval[int](teacher.browserEnv, jsSnap+`.counters.failovers`)
	student.clickLive(`#btn-fork`)
	student.waitJS(30*time.Second, "the student's copy", `document.getElementById('classroom').dataset.mode === 'fork' && `+jsSnap+`.session !== '`+room+`' && !document.getElementById('btn-play').disabled`)
	student.waitJS(20*time.Second, "the fork's story", `document.getElementById('explain-body').innerText.includes('This is your fork')`)
	student.waitJS(60*time.Second, "every subtask of the copy running", jsAllRunning)
	student.clickLive(`input[name=tool][value=crash]`)
	student.waitJS(10*time.Second, "the crash tool on the boxes", `document.querySelector('.box-button[data-task="count#0"]')?.classList.contains('crash-tool')`)
	student.clickUntil(`.box-button[data-task="count#0"]`, "the student's own crash", `document.getElementById('explain-body').innerText.includes('You crashed count#0')`)
	student.accessible("fork")
	student.shot("06-fork-crash")
	require.Equal(t, failovers, eval[int](teacher.browserEnv, jsSnap+`.counters.failovers`), "the teacher's run is untouched")

	// Back to following.
	student.clickLive(`#btn-follow`)
	student.waitJS(30*time.Second, "following again", `document.getElementById('classroom').dataset.mode === 'follow' && `+jsSnap+`.session === '`+room+`' && document.getElementById('btn-play').disabled`)
	student.shot("07-following-again")

	// The student reads it in Chinese: still following, still greyed out.
	student.clickLive(`a[data-lang-link="zh"]`)
	student.waitJS(30*time.Second, "the follower in Chinese", `document.documentElement.lang === 'zh' && document.getElementById('classroom')?.dataset.mode === 'follow' && `+jsFollowerReady+` && document.getElementById('btn-play').disabled`)
	student.accessible("follower zh")
	student.shot("08-following-zh")
}

// TestBrowserFailedJobRestoresFromTheStory: with the restart strategy none,
// a crash fails the job for good; the story says why and offers what a Flink
// user does next, starting the job again from the latest retained
// checkpoint, with a button.
func TestBrowserFailedJobRestoresFromTheStory(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	j := newJourney(b, "failed-job")
	j.openLive("template=wordcount&seed=4&restart=none&lang=en")
	for range 2 {
		j.clickLive(`#btn-faster`)
		time.Sleep(150 * time.Millisecond)
	}
	j.waitJS(60*time.Second, "every subtask running and a checkpoint", jsAllRunning+` && `+jsSnap+`.checkpoints.counts.completed >= 1 && `+jsSnap+`.checkpoints.retained.length >= 1`)
	j.clickUntil(`.box-button[data-task="count#1"]`, "the crash", jsSnap+`.counters.crashes >= 1 || `+jsSnap+`.job.status !== 'RUNNING'`)
	j.waitJS(60*time.Second, "the job failed", jsSnap+`.job.status === 'FAILED'`)
	j.waitJS(20*time.Second, "the story's reason and way out", `(t => t.includes('restart strategy is none') && t.includes('failed for good'))(document.getElementById('explain-body').innerText)`)
	j.waitJS(10*time.Second, "the restore button", `[...document.querySelectorAll('#explain-body button')].some(b => b.textContent.startsWith('Restore from checkpoint'))`)
	j.accessible("failed job")
	j.shot("01-failed")
	id := eval[int](j.browserEnv, jsSnap+`.checkpoints.retained.at(-1).id`)
	require.Equal(t, fmt.Sprintf("Restore from checkpoint %d", id), eval[string](j.browserEnv, `document.querySelector('#explain-body button.restore-button').textContent`))
	j.clickLive(`#explain-body button.restore-button`)
	j.waitJS(60*time.Second, "running again from the checkpoint", jsAllRunning+` && document.getElementById('explain-body').innerText.includes('You restored checkpoint `+fmt.Sprint(id)+`')`)
	require.Contains(t, eval[string](j.browserEnv, `document.getElementById('explain-body').innerText`),
		fmt.Sprintf("the new job numbers its checkpoints from %d: CheckpointCoordinator resets", id+1), "the story says how checkpoint ids go on after the restore, as in Flink")
	j.shot("02-restored")
}

// TestBrowserForkAtFullSpeedRuns: a fork of a run at full speed plays on by
// itself (it stayed in DEPLOYING until Play was pressed) and says what it is.
func TestBrowserForkAtFullSpeedRuns(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	j := newJourney(b, "fork-full-speed")
	j.openLive("template=wordcount&seed=6&lang=en")
	j.clickLive(`#btn-mode-live`)
	j.waitJS(30*time.Second, "full speed with output", jsSnap+`.driver === 'live' && `+jsSnap+`.sinks[0].committed > 0`)
	old := eval[string](j.browserEnv, jsSnap+`.session`)
	j.clickLive(`#tl-fork`)
	j.waitJS(30*time.Second, "the fork's page", `new URLSearchParams(location.search).get('session') !== '`+old+`' && document.getElementById('workspace')?.dataset.ready === 'true'`)
	j.waitJS(20*time.Second, "the fork's story", `document.getElementById('explain-body').innerText.includes('This is your fork')`)
	j.waitJS(60*time.Second, "the fork running on its own", `!`+jsSnap+`.paused && `+jsAllRunning)
	j.shot("01-fork-running")
}

// jsBrokenWords lists the table headers of the source partitions whose
// words are split across lines ("Checkpoin / ted"): each word's characters
// must sit on one line. English words are split at spaces; a Chinese header
// at its spaces and zero-width spaces (the breaks the catalogue allows).
const jsBrokenWords = `(() => {
  const out = [];
  for (const th of document.querySelectorAll('.partitions thead th')) {
    const node = [...th.childNodes].find((n) => n.nodeType === 3);
    if (!node) continue;
    const text = node.textContent;
    const re = /[^ \u200b]+/g;
    let m;
    while ((m = re.exec(text))) {
      const r = document.createRange();
      r.setStart(node, m.index);
      r.setEnd(node, m.index + m[0].length);
      const tops = new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top)));
      if (tops.size > 1) out.push(JSON.stringify(m[0]) + ' on ' + tops.size + ' lines');
    }
    if (th.scrollWidth > th.clientWidth + 1) out.push(JSON.stringify(text) + ' wider than its cell: ' + th.scrollWidth + '>' + th.clientWidth);
  }
  // Body cells keep their names and figures whole too: a cell's text may
  // break at a space, never inside "source#0" or "5,000".
  for (const td of document.querySelectorAll('.partitions tbody td')) {
    if (td.offsetParent === null) continue;
    const w = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
    for (let node; (node = w.nextNode());) {
      const re = /[^ \u200b]+/g;
      let m;
      while ((m = re.exec(node.textContent))) {
        const r = document.createRange();
        r.setStart(node, m.index);
        r.setEnd(node, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top)));
        if (tops.size > 1) out.push('cell ' + JSON.stringify(m[0]) + ' on ' + tops.size + ' lines');
      }
    }
  }
  for (const table of document.querySelectorAll('.partitions')) {
    const box = table.parentElement.getBoundingClientRect(), r = table.getBoundingClientRect();
    if (r.right > box.right + 0.5) out.push('the table reaches ' + Math.round(r.right) + ' px, past its panel at ' + Math.round(box.right) + ' px (widths ' + [...table.querySelectorAll('thead th')].map((th) => Math.round(th.getBoundingClientRect().width)).join(', ') + ')');
  }
  return out;
})()`

// TestBrowserSourceHeadersKeepWords: at a narrow phone's 360 px and a
// laptop's 1280 px, in English and Chinese, the source partitions table's
// headers ("Checkpoint offset", 检查点偏移量) break between words, never inside one,
// the cells keep "source#0" and "32 / 5,000" whole, the table fits its panel,
// and the page does not scroll sideways.
func TestBrowserSourceHeadersKeepWords(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	j := newJourney(b, "headers")
	for _, width := range []int64{360, 1280} {
		for _, lang := range []string{"en", "zh"} {
			j.run(chromedp.EmulateViewport(width, 800))
			j.openLive("template=wordcount&seed=1&lang=" + lang)
			j.waitJS(20*time.Second, "the source partitions table", `document.querySelectorAll('.partitions thead th').length === 5`)
			name := fmt.Sprintf("live %s at %d px", lang, width)
			heads := eval[[]string](j.browserEnv, `[...document.querySelectorAll('.partitions thead th')].map((th) => th.textContent)`)
			require.Contains(t, strings.Join(heads, "|"), map[string]string{"en": "Checkpoint offset", "zh": "检查点"}[lang], name)
			if broken := eval[[]string](j.browserEnv, jsBrokenWords); len(broken) > 0 {
				t.Errorf("%s: headers break inside a word:\n  %s", name, strings.Join(broken, "\n  "))
			}
			j.fits(name)
			// The table's top just under the sticky toolbar.
			j.run(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.querySelector('.panel-sources').getBoundingClientRect().top + window.scrollY - (document.querySelector('.toolbar')?.getBoundingClientRect().bottom || 0) - 8)`))
			j.window(fmt.Sprintf("%d-%s-sources", width, lang))
		}
	}
}

// predict answers the current step's "predict first" card as a person
// does: picks the choice and presses the card's commit button.
func predict(answer string) learnerAct {
	return func(j *journey) {
		n := eval[int](j.browserEnv, jsLessonState+`.lesson.step`)
		card := fmt.Sprintf(`.steps .step[data-step="%d"] form.predict`, n)
		j.waitJS(20*time.Second, "step's prediction card", fmt.Sprintf(`(f => !!f && !f.querySelector('.predict-commit').disabled)(document.querySelector(%q))`, card))
		j.clickLive(fmt.Sprintf(`%s input[value=%q]`, card, answer))
		j.clickLive(card + ` .predict-commit`)
		j.waitJS(20*time.Second, "the answer committed", fmt.Sprintf(`!document.querySelector(%q).hidden`, card+` .predict-committed`))
	}
}

// predictedRight checks that step n's card, once the step is done, shows
// the learner's answer as right.
func (j *journey) predictedRight(n int) {
	j.t.Helper()
	card := fmt.Sprintf(`.steps .step[data-step="%d"] form.predict`, n)
	j.waitJS(20*time.Second, fmt.Sprintf("step %d's answer revealed", n), fmt.Sprintf(`!document.querySelector(%q).hidden`, card+` .predict-result`))
	require.True(j.t, eval[bool](j.browserEnv, fmt.Sprintf(`!document.querySelector(%q).hidden && document.querySelector(%q).hidden`,
		card+` .predict-right`, card+` .predict-wrong`)), "step %d: the answer %q is confirmed right", n, eval[string](j.browserEnv, fmt.Sprintf(`document.querySelector(%q).textContent`, card+` .predict-mine`)))
}

// TestJourneyLessonLocalRecoveryByHand: a learner completes lesson 15
// (task-local recovery, state.backend.local-recovery) through the visible
// controls only: waits for two checkpoints, predicts and crashes count#0
// with its subtask box, then predicts and crashes tm-1 with its Crash
// button. The predictions follow Flink's rule, not the engine: a restart on
// the same TaskManager reads the local copy (TaskLocalStateStoreImpl keeps
// it on the TaskManager's disk); a lost TaskManager takes its copies with
// it and the restore reads checkpoint storage.
func TestJourneyLessonLocalRecoveryByHand(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowserFor(t, 10*time.Minute, nil)
	j := newJourney(b, "by-hand-15")
	j.run(chromedp.EmulateViewport(1280, 800))
	took := j.learnAt(learnerLesson{"15-local-recovery", "en", []learnerAct{
		nil,
		then(predict(lessons.Yes), crashSubtask("count#0")),
		func(j *journey) {
			j.predictedRight(2)
			predict(lessons.No)(j)
			crashTaskManager("tm-1")(j)
		},
	}}, 16)
	j.predictedRight(3)
	j.window("15-predictions")
	t.Logf("lesson 15 by hand: %s", took)
}

// jsToolbarRows counts the rows the live view's toolbar wraps into: its
// visible parts, grouped by their top edge.
const jsToolbarRows = `(() => { const tops = [...document.querySelectorAll('.toolbar > *')].filter(e => e.offsetParent !== null)
  .map(e => e.getBoundingClientRect().top).sort((a, b) => a - b);
  return tops.reduce((n, y, i) => n + (i > 0 && y - tops[i - 1] > 12 ? 1 : 0), tops.length ? 1 : 0); })()`

// jsTMLabelsCramped lists what does not fit in the job graph's TaskManager
// column: a label's text or button past its column or clipped, a label
// reaching into the first subtask box or past the bottom of its band, or the
// band's title running into its state line.
const jsTMLabelsCramped = `(() => { const out = [];
  const bands = [...document.querySelectorAll('#graph rect.band')], titles = [...document.querySelectorAll('#graph text.band-title')];
  const firstBox = Math.min(...[...document.querySelectorAll('#graph .box-button')].map(b => b.getBoundingClientRect().left));
  [...document.querySelectorAll('#graph .tm-label')].forEach((lab, i) => {
    const r = lab.getBoundingClientRect(), band = bands[i].getBoundingClientRect(), title = titles[i].getBoundingClientRect();
    const name = titles[i].textContent;
    if (r.right > firstBox + 0.5) out.push(name + ': its column ends at ' + Math.round(r.right) + ', the first box begins at ' + Math.round(firstBox));
    if (title.bottom > r.top + 0.5) out.push(name + ': the title runs into the state line');
    for (const el of lab.querySelectorAll(':scope > *')) {
      const q = el.getBoundingClientRect(), what = name + ' ' + JSON.stringify(el.textContent);
      if (q.right > r.right + 0.5) out.push(what + ' runs past its column (' + Math.round(q.right - r.right) + ' px)');
      if (el.scrollWidth > el.clientWidth + 1) out.push(what + ' is cut (' + el.scrollWidth + ' > ' + el.clientWidth + ')');
      if (q.bottom > band.bottom + 0.5) out.push(what + ' runs past the bottom of its band');
    }
  });
  return out; })()`

// TestBrowserToolbarAndTaskManagerColumnFit: at 1280×800 the live view's
// toolbar takes at most two rows, in the sandbox and beside a lesson's text
// with the record box's choice of source (lesson 12 has two sources), in
// English and Chinese; on phones (360×740, 390×844) the job graph's
// TaskManager column holds its labels — a lost TaskManager's Restart and
// the waiting subtasks' "Add TaskManager" too — in both languages.
func TestBrowserToolbarAndTaskManagerColumnFit(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowserFor(t, 8*time.Minute, nil)
	j := newJourney(b, "fit")
	j.run(chromedp.EmulateViewport(1280, 800))
	for _, lang := range []string{"en", "zh"} {
		for _, p := range []string{"/sandbox/live?template=wordcount&seed=1", "/lessons/12-broadcast-and-union-state?x=1"} {
			j.visit(p + "&lang=" + lang)
			if strings.HasPrefix(p, "/lessons/") {
				j.waitJS(30*time.Second, "the choice of source", `!document.getElementById('inject-source').hidden`)
			}
			name := fmt.Sprintf("%s %s", strings.SplitN(p, "?", 2)[0], lang)
			rows := eval[int](j.browserEnv, jsToolbarRows)
			j.window(fmt.Sprintf("toolbar-1280-%s-%s", lang, strings.Trim(strings.ReplaceAll(strings.SplitN(p, "?", 2)[0], "/", "-"), "-")))
			require.LessOrEqual(t, rows, 2, "%s: the toolbar wraps into %d rows at 1280×800", name, rows)
			j.fits(name)
		}
	}
	for _, size := range [][2]int64{{360, 740}, {390, 844}} {
		for _, lang := range []string{"en", "zh"} {
			j.run(chromedp.EmulateViewport(size[0], size[1]))
			j.visit("/sandbox/live?template=wordcount&seed=1&lang=" + lang)
			j.waitJS(60*time.Second, "every subtask running", jsAllRunning)
			name := fmt.Sprintf("%dx%d %s", size[0], size[1], lang)
			require.Empty(t, eval[[]string](j.browserEnv, jsTMLabelsCramped), "%s: the TaskManager column", name)
			// tm-1 lost: its band says so and offers Restart; the subtasks
			// it ran wait in a band of their own with "Add TaskManager".
			j.clickUntil(`button[data-focus="tm:tm-1"]`, "tm-1 lost", jsSnap+`.taskManagers.some(m => m.id === 'tm-1' && m.status === 'LOST')`)
			j.waitJS(60*time.Second, "the waiting subtasks' band", `document.querySelectorAll('#graph .tm-label').length === 3 && !!document.querySelector('#graph .tm-label button:not([data-focus])')`)
			j.run(chromedp.Evaluate[chromedp.Void](`document.getElementById('graph').scrollIntoView({block: 'start', behavior: 'instant'})`))
			j.window(fmt.Sprintf("tm-column-%d-%s", size[0], lang))
			require.Empty(t, eval[[]string](j.browserEnv, jsTMLabelsCramped), "%s with tm-1 lost: the TaskManager column", name)
			j.fits(name)
		}
	}
}

// TestBrowserSpeedPressWhileReconnecting: a busy machine drops a browser
// that falls behind the event stream, and the page reconnects. A person who
// presses the faster button meanwhile gets the faster run once the page is
// connected again, with that one press. The test stands in for the network
// only: it closes the page's socket and holds the reconnection until the
// press has been made; the press itself is a click on the button.
func TestBrowserSpeedPressWhileReconnecting(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	j := newJourney(b, "speed-reconnect")
	j.visit("/sandbox/live?template=wordcount&seed=1&lang=en")
	require.Equal(t, 1, eval[int](j.browserEnv, jsSnap+`.speed`), "the run starts at 1×")
	j.run(chromedp.Evaluate[chromedp.Void](`(() => { const c = window.statelab.conn; const open = c.open.bind(c);
	  c.open = () => { window.__reopen = () => { c.open = open; open(); }; }; c.ws.close(); })()`))
	j.waitJS(30*time.Second, "the page disconnected", `window.statelab.conn.ws.readyState === 3 && typeof window.__reopen === 'function'`)
	j.clickLive(`#btn-faster`)
	j.run(chromedp.Evaluate[chromedp.Void](`window.__reopen()`))
	j.waitJS(time.Minute, "connected again", `window.statelab.conn.ws.readyState === 1`)
	j.waitJS(time.Minute, "the run at 2× after one press", jsSnap+`.speed === 2 && document.getElementById('speed').textContent === '2×'`)
	j.window("after-reconnect")
}
