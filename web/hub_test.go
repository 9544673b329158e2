package web

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// TestSlowViewerIsClosedWith1008: a viewer that stops reading falls
// behind the event stream; the server drops it and says why with close
// status 1008 and the reason "too slow: …", as docs/protocol.md documents
// (issue 17 finding 6). The viewer stops reading until the server has
// dropped it, then reads on as fast as it can: what it finds at the end of
// its stream must be that close frame, not a cut connection (1006). The
// test fails if the hub waits for a slow viewer instead of dropping it (no
// drop), or if the drop cuts the connection or gives another code.
func TestSlowViewerIsClosedWith1008(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.SendBuffer = 4; c.FrameInterval = 5 * time.Millisecond })
	first := ts.dial("template=wordcount", nil)
	id := readUntil(t, first, "snapshot", "")["session"].(string)
	// A small receive buffer, so the kernel holds few frames for it.
	d := websocket.Dialer{ReadBufferSize: 1024, WriteBufferSize: 1024, NetDial: func(network, addr string) (net.Conn, error) {
		c, err := net.Dial(network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(16 << 10)
		}
		return c, err
	}}
	slow, resp, err := d.Dial(ts.wsURL("session="+id), nil)
	require.NoError(t, err)
	resp.Body.Close()
	defer slow.Close()
	// The session's first viewer leaves, so the slow one is the only one.
	require.NoError(t, first.Close())
	eng := ts.f.engine(0)
	eventually(t, 30*time.Second, func() bool { return ts.srv.Stats().Clients == 1 && eng.subscribers() == 1 }, "one viewer, subscribed")

	// Frames of 64 KiB fill the socket, then the viewer's send buffer.
	big := strings.Repeat("x", 64<<10)
	deadline := time.Now().Add(2 * time.Minute) // generous: a loaded machine
	for ts.srv.Stats().DroppedClients == 0 && time.Now().Before(deadline) {
		eng.publish(engine.Event{Kind: engine.EvCommand, Message: big})
		time.Sleep(2 * time.Millisecond) // the publisher's pace; the loop waits on the drop
	}
	require.EqualValues(t, 1, ts.srv.Stats().DroppedClients, "the viewer that stopped reading is dropped")

	// It reads again, without pause: whatever the server had written
	// before the drop, then the close frame.
	require.NoError(t, slow.SetReadDeadline(time.Now().Add(2*time.Minute)))
	frames := 0
	for {
		_, _, err := slow.ReadMessage()
		if err == nil {
			frames++
			continue
		}
		var ce *websocket.CloseError
		require.ErrorAs(t, err, &ce, "a close frame after %d frames, not a cut connection: %v", frames, err)
		assert.Equal(t, websocket.ClosePolicyViolation, ce.Code, "close status 1008 (policy violation)")
		assert.True(t, strings.HasPrefix(ce.Text, "too slow:"), "the reason says why: %q", ce.Text)
		t.Logf("the dropped viewer read %d frames, then close %d %q", frames, ce.Code, ce.Text)
		return
	}
}

// TestLaggingViewerKeepsTheStory: a viewer that reads, but slower than the
// event stream comes (a browser on a busy machine), is not closed, and
// every event the story is told from reaches it, in order; what it goes
// without while behind are data-plane events only, and a command it sends
// meanwhile is answered. Before, its send buffer filled with the data
// plane's frames and the server closed it as too slow: a click sent as it
// closed was lost, and the events of a crash it was closed at never came
// (lesson 18's journey and the explorer journey under load).
func TestLaggingViewerKeepsTheStory(t *testing.T) {
	ts := newTestServer(t, func(c *Config) {
		c.SendBuffer = 64 // lagging from 16 frames; a reader stalled by a busy machine has room
		c.FrameInterval = 2 * time.Millisecond
	})
	c := ts.dial("template=wordcount", nil)
	readUntil(t, c, "snapshot", "")
	eng := ts.f.engine(0)
	eventually(t, 30*time.Second, func() bool { return eng.subscribers() == 1 }, "the viewer subscribed")

	// A flood of 4 KiB data-plane events, and every 20th a failure the
	// story tells, numbered; the viewer reads one message every 10 ms.
	const told = 60
	stop := make(chan struct{})
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		big := strings.Repeat("x", 4<<10)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%20 == 0 && i/20 < told {
				eng.publish(engine.Event{Kind: engine.EvTaskFailed, Task: "count#0", Message: fmt.Sprintf("failure %d", i/20)})
			} else {
				eng.publish(engine.Event{Kind: engine.EvRecordsSent, Channel: big, Records: 1})
			}
			time.Sleep(time.Millisecond)
		}
	}()
	require.NoError(t, c.WriteJSON(map[string]any{"type": "command", "id": "p1", "name": CmdPause}))
	acked, next := false, 0
	deadline := time.Now().Add(3 * time.Minute)
	for (!acked || next < told) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
		var m msg
		require.NoError(t, c.ReadJSON(&m), "the lagging viewer keeps its connection")
		switch m["type"] {
		case "ack":
			acked = acked || m["id"] == "p1"
		case "events":
			for _, e := range m["events"].([]any) {
				ev := e.(map[string]any)
				if ev["kind"] == string(engine.EvTaskFailed) {
					require.Equal(t, fmt.Sprintf("failure %d", next), ev["message"], "the story's events arrive, each once, in order")
					next++
				}
			}
		}
	}
	close(stop)
	<-flooded
	st := ts.srv.Stats()
	assert.True(t, acked, "the command sent while behind is answered")
	assert.Equal(t, told, next, "every failure reached the viewer")
	assert.Positive(t, st.ThinnedFrames, "the viewer fell behind and went without data-plane events")
	assert.Zero(t, st.DroppedClients, "the viewer that reads is not closed as too slow")
}
