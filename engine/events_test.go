package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recv takes the next event of sub, or fails after a generous bound.
func recv(t *testing.T, sub *Subscription) Event {
	t.Helper()
	select {
	case e, ok := <-sub.C:
		require.True(t, ok, "the subscription is open")
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30 s")
		return Event{}
	}
}

// TestSubscriptionBufferIsABoundNotAnAllocation: a subscriber that reads
// nothing while thousands of events are published gets every one of them,
// in order, up to its buffer, and the rest are counted as dropped; yet a
// large buffer is not allocated up front (the web server subscribes every
// viewed session with 8,192 events, 3.3 MB each if it were).
func TestSubscriptionBufferIsABoundNotAnAllocation(t *testing.T) {
	b := newBus()
	sub := b.subscribe(8192)
	defer sub.Close()
	assert.Less(t, cap(sub.C), 8192, "the channel holds only the first events")

	for i := range 8192 + 100 {
		b.publish(Event{Kind: EvCommand, Value: int64(i)})
	}
	for i := range 8192 {
		e := recv(t, sub)
		require.EqualValues(t, i, e.Value, "event %d in order", i)
		require.EqualValues(t, i+1, e.Seq)
	}
	assert.EqualValues(t, 100, sub.Dropped(), "the events beyond the buffer are dropped, not waited for")

	// Caught up: the next events come through, after the dropped ones.
	b.publish(Event{Kind: EvCommand, Value: -1})
	e := recv(t, sub)
	assert.EqualValues(t, -1, e.Value)
	assert.EqualValues(t, 8192+100+1, e.Seq)
	sub.mu.Lock()
	assert.Nil(t, sub.queue, "the queue's memory is let go once the subscriber caught up")
	sub.mu.Unlock()
}

// TestSubscriptionPendingCountsTheQueue: Pending counts the events in C and
// those queued behind it, so a subscriber that must take everything
// published so far (the web session before a seek) knows when it has.
func TestSubscriptionPendingCountsTheQueue(t *testing.T) {
	b := newBus()
	sub := b.subscribe(1000)
	defer sub.Close()
	assert.Zero(t, sub.Pending())
	for i := range 300 { // more than the channel holds
		b.publish(Event{Kind: EvCommand, Value: int64(i)})
	}
	assert.Equal(t, 300, sub.Pending())
	for i := range 300 {
		require.EqualValues(t, i, recv(t, sub).Value)
		// Never fewer than are left (an event on its way from the queue
		// into C may count twice for a moment).
		require.GreaterOrEqual(t, sub.Pending(), 300-i-1, "after %d taken", i+1)
	}
	deadline := time.Now().Add(30 * time.Second)
	for sub.Pending() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	assert.Zero(t, sub.Pending(), "all taken")
}

// TestSubscriptionSmallBufferDrops: a buffer smaller than the channel's
// capacity bounds what waits just the same.
func TestSubscriptionSmallBufferDrops(t *testing.T) {
	b := newBus()
	sub := b.subscribe(10)
	defer sub.Close()
	for i := range 15 {
		b.publish(Event{Kind: EvCommand, Value: int64(i)})
	}
	for i := range 10 {
		require.EqualValues(t, i, recv(t, sub).Value)
	}
	assert.EqualValues(t, 5, sub.Dropped())
}

// TestSubscriptionCloseWhileBehind: closing a subscription whose subscriber
// is behind ends it: C is closed after the events already in it, nothing
// more is delivered, and publishing goes on.
func TestSubscriptionCloseWhileBehind(t *testing.T) {
	b := newBus()
	sub := b.subscribe(1000)
	for i := range 1000 {
		b.publish(Event{Kind: EvCommand, Value: int64(i)})
	}
	sub.Close()
	b.publish(Event{Kind: EvCommand, Value: -1})
	n, last := 0, int64(-1)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-sub.C:
			if !ok {
				assert.LessOrEqual(t, n, 1000)
				assert.Equal(t, int64(n-1), last, "in order, with no gap")
				assert.False(t, b.wanted(), "nobody listens")
				return
			}
			require.NotEqualValues(t, -1, e.Value, "nothing published after Close arrives")
			last = e.Value
			n++
		case <-deadline:
			t.Fatal("C was not closed within 30 s")
		}
	}
}
