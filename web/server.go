package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/statelab/statelab/lessons"
)

// Config configures a Server. Zero values take the defaults listed.
type Config struct {
	// DataDir holds each session's Pebble working directories and
	// checkpoints, under DataDir/sessions/<id>. Required.
	DataDir string
	// Engines starts a job; required (NewEngine for the real engine).
	Engines EngineFactory
	// AllowOrigins are extra origins (scheme://host[:port]) whose pages may
	// open WebSockets and post to the API; the server's own origin is always
	// allowed, and their hosts join AllowHosts.
	AllowOrigins []string
	// AllowHosts are the host names and addresses the server answers besides
	// localhost, 127.0.0.1 and [::1] (guard.go; statelab serve passes the
	// names it listens on and, beyond loopback, this machine's addresses).
	// A request for any other Host is refused: DNS rebinding.
	AllowHosts []string
	// MaxSessions caps running sessions (default 32), forks aside.
	MaxSessions int
	// MaxForks caps running forks (default 64: every student of a class
	// of 60 may fork at once); ForkIdleTimeout closes a fork nobody has
	// watched for this long (default 2 minutes: a student who went back to
	// following gives the place back soon).
	MaxForks        int
	ForkIdleTimeout time.Duration
	// MaxImages caps the images time travel keeps over all sessions
	// (default 64; images.go): each is a paused copy of a run, a few MB for
	// a long one. Past the cap a session keeps taking images but thins its
	// own down towards two, so seeks stay cheap and memory stays bounded
	// however many sessions and forks play.
	MaxImages int
	// IdleTimeout closes a session nobody has watched for this long
	// (default 10 minutes).
	IdleTimeout time.Duration
	// PauseGrace pauses a playing session nobody has watched for this long
	// (default 15 seconds; idle.go); the next viewer resumes it.
	PauseGrace time.Duration
	// ReadLimit is the largest client message in bytes (default 64 KiB); a
	// larger one closes the connection with status 1009.
	ReadLimit int64
	// SendBuffer is the frames one client's queue holds (default 256). From
	// a quarter of it queued the client counts as behind and what it is sent
	// waits in its backlog, thinned and merged (backlog.go); a backlog past
	// 16 narrated events, one frame or 64 KiB per slot means the client has
	// stopped reading, and it is dropped.
	SendBuffer int
	// FrameInterval is the least time between two event frames (default
	// 50ms: at most 20 frames per second).
	FrameInterval time.Duration
	// SnapshotInterval is how often a running session sends a fresh
	// snapshot so counters stay exact (default 1s).
	SnapshotInterval time.Duration
	// EventBuffer is the engine subscription's buffer (default 8192; a
	// session paused because nobody watches holds a small one, idle.go).
	EventBuffer int
	// CommandRate and CommandBurst limit the commands one connection may
	// send (default 20 per second, bursts of 40).
	CommandRate  float64
	CommandBurst float64
	// PublicURL is the scheme://host[:port] the classroom's join links and
	// QR codes name (statelab serve sets it to the LAN address when it
	// listens beyond loopback); empty: the address the request came to.
	PublicURL string
	// MaxClassrooms caps classrooms running at once (default 8);
	// MaxFollowers caps one classroom's followers (default 250).
	MaxClassrooms int
	MaxFollowers  int
	// Limits bound what one session may ask (limits.go); zero fields take
	// DefaultLimits.
	Limits Limits
	// Lessons are the course the lesson pages and lesson sessions serve
	// (default: the embedded lessons, lessons.Default).
	Lessons *lessons.Catalog
	// Attach configures the attach page (/attach): limits on reading real
	// JobManagers for learners.
	Attach AttachConfig
	// Perf configures the Performance page (/performance) and its quick bench.
	Perf PerfConfig
	// Logger receives the server's log (default: discard).
	Logger *slog.Logger
}

func (c *Config) setDefaults() error {
	if c.DataDir == "" {
		return errors.New("web: Config.DataDir is required")
	}
	if c.Engines == nil {
		return errors.New("web: Config.Engines is required")
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	c.Limits.setDefaults()
	def(&c.MaxSessions, 32)
	def(&c.MaxForks, defaultMaxForks)
	def(&c.MaxImages, 64)
	defD(&c.ForkIdleTimeout, defaultForkIdle)
	// From 64 of 256 frames queued (about 3 s of a running session's
	// stream) a viewer's frames wait in its backlog (backlog.go): a browser
	// busy on a loaded machine (or a phone on a weak network) catches up
	// instead of being closed, reconnecting and missing the events its
	// story is told from (a 64-frame buffer closed a page at the moment of
	// a crash at load 10; a 256-frame one a page 12 s after a crash at
	// load 31).
	def(&c.SendBuffer, 256)
	def(&c.EventBuffer, 8192)
	defD(&c.IdleTimeout, 10*time.Minute)
	defD(&c.PauseGrace, defaultPauseGrace)
	defD(&c.FrameInterval, 50*time.Millisecond)
	defD(&c.SnapshotInterval, time.Second)
	if c.ReadLimit <= 0 {
		c.ReadLimit = 64 << 10
	}
	if c.CommandRate <= 0 {
		c.CommandRate = 20
	}
	if c.CommandBurst <= 0 {
		c.CommandBurst = 40
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Lessons == nil {
		cat, err := lessons.Default()
		if err != nil {
			return fmt.Errorf("web: load the lessons: %w", err)
		}
		c.Lessons = cat
	}
	for _, o := range c.AllowOrigins {
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("web: allowed origin %q is not scheme://host[:port], e.g. http://localhost:3000", o)
		}
	}
	return nil
}

// Server is StateLab's web app: pages, static assets, the WebSocket protocol
// and the sessions behind it.
//
// Contract:
//  1. New starts the hub and the idle-session reaper.
//  2. Serve the Handler (or call Serve with a listener).
//  3. Close ends every session (engines stopped, Pebble closed), every
//     connection, and the goroutines New started; it waits for them.
type Server struct {
	cfg      Config
	log      *slog.Logger
	hub      *hub
	sessions sessionTable
	i18n     *Catalog
	upgrader websocket.Upgrader
	mux      *http.ServeMux
	// ext holds the classrooms and share exports (classroom.go, share.go).
	ext serverExt
	// images counts the images kept by every session (images.go).
	images atomic.Int64
	// hosts is the Host allowlist; joins counts wrong classroom codes and
	// tokens per client address (guard.go).
	hosts atomic.Pointer[hostSet]
	joins joinGuard

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // hub, reaper
	conns  sync.WaitGroup // WebSocket handlers
	once   sync.Once
}

// New returns a running server.
func New(cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	// Session directories never outlive their server: clear what a crashed
	// run left behind.
	sessions := filepath.Join(cfg.DataDir, "sessions")
	if err := os.RemoveAll(sessions); err != nil {
		return nil, fmt.Errorf("clear old session data: %w", err)
	}
	if err := os.MkdirAll(sessions, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	cat, err := LoadCatalog()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &Server{
		cfg: cfg, log: cfg.Logger, hub: newHub(), i18n: cat,
		sessions: sessionTable{m: map[string]*Session{}},
		ctx:      ctx, cancel: cancel,
	}
	srv.hosts.Store(&hostSet{m: srv.cfg.allowedHosts()})
	srv.upgrader = websocket.Upgrader{
		ReadBufferSize: 4096, WriteBufferSize: 16384,
		CheckOrigin: srv.checkOrigin,
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			http.Error(w, reason.Error(), status)
		},
	}
	// Forks, share links and imported scenarios start replayed runs.
	srv.cfg.Engines = srv.replaying(srv.cfg.Engines)
	srv.mux = srv.routes()
	srv.wg.Add(2)
	go func() { defer srv.wg.Done(); srv.hub.run(ctx.Done()) }()
	go func() { defer srv.wg.Done(); srv.reaper(ctx) }()
	return srv, nil
}

// Handler serves every route with the security headers.
func (srv *Server) Handler() http.Handler { return securityHeaders(srv.checkHost(srv.mux)) }

// Close stops every session and connection and waits for them.
func (srv *Server) Close() error {
	srv.once.Do(func() {
		for _, s := range srv.sessions.all() {
			srv.sessions.remove(s.ID)
			s.close("the server is shutting down")
		}
		srv.cancel()
		srv.wg.Wait()
		srv.conns.Wait()
	})
	return nil
}

// Serve serves HTTP on ln until ctx is cancelled, then shuts down: open
// requests get a few seconds, sessions and engines are closed.
func (srv *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(srv.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		<-errc
		return srv.Close()
	case err := <-errc:
		_ = srv.Close()
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// Stats are figures for tests and logs.
type Stats struct {
	Sessions       int
	Clients        int
	DroppedClients int64
	// ThinnedFrames counts events frames a lagging viewer got lean (only
	// the events the views narrate, held in its backlog) or went without
	// (backlog.go).
	ThinnedFrames int64
}

// Stats returns the server's figures now.
func (srv *Server) Stats() Stats {
	return Stats{Sessions: len(srv.sessions.all()), Clients: int(srv.hub.connected.Load()), DroppedClients: srv.hub.dropped.Load(), ThinnedFrames: srv.hub.thinned.Load()}
}

// Session returns the running session with the given id.
func (srv *Server) Session(id string) (*Session, bool) {
	s := srv.sessions.get(id)
	return s, s != nil
}

func (srv *Server) reaper(ctx context.Context) {
	every := max(min(srv.cfg.IdleTimeout, srv.cfg.ForkIdleTimeout, srv.cfg.PauseGrace)/4, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			srv.reapIdle(now)
			srv.pauseUnwatchedSessions(now)
		}
	}
}

// securityHeaders sets the headers every response carries: a CSP that allows
// only the server's own scripts, styles and sockets (no inline script), no
// framing, no MIME sniffing, no referrer.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"font-src 'self'; connect-src 'self' ws://"+r.Host+" wss://"+r.Host+"; object-src 'none'; base-uri 'none'; "+
			"form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		next.ServeHTTP(w, r)
	})
}

// handleWS opens or joins a session and serves one WebSocket connection:
// this goroutine reads, a writer goroutine writes, the hub owns delivery.
func (srv *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	srv.conns.Add(1)
	defer srv.conns.Done()
	if r.URL.Query().Has("classroom") && srv.joinThrottled(w, r) {
		return
	}
	ws, err := srv.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered (403 for a foreign origin)
	}
	ws.SetReadLimit(srv.cfg.ReadLimit)
	s, role, release, pe := srv.openConn(r.URL.Query())
	defer release()
	if pe != nil && (pe.Code == CodeUnknownRoom || pe.Code == CodeForbidden) {
		srv.joinFailed(r)
	}
	if pe != nil {
		// Say why in a message the page can show, then close.
		_ = ws.SetWriteDeadline(time.Now().Add(writeWait))
		_ = ws.WriteMessage(websocket.TextMessage, mustJSON(errorMsg{Type: "error", Code: pe.Code, Message: pe.Message}))
		_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, truncateClose(pe.Message)))
		ws.Close()
		return
	}
	c := &client{ws: ws, send: make(chan []byte, srv.cfg.SendBuffer), dropped: make(chan struct{}), session: s, role: role,
		lim: newTokenBucket(srv.cfg.CommandRate, srv.cfg.CommandBurst)}
	go c.writer()
	if !s.join(c) {
		close(c.send) // never registered: the hub does not own it
		return
	}
	srv.read(c)
}

func (srv *Server) read(c *client) {
	defer srv.hub.unregister(c)
	ws := c.ws
	_ = ws.SetReadDeadline(time.Now().Add(pongWait))
	ws.SetPongHandler(func(string) error { return ws.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		typ, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		_ = ws.SetReadDeadline(time.Now().Add(pongWait))
		if typ != websocket.TextMessage {
			srv.hub.unicast(c, mustJSON(errorMsg{Type: "error", Code: CodeBadMessage, Message: "binary frames are not understood; send commands as JSON text frames"}))
			continue
		}
		c.session.handle(c, data)
	}
}

// openSession creates a session from ?template=… (with sandbox settings) or
// joins ?session=….
func (srv *Server) openSession(q url.Values) (*Session, *protoError) {
	if id := q.Get("session"); id != "" {
		s := srv.sessions.get(id)
		if s == nil {
			return nil, perr(CodeUnknownSession, "there is no session %q (sessions end after %s without a viewer); open a new sandbox", id, srv.cfg.IdleTimeout)
		}
		return s, nil
	}
	if slug := q.Get("lesson"); slug != "" {
		return srv.openLesson(slug, q)
	}
	tid := q.Get("template")
	if tid == "" {
		return nil, perr(CodeBadArgs, "say which session to open: /ws?template=ID starts one (templates: %s), /ws?session=ID joins one", templateIDs())
	}
	t, ok := Template(tid)
	if !ok {
		return nil, perr(CodeUnknownJob, "there is no template %q; choose one of %s", tid, templateIDs())
	}
	set, err := srv.settings(t, q)
	if err != nil {
		return nil, perr(CodeBadArgs, "%s", strings.TrimPrefix(err.Error(), ErrBadArgs.Error()+": "))
	}
	spec, err := t.Build(set)
	if err != nil {
		return nil, perr(CodeBadArgs, "%s", strings.TrimPrefix(err.Error(), ErrBadArgs.Error()+": "))
	}
	return srv.createSession(KindSandbox, t.ID, RunConfig{Spec: spec, Driver: set.Driver})
}

// createSession starts a session within the cap and lists it.
func (srv *Server) createSession(kind, template string, run RunConfig) (*Session, *protoError) {
	release := srv.sessions.release
	if kind == KindFork {
		if pe := srv.reserveFork(time.Now()); pe != nil {
			return nil, pe
		}
		release = srv.sessions.releaseFork
	} else if !srv.sessions.reserve(srv.cfg.MaxSessions) {
		return nil, perr(CodeSessionLimit, "the server already runs %d sessions, its limit; close a sandbox tab or try again when an idle one has ended", srv.cfg.MaxSessions)
	}
	s, err := srv.startSession(kind, template, run)
	if err != nil {
		release()
		if errors.Is(err, ErrBadArgs) {
			return nil, perr(CodeBadArgs, "%s", strings.TrimPrefix(err.Error(), ErrBadArgs.Error()+": "))
		}
		if errors.Is(err, ErrRefused) {
			return nil, perr(CodeRefused, "%s", strings.TrimPrefix(err.Error(), ErrRefused.Error()+": "))
		}
		return nil, perr(CodeInternal, "cannot start the job: %v", err)
	}
	srv.sessions.put(s)
	return s, nil
}
