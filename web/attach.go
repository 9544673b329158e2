package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/statelab/statelab/attach"
	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/web/pages"
)

// AttachConfig configures the attach page (/attach), where StateLab's server
// reads a real JobManager's REST API on a learner's behalf. The browser only
// ever talks to StateLab; the server sends the GET requests. Zero values
// take the defaults listed.
type AttachConfig struct {
	// MaxWatches caps the JobManagers polled at the same time (default 8).
	MaxWatches int
	// MinInterval and MaxInterval bound the poll interval a page may ask
	// for (default 1s and 1m).
	MinInterval time.Duration
	MaxInterval time.Duration
	// Timeout bounds one REST request, connecting included (default 5s).
	Timeout time.Duration
	// MaxAnswer caps the bytes read from one REST answer (default 4 MiB).
	// Flink's answers are kilobytes; the cap stops a wrong address from
	// streaming something endless into the server.
	MaxAnswer int64
	// IdleTimeout stops polling a JobManager no page has asked about for
	// this long (default 1 minute).
	IdleTimeout time.Duration
	// Off refuses every attach: statelab serve sets it when the server
	// listens beyond loopback without --allow-attach, because attach makes
	// the server read addresses of its own network for whoever asks.
	Off bool
}

func (c AttachConfig) withDefaults() AttachConfig {
	if c.MaxWatches <= 0 {
		c.MaxWatches = 8
	}
	if c.MinInterval <= 0 {
		c.MinInterval = time.Second
	}
	if c.MaxInterval <= 0 {
		c.MaxInterval = time.Minute
	}
	if c.MaxInterval < c.MinInterval {
		c.MaxInterval = c.MinInterval
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	if c.MaxAnswer <= 0 {
		c.MaxAnswer = 4 << 20
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = time.Minute
	}
	return c
}

// Attach error codes: what the page keys its advice on. Each reply's message
// (from package attach) says what was wrong and what to do in English; the
// page adds the advice for the code in the reader's language.
const (
	AttachBadAddress    = "bad-address"    // not an http(s) URL with a host
	AttachBadArgs       = "bad-args"       // interval, max parallelism, key, vertex …
	AttachLimit         = "attach-limit"   // too many JobManagers watched
	AttachUnknownWatch  = "unknown-watch"  // the watch ended (idle) or never existed
	AttachUnreachable   = "unreachable"    // nothing answered
	AttachNotFlink      = "not-flink"      // something answered, not Flink's REST API
	AttachTooLarge      = "too-large"      // an answer above AttachConfig.MaxAnswer
	AttachJobVanished   = "job-vanished"   // a listed job was gone when asked about
	AttachMissingField  = "missing-field"  // an older Flink lacks a field
	AttachFlinkError    = "flink-error"    // Flink answered an error status
	AttachNotKeyed      = "not-keyed"      // planner or lookup on a vertex without key groups
	AttachUnknownVertex = "unknown-vertex" // job or vertex not in the last reading
	AttachFailed        = "failed"         // anything else
)

// AttachIssue is an error or a warning as the page shows it.
type AttachIssue struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	JobID   string `json:"jobId,omitempty"`
	// Field is the missing field's JSON name for missing-field.
	Field string `json:"field,omitempty"`
}

// AttachJob is a job of the reading with its checkpoint timeline.
type AttachJob struct {
	attach.Job
	// Timeline is the checkpoint history oldest first (Checkpoints.Timeline).
	Timeline []attach.Checkpoint `json:"timeline"`
}

// AttachState is GET /api/attach/{id}: the last good reading of a JobManager
// beside the latest error, so the page keeps showing what it knew.
type AttachState struct {
	ID             string `json:"id"`
	Flink          string `json:"flink"`
	Interval       string `json:"interval"`
	IntervalMillis int64  `json:"intervalMillis"`
	MaxParallelism string `json:"maxParallelism,omitempty"`
	// Polls counts finished readings, good or bad.
	Polls int64 `json:"polls"`
	// CheckedAt is when the latest reading finished; UpdatedAt when the
	// latest good one did. Both are absent before the first.
	CheckedAt *time.Time `json:"checkedAt,omitempty"`
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
	// Stale: Jobs are from an earlier reading, the latest one failed.
	Stale    bool          `json:"stale"`
	Jobs     []AttachJob   `json:"jobs"`
	Error    *AttachIssue  `json:"error,omitempty"`
	Warnings []AttachIssue `json:"warnings"`
	// Labels are the words of Flink's web UI for the checkpoint views.
	Labels map[string]string `json:"labels"`
}

// AttachRescale is GET /api/attach/{id}/rescale: the rescale planner.
type AttachRescale struct {
	JobID    string `json:"jobId"`
	VertexID string `json:"vertexId"`
	// The plan (rescale.NewPlan) without its per-key-group list, which the
	// page derives from the ranges.
	MaxParallelism int                         `json:"maxParallelism"`
	From           int                         `json:"from"`
	To             int                         `json:"to"`
	Before         []rescale.KeyGroupRange     `json:"before"`
	Moved          []int                       `json:"moved"`
	MovedRuns      []rescale.KeyGroupRange     `json:"movedRuns"`
	Subtasks       []rescale.SubtaskAssignment `json:"subtasks"`
}

// AttachKey is GET /api/attach/{id}/key: where a key's state lives.
type AttachKey struct {
	JobID    string `json:"jobId"`
	VertexID string `json:"vertexId"`
	attach.KeyOwner
	MaxParallelism int                   `json:"maxParallelism"`
	Parallelism    int                   `json:"parallelism"`
	Range          rescale.KeyGroupRange `json:"range"`
}

// attachLabels are Flink's checkpoint labels, sent with every state so the
// page prints Flink's words from one place (package attach).
var attachLabels = map[string]string{
	"triggered": attach.LabelTriggered, "inProgress": attach.LabelInProgress, "completed": attach.LabelCompleted,
	"failed": attach.LabelFailed, "restored": attach.LabelRestored, "latestRestore": attach.LabelLatestRestore,
	"triggerTime": attach.LabelTriggerTime, "latestAck": attach.LabelLatestAcknowledgement,
	"endToEnd": attach.LabelEndToEndDuration, "checkpointedSize": attach.LabelCheckpointedDataSize,
	"fullSize": attach.LabelFullCheckpointDataSize, "acknowledged": attach.LabelAcknowledged,
	"processedPersisted": attach.LabelProcessedPersisted,
}

// attachManager owns the watches: one attach.Poller per JobManager address
// (and interval and max-parallelism fallback), shared by every page that
// asks for the same, stopped when no page has asked for IdleTimeout.
type attachManager struct {
	cfg  AttachConfig
	ctx  context.Context
	http *http.Client

	mu      sync.Mutex
	watches map[string]*attachWatch // by id
	byKey   map[string]*attachWatch // by address|interval|fallback
	closed  bool
	wg      sync.WaitGroup // the reaper
}

type attachWatch struct {
	id, key  string
	flink    string
	interval time.Duration
	mp       string
	poller   *attach.Poller

	lastRead  atomic.Int64 // unix nanoseconds
	polls     atomic.Int64
	checkedAt atomic.Int64 // unix nanoseconds, 0 before the first reading
}

func newAttachManager(ctx context.Context, cfg AttachConfig) *attachManager {
	m := &attachManager{cfg: cfg.withDefaults(), ctx: ctx, watches: map[string]*attachWatch{}, byKey: map[string]*attachWatch{}}
	m.http = attachHTTPClient(m.cfg)
	m.wg.Add(1)
	go func() { defer m.wg.Done(); m.reap() }()
	return m
}

// attachHTTPClient is the client every watch reads with: http and https
// only (net/http knows no other scheme, so no file: or other URL reaches
// the file system), a deadline per request, at most three redirects and
// only to http(s), and answers capped at MaxAnswer bytes.
func attachHTTPClient(cfg AttachConfig) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// Never link-local or cloud metadata addresses, checked on the address
	// dialled (attach/guard.go); no proxy, so that address is the one checked.
	t.DialContext = attach.GuardDialer(&net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}).DialContext
	t.Proxy = nil
	t.TLSHandshakeTimeout = cfg.Timeout
	t.ResponseHeaderTimeout = cfg.Timeout
	t.MaxResponseHeaderBytes = 64 << 10
	t.MaxIdleConnsPerHost = 2
	t.IdleConnTimeout = 30 * time.Second
	return &http.Client{
		Timeout:   cfg.Timeout,
		Transport: &cappedTransport{next: t, max: cfg.MaxAnswer},
		// Redirects only within the same scheme, host and port.
		CheckRedirect: attach.SameOriginRedirects,
	}
}

// AnswerTooLargeError is an answer above the attach page's cap.
type AnswerTooLargeError struct {
	URL string
	Max int64
}

func (e *AnswerTooLargeError) Error() string {
	return fmt.Sprintf("GET %s answered more than %s; the attach page reads at most that much per answer, and Flink's REST answers are a few kilobytes: check that the address is the JobManager's REST address, the one the Flink web UI is served from", e.URL, formatBytes(e.Max))
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// cappedTransport refuses answers above max bytes: at once when
// Content-Length says so, else when the body grows past it.
type cappedTransport struct {
	next http.RoundTripper
	max  int64
}

func (c *cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > c.max {
		resp.Body.Close()
		return nil, &AnswerTooLargeError{URL: req.URL.Redacted(), Max: c.max}
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: c.max, url: req.URL.Redacted(), max: c.max}
	return resp, nil
}

type cappedBody struct {
	io.ReadCloser
	left int64
	url  string
	max  int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &AnswerTooLargeError{URL: b.url, Max: b.max}
	}
	// Read one byte beyond the cap, so an answer of exactly max bytes ends
	// with EOF and a longer one is caught.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, &AnswerTooLargeError{URL: b.url, Max: b.max}
	}
	return n, err
}

// attachRequest is POST /api/attach's body.
type attachRequest struct {
	Flink          string `json:"flink"`
	Interval       string `json:"interval"`
	MaxParallelism string `json:"maxParallelism"`
}

// parseAttachInterval reads "2s", "1500ms" or a number of seconds.
func (m *attachManager) parseInterval(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 2 * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return 0, fmt.Errorf("poll interval %q is not a duration; write e.g. 2s or 500ms", s)
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d < m.cfg.MinInterval || d > m.cfg.MaxInterval {
		return 0, fmt.Errorf("poll interval %s is outside %s to %s; choose one in between", d, m.cfg.MinInterval, m.cfg.MaxInterval)
	}
	return d, nil
}

// start returns the watch for req, starting one when no page watches the
// same address with the same settings.
func (m *attachManager) start(req attachRequest) (*attachWatch, *AttachIssue, int) {
	u, err := attach.ParseAddress(req.Flink)
	if err != nil {
		return nil, &AttachIssue{Code: AttachBadAddress, Message: strings.TrimPrefix(err.Error(), "attach: ")}, http.StatusBadRequest
	}
	if u.User != nil {
		return nil, &AttachIssue{Code: AttachBadAddress, Message: fmt.Sprintf("the address %s carries a user name or password; leave credentials out of it (StateLab shows the address on the page and in links)", u.Redacted())}, http.StatusBadRequest
	}
	interval, err := m.parseInterval(req.Interval)
	if err != nil {
		return nil, &AttachIssue{Code: AttachBadArgs, Message: err.Error()}, http.StatusBadRequest
	}
	mpText := strings.TrimSpace(req.MaxParallelism)
	fallback, err := attach.ParseMaxParallelismFallback(mpText)
	if err != nil {
		return nil, &AttachIssue{Code: AttachBadArgs, Message: strings.TrimPrefix(err.Error(), "rescale: ") + "; leave it empty, write a number, or write default"}, http.StatusBadRequest
	}
	client, err := attach.NewClient(u.String(), attach.WithHTTPClient(m.http))
	if err != nil {
		return nil, &AttachIssue{Code: AttachBadAddress, Message: strings.TrimPrefix(err.Error(), "attach: ")}, http.StatusBadRequest
	}
	key := client.BaseURL() + "|" + interval.String() + "|" + mpText

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, &AttachIssue{Code: AttachFailed, Message: "the server is shutting down"}, http.StatusServiceUnavailable
	}
	if w, ok := m.byKey[key]; ok {
		w.touch()
		return w, nil, http.StatusOK
	}
	if len(m.watches) >= m.cfg.MaxWatches {
		return nil, &AttachIssue{Code: AttachLimit, Message: fmt.Sprintf("StateLab already reads %d JobManagers for open attach pages, its limit; close an attach tab you no longer need, and its reading stops within %s", len(m.watches), m.cfg.IdleTimeout)}, http.StatusTooManyRequests
	}
	w := &attachWatch{id: newSessionID(), key: key, flink: client.BaseURL(), interval: interval, mp: mpText}
	p, err := attach.NewPoller(client, attach.PollerConfig{Interval: interval, Options: attach.Options{MaxParallelism: fallback},
		OnPoll: func(attach.Snapshot, error) {
			w.polls.Add(1)
			w.checkedAt.Store(time.Now().UnixNano())
		}})
	if err != nil {
		return nil, &AttachIssue{Code: AttachBadArgs, Message: err.Error()}, http.StatusBadRequest
	}
	w.poller = p
	w.touch()
	if err := p.Start(m.ctx); err != nil {
		return nil, &AttachIssue{Code: AttachFailed, Message: err.Error()}, http.StatusInternalServerError
	}
	m.watches[w.id] = w
	m.byKey[key] = w
	return w, nil, http.StatusCreated
}

func (w *attachWatch) touch() { w.lastRead.Store(time.Now().UnixNano()) }

func (m *attachManager) get(id string) (*attachWatch, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.watches[id]
	if ok {
		w.touch()
	}
	return w, ok
}

// stop ends one watch; the poller is stopped outside the lock because Stop
// waits for a reading in flight.
func (m *attachManager) stop(id string) bool {
	m.mu.Lock()
	w, ok := m.watches[id]
	if ok {
		delete(m.watches, id)
		delete(m.byKey, w.key)
	}
	m.mu.Unlock()
	if ok {
		w.poller.Stop()
	}
	return ok
}

// reap stops watches nobody has read for IdleTimeout, until the server's
// context ends.
func (m *attachManager) reap() {
	every := min(max(m.cfg.IdleTimeout/4, 10*time.Millisecond), 5*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case now := <-t.C:
			var idle []string
			m.mu.Lock()
			for id, w := range m.watches {
				if now.Sub(time.Unix(0, w.lastRead.Load())) > m.cfg.IdleTimeout {
					idle = append(idle, id)
				}
			}
			m.mu.Unlock()
			for _, id := range idle {
				m.stop(id)
			}
		}
	}
}

// close stops every watch and the reaper; the server's context must be done.
func (m *attachManager) close() {
	m.mu.Lock()
	m.closed = true
	var all []string
	for id := range m.watches {
		all = append(all, id)
	}
	m.mu.Unlock()
	for _, id := range all {
		m.stop(id)
	}
	m.wg.Wait()
}

// state builds the page's view of w, outside any lock but the poller's.
func (w *attachWatch) state() AttachState {
	st := AttachState{ID: w.id, Flink: w.flink, Interval: w.interval.String(), IntervalMillis: w.interval.Milliseconds(),
		MaxParallelism: w.mp, Polls: w.polls.Load(), Jobs: []AttachJob{}, Warnings: []AttachIssue{}, Labels: attachLabels}
	if ns := w.checkedAt.Load(); ns != 0 {
		t := time.Unix(0, ns).UTC()
		st.CheckedAt = &t
	}
	snap, at, ok := w.poller.Last()
	err := w.poller.Err()
	if err != nil {
		st.Error = attachIssueOf(err, "")
	}
	if ok {
		t := at.UTC()
		st.UpdatedAt = &t
		st.Stale = err != nil
		for _, j := range snap.Jobs {
			st.Jobs = append(st.Jobs, AttachJob{Job: j, Timeline: j.Checkpoints.Timeline()})
		}
		for _, wn := range snap.Warnings {
			iss := &AttachIssue{Code: AttachFailed, Message: wn.Message, JobID: wn.JobID}
			if wn.Err != nil {
				iss = attachIssueOf(wn.Err, wn.JobID)
			}
			st.Warnings = append(st.Warnings, *iss)
		}
	}
	return st
}

// pageMaxParallelismHint replaces the CLI's advice (--max-parallelism) in a
// missing maxParallelism message with the page's own field.
const pageMaxParallelismHint = "Flink reports a vertex's max parallelism only since 1.13, and without it the key groups are unknown; " +
	"enter the value the job sets (setMaxParallelism or pipeline.max-parallelism) in the form's max parallelism field, " +
	"or write default there to assume Flink's default for the current parallelism (right only if the job sets none and was never rescaled)"

// attachIssueOf maps an attach error onto the page's codes.
func attachIssueOf(err error, jobID string) *AttachIssue {
	iss := &AttachIssue{Code: AttachFailed, Message: strings.TrimPrefix(err.Error(), "attach: "), JobID: jobID}
	var large *AnswerTooLargeError
	var missing *attach.MissingFieldError
	switch {
	case errors.As(err, &large):
		iss.Code, iss.Message = AttachTooLarge, large.Error()
	case errors.Is(err, attach.ErrUnreachable):
		iss.Code = AttachUnreachable
	case errors.Is(err, attach.ErrNotFlink):
		iss.Code = AttachNotFlink
	case errors.Is(err, attach.ErrJobNotFound):
		iss.Code = AttachJobVanished
	case errors.As(err, &missing):
		iss.Code, iss.Field = AttachMissingField, strings.Trim(missing.Field, `"`)
		if iss.Field == "maxParallelism" {
			m := *missing
			m.Hint = pageMaxParallelismHint
			iss.Message = m.Error()
		}
	case errors.Is(err, attach.ErrFlink):
		iss.Code = AttachFlinkError
	case errors.Is(err, attach.ErrNotKeyed):
		iss.Code = AttachNotKeyed
	}
	return iss
}

// attachRoutes adds the attach page and its JSON API (docs/protocol.md,
// "Attach mode"), and stops the watches when the server closes.
func (srv *Server) attachRoutes(mux *http.ServeMux) {
	m := newAttachManager(srv.ctx, srv.cfg.Attach)
	srv.wg.Add(1)
	go func() {
		defer srv.wg.Done()
		<-srv.ctx.Done()
		m.close()
	}()
	h := &attachHandlers{srv: srv, m: m}
	mux.HandleFunc("GET /attach", h.page)
	mux.HandleFunc("POST /api/attach", h.create)
	mux.HandleFunc("GET /api/attach/{id}", h.state)
	mux.HandleFunc("DELETE /api/attach/{id}", h.remove)
	mux.HandleFunc("GET /api/attach/{id}/rescale", h.rescale)
	mux.HandleFunc("GET /api/attach/{id}/key", h.key)
}

type attachHandlers struct {
	srv *Server
	m   *attachManager
}

func (h *attachHandlers) page(w http.ResponseWriter, r *http.Request) {
	p := h.srv.page(w, r, "attach", "attach.title")
	p.Script = "/static/js/attach.js"
	p.Wide = true
	q := r.URL.Query()
	f := pages.AttachForm{Flink: q.Get("flink"), Interval: q.Get("interval"), MaxParallelism: q.Get("maxParallelism"),
		MinInterval: shortDuration(h.m.cfg.MinInterval), MaxInterval: shortDuration(h.m.cfg.MaxInterval)}
	if f.Interval == "" {
		f.Interval = "2s"
	}
	h.srv.render(w, r, http.StatusOK, pages.Attach(p, f))
}

// shortDuration writes 1m rather than Go's 1m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") || strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

func writeAttachIssue(w http.ResponseWriter, status int, iss *AttachIssue) {
	writeJSON(w, status, map[string]*AttachIssue{"error": iss})
}

// sameOrigin guards the requests that make the server do something (start
// or stop reading a JobManager): a page of another site may not.
func (h *attachHandlers) sameOrigin(w http.ResponseWriter, r *http.Request) bool {
	if h.srv.checkOrigin(r) {
		return true
	}
	writeAttachIssue(w, http.StatusForbidden, &AttachIssue{Code: AttachBadArgs, Message: "requests from another site's page are refused; open StateLab's own attach page"})
	return false
}

func (h *attachHandlers) create(w http.ResponseWriter, r *http.Request) {
	if !h.sameOrigin(w, r) {
		return
	}
	if h.m.cfg.Off {
		writeAttachIssue(w, http.StatusForbidden, &AttachIssue{Code: AttachBadArgs, Message: "attach is off on this server: it serves the local network, and attach would let anyone on it make the server read addresses of that network; " +
			"run StateLab on your own computer (statelab serve) to attach to a JobManager, or whoever runs this server can start it with --allow-attach"})
		return
	}
	var req attachRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<10))
	if err := dec.Decode(&req); err != nil {
		writeAttachIssue(w, http.StatusBadRequest, &AttachIssue{Code: AttachBadArgs, Message: `send one JSON object: {"flink":"http://localhost:8081","interval":"2s"}`})
		return
	}
	watch, iss, status := h.m.start(req)
	if iss != nil {
		writeAttachIssue(w, status, iss)
		return
	}
	writeJSON(w, status, watch.state())
}

func (h *attachHandlers) watch(w http.ResponseWriter, r *http.Request) (*attachWatch, bool) {
	watch, ok := h.m.get(r.PathValue("id"))
	if !ok {
		writeAttachIssue(w, http.StatusNotFound, &AttachIssue{Code: AttachUnknownWatch,
			Message: fmt.Sprintf("StateLab no longer reads this JobManager for the page (it stops after %s without a look); attach again", h.m.cfg.IdleTimeout)})
	}
	return watch, ok
}

func (h *attachHandlers) state(w http.ResponseWriter, r *http.Request) {
	if watch, ok := h.watch(w, r); ok {
		writeJSON(w, http.StatusOK, watch.state())
	}
}

func (h *attachHandlers) remove(w http.ResponseWriter, r *http.Request) {
	if !h.sameOrigin(w, r) {
		return
	}
	if !h.m.stop(r.PathValue("id")) {
		writeAttachIssue(w, http.StatusNotFound, &AttachIssue{Code: AttachUnknownWatch, Message: "StateLab does not read this JobManager for any page"})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// vertex finds ?job=&vertex= in the watch's last good reading.
func (h *attachHandlers) vertex(w http.ResponseWriter, r *http.Request) (*attachWatch, attach.Vertex, bool) {
	watch, ok := h.watch(w, r)
	if !ok {
		return nil, attach.Vertex{}, false
	}
	q := r.URL.Query()
	jobID, vertexID := q.Get("job"), q.Get("vertex")
	snap, _, ok := watch.poller.Last()
	if ok {
		for _, j := range snap.Jobs {
			if j.ID != jobID {
				continue
			}
			if v, found := j.Vertex(vertexID); found {
				return watch, v, true
			}
		}
	}
	writeAttachIssue(w, http.StatusNotFound, &AttachIssue{Code: AttachUnknownVertex, JobID: jobID,
		Message: fmt.Sprintf("the last reading of %s has no vertex %q in job %q; wait for the next reading or choose a vertex shown on the page", watch.flink, vertexID, jobID)})
	return nil, attach.Vertex{}, false
}

func (h *attachHandlers) rescale(w http.ResponseWriter, r *http.Request) {
	_, v, ok := h.vertex(w, r)
	if !ok {
		return
	}
	jobID := r.URL.Query().Get("job")
	to, err := strconv.Atoi(strings.TrimSpace(r.URL.Query().Get("to")))
	if err != nil {
		writeAttachIssue(w, http.StatusBadRequest, &AttachIssue{Code: AttachBadArgs, JobID: jobID,
			Message: fmt.Sprintf("new parallelism %q is not a whole number; give one from 1 to the max parallelism %d", r.URL.Query().Get("to"), v.MaxParallelism)})
		return
	}
	plan, err := v.RescalePlan(to)
	if err != nil {
		iss := attachIssueOf(err, jobID)
		if iss.Code == AttachFailed {
			iss.Code = AttachBadArgs
			iss.Message = strings.TrimPrefix(err.Error(), "rescale: ") + "; Flink refuses it too: choose a parallelism from 1 to the max parallelism"
		}
		writeAttachIssue(w, http.StatusBadRequest, iss)
		return
	}
	writeJSON(w, http.StatusOK, AttachRescale{JobID: jobID, VertexID: v.ID, MaxParallelism: plan.MaxParallelism, From: plan.From, To: plan.To,
		Before: rescale.KeyGroupRanges(plan.MaxParallelism, plan.From), Moved: plan.Moved, MovedRuns: nonNilRuns(attach.Runs(plan.Moved)),
		Subtasks: plan.Subtasks})
}

func nonNilRuns(r []rescale.KeyGroupRange) []rescale.KeyGroupRange {
	if r == nil {
		return []rescale.KeyGroupRange{}
	}
	return r
}

func (h *attachHandlers) key(w http.ResponseWriter, r *http.Request) {
	_, v, ok := h.vertex(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	jobID := q.Get("job")
	kt, err := attach.ParseKeyType(q.Get("type"))
	if err != nil {
		writeAttachIssue(w, http.StatusBadRequest, &AttachIssue{Code: AttachBadArgs, JobID: jobID, Message: err.Error()})
		return
	}
	owner, err := v.LocateKey(kt, q.Get("key"))
	if err != nil {
		iss := attachIssueOf(err, jobID)
		if iss.Code == AttachFailed {
			iss.Code = AttachBadArgs
		}
		writeAttachIssue(w, http.StatusBadRequest, iss)
		return
	}
	writeJSON(w, http.StatusOK, AttachKey{JobID: jobID, VertexID: v.ID, KeyOwner: owner, MaxParallelism: v.MaxParallelism,
		Parallelism: v.Parallelism, Range: rescale.KeyGroupRangeForOperator(v.MaxParallelism, v.Parallelism, owner.Subtask)})
}
