package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBrowserTeacherStartsClassroomFromTheForm: a teacher opens /classroom,
// types a seed into the visible form, presses "Start the classroom" and
// lands on the presenter page with the join code and a running view. (The
// pages' Referrer-Policy: no-referrer makes Chromium send Origin: null on
// this same-origin POST; it used to be refused with a 403.)
func TestBrowserTeacherStartsClassroomFromTheForm(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url + "/classroom?lang=en"))
	b.waitJS(10*time.Second, "the start form", `!!document.querySelector('#classroom-form button[type=submit]')`)
	b.run(
		chromedp.SetValue(chromedp.CSS(`#classroom-seed`), ""),
		chromedp.SendKeys(chromedp.CSS(`#classroom-seed`), "7"),
		chromedp.Click(chromedp.CSS(`#classroom-form button[type=submit]`)),
	)
	b.waitJS(30*time.Second, "the presenter page", `/^\/classroom\/[A-Z0-9]{6}$/.test(location.pathname) && new URLSearchParams(location.search).has('token')`)
	b.waitJS(30*time.Second, "the presenter's live view", jsReady)
	code := eval[string](b, `document.getElementById('join-code-big').textContent.trim()`)
	assert.Equal(t, code, NormalizeCode(code), "a join code is shown")
	assert.Equal(t, 1, b.srv.ext.rooms.live(b.srv), "one classroom runs")
	room := b.srv.ext.rooms.get(b.srv, code)
	require.NotNil(t, room, "the shown code opens the classroom")
	b.shot("security-classroom-started-from-form")
}

// TestBrowserCrossSitePageCannotStartClassroom: a page on another site
// submits a form to /classroom; the browser lands on a 403 that says what
// to do, and no classroom starts.
func TestBrowserCrossSitePageCannotStartClassroom(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	b := newBrowser(t)
	target := b.url + "/classroom"
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s"><input name="template" value="wordcount"></form><script>document.getElementById('f').submit()</script>`, target)
	}))
	t.Cleanup(evil.Close)
	// localhost and 127.0.0.1 are different sites to the browser.
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)
	b.run(chromedp.Navigate(evilURL))
	b.waitJS(20*time.Second, "the refusal", `location.href.startsWith('`+target+`') && document.body.innerText.includes('other sites may not start classrooms')`)
	assert.Equal(t, 0, b.srv.ext.rooms.live(b.srv), "no classroom started")
}
