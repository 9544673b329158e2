package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/web/pages"
)

// The static site (statelab site DIR, issue 21) is this server's pages,
// rendered once per language, beside the embedded assets and the engine
// compiled to WebAssembly (cmd/statelab-wasm), which runs this same server
// inside the page. A page of the site carries <html data-site="static">:
// static/js/inpage.js then connects the views to the in-page engine.
//
// Layout: English at the site's root, Chinese under /zh/, each page as
// PATH/index.html. Pages whose work needs a server (classrooms, attach,
// performance runs) are replaced by a page that says so and links to the
// page on a local statelab serve. The site may sit at its host's root or
// under any path (a project site's /statelab/): its pages use addresses
// relative to themselves, and its scripts find the site's root from their
// own address (static/js/inpage.js). 404.html, which a host sends for any
// missing address, finds the site's root from the address it was sent for
// (siteNotFoundBaseScript).

// SitePage is one page of the static site.
type SitePage struct {
	Path string // the page's URL path on the site, e.g. "/zh/lessons/08-…"
	HTML []byte
}

// serverOnly are the pages the site replaces, with what each says.
var serverOnly = []struct {
	path, feature string
}{
	{"/classroom", "classroom"},
	{"/join", "classroom"},
	{"/attach", "attach"},
	{"/performance", "performance"},
}

// pebbleOption is the sandbox form's Pebble choice's start tag, with its attributes.
var pebbleOption = regexp.MustCompile(`<option value="pebble"[^>]*>`)

// SitePages renders every page of the static site, in every language.
// localServer is the address of a local statelab serve the server-only
// pages link to (e.g. http://127.0.0.1:8080).
func (srv *Server) SitePages(ctx context.Context, localServer string) ([]SitePage, error) {
	paths := []string{"/", "/sandbox", "/sandbox/live?template=" + Templates[0].ID, "/lessons", "/glossary", "/savepoint"}
	for _, l := range srv.cfg.Lessons.Lessons {
		paths = append(paths, "/lessons/"+l.Slug)
	}
	h := srv.Handler()
	var out, notFound []SitePage
	for _, lang := range Languages {
		// The site's own sentences are in static/i18n too ("site.…").
		t := srv.i18n.T(lang.Code)
		for _, p := range paths {
			html, err := srv.renderForSite(ctx, h, p, lang.Code)
			if err != nil {
				return nil, err
			}
			u, _ := url.Parse(p)
			path := u.Path
			if path == "/sandbox/live" {
				// The live view's query comes from the address bar on the
				// site (inpage.js): one page serves every template,
				// session and share link. /replay?s=… is the same page.
				html = bytes.Replace(html, []byte(`data-ws="`+u.RawQuery+`"`), []byte(`data-ws=""`), 1)
				out = append(out, SitePage{Path: langPath(lang.Code, "/replay"), HTML: siteHTML(html, lang.Code, langPath(lang.Code, "/replay"))})
			}
			if slug, ok := strings.CutPrefix(path, "/lessons/"); ok && srv.lessonNeedsPebble(slug) {
				html = withSiteNote(html, t("site.pebble"), strings.TrimRight(localServer, "/")+path+"?lang="+lang.Code)
			}
			if path == "/sandbox" {
				// The browser build has no Pebble: the chooser says so.
				// A function, not a ${1} template: a translation with a $ would be expanded.
				note := []byte(` disabled>(` + template.HTMLEscapeString(t("site.pebble.option")) + `) `)
				html = pebbleOption.ReplaceAllFunc(html, func(tag []byte) []byte { return append(tag[:len(tag)-1:len(tag)-1], note...) })
			}
			out = append(out, SitePage{Path: langPath(lang.Code, path), HTML: siteHTML(html, lang.Code, langPath(lang.Code, path))})
		}
		for _, so := range serverOnly {
			title := t("site." + so.feature + ".title")
			p := pages.Page{Lang: lang.Code, T: t, Title: title, Active: so.feature}
			for _, l := range Languages {
				p.LangLinks = append(p.LangLinks, pages.LangLink{Code: l.Code, Name: l.Name, Href: so.path + "?lang=" + l.Code, Current: l.Code == lang.Code})
			}
			var buf bytes.Buffer
			err := pages.ServerOnly(p, pages.ServerOnlyText{Feature: so.feature, Title: title, Why: t("site." + so.feature + ".why"),
				How: t("site.how"), Open: t("site.open"), ServerURL: strings.TrimRight(localServer, "/") + so.path + "?lang=" + lang.Code}).Render(ctx, &buf)
			if err != nil {
				return nil, fmt.Errorf("render %s: %w", so.path, err)
			}
			out = append(out, SitePage{Path: langPath(lang.Code, so.path), HTML: siteHTML(buf.Bytes(), lang.Code, langPath(lang.Code, so.path))})
		}
		// 404.html: what most static hosts send for a missing page.
		p := pages.Page{Lang: lang.Code, T: t, Title: t("notfound.title")}
		for _, l := range Languages {
			p.LangLinks = append(p.LangLinks, pages.LangLink{Code: l.Code, Name: l.Name, Href: "/?lang=" + l.Code, Current: l.Code == lang.Code})
		}
		var buf bytes.Buffer
		if err := pages.NotFound(p, t("site.notfound")).Render(ctx, &buf); err != nil {
			return nil, fmt.Errorf("render 404.html: %w", err)
		}
		notFound = append(notFound, SitePage{Path: langPath(lang.Code, "/404.html"), HTML: siteHTML(buf.Bytes(), lang.Code, "")})
	}
	// The 404 pages know the site's top-level names (lessons, zh, static, …)
	// to find the site's root in a missing address.
	top := map[string]bool{"static": true, "wasm": true}
	for _, pg := range append(out, notFound...) {
		first, _, _ := strings.Cut(strings.TrimPrefix(pg.Path, "/"), "/")
		if first != "" {
			top[first] = true
		}
	}
	script := siteNotFoundBaseScript(slices.Sorted(maps.Keys(top)))
	for _, pg := range notFound {
		out = append(out, SitePage{Path: pg.Path, HTML: withHeadScript(pg.HTML, script)})
	}
	return out, nil
}

// renderForSite GETs p?lang=… from h.
func (srv *Server) renderForSite(ctx context.Context, h http.Handler, p, lang string) ([]byte, error) {
	return srv.renderForSiteStatus(ctx, h, p, lang, http.StatusOK)
}

func (srv *Server) renderForSiteStatus(ctx context.Context, h http.Handler, p, lang string, want int) ([]byte, error) {
	sep := "?"
	if strings.Contains(p, "?") {
		sep = "&"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://localhost"+p+sep+"lang="+lang, nil)
	if err != nil {
		return nil, err
	}
	w := &siteRecorder{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(w, req)
	if w.status != want {
		return nil, fmt.Errorf("render %s for the site: HTTP %d: %s", p, w.status, strings.TrimSpace(w.body.String()))
	}
	return w.body.Bytes(), nil
}

type siteRecorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *siteRecorder) Header() http.Header { return r.header }
func (r *siteRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}
func (r *siteRecorder) Write(p []byte) (int, error) {
	r.wrote = true
	return r.body.Write(p)
}

func langPath(lang, p string) string {
	if lang == Languages[0].Code {
		return p
	}
	if p == "/" {
		return "/" + lang + "/"
	}
	return "/" + lang + p
}

var hrefRE = regexp.MustCompile(`(?:href|action|src)="(/[^"]*)"`)

// siteHTML marks a page as the static site's and points its links (and
// forms) at the site's pages: a link within the site stays in the page's language
// (Chinese pages live under /zh/), and the language switch goes to the
// other tree instead of setting ?lang=.
//
// page is the page's path on the site ("/zh/lessons/08-…", "/"): its links
// and assets become relative to it, so the site works under any path
// prefix (a project site's /statelab/), and static/js/inpage.js is loaded
// first on every page (it maps the addresses the scripts build for a server
// to the site's). The 404 page ("" here) is sent for any missing address:
// its links and assets are relative to the site's root ("./static/…"), which
// its first script finds and makes its base URL (siteNotFoundBaseScript,
// added by SitePages).
func siteHTML(html []byte, lang, page string) []byte {
	html = bytes.Replace(html, []byte("<html "), []byte(`<html data-site="static" `), 1)
	root := "./"
	if page != "" {
		dir := page
		if !strings.HasSuffix(dir, "/") {
			dir += "/"
		}
		root = strings.Repeat("../", strings.Count(dir, "/")-1)
		if root == "" {
			root = "./"
		}
		html = bytes.Replace(html, []byte(`<link rel="stylesheet"`), []byte(`<script type="module" src="/static/js/inpage.js"></script><link rel="stylesheet"`), 1)
		html = withSiteBase(html)
	}
	return hrefRE.ReplaceAllFunc(html, func(m []byte) []byte {
		attr, href, _ := strings.Cut(string(m[:len(m)-1]), `="`)
		if strings.HasPrefix(href, "//") {
			return m
		}
		if strings.HasPrefix(href, "/static/") || strings.HasPrefix(href, "/wasm/") || strings.HasPrefix(href, "/api/") {
			return []byte(attr + `="` + root + href[1:] + `"`)
		}
		to := lang
		p, q, _ := strings.Cut(href, "?")
		p, frag, _ := strings.Cut(p, "#")
		if vals, err := url.ParseQuery(strings.ReplaceAll(q, "&amp;", "&")); err == nil && vals.Get("lang") != "" {
			to = vals.Get("lang")
			vals.Del("lang")
			q = vals.Encode()
		}
		out := langPath(to, p)
		// A page of the site is its directory's index.html.
		if !strings.HasSuffix(out, "/") && !strings.HasSuffix(out, ".html") {
			out += "/"
		}
		out = root + out[1:]
		if q != "" {
			out += "?" + q
		}
		if frag != "" {
			out += "#" + frag
		}
		return []byte(attr + `="` + out + `"`)
	})
}

// siteBaseScript, the first script of every page of the site but 404.html,
// fixes the page's base URL to the directory the page's index.html is in,
// found from the address it was opened at: /statelab/sandbox/live/,
// whether the host served it at …/live/, …/live/index.html or …/live.
// The page's relative addresses (../../static/…) are relative to that
// directory, and the browser resolves them against the base URL instead of
// the address bar:
//   - a host may serve PATH/index.html at PATH without redirecting to
//     PATH/ (http.FileServer and GitHub Pages redirect; others do not),
//     where ../static/… would climb one directory too far;
//   - the page's address changes without a new page: going to a fork's live
//     view from /replay/ stays in the page (inpage.js, the Navigation API),
//     and an address's relative links would then be resolved against
//     /sandbox/live/: chromium asked for the favicon ../static/img/logo.svg
//     as /sandbox/static/img/logo.svg, a 404 in CI's TestSiteJourney, and
//     the header's links would have gone wrong too. A <base> element's URL
//     is fixed when it is inserted, not when the address changes.
//
// A base element is used instead of a redirect to PATH/ because the second
// case has no new page to redirect. Only the page's own scripts know the
// address it was opened at, hence an inline script; it runs before the
// parser reaches the stylesheet, but chromium's preload scanner may fetch
// the head's assets from the address bar's directory first: on a host that
// serves PATH without redirecting, under a path prefix, those few early
// requests miss (outside the site), and the page loads them again from the
// base URL. Fragment-only links (the skip link, #main) would resolve
// against the base URL too; inpage.js keeps them on the page.
const siteBaseScript = `<script>(function(){var p=location.pathname;if(p.slice(-1)!=='/')p=/\.html$/.test(p)?p.replace(/[^\/]*$/,''):p+'/';var b=document.createElement('base');b.href=p;document.head.prepend(b)})()</script>`

// siteNotFoundBaseScript is 404.html's first script: a host sends 404.html
// for any missing address (/statelab/lessons/99-nope), so the page cannot
// know its own directory as the others do; it finds the site's root in the
// address and makes it the base URL, against which its links and assets
// (./static/css/app.css, ./lessons/) resolve. The root is the path before
// the first of the site's top-level names (top: lessons, sandbox, zh,
// static, …) in the address; an address with none (/statelab/nope) tries
// its own directory and then each one above it, as long as the stylesheet
// fails to load from there. A fragment-only link (the skip link's #main)
// stays on the page, as inpage.js keeps it on the others. Without it the
// page's assets came from the host's root, and under a prefix the page had no style and its links left
// the site (TestSitePathPrefix).
func siteNotFoundBaseScript(top []string) string {
	names, _ := json.Marshal(top)
	return `<script>(function(){var t=` + string(names) + `,s=location.pathname.split('/'),c=[],i,d;` +
		`for(i=1;i<s.length-1;i++)if(t.indexOf(s[i])>=0){c.push(s.slice(0,i).join('/')+'/');break}` +
		`for(i=s.length-1;i>=1;i--){d=s.slice(0,i).join('/')+'/';if(c.indexOf(d)<0)c.push(d)}` +
		`var b=document.createElement('base');b.href=c.shift();document.head.prepend(b);` +
		`document.addEventListener('error',function(e){var l=e.target;if(!l||l.rel!=='stylesheet'||!c.length)return;b.href=c.shift();` +
		`l.replaceWith(l.cloneNode());document.querySelectorAll('img[src]').forEach(function(m){m.src=m.getAttribute('src')})},true);` +
		`document.addEventListener('click',function(e){var a=e.target.closest&&e.target.closest('a[href^="#"]');if(a){e.preventDefault();location.hash=a.getAttribute('href')}})})()</script>`
}

// withSiteBase puts siteBaseScript first in the page's head, after its
// charset.
func withSiteBase(html []byte) []byte { return withHeadScript(html, siteBaseScript) }

// withHeadScript puts script first in the page's head, after its charset.
func withHeadScript(html []byte, script string) []byte {
	at := bytes.Index(html, []byte("<head>"))
	if at < 0 {
		return html
	}
	at += len("<head>")
	if m := bytes.Index(html[at:], []byte("<meta charset=")); m >= 0 {
		if end := bytes.IndexByte(html[at+m:], '>'); end >= 0 {
			at += m + end + 1
		}
	}
	return append(append(append([]byte{}, html[:at]...), script...), html[at:]...)
}

// lessonNeedsPebble reports whether one of the lesson's jobs runs on the
// pebble backend, which the browser build does not have.
func (srv *Server) lessonNeedsPebble(slug string) bool {
	l, ok := srv.cfg.Lessons.Lesson(slug)
	if !ok {
		return false
	}
	for _, name := range l.JobNames() {
		if spec, err := l.Job(name); err == nil && spec.Backend == engine.BackendPebble {
			return true
		}
	}
	return false
}

// withSiteNote puts a note at the top of the page's main element, with a
// link to the same page on a local server.
func withSiteNote(html []byte, text, link string) []byte {
	note := `<main id="main"><p class="site-note" role="note" data-site-note="pebble">` + template.HTMLEscapeString(text) +
		` <a href="` + template.HTMLEscapeString(link) + `">` + template.HTMLEscapeString(link) + `</a></p>`
	return bytes.Replace(html, []byte(`<main id="main">`), []byte(note), 1)
}
