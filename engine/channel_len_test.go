package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChannelLengthFollowsItsQueue checks the channel's lock-free length
// (channel.n, read by len and full on every turn of a Live subtask) against
// the queue itself after every way the queue changes: push, pop (including
// the compaction of a long queue), an unaligned barrier overtaking records
// (pushPriority) and drain. A change of the queue that forgot the length
// would leave a sender waiting for room that exists, or sending into a
// full channel.
func TestChannelLengthFollowsItsQueue(t *testing.T) {
	c := &channel{cap: 4}
	queued := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.q) - c.qh
	}
	check := func(step string) {
		t.Helper()
		assert.Equal(t, queued(), c.len(), "after %s", step)
		assert.Equal(t, queued() >= c.cap, c.full(), "full after %s", step)
	}
	records := func(keys ...string) element {
		b := newBatch()
		for _, k := range keys {
			b.recs = append(b.recs, Record{Key: k})
		}
		return element{kind: elemRecords, batch: b}
	}

	check("nothing")
	c.push(records("a", "b"), 0)
	c.push(records("c"), 0)
	check("two pushes")
	over := c.pushPriority(element{kind: elemBarrier, barrier: barrier{ID: 1, Unaligned: true}}, 0)
	assert.Len(t, over, 3, "the barrier overtakes both queued batches")
	check("an unaligned barrier")
	c.push(records("d"), 0)
	check("a push to capacity")
	require.True(t, c.full())
	e, ok := c.pop()
	require.True(t, ok)
	assert.Equal(t, elemBarrier, e.kind, "the overtaking barrier comes first")
	check("a pop")
	for i := range 200 {
		c.push(records("x"), 0)
		if i%3 != 0 {
			_, ok := c.pop()
			require.True(t, ok)
		}
	}
	check("pushes and pops past the queue's compaction")
	for {
		e, ok := c.pop()
		if !ok {
			break
		}
		e.batch.release()
	}
	check("popping everything")
	c.push(records("y"), 0)
	c.push(records("z"), 0)
	c.drain()
	check("drain")
	assert.Equal(t, 0, c.len())
}
