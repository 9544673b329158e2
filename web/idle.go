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

// pauseUnwatched pauses s's run when nobody has watched it for the grace
// period; it reports whether it did.
func (s *Session) pauseUnwatched(now time.Time, grace time.Duration) bool {
	if s.Viewers() > 0 || s.idlePaused.Load() || s.closed.Load() {
		return false
	}
	if now.Sub(time.Unix(0, s.active.Load())) < grace {
		return false
	}
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	if s.Viewers() > 0 || s.closed.Load() {
		return false
	}
	eng := s.engine()
	if eng.Snapshot().Paused {
		return false // paused by its viewer: it stays so
	}
	if err := eng.Pause(); err != nil {
		s.srv.log.Warn("pause an unwatched session", "session", s.ID, "err", err)
		return false
	}
	s.idlePaused.Store(true)
	s.srv.log.Info("session paused: nobody watches", "session", s.ID, "after", grace)
	return true
}

// resumeWatched resumes a run pauseUnwatched paused, when a viewer joins.
func (s *Session) resumeWatched() {
	if !s.idlePaused.CompareAndSwap(true, false) {
		return
	}
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	if s.closed.Load() {
		return
	}
	if err := s.engine().Resume(); err != nil {
		s.srv.log.Warn("resume a watched session", "session", s.ID, "err", err)
		return
	}
	s.requestSnapshot()
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
