//go:build !js

package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/statelab/statelab/bench"
)

// MeasureSessions are the sessions group's measurements of statelab bench
// (bench.SessionsFuncs), run on a real Server in this process.
var MeasureSessions = &bench.SessionsFuncs{Replay: measureReplay, IdleHeap: measureIdleHeap, ClassroomRSS: measureClassroomRSS}

// measureReplay replays a wordcount share link of steps steps, as POST
// /replay does (replayStepperCtx, in chunks, with its context), and returns
// the process's CPU time it took.
func measureReplay(ctx context.Context, settings map[string]string, steps int64) (int64, time.Duration, error) {
	t := Templates[0]
	q := url.Values{}
	for k, v := range settings {
		q.Set(k, v)
	}
	set, err := parseSettings(t, q, DefaultLimits)
	if err != nil {
		return 0, 0, err
	}
	spec, err := t.Build(set)
	if err != nil {
		return 0, 0, err
	}
	dir, err := os.MkdirTemp("", "statelab-replay-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	// CPU time, not wall time: on a shared machine the wall time of a
	// replay says more about the neighbours than about the replay.
	start := cpuTime()
	st, err := replayStepperCtx(ctx, spec, dir, nil, steps, nil)
	elapsed := cpuTime() - start
	if err != nil {
		return 0, 0, err
	}
	taken, _ := st.Position()
	return taken, elapsed, st.Close()
}

// benchServer starts a Server with the real engine behind httptest.
func benchServer(mod func(*Config)) (*Server, *httptest.Server, func(), error) {
	dir, err := os.MkdirTemp("", "statelab-sessions-")
	if err != nil {
		return nil, nil, nil, err
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := Config{DataDir: dir, Engines: NewEngine(logger), Logger: logger}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	hs := httptest.NewServer(srv.Handler())
	return srv, hs, func() {
		hs.CloseClientConnections()
		hs.Close()
		_ = srv.Close()
		_ = os.RemoveAll(dir)
	}, nil
}

// benchConn is a WebSocket client of a bench server.
type benchConn struct{ ws *websocket.Conn }

func dialBench(ctx context.Context, hs *httptest.Server, query string) (*benchConn, string, error) {
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/ws?"+query, nil)
	if err != nil {
		return nil, "", err
	}
	c := &benchConn{ws: ws}
	for {
		m, err := c.read()
		if err != nil {
			ws.Close()
			return nil, "", err
		}
		if m["type"] == "snapshot" {
			id, _ := m["session"].(string)
			return c, id, nil
		}
		if m["type"] == "error" {
			ws.Close()
			return nil, "", fmt.Errorf("open %s: %v", query, m["message"])
		}
	}
}

func (c *benchConn) read() (map[string]any, error) {
	_ = c.ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	var m map[string]any
	err := c.ws.ReadJSON(&m)
	return m, err
}

// command sends a command and waits for its ack (skipping frames).
func (c *benchConn) command(id, name, args string) (map[string]any, error) {
	if args == "" {
		args = "{}"
	}
	if err := c.ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"command","id":"`+id+`","name":"`+name+`","args":`+args+`}`)); err != nil {
		return nil, err
	}
	for {
		m, err := c.read()
		if err != nil {
			return nil, err
		}
		if m["id"] == id {
			if m["type"] == "error" {
				return nil, fmt.Errorf("%s: %v", name, m["message"])
			}
			return m, nil
		}
	}
}

// liveHeap is the heap in use after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// measureIdleHeap opens n default sandboxes, plays each for a few hundred
// steps, closes their viewers and waits until every run has paused; it
// returns the live heap they add, per session.
func measureIdleHeap(ctx context.Context, n int) (float64, error) {
	srv, hs, stop, err := benchServer(func(c *Config) { c.PauseGrace = 200 * time.Millisecond })
	if err != nil {
		return 0, err
	}
	defer stop()
	before := liveHeap()
	for i := range n {
		c, _, err := dialBench(ctx, hs, "template=wordcount&seed="+strconv.Itoa(i+1))
		if err != nil {
			return 0, err
		}
		if _, err := c.command("s", "step", `{"count":500}`); err != nil {
			return 0, err
		}
		if _, err := c.command("r", "resume", ""); err != nil {
			return 0, err
		}
		c.ws.Close()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		paused := 0
		for _, s := range srv.sessions.all() {
			if s.idlePaused.Load() {
				paused++
			}
		}
		if paused == n {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("only %d of %d unwatched sandboxes paused within a minute", paused, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := len(srv.sessions.all()); got != n {
		return 0, fmt.Errorf("%d sessions run, want %d", got, n)
	}
	time.Sleep(time.Second) // the pumps take their smaller subscriptions
	after := liveHeap()
	return float64(int64(after)-int64(before)) / float64(n), nil
}

// measureClassroomRSS opens a classroom, plays its run to step 3,000, then
// lets forks students fork it and watch their copies at the teaching pace;
// it returns the process's resident set and live heap with every fork
// running.
func measureClassroomRSS(ctx context.Context, forks int) (float64, float64, error) {
	srv, hs, stop, err := benchServer(func(c *Config) { c.MaxForks = forks; c.MaxFollowers = forks + 1 })
	if err != nil {
		return 0, 0, err
	}
	defer stop()
	info, err := srv.CreateClassroom(ClassroomRequest{Template: "wordcount"}, hs.URL)
	if err != nil {
		return 0, 0, err
	}
	presenter, _, err := dialBench(ctx, hs, "classroom="+info.Code+"&token="+url.QueryEscape(info.PresenterToken))
	if err != nil {
		return 0, 0, err
	}
	defer presenter.ws.Close()
	if _, err := presenter.command("s", "step", `{"count":3000}`); err != nil {
		return 0, 0, err
	}
	if _, err := presenter.command("r", "resume", ""); err != nil {
		return 0, 0, err
	}
	var conns []*benchConn
	defer func() {
		for _, c := range conns {
			c.ws.Close()
		}
	}()
	for i := range forks {
		f, _, err := dialBench(ctx, hs, "classroom="+info.Code)
		if err != nil {
			return 0, 0, fmt.Errorf("follower %d: %w", i, err)
		}
		ack, err := f.command("f", "fork", "")
		f.ws.Close()
		if err != nil {
			return 0, 0, fmt.Errorf("follower %d: %w", i, err)
		}
		id, _ := ack["session"].(string)
		c, _, err := dialBench(ctx, hs, "session="+id)
		if err != nil {
			return 0, 0, fmt.Errorf("fork %d: %w", i, err)
		}
		conns = append(conns, c)
		// Each student's view reads its frames, as a browser does.
		go func() {
			for {
				if _, _, err := c.ws.ReadMessage(); err != nil {
					return
				}
			}
		}()
	}
	if got := srv.sessions.all(); len(got) != forks+1 {
		return 0, 0, fmt.Errorf("%d sessions run, want %d forks and the classroom", len(got), forks)
	}
	select { // every fork plays for a while
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	heap := liveHeap()
	debug.FreeOSMemory()
	rss, err := residentBytes()
	return rss, float64(heap), err
}

// residentBytes is this process's resident set (Linux: VmRSS).
func residentBytes() (float64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, errors.New("the resident set is read from /proc/self/status, which this system lacks")
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/self/status")
}

// cpuTime is the CPU time this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
