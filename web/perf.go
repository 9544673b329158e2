//go:build !js

package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/statelab/statelab/bench"
	"github.com/statelab/statelab/docs"
	"github.com/statelab/statelab/web/pages"
)

// PerfConfig configures the Performance page (/performance): the committed
// bench results it shows and the quick bench a learner may start from it.
// Zero values take the defaults listed.
type PerfConfig struct {
	// Results holds the committed results as bench/bench.json and
	// bench/*.svg (default: docs.Bench, the embedded docs/bench).
	Results fs.FS
	// Sizes override bench.QuickSizes (tests use tiny ones); Rounds the
	// interleaved rounds (default: the quick run's 3); Seed the workloads'
	// seed (default 1, as `statelab bench`).
	Sizes  *bench.Sizes
	Rounds int
	Seed   int64
	// Timeout stops a run that takes longer (default 3 minutes; a quick run
	// takes about a minute on two shared cores).
	Timeout time.Duration
	// Cooldown is the least time from the end of one run to the start of
	// the next (default 30s), so one page cannot keep the machine busy.
	Cooldown time.Duration
	// WebFanOut times StateLab's own WebSocket hub (MeasureFanOut, which
	// cmd/statelab passes). Nil leaves the WebSocket group out of the page's
	// run.
	WebFanOut bench.FanOutFunc
	// Disabled shows the committed results only, with no run button.
	Disabled bool
}

func (c PerfConfig) withDefaults() PerfConfig {
	if c.Results == nil {
		c.Results = docs.Bench
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Timeout <= 0 {
		c.Timeout = 3 * time.Minute
	}
	if c.Cooldown <= 0 {
		c.Cooldown = 30 * time.Second
	}
	return c
}

// Run states.
const (
	PerfIdle      = "idle"
	PerfRunning   = "running"
	PerfDone      = "done"
	PerfFailed    = "failed"
	PerfCancelled = "cancelled"
)

// Performance page error codes.
const (
	PerfBusy     = "busy"     // a run is in progress
	PerfCooldown = "cooldown" // the last run ended less than Cooldown ago
	PerfOff      = "disabled" // PerfConfig.Disabled
	PerfNoRun    = "no-run"   // nothing to cancel
)

// maxPerfLines bounds the progress lines a run keeps.
const maxPerfLines = 40

// PerfStatus is GET /api/perf: the quick bench run in progress or the last
// one, and whether a new one may start.
type PerfStatus struct {
	// Run counts runs since the server started (0: none yet).
	Run   int    `json:"run"`
	State string `json:"state"`
	// Groups are the bench groups of the run, in order; Done of them have
	// finished; Current is the one running.
	Groups  []string   `json:"groups"`
	Done    int        `json:"done"`
	Current string     `json:"current,omitempty"`
	Cases   int        `json:"cases"`
	Started *time.Time `json:"started,omitempty"`
	Elapsed float64    `json:"elapsedSeconds"`
	// Lines are the bench's progress lines, the latest last.
	Lines []string `json:"lines"`
	Error string   `json:"error,omitempty"`
	// CanRun: a new run may start now; otherwise WaitSeconds says when.
	CanRun      bool `json:"canRun"`
	WaitSeconds int  `json:"waitSeconds,omitempty"`
	Disabled    bool `json:"disabled,omitempty"`
	// TimeoutSeconds is the cap on one run.
	TimeoutSeconds int `json:"timeoutSeconds"`
}

// perfResults is one set of results: a report and its charts.
type perfResults struct {
	report *bench.Report
	files  map[string][]byte // bench.json and *.svg by name, as statelab bench wrote them

	zhOnce sync.Once
	zh     map[string][]byte // the charts drawn again in Chinese, on first request
}

// file is one of the results' files as a page in lang shows it: the charts
// drawn in that language (perf_zh.go), bench.json as written; nil when
// there is no such file.
func (res *perfResults) file(lang, name string) []byte {
	if lang != "zh" || path.Ext(name) != ".svg" {
		return res.files[name]
	}
	res.zhOnce.Do(func() { res.zh = bench.Charts(res.report, benchTranslator("zh")) })
	if res.files[name] == nil {
		return nil
	}
	return res.zh[name]
}

// perfRunner runs the quick bench in the background, one run at a time.
type perfRunner struct {
	cfg     PerfConfig
	ctx     context.Context
	dataDir string

	mu        sync.Mutex
	seq       int
	state     string
	groups    []string
	done      int
	current   string
	cases     int
	started   time.Time
	ended     time.Time
	lines     []string
	partial   string
	err       string
	latest    *perfResults
	latestRun int
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

func newPerfRunner(ctx context.Context, cfg PerfConfig, dataDir string) *perfRunner {
	return &perfRunner{cfg: cfg.withDefaults(), ctx: ctx, dataDir: dataDir, state: PerfIdle, lines: []string{}}
}

// groups is what a page's run measures: every group of `statelab bench`,
// the WebSocket fan-out only when StateLab's own hub was injected, never the
// sessions group (it starts 64 forks; `statelab bench --only sessions`).
func (p *perfRunner) runGroups() []string {
	var gs []string
	for _, g := range bench.Groups {
		if g == bench.GroupWebSocket && p.cfg.WebFanOut == nil || g == bench.GroupSessions {
			continue
		}
		gs = append(gs, g)
	}
	return gs
}

// waitLocked is how long until a new run may start (0: now).
func (p *perfRunner) waitLocked(now time.Time) time.Duration {
	if p.ended.IsZero() {
		return 0
	}
	return max(0, p.cfg.Cooldown-now.Sub(p.ended))
}

// Start begins a run; it refuses while one runs, during the cooldown, and
// when the page's runs are disabled.
func (p *perfRunner) Start() (int, *apiError, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	switch {
	case p.cfg.Disabled:
		return 0, &apiError{PerfOff, "this server shows the committed results only; run `statelab bench --quick` on your own machine"}, http.StatusForbidden
	case p.ctx.Err() != nil:
		return 0, &apiError{PerfOff, "the server is shutting down"}, http.StatusServiceUnavailable
	case p.state == PerfRunning:
		return 0, &apiError{PerfBusy, fmt.Sprintf("run %d is still measuring (one run at a time, so the figures are not disturbed); watch its progress or wait for it to end", p.seq)}, http.StatusConflict
	}
	if w := p.waitLocked(now); w > 0 {
		secs := int((w + time.Second - 1) / time.Second)
		return 0, &apiError{PerfCooldown, fmt.Sprintf("the last run ended moments ago; the next may start in %d s, so the machine is not kept busy", secs)}, http.StatusTooManyRequests
	}
	p.seq++
	p.state, p.groups, p.done, p.current, p.cases = PerfRunning, p.runGroups(), 0, "", 0
	p.started, p.lines, p.partial, p.err = now, []string{}, "", ""
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.Timeout)
	p.cancel = cancel
	p.wg.Add(1)
	go func(run int, groups []string) {
		defer p.wg.Done()
		defer cancel()
		p.measure(ctx, run, groups)
	}(p.seq, p.groups)
	return p.seq, nil, http.StatusAccepted
}

// Cancel stops the run in progress; the case being measured ends first.
func (p *perfRunner) Cancel() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != PerfRunning || p.cancel == nil {
		return false
	}
	p.cancel()
	return true
}

// close cancels a run and waits for it; the server's context must be done.
func (p *perfRunner) close() {
	p.Cancel()
	p.wg.Wait()
}

// measure runs the groups one by one (so the page can say which is
// running), merges their reports and renders the charts as
// `statelab bench --out` does.
func (p *perfRunner) measure(ctx context.Context, run int, groups []string) {
	scratch, err := os.MkdirTemp(p.dataDir, "perf-")
	if err != nil {
		p.finish(run, nil, fmt.Errorf("make a scratch directory: %w", err))
		return
	}
	defer os.RemoveAll(scratch)
	var reps []*bench.Report
	for i, g := range groups {
		p.mu.Lock()
		p.current = g
		p.mu.Unlock()
		rep, err := bench.Run(ctx, bench.Config{Quick: true, Seed: p.cfg.Seed, Rounds: p.cfg.Rounds, Sizes: p.cfg.Sizes,
			Groups: []string{g}, Dir: filepath.Join(scratch, g), Log: perfLog{p}, WebFanOut: p.cfg.WebFanOut})
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil {
			p.finish(run, nil, p.explain(ctx, err))
			return
		}
		reps = append(reps, rep)
		p.mu.Lock()
		p.done, p.cases = i+1, p.cases+len(rep.Cases)
		p.mu.Unlock()
	}
	merged := mergeReports(reps)
	// The charts show each ratio beside the committed run's.
	if committed, err := loadCommitted(p.cfg.Results); err == nil && committed != nil {
		bench.SetPrevious(merged, committed.report)
	}
	res, err := renderResults(filepath.Join(scratch, "out"), merged)
	p.finish(run, res, err)
}

// explain turns a stopped run's error into what the page says.
func (p *perfRunner) explain(ctx context.Context, err error) error {
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Errorf("the run took longer than its cap of %s and was stopped; the machine may be busy, try again later", p.cfg.Timeout)
	case ctx.Err() != nil:
		return context.Canceled
	}
	return err
}

func (p *perfRunner) finish(run int, res *perfResults, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if run != p.seq {
		return
	}
	p.ended, p.current = time.Now(), ""
	switch {
	case err == context.Canceled:
		p.state = PerfCancelled
	case err != nil:
		p.state, p.err = PerfFailed, err.Error()
	default:
		p.state, p.latest, p.latestRun = PerfDone, res, run
	}
}

// Status is the run's progress now.
func (p *perfRunner) Status() PerfStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	st := PerfStatus{Run: p.seq, State: p.state, Groups: slices.Clone(p.groups), Done: p.done, Current: p.current, Cases: p.cases,
		Lines: slices.Clone(p.lines), Error: p.err, Disabled: p.cfg.Disabled, TimeoutSeconds: int(p.cfg.Timeout / time.Second)}
	if st.Groups == nil {
		st.Groups = p.runGroups()
	}
	if !p.started.IsZero() {
		t := p.started.UTC()
		st.Started = &t
		end := now
		if p.state != PerfRunning {
			end = p.ended
		}
		st.Elapsed = end.Sub(p.started).Seconds()
	}
	w := p.waitLocked(now)
	st.CanRun = !p.cfg.Disabled && p.state != PerfRunning && w == 0
	if p.state != PerfRunning && w > 0 {
		st.WaitSeconds = int((w + time.Second - 1) / time.Second)
	}
	return st
}

// Latest is the last finished run's results (nil before one).
func (p *perfRunner) Latest() (*perfResults, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latest, p.latestRun
}

// perfLog collects the bench's progress lines.
type perfLog struct{ p *perfRunner }

func (l perfLog) Write(b []byte) (int, error) {
	p := l.p
	p.mu.Lock()
	defer p.mu.Unlock()
	text := p.partial + string(b)
	parts := strings.Split(text, "\n")
	p.partial = parts[len(parts)-1]
	for _, line := range parts[:len(parts)-1] {
		line = strings.TrimSpace(strings.TrimPrefix(line, "bench:"))
		if line == "" {
			continue
		}
		p.lines = append(p.lines, line)
	}
	if n := len(p.lines); n > maxPerfLines {
		p.lines = slices.Clone(p.lines[n-maxPerfLines:])
	}
	return len(b), nil
}

// mergeReports joins one report per group into one, as a single run would
// have written it: the measured cases in group order, then every scaling
// (log-log slope) case.
func mergeReports(reps []*bench.Report) *bench.Report {
	if len(reps) == 0 {
		return &bench.Report{Schema: bench.ReportSchema}
	}
	out := *reps[0]
	out.Cases, out.Notes, out.Seconds = nil, nil, 0
	var scaling []bench.Case
	for _, r := range reps {
		out.Seconds += r.Seconds
		out.Notes = append(out.Notes, r.Notes...)
		for _, c := range r.Cases {
			if c.Group == bench.GroupScaling {
				scaling = append(scaling, c)
			} else {
				out.Cases = append(out.Cases, c)
			}
		}
	}
	out.Cases = append(out.Cases, scaling...)
	return &out
}

// renderResults writes the report's bench.json and charts with the bench's
// own renderer, into dir, and keeps them in memory.
func renderResults(dir string, rep *bench.Report) (*perfResults, error) {
	written, err := bench.WriteOutputs(dir, rep)
	if err != nil {
		return nil, fmt.Errorf("render the charts: %w", err)
	}
	res := &perfResults{report: rep, files: map[string][]byte{}}
	for _, f := range written {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read back %s: %w", filepath.Base(f), err)
		}
		res.files[filepath.Base(f)] = data
	}
	return res, nil
}

// loadCommitted reads bench/bench.json and the charts beside it; nil when
// the build embeds no results.
func loadCommitted(fsys fs.FS) (*perfResults, error) {
	data, err := fs.ReadFile(fsys, "bench/bench.json")
	if err != nil {
		return nil, nil
	}
	var rep bench.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("committed bench/bench.json is not a bench report: %w", err)
	}
	if rep.Schema != bench.ReportSchema {
		return nil, fmt.Errorf("committed bench/bench.json has schema %d, this StateLab reads %d; run statelab bench --out docs/bench again", rep.Schema, bench.ReportSchema)
	}
	res := &perfResults{report: &rep, files: map[string][]byte{"bench.json": data}}
	entries, err := fs.ReadDir(fsys, "bench")
	if err != nil {
		return nil, fmt.Errorf("list the committed charts: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".svg" {
			continue
		}
		svg, err := fs.ReadFile(fsys, "bench/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("read the committed chart %s: %w", e.Name(), err)
		}
		res.files[e.Name()] = svg
	}
	return res, nil
}

// perfRoutes adds the Performance page, its chart files and its JSON API
// (docs/protocol.md, "Performance page"), and stops a run when the server
// closes.
func (srv *Server) perfRoutes(mux *http.ServeMux) {
	r := newPerfRunner(srv.ctx, srv.cfg.Perf, srv.cfg.DataDir)
	committed, err := loadCommitted(r.cfg.Results)
	if err != nil {
		srv.log.Warn("performance page: no committed results", "err", err)
	}
	srv.wg.Add(1)
	go func() {
		defer srv.wg.Done()
		<-srv.ctx.Done()
		r.close()
	}()
	h := &perfHandlers{srv: srv, r: r, committed: committed}
	mux.HandleFunc("GET /performance", h.page)
	mux.HandleFunc("POST /performance/run", h.runForm)
	mux.HandleFunc("GET /performance/results/{which}/{file}", h.file)
	mux.HandleFunc("GET /api/perf", h.status)
	mux.HandleFunc("POST /api/perf/run", h.run)
	mux.HandleFunc("POST /api/perf/cancel", h.cancel)
}

type perfHandlers struct {
	srv       *Server
	r         *perfRunner
	committed *perfResults
}

func (h *perfHandlers) page(w http.ResponseWriter, r *http.Request) {
	p := h.srv.page(w, r, "performance", "perf.title")
	p.Script = "/static/js/perf.js"
	st := h.r.Status()
	view := pages.PerfPage{Run: pages.PerfRun{State: st.State, CanRun: st.CanRun, Disabled: st.Disabled, Run: st.Run,
		TimeoutMinutes: max(1, st.TimeoutSeconds/60)}}
	if h.committed != nil {
		view.Committed = perfView(p.Lang, p.T, h.committed.report, "committed", 0, h.committed.files)
	}
	if res, run := h.r.Latest(); res != nil {
		view.Latest = perfView(p.Lang, p.T, res.report, "latest", run, res.files)
	}
	h.srv.render(w, r, http.StatusOK, pages.Performance(p, view))
}

// chartOrder puts the overview first, then the cost charts.
var chartOrder = []string{"ratios.svg", "checkpoint-bytes.svg", "checkpoint-time.svg", "rescale-bytes.svg", "rescale-time.svg"}

// perfView prepares a report for the page's table and charts in lang: the
// bench's own words (case names, baselines, units, notes, the charts) are
// translated by benchTranslator, the page's by t.
func perfView(lang string, t func(string) string, rep *bench.Report, which string, run int, files map[string][]byte) *pages.PerfResults {
	bt := benchTranslator(lang)
	v := &pages.PerfResults{Which: which}
	for _, n := range rep.Notes {
		v.Notes = append(v.Notes, bt(n))
	}
	value := func(metric string, x float64) string {
		s := bench.FormatValue(metric, x)
		if lang == "zh" {
			s = zhUnits.Replace(s)
		}
		return s
	}
	q := url.Values{}
	if run > 0 {
		q.Set("run", strconv.Itoa(run))
	}
	jsonSuffix := ""
	if len(q) > 0 {
		jsonSuffix = "?" + q.Encode()
	}
	if lang != "en" {
		q.Set("lang", lang)
	}
	suffix := ""
	if len(q) > 0 {
		suffix = "?" + q.Encode()
	}
	mode := t("perf.mode.full")
	if rep.Quick {
		mode = t("perf.mode.quick")
	}
	v.Meta = fmt.Sprintf(t("perf.meta"), mode, rep.Seed, rep.Rounds, rep.Machine.GoVersion, rep.Machine.OS, rep.Machine.Arch,
		rep.Machine.CPUs, formatSeconds(rep.Seconds), rep.Started.UTC().Format("2006-01-02 15:04 UTC"))
	met, all := bench.TargetsMet(rep)
	if all > 0 {
		v.Targets = fmt.Sprintf(t("perf.targets"), met, all)
	}
	for _, c := range rep.Cases {
		group := t("perf.group." + c.Group)
		if group == "perf.group."+c.Group {
			group = c.Group
		}
		row := pages.PerfRow{Group: group, Case: bt(c.Name), Value: value(c.Metric, c.Value), Baseline: bt(c.Baseline),
			BaselineValue: value(c.Metric, c.BaselineValue), Ratio: formatRatio(c.Ratio)}
		if c.Baseline == "" {
			row.BaselineValue = ""
		}
		if c.Target != nil {
			row.Target = fmt.Sprintf("%s %s", strings.ReplaceAll(strings.ReplaceAll(c.Target.Op, ">=", "≥"), "<=", "≤"), formatRatio(c.Target.Ratio))
			row.Met, row.Missed = c.Target.Met, !c.Target.Met
		}
		v.Rows = append(v.Rows, row)
	}
	var names []string
	for name := range files {
		if path.Ext(name) == ".svg" {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		ia, ib := slices.Index(chartOrder, a), slices.Index(chartOrder, b)
		if ia < 0 {
			ia = len(chartOrder)
		}
		if ib < 0 {
			ib = len(chartOrder)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	for _, name := range names {
		caption := t("perf.chart." + strings.TrimSuffix(name, ".svg"))
		if caption == "perf.chart."+strings.TrimSuffix(name, ".svg") {
			caption = name
		}
		v.Charts = append(v.Charts, pages.PerfChart{Src: "/performance/results/" + which + "/" + name + suffix, Caption: caption,
			Wide: name == "ratios.svg"})
	}
	if _, ok := files["bench.json"]; ok {
		v.JSONHref = "/performance/results/" + which + "/bench.json" + jsonSuffix
	}
	return v
}

func formatRatio(r float64) string {
	if r == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3g×", r)
}

func formatSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// file serves a chart or bench.json of the committed or the latest
// results, by name from memory: nothing here touches the file system.
func (h *perfHandlers) file(w http.ResponseWriter, r *http.Request) {
	var res *perfResults
	switch r.PathValue("which") {
	case "committed":
		res = h.committed
	case "latest":
		res, _ = h.r.Latest()
	}
	var data []byte
	if res != nil {
		lang := r.URL.Query().Get("lang")
		if !knownLang(lang) {
			lang = "en"
		}
		data = res.file(lang, r.PathValue("file"))
	}
	if data == nil {
		http.Error(w, "no such result file: "+r.URL.Path, http.StatusNotFound)
		return
	}
	ctype := "image/svg+xml"
	if path.Ext(r.PathValue("file")) == ".json" {
		ctype = "application/json"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, r.PathValue("file"), time.Time{}, bytes.NewReader(data))
}

func (h *perfHandlers) status(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.r.Status())
}

// sameOrigin keeps other sites' pages from starting or stopping runs.
func (h *perfHandlers) sameOrigin(w http.ResponseWriter, r *http.Request) bool {
	if h.srv.checkOrigin(r) {
		return true
	}
	writeJSON(w, http.StatusForbidden, apiError{CodeForbidden, "requests from another site's page are refused; open StateLab's own Performance page"})
	return false
}

func (h *perfHandlers) run(w http.ResponseWriter, r *http.Request) {
	if !h.sameOrigin(w, r) {
		return
	}
	_, e, status := h.r.Start()
	if e != nil {
		writeJSON(w, status, e)
		return
	}
	writeJSON(w, status, h.r.Status())
}

// runForm is the run button without JavaScript: start, then back to the page.
func (h *perfHandlers) runForm(w http.ResponseWriter, r *http.Request) {
	if !h.sameOrigin(w, r) {
		return
	}
	_, _, _ = h.r.Start() // the page shows the state, refusals included
	http.Redirect(w, r, "/performance", http.StatusSeeOther)
}

func (h *perfHandlers) cancel(w http.ResponseWriter, r *http.Request) {
	if !h.sameOrigin(w, r) {
		return
	}
	if !h.r.Cancel() {
		writeJSON(w, http.StatusConflict, apiError{PerfNoRun, "no run is in progress"})
		return
	}
	writeJSON(w, http.StatusAccepted, h.r.Status())
}
