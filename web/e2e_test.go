package web

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Browser tests drive Debian's chromium through chromedp. They are skipped
// when no browser is installed, unless E2E=1 (CI) makes a missing browser
// a failure. Screenshots go to $ARTIFACTS (default: <repo>/artifacts/web).

func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func artifactsDir(t *testing.T) string {
	dir := os.Getenv("ARTIFACTS")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "artifacts", "web")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// The package's browser tests share one chromium (started by the first
// that needs it, ended by TestMain): starting chromium took a second or two
// of each test's time. Each test gets a tab in a browser context of its
// own, so nothing of one test's cookies, storage or cache reaches another,
// and tabs are safe to drive at the same time: a browser test that needs
// nothing of the machine to itself (no frame-rate or timing figure) may
// call t.Parallel() and run beside another one; most of a journey's time
// is spent waiting for a run at the teaching pace.
var browser struct {
	mu     sync.Mutex
	root   context.Context // a context whose browser runs until closeBrowser
	cancel func()
	dir    string
}

// sharedBrowser returns the context of the package's browser, starting it
// (again, if it has died) with the chromium at path.
func sharedBrowser(path string) (context.Context, error) {
	browser.mu.Lock()
	defer browser.mu.Unlock()
	if browser.root != nil && browser.root.Err() == nil {
		return browser.root, nil
	}
	closeBrowserLocked()
	dir, err := os.MkdirTemp("", "statelab-chromium-")
	if err != nil {
		return nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Tabs of background tests keep their timers and frames.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.UserDataDir(dir),
		// A test's tab opens in a window of its own, whose page area is
		// 87 px less than the window (the browser's first tab's was 143
		// px less): 1440 x 857, the page a browser of 1440 x 1000 gave
		// each test before.
		chromedp.WindowSize(1440, 944),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	browser.root, browser.dir = ctx, dir
	browser.cancel = func() {
		cancelCtx()
		cancelAlloc()
	}
	if err := chromedp.Do(ctx); err != nil {
		closeBrowserLocked()
		return nil, err
	}
	return ctx, nil
}

// closeBrowser ends the package's browser, if it runs.
func closeBrowser() {
	browser.mu.Lock()
	defer browser.mu.Unlock()
	closeBrowserLocked()
}

func closeBrowserLocked() {
	if browser.cancel != nil {
		browser.cancel()
	}
	if browser.dir != "" {
		_ = os.RemoveAll(browser.dir)
	}
	browser.root, browser.cancel, browser.dir = nil, nil, ""
}

type browserEnv struct {
	t   *testing.T
	ctx context.Context
	url string
	srv *Server
	// motion: the tab's page is drawn with motion (see withMotion); a tab
	// opened from it (tab, newJourney) is drawn as it is.
	motion bool
}

// Every test's tab asks for reduced motion (the media feature
// prefers-reduced-motion: reduce, which the pages honour: dom.js
// reducedMotion) unless its test calls withMotion. Records travelling as
// dots along the job graph's channels were a third of the CPU a live page
// cost headless chromium (5.2 s of CPU in 10 s of a live word count, 3.7 s
// with reduced motion; issue 16's notes), and the package's browser tests
// are bound by that CPU. What moves is tested with motion: the dots
// (TestBrowserHomeSandboxAndJobGraph, TestBrowserGraphMovesRecordsOnlyOnScreen),
// the inspector's flashes, the frame-rate tests and the site journey;
// TestBrowserReducedMotion tests what a page does without them.
func (b *browserEnv) emulateMotion() {
	b.t.Helper()
	v := "reduce"
	if b.motion {
		v = "no-preference"
	}
	_, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: v}}})
	require.NoError(b.t, err, "emulate prefers-reduced-motion: %s", v)
}

// withMotion has b's tab drawn with motion, as a browser that asks for no
// reduced motion draws it; it returns b.
func (b *browserEnv) withMotion() *browserEnv {
	b.t.Helper()
	b.motion = true
	b.emulateMotion()
	return b
}

// figureTest lets a test that reports a speed figure (frames per second)
// run beside the other browser tests, unless FIGURES=1 asks for its figure
// on a machine it has to itself: then it runs before the parallel tests, the
// only test of its package running. Run alone in the serial phase, the two
// frame-rate tests kept one core of two idle for half a minute of every
// package run (the serial phase used 22 % of the CPU), while `go test ./...`
// ran other packages beside them anyway; the figures in the notes come from
// a run with FIGURES=1 and -run naming them.
func figureTest(t *testing.T) {
	if os.Getenv("FIGURES") != "1" {
		t.Parallel()
	}
}

func newBrowser(t *testing.T) *browserEnv { return newBrowserWith(t, nil) }

// A tab lives for up to 8 minutes: it bounds a test that hangs, not one
// that is slow because the machine is busy.
func newBrowserWith(t *testing.T, mod func(*Config)) *browserEnv {
	t.Helper()
	return newBrowserFor(t, 8*time.Minute, mod)
}

// newBrowserFor is newBrowserWith for a test that may take up to d.
func newBrowserFor(t *testing.T, d time.Duration, mod func(*Config)) *browserEnv {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("E2E") == "1" {
			t.Fatal("E2E=1 but no chromium found; install it: apt-get install -y --no-install-recommends chromium")
		}
		t.Skip("no chromium; set E2E=1 to require it")
	}
	// The server's log goes to a buffer the test prints when it fails: a
	// journey that times out on a busy machine then says what the server
	// did (a refused command, a reset, a lesson replay).
	serverLog := &testLog{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log, last %d lines:\n%s", testLogLines, serverLog.tail())
		}
	})
	logger := slog.New(slog.NewTextHandler(serverLog, nil))
	cfg := Config{DataDir: t.TempDir(), Engines: NewEngine(logger), Logger: logger}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := New(cfg)
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		_ = srv.Close()
	})
	root, err := sharedBrowser(path)
	require.NoError(t, err, "start chromium")
	// A tab of the package's browser in a browser context of its own: its
	// own cookies, storage and cache, as a browser of its own had them.
	ctx, cancelCtx := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
	ctx, cancelTimeout := context.WithTimeout(ctx, d)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
	})
	require.NoError(t, chromedp.Do(ctx), "open a tab")
	b := &browserEnv{t: t, ctx: ctx, url: hs.URL, srv: srv}
	b.emulateMotion()
	return b
}

// testLogLines is how many of the server's last log lines a failed browser
// test prints.
const testLogLines = 80

// testLog keeps the server's last testLogLines log lines.
type testLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.Split(strings.TrimRight(string(p), "\n"), "\n")...)
	if n := len(l.lines); n > testLogLines {
		l.lines = append(l.lines[:0:0], l.lines[n-testLogLines:]...)
	}
	return len(p), nil
}

func (l *testLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (b *browserEnv) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, actions...))
}

func (b *browserEnv) shot(name string) string {
	b.t.Helper()
	buf, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	p := filepath.Join(artifactsDir(b.t), name+".png")
	require.NoError(b.t, os.WriteFile(p, buf, 0o644))
	b.t.Logf("screenshot %s", p)
	return p
}

// clickLive clicks the element sel selects, as a person does (mouse events at
// its place), and makes sure the click reached it. The live views redraw: a
// node found by a query can be replaced before the click reaches it ("Could
// not find node with given id"), a press and a release can land on two
// copies of a button (no click on either), and on a busy machine one click
// can take longer than any short timeout — after which a blind retry would
// click twice (a TaskManager's crash button becomes its restart button). So
// the page notes where each click lands (jsClickWatch); an attempt is
// repeated only when its click did not reach sel, for up to clickPatience.
func (b *browserEnv) clickLive(sel string) {
	b.t.Helper()
	deadline := time.Now().Add(clickPatience)
	for attempt := 1; ; attempt++ {
		token := fmt.Sprintf("%d-%d", time.Now().UnixNano(), attempt)
		watched := b.evalQuiet(fmt.Sprintf(jsClickWatch, strconv.Quote(token), strconv.Quote(sel))) == "armed"
		// A person scrolls the target into the middle of the window: at its
		// edge a sticky toolbar may cover it (a click on a subtask's box then
		// pressed Trigger checkpoint instead).
		b.evalQuiet(fmt.Sprintf(`document.querySelector(%s)?.scrollIntoView({block: 'center', inline: 'nearest'}), 'ok'`, strconv.Quote(sel)))
		ctx, cancel := context.WithTimeout(b.ctx, clickAttempt)
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
		cancel()
		landed := "unknown"
		if watched {
			landed = b.clickLanded(token, err)
		}
		switch {
		case landed == "hit" || landed == "left":
			return // reached sel, or the page it was on navigated away
		case err == nil && landed == "unknown":
			return // not watched (the page was changing): as before
		}
		if time.Now().After(deadline) || b.ctx.Err() != nil {
			b.shot("click-failed")
			b.t.Fatalf("click %s: %d attempts in %s; the last: %v, the click %s", sel, attempt, clickPatience, err, landed)
		}
		b.t.Logf("click %s, attempt %d: %v; the click %s; clicking again", sel, attempt, err, landed)
		time.Sleep(200 * time.Millisecond)
	}
}

// clickAttempt bounds one attempt of clickLive (a query, a scroll and two
// mouse events: well under a second on an idle machine, several seconds at a
// load of 35); clickPatience bounds all of them.
const (
	clickAttempt  = 30 * time.Second
	clickPatience = 2 * time.Minute
)

// jsClickWatch (token, selector) makes the page note where its next click
// lands in window.__clickWatch: "hit" on an element the selector selects or
// inside one, else what it hit. The listener runs first (window, capture).
const jsClickWatch = `(() => {
  if (!window.__clickWatchOn) {
    window.addEventListener('click', (e) => {
      const w = window.__clickWatch;
      if (!w || w.got) return;
      const el = e.target instanceof Element ? e.target : null;
      w.got = el && el.closest(w.sel) ? 'hit' : 'landed on ' + (el ? el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '') : 'nothing');
    }, true);
    window.__clickWatchOn = true;
  }
  window.__clickWatch = {token: %s, sel: %s, got: ''};
  return 'armed';
})()`

// clickLanded reads where the click watched under token landed: "hit", what
// it landed on instead, "left" when the page is another document now (a link
// or a form was followed), or "did not arrive". err is the attempt's: a
// click whose mouse events were all sent (nil) has been handled by then or
// just after; one cut short by its timeout may still arrive, so that is
// waited for a while; one that failed before its events (the node was
// replaced) will not.
func (b *browserEnv) clickLanded(token string, err error) string {
	var wait time.Duration
	switch {
	case err == nil:
		wait = 2 * time.Second
	case errors.Is(err, context.DeadlineExceeded):
		wait = 10 * time.Second
	}
	js := fmt.Sprintf(`(w => !w || w.token !== %s ? 'left' : (w.got || 'did not arrive'))(window.__clickWatch)`, strconv.Quote(token))
	for end := time.Now().Add(wait); ; time.Sleep(100 * time.Millisecond) {
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
		if err != nil {
			got = "left" // the document went away under the evaluation
		}
		if got != "did not arrive" || time.Now().After(end) {
			return got
		}
	}
}

// evalQuiet evaluates a JavaScript expression for its string value; "" on
// an error (a page in the middle of navigating).
func (b *browserEnv) evalQuiet(expr string) string {
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		return ""
	}
	return v
}

// eval evaluates a JavaScript expression and decodes its value.
func eval[T any](b *browserEnv, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	require.NoError(b.t, err, expr)
	return v
}

// waitJS polls a JavaScript boolean expression until it holds.
//
// d is raised to at least waitFloor: the bound decides only how long a
// failing test takes, never whether a passing one passes on a busy machine
// (at a load of 60 a follower's count took longer than the 10 s a test
// gave it).
func (b *browserEnv) waitJS(d time.Duration, what, expr string) {
	b.t.Helper()
	d = max(d, waitFloor)
	deadline := time.Now().Add(d)
	for {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.shot("timeout-" + strings.NewReplacer(" ", "-", "/", "-", "?", "-", "&", "-", "=", "-").Replace(what))
			b.t.Fatalf("timed out after %s waiting for %s (%s); last error %v", d, what, expr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// holdsWithin polls a JavaScript boolean expression in the page every
// 200 ms until it holds (true) or d has passed (false): for a test that
// acts again when its first act did not show, as a person would.
func (b *browserEnv) holdsWithin(d time.Duration, expr string) bool {
	b.t.Helper()
	ok, _ := chromedp.Run(b.ctx, chromedp.Evaluate[bool](fmt.Sprintf(`new Promise(r => { const t0 = Date.now(); const f = () => {
	  if (%s) r(true); else if (Date.now() - t0 > %d) r(false); else setTimeout(f, 200); }; f(); })`, expr, d.Milliseconds()), chromedp.EvalAwaitPromise))
	return ok
}

// waitFloor is the least waitJS waits for a condition.
const waitFloor = time.Minute

// openLive opens a sandbox live view and waits for its first snapshot.
func (b *browserEnv) openLive(query string) {
	b.t.Helper()
	b.run(chromedp.Navigate(b.url + "/sandbox/live?" + query))
	b.waitJS(20*time.Second, "the first snapshot", `document.getElementById('workspace')?.dataset.ready === 'true' && document.querySelectorAll('.box-button').length > 0`)
}

const jsAllRunning = `(() => { const s = window.statelab?.model?.snap; if (!s || s.job.status !== 'RUNNING') return false;
  return s.job.operators.every(o => o.subtasks.every(t => t.status === 'RUNNING')); })()`

func TestBrowserHomeSandboxAndJobGraph(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	// Records move as dots: the page is drawn with motion.
	b := newBrowser(t).withMotion()
	b.run(chromedp.Navigate(b.url + "/?lang=en"))
	title, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS("h1")))
	require.NoError(t, err)
	assert.Contains(t, title, "Flink")
	b.shot("01-home")

	b.run(chromedp.Click(chromedp.CSS(`a.entry.primary`)), chromedp.WaitVisible(chromedp.CSS(`#sandbox-form`)))
	b.shot("02-sandbox-chooser")
	// Only the chosen template's parallelism fields are enabled.
	assert.Equal(t, 3, eval[int](b, `document.querySelectorAll('.template-par input:not([disabled])').length`))
	b.clickLive(`#sandbox-form button[type=submit]`)
	b.waitJS(20*time.Second, "the live view", `document.getElementById('workspace')?.dataset.ready === 'true'`)
	b.waitJS(20*time.Second, "every subtask running", jsAllRunning)
	// word count: source 2, tokenizer 2, count 2, sink 1.
	assert.Equal(t, 7, eval[int](b, `document.querySelectorAll('.box-button').length`))
	assert.Equal(t, 7, eval[int](b, `document.querySelectorAll('#graph svg g.box').length`))
	assert.Equal(t, 2, eval[int](b, `document.querySelectorAll('.tm-label').length`), "two TaskManager bands")
	assert.Greater(t, eval[int](b, `document.querySelectorAll('#graph path.chan').length`), 6)
	// The URL now names the session, so a reload or a second viewer joins it.
	loc := eval[string](b, `location.search`)
	assert.Contains(t, loc, "session=")
	b.waitJS(20*time.Second, "records moving", `document.querySelectorAll('#graph .packet').length > 0`)
	b.shot("03-live-wordcount")
}

func TestBrowserCrashSubtaskRestartsAndCountsContinue(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.openLive("template=wordcount&seed=7&interval=200ms&lang=en")
	// Faster, through the speed buttons: 1 -> 2 -> 4 -> 8; input remains
	// for a minute or so at this pace, so the counts can continue.
	for range 3 {
		b.clickLive(`#btn-faster`)
	}
	b.waitJS(10*time.Second, "speed 8", `window.statelab.model.snap.speed === 8`)
	b.waitJS(60*time.Second, "a completed checkpoint and committed output",
		`window.statelab.model.snap.checkpoints.counts.completed >= 1 && window.statelab.model.snap.sinks[0].committed > 0`)
	b.waitJS(20*time.Second, "every subtask running", jsAllRunning)
	before := eval[int](b, `window.statelab.model.snap.sinks[0].committed`)

	// Click the subtask: the default tool crashes it.
	b.clickLive(`.box-button[data-task="count#1"]`)
	b.waitJS(20*time.Second, "the failover story", `document.querySelector('#explain-body .episode.failover') !== null`)
	b.shot("04-crash-failover")
	b.waitJS(60*time.Second, "a restore from a checkpoint", `window.statelab.model.snap.counters.restores >= 1`)
	b.waitJS(60*time.Second, "every subtask running again", jsAllRunning)
	b.waitJS(60*time.Second, "output beyond the crash", fmt.Sprintf(`window.statelab.model.snap.sinks[0].committed > %d`, before))
	restored := eval[int](b, `window.statelab.model.snap.job.operators.find(o => o.id === 'count').subtasks[1].restoredFrom`)
	assert.Greater(t, restored, 0, "count#1 restored from a checkpoint")
	assert.Equal(t, 0, eval[int](b, `window.statelab.model.snap.sinks[0].comparison.duplicateRecords`), "exactly-once: no duplicates after the failover")
	story := eval[string](b, `document.getElementById('explain-body').innerText`)
	assert.Contains(t, story, "count#1 failed")
	assert.Contains(t, story, "Running again")
	assert.GreaterOrEqual(t, eval[int](b, `document.querySelectorAll('#checkpoints path.restore').length`), 1, "a restore marker on the timeline")
	b.shot("05-crash-recovered")

	// Keyboard: Tab reaches the subtask buttons; Enter on one crashes it.
	// (Focus by script: the graph may rebuild its buttons between a query
	// and a focus by node id.)
	b.waitJS(10*time.Second, "focus on tokenizer#0", `(() => { const el = document.querySelector('.box-button[data-task="tokenizer#0"]'); el?.focus(); return document.activeElement === el && el !== null; })()`)
	b.run(chromedp.KeyEvent("\r"))
	b.waitJS(20*time.Second, "the second failover", `window.statelab.model.snap.counters.failovers >= 2 || window.statelab.model.snap.counters.restores >= 2`)
}

func TestBrowserRescaleShowsThreeOwnersOnFlinksRanges(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.openLive("template=wordcount&seed=11&interval=300ms&taskManagers=2&slots=2&lang=en")
	for range 4 {
		b.clickLive(`#btn-faster`)
		time.Sleep(150 * time.Millisecond)
	}
	b.waitJS(30*time.Second, "every subtask running", jsAllRunning)
	b.clickLive(`.op-head[data-op="count"] button[aria-label="Rescale count to 3"]`)
	b.waitJS(90*time.Second, "count at parallelism 3, running",
		`window.statelab.model.snap.job.operators.find(o => o.id === 'count').parallelism === 3 && `+jsAllRunning)
	// Flink's ranges for max parallelism 128 over 3 subtasks:
	// [ceil(i*128/3), floor(((i+1)*128-1)/3)] = [0,42], [43,85], [86,127].
	b.waitJS(10*time.Second, "the legend with three owners", `document.querySelectorAll('.strip-legend li').length === 3`)
	legend := eval[[]string](b, `[...document.querySelectorAll('.strip-legend li')].map(li => li.innerText)`)
	require.Len(t, legend, 3)
	assert.Contains(t, legend[0], "count#0")
	assert.Contains(t, legend[0], "0–42")
	assert.Contains(t, legend[1], "43–85")
	assert.Contains(t, legend[2], "86–127")
	// The strip's 128 cells carry three colours in those ranges.
	fills := eval[[]string](b, `[...document.querySelectorAll('#strip rect.kg')].map(r => r.getAttribute('fill'))`)
	require.Len(t, fills, 128)
	for _, r := range [][2]int{{0, 42}, {43, 85}, {86, 127}} {
		for g := r[0]; g <= r[1]; g++ {
			assert.Equal(t, fills[r[0]], fills[g], "key group %d coloured as its range", g)
		}
	}
	assert.NotEqual(t, fills[0], fills[43])
	assert.NotEqual(t, fills[43], fills[86])
	assert.NotEqual(t, fills[0], fills[86])
	story := eval[string](b, `document.getElementById('explain-body').innerText`)
	assert.Contains(t, story, "Rescaling count from 2 to 3")
	b.shot("06-rescale-2-to-3")
	// The key box answers with Flink's arithmetic: "flink".hashCode() =
	// ((((102*31+108)*31+105)*31+110)*31+107) = 97520992.
	b.run(chromedp.SendKeys(chromedp.CSS(`#key-input`), "flink"))
	b.waitJS(5*time.Second, "the key box's answer", `document.getElementById('key-result').textContent.includes('hashCode 97520992')`)
	b.shot("07-key-box")
}

// TestBrowserTaskManagerCrashWaitForSlotsAndScaleOut is the new user's
// minute: crash a TaskManager, see the job wait for a slot, restart it, then
// scale count out, which needs a third TaskManager.
func TestBrowserTaskManagerCrashWaitForSlotsAndScaleOut(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	// Two TaskManagers with one slot each: one pipeline per TaskManager.
	b.openLive("template=wordcount&seed=3&lang=en")
	for range 2 {
		b.clickLive(`#btn-faster`)
	}
	b.waitJS(30*time.Second, "every subtask running", jsAllRunning)
	b.waitJS(60*time.Second, "a completed checkpoint", `window.statelab.model.snap.checkpoints.counts.completed >= 1`)

	b.clickLive(`button[aria-label="Crash TaskManager tm-1"]`)
	b.waitJS(30*time.Second, "the job waiting for a slot", `document.getElementById('explain-body').innerText.includes('needs 2 slots')`)
	story := eval[string](b, `document.getElementById('explain-body').innerText`)
	assert.Contains(t, story, "TaskManager tm-1 crashed")
	assert.Contains(t, story, "source#0", "the story names the subtasks that died with it")
	assert.Equal(t, 1, eval[int](b, `document.querySelectorAll('#graph rect.band.lost').length`), "the lost TaskManager's band is marked")
	b.shot("11-taskmanager-lost-waiting")

	b.clickLive(`.tm-label button[data-focus="tm:tm-1"]`) // now "Restart"
	b.waitJS(60*time.Second, "every subtask running again", jsAllRunning)
	b.waitJS(10*time.Second, "the story's end", `document.getElementById('explain-body').innerText.includes('Running again')`)
	b.shot("12-taskmanager-restarted")

	// Three subtasks of count need three slots: the rescale waits until a
	// TaskManager is added.
	b.clickLive(`.op-head[data-op="count"] button[aria-label="Rescale count to 3"]`)
	b.waitJS(60*time.Second, "the rescale waiting for a slot", `window.statelab.model.snap.job.waitingForResources === true`)
	b.clickLive(`#btn-add-tm`)
	b.waitJS(90*time.Second, "count at parallelism 3 on three TaskManagers",
		`window.statelab.model.snap.taskManagers.length === 3 && window.statelab.model.snap.job.operators.find(o => o.id === 'count').parallelism === 3 && `+jsAllRunning)
	b.shot("13-scaled-out-three-taskmanagers")
}

// TestBrowserSwitchTeachingAndFullSpeed hands the running job from the
// Stepper to the Live driver and back with the mode buttons.
func TestBrowserSwitchTeachingAndFullSpeed(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.openLive("template=wordcount&seed=2&lang=en")
	b.waitJS(30*time.Second, "some output", `window.statelab.model.snap.sinks[0].committed > 0 || window.statelab.model.snap.job.operators[0].subtasks[0].recordsOut > 0`)
	seed := eval[int](b, `window.statelab.model.snap.seed`)
	b.clickLive(`#btn-mode-live`)
	b.waitJS(30*time.Second, "full speed", `window.statelab.model.snap.driver === 'live' && document.getElementById('btn-mode-live').getAttribute('aria-pressed') === 'true'`)
	assert.Equal(t, seed, eval[int](b, `window.statelab.model.snap.seed`), "the same run, not a reset")
	assert.True(t, eval[bool](b, `document.getElementById('btn-step').disabled`), "no stepping at full speed")
	b.waitJS(30*time.Second, "output at full speed", `window.statelab.model.snap.sinks[0].committed > 0`)
	// At full speed the panels keep their figures: the sink beside the
	// ground truth, each source subtask's offsets, each count subtask's
	// state.
	b.waitJS(30*time.Second, "the sink beside the truth at full speed", `(c => c && c.supported)(window.statelab.model.snap.sinks[0].comparison)`)
	b.waitJS(30*time.Second, "subtask figures at full speed", `(ops => ops.find(o => o.id === 'source').subtasks.every(s => s.offsets && s.offsets.length > 0) &&
		ops.find(o => o.id === 'count').subtasks.every(s => s.state && s.state.keys > 0))(window.statelab.model.snap.job.operators)`)
	assert.Zero(t, eval[int](b, `document.querySelectorAll('#sink .empty').length`), "the sink panel is not empty at full speed")
	b.shot("15-full-speed")
	b.clickLive(`#btn-mode-step`)
	b.waitJS(30*time.Second, "teaching mode again", `window.statelab.model.snap.driver === 'step' && !document.getElementById('btn-step').disabled`)
}

// TestBrowserKeyGroupsMatchTheJVM checks static/js/keygroups.js against key
// groups computed on a JVM (rescale/testdata/flink_keygroups.txt).
func TestBrowserKeyGroupsMatchTheJVM(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url + "/"))
	f, err := os.Open(filepath.Join("..", "rescale", "testdata", "flink_keygroups.txt"))
	require.NoError(t, err)
	defer f.Close()
	type vec struct {
		Key                           string
		Max, P, Hash, KeyGroup, Index int
	}
	var vecs []vec
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 7 || fields[0] != "string" {
			continue
		}
		key := ""
		if fields[1] != "-" {
			raw, err := hex.DecodeString(fields[1])
			require.NoError(t, err)
			key = string(raw)
		}
		n := make([]int, 5)
		for i := range n {
			n[i], err = strconv.Atoi(fields[2+i])
			require.NoError(t, err)
		}
		vecs = append(vecs, vec{key, n[0], n[1], n[2], n[3], n[4]})
	}
	require.Greater(t, len(vecs), 20)
	js := `(async () => { const m = await import('/static/js/keygroups.js'); const v = ` + toJSON(t, vecs) + `;
	  return v.map(x => [m.javaStringHashCode(x.Key), m.keyGroupFor(x.Key, x.Max), m.operatorIndexFor(x.Max, x.P, m.keyGroupFor(x.Key, x.Max))]); })()`
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[[][]int](js, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Len(t, got, len(vecs))
	for i, v := range vecs {
		assert.Equal(t, []int{v.Hash, v.KeyGroup, v.Index}, got[i], "key %q max %d p %d", v.Key, v.Max, v.P)
	}
}

// jsFPS counts requestAnimationFrame callbacks for ms milliseconds.
func jsFPS(ms int) string {
	return fmt.Sprintf(`new Promise(resolve => { let n = 0; const t0 = performance.now();
	  const tick = (now) => { n++; if (now - t0 < %d) requestAnimationFrame(tick); else resolve(n * 1000 / (now - t0)); };
	  requestAnimationFrame(tick); })`, ms)
}

// TestBrowserFramesPerSecond measures frames per second with
// requestAnimationFrame in a sandbox of 10,000 keys and 128 key groups,
// running at 4x with the state inspector open on a counting subtask. The
// same browser's rate on a still page is measured first: on a shared, busy
// machine that is the ceiling. The bound is generous (half the ceiling, or
// 30): it catches a view that thrashes layout, not a busy machine.
func TestBrowserFramesPerSecond(t *testing.T) {
	figureTest(t)
	// A 10,000-word vocabulary gives fewer distinct keys than words (the
	// sandbox's lines draw about 9,700 of them): 12,000 words on a server
	// started with --max-keys 12000 pass 10,000 keys, as in
	// TestBrowserFramesAtFullSpeed.
	b := newBrowserWith(t, func(c *Config) { c.Limits.Keys = 12_000 }).withMotion()
	b.run(chromedp.Navigate(b.url + "/?lang=en"))
	baseline, err := chromedp.Run(b.ctx, chromedp.Evaluate[float64](jsFPS(3000), chromedp.EvalAwaitPromise))
	require.NoError(t, err)

	b.openLive("template=wordcount&seed=5&keys=12000&interval=500ms&lang=en")
	for range 5 { // 32x to fill the state quickly
		b.clickLive(`#btn-faster`)
		time.Sleep(150 * time.Millisecond)
	}
	b.waitJS(30*time.Second, "every subtask running", jsAllRunning)
	b.waitJS(3*time.Minute, "10,000 keys in count's state",
		`window.statelab.model.snap.job.operators.find(o => o.id === 'count').subtasks.reduce((n, s) => n + (s.state ? s.state.keys : 0), 0) >= 10000`)
	for range 3 { // back to 4x
		b.clickLive(`#btn-slower`)
		time.Sleep(150 * time.Millisecond)
	}
	b.clickLive(`input[name=tool][value=inspect]`)
	b.clickLive(`.box-button[data-task="count#0"]`)
	b.waitJS(20*time.Second, "the inspector's keyed state", `document.querySelectorAll('#inspector table.keyed tbody tr').length > 0`)
	b.run(chromedp.Evaluate[chromedp.Void](`for (const k in window.statelab.timing) window.statelab.timing[k] = 0`))
	fps, err := chromedp.Run(b.ctx, chromedp.Evaluate[float64](jsFPS(5000), chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	timing := eval[map[string]float64](b, `window.statelab.timing`)
	keys := eval[int](b, `window.statelab.model.snap.job.operators.find(o => o.id === 'count').subtasks.reduce((n, s) => n + (s.state ? s.state.keys : 0), 0)`)
	speed := eval[float64](b, `window.statelab.model.snap.speed`)
	var load string
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Fields(string(data))[0]
	}
	t.Logf("frames per second in teaching mode: %.1f live (%d keys in state, 128 key groups, speed %gx) vs %.1f on a still page; load average %s", fps, keys, speed, baseline, load)
	require.GreaterOrEqual(t, keys, 10000, "measured at 10,000 keys or more")
	t.Logf("JavaScript milliseconds per view during the 5 s measured: %v", timing)
	b.shot("08-fps-10000-keys")
	// Frame rate is a speed figure: it is reported (above, and in the issue
	// notes), not judged by wall clock here. The test fails only when the view
	// stalls outright, relative to the same browser on a still page.
	assert.GreaterOrEqual(t, fps, 0.2*baseline, "the live view stalls: %.1f fps against %.1f on a still page", fps, baseline)
}

func TestBrowserChineseAndHelp(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.openLive("template=article&lang=zh")
	b.waitJS(20*time.Second, "every subtask running", jsAllRunning)
	text := eval[string](b, `document.body.innerText`)
	for _, term := range []string{"作业图", "键组", "检查点", "状态", "刚刚发生了什么"} {
		assert.Contains(t, text, term)
	}
	// ? opens the shortcuts, Escape closes them.
	b.run(chromedp.KeyEvent("?"))
	b.waitJS(5*time.Second, "the help dialog", `document.getElementById('help').open`)
	b.shot("09-zh-help")
	b.run(chromedp.KeyEvent("\u001b"))
	b.waitJS(5*time.Second, "the help dialog closed", `!document.getElementById('help').open`)
	// article: count has max parallelism 10: ten numbered cells.
	assert.Equal(t, 10, eval[int](b, `document.querySelectorAll('#strip rect.kg').length`))
	b.shot("10-zh-article")
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestBrowserLessonFrame(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url + "/lessons?lang=en"))
	assert.Contains(t, eval[string](b, `document.querySelector('.lesson-list').innerText`), "Key groups")
	b.clickLive(`a[data-lesson="08-key-groups"]`)
	b.waitJS(20*time.Second, "the lesson's live view", `document.getElementById('workspace')?.dataset.ready === 'true'`)
	assert.Equal(t, "/lessons/08-key-groups", eval[string](b, `location.pathname`), "a lesson keeps its own address")
	assert.Equal(t, 4, eval[int](b, `document.querySelectorAll('.steps .step').length`))
	assert.Equal(t, "lesson:08-key-groups", eval[string](b, `window.statelab.model.snap.template`))
	b.waitJS(20*time.Second, "every subtask running", jsAllRunning)
	b.shot("14-lesson-frame")
}
