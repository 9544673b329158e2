// Package webfan measures WebSocket fan-out through StateLab's own web
// server (package web): one session, many viewers, an engine double that
// publishes a fixed list of events. It is separate from package bench
// because web sits above bench in the package direction; cmd/statelab
// passes FanOut to bench.Config.WebFanOut.
package webfan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gorilla/websocket"

	"github.com/statelab/statelab/bench"
	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/web"
)

var _ bench.FanOutFunc = FanOut

// FanOut starts a web.Server with its default frame interval, send buffer and
// event buffer on a loopback test listener, opens one sandbox session
// (template wordcount) and joins viewers-1 more viewers to it, then has the
// engine double publish events and waits until every viewer has read them
// all. The session's pump, coalescer, hub and per-connection writers are the
// real ones.
func FanOut(ctx context.Context, viewers int, events []engine.Event) (bench.FanOutResult, error) {
	if viewers < 1 {
		return bench.FanOutResult{}, fmt.Errorf("webfan: need at least one viewer (got %d)", viewers)
	}
	dir, err := os.MkdirTemp("", "statelab-webfan-")
	if err != nil {
		return bench.FanOutResult{}, err
	}
	defer os.RemoveAll(dir)
	eng := &publisher{}
	srv, err := web.New(web.Config{DataDir: dir, MaxSessions: 4,
		Engines: func(context.Context, web.RunConfig) (web.Engine, error) { return eng, nil }})
	if err != nil {
		return bench.FanOutResult{}, fmt.Errorf("webfan: start web server: %w", err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() {
		hs.Close()
		srv.Close()
	}()
	base := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws?"
	var session atomic.Pointer[web.Session]
	dial := func() (*websocket.Conn, error) {
		s := session.Load()
		if s != nil {
			ws, _, err := websocket.DefaultDialer.DialContext(ctx, base+"session="+s.ID, nil)
			return ws, err
		}
		ws, _, err := websocket.DefaultDialer.DialContext(ctx, base+"template=wordcount", nil)
		if err != nil {
			return nil, err
		}
		id, err := readSessionID(ws)
		if err != nil {
			ws.Close()
			return nil, err
		}
		s, ok := srv.Session(id)
		if !ok {
			ws.Close()
			return nil, fmt.Errorf("webfan: session %q not found after its snapshot", id)
		}
		session.Store(s)
		return ws, nil
	}
	joined := func() int {
		if s := session.Load(); s != nil {
			return s.Viewers()
		}
		return 0
	}
	publish := func() { eng.publish(ctx, events) }
	return bench.FanOutWith(ctx, viewers, len(events), dial, joined, publish)
}

// readSessionID reads the first message, the session's snapshot, for its id.
func readSessionID(ws *websocket.Conn) (string, error) {
	_, data, err := ws.ReadMessage()
	if err != nil {
		return "", fmt.Errorf("webfan: read first snapshot: %w", err)
	}
	var m struct {
		Type    string `json:"type"`
		Session string `json:"session"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("webfan: first message is not JSON: %w", err)
	}
	if m.Type != "snapshot" || m.Session == "" {
		return "", fmt.Errorf("webfan: first message is %q (%s %s), want a snapshot", m.Type, m.Code, m.Message)
	}
	return m.Session, nil
}

// publisher is the engine double: it publishes a given list of events to
// its subscribers, waiting for each (the real engine drops events for a
// slow subscriber; here every event must arrive so the count can be
// checked).
type publisher struct {
	mu   sync.Mutex
	subs []*subscription
}

type subscription struct {
	c      chan engine.Event
	once   sync.Once
	closed chan struct{}
}

func (s *subscription) Events() <-chan engine.Event { return s.c }
func (s *subscription) Dropped() int64              { return 0 }
func (s *subscription) Close()                      { s.once.Do(func() { close(s.closed) }) }

func (p *publisher) publish(ctx context.Context, events []engine.Event) {
	p.mu.Lock()
	subs := append([]*subscription(nil), p.subs...)
	p.mu.Unlock()
	for _, e := range events {
		for _, s := range subs {
			select {
			case s.c <- e:
			case <-s.closed:
			case <-ctx.Done():
				return
			}
		}
	}
}

func (p *publisher) Snapshot() engine.Snapshot { return engine.Snapshot{} }
func (p *publisher) Inspect(string) (engine.TaskStateView, error) {
	return engine.TaskStateView{}, errors.New("webfan: no state to inspect")
}
func (p *publisher) Subscribe(buffer int) web.Subscription {
	s := &subscription{c: make(chan engine.Event, buffer), closed: make(chan struct{})}
	p.mu.Lock()
	p.subs = append(p.subs, s)
	p.mu.Unlock()
	return s
}
func (p *publisher) Apply(context.Context, web.Command) error { return nil }
func (p *publisher) Step(int) error                           { return nil }
func (p *publisher) Pause() error                             { return nil }
func (p *publisher) Resume() error                            { return nil }
func (p *publisher) SetSpeed(float64) error                   { return nil }
func (p *publisher) Close() error                             { return nil }
