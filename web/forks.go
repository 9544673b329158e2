package web

import (
	"sort"
	"time"
)

// Forks have their own cap. A classroom of thirty to sixty students who
// all fork the presenter's run must not exhaust the sessions' cap (which
// would lock out every sandbox and lesson) nor grow without bound: forks
// count against Config.MaxForks alone, a fork nobody watches ends after
// Config.ForkIdleTimeout, and when the cap is reached the forks nobody has
// watched for a while give their place to the new one.

// CodeForkLimit: the server runs its most forks (docs/protocol.md).
const CodeForkLimit = "fork-limit"

// Defaults of the fork limits.
const (
	defaultMaxForks = 64
	defaultForkIdle = 2 * time.Minute
	// forkGrace protects a new fork whose creator has not connected yet.
	forkGrace = 15 * time.Second
)

// idleTimeout is how long s may run with no viewer.
func (srv *Server) idleTimeout(s *Session) time.Duration {
	if s.Kind == KindFork {
		return srv.cfg.ForkIdleTimeout
	}
	return srv.cfg.IdleTimeout
}

// reserveFork takes a place for a new fork, first reclaiming forks with no
// viewer (oldest first) when the cap is reached.
func (srv *Server) reserveFork(now time.Time) *protoError {
	if srv.sessions.reserveFork(srv.cfg.MaxForks) {
		return nil
	}
	var idle []*Session
	for _, s := range srv.sessions.all() {
		if s.Kind == KindFork && !s.watched() && now.Sub(time.Unix(0, s.active.Load())) >= forkGrace {
			idle = append(idle, s)
		}
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].active.Load() < idle[j].active.Load() })
	for _, s := range idle {
		if srv.sessions.remove(s.ID) == nil {
			continue // reaped meanwhile
		}
		s.close("a new fork needed its place: nobody watched this one")
		if srv.sessions.reserveFork(srv.cfg.MaxForks) {
			return nil
		}
	}
	return perr(CodeForkLimit, "the server already runs %d forks, its limit, and every one has a viewer; go on following and fork again in a moment (a fork nobody watches ends after %s), or ask whoever runs the server to raise --max-forks",
		srv.cfg.MaxForks, srv.cfg.ForkIdleTimeout)
}

// ForkStats counts running forks (for tests and the log).
func (srv *Server) ForkStats() (running, max int) {
	srv.sessions.mu.Lock()
	defer srv.sessions.mu.Unlock()
	return srv.sessions.forks, srv.cfg.MaxForks
}

func (t *sessionTable) reserveFork(max int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.forks+t.forkReserved >= max {
		return false
	}
	t.forkReserved++
	return true
}

func (t *sessionTable) releaseFork() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forkReserved--
}
