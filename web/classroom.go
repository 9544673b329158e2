package web

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/statelab/statelab/web/pages"
	"github.com/statelab/statelab/web/qr"
)

// A classroom is one session run by a presenter and mirrored to followers.
// The presenter holds a token (32 bytes from crypto/rand, compared in
// constant time); whoever joins with the short code alone follows: the
// hub sends them every frame, and the session refuses their control
// commands (Role). A follower may fork the run into a session of its own.

// Error codes of classrooms (docs/protocol.md).
const (
	CodeUnknownRoom = "unknown-classroom" // /ws?classroom=CODE names no classroom
	CodeRoomFull    = "classroom-full"    // the classroom has its most followers
)

// Defaults of the classroom limits (Config.MaxClassrooms, MaxFollowers).
const (
	defaultMaxClassrooms = 8
	defaultMaxFollowers  = 250
	maxClassroomBody     = 4 << 10
)

// codeAlphabet has no 0/O, 1/I/L: a code read off a projector is typed
// right. Six characters give 31^6 ≈ 887 million codes.
const (
	codeAlphabet = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
	codeLen      = 6
)

type classroom struct {
	Code      string
	Template  string
	Created   time.Time
	session   *Session
	tokenHash [32]byte
	followers atomic.Int64
}

func sha256Of(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// checkToken compares a presented token with the classroom's in constant
// time (hashes first, so the length of the guess tells nothing either).
func (c *classroom) checkToken(token string) bool {
	h := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(h[:], c.tokenHash[:]) == 1
}

// serverExt is the server's classroom and sharing state.
type serverExt struct {
	rooms   classrooms
	exports atomic.Int32 // event-log exports running
}

// classrooms is the server's table of classrooms, by code.
type classrooms struct {
	mu sync.Mutex
	m  map[string]*classroom
}

// get returns the classroom with code whose session still runs.
func (t *classrooms) get(srv *Server, code string) *classroom {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.m[code]
	if c != nil && srv.sessions.get(c.session.ID) == nil {
		delete(t.m, code) // its session ended (idle, or the server closes)
		return nil
	}
	return c
}

// live counts classrooms whose session runs, forgetting ended ones.
func (t *classrooms) live(srv *Server) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	for code, c := range t.m {
		if srv.sessions.get(c.session.ID) == nil {
			delete(t.m, code)
		}
	}
	return len(t.m)
}

func (srv *Server) maxClassrooms() int {
	if srv.cfg.MaxClassrooms > 0 {
		return srv.cfg.MaxClassrooms
	}
	return defaultMaxClassrooms
}

func (srv *Server) maxFollowers() int {
	if srv.cfg.MaxFollowers > 0 {
		return srv.cfg.MaxFollowers
	}
	return defaultMaxFollowers
}

func randomCode() string {
	b := make([]byte, codeLen)
	n := big.NewInt(int64(len(codeAlphabet)))
	for i := range b {
		v, err := rand.Int(rand.Reader, n)
		if err != nil {
			panic("web: crypto/rand failed: " + err.Error())
		}
		b[i] = codeAlphabet[v.Int64()]
	}
	return string(b)
}

// NormalizeCode reads a typed join code: case, spaces and dashes do not
// matter. It returns "" for anything that cannot be a code.
func NormalizeCode(s string) string {
	s = strings.ToUpper(strings.NewReplacer(" ", "", "-", "").Replace(strings.TrimSpace(s)))
	if len(s) != codeLen {
		return ""
	}
	for _, r := range s {
		if !strings.ContainsRune(codeAlphabet, r) {
			return ""
		}
	}
	return s
}

// ClassroomRequest is the body of POST /api/classrooms (every field optional).
type ClassroomRequest struct {
	Template string `json:"template"`
	// Settings are the sandbox settings as /ws?template= takes them
	// (backend, p.<operator>, seed, …); numbers may be JSON numbers.
	Settings map[string]any `json:"settings,omitempty"`
}

// ClassroomInfo answers a classroom's creation.
type ClassroomInfo struct {
	Code           string `json:"code"`
	PresenterToken string `json:"presenterToken"`
	PresenterURL   string `json:"presenterURL"`
	JoinURL        string `json:"joinURL"`
	Session        string `json:"session"`
}

// CreateClassroom starts a classroom's session. base is the scheme and host
// the URLs start with (Config.PublicURL wins when set).
func (srv *Server) CreateClassroom(req ClassroomRequest, base string) (ClassroomInfo, error) {
	info, pe := srv.createClassroom(req, base)
	if pe != nil {
		return info, pe
	}
	return info, nil
}

func (srv *Server) createClassroom(req ClassroomRequest, base string) (ClassroomInfo, *protoError) {
	if req.Template == "" {
		req.Template = Templates[0].ID
	}
	t, ok := Template(req.Template)
	if !ok {
		return ClassroomInfo{}, perr(CodeUnknownJob, "there is no template %q; choose one of %s", req.Template, templateIDs())
	}
	q := url.Values{}
	for k, v := range req.Settings {
		switch v := v.(type) {
		case string:
			q.Set(k, v)
		case float64:
			q.Set(k, fmt.Sprint(v))
		case bool:
			q.Set(k, fmt.Sprint(v))
		default:
			return ClassroomInfo{}, perr(CodeBadArgs, "settings.%s must be a string or a number", k)
		}
	}
	set, err := srv.settings(t, q)
	if err != nil {
		return ClassroomInfo{}, perr(CodeBadArgs, "%s", strings.TrimPrefix(err.Error(), ErrBadArgs.Error()+": "))
	}
	spec, err := t.Build(set)
	if err != nil {
		return ClassroomInfo{}, perr(CodeBadArgs, "%s", strings.TrimPrefix(err.Error(), ErrBadArgs.Error()+": "))
	}
	if n := srv.ext.rooms.live(srv); n >= srv.maxClassrooms() {
		return ClassroomInfo{}, perr(CodeSessionLimit, "the server already runs %d classrooms, its limit; end one (it ends %s after its last viewer leaves) or start the server with a higher --max-classrooms", n, srv.cfg.IdleTimeout)
	}
	s, pe := srv.createSession(KindClassroom, t.ID, RunConfig{Spec: spec, Driver: set.Driver})
	if pe != nil {
		return ClassroomInfo{}, pe
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		panic("web: crypto/rand failed: " + err.Error())
	}
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	room := &classroom{Template: t.ID, Created: time.Now(), session: s, tokenHash: sha256Of(token)}
	s.x.room = room // before anyone can join: the code is not listed yet
	srv.ext.rooms.mu.Lock()
	if srv.ext.rooms.m == nil {
		srv.ext.rooms.m = map[string]*classroom{}
	}
	for {
		room.Code = randomCode()
		if _, taken := srv.ext.rooms.m[room.Code]; !taken {
			break
		}
	}
	srv.ext.rooms.m[room.Code] = room
	srv.ext.rooms.mu.Unlock()
	base = srv.base(base)
	srv.log.Info("classroom created", "code", room.Code, "session", s.ID, "template", t.ID, "join", base+"/join/"+room.Code)
	return ClassroomInfo{
		Code: room.Code, PresenterToken: token, Session: s.ID,
		PresenterURL: base + "/classroom/" + room.Code + "?token=" + token,
		JoinURL:      base + "/join/" + room.Code,
	}, nil
}

// base returns the URL prefix for links handed out: Config.PublicURL, else
// the one the request came with.
func (srv *Server) base(fromRequest string) string {
	if srv.cfg.PublicURL != "" {
		return strings.TrimRight(srv.cfg.PublicURL, "/")
	}
	return strings.TrimRight(fromRequest, "/")
}

func requestBase(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// sameOrigin refuses a browser's cross-site request: one without an Origin
// header (curl, scripts) or from the server's own origin passes.
func (srv *Server) sameOrigin(w http.ResponseWriter, r *http.Request) bool {
	if srv.checkOrigin(r) {
		return true
	}
	writeJSON(w, http.StatusForbidden, apiError{CodeForbidden, "requests from other sites may not create classrooms or sessions; open StateLab itself"})
	return false
}

func (srv *Server) handleCreateClassroom(w http.ResponseWriter, r *http.Request) {
	if !srv.sameOrigin(w, r) {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxClassroomBody+1))
	if err != nil || len(body) > maxClassroomBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, apiError{CodeBadArgs, fmt.Sprintf("the body is larger than %d bytes; send {\"template\":\"wordcount\"}", maxClassroomBody)})
		return
	}
	var req ClassroomRequest
	if len(bytes.TrimSpace(body)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{CodeBadJSON, fmt.Sprintf("cannot read the body (%v); send {\"template\":\"wordcount\"} or nothing", err)})
			return
		}
	}
	info, pe := srv.createClassroom(req, requestBase(r))
	if pe != nil {
		writeJSON(w, classroomStatus(pe.Code), apiError{pe.Code, pe.Message})
		return
	}
	writeJSON(w, http.StatusCreated, info)
}

func classroomStatus(code string) int {
	switch code {
	case CodeSessionLimit:
		return http.StatusServiceUnavailable
	case CodeUnknownRoom:
		return http.StatusNotFound
	case CodeInternal:
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// ClassroomStatus is GET /api/classrooms/{code}: what anyone with the code
// may know.
type ClassroomStatus struct {
	Code      string `json:"code"`
	Template  string `json:"template"`
	JoinURL   string `json:"joinURL"`
	Followers int    `json:"followers"`
	Session   string `json:"session"`
}

func (srv *Server) handleClassroomStatus(w http.ResponseWriter, r *http.Request) {
	if srv.joinThrottled(w, r) {
		return
	}
	room := srv.ext.rooms.get(srv, NormalizeCode(r.PathValue("code")))
	if room == nil {
		srv.joinFailed(r)
		writeJSON(w, http.StatusNotFound, apiError{CodeUnknownRoom, fmt.Sprintf("there is no classroom %q; check the code on the projector", r.PathValue("code"))})
		return
	}
	writeJSON(w, http.StatusOK, ClassroomStatus{Code: room.Code, Template: room.Template, JoinURL: srv.base(requestBase(r)) + "/join/" + room.Code,
		Followers: int(room.followers.Load()), Session: room.session.ID})
}

// openConn decides what a WebSocket opens and with which role:
// ?classroom=CODE&token=T the presenter, ?classroom=CODE a follower, and
// ?session=ID of a classroom's session a follower too (the session id is
// no secret: every follower's snapshot carries it). release undoes the
// follower count when the connection ends.
func (srv *Server) openConn(q url.Values) (s *Session, role Role, release func(), pe *protoError) {
	release = func() {}
	var room *classroom
	if q.Has("classroom") {
		code := NormalizeCode(q.Get("classroom"))
		room = srv.ext.rooms.get(srv, code)
		if room == nil {
			return nil, 0, release, perr(CodeUnknownRoom, "there is no classroom %q (a classroom ends %s after its last viewer leaves); check the code on the projector", q.Get("classroom"), srv.cfg.IdleTimeout)
		}
		if q.Has("token") {
			if !room.checkToken(q.Get("token")) {
				return nil, 0, release, perr(CodeForbidden, "this presenter token does not open classroom %s; use the presenter URL printed when it was created, or follow it with /join/%s", room.Code, room.Code)
			}
			return room.session, RoleController, release, nil
		}
		s = room.session
	} else {
		s, pe = srv.openSession(q)
		if pe != nil {
			return nil, 0, release, pe
		}
		room = s.x.room
		if room == nil {
			return s, RoleController, release, nil
		}
	}
	if n := room.followers.Add(1); n > int64(srv.maxFollowers()) {
		room.followers.Add(-1)
		return nil, 0, release, perr(CodeRoomFull, "classroom %s already has %d followers, its limit; watch on a neighbour's screen, or ask whoever runs the server to start it with a higher --max-followers", room.Code, srv.maxFollowers())
	}
	var once sync.Once
	return s, RoleFollower, func() { once.Do(func() { room.followers.Add(-1) }) }, nil
}

// --- pages --------------------------------------------------------------------

func (srv *Server) classroomRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/classrooms", srv.handleCreateClassroom)
	mux.HandleFunc("GET /api/classrooms/{code}", srv.handleClassroomStatus)
	mux.HandleFunc("POST /classroom", srv.handleClassroomForm)
	mux.HandleFunc("GET /classroom/{code}", srv.handlePresenter)
	mux.HandleFunc("GET /join", srv.handleJoinForm)
	mux.HandleFunc("GET /join/{code}", srv.handleFollower)
	mux.HandleFunc("GET /join/{code}/qr.svg", srv.handleQR)
	srv.shareRoutes(mux)
}

// handleClassroomStart is GET /classroom: start a classroom, or join one.
func (srv *Server) handleClassroomStart(w http.ResponseWriter, r *http.Request) {
	p := srv.page(w, r, "classroom", "classroom.title")
	f := pages.ClassroomStart{}
	for _, t := range Templates {
		f.Templates = append(f.Templates, pages.TemplateCard{ID: t.ID, Title: p.T(t.TitleKey), Description: p.T(t.DescKey), Checked: t.ID == Templates[0].ID})
	}
	srv.render(w, r, http.StatusOK, pages.Classroom(p, f))
}

// handleClassroomForm is the start form's POST: create, then go to the
// presenter page (a relative URL, so it works on any address the presenter
// used).
func (srv *Server) handleClassroomForm(w http.ResponseWriter, r *http.Request) {
	if !srv.checkOrigin(r) {
		http.Error(w, "requests from other sites may not start classrooms; open /classroom on this server and press the start button there", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxClassroomBody)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "cannot read the form: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := ClassroomRequest{Template: r.PostForm.Get("template")}
	if seed := r.PostForm.Get("seed"); seed != "" {
		req.Settings = map[string]any{"seed": seed}
	}
	info, pe := srv.createClassroom(req, requestBase(r))
	if pe != nil {
		p := srv.page(w, r, "classroom", "classroom.title")
		srv.render(w, r, classroomStatus(pe.Code), pages.NotFound(p, pe.Message))
		return
	}
	http.Redirect(w, r, "/classroom/"+info.Code+"?token="+url.QueryEscape(info.PresenterToken), http.StatusSeeOther)
}

func (srv *Server) roomPage(w http.ResponseWriter, r *http.Request, room *classroom, presenter bool, token string) {
	p := srv.page(w, r, "classroom", "classroom.title")
	p.Script = "/static/js/classroom.js"
	p.Wide = true
	join := srv.base(requestBase(r)) + "/join/" + room.Code
	v := pages.ClassroomView{Code: room.Code, JoinURL: join, QRURL: "/join/" + room.Code + "/qr.svg",
		Presenter: presenter, LoopbackOnly: loopbackURL(join)}
	q := url.Values{"classroom": {room.Code}}
	if presenter {
		q.Set("token", token)
	}
	v.Workspace = pages.Workspace{WSQuery: q.Encode()}
	srv.render(w, r, http.StatusOK, pages.ClassroomRoom(p, v))
}

func (srv *Server) handlePresenter(w http.ResponseWriter, r *http.Request) {
	if srv.joinThrottled(w, r) {
		return
	}
	code := NormalizeCode(r.PathValue("code"))
	room := srv.ext.rooms.get(srv, code)
	if room == nil {
		srv.unknownRoom(w, r)
		return
	}
	token := r.URL.Query().Get("token")
	if !room.checkToken(token) {
		srv.joinFailed(r)
		p := srv.page(w, r, "classroom", "classroom.title")
		srv.render(w, r, http.StatusForbidden, pages.NotFound(p, fmt.Sprintf(p.T("classroom.badToken"), room.Code, "/join/"+room.Code)))
		return
	}
	srv.roomPage(w, r, room, true, token)
}

func (srv *Server) handleFollower(w http.ResponseWriter, r *http.Request) {
	if srv.joinThrottled(w, r) {
		return
	}
	room := srv.ext.rooms.get(srv, NormalizeCode(r.PathValue("code")))
	if room == nil {
		srv.unknownRoom(w, r)
		return
	}
	srv.roomPage(w, r, room, false, "")
}

func (srv *Server) unknownRoom(w http.ResponseWriter, r *http.Request) {
	srv.joinFailed(r)
	p := srv.page(w, r, "classroom", "classroom.title")
	srv.render(w, r, http.StatusNotFound, pages.JoinForm(p, fmt.Sprintf(p.T("classroom.unknown"), r.PathValue("code"))))
}

// handleJoinForm is GET /join: type the code from the projector.
func (srv *Server) handleJoinForm(w http.ResponseWriter, r *http.Request) {
	if c := r.URL.Query().Get("code"); c != "" {
		if code := NormalizeCode(c); code != "" {
			http.Redirect(w, r, "/join/"+code, http.StatusSeeOther)
			return
		}
		p := srv.page(w, r, "classroom", "classroom.title")
		srv.render(w, r, http.StatusBadRequest, pages.JoinForm(p, fmt.Sprintf(p.T("classroom.badCode"), c)))
		return
	}
	p := srv.page(w, r, "classroom", "classroom.title")
	srv.render(w, r, http.StatusOK, pages.JoinForm(p, ""))
}

// handleQR draws the join URL's QR code.
func (srv *Server) handleQR(w http.ResponseWriter, r *http.Request) {
	if srv.joinThrottled(w, r) {
		return
	}
	room := srv.ext.rooms.get(srv, NormalizeCode(r.PathValue("code")))
	if room == nil {
		srv.joinFailed(r)
		http.Error(w, "no such classroom", http.StatusNotFound)
		return
	}
	code, err := qr.Encode([]byte(srv.base(requestBase(r)) + "/join/" + room.Code))
	if err != nil {
		http.Error(w, "cannot draw the QR code: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = io.WriteString(w, code.SVG(8))
}

// loopbackURL reports whether u's host is a loopback address, which other
// machines cannot reach.
func loopbackURL(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	h := pu.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// SetPublicURL sets Config.PublicURL once the server's address is known
// (statelab serve learns its LAN address after it listens). Call it before
// serving requests.
func (srv *Server) SetPublicURL(u string) {
	srv.cfg.PublicURL = strings.TrimRight(u, "/")
	srv.hosts.Store(&hostSet{m: srv.cfg.allowedHosts()})
}
