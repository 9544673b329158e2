package web

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/statelab/statelab/catalog"
	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/web/pages"
)

// Sharing rests on replay, like time travel: a Scenario names the job (a
// sandbox template and its settings), the seed and the command log up to a
// step, and a Stepper given the same reproduces the run event for event.
// A share link carries the scenario itself, deflated and base64url-encoded,
// so it needs no storage on the server.

// ScenarioFormat and ScenarioVersion mark a scenario file.
const (
	ScenarioFormat  = "statelab-scenario"
	ScenarioVersion = 1
)

// Limits on what a scenario may ask of the server.
const (
	maxScenarioBytes    = 1 << 20 // a scenario file, or a link's inflated data
	maxShareParam       = 64 << 10
	maxScenarioCommands = 10000
	maxExports          = 2 // event-log exports replaying at once
)

// Scenario is a run as a file.
type Scenario struct {
	Format   string `json:"format"`
	Version  int    `json:"version"`
	Template string `json:"template"`
	// Lesson and Job name a lesson's job instead of a template (a lesson
	// run, or a copy of one); Settings are then empty.
	Lesson string `json:"lesson,omitempty"`
	Job    string `json:"job,omitempty"`
	// Settings are the sandbox settings as /ws?template= takes them.
	Settings map[string]string      `json:"settings"`
	Seed     int64                  `json:"seed"`
	Step     int64                  `json:"step"`
	Commands []engine.LoggedCommand `json:"commands"`
}

// name names the scenario's job in file names.
func (sc Scenario) name() string {
	if sc.Lesson != "" {
		return "lesson-" + sc.Lesson
	}
	return sc.Template
}

// settingsFromSpec recovers the sandbox settings that build spec from
// template t, and checks that they rebuild it exactly.
func settingsFromSpec(t *JobTemplate, spec *engine.JobSpec) (url.Values, error) {
	q := url.Values{}
	q.Set("backend", string(spec.Backend))
	q.Set("interval", spec.Checkpointing.Interval.D().String())
	q.Set("taskManagers", strconv.Itoa(spec.Cluster.TaskManagers))
	q.Set("slots", strconv.Itoa(spec.Cluster.SlotsPerTaskManager))
	q.Set("seed", strconv.FormatInt(spec.Seed, 10))
	q.Set("driver", DriverStepper)
	failureSettingsFromSpec(q, spec)
	ttlSettingsFromSpec(q, spec)
	timeDomainFromSpec(q, spec)
	for _, o := range spec.Operators {
		for _, id := range t.Tunable {
			if o.ID == id {
				q.Set("p."+id, strconv.Itoa(o.Parallelism))
			}
		}
		switch o.Kind {
		case engine.KindCount, engine.KindWindowCount, engine.KindSum, engine.KindAlerts:
			q.Set("maxParallelism", strconv.Itoa(o.MaxParallelism))
		case engine.KindSource:
			for _, k := range []string{"keys", "pages"} {
				if v, ok := o.Options[k]; ok {
					q.Set("keys", fmt.Sprint(v))
				}
			}
		case engine.KindSink:
			if v, ok := o.Options["semantics"].(string); ok {
				q.Set("sink", v)
			}
		}
	}
	// The run was started within its server's bounds, which may be above
	// the defaults: rebuild it without them (a replay checks them again).
	set, err := parseSettings(t, q, unbounded)
	if err != nil {
		return nil, err
	}
	again, err := t.Build(set)
	if err != nil {
		return nil, err
	}
	a, _ := json.Marshal(again)
	b, _ := json.Marshal(spec)
	if !bytes.Equal(a, b) {
		return nil, fmt.Errorf("%w: this run's job is not one the %s template's settings describe", ErrRefused, t.ID)
	}
	return q, nil
}

// scenarioOf describes the session's run up to the step its viewers see.
func (srv *Server) scenarioOf(s *Session) (Scenario, *protoError) {
	if pe := s.fromZero(); pe != nil {
		return Scenario{}, pe
	}
	var (
		log  []engine.LoggedCommand
		step int64
	)
	s.x.mu.Lock()
	rv := s.x.review
	if rv != nil {
		log, step = rv.log, rv.at
	}
	s.x.mu.Unlock()
	if rv == nil {
		snap := s.engine().Snapshot()
		log, step = snap.Commands, snap.Step
	}
	if slug, ok := strings.CutPrefix(s.Template, "lesson:"); ok {
		return srv.lessonScenario(slug, s.run.Spec, log, step)
	}
	t, ok := Template(s.Template)
	if !ok {
		return Scenario{}, perr(CodeRefused, "only sandbox, classroom and lesson runs can be shared as a scenario")
	}
	q, err := settingsFromSpec(t, s.run.Spec)
	if err != nil {
		return Scenario{}, perr(CodeRefused, "%s", strings.TrimPrefix(err.Error(), ErrRefused.Error()+": "))
	}
	sc := Scenario{Format: ScenarioFormat, Version: ScenarioVersion, Template: t.ID, Settings: map[string]string{}, Seed: s.run.Spec.Seed, Step: step, Commands: []engine.LoggedCommand{}}
	for k := range q {
		sc.Settings[k] = q.Get(k)
	}
	sc.Commands = commandsUpTo(log, step)
	return sc, nil
}

func commandsUpTo(log []engine.LoggedCommand, step int64) []engine.LoggedCommand {
	out := []engine.LoggedCommand{}
	for _, lc := range log {
		if lc.Step <= step {
			out = append(out, lc)
		}
	}
	return out
}

// lessonScenario describes a lesson run (or a copy of one): the lesson's
// job that spec is (with any seed), the seed, and the command log.
func (srv *Server) lessonScenario(slug string, spec *engine.JobSpec, log []engine.LoggedCommand, step int64) (Scenario, *protoError) {
	l, ok := srv.cfg.Lessons.Lesson(slug)
	if !ok {
		return Scenario{}, perr(CodeRefused, "lesson %q is not on this server any more; its run cannot be shared", slug)
	}
	norm := func(sp *engine.JobSpec) []byte {
		c := sp.Clone()
		c.Seed = 0
		b, _ := json.Marshal(c)
		return b
	}
	want := norm(spec)
	for _, name := range l.JobNames() {
		js, err := l.Job(name)
		if err != nil || !bytes.Equal(norm(js), want) {
			continue
		}
		return Scenario{Format: ScenarioFormat, Version: ScenarioVersion, Lesson: slug, Job: name, Settings: map[string]string{},
			Seed: spec.Seed, Step: step, Commands: commandsUpTo(log, step)}, nil
	}
	return Scenario{}, perr(CodeRefused, "this run's job is none of lesson %s's jobs (%s); it cannot be shared as a scenario", slug, strings.Join(l.JobNames(), ", "))
}

// scenarioRun checks a scenario and returns the run that replays it and
// the template its session shows (a lesson's: "lesson:SLUG").
func (srv *Server) scenarioRun(sc Scenario) (RunConfig, string, *protoError) {
	if sc.Lesson == "" {
		run, pe := runWithin(sc, srv.cfg.Limits)
		return run, sc.Template, pe
	}
	if sc.Format != ScenarioFormat || sc.Version != ScenarioVersion {
		return RunConfig{}, "", perr(CodeBadArgs, "this is not a StateLab scenario (format %q version %d); export one from a live view", sc.Format, sc.Version)
	}
	if sc.Template != "" || len(sc.Settings) > 0 {
		return RunConfig{}, "", perr(CodeBadArgs, "a lesson's scenario names its lesson and job, not a template or settings")
	}
	l, ok := srv.cfg.Lessons.Lesson(sc.Lesson)
	if !ok {
		return RunConfig{}, "", perr(CodeUnknownJob, "there is no lesson %q; see /lessons for the list", sc.Lesson)
	}
	spec, err := l.Job(sc.Job)
	if err != nil {
		return RunConfig{}, "", perr(CodeBadArgs, "%v", err)
	}
	spec.Seed = sc.Seed
	if pe := checkScenarioCommands(sc); pe != nil {
		return RunConfig{}, "", pe
	}
	if pe := srv.cfg.Limits.checkScenario(sc, spec); pe != nil {
		return RunConfig{}, "", pe
	}
	return RunConfig{Spec: spec, Driver: DriverStepper, from: &replayPlan{log: sc.Commands, step: sc.Step}}, "lesson:" + sc.Lesson, nil
}

// engineCommandNames are the commands the engine logs and a scenario may
// carry: the catalogue's recorded commands.
var engineCommandNames = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range catalog.Names(func(c catalog.Command) bool { return c.Recorded }) {
		m[n] = true
	}
	return m
}()

// Bounds of a scenario command's numbers: the catalogue's, as the protocol
// parser applies them to the command when it was sent.
var (
	_, scenarioMaxParallelism = catalog.Bound(engine.CmdRescale, "parallelism")
	_, scenarioMaxSlots       = catalog.Bound(engine.CmdAddTaskManager, "slots")
)

// runOf checks a scenario within DefaultLimits and returns the run that
// replays it.
func runOf(sc Scenario) (RunConfig, *protoError) { return runWithin(sc, DefaultLimits) }

// runWithin checks a scenario within lim and returns the run that replays it.
func runWithin(sc Scenario, lim Limits) (RunConfig, *protoError) {
	if sc.Format != ScenarioFormat || sc.Version != ScenarioVersion {
		return RunConfig{}, perr(CodeBadArgs, "this is not a StateLab scenario (format %q version %d); export one from a live view", sc.Format, sc.Version)
	}
	if sc.Step > lim.ReplaySteps {
		return RunConfig{}, lim.checkScenario(sc, &engine.JobSpec{})
	}
	t, ok := Template(sc.Template)
	if !ok {
		return RunConfig{}, perr(CodeUnknownJob, "the scenario's template %q is unknown; this server has %s", sc.Template, templateIDs())
	}
	q := url.Values{}
	for k, v := range sc.Settings {
		q.Set(k, v)
	}
	if sc.Version == 1 && q.Get("chaining") == "" {
		// Version 1 scenarios were first made when a job without
		// chaining ran unchained (StateLab's default then, Flink's is
		// on): an old link without the setting keeps that meaning,
		// whatever a template says now. New ones always carry it.
		q.Set("chaining", "false")
	}
	q.Set("seed", strconv.FormatInt(sc.Seed, 10))
	q.Set("driver", DriverStepper)
	set, err := parseSettings(t, q, lim)
	if err == nil {
		err = lim.checkSettings(set)
	}
	if err != nil {
		return RunConfig{}, perr(CodeBadArgs, "scenario settings: %s", strings.TrimPrefix(err.Error(), ErrBadArgs.Error()+": "))
	}
	spec, err := t.Build(set)
	if err != nil {
		return RunConfig{}, perr(CodeBadArgs, "scenario settings: %s", strings.TrimPrefix(err.Error(), ErrBadArgs.Error()+": "))
	}
	if pe := checkScenarioCommands(sc); pe != nil {
		return RunConfig{}, pe
	}
	if pe := lim.checkScenario(sc, spec); pe != nil {
		return RunConfig{}, pe
	}
	return RunConfig{Spec: spec, Driver: DriverStepper, from: &replayPlan{log: sc.Commands, step: sc.Step}}, nil
}

// checkScenarioCommands checks a scenario's step and commands.
func checkScenarioCommands(sc Scenario) *protoError {
	if sc.Step < 0 {
		return perr(CodeBadArgs, "the scenario's step %d is negative", sc.Step)
	}
	if len(sc.Commands) > maxScenarioCommands {
		return perr(CodeBadArgs, "the scenario has %d commands; at most %d replay", len(sc.Commands), maxScenarioCommands)
	}
	prev := int64(0)
	for i, lc := range sc.Commands {
		c := lc.Command
		switch {
		case !engineCommandNames[c.Name]:
			return perr(CodeBadArgs, "scenario command %d: %q is not a command the engine logs", i, c.Name)
		case lc.Step < prev || lc.Step > sc.Step:
			return perr(CodeBadArgs, "scenario command %d: step %d is out of order (commands go in step order, up to the scenario's step %d)", i, lc.Step, sc.Step)
		case utf8.RuneCountInString(c.Text) > maxInjectText || len(c.Task)+len(c.TaskManager)+len(c.Operator)+len(c.UID)+len(c.UIDHash)+len(c.Change)+len(c.Kind)+len(lc.Error) > 4096:
			return perr(CodeBadArgs, "scenario command %d is too long", i)
		case c.Parallelism < 0 || float64(c.Parallelism) > scenarioMaxParallelism || c.Slots < 0 || float64(c.Slots) > scenarioMaxSlots ||
			c.MaxParallelism < 0 || float64(c.MaxParallelism) > scenarioMaxParallelism:
			return perr(CodeBadArgs, "scenario command %d: a number is out of range", i)
		}
		prev = lc.Step
	}
	return nil
}

// ShareLink encodes a scenario into a link's query value.
func ShareLink(sc Scenario) (string, error) {
	data, err := json.Marshal(sc)
	if err != nil {
		return "", fmt.Errorf("encode scenario: %w", err)
	}
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestCompression)
	_, _ = w.Write(data)
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("compress scenario: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(buf.Bytes()), nil
}

// ParseShareLink decodes a link's query value back into a scenario.
func ParseShareLink(v string) (Scenario, error) {
	var sc Scenario
	if len(v) > maxShareParam {
		return sc, fmt.Errorf("%w: the link's data is %d bytes, over %d", ErrBadArgs, len(v), maxShareParam)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(v, "="))
	if err != nil {
		return sc, fmt.Errorf("%w: the link is damaged (not base64url: %v); copy it again", ErrBadArgs, err)
	}
	data, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(raw)), maxScenarioBytes+1))
	if err != nil || len(data) > maxScenarioBytes {
		return sc, fmt.Errorf("%w: the link is damaged (cannot inflate it); copy it again", ErrBadArgs)
	}
	if err := decodeScenario(data, &sc); err != nil {
		return sc, err
	}
	return sc, nil
}

func decodeScenario(data []byte, sc *Scenario) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(sc); err != nil {
		return fmt.Errorf("%w: cannot read the scenario (%v)", ErrBadArgs, err)
	}
	return nil
}

// --- HTTP ---------------------------------------------------------------------

func (srv *Server) shareRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/sessions/{id}/scenario", srv.handleScenario)
	mux.HandleFunc("GET /api/sessions/{id}/share", srv.handleShare)
	mux.HandleFunc("GET /api/sessions/{id}/events", srv.handleEventLog)
	mux.HandleFunc("GET /api/sessions/{id}/export-flink", srv.handleExportFlink)
	mux.HandleFunc("POST /api/scenarios", srv.handleImport)
	mux.HandleFunc("GET /replay", srv.handleReplayLink)
	mux.HandleFunc("POST /replay", srv.handleReplayStart)
}

func (srv *Server) sessionFor(w http.ResponseWriter, r *http.Request) *Session {
	s, ok := srv.Session(r.PathValue("id"))
	if !ok {
		writeJSON(w, http.StatusNotFound, apiError{CodeUnknownSession, fmt.Sprintf("there is no session %q; open a new sandbox", r.PathValue("id"))})
		return nil
	}
	s.touch()
	return s
}

func (srv *Server) handleScenario(w http.ResponseWriter, r *http.Request) {
	s := srv.sessionFor(w, r)
	if s == nil {
		return
	}
	sc, pe := srv.scenarioOf(s)
	if pe != nil {
		writeJSON(w, http.StatusConflict, apiError{pe.Code, pe.Message})
		return
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="statelab-%s-seed%d-step%d.json"`, sc.name(), sc.Seed, sc.Step))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(sc)
}

// ShareAnswer is GET /api/sessions/{id}/share.
type ShareAnswer struct {
	URL      string   `json:"url"`
	Scenario Scenario `json:"scenario"`
}

func (srv *Server) handleShare(w http.ResponseWriter, r *http.Request) {
	s := srv.sessionFor(w, r)
	if s == nil {
		return
	}
	sc, pe := srv.scenarioOf(s)
	if pe != nil {
		writeJSON(w, http.StatusConflict, apiError{pe.Code, pe.Message})
		return
	}
	v, err := ShareLink(sc)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, apiError{CodeInternal, err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, ShareAnswer{URL: srv.base(requestBase(r)) + "/replay?s=" + v, Scenario: sc})
}

// replaySession starts a session replaying sc; the replay stops when ctx
// is done (the request that asked for it ended) or its budget runs out.
func (srv *Server) replaySession(ctx context.Context, sc Scenario) (*Session, *protoError) {
	run, template, pe := srv.scenarioRun(sc)
	if pe != nil {
		return nil, pe
	}
	run.from.ctx = ctx
	s, pe := srv.createSession(KindReplay, template, run)
	if pe != nil {
		return nil, pe
	}
	s.x.mu.Lock()
	s.x.markers, s.x.headStep, s.x.dirty = run.from.markers, sc.Step, true
	s.x.mu.Unlock()
	return s, nil
}

// ImportAnswer is POST /api/scenarios' answer.
type ImportAnswer struct {
	Session string `json:"session"`
	URL     string `json:"url"`
}

func (srv *Server) handleImport(w http.ResponseWriter, r *http.Request) {
	if !srv.sameOrigin(w, r) {
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxScenarioBytes+1))
	if err != nil || len(data) > maxScenarioBytes {
		writeJSON(w, http.StatusRequestEntityTooLarge, apiError{CodeBadArgs, fmt.Sprintf("a scenario file is at most %d bytes", maxScenarioBytes)})
		return
	}
	var sc Scenario
	if err := decodeScenario(data, &sc); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{CodeBadJSON, strings.TrimPrefix(err.Error(), ErrBadArgs.Error()+": ")})
		return
	}
	if _, pe := srv.estimateReplay(sc); pe != nil {
		writeJSON(w, classroomStatus(pe.Code), apiError{pe.Code, pe.Message})
		return
	}
	s, pe := srv.replaySession(r.Context(), sc)
	if pe != nil {
		writeJSON(w, classroomStatus(pe.Code), apiError{pe.Code, pe.Message})
		return
	}
	writeJSON(w, http.StatusCreated, ImportAnswer{Session: s.ID, URL: "/sandbox/live?session=" + s.ID})
}

// handleReplayLink shows what a share link would replay, and its
// estimated cost, without doing any of it: the page's own form (a
// same-origin POST, handleReplayStart) starts the replay. So a link, an
// <img> or a form on another site cannot make the server work.
func (srv *Server) handleReplayLink(w http.ResponseWriter, r *http.Request) {
	p := srv.page(w, r, "sandbox", "replay.title")
	link := r.URL.Query().Get("s")
	sc, err := ParseShareLink(link)
	if err != nil {
		srv.render(w, r, http.StatusBadRequest, pages.NotFound(p, strings.TrimPrefix(err.Error(), ErrBadArgs.Error()+": ")))
		return
	}
	v, pe := srv.estimateReplay(sc)
	if pe != nil {
		srv.render(w, r, classroomStatus(pe.Code), pages.NotFound(p, pe.Message))
		return
	}
	v.Link = link
	srv.render(w, r, http.StatusOK, pages.ReplayConfirm(p, v))
}

// handleReplayStart is the confirmation form's POST: the replay runs
// inside the request (stopped if the browser goes away, or when its budget
// runs out), then the browser goes to the live view.
func (srv *Server) handleReplayStart(w http.ResponseWriter, r *http.Request) {
	if !srv.checkOrigin(r) {
		http.Error(w, "requests from other sites may not start a replay; open the share link itself and press its replay button", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxShareParam+1024)
	p := srv.page(w, r, "sandbox", "replay.title")
	if err := r.ParseForm(); err != nil {
		srv.render(w, r, http.StatusBadRequest, pages.NotFound(p, "cannot read the form: "+err.Error()))
		return
	}
	sc, err := ParseShareLink(r.PostForm.Get("s"))
	if err != nil {
		srv.render(w, r, http.StatusBadRequest, pages.NotFound(p, strings.TrimPrefix(err.Error(), ErrBadArgs.Error()+": ")))
		return
	}
	if _, pe := srv.estimateReplay(sc); pe != nil {
		srv.render(w, r, classroomStatus(pe.Code), pages.NotFound(p, pe.Message))
		return
	}
	s, pe := srv.replaySession(r.Context(), sc)
	if pe != nil {
		srv.render(w, r, classroomStatus(pe.Code), pages.NotFound(p, pe.Message))
		return
	}
	http.Redirect(w, r, "/sandbox/live?session="+s.ID, http.StatusSeeOther)
}

// handleEventLog replays the session's run and streams every event of it,
// as JSON Lines (?format=jsonl, the default) or CSV (?format=csv).
func (srv *Server) handleEventLog(w http.ResponseWriter, r *http.Request) {
	s := srv.sessionFor(w, r)
	if s == nil {
		return
	}
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "jsonl"
	}
	if format != "jsonl" && format != "csv" {
		writeJSON(w, http.StatusBadRequest, apiError{CodeBadArgs, fmt.Sprintf("format %q is unknown; ask for jsonl or csv", format)})
		return
	}
	sc, pe := srv.scenarioOf(s)
	if pe != nil {
		writeJSON(w, http.StatusConflict, apiError{pe.Code, pe.Message})
		return
	}
	run, _, pe := srv.scenarioRun(sc)
	if pe != nil {
		writeJSON(w, http.StatusConflict, apiError{pe.Code, pe.Message})
		return
	}
	if n := srv.ext.exports.Add(1); n > maxExports {
		srv.ext.exports.Add(-1)
		writeJSON(w, http.StatusServiceUnavailable, apiError{CodeRefused, "other event logs are being exported; try again in a moment"})
		return
	}
	defer srv.ext.exports.Add(-1)
	dir := filepath.Join(srv.cfg.DataDir, "sessions", "export-"+newSessionID())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		writeJSON(w, http.StatusInternalServerError, apiError{CodeInternal, "cannot create the export directory: " + err.Error()})
		return
	}
	defer os.RemoveAll(dir)
	ext := "jsonl"
	ctype := "application/jsonl; charset=utf-8"
	if format == "csv" {
		ext, ctype = "csv", "text/csv; charset=utf-8"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="statelab-%s-seed%d-step%d-events.%s"`, sc.name(), sc.Seed, sc.Step, ext))
	bw := bufio.NewWriterSize(w, 64<<10)
	write := eventWriter(bw, format)
	st, err := replayStepper(run.Spec, dir, run.from.log, run.from.step, write)
	if err != nil {
		srv.log.Warn("export events", "session", s.ID, "err", err)
	} else {
		_ = st.Close()
	}
	_ = bw.Flush()
}

// eventColumns are the CSV export's columns.
var eventColumns = []string{"seq", "step", "at_ns", "kind", "task", "operator", "taskManager", "channel", "checkpoint", "records", "status", "message"}

func eventWriter(w io.Writer, format string) func(engine.Event) {
	if format == "csv" {
		cw := csv.NewWriter(w)
		_ = cw.Write(eventColumns)
		return func(e engine.Event) {
			_ = cw.Write([]string{strconv.FormatInt(e.Seq, 10), strconv.FormatInt(e.Step, 10), strconv.FormatInt(int64(e.At), 10), string(e.Kind),
				e.Task, e.Operator, e.TaskManager, e.Channel, strconv.FormatInt(e.Checkpoint, 10), strconv.Itoa(e.Records), e.Status, e.Message})
			cw.Flush()
		}
	}
	enc := json.NewEncoder(w)
	return func(e engine.Event) { _ = enc.Encode(e) }
}
