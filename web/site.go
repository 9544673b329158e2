package web

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
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
// page on a local statelab serve. The site must be served from the root of
// its host (its pages and scripts use absolute paths).

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

// siteText is the server-only pages' text, per language. The URL on a
// local server is the default of statelab serve --addr.
var siteText = map[string]map[string]string{
	"en": {
		"how":           "Run StateLab on your machine (it needs Go), then open the page there:",
		"open":          "Open it on a local StateLab server",
		"classroom":     "Classrooms need a server",
		"classroom.w":   "A classroom is one run that a whole class watches and forks; the static site runs the engine inside each visitor's page, so there is no run to share. Lessons and the sandbox work here.",
		"attach":        "Attaching to Flink needs a server",
		"attach.w":      "Attach reads a real Flink JobManager's REST API; a page on a static host cannot reach it (other origins, no server to ask on its behalf).",
		"performance":   "Performance runs need a server",
		"performance.w": "The Performance page measures StateLab on the machine it runs on, Pebble (the RocksDB stand-in) included, which the browser build does not have.",
		"pebble":        "This lesson's steps that start a job on the pebble backend (EmbeddedRocksDBStateBackend) need a server: the browser build has no Pebble. Run StateLab on your machine (go run ./cmd/statelab serve) and open",
		"pebble.option": "needs a server",
	},
	"zh": {
		"how":           "在你的机器上运行 StateLab（需要 Go），然后在那里打开这个页面：",
		"open":          "在本地 StateLab 服务器上打开",
		"classroom":     "课堂需要服务器",
		"classroom.w":   "课堂是全班一起观看并分叉的同一次运行；静态站点把引擎运行在每位访客自己的页面里，没有可以共享的运行。课程和沙盒在这里都能用。",
		"attach":        "连接 Flink 需要服务器",
		"attach.w":      "连接功能读取真实 Flink JobManager 的 REST API；静态站点上的页面无法访问它（跨源，也没有服务器代为请求）。",
		"performance":   "性能测试需要服务器",
		"performance.w": "性能页面在运行 StateLab 的机器上测量它，包括 Pebble（代替 RocksDB 的状态后端），而浏览器版本没有 Pebble。",
		"pebble":        "本课中在 pebble 状态后端（EmbeddedRocksDBStateBackend）上启动作业的步骤需要服务器：浏览器版本没有 Pebble。请在你的机器上运行 StateLab（go run ./cmd/statelab serve）并打开",
		"pebble.option": "需要服务器",
		"notfound":      "本站点没有这个地址的页面。",
	},
}

// SitePages renders every page of the static site, in every language.
// localServer is the address of a local statelab serve the server-only
// pages link to (e.g. http://127.0.0.1:8080).
func (srv *Server) SitePages(ctx context.Context, localServer string) ([]SitePage, error) {
	paths := []string{"/", "/sandbox", "/sandbox/live?template=" + Templates[0].ID, "/lessons", "/glossary", "/savepoint"}
	for _, l := range srv.cfg.Lessons.Lessons {
		paths = append(paths, "/lessons/"+l.Slug)
	}
	h := srv.Handler()
	var out []SitePage
	for _, lang := range Languages {
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
				out = append(out, SitePage{Path: langPath(lang.Code, "/replay"), HTML: siteHTML(html, lang.Code)})
			}
			if slug, ok := strings.CutPrefix(path, "/lessons/"); ok && srv.lessonNeedsPebble(slug) {
				html = withSiteNote(html, siteText[lang.Code]["pebble"], strings.TrimRight(localServer, "/")+path+"?lang="+lang.Code)
			}
			if path == "/sandbox" {
				// The browser build has no Pebble: the chooser says so.
				html = bytes.Replace(html, []byte(`<option value="pebble">`), []byte(`<option value="pebble" disabled>(`+siteText[lang.Code]["pebble.option"]+`) `), 1)
			}
			out = append(out, SitePage{Path: langPath(lang.Code, path), HTML: siteHTML(html, lang.Code)})
		}
		t := srv.i18n.T(lang.Code)
		txt := siteText[lang.Code]
		for _, so := range serverOnly {
			p := pages.Page{Lang: lang.Code, T: t, Title: txt[so.feature], Active: so.feature}
			for _, l := range Languages {
				p.LangLinks = append(p.LangLinks, pages.LangLink{Code: l.Code, Name: l.Name, Href: so.path + "?lang=" + l.Code, Current: l.Code == lang.Code})
			}
			var buf bytes.Buffer
			err := pages.ServerOnly(p, pages.ServerOnlyText{Feature: so.feature, Title: txt[so.feature], Why: txt[so.feature+".w"],
				How: txt["how"], Open: txt["open"], ServerURL: strings.TrimRight(localServer, "/") + so.path + "?lang=" + lang.Code}).Render(ctx, &buf)
			if err != nil {
				return nil, fmt.Errorf("render %s: %w", so.path, err)
			}
			out = append(out, SitePage{Path: langPath(lang.Code, so.path), HTML: siteHTML(buf.Bytes(), lang.Code)})
		}
		// 404.html: what most static hosts send for a missing page.
		p := pages.Page{Lang: lang.Code, T: t, Title: t("notfound.title")}
		for _, l := range Languages {
			p.LangLinks = append(p.LangLinks, pages.LangLink{Code: l.Code, Name: l.Name, Href: "/?lang=" + l.Code, Current: l.Code == lang.Code})
		}
		var buf bytes.Buffer
		if err := pages.NotFound(p, txt["notfound"]).Render(ctx, &buf); err != nil {
			return nil, fmt.Errorf("render 404.html: %w", err)
		}
		out = append(out, SitePage{Path: langPath(lang.Code, "/404.html"), HTML: siteHTML(buf.Bytes(), lang.Code)})
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

var hrefRE = regexp.MustCompile(`(?:href|action)="(/[^"]*)"`)

// siteHTML marks a page as the static site's and points its links (and
// forms) at the site's pages: a link within the site stays in the page's language
// (Chinese pages live under /zh/), and the language switch goes to the
// other tree instead of setting ?lang=.
func siteHTML(html []byte, lang string) []byte {
	html = bytes.Replace(html, []byte("<html "), []byte(`<html data-site="static" `), 1)
	return hrefRE.ReplaceAllFunc(html, func(m []byte) []byte {
		attr, href, _ := strings.Cut(string(m[:len(m)-1]), `="`)
		if strings.HasPrefix(href, "/static/") || strings.HasPrefix(href, "/wasm/") || strings.HasPrefix(href, "/api/") || strings.HasPrefix(href, "//") {
			return m
		}
		to := lang
		p, q, _ := strings.Cut(href, "?")
		if vals, err := url.ParseQuery(strings.ReplaceAll(q, "&amp;", "&")); err == nil && vals.Get("lang") != "" {
			to = vals.Get("lang")
			vals.Del("lang")
			q = vals.Encode()
		}
		out := langPath(to, p)
		if q != "" {
			out += "?" + q
		}
		return []byte(attr + `="` + out + `"`)
	})
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
