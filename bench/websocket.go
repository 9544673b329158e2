package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/statelab/statelab/engine"
)

// FanOutResult is one fan-out round: how many events all viewers together
// received and how long it took from the first event published to the last
// event read by the last viewer.
type FanOutResult struct {
	Delivered int64
	Elapsed   time.Duration
}

// FanOutFunc publishes events to one session watched by viewers WebSocket
// clients on loopback and waits until every viewer has read all of them.
type FanOutFunc func(ctx context.Context, viewers int, events []engine.Event) (FanOutResult, error)

// FanOutEvents makes n engine events of a kind no hub merges (task status
// changes), so every one of them must reach every viewer, each about the
// size of a real one.
func FanOutEvents(n int) []engine.Event {
	evs := make([]engine.Event, n)
	for i := range evs {
		task := fmt.Sprintf("count#%d", i%4)
		evs[i] = engine.Event{Seq: int64(i + 1), At: time.Duration(i) * time.Millisecond, Kind: engine.EvTaskStatus,
			Task: task, Status: "RUNNING", Previous: "INITIALIZING", TaskManager: fmt.Sprintf("tm-%d", i%2),
			Message: task + " switched from INITIALIZING to RUNNING"}
	}
	return evs
}

// FrameInterval is the least time between two event frames in the bare hub,
// the web package's default (at most 20 frames per second).
const FrameInterval = 50 * time.Millisecond

// BareHubFanOut is the baseline of the WebSocket case: the gorilla chat
// example's shape and nothing more. One hub goroutine gathers events for
// FrameInterval, marshals them once as {"type":"events","events":[…]} and
// hands the frame to every connection's buffered send channel; one writer
// goroutine per connection writes it. No sessions, commands, snapshots or
// coalescing.
func BareHubFanOut(ctx context.Context, viewers int, events []engine.Event) (FanOutResult, error) {
	if viewers < 1 {
		return FanOutResult{}, fmt.Errorf("bench: fan-out needs at least one viewer (got %d)", viewers)
	}
	h := &bareHub{register: make(chan *bareConn), in: make(chan engine.Event, 8192)}
	up := websocket.Upgrader{}
	var writers sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		c := &bareConn{ws: ws, send: make(chan []byte, 64)}
		writers.Add(1)
		go func() {
			defer writers.Done()
			defer ws.Close()
			for f := range c.send {
				if err := ws.WriteMessage(websocket.TextMessage, f); err != nil {
					return
				}
			}
			_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
		}()
		h.register <- c
	}))
	defer srv.Close()
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); h.run() }()

	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	res, err := FanOutWith(ctx, viewers, len(events),
		func() (*websocket.Conn, error) {
			ws, _, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
			return ws, err
		},
		func() int { return int(h.conns.Load()) },
		func() {
			for _, e := range events {
				h.in <- e
			}
		})
	close(h.in)
	<-hubDone
	writers.Wait()
	return res, err
}

type bareConn struct {
	ws   *websocket.Conn
	send chan []byte
}

type bareHub struct {
	register chan *bareConn
	in       chan engine.Event
	conns    atomic.Int64
	dropped  atomic.Int64
}

func (h *bareHub) run() {
	var conns []*bareConn
	var pending []engine.Event
	tick := time.NewTicker(FrameInterval)
	defer tick.Stop()
	flush := func() {
		if len(pending) == 0 {
			return
		}
		frame, _ := json.Marshal(struct {
			Type   string         `json:"type"`
			Events []engine.Event `json:"events"`
		}{"events", pending})
		pending = pending[:0]
		kept := conns[:0]
		for _, c := range conns {
			select {
			case c.send <- frame:
				kept = append(kept, c)
			default: // a slow viewer is dropped, never waited for
				h.dropped.Add(1)
				close(c.send)
			}
		}
		conns = kept
	}
	for {
		select {
		case c := <-h.register:
			conns = append(conns, c)
			h.conns.Add(1)
		case e, ok := <-h.in:
			if !ok {
				flush()
				for _, c := range conns {
					close(c.send)
				}
				return
			}
			pending = append(pending, e)
		case <-tick.C:
			flush()
		}
	}
}

// FanOutWith connects viewers clients with dial, waits until joined() says
// the server has them all, starts publish, and has every viewer read frames
// until it has counted want events in "events" frames. The bare hub and
// StateLab's web server (web.MeasureFanOut) both use it, so both are read
// the same way.
func FanOutWith(ctx context.Context, viewers, want int, dial func() (*websocket.Conn, error), joined func() int, publish func()) (FanOutResult, error) {
	conns := make([]*websocket.Conn, 0, viewers)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range viewers {
		c, err := dial()
		if err != nil {
			return FanOutResult{}, fmt.Errorf("bench: dial viewer: %w", err)
		}
		conns = append(conns, c)
	}
	deadline := time.Now().Add(10 * time.Second)
	for joined() < viewers {
		if time.Now().After(deadline) {
			return FanOutResult{}, fmt.Errorf("bench: only %d of %d viewers joined", joined(), viewers)
		}
		time.Sleep(time.Millisecond)
	}
	var delivered atomic.Int64
	errs := make(chan error, viewers)
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- ReadEvents(ctx, c, want, &delivered)
		}()
	}
	published := make(chan struct{})
	go func() { defer close(published); publish() }()
	wg.Wait()
	elapsed := time.Since(start)
	// Wait for the publisher too: the viewers saw its last event through a
	// socket, which orders nothing for the race detector or for the caller
	// that closes what publish sends on.
	<-published
	close(errs)
	for err := range errs {
		if err != nil {
			return FanOutResult{}, err
		}
	}
	return FanOutResult{Delivered: delivered.Load(), Elapsed: elapsed}, nil
}

// ReadEvents reads frames from c until it has counted want events in
// "events" frames (other frames, such as snapshots, are skipped), adding
// each frame's count to delivered. It fails after a minute without all.
func ReadEvents(ctx context.Context, c *websocket.Conn, want int, delivered *atomic.Int64) error {
	var frame struct {
		Type   string            `json:"type"`
		Events []json.RawMessage `json:"events"`
	}
	got := 0
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	for got < want {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		_, data, err := c.ReadMessage()
		if err != nil {
			return fmt.Errorf("bench: viewer read %d of %d events: %w", got, want, err)
		}
		frame.Type, frame.Events = "", frame.Events[:0]
		if err := json.Unmarshal(data, &frame); err != nil {
			return fmt.Errorf("bench: viewer got a frame that is not JSON: %w", err)
		}
		if frame.Type == "events" {
			got += len(frame.Events)
			delivered.Add(int64(len(frame.Events)))
		}
	}
	if got != want {
		return errors.New("bench: viewer received more events than were published")
	}
	return nil
}
