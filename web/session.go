package web

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/statelab/statelab/engine"
)

// Session kinds. Lessons and classrooms will add their own; a kind only
// changes how the session was created and who may control it.
const (
	KindSandbox = "sandbox"
)

// Session is one running job and the viewers watching it. Its pump
// goroutine is the only reader of the engine's events: it coalesces them
// into at most one frame per FrameInterval, and answers joins with a
// snapshot taken after every earlier event was flushed, so a new viewer
// starts from a consistent picture.
type Session struct {
	ID       string
	Kind     string
	Template string
	Created  time.Time

	// x is the session's classroom and time-travel state (timetravel.go).
	x sessionExt

	srv     *Server
	run     RunConfig // how the current engine was started (reset restarts from it)
	viewers atomic.Int64
	// joining counts connections between join and the hub's registration
	// (the pump builds their first snapshot meanwhile, which can take a
	// second on a busy machine): they watch already (watched).
	joining atomic.Int64
	active  atomic.Int64 // unix nanoseconds of the last join, leave or command

	// cmdMu serialises commands, so two viewers' commands never interleave
	// inside the engine and a reset swaps the engine with nobody using it.
	cmdMu sync.Mutex
	engMu sync.RWMutex
	eng   Engine

	joins chan *client
	swaps chan swapReq
	// syncs asks the pump to take every event its subscription already
	// holds (drainEvents).
	syncs chan chan struct{}
	// rebuffer asks the pump to subscribe again with this buffer (idle.go).
	rebuffer chan int
	resync   chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	closed   atomic.Bool
	resets   atomic.Int64
	// idlePaused: the run was paused because nobody watched (idle.go);
	// idleMu orders that pause with a joining viewer's resume.
	idlePaused atomic.Bool
	idleMu     sync.Mutex
	// lesson is set for a lesson session (lessons.go) before the session is
	// listed, and never changes.
	lesson *lessonRun
}

type swapReq struct {
	eng  Engine
	done chan struct{}
}

func (s *Session) touch() { s.active.Store(time.Now().UnixNano()) }

// Viewers is how many connections watch the session now.
func (s *Session) Viewers() int { return int(s.viewers.Load()) }

// watched reports whether a viewer watches the session or is joining it.
// joining is read first: the hub stores the new viewer count before it
// counts the joiner out, so a joiner is always seen in one or the other.
func (s *Session) watched() bool { return s.joining.Load() > 0 || s.viewers.Load() > 0 }

// engine returns the current engine.
func (s *Session) engine() Engine {
	s.engMu.RLock()
	defer s.engMu.RUnlock()
	return s.eng
}

// Snapshot returns the current engine's snapshot (for HTTP views and tests).
func (s *Session) Snapshot() engine.Snapshot { return s.engine().Snapshot() }

func newSessionID() string {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("web: crypto/rand failed: " + err.Error())
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// startSession starts the engine for run and the session's pump.
func (srv *Server) startSession(kind, template string, run RunConfig) (*Session, error) {
	id := newSessionID()
	run.DataDir = filepath.Join(srv.cfg.DataDir, "sessions", id)
	if err := os.MkdirAll(run.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create session directory: %w", err)
	}
	start := srv.cfg.Engines
	if run.Start != nil {
		start = run.Start
	}
	eng, err := start(srv.ctx, run)
	if err != nil {
		_ = os.RemoveAll(run.DataDir)
		return nil, err
	}
	ctx, cancel := context.WithCancel(srv.ctx)
	s := &Session{
		ID: id, Kind: kind, Template: template, Created: time.Now(),
		srv: srv, run: run, eng: eng,
		joins: make(chan *client), swaps: make(chan swapReq), syncs: make(chan chan struct{}), resync: make(chan struct{}, 1), rebuffer: make(chan int, 1),
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
	}
	s.touch()
	go s.pump()
	srv.log.Info("session started", "session", id, "template", template, "driver", run.Driver, "seed", run.Spec.Seed)
	return s, nil
}

// close stops the pump, closes every viewer and the engine, and removes the
// session's data directory. It waits for the pump to end.
func (s *Session) close(reason string) {
	if !s.closed.CompareAndSwap(false, true) {
		return
	}
	// Stop the pump first: it registers joiners, so once it has ended no
	// viewer can be registered after the hub has closed them all.
	s.cancel()
	<-s.done
	if s.lesson != nil {
		s.lesson.wait() // its goroutines use the engine
	}
	s.srv.hub.closeSession(s, websocket.CloseGoingAway, reason)
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	if err := s.engine().Close(); err != nil {
		s.srv.log.Warn("close engine", "session", s.ID, "err", err)
	}
	s.closeReview()
	if err := os.RemoveAll(s.run.DataDir); err != nil {
		s.srv.log.Warn("remove session data", "session", s.ID, "err", err)
	}
	s.srv.log.Info("session closed", "session", s.ID, "reason", reason)
}

// join registers c with the session; the pump sends it a snapshot first.
// A run paused because nobody watched plays on. From here until the hub
// has registered c, c counts as joining (watched), so the reaper cannot
// pause the run under a viewer whose first snapshot is still being built.
func (s *Session) join(c *client) bool {
	s.joining.Add(1)
	select {
	case s.joins <- c:
		s.resumeWatched()
		return true
	case <-s.done:
		s.joining.Add(-1)
		return false
	}
}

// requestSnapshot asks the pump to send every viewer a fresh snapshot.
func (s *Session) requestSnapshot() {
	select {
	case s.resync <- struct{}{}:
	default: // one is already pending
	}
}

// structural event kinds change the shape of the job (subtasks, owners,
// TaskManagers) or rewind it; after one the pump sends a fresh snapshot so
// viewers never have to rebuild the job from events.
var structural = map[string]bool{
	"job-status": true, "taskmanager": true, "rescale-completed": true, "rescale-failed": true,
	"restore": true, "checkpoint-completed": true, "checkpoint-aborted": true, "record-injected": true,
	"waiting-resources": true, "rescale-started": true, "rescale-plan": true, "driver": true,
}

// dataPlane are the event kinds a lagging viewer goes without
// (backlog.go): records, reads, writes, watermarks and barriers moving
// through the job. The views animate them and the log lists them; the
// snapshots that follow carry their counts and positions. Every other
// kind — statuses, failures, checkpoints and their acknowledgements,
// alignment, restores, rescales, commands — is narrated by the story or
// changes the model, and reaches every viewer in order.
var dataPlane = map[engine.EventKind]bool{
	engine.EvRecordsSent: true, engine.EvRecordsReceived: true, engine.EvSourceRead: true,
	engine.EvWatermark: true, engine.EvFlow: true, engine.EvBarrierSent: true, engine.EvBarrierReceived: true,
	engine.EvBarrierOvertook: true, engine.EvStateUpdated: true, engine.EvSinkWrite: true,
	engine.EvWindowFired: true, engine.EvTimerFired: true, engine.EvTxnPreCommitted: true,
}

// narratedEvents returns the events of evs that are not data-plane events,
// in order (evs itself when all are).
func narratedEvents(evs []Event) []Event {
	n := 0
	for _, e := range evs {
		if !dataPlane[e.Kind] {
			n++
		}
	}
	if n == len(evs) {
		return evs
	}
	told := make([]Event, 0, n)
	for _, e := range evs {
		if !dataPlane[e.Kind] {
			told = append(told, e)
		}
	}
	return told
}

// pump reads the engine's events and hands frames to the hub.
func (s *Session) pump() {
	defer close(s.done)
	cfg := &s.srv.cfg
	sub := s.engine().Subscribe(cfg.EventBuffer)
	defer func() { sub.Close() }()
	tick := time.NewTicker(cfg.FrameInterval)
	defer tick.Stop()
	var (
		co        coalescer
		dropped   int64
		needSnap  bool
		lastSnap  time.Time
		activity  bool
		snapEvery = cfg.SnapshotInterval
		subChan   = sub.Events()
	)
	flush := func() {
		if co.len() == 0 {
			return
		}
		evs := co.take()
		frame, err := json.Marshal(eventsMsg{Type: "events", Events: evs})
		if err != nil {
			s.srv.log.Error("marshal events", "session", s.ID, "err", err)
			return
		}
		s.srv.hub.broadcastEvents(s, frame, evs)
	}
	snapshotFrame := func() []byte {
		lastSnap = time.Now()
		needSnap, activity = false, false
		frame, err := s.snapshotFrame()
		if err != nil {
			s.srv.log.Error("marshal snapshot", "session", s.ID, "err", err)
			return nil
		}
		return frame
	}
	take := func(e engine.Event) {
		co.add(e)
		s.observe(e)
		activity = true
		if structural[string(e.Kind)] {
			needSnap = true
		}
	}
	for {
		select {
		case <-s.ctx.Done():
			return
		case e, ok := <-subChan:
			if !ok { // the engine closed; a swap brings the next one
				subChan = nil
				continue
			}
			take(e)
		case done := <-s.syncs:
			if subChan != nil && drainHeld(sub, subChan, take) {
				subChan = nil
			}
			close(done)
		case <-tick.C:
			flush()
			s.maybeBroadcastTimeline()
			if d := sub.Dropped(); d != dropped {
				dropped, needSnap = d, true
			}
			// Nobody to send it to: a snapshot would only rebuild the
			// engine's caches (a joiner gets a fresh one anyway).
			if (needSnap || (activity && time.Since(lastSnap) >= snapEvery)) && s.Viewers() > 0 {
				if f := snapshotFrame(); f != nil {
					s.srv.hub.broadcastLatest(s, latestSnapshot, f)
				}
			}
		case <-s.resync:
			flush()
			if f := snapshotFrame(); f != nil {
				s.srv.hub.broadcastLatest(s, latestSnapshot, f)
			}
		case c := <-s.joins:
			// Flush first: everything the snapshot reflects must reach
			// existing viewers before the new one is registered.
			flush()
			frame, err := s.snapshotFrame()
			if err != nil {
				s.srv.log.Error("marshal snapshot", "session", s.ID, "err", err)
				frame = mustJSON(errorMsg{Type: "error", Code: CodeInternal, Message: "cannot build the snapshot: " + err.Error()})
			}
			s.srv.hub.register(c, s, frame)
			s.sendTimelineTo(c)
			if s.lesson != nil {
				// A lesson message goes out only when it changes: a page
				// reconnecting to this session (closed as too slow, a
				// network blip) would otherwise keep the step it saw
				// before, missing a tick or an action counted meanwhile.
				s.lesson.sendTo(c)
			}
		case n := <-s.rebuffer:
			// A smaller (idle) or the full buffer: what the old one held is
			// flushed first, and a snapshot covers any gap.
			flush()
			sub.Close()
			sub = s.engine().Subscribe(n)
			subChan, dropped, needSnap = sub.Events(), 0, true
		case r := <-s.swaps:
			flush()
			co = coalescer{}
			sub.Close()
			s.engMu.Lock()
			s.eng = r.eng
			s.engMu.Unlock()
			sub = r.eng.Subscribe(cfg.EventBuffer)
			subChan, dropped = sub.Events(), 0
			if f := snapshotFrame(); f != nil {
				s.srv.hub.broadcastLatest(s, latestSnapshot, f)
			}
			close(r.done)
		}
	}
}

func (s *Session) snapshotFrame() ([]byte, error) {
	return json.Marshal(snapshotMsg{Type: "snapshot", V: ProtocolVersion, Session: s.ID, Template: s.Template, Snapshot: trimSnapshot(s.engine().Snapshot())})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("web: marshal " + fmt.Sprintf("%T", v) + ": " + err.Error())
	}
	return b
}

// handle runs one client message on the reader goroutine of c and replies
// to c alone. Errors never end the connection or the session.
func (s *Session) handle(c *client, data []byte) {
	s.touch()
	id, cmd, def, pe := parseClientMsg(data)
	if pe == nil && c.lim != nil && !c.lim.allow(time.Now()) {
		pe = perr(CodeRefused, "too many commands: this connection may send %g per second; wait a moment and send it again", s.srv.cfg.CommandRate)
	}
	if pe == nil && def.control && c.role != RoleController {
		pe = perr(CodeForbidden, "%s: this view follows the session and cannot control it; fork it (the fork command) to try it in a sandbox of your own", cmd.Name)
	}
	if pe == nil {
		pe = s.execute(c, &cmd)
	}
	if pe != nil {
		// The log says what was refused and why: a person who clicked
		// and saw nothing happen (the toast gone) can be helped from it.
		s.srv.log.Info("command refused", "session", s.ID, "command", cmd.Name, "code", pe.Code, "message", pe.Message)
		s.srv.hub.unicast(c, mustJSON(errorMsg{Type: "error", ID: id, Code: pe.Code, Message: pe.Message}))
		return
	}
	if engineCommandNames[cmd.Name] {
		s.srv.log.Info("command", "session", s.ID, "command", cmd.Name)
	}
	s.srv.hub.unicast(c, mustJSON(c.ack(id)))
}

// execute applies cmd to the engine.
func (s *Session) execute(c *client, cmd *Command) *protoError {
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	if s.closed.Load() {
		return perr(CodeRefused, "the session has ended; open a new sandbox")
	}
	if pe, done := s.timeTravel(c, cmd); done {
		return pe
	}
	eng := s.engine()
	var err error
	switch cmd.Name {
	case CmdSnapshot:
		frame, e := s.snapshotFrame()
		if e != nil {
			return perr(CodeInternal, "cannot build the snapshot: %v", e)
		}
		s.srv.hub.unicastLatest(c, latestSnapshot, frame)
		return nil
	case CmdPause:
		err = eng.Pause()
	case CmdResume:
		err = eng.Resume()
	case CmdStep:
		err = eng.Step(cmd.Count)
	case CmdSpeed:
		// Teaching mode <-> full speed hands the job over; the factor then
		// applies to the new driver.
		if cmd.Driver != "" {
			ds, ok := eng.(DriverSwitcher)
			if !ok {
				return perr(CodeRefused, "speed: this engine cannot change driver while it runs; use reset with a driver instead")
			}
			err = ds.SetDriver(cmd.Driver)
		}
		if err == nil && cmd.Factor != 0 {
			err = eng.SetSpeed(cmd.Factor)
		}
	case CmdLessonStatus, CmdLessonDo, CmdLessonReplay:
		return s.lessonCommand(c, cmd)
	default:
		snap := eng.Snapshot()
		pe := checkAgainstJob(cmd, &snap)
		// A rescale above the operator's max parallelism goes on to the
		// engine, which refuses it with Flink's reason and logs the refusal
		// (a lesson's command-refused check reads it, a replay repeats it);
		// the reply is the protocol's, which names the range to choose.
		aboveMax := pe != nil && rescaleAboveMaxParallelism(cmd, &snap)
		if pe != nil && !aboveMax {
			return pe
		}
		if aboveMax {
			if engineCommandNames[cmd.Name] && len(snap.Commands) >= s.srv.cfg.Limits.Commands {
				return pe
			}
		} else if pe := s.srv.cfg.Limits.checkCommand(cmd, &snap); pe != nil {
			return pe
		}
		if s.lesson != nil {
			err = s.lesson.apply(s.ctx, eng, cmd, &snap)
		} else {
			err = eng.Apply(s.ctx, *cmd)
		}
		if aboveMax && err != nil {
			return pe
		}
	}
	if err != nil {
		return engineError(cmd.Name, err)
	}
	if cmd.Name == CmdPause || cmd.Name == CmdResume || cmd.Name == CmdSpeed || cmd.Name == CmdStep {
		s.requestSnapshot() // playing / speed / step show in the controls
	}
	return nil
}

// rescaleAboveMaxParallelism reports whether cmd rescales an operator of the
// job to more subtasks than its max parallelism (Flink refuses it: a subtask
// needs at least one key group).
func rescaleAboveMaxParallelism(cmd *Command, snap *engine.Snapshot) bool {
	if cmd.Name != CmdRescale {
		return false
	}
	for i := range snap.Job.Operators {
		if op := &snap.Job.Operators[i]; op.ID == cmd.Operator {
			return cmd.Parallelism > op.MaxParallelism
		}
	}
	return false
}

// reset starts the job again from its template, with a new seed or driver
// if given, and swaps the engine under every viewer.
func (s *Session) reset(cmd *Command) *protoError {
	s.newRun()
	run := s.run
	run.Spec = s.run.Spec.Clone()
	if cmd.Job != "" {
		spec, pe := s.lessonJob(cmd.Job)
		if pe != nil {
			return pe
		}
		run.Spec = spec
	}
	if cmd.Seed != 0 {
		run.Spec.Seed = cmd.Seed
	}
	if cmd.Driver != "" {
		run.Driver = cmd.Driver
	}
	// Start the new run beside the old one (each run has its own directory,
	// so Pebble instances never share one), swap, then close the old run:
	// viewers always see an engine that is open.
	runDir := filepath.Join(s.run.DataDir, fmt.Sprintf("run-%d", s.resets.Add(1)))
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return perr(CodeInternal, "reset: cannot create the run directory: %v", err)
	}
	r := run
	r.DataDir = runDir
	start := s.srv.cfg.Engines
	if run.Start != nil {
		start = run.Start
	}
	eng, err := start(s.ctx, r)
	if err != nil {
		_ = os.RemoveAll(runDir)
		return engineError(CmdReset, err)
	}
	old := s.engine()
	s.swap(eng)
	if err := old.Close(); err != nil {
		s.srv.log.Warn("close engine on reset", "session", s.ID, "err", err)
	}
	s.x.mu.Lock() // the timeline reads s.run under x.mu (replayableLocked)
	s.run.Spec, s.run.Driver = run.Spec, run.Driver
	s.x.mu.Unlock()
	s.newTimeline()
	if s.lesson != nil {
		s.lesson.engineReset(eng, cmd.Job)
	}
	s.srv.log.Info("session reset", "session", s.ID, "driver", run.Driver, "seed", run.Spec.Seed)
	return nil
}

// drainHeld takes the events sub held when called — in its channel and
// queued behind it — and no more, so a running engine cannot keep it
// going; it reports whether the channel closed. A subscription that cannot
// say what it holds gives what its channel has.
func drainHeld(sub Subscription, c <-chan engine.Event, take func(engine.Event)) (closed bool) {
	p, counts := sub.(interface{ Pending() int })
	held := len(c)
	if counts {
		held = p.Pending()
	}
	for taken := 0; taken < held; {
		var wait <-chan time.Time // nil while the channel has events
		if len(c) == 0 {
			// The rest is on its way in from the queue, unless Pending
			// counted an event twice as it moved (it may, for a moment):
			// poll.
			if !counts || p.Pending() == 0 {
				return false
			}
			wait = time.After(time.Millisecond)
		}
		select {
		case e, ok := <-c:
			if !ok {
				return true
			}
			take(e)
			taken++
		case <-wait:
		}
	}
	return false
}

// drainEvents returns once the pump has taken every event the engine had
// published when it was called: a seek calls it on the paused present
// before its review begins, since from then on the pump counts what it
// reads as the replayed view's, so a crash the learner made just before
// would otherwise never get its mark on the timeline.
func (s *Session) drainEvents() {
	done := make(chan struct{})
	select {
	case s.syncs <- done:
		select {
		case <-done:
		case <-s.done:
		}
	case <-s.done:
	}
}

func (s *Session) swap(eng Engine) {
	r := swapReq{eng: eng, done: make(chan struct{})}
	select {
	case s.swaps <- r:
		<-r.done
	case <-s.done:
		_ = eng.Close()
	}
}

// engineError maps an engine error to a protocol error.
func engineError(name string, err error) *protoError {
	msg := strings.TrimPrefix(err.Error(), "engine: ")
	switch {
	case errors.Is(err, ErrBadArgs):
		return perr(CodeBadArgs, "%s: %s", name, msg)
	case errors.Is(err, ErrRefused):
		return perr(CodeRefused, "%s: %s", name, msg)
	default:
		return perr(CodeRefused, "%s: %s", name, msg)
	}
}

// sessionTable is the set of running sessions, with a cap. A session being
// started holds a reservation, so concurrent creations cannot pass the cap.
// Forks have a cap of their own (forks.go) and do not count against the
// sessions' cap: a class forking a classroom must not lock out sandboxes.
type sessionTable struct {
	mu       sync.Mutex
	m        map[string]*Session
	reserved int
	// forks counts the forks in m; forkReserved the forks being started.
	forks        int
	forkReserved int
}

func (t *sessionTable) get(id string) *Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

// reserve takes a place for a new session if fewer than max are running or
// starting; release or put gives it back.
func (t *sessionTable) reserve(max int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m)-t.forks+t.reserved >= max {
		return false
	}
	t.reserved++
	return true
}

func (t *sessionTable) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reserved--
}

// put adds s in place of a reservation.
func (t *sessionTable) put(s *Session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.Kind == KindFork {
		t.forkReserved--
		t.forks++
	} else {
		t.reserved--
	}
	t.m[s.ID] = s
}

func (t *sessionTable) remove(id string) *Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[id]
	if s != nil && s.Kind == KindFork {
		t.forks--
	}
	delete(t.m, id)
	return s
}

func (t *sessionTable) all() []*Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*Session, 0, len(t.m))
	for _, s := range t.m {
		out = append(out, s)
	}
	return out
}

// reapIdle closes sessions nobody has watched for the idle timeout.
func (srv *Server) reapIdle(now time.Time) int {
	n := 0
	for _, s := range srv.sessions.all() {
		idle := now.Sub(time.Unix(0, s.active.Load()))
		if !s.watched() && idle >= srv.idleTimeout(s) {
			srv.sessions.remove(s.ID)
			s.close(fmt.Sprintf("idle for %s with no viewer", idle.Round(time.Second)))
			n++
		}
	}
	return n
}

// Wire limits of a snapshot: the engine's picture is complete, the wire's
// is enough to draw. The totals (committed, expected, duplicate and lost
// record counts) always stay exact.
const (
	maxWireDiffs    = 50  // per comparison list (duplicates, losses, unexpected)
	maxWireCommands = 100 // newest commands of the log
)

// trimSnapshot bounds the lists of s that grow with the input: a sink's
// comparison lists every expected record not yet committed, which is
// megabytes early in a run. s is a copy the engine no longer uses.
func trimSnapshot(s engine.Snapshot) engine.Snapshot {
	for i := range s.Sinks {
		if c := s.Sinks[i].Comparison; c != nil {
			cp := *c
			cp.Duplicates = firstN(cp.Duplicates, maxWireDiffs)
			cp.Losses = firstN(cp.Losses, maxWireDiffs)
			cp.Unexpected = firstN(cp.Unexpected, maxWireDiffs)
			s.Sinks[i].Comparison = &cp
		}
	}
	if n := len(s.Commands); n > maxWireCommands {
		s.Commands = s.Commands[n-maxWireCommands:]
	}
	return s
}

func firstN[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}
