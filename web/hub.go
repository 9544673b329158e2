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

	// lagging and backlog are the hub's: the client has fallen behind
	// (lagAt) and what it is sent waits in its backlog (backlog.go);
	// lagging is kept to log the change.
	lagging bool
	backlog *backlog
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
	// events are an events frame's events (thin): a lagging viewer's
	// backlog keeps only those the views narrate (narratedEvents, found
	// once per broadcast and only when some viewer lags).
	events []Event
	thin   bool
	// latest marks a frame a newer one with the same key supersedes in a
	// lagging viewer's backlog (a snapshot, the timeline).
	latest string
	code   int
	text   string
}

// hub is the one goroutine that owns every connection: it registers and
// unregisters them, fans frames out to a session's viewers, holds back what
// a lagging viewer cannot take yet (backlog.go), and drops a viewer that has
// stopped reading instead of waiting for it.
type hub struct {
	in       chan hubMsg
	done     chan struct{}
	sessions map[*Session]map[*client]struct{}
	clients  map[*client]*Session
	behind   map[*client]struct{} // the clients with a backlog

	// Figures for tests and the status line.
	dropped   atomic.Int64 // slow clients dropped
	thinned   atomic.Int64 // events frames a lagging client got thinned (data-plane events left out)
	connected atomic.Int64 // clients connected now
}

func newHub() *hub {
	return &hub{
		in:       make(chan hubMsg, 1024),
		done:     make(chan struct{}),
		sessions: map[*Session]map[*client]struct{}{},
		clients:  map[*client]*Session{},
		behind:   map[*client]struct{}{},
	}
}

// drainEvery is how often the hub moves backlogs into send queues the
// writers have emptied.
const drainEvery = 10 * time.Millisecond

// run serves the hub until stop is closed, then closes every connection.
func (h *hub) run(stop <-chan struct{}) {
	defer close(h.done)
	// The drain ticker runs only while some client is behind: an idle
	// server is not woken 100 times a second.
	drain := time.NewTicker(drainEvery)
	drain.Stop()
	defer drain.Stop()
	ticking := false
	for {
		var drainC <-chan time.Time
		switch {
		case len(h.behind) > 0 && !ticking:
			drain.Reset(drainEvery)
			ticking = true
		case len(h.behind) == 0 && ticking:
			drain.Stop()
			ticking = false
		}
		if ticking {
			drainC = drain.C
		}
		select {
		case m := <-h.in:
			h.handle(m)
		case <-drainC:
			for c := range h.behind {
				h.drain(c)
			}
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
		var told []Event
		found := false
		for c := range h.sessions[m.s] {
			if !m.thin {
				h.offer(c, held{frame: m.frame, latest: m.latest})
				continue
			}
			if h.keepsUp(c) {
				h.deliver(c, m.frame)
				continue
			}
			h.thinned.Add(1)
			if !found {
				told, found = narratedEvents(m.events), true
			}
			if len(told) > 0 {
				h.hold(c, held{events: told})
			} else {
				h.setLagging(c, true)
			}
		}
	case opUnicast:
		if _, ok := h.clients[m.c]; ok {
			h.offer(m.c, held{frame: m.frame, latest: m.latest})
		}
	case opCloseSession:
		for c := range h.sessions[m.s] {
			h.remove(c, m.code, m.text)
		}
		delete(h.sessions, m.s)
	}
}

// offer sends c the frame of it, or holds it in c's backlog while c is
// behind: a viewer whose page is busy for a while (a loaded machine) keeps
// its connection, its story and the clicks it sends (backlog.go).
func (h *hub) offer(c *client, it held) {
	if h.keepsUp(c) {
		h.deliver(c, it.frame)
		return
	}
	h.hold(c, it)
}

// keepsUp says whether c takes frames as they come: nothing held back and
// its queue below lagAt. A viewer that went without a frame of data-plane
// events only (nothing held) has caught up here.
func (h *hub) keepsUp(c *client) bool {
	if c.backlog != nil || len(c.send) >= lagAt(c) {
		return false
	}
	h.setLagging(c, false)
	return true
}

// hold adds it to c's backlog, and drops c when the backlog has passed its
// bounds: c has stopped reading.
func (h *hub) hold(c *client, it held) {
	h.setLagging(c, true)
	b := c.backlog
	if b == nil {
		b = &backlog{}
		c.backlog = b
		h.behind[c] = struct{}{}
	}
	b.add(it)
	if b.over(cap(c.send)) {
		h.drop(c)
	}
}

// drain moves c's backlog into its send queue while the queue is below
// lagAt; an emptied backlog means c has caught up.
func (h *hub) drain(c *client) {
	b := c.backlog
	for b != nil && len(b.items) > 0 && len(c.send) < lagAt(c) {
		if frame := b.take(); frame != nil {
			c.send <- frame // room: only the hub sends, and len < cap
		}
	}
	if b == nil || len(b.items) == 0 {
		c.backlog = nil
		delete(h.behind, c)
		h.setLagging(c, false)
	}
}

// setLagging records whether c is behind, and logs the change.
func (h *hub) setLagging(c *client, lag bool) {
	if lag == c.lagging {
		return
	}
	c.lagging = lag
	if s := h.clients[c]; s != nil && s.srv != nil {
		if lag {
			s.srv.log.Info("viewer lagging: frames held back, data-plane events left out", "session", s.ID, "queued", len(c.send))
		} else {
			s.srv.log.Info("viewer caught up", "session", s.ID)
		}
	}
}

// deliver queues frame for c, or drops c if its buffer is full: one slow
// browser must never hold back the others.
func (h *hub) deliver(c *client, frame []byte) {
	select {
	case c.send <- frame:
	default:
		h.drop(c)
	}
}

// drop closes c as too slow: its writer skips what is queued and sends the
// close frame (1008) next.
func (h *hub) drop(c *client) {
	h.dropped.Add(1)
	if s := h.clients[c]; s != nil && s.srv != nil {
		held := 0
		if c.backlog != nil {
			held = len(c.backlog.items)
		}
		s.srv.log.Info("viewer dropped: too slow", "session", s.ID, "queued", len(c.send), "held", held)
	}
	if c.dropped != nil {
		close(c.dropped)
	}
	h.remove(c, websocket.ClosePolicyViolation, "too slow: the connection fell behind the event stream; reconnect to get a fresh snapshot")
}

func (h *hub) remove(c *client, code int, text string) {
	s, ok := h.clients[c]
	if !ok {
		return
	}
	delete(h.clients, c)
	delete(h.behind, c)
	c.backlog = nil
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

// broadcastLatest is broadcast for a frame a newer one with the same key
// supersedes (latestSnapshot, latestTimeline): a lagging viewer gets only
// the newest.
func (h *hub) broadcastLatest(s *Session, key string, frame []byte) {
	h.post(hubMsg{op: opBroadcast, s: s, frame: frame, latest: key})
}

// broadcastEvents is broadcast for an events frame and its events, of
// which a lagging viewer's backlog keeps only the narrated ones.
func (h *hub) broadcastEvents(s *Session, frame []byte, events []Event) {
	h.post(hubMsg{op: opBroadcast, s: s, frame: frame, events: events, thin: true})
}
func (h *hub) unicast(c *client, frame []byte) { h.post(hubMsg{op: opUnicast, c: c, frame: frame}) }
func (h *hub) unicastLatest(c *client, key string, frame []byte) {
	h.post(hubMsg{op: opUnicast, c: c, frame: frame, latest: key})
}
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
