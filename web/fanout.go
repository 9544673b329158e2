//go:build !js

package web

// MeasureFanOut measures WebSocket fan-out through StateLab's own web
// server: one session, many viewers, an engine double that publishes a fixed
// list of events. It lives in package web (which already uses bench for the
// Performance page) so that nothing below web imports it; cmd/statelab passes
// it to bench.Config.WebFanOut and PerfConfig.WebFanOut.

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
)

var _ bench.FanOutFunc = MeasureFanOut

// MeasureFanOut starts a Server with its default frame interval, send buffer and
// event buffer on a loopback test listener, opens one sandbox session
// (template wordcount) and joins viewers-1 more viewers to it, then has the
// engine double publish events and waits until every viewer has read them
// all. The session's pump, coalescer, hub and per-connection writers are the
// real ones.
func MeasureFanOut(ctx context.Context, viewers int, events []engine.Event) (bench.FanOutResult, error) {
	if viewers < 1 {
		return bench.FanOutResult{}, fmt.Errorf("fan-out: need at least one viewer (got %d)", viewers)
	}
	dir, err := os.MkdirTemp("", "statelab-fanout-")
	if err != nil {
		return bench.FanOutResult{}, err
	}
	defer os.RemoveAll(dir)
	eng := &fanOutPublisher{}
	srv, err := New(Config{DataDir: dir, MaxSessions: 4,
		Engines: func(context.Context, RunConfig) (Engine, error) { return eng, nil }})
	if err != nil {
		return bench.FanOutResult{}, fmt.Errorf("fan-out: start web server: %w", err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() {
		hs.Close()
		srv.Close()
	}()
	base := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws?"
	var session atomic.Pointer[Session]
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
		id, err := fanOutSessionID(ws)
		if err != nil {
			ws.Close()
			return nil, err
		}
		s, ok := srv.Session(id)
		if !ok {
			ws.Close()
			return nil, fmt.Errorf("fan-out: session %q not found after its snapshot", id)
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

// fanOutSessionID reads the first message, the session's snapshot, for its id.
func fanOutSessionID(ws *websocket.Conn) (string, error) {
	_, data, err := ws.ReadMessage()
	if err != nil {
		return "", fmt.Errorf("fan-out: read first snapshot: %w", err)
	}
	var m struct {
		Type    string `json:"type"`
		Session string `json:"session"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("fan-out: first message is not JSON: %w", err)
	}
	if m.Type != "snapshot" || m.Session == "" {
		return "", fmt.Errorf("fan-out: first message is %q (%s %s), want a snapshot", m.Type, m.Code, m.Message)
	}
	return m.Session, nil
}

// fanOutPublisher is the engine double: it publishes a given list of events to
// its subscribers, waiting for each (the real engine drops events for a
// slow subscriber; here every event must arrive so the count can be
// checked).
type fanOutPublisher struct {
	mu   sync.Mutex
	subs []*fanOutSub
}

type fanOutSub struct {
	c      chan engine.Event
	once   sync.Once
	closed chan struct{}
}

func (s *fanOutSub) Events() <-chan engine.Event { return s.c }
func (s *fanOutSub) Dropped() int64              { return 0 }
func (s *fanOutSub) Close()                      { s.once.Do(func() { close(s.closed) }) }

func (p *fanOutPublisher) publish(ctx context.Context, events []engine.Event) {
	p.mu.Lock()
	subs := append([]*fanOutSub(nil), p.subs...)
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

func (p *fanOutPublisher) Snapshot() engine.Snapshot { return engine.Snapshot{} }
func (p *fanOutPublisher) Inspect(string) (engine.TaskStateView, error) {
	return engine.TaskStateView{}, errors.New("fan-out: no state to inspect")
}
func (p *fanOutPublisher) Subscribe(buffer int) Subscription {
	s := &fanOutSub{c: make(chan engine.Event, buffer), closed: make(chan struct{})}
	p.mu.Lock()
	p.subs = append(p.subs, s)
	p.mu.Unlock()
	return s
}
func (p *fanOutPublisher) Apply(context.Context, Command) error { return nil }
func (p *fanOutPublisher) Step(int) error                       { return nil }
func (p *fanOutPublisher) Pause() error                         { return nil }
func (p *fanOutPublisher) Resume() error                        { return nil }
func (p *fanOutPublisher) SetSpeed(float64) error               { return nil }
func (p *fanOutPublisher) Close() error                         { return nil }
