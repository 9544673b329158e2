package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/lessons"
)

// A lesson session runs one lesson's job on the real Stepper and follows
// the learner through its steps (lessons/doc.go has the contract):
//
//  1. /ws?lesson=SLUG[&step=N] plays steps 1..N-1 headlessly
//     (Lesson.PlayTo), so the engine is where step N begins, and starts the
//     session on that engine.
//  2. One goroutine per lesson session (watch) reads the engine's events
//     into the current step's Tracker and, at most every
//     lessonCheckInterval after something happened, judges the step on a
//     fresh snapshot. When every check holds it broadcasts the tick and
//     moves on to the next step with a new Tracker.
//  3. "lesson-do" performs the current step's actions in a goroutine (as
//     the headless runner does: before each job command it waits until
//     every subtask is RUNNING), "lesson-replay" replaces the engine with
//     one played to the start of a step, and a reset to a job variant (an
//     action, or the toolbar) starts a new engine for the same step.
//  4. Every change of the learner's position is one "lesson" message to
//     every viewer (docs/protocol.md); "lesson-status" asks for it.

// KindLesson is the Session.Kind of a lesson session.
const KindLesson = "lesson"

// Lesson commands (docs/protocol.md, "Lesson sessions").
const (
	CmdLessonStatus = "lesson-status"
	CmdLessonDo     = "lesson-do"
	CmdLessonReplay = "lesson-replay"
)

func init() {
	commands[CmdLessonStatus] = commandDef{parse: noArgs(CmdLessonStatus)}
	commands[CmdLessonDo] = commandDef{parse: stepArg(CmdLessonDo)}
	commands[CmdLessonReplay] = commandDef{parse: stepArg(CmdLessonReplay)}
}

func stepArg(name string) func(json.RawMessage, *Command) *protoError {
	return func(raw json.RawMessage, c *Command) *protoError {
		var a struct {
			Step *int `json:"step"`
		}
		if e := decodeArgs(name, raw, &a, `{"step":1}`); e != nil {
			return e
		}
		if a.Step == nil || *a.Step < 1 {
			return perr(CodeBadArgs, `%s: args.step is required: the step's number, from 1; send e.g. {"step":1}`, name)
		}
		c.LessonStep = *a.Step
		return nil
	}
}

const (
	// lessonCheckInterval is the least time between two judgements of a
	// step: a snapshot compares every sink with its ground truth.
	lessonCheckInterval = 150 * time.Millisecond
	// lessonReadyWithin bounds how long "do it for me" waits for the job to
	// run before a command (a restore at the teaching pace takes seconds).
	lessonReadyWithin = 2 * time.Minute
	// lessonPoll is how often "do it for me" looks whether the job is ready.
	lessonPoll = 50 * time.Millisecond
	// lessonRejudge is the most time between two judgements of a step
	// that waits for its checks, whether or not an event came: the
	// watcher is woken by events, and a run that went quiet after its
	// last one (a job FAILED for good, every source read) must still be
	// judged on its latest snapshot.
	lessonRejudge = time.Second
	// maxStepEvents bounds the events kept for a restarted Tracker.
	maxStepEvents = 10000
)

// lessonMsg is the "lesson" message: where a lesson session is.
type lessonMsg struct {
	Type   string `json:"type"` // "lesson"
	Lesson string `json:"lesson"`
	// Step is the step followed now, from 1; Steps is how many there are.
	Step  int `json:"step"`
	Steps int `json:"steps"`
	// Done says the step's checks hold: the tick. Checks are the step's
	// checks in the lesson's order, with why one does not hold (English).
	Done   bool                  `json:"done"`
	Checks []lessons.CheckResult `json:"checks"`
	// Completed lists the steps done in this session, from 1.
	Completed []int `json:"completed"`
	// Finished: the last step is done.
	Finished bool `json:"finished"`
	// Acted: the step's actions were performed (by the learner or "do it
	// for me"); a step with actions is judged only after that.
	Acted bool `json:"acted"`
	// Doing: "do it for me" is performing the step's actions.
	Doing bool `json:"doing"`
	// Job is the job running: "main" or a variant a reset chose.
	Job string `json:"job"`
	// Error says why the last "do it for me" stopped ("" when it did not).
	Error string `json:"error,omitempty"`
}

// lessonRun is the lesson side of a lesson session.
type lessonRun struct {
	l       *lessons.Lesson
	s       *Session
	log     *slog.Logger
	startAt int  // the step (0-based) the first engine opens at
	opened  bool // the first engine was started; guarded by the session's cmdMu

	rewire  chan rewireReq
	restart chan restartReq
	poke    chan struct{}
	wg      sync.WaitGroup

	mu        sync.Mutex
	cur       int // 0-based step followed now
	job       string
	completed []bool
	finished  bool
	doing     bool
	// acted: the learner (or "do it for me") performed one of the current
	// step's actions; a step with actions is judged only after that, since
	// its checks may already hold before (the job it resets from may
	// satisfy them).
	acted  bool
	gen    int64 // bumped by a replay: a running "do it for me" stops
	result lessons.Result
	errMsg string
	last   []byte // the last broadcast message
}

// restartReq restarts the current step's Tracker from start, the moment
// the learner performs one of the step's actions.
type restartReq struct {
	start engine.Snapshot
	done  chan struct{}
}

// rewireReq hands the watcher a new engine: it follows its events from now
// on, with a new Tracker for step (or for the current step when step < 0).
type rewireReq struct {
	eng  Engine
	sub  Subscription
	step int
	done chan struct{}
}

func newLessonRun(l *lessons.Lesson, startAt int, log *slog.Logger) *lessonRun {
	return &lessonRun{l: l, log: log, startAt: startAt, cur: startAt, job: lessons.MainJob,
		completed: make([]bool, len(l.Steps)), rewire: make(chan rewireReq), restart: make(chan restartReq),
		poke: make(chan struct{}, 1)}
}

// openLesson starts a lesson session (/ws?lesson=SLUG[&step=N]).
func (srv *Server) openLesson(slug string, q url.Values) (*Session, *protoError) {
	l, ok := srv.cfg.Lessons.Lesson(slug)
	if !ok {
		return nil, perr(CodeUnknownJob, "there is no lesson %q; see /lessons for the list", slug)
	}
	step := 1
	if v := q.Get("step"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > len(l.Steps) {
			return nil, perr(CodeBadArgs, "step %q: lesson %s has steps 1 to %d", v, slug, len(l.Steps))
		}
		step = n
	}
	if l.Capstone != nil {
		// A capstone's goals are reached, never played for the learner: it
		// always opens at its first step.
		step = 1
	}
	spec, err := l.Job(lessons.MainJob)
	if err != nil {
		return nil, perr(CodeInternal, "cannot start the lesson: %v", err)
	}
	lr := newLessonRun(l, step-1, srv.log)
	if !srv.sessions.reserve(srv.cfg.MaxSessions) {
		return nil, perr(CodeSessionLimit, "the server already runs %d sessions, its limit; close a lesson or sandbox tab or try again when an idle one has ended", srv.cfg.MaxSessions)
	}
	s, err := srv.startSession(KindLesson, "lesson:"+slug, RunConfig{Spec: spec, Driver: DriverStepper, Start: lr.start})
	if err != nil {
		srv.sessions.release()
		return nil, perr(CodeInternal, "cannot start the lesson: %v", err)
	}
	// A reset without a job starts the job that runs now, which after
	// PlayTo may be a variant.
	if spec, err := l.Job(lr.job); err == nil {
		s.run.Spec = spec
	}
	s.lesson = lr
	lr.begin(s)
	srv.sessions.put(s)
	return s, nil
}

// start is the session's EngineFactory: the first engine is the lesson
// played to startAt, every later one (a reset) run.Spec from its start.
// Engines are returned paused; the lesson resumes them once it follows
// their events, so no event is missed.
func (lr *lessonRun) start(ctx context.Context, run RunConfig) (Engine, error) {
	opts := lessons.RunOptions{Dir: run.DataDir, Logger: lr.log}
	if !lr.opened {
		lr.opened = true
		pos, err := lr.l.PlayTo(ctx, lr.startAt, opts)
		if err != nil {
			return nil, fmt.Errorf("play lesson %s to step %d: %w", lr.l.Slug, lr.startAt+1, err)
		}
		lr.mu.Lock()
		lr.job = pos.Job
		lr.mu.Unlock()
		return newLessonEngine(pos.Stepper, 1)
	}
	st, err := engine.NewStepper(run.Spec, engine.Options{Dir: run.DataDir, Logger: lr.log})
	if err != nil {
		return nil, specError(err)
	}
	// Keep the learner's speed across a reset.
	return newLessonEngine(st, lr.s.engine().Snapshot().Speed)
}

// newLessonEngine wraps a Stepper as the session's engine at the teaching
// pace times speed, paused.
func newLessonEngine(st *engine.Stepper, speed float64) (Engine, error) {
	e := &driverEngine{st: st, factor: 1}
	if speed <= 0 {
		speed = 1
	}
	if err := e.SetSpeed(speed); err != nil {
		_ = st.Close()
		return nil, err
	}
	return e, nil
}

// begin starts following the session's first engine, then lets it play.
func (lr *lessonRun) begin(s *Session) {
	lr.s = s
	lr.wg.Add(1)
	go lr.watch()
	eng := s.engine()
	lr.attach(eng, lr.startAt)
	_ = eng.Resume()
}

// wait waits for the lesson's goroutines; the session's context has ended.
func (lr *lessonRun) wait() { lr.wg.Wait() }

// attach makes the watcher follow eng from now, at step (or the current
// step when step < 0). eng is paused, so the Tracker starts exactly where
// the engine is.
func (lr *lessonRun) attach(eng Engine, step int) {
	r := rewireReq{eng: eng, sub: eng.Subscribe(lr.s.srv.cfg.EventBuffer), step: step, done: make(chan struct{})}
	select {
	case lr.rewire <- r:
		select {
		case <-r.done:
		case <-lr.s.ctx.Done():
		}
	case <-lr.s.ctx.Done():
		r.sub.Close()
	}
}

// engineReset follows the engine a reset started (the session holds its
// command lock); job is the variant the reset chose ("" = the same job).
func (lr *lessonRun) engineReset(eng Engine, job string) {
	if job != "" {
		lr.mu.Lock()
		lr.job = job
		lr.mu.Unlock()
	}
	lr.attach(eng, -1)
	_ = eng.Resume()
	lr.s.requestSnapshot()
}

// lessonJob returns the spec a reset to job starts.
func (s *Session) lessonJob(job string) (*engine.JobSpec, *protoError) {
	if s.lesson == nil {
		return nil, perr(CodeBadArgs, "reset: job %q: only a lesson session has jobs to choose from; leave job out to start this job again", job)
	}
	spec, err := s.lesson.l.Job(job)
	if err != nil {
		return nil, perr(CodeBadArgs, "reset: %v", err)
	}
	return spec, nil
}

// watch is the lesson's goroutine: the only reader of the engine's events
// for the Tracker, which it alone uses.
func (lr *lessonRun) watch() {
	defer lr.wg.Done()
	var (
		eng     Engine
		sub     Subscription
		events  <-chan engine.Event
		tracker *lessons.Tracker
		dirty   bool
		// seen are the step's events a Tracker reads (Tracker.Observe
		// keeps only these kinds), to hand to a restarted Tracker.
		seen []engine.Event
		// actedHere: the current Tracker starts at an action of its step
		// (a reset's new engine, a learner's command), so a further
		// action adds a start instead of replacing it.
		actedHere bool
		// dropped is the subscription's count of missed events at the
		// last look, judged is when the step was last judged: a missed
		// event (the watcher fell behind) or a quiet run must not leave a
		// step unjudged, so both make it judge again.
		dropped int64
		judged  time.Time
	)
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	tick := time.NewTicker(lessonCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-lr.s.ctx.Done():
			return
		case r := <-lr.rewire:
			if sub != nil {
				sub.Close()
			}
			eng, sub, events = r.eng, r.sub, r.sub.Events()
			snap := eng.Snapshot()
			lr.mu.Lock()
			if r.step >= 0 {
				lr.cur, lr.finished, lr.acted = r.step, false, false
				for i := range lr.completed {
					lr.completed[i] = i < r.step
				}
			} else if hasAction(lr.l.Steps[lr.cur], CmdReset) {
				lr.acted = true // a reset to a job is this step's action
			}
			lr.result = lessons.Result{}
			step := lr.l.Steps[lr.cur]
			lr.mu.Unlock()
			tracker, dirty, seen = lessons.NewTracker(step, snap), true, nil
			actedHere, dropped = r.step < 0 && hasAction(step, CmdReset), 0
			close(r.done)
			lr.broadcast()
		case r := <-lr.restart:
			if tracker != nil {
				lr.mu.Lock()
				step := lr.l.Steps[lr.cur]
				lr.acted = true
				lr.mu.Unlock()
				if !actedHere {
					// The step's first action: "this step" starts here
					// (with the events seen since the step began).
					tracker = lessons.NewTracker(step, r.start)
					tracker.Observe(seen...)
				} else {
					// A repeated action (a second click, one the
					// engine refuses) adds a start and keeps the first.
					tracker.Restart(r.start)
				}
				actedHere, dirty = true, true
			}
			close(r.done)
		case e, ok := <-events:
			if !ok { // the engine closed; a rewire brings the next one
				events = nil
				continue
			}
			tracker.Observe(e)
			if lessons.TrackedEvent(e.Kind) && len(seen) < maxStepEvents {
				seen = append(seen, e)
			}
			dirty = true
		case <-lr.poke:
			dirty = true
		case now := <-tick.C:
			if sub != nil {
				if d := sub.Dropped(); d != dropped {
					dropped, dirty = d, true
				}
			}
			if now.Sub(judged) >= lessonRejudge {
				dirty = true
			}
			if dirty && eng != nil && lr.judging() {
				dirty, judged = false, now
				var advanced bool
				tracker, advanced = lr.judge(eng, tracker)
				if advanced {
					seen, actedHere = nil, false
				}
				dirty = advanced // the next step may hold at once
			}
		}
	}
}

// apply applies a job command (the session's command lock is held; snap is
// the job just before). When cmd is one of the current step's actions, the
// step's Tracker restarts from that moment: "this step" of a check means
// since the step's actions were performed, and a learner reads for a while
// before acting. On the headless runner the two moments coincide; here a
// periodic checkpoint may complete in between, and "restored from the
// latest checkpoint" must mean the latest when the learner crashed the
// job. The run is paused around the restart, so the Tracker's start is
// exactly the job the command meets.
func (lr *lessonRun) apply(ctx context.Context, eng Engine, cmd *Command, snap *engine.Snapshot) error {
	lr.mu.Lock()
	st, finished := lr.l.Steps[lr.cur], lr.finished
	lr.mu.Unlock()
	if finished || !hasAction(st, cmd.Name) {
		return eng.Apply(ctx, *cmd)
	}
	if !snap.Paused {
		if err := eng.Pause(); err != nil {
			return err
		}
		defer func() { _ = eng.Resume() }()
	}
	r := restartReq{start: eng.Snapshot(), done: make(chan struct{})}
	select {
	case lr.restart <- r:
		select {
		case <-r.done:
		case <-lr.s.ctx.Done():
		}
	case <-lr.s.ctx.Done():
	}
	return eng.Apply(ctx, *cmd)
}

// hasAction reports whether the step has an action named name.
func hasAction(st *lessons.Step, name string) bool {
	return slices.ContainsFunc(st.Actions, func(a lessons.Action) bool { return a.Name == name })
}

// awaitsAction reports whether the step has actions on the job, which the
// learner must perform before the step is judged; viewer controls
// (pause, resume, speed, snapshot, step) do not count.
func awaitsAction(st *lessons.Step) bool {
	return slices.ContainsFunc(st.Actions, func(a lessons.Action) bool {
		switch a.Name {
		case CmdPause, CmdResume, CmdSpeed, CmdSnapshot, CmdStep:
			return false
		}
		return true
	})
}

// judging reports whether the current step should be judged: not before
// its actions were performed, not while "do it for me" performs them (the
// runner judges after them), and not once the lesson is finished.
func (lr *lessonRun) judging() bool {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return !lr.doing && !lr.finished && (lr.acted || !awaitsAction(lr.l.Steps[lr.cur]))
}

// judge checks the current step on a fresh snapshot; when it holds, it
// broadcasts the tick and moves to the next step.
func (lr *lessonRun) judge(eng Engine, tr *lessons.Tracker) (*lessons.Tracker, bool) {
	now := eng.Snapshot()
	if now.Driver == "closed" {
		return tr, false
	}
	res := tr.Check(now, engineState{eng})
	lr.mu.Lock()
	lr.result = res
	advanced := false
	if res.Done {
		lr.completed[lr.cur] = true
		// Every tick is sent, even when the next step's message follows
		// at once.
		lr.last = lr.messageLocked()
		lr.s.srv.hub.broadcast(lr.s, lr.last)
		if lr.cur+1 < len(lr.l.Steps) {
			lr.cur++
			lr.result, lr.acted = lessons.Result{}, false
			tr, advanced = lessons.NewTracker(lr.l.Steps[lr.cur], now), true
		} else {
			lr.finished = true
		}
	}
	lr.mu.Unlock()
	lr.broadcast()
	return tr, advanced
}

// engineState reads subtask state through the session's engine, for checks
// that look inside keyed state.
type engineState struct{ e Engine }

func (r engineState) TaskState(task string, _ int) (engine.TaskStateView, error) {
	return r.e.Inspect(task)
}

// messageLocked renders the lesson message; lr.mu is held.
func (lr *lessonRun) messageLocked() []byte {
	m := lessonMsg{Type: "lesson", Lesson: lr.l.Slug, Step: lr.cur + 1, Steps: len(lr.l.Steps), Done: lr.completed[lr.cur],
		Checks: lr.result.Checks, Completed: []int{}, Finished: lr.finished, Acted: lr.acted, Doing: lr.doing, Job: lr.job, Error: lr.errMsg}
	if len(m.Checks) == 0 { // not judged yet
		for _, c := range lr.l.Steps[lr.cur].Checks {
			m.Checks = append(m.Checks, lessons.CheckResult{Check: c.String()})
		}
	}
	for i, done := range lr.completed {
		if done {
			m.Completed = append(m.Completed, i+1)
		}
	}
	return mustJSON(m)
}

// sendTo sends c the lesson message, ordered with the broadcasts.
func (lr *lessonRun) sendTo(c *client) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	lr.s.srv.hub.unicast(c, lr.messageLocked())
}

// broadcast sends the lesson message to every viewer when it changed. It
// hands the message to the hub under lr.mu, so two goroutines' messages
// reach viewers in the order the state changed.
func (lr *lessonRun) broadcast() {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	b := lr.messageLocked()
	if bytes.Equal(b, lr.last) {
		return
	}
	lr.last = b
	lr.s.srv.hub.broadcast(lr.s, b)
}

func (lr *lessonRun) wake() {
	select {
	case lr.poke <- struct{}{}:
	default:
	}
}

// lessonCommand runs a lesson command; the session's command lock is held.
func (s *Session) lessonCommand(c *client, cmd *Command) *protoError {
	lr := s.lesson
	if lr == nil {
		return perr(CodeRefused, "%s: this is not a lesson session; open a lesson at /lessons", cmd.Name)
	}
	n := len(lr.l.Steps)
	if cmd.Name != CmdLessonStatus && cmd.LessonStep > n {
		return perr(CodeBadArgs, "%s: lesson %s has steps 1 to %d, not %d", cmd.Name, lr.l.Slug, n, cmd.LessonStep)
	}
	switch cmd.Name {
	case CmdLessonStatus:
		if c != nil {
			lr.sendTo(c)
		}
		return nil
	case CmdLessonDo:
		if lr.l.Capstone != nil {
			return perr(CodeRefused, "lesson-do: %s is a capstone: its steps are goals to reach with the job's own controls, with no do it for me (hints unlock over time)", lr.l.Slug)
		}
		lr.mu.Lock()
		cur, finished, doing := lr.cur, lr.finished, lr.doing
		switch {
		case finished:
			lr.mu.Unlock()
			return perr(CodeRefused, "lesson-do: the lesson is finished; replay a step to do it again")
		case cmd.LessonStep != cur+1:
			lr.mu.Unlock()
			return perr(CodeRefused, "lesson-do: step %d is not the current step (%d); replay step %d first", cmd.LessonStep, cur+1, cmd.LessonStep)
		case doing:
			lr.mu.Unlock()
			return perr(CodeRefused, "lesson-do: step %d is being done already", cmd.LessonStep)
		}
		lr.doing, lr.errMsg = true, ""
		gen := lr.gen
		lr.mu.Unlock()
		lr.broadcast()
		lr.wg.Add(1)
		go lr.perform(gen, lr.l.Steps[cur])
		return nil
	case CmdLessonReplay:
		if lr.l.Capstone != nil {
			lr.mu.Lock()
			cur := lr.cur
			lr.mu.Unlock()
			if cmd.LessonStep > cur+1 {
				return perr(CodeRefused, "lesson-replay: %s is a capstone: replay a step you have reached (1 to %d), not step %d ahead of you", lr.l.Slug, cur+1, cmd.LessonStep)
			}
		}
		return lr.replay(cmd.LessonStep - 1)
	}
	return perr(CodeUnknownCommand, "unknown lesson command %q", cmd.Name)
}

// replay replaces the engine with the lesson played to the start of step
// i; the session's command lock is held.
func (lr *lessonRun) replay(i int) *protoError {
	s := lr.s
	lr.mu.Lock()
	lr.gen++ // a "do it for me" in flight stops before its next action
	lr.doing, lr.errMsg = false, ""
	lr.mu.Unlock()
	s.newRun()
	runDir := filepath.Join(s.run.DataDir, fmt.Sprintf("run-%d", s.resets.Add(1)))
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return perr(CodeInternal, "lesson-replay: cannot create the run directory: %v", err)
	}
	speed := s.engine().Snapshot().Speed
	pos, err := lr.l.PlayTo(s.ctx, i, lessons.RunOptions{Dir: runDir, Logger: lr.log})
	if err != nil {
		_ = os.RemoveAll(runDir)
		return perr(CodeInternal, "lesson-replay: cannot play lesson %s to step %d: %v", lr.l.Slug, i+1, err)
	}
	eng, err := newLessonEngine(pos.Stepper, speed)
	if err != nil {
		return perr(CodeInternal, "lesson-replay: %v", err)
	}
	old := s.engine()
	s.swap(eng)
	if err := old.Close(); err != nil {
		s.srv.log.Warn("close engine on replay", "session", s.ID, "err", err)
	}
	if spec, err := lr.l.Job(pos.Job); err == nil {
		spec.Seed = pos.Seed
		s.x.mu.Lock() // the timeline reads s.run under x.mu
		s.run.Spec = spec
		s.x.mu.Unlock()
	}
	s.newTimeline()
	lr.mu.Lock()
	lr.job = pos.Job
	lr.mu.Unlock()
	lr.attach(eng, i)
	_ = eng.Resume()
	s.requestSnapshot()
	s.srv.log.Info("lesson replayed", "session", s.ID, "lesson", lr.l.Slug, "step", i+1)
	return nil
}

// errStale stops a "do it for me" whose step was replaced by a replay.
var errStale = errors.New("the step was replayed")

func (lr *lessonRun) stale(gen int64) bool {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.gen != gen || lr.s.ctx.Err() != nil
}

// perform is "do it for me": the step's actions, in order, as the learner
// would send them.
func (lr *lessonRun) perform(gen int64, st *lessons.Step) {
	defer lr.wg.Done()
	err := lr.performActions(gen, st)
	if errors.Is(err, errStale) || lr.s.ctx.Err() != nil {
		return
	}
	lr.mu.Lock()
	if lr.gen == gen {
		lr.doing = false
		if err != nil {
			lr.errMsg = err.Error()
		}
	}
	lr.mu.Unlock()
	if err == nil {
		// Let the job run, as the runner does after the actions: a step
		// action paused it, or it stood idle with nothing to read.
		_ = lr.locked(gen, func(e Engine) error { return e.Resume() })
		lr.s.requestSnapshot()
	} else {
		lr.s.srv.log.Info("lesson do it for me failed", "session", lr.s.ID, "lesson", lr.l.Slug, "step", st.Index+1, "err", err)
	}
	lr.wake()
	lr.broadcast()
}

func (lr *lessonRun) performActions(gen int64, st *lessons.Step) error {
	s := lr.s
	for _, a := range st.Actions {
		if lr.stale(gen) {
			return errStale
		}
		def, ok := commands[a.Name]
		if !ok {
			return fmt.Errorf("%s: the protocol has no such command", a)
		}
		cmd := Command{Name: a.Name}
		if pe := def.parse(a.MarshalArgs(), &cmd); pe != nil {
			return fmt.Errorf("%s: %s", a, pe.Message)
		}
		var err error
		switch a.Name {
		case CmdPause, CmdResume, CmdSpeed, CmdSnapshot:
			continue // the viewer's controls are the learner's
		case CmdReset:
			if cmd.Job == "" {
				cmd.Job = lessons.MainJob // as the runner reads a reset action
			}
			err = lr.locked(gen, func(Engine) error { return asError(s.reset(&cmd)) })
		case CmdStep:
			err = lr.locked(gen, func(e Engine) error { return asError(engineErrorOrNil(CmdStep, e.Step(cmd.Count))) })
			s.requestSnapshot()
		default:
			if err := lr.waitReady(gen); err != nil {
				return fmt.Errorf("before %s: %w", a, err)
			}
			if a.ExpectRefused {
				// Straight to the engine, past the protocol's own checks:
				// the engine must refuse it and log the refusal the
				// check reads.
				err = lr.locked(gen, func(e Engine) error {
					snap := e.Snapshot()
					return lr.apply(s.ctx, e, &cmd, &snap)
				})
				if errors.Is(err, errStale) {
					return err
				}
				if err == nil {
					return fmt.Errorf("the engine accepted %s, but the lesson expects it to be refused", a)
				}
				continue
			}
			err = lr.locked(gen, func(e Engine) error {
				snap := e.Snapshot()
				if pe := checkAgainstJob(&cmd, &snap); pe != nil {
					return pe
				}
				return asError(engineErrorOrNil(cmd.Name, lr.apply(s.ctx, e, &cmd, &snap)))
			})
		}
		if errors.Is(err, errStale) {
			return err
		}
		if err != nil {
			var pe *protoError
			if errors.As(err, &pe) {
				return fmt.Errorf("%s was refused: %s", a, pe.Message)
			}
			return fmt.Errorf("%s was refused: %w", a, err)
		}
	}
	return nil
}

// waitReady waits until a command can act on a running job, as the
// headless runner does: every subtask RUNNING, no rescale under way (a job
// waiting for slots or stopped for good is ready as it is). A paused run is
// stepped here, a playing one watched.
func (lr *lessonRun) waitReady(gen int64) error {
	s := lr.s
	deadline := time.Now().Add(lessonReadyWithin)
	for {
		if lr.stale(gen) {
			return errStale
		}
		snap := s.engine().Snapshot()
		why := lessons.NotReady(&snap)
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the job did not become ready within %s: %s", lessonReadyWithin, why)
		}
		if snap.Paused {
			if err := lr.locked(gen, func(e Engine) error { return e.Step(64) }); err != nil {
				if errors.Is(err, errStale) {
					return err
				}
				return fmt.Errorf("the job cannot become ready (%s): %w", why, err)
			}
			continue
		}
		select {
		case <-s.ctx.Done():
			return errStale
		case <-time.After(lessonPoll):
		}
	}
}

// locked runs fn on the session's engine under the command lock, unless
// the session ended or a replay made gen stale meanwhile: an action of a
// replaced step never reaches the new engine.
func (lr *lessonRun) locked(gen int64, fn func(Engine) error) error {
	s := lr.s
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	if s.closed.Load() || lr.stale(gen) {
		return errStale
	}
	return fn(s.engine())
}

// asError turns a nil *protoError into a nil error.
func asError(pe *protoError) error {
	if pe == nil {
		return nil
	}
	return pe
}

func engineErrorOrNil(name string, err error) *protoError {
	if err == nil {
		return nil
	}
	return engineError(name, err)
}
