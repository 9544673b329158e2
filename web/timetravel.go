package web

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/statelab/statelab/catalog"
	"github.com/statelab/statelab/engine"
)

// Time travel rests on one property of the Stepper: the same spec, seed and
// command log give the same run, event for event (engine.Replay). It does
// not replay from step 0 each time, though: while a teaching-mode run plays,
// the session keeps images of it — forks of its Stepper (engine.Fork),
// every imageEvery steps, at most maxImages, thinned so they stay evenly
// spread — and shows step N by forking the nearest image at or before N and
// stepping on from there, so a seek costs at most the distance between two
// images whatever the run's length. A fork copies the running job
// (engine.Fork) in any mode, teaching or full speed, at the present or at
// the step being looked at. A run that went to full speed has no step
// numbers to seek to (its past is not replayable); a fork of it starts a
// timeline of its own at its step 0.

// Commands of time travel and classrooms (see protocol.go's table).
const (
	CmdSeek = "seek" // args.step: show the run at that step; -1 or beyond the present returns to it
	CmdFork = "fork" // optional args.step: copy the run up to there into a new session
)

// Kinds of sessions made here.
const (
	KindClassroom = "classroom"
	KindFork      = "fork"
	KindReplay    = "replay"
)

// Limits of time travel.
const (
	maxMarkers     = 1000                   // timeline markers kept per session (the newest)
	maxReplaySteps = catalog.MaxReplaySteps // a replay longer than this is refused (about a minute of CPU)
	timelineEvery  = 500 * time.Millisecond
	heavyRate      = 4 // seeks and forks per second per connection (burst heavyBurst)
	heavyBurst     = 8
	imageEvery     = 2000 // steps between two images of a playing run
	maxImages      = 16   // images kept per session (Config.MaxImages bounds them all)
	maxForkImages  = 6    // per fork: a class of 60 forks must stay bounded
)

// Marker is a point of interest on the timeline.
type Marker struct {
	Step  int64         `json:"step"`
	At    time.Duration `json:"at"`
	Kind  string        `json:"kind"` // checkpoint, savepoint, crash, restore, rescale, taskmanager, command
	Label string        `json:"label"`
}

// timelineMsg is the "timeline" server message.
type timelineMsg struct {
	Type       string   `json:"type"`
	Replayable bool     `json:"replayable"`
	Reason     string   `json:"reason,omitempty"`
	Head       int64    `json:"head"`
	View       *int64   `json:"view,omitempty"`
	Markers    []Marker `json:"markers"`
}

// replayPlan asks startEngine for a Stepper replayed to Step instead of a
// fresh run; the markers of the replayed steps are collected on the way.
type replayPlan struct {
	log     []engine.LoggedCommand
	step    int64
	play    bool
	markers []Marker
	// ctx is the requester's (a share link's or an import's request): the
	// replay stops when it is done. Nil: the server's.
	ctx context.Context
}

// sessionExt is a session's classroom and time-travel state. Its fields
// are guarded by mu, except review, which only the holder of the session's
// cmdMu touches.
type sessionExt struct {
	room *classroom // set once, before the session is listed

	mu         sync.Mutex
	markers    []Marker
	headStep   int64
	handedOver bool // the run went to the Live driver: no replay
	// noZero: the run began as a copy of a run that is not replayable (a
	// fork of a full-speed run); its timeline starts at its first image.
	noZero   bool
	dirty    bool
	lastSent time.Time
	// images of the present run, by step; epoch changes when they stop
	// belonging to it (reset, full speed), so a capture in flight is
	// dropped; capturing is set while one runs.
	images    []*image
	epoch     int64
	capturing bool
	captureWG sync.WaitGroup

	review *review
	views  atomic.Int64 // names view directories
}

// review is the state of a session whose viewers look at its past: the
// present (head) waits, paused, while a replayed Stepper shows step at.
type review struct {
	head     Engine
	headStep int64
	log      []engine.LoggedCommand
	st       *engine.Stepper
	view     Engine
	dir      string
	at       int64
}

// observe is called by the pump for every engine event of the session's
// current engine; it keeps the timeline's markers of the present run.
func (s *Session) observe(e engine.Event) {
	x := &s.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.review != nil {
		return // events of a replayed view, not of the present
	}
	if e.Kind == engine.EvDriver {
		x.handedOver = true
		x.dirty = true
	}
	if e.Step > x.headStep {
		x.headStep = e.Step
	}
	if m, ok := markerOf(e); ok {
		x.addMarker(m)
	}
	s.maybeKeepImageLocked()
}

// markerOf says whether e deserves a mark on the timeline.
func markerOf(e engine.Event) (Marker, bool) {
	m := Marker{Step: e.Step, At: e.At, Label: e.Message}
	switch e.Kind {
	case engine.EvCheckpointDone:
		m.Kind = "checkpoint"
		if e.Stats != nil && e.Stats.Savepoint {
			m.Kind = "savepoint"
		}
	case engine.EvTaskFailed:
		m.Kind = "crash"
	case engine.EvTaskManager:
		m.Kind = "taskmanager"
		if e.Status == "LOST" {
			m.Kind = "crash"
		}
	case engine.EvRestore:
		if e.Restore == nil || e.Restore.Checkpoint == 0 {
			return m, false
		}
		m.Kind = "restore"
		m.Label = fmt.Sprintf("restore from checkpoint %d", e.Restore.Checkpoint)
	case engine.EvRescaleStarted, engine.EvRescaleDone, engine.EvRescaleFailed:
		m.Kind = "rescale"
	case engine.EvCommand:
		if e.Command == nil {
			return m, false
		}
		switch e.Command.Name {
		case engine.CmdInject, engine.CmdAddTaskManager, engine.CmdRestartTaskManager:
			m.Kind = "command"
		default:
			return m, false // crashes, checkpoints and rescales mark themselves
		}
	default:
		return m, false
	}
	return m, true
}

// addMarker appends m unless it repeats the last marker of its kind: a
// TaskManager loss fails several subtasks in one step, and every subtask
// restores from the same checkpoint.
func (x *sessionExt) addMarker(m Marker) {
	for i := len(x.markers) - 1; i >= 0 && i >= len(x.markers)-8; i-- {
		p := x.markers[i]
		if p.Kind != m.Kind {
			continue
		}
		if p.Step == m.Step || (m.Kind == "restore" && p.Label == m.Label && m.Step-p.Step < 500) {
			return
		}
		break
	}
	x.markers = append(x.markers, m)
	if len(x.markers) > maxMarkers {
		x.markers = append(x.markers[:0], x.markers[len(x.markers)-maxMarkers:]...)
	}
	x.dirty = true
}

// timelineFrame builds the "timeline" message.
func (s *Session) timelineFrame() []byte {
	x := &s.x
	x.mu.Lock()
	defer x.mu.Unlock()
	return s.timelineFrameLocked()
}

func (s *Session) timelineFrameLocked() []byte {
	x := &s.x
	m := timelineMsg{Type: "timeline", Head: x.headStep, Markers: append([]Marker{}, x.markers...)}
	m.Replayable, m.Reason = s.replayableLocked()
	if rv := x.review; rv != nil {
		at := rv.at
		m.View, m.Head = &at, rv.headStep
	}
	x.dirty = false
	x.lastSent = time.Now()
	return mustJSON(m)
}

// sendTimelineTo gives a new viewer the timeline (the pump calls it right
// after registering the viewer, so it follows the first snapshot).
func (s *Session) sendTimelineTo(c *client) {
	s.srv.hub.unicastLatest(c, latestTimeline, s.timelineFrame())
}

// maybeBroadcastTimeline sends the timeline to every viewer when markers
// changed, at most every timelineEvery (the pump calls it on each tick).
func (s *Session) maybeBroadcastTimeline() {
	x := &s.x
	x.mu.Lock()
	if !x.dirty || time.Since(x.lastSent) < timelineEvery {
		x.mu.Unlock()
		return
	}
	f := s.timelineFrameLocked()
	x.mu.Unlock()
	s.srv.hub.broadcastLatest(s, latestTimeline, f)
}

func (s *Session) broadcastTimeline() {
	s.srv.hub.broadcastLatest(s, latestTimeline, s.timelineFrame())
}

// replayableLocked says whether the run's past can be shown (x.mu held).
func (s *Session) replayableLocked() (bool, string) {
	if s.run.Driver == DriverLive {
		return false, "this run started at full speed, which has no steps to go back to; reset it in teaching mode to travel in time (fork works in any mode)"
	}
	if s.x.handedOver {
		return false, "this run went to full speed, which cannot be replayed step by step; reset it in teaching mode to travel in time (fork works in any mode)"
	}
	return true, ""
}

// fromZeroLocked says whether the run replays from step 0 (spec, seed and
// command log), which sharing needs (x.mu held).
func (s *Session) fromZeroLocked() (bool, string) {
	if ok, why := s.replayableLocked(); !ok {
		return false, why
	}
	if s.x.noZero {
		return false, "this run is a copy of a run that went to full speed: it has no seed and command log from the start to replay; share the original from teaching mode, or export the event log"
	}
	return true, ""
}

// fromZero is fromZeroLocked as a protocol error.
func (s *Session) fromZero() *protoError {
	s.x.mu.Lock()
	ok, why := s.fromZeroLocked()
	s.x.mu.Unlock()
	if !ok {
		return perr(CodeRefused, "%s", why)
	}
	return nil
}

func (s *Session) replayable() *protoError {
	s.x.mu.Lock()
	ok, why := s.replayableLocked()
	s.x.mu.Unlock()
	if !ok {
		return perr(CodeRefused, "%s", why)
	}
	return nil
}

// timeTravel is execute's first look at a command (cmdMu held): it runs
// seek and fork, ends a review before a reset, and refuses commands that
// would change a past being looked at. done reports that it answered.
func (s *Session) timeTravel(c *client, cmd *Command) (pe *protoError, done bool) {
	rv := s.x.review
	switch cmd.Name {
	case CmdSeek:
		if !c.heavyAllowed() {
			return perr(CodeRefused, "seek: too many seeks and forks; this connection may send %d a second", heavyRate), true
		}
		return s.seek(cmd.Target), true
	case CmdFork:
		if !c.heavyAllowed() {
			return perr(CodeRefused, "fork: too many seeks and forks; this connection may send %d a second", heavyRate), true
		}
		return s.fork(c, cmd), true
	case CmdReset: // allowed while looking at the past: reset ends the review
		return s.reset(cmd), true
	case CmdSpeed:
		if cmd.Driver == DriverLive {
			if rv != nil {
				return perr(CodeRefused, "speed: you are looking at step %d of the past; return to the present before going to full speed", rv.at), true
			}
			// Mark before the hand-over: no fork may replay a run that is
			// about to leave the Stepper.
			s.x.mu.Lock()
			s.x.handedOver, s.x.dirty = true, true
			s.x.mu.Unlock()
			s.dropImages()
		}
	}
	if rv == nil {
		return nil, false
	}
	switch cmd.Name {
	case CmdSnapshot:
		return nil, false
	case CmdPause:
		return nil, true // a view of the past never plays
	case CmdStep:
		return s.seek(rv.at + int64(cmd.Count)), true
	case CmdResume:
		s.endReview() // back to the present, which plays on
		return nil, false
	}
	return perr(CodeRefused, "%s: you are looking at step %d of the run's past; return to the present (step %d) first, or fork here to change the past in a sandbox of your own",
		cmd.Name, rv.at, rv.headStep), true
}

// seek shows the run at step target: a replayed Stepper stands in for the
// paused present until a seek to the present (or beyond) or a resume.
func (s *Session) seek(target int64) *protoError {
	began := time.Now()
	defer func() {
		// A seek can take long on a busy machine (it replays from an
		// image); the log says how long, and where the session went.
		at := int64(-1)
		if rv := s.x.review; rv != nil {
			at = rv.at
		}
		s.srv.log.Info("seek", "session", s.ID, "target", target, "review_at", at, "took", time.Since(began).Round(time.Millisecond))
	}()
	rv := s.x.review
	if rv == nil {
		if target < 0 {
			return nil // already the present
		}
		if pe := s.replayable(); pe != nil {
			return perr(pe.Code, "seek: %s", pe.Message)
		}
		head := s.engine()
		if err := head.Pause(); err != nil {
			return engineError(CmdSeek, err)
		}
		s.drainEvents() // the present's last markers, before the review hides its events
		snap := head.Snapshot()
		if target >= snap.Step {
			s.requestSnapshot()
			return nil
		}
		view, st, dir, err := s.buildView(snap.Commands, target)
		if err != nil {
			return perr(CodeInternal, "seek: cannot replay the run to step %d: %v", target, err)
		}
		rv = &review{head: head, headStep: snap.Step, log: snap.Commands, st: st, view: view, dir: dir, at: target}
		s.x.mu.Lock()
		s.x.review = rv
		s.x.mu.Unlock()
		s.swap(view)
		s.broadcastTimeline()
		return nil
	}
	if target < 0 || target >= rv.headStep {
		s.endReview()
		return nil
	}
	if target >= rv.at {
		// Forward: the view steps on, applying the logged commands.
		if err := advance(rv.st, rv.log, rv.at, target); err != nil {
			return perr(CodeInternal, "seek: cannot replay to step %d: %v", target, err)
		}
		s.x.mu.Lock()
		rv.at = target
		s.x.mu.Unlock()
		s.requestSnapshot()
		s.broadcastTimeline()
		return nil
	}
	// Backward: from the nearest image at or before target.
	view, st, dir, err := s.buildView(rv.log, target)
	if err != nil {
		return perr(CodeInternal, "seek: cannot replay the run to step %d: %v", target, err)
	}
	old, oldDir := rv.view, rv.dir
	s.x.mu.Lock()
	rv.st, rv.view, rv.dir, rv.at = st, view, dir, target
	s.x.mu.Unlock()
	s.swap(view)
	_ = old.Close()
	_ = os.RemoveAll(oldDir)
	s.broadcastTimeline()
	return nil
}

// endReview returns the session to its present (paused where it was).
func (s *Session) endReview() {
	rv := s.x.review
	if rv == nil {
		return
	}
	s.x.mu.Lock()
	s.x.review = nil
	s.x.mu.Unlock()
	s.swap(rv.head)
	_ = rv.view.Close()
	_ = os.RemoveAll(rv.dir)
	s.broadcastTimeline()
}

// newRun leaves the past of a run whose engine was replaced by a new run
// (reset, a lesson's replay): the review ends, and the images, markers and
// starting point go, so a seek never starts from an image of another run.
// newRun is called before the new engine is started; newTimeline after.
func (s *Session) newRun() {
	s.endReview()
	s.x.mu.Lock()
	s.run.from = nil // a fork or replay restarts from the beginning
	s.x.mu.Unlock()
}

func (s *Session) newTimeline() {
	s.dropImages()
	s.x.mu.Lock()
	s.x.markers, s.x.headStep, s.x.handedOver, s.x.noZero, s.x.dirty = nil, 0, false, false, true
	s.x.mu.Unlock()
	s.broadcastTimeline()
}

// closeReview closes the paused present of a session that ends while its
// viewers look at the past (session.close closes the view itself), and the
// session's images. It may be called more than once.
func (s *Session) closeReview() {
	s.dropImages()
	s.x.captureWG.Wait()
	rv := s.x.review
	if rv == nil {
		return
	}
	s.x.review = nil
	_ = rv.head.Close()
}

// buildView makes a Stepper of the session's run at step, in a directory
// of its own: a fork of the nearest image at or before step stepped on to
// it, or (before the first image) a replay from step 0.
func (s *Session) buildView(log []engine.LoggedCommand, step int64) (Engine, *engine.Stepper, string, error) {
	dir := filepath.Join(s.run.DataDir, fmt.Sprintf("view-%d", s.x.views.Add(1)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, "", fmt.Errorf("create view directory: %w", err)
	}
	st, err := s.stepperAt(dir, log, step)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, "", err
	}
	return &driverEngine{st: st, factor: 1}, st, dir, nil
}

// stepperAt returns a paused Stepper of the session's run at step, in dir.
func (s *Session) stepperAt(dir string, log []engine.LoggedCommand, step int64) (*engine.Stepper, error) {
	img := s.x.imageAt(step)
	if img == nil {
		s.x.mu.Lock()
		noZero := s.x.noZero
		s.x.mu.Unlock()
		if noZero {
			return nil, fmt.Errorf("%w: this run's timeline starts where it was copied from a full-speed run; choose a later step", ErrRefused)
		}
		return replayStepper(s.run.Spec, dir, log, step, nil)
	}
	st, err := img.fork(dir)
	if err != nil {
		return nil, err
	}
	if err := advanceFrom(st, log, img.cmds, step); err != nil {
		_ = st.Close()
		return nil, err
	}
	if err := st.SetSpeed(TeachingPace); err != nil {
		_ = st.Close()
		return nil, err
	}
	return st, nil
}

// advanceFrom moves st, whose command log holds the first applied
// commands of log, to step to, applying the rest of log up to to at their
// steps.
func advanceFrom(st *engine.Stepper, log []engine.LoggedCommand, applied int, to int64) error {
	var cmds []engine.LoggedCommand
	if applied < len(log) {
		for _, lc := range log[applied:] {
			if lc.Step <= to {
				cmds = append(cmds, lc)
			}
		}
	}
	if err := st.Replay(cmds); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if now, _ := st.Position(); to > now {
		st.Steps(int(to - now))
	}
	return nil
}

// replayStepper starts a Stepper of spec in dir and replays log up to step
// (commands logged at step included); record, if set, sees every event of
// the replay. The Stepper is paused at the teaching pace.
func replayStepper(spec *engine.JobSpec, dir string, log []engine.LoggedCommand, step int64, record func(engine.Event)) (*engine.Stepper, error) {
	return replayStepperCtx(context.Background(), spec, dir, log, step, record)
}

// replayStepperCtx is replayStepper that stops, with ctx's error, when ctx
// is done (the requester went away, or the replay's budget ran out).
func replayStepperCtx(ctx context.Context, spec *engine.JobSpec, dir string, log []engine.LoggedCommand, step int64, record func(engine.Event)) (*engine.Stepper, error) {
	// Share links and scenarios are bounded by Limits.ReplaySteps before
	// they get here; forks and seeks by maxReplaySteps.
	if step < 0 {
		return nil, fmt.Errorf("%w: step %d is negative", ErrBadArgs, step)
	}
	var recording atomic.Bool
	opts := engine.Options{Dir: dir}
	if record != nil {
		recording.Store(true)
		opts.RecordEvents = func(e engine.Event) {
			if recording.Load() {
				record(e)
			}
		}
	}
	st, err := engine.NewStepper(spec, opts)
	if err != nil {
		return nil, specError(err)
	}
	if err := advanceCtx(ctx, st, log, -1, step); err != nil {
		_ = st.Close()
		return nil, err
	}
	recording.Store(false)
	if err := st.SetSpeed(TeachingPace); err != nil {
		_ = st.Close()
		return nil, err
	}
	return st, nil
}

// advance moves st from step from to step to, applying the commands logged
// after from and up to to at their steps (from -1: a fresh Stepper, whose
// commands of step 0 are still to apply). Replay stops at its last command,
// so the remaining steps are taken by hand; a run that can go no further
// stops early (nothing more would have happened in the original either).
func advance(st *engine.Stepper, log []engine.LoggedCommand, from, to int64) error {
	return advanceCtx(context.Background(), st, log, from, to)
}

// replayChunk is how many steps a replay takes between two looks at its
// context: a few milliseconds of work.
const replayChunk = 1000

// advanceCtx is advance in chunks of replayChunk steps, stopping with ctx's
// error when ctx is done.
func advanceCtx(ctx context.Context, st *engine.Stepper, log []engine.LoggedCommand, from, to int64) error {
	// stepTo steps until the stepper is at step target or can go no
	// further; the command replay below reports the latter.
	stepTo := func(target int64) error {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			at, _ := st.Position()
			n := min(target-at, replayChunk)
			if n <= 0 || st.Steps(int(n)) < int(n) {
				return nil
			}
		}
	}
	last := max(from, 0)
	for _, lc := range log {
		if lc.Step <= from || lc.Step > to {
			continue
		}
		if err := stepTo(lc.Step); err != nil {
			return err
		}
		if err := st.Replay([]engine.LoggedCommand{lc}); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		last = max(last, lc.Step)
	}
	if to > last {
		return stepTo(to)
	}
	return nil
}

// fork copies the run into a new session of the connection's own, and
// tells the client its id in the ack: the present as it stands (in any
// mode: engine.Fork), the step being looked at ("fork here"), or args.step
// of a teaching-mode run. The new session plays on if the original was
// playing at the present.
func (s *Session) fork(c *client, cmd *Command) *protoError {
	var (
		source  func(dir string) (*engine.Stepper, error)
		step    int64
		playing bool
	)
	target := cmd.Target
	s.x.mu.Lock()
	noZero := s.x.noZero || s.x.handedOver || s.run.Driver == DriverLive
	s.x.mu.Unlock()
	if rv := s.x.review; rv != nil {
		step = rv.at
		if target >= 0 && target != rv.at {
			step = min(target, rv.headStep)
		}
		if step == rv.at {
			source = func(dir string) (*engine.Stepper, error) { return rv.st.Fork(engine.Options{Dir: dir}) }
		} else {
			log := rv.log
			source = func(dir string) (*engine.Stepper, error) { return s.stepperAt(dir, log, step) }
		}
	} else {
		head := s.engine()
		fk, ok := head.(Forker)
		if !ok {
			return perr(CodeRefused, "fork: this engine cannot be copied")
		}
		s.drainEvents() // the markers up to the step copied
		snap := head.Snapshot()
		step, playing = snap.Step, !snap.Paused
		if target >= 0 && target < snap.Step {
			if pe := s.replayable(); pe != nil {
				return perr(pe.Code, "fork at step %d: %s", target, pe.Message)
			}
			step, playing = target, false
			log := snap.Commands
			source = func(dir string) (*engine.Stepper, error) { return s.stepperAt(dir, log, step) }
		} else {
			source = fk.ForkStepper
		}
	}
	run := RunConfig{Spec: s.run.Spec.Clone(), Driver: DriverStepper,
		Start: func(_ context.Context, r RunConfig) (Engine, error) {
			st, err := source(r.DataDir)
			if err != nil {
				return nil, err
			}
			if err := st.SetSpeed(TeachingPace); err != nil {
				_ = st.Close()
				return nil, err
			}
			e := &driverEngine{st: st, factor: 1}
			if playing {
				_ = e.Resume()
			}
			return e, nil
		}}
	ns, pe := s.srv.createSession(KindFork, s.Template, run)
	if pe != nil {
		return perr(pe.Code, "fork: %s", pe.Message)
	}
	// A reset of the fork starts its job afresh, as a sandbox's does.
	ns.run.Start = nil
	var markers []Marker
	s.x.mu.Lock()
	for _, m := range s.x.markers {
		if m.Step <= step && !noZero {
			markers = append(markers, m)
		}
	}
	s.x.mu.Unlock()
	if noZero {
		// Copied from a full-speed run: the fork's own steps start at 0.
		step = 0
	}
	ns.x.mu.Lock()
	ns.x.markers, ns.x.headStep, ns.x.noZero, ns.x.dirty = markers, step, noZero, true
	ns.x.mu.Unlock()
	if noZero {
		ns.keepImage() // its timeline starts here
	}
	s.srv.log.Info("session forked", "from", s.ID, "session", ns.ID, "step", step)
	c.forked = &forkResult{session: ns.ID, step: step}
	return nil
}

// forkResult is what the ack of a fork carries.
type forkResult struct {
	session string
	step    int64
}

// ack builds the ack of command id, with the fork's result if the command
// was a fork (the reader goroutine alone touches c.forked).
func (c *client) ack(id string) ackMsg {
	a := ackMsg{Type: "ack", ID: id}
	if f := c.forked; f != nil {
		step := f.step
		a.Session, a.Step = f.session, &step
		c.forked = nil
	}
	return a
}

// heavyAllowed limits seeks and forks, which replay a run, per connection.
func (c *client) heavyAllowed() bool {
	if c.heavy == nil {
		c.heavy = newTokenBucket(heavyRate, heavyBurst)
	}
	return c.heavy.allow(time.Now())
}

// replaying wraps the engine factory: a run with a replay plan (forks,
// share links, imported scenarios) starts as a Stepper replayed to the
// plan's step; any other run starts fresh. A reset clears the plan first,
// so it restarts from the template's beginning.
func (srv *Server) replaying(fresh EngineFactory) EngineFactory {
	return func(ctx context.Context, run RunConfig) (Engine, error) {
		if run.from == nil {
			return fresh(ctx, run)
		}
		return srv.replayEngine(run)
	}
}

func (srv *Server) replayEngine(run RunConfig) (Engine, error) {
	p := run.from
	ctx := p.ctx
	if ctx == nil {
		ctx = srv.ctx
	}
	ctx, cancel := context.WithTimeout(ctx, srv.cfg.Limits.ReplayTime)
	defer cancel()
	st, err := replayStepperCtx(ctx, run.Spec, run.DataDir, p.log, p.step, func(e engine.Event) {
		if m, ok := markerOf(e); ok {
			n := len(p.markers)
			if n > 0 && p.markers[n-1].Kind == m.Kind && (p.markers[n-1].Step == m.Step || m.Kind == "restore" && p.markers[n-1].Label == m.Label) {
				return
			}
			p.markers = append(p.markers, m)
			if len(p.markers) > maxMarkers {
				p.markers = p.markers[1:]
			}
		}
	})
	if err != nil {
		return nil, replayError(err, p.step, srv.cfg.Limits.ReplayTime)
	}
	e := &driverEngine{st: st, factor: 1}
	if p.play {
		_ = e.Resume()
	}
	return e, nil
}

// parseStepArg reads the optional step of seek and fork.
func parseStepArg(name string, required bool) func(json.RawMessage, *Command) *protoError {
	return func(raw json.RawMessage, c *Command) *protoError {
		var a struct {
			Step *int64 `json:"step"`
		}
		if e := decodeArgs(name, raw, &a, `{"step":1200}`); e != nil {
			return e
		}
		c.Target = -1
		if a.Step == nil {
			if required {
				return perr(CodeBadArgs, `%s: args.step is required: the step to show, e.g. {"step":1200}; -1 returns to the present`, name)
			}
			return nil
		}
		if *a.Step < -1 || *a.Step > maxReplaySteps {
			return perr(CodeBadArgs, "%s: step %d is out of range; send a step from 0 to the run's present, or -1 for the present", name, *a.Step)
		}
		c.Target = *a.Step
		return nil
	}
}

// The commands of this file join the protocol's table; fork is the one
// command a classroom follower may send besides snapshot.
func init() {
	commands[CmdSeek] = commandDef{parse: parseStepArg(CmdSeek, true)}
	commands[CmdFork] = commandDef{parse: parseStepArg(CmdFork, false)}
}
