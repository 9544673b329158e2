package web

import (
	"time"
)

// Sessions that cost little when nobody watches. A session whose last
// viewer left keeps its run for Config.IdleTimeout (a reload, a flaky
// phone connection, a student who went back to the lesson list), but a
// playing run would go on computing and growing its state and sink for
// nobody: after Config.PauseGrace without a viewer the session pauses it,
// and the next viewer to join resumes it where it stopped.

// defaultPauseGrace is Config.PauseGrace's default.
const defaultPauseGrace = 15 * time.Second

// idleEventBuffer is the event subscription of a paused, unwatched session:
// a paused run sends almost nothing, and Config.EventBuffer's 8,192 events
// hold 3.3 MB.
const idleEventBuffer = 64

// setEventBuffer has the pump subscribe again with a buffer of n events
// (the newest request wins).
func (s *Session) setEventBuffer(n int) {
	for {
		select {
		case s.rebuffer <- n:
			return
		case <-s.done:
			return
		default:
			select { // replace a request the pump has not taken yet
			case <-s.rebuffer:
			default:
			}
		}
	}
}

// pauseUnwatched pauses s's run when nobody has watched it for the grace
// period; it reports whether it did. A run paused already stays as it is
// (its viewer's own pause is kept); a run the reaper paused that played
// again with nobody watching (a lesson's "do it for me" ends by letting the
// job run) is paused again.
//
// idleMu makes the check that nobody watches and the pause one step with
// respect to resumeWatched: a viewer that starts joining before the check
// stops the pause (watched), one that starts after it finds idlePaused set
// and resumes the run.
func (s *Session) pauseUnwatched(now time.Time, grace time.Duration) bool {
	if s.watched() || s.closed.Load() {
		return false
	}
	if now.Sub(time.Unix(0, s.active.Load())) < grace {
		return false
	}
	if !playing(s.engine()) {
		return false
	}
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	if s.watched() || s.closed.Load() {
		return false
	}
	eng := s.engine()
	if !playing(eng) {
		return false
	}
	if err := eng.Pause(); err != nil {
		s.srv.log.Warn("pause an unwatched session", "session", s.ID, "err", err)
		return false
	}
	if playing(eng) {
		// A play that was just starting can undo the pause; the next
		// tick of the reaper tries again.
		return false
	}
	s.idlePaused.Store(true)
	if r, ok := eng.(cacheReleaser); ok {
		r.ReleaseCaches()
	}
	s.setEventBuffer(idleEventBuffer)
	// Time-travel images are copies of the run kept to make seeks cheap,
	// a few MB each; a run that can be replayed from step 0 lets them go
	// (the returning viewer's seeks replay, and new images follow the
	// present). A run copied from full speed keeps them: its timeline
	// starts at its first image.
	s.x.mu.Lock()
	fromZero := !s.x.noZero && !s.x.handedOver && s.run.Driver != DriverLive
	s.x.mu.Unlock()
	if fromZero {
		s.dropImages()
	}
	s.srv.log.Info("session paused: nobody watches", "session", s.ID, "after", grace)
	return true
}

// resumeWatched resumes a run pauseUnwatched paused, when a viewer joins.
func (s *Session) resumeWatched() {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	if !s.idlePaused.CompareAndSwap(true, false) {
		return
	}
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	if s.closed.Load() {
		return
	}
	s.setEventBuffer(s.srv.cfg.EventBuffer)
	if err := s.engine().Resume(); err != nil {
		s.srv.log.Warn("resume a watched session", "session", s.ID, "err", err)
		return
	}
	s.requestSnapshot()
}

// player is an Engine that can say whether its run plays more cheaply than
// a Snapshot (driverEngine.Playing).
type player interface{ Playing() bool }

// playing reports whether eng's run plays.
func playing(eng Engine) bool {
	if p, ok := eng.(player); ok {
		return p.Playing()
	}
	return !eng.Snapshot().Paused
}

// pauseUnwatchedSessions pauses every session nobody has watched for the
// grace period (the reaper calls it).
func (srv *Server) pauseUnwatchedSessions(now time.Time) int {
	n := 0
	for _, s := range srv.sessions.all() {
		if s.pauseUnwatched(now, srv.cfg.PauseGrace) {
			n++
		}
	}
	return n
}

// cacheReleaser is an Engine that can drop what it keeps only to answer
// snapshots quickly (engine.Stepper.ReleaseCaches).
type cacheReleaser interface{ ReleaseCaches() }

// ReleaseCaches releases the Stepper's snapshot caches (a Live run keeps
// its own).
func (e *driverEngine) ReleaseCaches() {
	e.swap.RLock()
	defer e.swap.RUnlock()
	if e.st != nil {
		e.st.ReleaseCaches()
	}
}
