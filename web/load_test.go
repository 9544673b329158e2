package web

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// TestLoadHundredViewers: one session watched by 100 WebSocket clients on
// loopback. The engine double publishes a stamped event every 20 ms for
// four seconds (with a burst of record events between stamps, as a running
// job would); every client notes when each stamp arrives. The latency from
// publication to arrival is what a viewer waits for a change to show: the
// pump's frame interval (50 ms) plus the hub's fan-out and the sockets.
// Target: p95 within 200 ms; the assertion is generous (1 s) because this
// machine is shared.
func TestLoadHundredViewers(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	const (
		viewers = 100
		stamps  = 200
		every   = 20 * time.Millisecond
	)
	ts := newTestServer(t, nil)
	first := ts.dial("template=wordcount", nil)
	id := readUntil(t, first, "snapshot", "")["session"].(string)
	eng := ts.f.engine(0)
	eventually(t, time.Second, func() bool { return eng.subscribers() == 1 }, "subscription")

	type sample struct{ lat []time.Duration }
	results := make([]sample, viewers)
	conns := make([]*websocket.Conn, viewers)
	for i := range conns {
		if i == 0 {
			conns[i] = first
			continue
		}
		conns[i] = ts.dial("session="+id, nil)
		readUntil(t, conns[i], "snapshot", "")
	}
	eventually(t, 5*time.Second, func() bool { return ts.srv.Stats().Clients == viewers }, "100 viewers")

	var (
		mu        sync.Mutex
		published = make([]time.Time, stamps)
		wg        sync.WaitGroup
	)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := 0
			for seen < stamps {
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, data, err := c.ReadMessage()
				if err != nil {
					return
				}
				now := time.Now()
				var m struct {
					Type   string         `json:"type"`
					Events []engine.Event `json:"events"`
				}
				if json.Unmarshal(data, &m) != nil || m.Type != "events" {
					continue
				}
				for _, e := range m.Events {
					if e.Kind != engine.EvCommand {
						continue
					}
					n, err := strconv.Atoi(e.Message)
					if err != nil {
						continue
					}
					mu.Lock()
					at := published[n]
					mu.Unlock()
					results[i].lat = append(results[i].lat, now.Sub(at))
					seen++
				}
			}
		}()
	}
	for n := 0; n < stamps; n++ {
		for range 10 {
			eng.publish(engine.Event{Kind: engine.EvRecordsSent, Channel: "source#0->count#1", Records: 16})
		}
		mu.Lock()
		published[n] = time.Now()
		mu.Unlock()
		eng.publish(engine.Event{Kind: engine.EvCommand, Message: strconv.Itoa(n)})
		time.Sleep(every)
	}
	wg.Wait()

	var all []time.Duration
	complete := 0
	for _, r := range results {
		all = append(all, r.lat...)
		if len(r.lat) == stamps {
			complete++
		}
	}
	require.NotEmpty(t, all)
	slices.Sort(all)
	p := func(q float64) time.Duration { return all[int(q*float64(len(all)-1))] }
	t.Logf("%d viewers, %d events each: latency p50 %s, p95 %s, p99 %s, max %s; %d viewers got every event; %d dropped",
		viewers, stamps, p(0.50).Round(time.Millisecond), p(0.95).Round(time.Millisecond), p(0.99).Round(time.Millisecond),
		all[len(all)-1].Round(time.Millisecond), complete, ts.srv.Stats().DroppedClients)
	assert.Equal(t, viewers, complete, "every viewer receives every event")
	assert.Less(t, p(0.95), time.Second, "p95 latency (target 200 ms; generous bound for a shared machine)")
}
