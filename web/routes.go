package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/static"
	"github.com/statelab/statelab/web/pages"
)

func (srv *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", srv.handleHome)
	mux.HandleFunc("GET /sandbox", srv.handleSandbox)
	mux.HandleFunc("GET /sandbox/live", srv.handleSandboxLive)
	mux.HandleFunc("GET /lessons", srv.handleLessons)
	mux.HandleFunc("GET /lessons/{slug}", srv.handleLesson)
	mux.HandleFunc("GET /glossary", srv.handleGlossary)
	mux.HandleFunc("GET /course", srv.handleCourseMap)
	mux.HandleFunc("GET /teaching", srv.handleTeaching)
	mux.HandleFunc("GET /classroom", srv.handleClassroom)
	mux.HandleFunc("GET /ws", srv.handleWS)
	srv.classroomRoutes(mux)
	mux.HandleFunc("GET /api/keygroup", srv.handleKeyGroup)
	mux.HandleFunc("GET /api/sessions/{id}/tasks/{task}/state", srv.handleTaskState)
	srv.attachRoutes(mux)    // web/attach.go
	srv.savepointRoutes(mux) // web/savepoint.go
	srv.perfRoutes(mux)      // web/perf.go
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /static/", http.StripPrefix("/static/", newAssetHandler(static.FS)))
	mux.HandleFunc("/", srv.handleNotFound)
	return mux
}

// page prepares the common page data for r.
func (srv *Server) page(w http.ResponseWriter, r *http.Request, active, titleKey string) pages.Page {
	lang := pickLang(w, r)
	t := srv.i18n.T(lang)
	p := pages.Page{Lang: lang, T: t, Title: t(titleKey), Active: active, MaxParallelism: srv.cfg.Limits.Parallelism}
	for _, l := range Languages {
		q := r.URL.Query()
		q.Set("lang", l.Code)
		p.LangLinks = append(p.LangLinks, pages.LangLink{Code: l.Code, Name: l.Name, Href: localPath(r) + "?" + q.Encode(), Current: l.Code == lang})
	}
	return p
}

// localPath is r's path as a link that stays on this site: escaped as it
// came (so /%2F%2Fevil.example/x stays one path, not a link to another
// host), and never starting with // or /\, which a browser reads as
// another host.
func localPath(r *http.Request) string {
	p := r.URL.EscapedPath()
	if p == "" || p[0] != '/' {
		return "/"
	}
	return "/" + strings.TrimLeft(p, "/\\")
}

// render writes c as a whole page; a render error becomes a 500 before
// anything is sent, because the page is rendered into a buffer first.
func (srv *Server) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	var buf bytes.Buffer
	if err := c.Render(r.Context(), &buf); err != nil {
		srv.log.Error("render page", "path", r.URL.Path, "err", err)
		http.Error(w, "cannot render this page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (srv *Server) handleHome(w http.ResponseWriter, r *http.Request) {
	p := srv.page(w, r, "home", "home.pageTitle")
	srv.render(w, r, http.StatusOK, pages.Home(p))
}

func (srv *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	p := srv.page(w, r, "", "notfound.title")
	srv.render(w, r, http.StatusNotFound, pages.NotFound(p, fmt.Sprintf(p.T("notfound.text"), r.URL.Path)))
}

func (srv *Server) handleSandbox(w http.ResponseWriter, r *http.Request) {
	p := srv.page(w, r, "sandbox", "sandbox.title")
	p.Script = "/static/js/chooser.js"
	first := Templates[0]
	chosen := r.URL.Query().Get("template")
	if _, ok := Template(chosen); !ok {
		chosen = first.ID
	}
	d := first.Defaults
	f := pages.SandboxForm{Backend: d.Backend, Interval: d.Interval.String(), TaskManagers: d.TaskManagers, Slots: d.Slots,
		Seed: d.Seed, Keys: d.Keys, Driver: d.Driver, Sink: d.Sink}
	for _, t := range Templates {
		card := pages.TemplateCard{ID: t.ID, Title: p.T(t.TitleKey), Description: p.T(t.DescKey), Checked: t.ID == chosen}
		for _, op := range t.Tunable {
			card.Parallelism = append(card.Parallelism, pages.OperatorSetting{Operator: op, Value: t.Defaults.Parallelism[op]})
		}
		spec := t.build(t.Defaults)
		keyed := false
		for _, o := range spec.Operators {
			card.Diagram = append(card.Diagram, o.ID)
			keyed = keyed || keyedKind(o.Kind)
		}
		if keyed {
			f.KeyedTemplates = strings.TrimSpace(f.KeyedTemplates + " " + t.ID)
		}
		if hasAlerts(spec) {
			f.TimerTemplates = strings.TrimSpace(f.TimerTemplates + " " + t.ID)
		}
		f.Templates = append(f.Templates, card)
	}
	srv.render(w, r, http.StatusOK, pages.SandboxChooser(p, f))
}

// handleSandboxLive renders the live view. Its query is the WebSocket's:
// template=… (with settings) starts a session, session=… joins one.
func (srv *Server) handleSandboxLive(w http.ResponseWriter, r *http.Request) {
	p := srv.page(w, r, "sandbox", "sandbox.liveTitle")
	p.Script = "/static/js/live.js"
	p.Wide = true
	q := r.URL.Query()
	q.Del("lang")
	if q.Get("session") == "" && q.Get("template") == "" {
		http.Redirect(w, r, "/sandbox", http.StatusSeeOther)
		return
	}
	srv.render(w, r, http.StatusOK, pages.SandboxLive(p, pages.Workspace{WSQuery: q.Encode()}))
}

func (srv *Server) handleClassroom(w http.ResponseWriter, r *http.Request) {
	srv.handleClassroomStart(w, r)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// KeyGroupAnswer is /api/keygroup's reply: where Flink puts a String key.
type KeyGroupAnswer struct {
	Key            string                 `json:"key"`
	JavaHash       int32                  `json:"javaHash"`
	Murmur         int32                  `json:"murmur"`
	KeyGroup       int                    `json:"keyGroup"`
	MaxParallelism int                    `json:"maxParallelism"`
	Parallelism    int                    `json:"parallelism,omitempty"`
	Subtask        *int                   `json:"subtask,omitempty"`
	Range          *rescale.KeyGroupRange `json:"range,omitempty"`
}

// handleKeyGroup answers ?key=K&maxParallelism=M[&parallelism=P] with
// Flink's numbers, computed by the rescale package.
func (srv *Server) handleKeyGroup(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !q.Has("key") {
		writeJSON(w, http.StatusBadRequest, apiError{CodeBadArgs, "key is missing; ask /api/keygroup?key=hello&maxParallelism=128&parallelism=2"})
		return
	}
	key := q.Get("key")
	maxP, err := strconv.Atoi(q.Get("maxParallelism"))
	if err != nil || rescale.CheckMaxParallelism(maxP) != nil {
		writeJSON(w, http.StatusBadRequest, apiError{CodeBadArgs, fmt.Sprintf("maxParallelism %q is not a whole number from 1 to %d", q.Get("maxParallelism"), rescale.UpperBoundMaxParallelism)})
		return
	}
	h := rescale.JavaStringHashCode(key)
	a := KeyGroupAnswer{Key: key, JavaHash: h, Murmur: rescale.MurmurHash(h), KeyGroup: rescale.KeyGroupForKeyHash(h, maxP), MaxParallelism: maxP}
	if v := q.Get("parallelism"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || rescale.CheckParallelism(p, maxP) != nil {
			writeJSON(w, http.StatusBadRequest, apiError{CodeBadArgs, fmt.Sprintf("parallelism %q is not a whole number from 1 to the max parallelism %d", v, maxP)})
			return
		}
		i := rescale.OperatorIndexForKeyGroup(maxP, p, a.KeyGroup)
		rg := rescale.KeyGroupRangeForOperator(maxP, p, i)
		a.Parallelism, a.Subtask, a.Range = p, &i, &rg
	}
	writeJSON(w, http.StatusOK, a)
}

// maxInspectEntries bounds the keyed entries the inspector receives.
const maxInspectEntries = 2000

// TaskStateAnswer is the state inspector's reply.
type TaskStateAnswer struct {
	engine.TaskStateView
	// Total is the number of keyed entries; Keyed holds at most
	// maxInspectEntries of them (filtered to one key group with ?keyGroup=).
	Total     int  `json:"total"`
	Truncated bool `json:"truncated"`
}

// handleTaskState serves the state inspector: keyed state (optionally of
// one key group, for the key-group strip's hover), operator state, figures.
func (srv *Server) handleTaskState(w http.ResponseWriter, r *http.Request) {
	s, ok := srv.Session(r.PathValue("id"))
	if !ok {
		writeJSON(w, http.StatusNotFound, apiError{CodeUnknownSession, fmt.Sprintf("there is no session %q; open a new sandbox", r.PathValue("id"))})
		return
	}
	s.touch()
	task := r.PathValue("task")
	v, err := s.engine().Inspect(task)
	if err != nil {
		status := http.StatusConflict
		if errors.Is(err, engine.ErrUnknown) || errors.Is(err, ErrBadArgs) {
			status = http.StatusNotFound
		}
		writeJSON(w, status, apiError{CodeBadArgs, strings.TrimPrefix(err.Error(), "engine: ")})
		return
	}
	if kg := r.URL.Query().Get("keyGroup"); kg != "" {
		g, err := strconv.Atoi(kg)
		if err != nil || g < 0 {
			writeJSON(w, http.StatusBadRequest, apiError{CodeBadArgs, fmt.Sprintf("keyGroup %q is not a key group number", kg)})
			return
		}
		kept := v.Keyed[:0]
		for _, e := range v.Keyed {
			if e.KeyGroup == g {
				kept = append(kept, e)
			}
		}
		v.Keyed = kept
	}
	a := TaskStateAnswer{TaskStateView: v, Total: len(v.Keyed)}
	if len(a.Keyed) > maxInspectEntries {
		a.Keyed, a.Truncated = a.Keyed[:maxInspectEntries], true
	}
	if len(a.Timers) > maxInspectEntries {
		a.Timers = a.Timers[:maxInspectEntries]
	}
	writeJSON(w, http.StatusOK, a)
}

// assetHandler serves the embedded assets with a content-hash ETag, so a
// browser revalidates cheaply and never runs a stale module after an upgrade.
type assetHandler struct {
	fsys  fs.FS
	etags map[string]string
}

func newAssetHandler(fsys fs.FS) *assetHandler {
	h := &assetHandler{fsys: fsys, etags: map[string]string{}}
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		h.etags[p] = `"` + hex.EncodeToString(sum[:8]) + `"`
		return nil
	})
	return h
}

func (h *assetHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := path.Clean(strings.TrimPrefix(r.URL.Path, "/"))
	etag, ok := h.etags[name]
	if !ok || strings.HasSuffix(name, ".go") {
		http.Error(w, "no such asset: "+r.URL.Path, http.StatusNotFound)
		return
	}
	data, err := fs.ReadFile(h.fsys, name)
	if err != nil {
		http.Error(w, "cannot read asset: "+err.Error(), http.StatusInternalServerError)
		return
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}
