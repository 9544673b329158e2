package web

import (
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// Role says what a connection may do in its session. Classroom followers
// (a later addition) get RoleFollower; everyone else controls the session.
type Role int

// Roles.
const (
	RoleController Role = iota // may send every command
	RoleFollower               // may send only non-control commands (snapshot)
)

// client is one WebSocket connection. Its send channel belongs to the hub:
// only the hub goroutine sends on it and closes it, so dropping a slow
// client never races with a broadcast.
type client struct {
	ws      *websocket.Conn
	send    chan []byte
	session *Session
	role    Role
	// closeCode and closeText are set by the hub before it closes send; the
	// writer reads them after seeing send closed (the close orders the
	// accesses).
	closeCode int
	closeText string
	// dropped is closed by the hub when it drops the client as too slow:
	// the writer then skips the frames still queued and sends the close
	// frame (1008) next, so a slowly reading client gets it instead of a
	// connection cut mid-backlog (1006).
	dropped chan struct{}
	// lim is the client's command rate limiter, used only by its reader.
	lim *tokenBucket

	// forked and heavy are its reader's too (timetravel.go): the result of
	// a fork for its ack, and the limiter of seeks and forks.
	forked *forkResult
	heavy  *tokenBucket

	// lagging is the hub's: the client has fallen behind (see hub.lagging)
	// and gets the lean variant of events frames; kept to log the change.
	lagging bool
}

type hubOp int

const (
	opRegister hubOp = iota
	opUnregister
	opBroadcast
	opUnicast
	opCloseSession
)

type hubMsg struct {
	op    hubOp
	c     *client
	s     *Session
	frame []byte
	// events are an events frame's events (thin): a lagging viewer gets
	// the frame of only those the views narrate (leanFrame), built once
	// per broadcast and only when some viewer lags.
	events []Event
	thin   bool
	code   int
	text   string
}

// hub is the one goroutine that owns every connection: it registers and
// unregisters them, fans frames out to a session's viewers, and drops a
// viewer whose send buffer is full instead of waiting for it.
type hub struct {
	in       chan hubMsg
	done     chan struct{}
	sessions map[*Session]map[*client]struct{}
	clients  map[*client]*Session

	// Figures for tests and the status line.
	dropped   atomic.Int64 // slow clients dropped
	thinned   atomic.Int64 // events frames sent lean or left out for a lagging client
	connected atomic.Int64 // clients connected now
}

func newHub() *hub {
	return &hub{
		in:       make(chan hubMsg, 1024),
		done:     make(chan struct{}),
		sessions: map[*Session]map[*client]struct{}{},
		clients:  map[*client]*Session{},
	}
}

// run serves the hub until stop is closed, then closes every connection.
func (h *hub) run(stop <-chan struct{}) {
	defer close(h.done)
	for {
		select {
		case m := <-h.in:
			h.handle(m)
		case <-stop:
			for c := range h.clients {
				h.remove(c, websocket.CloseGoingAway, "the server is shutting down")
			}
			return
		}
	}
}

func (h *hub) handle(m hubMsg) {
	switch m.op {
	case opRegister:
		set := h.sessions[m.s]
		if set == nil {
			set = map[*client]struct{}{}
			h.sessions[m.s] = set
		}
		set[m.c] = struct{}{}
		h.clients[m.c] = m.s
		h.connected.Add(1)
		m.s.viewers.Store(int64(len(set)))
		m.s.joining.Add(-1) // after the count above: see Session.watched
		m.s.touch()
		if m.frame != nil {
			h.deliver(m.c, m.frame)
		}
	case opUnregister:
		if _, ok := h.clients[m.c]; ok {
			h.remove(m.c, websocket.CloseNormalClosure, "")
		}
	case opBroadcast:
		var lean []byte
		built := false
		for c := range h.sessions[m.s] {
			frame := m.frame
			if m.thin && h.lagging(c) {
				h.thinned.Add(1)
				if !built {
					lean, built = leanFrame(m.frame, m.events), true
				}
				if frame = lean; frame == nil {
					continue
				}
			}
			h.deliver(c, frame)
		}
	case opUnicast:
		if _, ok := h.clients[m.c]; ok {
			h.deliver(m.c, m.frame)
		}
	case opCloseSession:
		for c := range h.sessions[m.s] {
			h.remove(c, m.code, m.text)
		}
		delete(h.sessions, m.s)
	}
}

// lagging says whether c has fallen behind: a quarter of its send buffer
// waits (64 of 256 frames, about 3 s of a running session's stream). A
// lagging viewer gets only the events its views narrate — statuses,
// failures, checkpoints, restores, rescales, commands — and every snapshot
// and lesson message, not the data-plane events that animate records and
// barriers on the graph (the snapshots carry their counts), until it has
// caught up. A browser busy for a few seconds on a loaded machine so keeps
// its connection, its story and the clicks it sends; one that stops
// reading altogether still fills the buffer and is closed as too slow.
func (h *hub) lagging(c *client) bool {
	lag := len(c.send) >= cap(c.send)/4
	if lag != c.lagging {
		c.lagging = lag
		if s := h.clients[c]; s != nil && s.srv != nil {
			if lag {
				s.srv.log.Info("viewer lagging: data-plane events left out", "session", s.ID, "queued", len(c.send))
			} else {
				s.srv.log.Info("viewer caught up", "session", s.ID)
			}
		}
	}
	return lag
}

// deliver queues frame for c, or drops c if its buffer is full: one slow
// browser must never hold back the others.
func (h *hub) deliver(c *client, frame []byte) {
	select {
	case c.send <- frame:
	default:
		h.dropped.Add(1)
		if s := h.clients[c]; s != nil && s.srv != nil {
			s.srv.log.Info("viewer dropped: too slow", "session", s.ID, "queued", len(c.send))
		}
		if c.dropped != nil {
			close(c.dropped)
		}
		h.remove(c, websocket.ClosePolicyViolation, "too slow: the connection fell behind the event stream; reconnect to get a fresh snapshot")
	}
}

func (h *hub) remove(c *client, code int, text string) {
	s, ok := h.clients[c]
	if !ok {
		return
	}
	delete(h.clients, c)
	if set := h.sessions[s]; set != nil {
		delete(set, c)
		s.viewers.Store(int64(len(set)))
		if len(set) == 0 {
			delete(h.sessions, s)
		}
	}
	s.touch()
	h.connected.Add(-1)
	c.closeCode, c.closeText = code, text
	close(c.send)
}

// post hands m to the hub; it gives up when the hub has stopped, so no
// caller blocks past shutdown.
func (h *hub) post(m hubMsg) bool {
	select {
	case h.in <- m:
		return true
	case <-h.done:
		return false
	}
}

func (h *hub) register(c *client, s *Session, first []byte) bool {
	return h.post(hubMsg{op: opRegister, c: c, s: s, frame: first})
}
func (h *hub) unregister(c *client) { h.post(hubMsg{op: opUnregister, c: c}) }
func (h *hub) broadcast(s *Session, frame []byte) {
	h.post(hubMsg{op: opBroadcast, s: s, frame: frame})
}

// broadcastEvents is broadcast for an events frame and its events, of
// which a lagging viewer gets only the narrated ones (hub.lagging).
func (h *hub) broadcastEvents(s *Session, frame []byte, events []Event) {
	h.post(hubMsg{op: opBroadcast, s: s, frame: frame, events: events, thin: true})
}
func (h *hub) unicast(c *client, frame []byte) { h.post(hubMsg{op: opUnicast, c: c, frame: frame}) }
func (h *hub) closeSession(s *Session, code int, text string) {
	h.post(hubMsg{op: opCloseSession, s: s, code: code, text: text})
}

// Timing of the connection writer.
const (
	writeWait  = 10 * time.Second
	pongWait   = 60 * time.Second
	pingPeriod = pongWait * 9 / 10
)

// writer is the one goroutine that writes to c's socket. It ends when the hub
// closes c.send (then it sends a close frame saying why) or a write fails.
func (c *client) writer() {
	ping := time.NewTicker(pingPeriod)
	defer func() {
		ping.Stop()
		c.ws.Close()
	}()
	for {
		select {
		case <-c.dropped:
			// Too slow: the close frame goes next, behind only what the
			// socket already holds; the client gets writeWait to read it.
			// Discard the queued frames until the hub closes send, after
			// which closeCode and closeText may be read.
			for range c.send {
			}
			_ = c.ws.SetWriteDeadline(time.Now().Add(writeWait))
			_ = c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(c.closeCode, truncateClose(c.closeText)))
			return
		default:
		}
		select {
		case <-c.dropped:
			continue
		case frame, ok := <-c.send:
			if !ok {
				_ = c.ws.SetWriteDeadline(time.Now().Add(time.Second))
				_ = c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(c.closeCode, truncateClose(c.closeText)))
				return
			}
			_ = c.ws.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
				return
			}
		case <-ping.C:
			_ = c.ws.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.ws.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		}
	}
}

// truncateClose keeps a close reason within the 123 bytes a close frame allows.
func truncateClose(s string) string {
	if len(s) <= 123 {
		return s
	}
	s = s[:120]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "..."
}

// tokenBucket limits how many commands a connection may send: burst at
// once, then rate per second.
type tokenBucket struct {
	tokens float64
	burst  float64
	rate   float64
	last   time.Time
}

func newTokenBucket(rate, burst float64) *tokenBucket {
	return &tokenBucket{tokens: burst, burst: burst, rate: rate}
}

func (b *tokenBucket) allow(now time.Time) bool {
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
