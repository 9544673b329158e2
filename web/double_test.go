package web

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/rescale"
)

// testEngine is a test double of Engine: a fixed job picture, commands
// recorded, events published by the test.
type testEngine struct {
	mu       sync.Mutex
	snap     engine.Snapshot
	applied  []Command
	subs     []*testSub
	closed   bool
	seed     int64
	applyErr error
	steps    int
	paused   bool
	speed    float64
}

type testSub struct {
	c       chan engine.Event
	dropped atomic.Int64
	once    sync.Once
	eng     *testEngine
}

func (s *testSub) Events() <-chan engine.Event { return s.c }
func (s *testSub) Dropped() int64              { return s.dropped.Load() }
func (s *testSub) Close() {
	s.once.Do(func() {
		s.eng.mu.Lock()
		defer s.eng.mu.Unlock()
		for i, x := range s.eng.subs {
			if x == s {
				s.eng.subs = append(s.eng.subs[:i], s.eng.subs[i+1:]...)
				break
			}
		}
		close(s.c)
	})
}

// newTestEngine returns a word-count-shaped job: source (2) -> count (2,
// max parallelism 128) -> sink (1) on tm-1 and tm-2.
func newTestEngine(seed int64) *testEngine {
	kg0 := rescale.KeyGroupRange{Start: 0, End: 63}
	kg1 := rescale.KeyGroupRange{Start: 64, End: 127}
	return &testEngine{seed: seed, speed: 1, snap: engine.Snapshot{
		Driver: "step", Seed: seed,
		Job: engine.JobView{Name: "word count", Status: "RUNNING", Operators: []engine.OperatorView{
			{ID: "source", Kind: engine.KindSource, Parallelism: 2, MaxParallelism: 128, Subtasks: []engine.SubtaskView{
				{Index: 0, Name: "source#0", Status: "RUNNING", TaskManager: "tm-1"},
				{Index: 1, Name: "source#1", Status: "RUNNING", TaskManager: "tm-2"}}},
			{ID: "count", Kind: engine.KindCount, Parallelism: 2, MaxParallelism: 128, Keyed: true, Subtasks: []engine.SubtaskView{
				{Index: 0, Name: "count#0", Status: "RUNNING", TaskManager: "tm-1", KeyGroups: &kg0},
				{Index: 1, Name: "count#1", Status: "RUNNING", TaskManager: "tm-2", KeyGroups: &kg1}}},
			{ID: "sink", Kind: engine.KindSink, Parallelism: 1, MaxParallelism: 128, Subtasks: []engine.SubtaskView{
				{Index: 0, Name: "sink#0", Status: "RUNNING", TaskManager: "tm-1"}}},
		}, Edges: []engine.EdgeView{{From: "source", To: "count", Partitioner: engine.Hash}, {From: "count", To: "sink", Partitioner: engine.Rebalance}}},
		TaskManagers: []engine.TaskManagerView{{ID: "tm-1", Status: "ALIVE", Slots: 2}, {ID: "tm-2", Status: "ALIVE", Slots: 2}},
		Sources:      []engine.SourceView{{Operator: "source", Partitions: []engine.PartitionView{{Partition: 0}, {Partition: 1, Owner: 1}, {Partition: 2}, {Partition: 3, Owner: 1}}}},
	}}
}

func (e *testEngine) Snapshot() engine.Snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.snap
	s.Paused, s.Speed = e.paused, e.speed
	return s
}

func (e *testEngine) Inspect(task string) (engine.TaskStateView, error) {
	if task != "count#0" {
		return engine.TaskStateView{}, fmt.Errorf("%w: no subtask %s", engine.ErrUnknown, task)
	}
	return engine.TaskStateView{Task: task}, nil
}

func (e *testEngine) Subscribe(buffer int) Subscription {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := &testSub{c: make(chan engine.Event, buffer), eng: e}
	e.subs = append(e.subs, s)
	return s
}

// publish sends ev to every subscriber without blocking, as the engine does.
func (e *testEngine) publish(ev engine.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.subs {
		select {
		case s.c <- ev:
		default:
			s.dropped.Add(1)
		}
	}
}

func (e *testEngine) subscribers() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.subs)
}

func (e *testEngine) Apply(_ context.Context, c Command) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.applied = append(e.applied, c)
	return e.applyErr
}

func (e *testEngine) commands() []Command {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Command(nil), e.applied...)
}

func (e *testEngine) Step(n int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.steps += n
	e.paused = true
	return nil
}
func (e *testEngine) Pause() error  { e.mu.Lock(); e.paused = true; e.mu.Unlock(); return nil }
func (e *testEngine) Resume() error { e.mu.Lock(); e.paused = false; e.mu.Unlock(); return nil }
func (e *testEngine) SetSpeed(f float64) error {
	e.mu.Lock()
	e.speed = f
	e.mu.Unlock()
	return nil
}

func (e *testEngine) SetDriver(d string) error {
	e.mu.Lock()
	e.snap.Driver = d
	e.mu.Unlock()
	return nil
}

func (e *testEngine) Close() error {
	e.mu.Lock()
	e.closed = true
	subs := append([]*testSub(nil), e.subs...)
	e.mu.Unlock()
	for _, s := range subs {
		s.Close()
	}
	return nil
}

func (e *testEngine) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// testFactory starts testEngines and remembers them in order.
type testFactory struct {
	mu      sync.Mutex
	engines []*testEngine
	runs    []RunConfig
}

func (f *testFactory) start(_ context.Context, run RunConfig) (Engine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := newTestEngine(run.Spec.Seed)
	f.engines = append(f.engines, e)
	f.runs = append(f.runs, run)
	return e, nil
}

func (f *testFactory) engine(i int) *testEngine {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.engines) {
		return nil
	}
	return f.engines[i]
}

func (f *testFactory) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.engines)
}

// testServer runs a Server with test engines behind an httptest.Server.
type testServer struct {
	t   *testing.T
	srv *Server
	hs  *httptest.Server
	f   *testFactory
}

func newTestServer(t *testing.T, mod func(*Config)) *testServer {
	t.Helper()
	f := &testFactory{}
	cfg := Config{DataDir: t.TempDir(), Engines: f.start, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := New(cfg)
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	ts := &testServer{t: t, srv: srv, hs: hs, f: f}
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		require.NoError(t, srv.Close())
	})
	return ts
}

func (ts *testServer) wsURL(query string) string {
	return "ws" + strings.TrimPrefix(ts.hs.URL, "http") + "/ws?" + query
}

// dial opens a WebSocket; header may carry an Origin.
func (ts *testServer) dial(query string, header http.Header) *websocket.Conn {
	ts.t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial(ts.wsURL(query), header)
	require.NoError(ts.t, err)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	ts.t.Cleanup(func() { c.Close() })
	return c
}

// msg is a decoded server message, loosely typed for assertions.
type msg map[string]any

func readMsg(t *testing.T, c *websocket.Conn) msg {
	t.Helper()
	// Generous: under -race on a loaded 2-core machine the engine can be slow.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	var m msg
	require.NoError(t, c.ReadJSON(&m))
	return m
}

// readUntil reads messages until one has the given type (and id, if set).
func readUntil(t *testing.T, c *websocket.Conn, typ, id string) msg {
	t.Helper()
	for range 1000 {
		m := readMsg(t, c)
		if m["type"] == typ && (id == "" || m["id"] == id) {
			return m
		}
	}
	t.Fatalf("no %s message with id %q in 1000 messages", typ, id)
	return nil
}

// reply reads messages until the ack or error for id.
func reply(t *testing.T, c *websocket.Conn, id string) msg {
	t.Helper()
	for range 1000 {
		m := readMsg(t, c)
		if (m["type"] == "ack" || m["type"] == "error") && m["id"] == id {
			return m
		}
	}
	t.Fatalf("no reply to %s in 1000 messages", id)
	return nil
}

func send(t *testing.T, c *websocket.Conn, s string) {
	t.Helper()
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(s)))
}

// eventually polls cond every 5ms for up to d.
//
// d is raised to at least a minute: the bound decides only how long a
// failing test takes, never whether a passing one passes on a busy machine.
func eventually(t *testing.T, d time.Duration, cond func() bool, what string) {
	t.Helper()
	d = max(d, time.Minute)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", d, what)
}

type httpCookie struct{ name, value string }

func (c httpCookie) cookie() *http.Cookie { return &http.Cookie{Name: c.name, Value: c.value} }
