//go:build js && wasm

// Command statelab-wasm is StateLab compiled to WebAssembly for the static
// site (statelab site DIR): the real engine, the lessons and the web
// package's sessions run inside the page, and the page's views talk to them
// with the same protocol messages they send a server over WebSocket.
//
// The module runs web.Server in the page, behind an in-memory listener:
// a view's connection is a WebSocket over net.Pipe to the same handler
// statelab serve runs, so sessions, lessons, time travel and sharing are
// the server's code, not a second implementation. Files (the fs backend's
// checkpoint directory, session directories) go to the page's in-memory
// file system (static/js/memfs.js), installed as globalThis.fs before the
// module starts.
//
// The contract with static/js/inpage.js:
//
//  1. inpage.js installs globalThis.fs (memfs) and loads wasm_exec.js, then
//     runs this module.
//  2. The module sets globalThis.statelabEngine = {connect, request,
//     version} and calls globalThis.statelabEngineReady() if it is set.
//  3. connect(query, onOpen, onMessage, onClose) opens /ws?query and returns
//     {send(text), close()}; onClose(code, reason) is called once.
//  4. request(method, url, body, contentType) serves one HTTP request
//     (/api/...) and returns a Promise of {status, contentType, body}.
//
// Pebble is not in this build (state.PebbleAvailable is false): the site
// offers the memory and fs backends.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"syscall/js"

	"github.com/gorilla/websocket"

	"github.com/statelab/statelab/lessons"
	"github.com/statelab/statelab/web"
)

// origin is the in-page server's own origin: requests carry it so that the
// server's Origin and Host checks pass as they do for a page it served.
const origin = "http://localhost"

// siteMaxKeys bounds a sandbox source's distinct keys on the static site:
// the settings form's own maximum.
const siteMaxKeys = 100_000

func main() {
	// The page's heap is small and the collector runs on the one thread:
	// collect less often (loading the course allocates a lot at start).
	debug.SetGCPercent(400)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dir := "/statelab"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fail(fmt.Errorf("create %s in the page's file system: %w", dir, err))
		return
	}
	// A server bounds a source's distinct keys at 10,000 (--max-keys):
	// every checkpoint copies the state of every key, and a server is
	// shared. The in-page engine is the learner's own: it takes what the
	// sandbox's settings form offers (up to 100,000), so a learner can watch
	// more than 10,000 keys (a 10,000-word vocabulary draws about 9,700
	// distinct words from the sandbox's 20,000 lines).
	srv, err := web.New(web.Config{DataDir: dir, Engines: web.NewEngine(logger), Logger: logger,
		MaxSessions: 8, Attach: web.AttachConfig{Off: true}, Lessons: course, Limits: web.Limits{Keys: siteMaxKeys}})
	if err != nil {
		fail(err)
		return
	}
	// Share links name the site's own address, so one opened elsewhere
	// comes back to this site (a server's /replay?s=… takes it too).
	if o := js.Global().Get("location").Get("origin"); o.Type() == js.TypeString && strings.HasPrefix(o.String(), "http") {
		// Under a path prefix (a project site): the worker says where the
		// site's root is (engine-worker.js's siteBase).
		base := ""
		if b := js.Global().Get("statelabSiteBase"); b.Type() == js.TypeString {
			base = strings.TrimSuffix(b.String(), "/")
		}
		srv.SetPublicURL(o.String() + base)
	}
	ln := newPipeListener()
	handler := srv.Handler()
	go func() { _ = (&http.Server{Handler: handler}).Serve(ln) }()

	api := js.Global().Get("Object").New()
	api.Set("version", web.ProtocolVersion)
	api.Set("connect", js.FuncOf(func(_ js.Value, args []js.Value) any {
		return connect(ln, handler, args)
	}))
	api.Set("request", js.FuncOf(func(_ js.Value, args []js.Value) any {
		return request(handler, args)
	}))
	js.Global().Set("statelabEngine", api)
	if ready := js.Global().Get("statelabEngineReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {} // serve until the page goes away
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "statelab-wasm:", err)
	if f := js.Global().Get("statelabEngineFailed"); f.Type() == js.TypeFunction {
		f.Invoke(err.Error())
	}
}

// The lessons load on first need, not at start: parsing and checking the
// course (lessons.Default) took most of the time to the sandbox's first
// snapshot, and the sandbox needs none of it. The server holds course from
// the start, empty; the first connection or request that names a lesson (or
// a scenario, which may be a lesson's) loads it and waits, then fills
// course in place. The site's pages are rendered at build time, so the
// in-page server reads the catalogue only to open a lesson's run and to
// share or replay one.
var (
	course      = &lessons.Catalog{Glossary: map[lessons.Lang]*lessons.Page{}}
	courseOnce  sync.Once
	courseReady = make(chan struct{})
	courseErr   error
)

// needCourse loads the lessons if they are not yet, and waits for them.
func needCourse(ctx context.Context) error {
	courseOnce.Do(func() {
		go func() {
			c, err := lessons.Default()
			if err == nil {
				*course = *c
			} else {
				courseErr = fmt.Errorf("load the lessons: %w", err)
			}
			close(courseReady)
		}()
	})
	select {
	case <-courseReady:
		return courseErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queryNeedsCourse: a lesson's run, or a share link (its scenario may be a
// lesson's).
func queryNeedsCourse(query string) bool {
	q, err := url.ParseQuery(query)
	return err == nil && (q.Has("lesson") || q.Has("s"))
}

// requestNeedsCourse: a scenario file's import (it may be a lesson's) and
// a replay.
func requestNeedsCourse(method, path string) bool {
	return method == http.MethodPost && (strings.HasPrefix(path, "/api/scenarios") || strings.HasPrefix(path, "/replay"))
}

// pipeListener hands the HTTP server the server ends of in-memory
// connections.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "in-page" }

// connect opens a WebSocket to /ws?query on the in-page server. JS gets an
// object at once; onOpen, onMessage(text) and onClose(code, reason) follow.
func connect(ln *pipeListener, handler http.Handler, args []js.Value) any {
	if len(args) < 4 {
		panic("statelabEngine.connect(query, onOpen, onMessage, onClose)")
	}
	query, onOpen, onMessage, onClose := args[0].String(), args[1], args[2], args[3]
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan string, 64)
	var closeOnce sync.Once
	closed := func(code int, reason string) {
		closeOnce.Do(func() {
			cancel()
			onClose.Invoke(code, reason)
		})
	}
	go func() {
		if queryNeedsCourse(query) {
			if err := needCourse(ctx); err != nil {
				closed(websocket.CloseInternalServerErr, err.Error())
				return
			}
		}
		q, err := replayQuery(handler, query)
		if err != nil {
			closed(websocket.ClosePolicyViolation, err.Error())
			return
		}
		query = q
		d := websocket.Dialer{NetDialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return ln.dial(ctx) }}
		h := http.Header{"Origin": {origin}}
		ws, resp, err := d.DialContext(ctx, "ws://localhost/ws?"+query, h)
		if err != nil {
			reason := err.Error()
			if resp != nil {
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
				reason = strings.TrimSpace(string(body))
			}
			closed(websocket.CloseAbnormalClosure, reason)
			return
		}
		onOpen.Invoke()
		go func() { // the writer: the one goroutine that writes to ws
			for {
				select {
				case m := <-out:
					if err := ws.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
						return
					}
				case <-ctx.Done():
					_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
					_ = ws.Close()
					return
				}
			}
		}()
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					closed(ce.Code, ce.Text)
				} else {
					closed(websocket.CloseAbnormalClosure, err.Error())
				}
				_ = ws.Close()
				return
			}
			onMessage.Invoke(string(data))
		}
	}()
	conn := js.Global().Get("Object").New()
	conn.Set("send", js.FuncOf(func(_ js.Value, a []js.Value) any {
		if len(a) == 0 {
			return false
		}
		select {
		case out <- a[0].String():
			return true
		case <-ctx.Done():
			return false
		default:
			// A page that sends faster than the engine reads: refuse,
			// as a full WebSocket buffer would.
			return false
		}
	}))
	conn.Set("close", js.FuncOf(func(js.Value, []js.Value) any {
		closed(websocket.CloseNormalClosure, "")
		return nil
	}))
	return conn
}

// replayQuery turns a share link's query (s=…, the live page's address on
// the site's /replay) into the session that replays it, as the server's
// replay form does (POST /replay answers with the live view of the new
// session); any other query is returned as it is.
func replayQuery(h http.Handler, query string) (string, error) {
	q, err := url.ParseQuery(query)
	if err != nil || !q.Has("s") || q.Has("session") || q.Has("template") || q.Has("lesson") {
		return query, nil
	}
	form := url.Values{"s": {q.Get("s")}}.Encode()
	req, err := http.NewRequest(http.MethodPost, "http://localhost/replay", strings.NewReader(form))
	if err != nil {
		return "", err
	}
	req.Header.Set("Origin", origin)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := &recorder{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(w, req)
	loc, err := url.Parse(w.header.Get("Location"))
	if w.status != http.StatusSeeOther || err != nil || loc.Query().Get("session") == "" {
		return "", fmt.Errorf("the share link cannot be replayed (HTTP %d): %s", w.status, pageText(w.body.String()))
	}
	return "session=" + url.QueryEscape(loc.Query().Get("session")), nil
}

// pageText is the text of an error page's first paragraph, for a close
// reason.
func pageText(html string) string {
	if i := strings.Index(html, "<p>"); i >= 0 {
		html = html[i+3:]
		if j := strings.Index(html, "</p>"); j >= 0 {
			html = html[:j]
		}
	}
	if len(html) > 100 {
		html = html[:100]
	}
	return html
}

// request serves one HTTP request on the in-page server and returns a
// Promise of {status, contentType, body}; body is text, or a Uint8Array for
// a binary answer.
func request(h http.Handler, args []js.Value) any {
	if len(args) < 2 {
		panic("statelabEngine.request(method, url, body, contentType)")
	}
	method, url := args[0].String(), args[1].String()
	var body []byte
	ctype := ""
	if len(args) > 2 && args[2].Truthy() {
		if args[2].Type() == js.TypeString {
			body = []byte(args[2].String())
		} else {
			body = make([]byte, args[2].Get("length").Int())
			js.CopyBytesToGo(body, args[2])
		}
	}
	if len(args) > 3 && args[3].Type() == js.TypeString {
		ctype = args[3].String()
	}
	var resolve js.Value
	executor := js.FuncOf(func(_ js.Value, a []js.Value) any {
		resolve = a[0]
		return nil
	})
	defer executor.Release()
	promise := js.Global().Get("Promise").New(executor)
	go func() {
		req, err := http.NewRequest(method, "http://localhost"+url, bytes.NewReader(body))
		res := js.Global().Get("Object").New()
		if err == nil && requestNeedsCourse(method, req.URL.Path) {
			err = needCourse(context.Background())
		}
		if err != nil {
			res.Set("status", http.StatusBadRequest)
			res.Set("contentType", "text/plain; charset=utf-8")
			res.Set("body", err.Error())
			resolve.Invoke(res)
			return
		}
		req.Header.Set("Origin", origin)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		w := &recorder{header: http.Header{}, status: http.StatusOK}
		h.ServeHTTP(w, req)
		res.Set("status", w.status)
		ct := w.header.Get("Content-Type")
		res.Set("contentType", ct)
		if loc := w.header.Get("Location"); loc != "" {
			res.Set("location", loc)
		}
		if strings.HasPrefix(ct, "text/") || strings.Contains(ct, "json") || ct == "" {
			res.Set("body", w.body.String())
		} else {
			b := js.Global().Get("Uint8Array").New(w.body.Len())
			js.CopyBytesToJS(b, w.body.Bytes())
			res.Set("body", b)
		}
		resolve.Invoke(res)
	}()
	return promise
}

// recorder is the ResponseWriter of an in-page request.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	r.wrote = true
	return r.body.Write(p)
}
