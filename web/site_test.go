package web

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSitePages: the static site has every lesson in both languages, marks
// each page as the site's, keeps links in the page's language, and says
// where a server is needed (server-only pages, Pebble's lessons and the
// chooser's pebble backend).
func TestSitePages(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := New(Config{DataDir: t.TempDir(), Engines: NewEngine(logger), Logger: logger})
	require.NoError(t, err)
	defer srv.Close()
	pages, err := srv.SitePages(context.Background(), "http://127.0.0.1:8080")
	require.NoError(t, err)
	byPath := map[string]string{}
	for _, p := range pages {
		byPath[p.Path] = string(p.HTML)
		assert.Contains(t, string(p.HTML), `<html data-site="static" `, p.Path)
	}
	for _, l := range srv.cfg.Lessons.Lessons {
		for _, p := range []string{"/lessons/" + l.Slug, "/zh/lessons/" + l.Slug} {
			html, ok := byPath[p]
			if assert.True(t, ok, "the site has %s", p) {
				assert.Contains(t, html, `data-ws="lesson=`+l.Slug, "%s starts its lesson's run", p)
				assert.Equal(t, srv.lessonNeedsPebble(l.Slug), strings.Contains(html, `data-site-note="pebble"`), "%s: a note exactly where a job runs on pebble", p)
			}
		}
	}
	assert.True(t, srv.lessonNeedsPebble("10-incremental-checkpoints"), "lesson 10's job is on pebble")
	assert.False(t, srv.lessonNeedsPebble("08-key-groups"))
	// Chinese pages link to Chinese pages; the language switch goes across.
	zh := byPath["/zh/lessons"]
	// Links are relative to the page (../../ from /zh/lessons/), so the
	// site works under any path prefix.
	assert.Contains(t, zh, `href="../../zh/sandbox/"`)
	assert.Contains(t, zh, `href="../../lessons/"`, "the switch to English")
	assert.NotContains(t, zh, `lang=en"`)
	assert.Contains(t, byPath["/lessons"], `href="../zh/lessons/"`, "the switch to Chinese")
	assert.Contains(t, byPath["/lessons"], `href="../static/css/app.css"`)
	assert.Contains(t, byPath["/"], `src="./static/js/inpage.js"`, "the site's script, first on every page")
	// The base URL is fixed before anything is fetched: the page's first
	// script, ahead of the favicon and the stylesheet.
	for path, html := range byPath {
		base, icon := strings.Index(html, siteBaseScript), strings.Index(html, `rel="icon"`)
		if path == "/404.html" || path == "/zh/404.html" {
			// Sent for any address: its first script finds the site's root
			// in the address instead.
			assert.Negative(t, base, "%s is sent for any address: no base from it", path)
			nf := strings.Index(html, `<script>(function(){var t=["404.html"`)
			assert.True(t, nf >= 0 && nf < icon && nf < strings.Index(html, `rel="stylesheet"`), "%s: the root-finding script first in the head", path)
			continue
		}
		assert.True(t, base >= 0 && base < icon && base < strings.Index(html, "<script type=\"module\""), "%s: the base script first in the head", path)
	}
	rootAbs := regexp.MustCompile(`(?:href|src|action)="/[^/"]`)
	for path, html := range byPath {
		assert.Empty(t, rootAbs.FindAllString(html, 3), "%s: an address from the host's root", path)
	}
	// 404.html's addresses are relative to the site's root, its base.
	for _, want := range []string{`href="./static/css/app.css"`, `href="./lessons/"`, `href="./zh/"`, `"lessons",`, `"static",`, `"zh"]`} {
		assert.Contains(t, byPath["/404.html"], want)
	}
	assert.Contains(t, byPath["/zh/404.html"], `href="./zh/lessons/"`, "the Chinese 404 page links to the Chinese lessons")
	// The live page takes its run from the address bar; /replay is the same page.
	assert.Contains(t, byPath["/sandbox/live"], `data-ws=""`)
	assert.Contains(t, byPath["/replay"], `data-ws=""`)
	// What needs a server says so, in each language, and links to it.
	for _, p := range []string{"/classroom", "/attach", "/performance", "/zh/classroom", "/zh/attach", "/zh/performance"} {
		assert.Contains(t, byPath[p], `data-server-only=`, p)
		assert.Contains(t, byPath[p], `href="http://127.0.0.1:8080/`, p)
	}
	assert.Contains(t, byPath["/zh/classroom"], "课堂需要服务器")
	assert.Regexp(t, `<option value="pebble"[^>]* disabled>`, byPath["/sandbox"])
	assert.Contains(t, byPath["/zh/sandbox"], `action="../../zh/sandbox/live/"`, "the Chinese chooser starts a Chinese live page")
	assert.Contains(t, byPath["/404.html"], "<h1>")
}

// TestWriteSite: the site's files are where the pages' links look for them,
// and a directory that holds something else is refused.
func TestWriteSite(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(t.TempDir(), "module")
	require.NoError(t, os.WriteFile(fake, []byte("\x00asm not really"), 0o644))
	rep, err := WriteSite(context.Background(), SiteOptions{Dir: dir, Wasm: fake, WasmExec: fake, LocalServer: "http://127.0.0.1:8080"})
	require.NoError(t, err)
	for _, p := range []string{"index.html", "404.html", "lessons/08-key-groups/index.html", "zh/lessons/08-key-groups/index.html",
		"sandbox/live/index.html", "replay/index.html", "classroom/index.html", "static/js/inpage.js", "static/js/engine-worker.js",
		"static/js/memfs.js", "static/css/app.css", "wasm/statelab.wasm", "wasm/wasm_exec.js"} {
		assert.FileExists(t, filepath.Join(dir, p))
	}
	assert.Positive(t, rep.Pages)
	assert.Positive(t, rep.Assets)
	assert.NoFileExists(t, filepath.Join(dir, "static", "static.go"), "no Go source among the assets")
	require.NoError(t, CheckSiteDir(dir), "a site may be written again over itself")
	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "go.mod"), nil, 0o644))
	err = CheckSiteDir(other)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not empty")
}
