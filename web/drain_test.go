package web

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/statelab/statelab/engine"
)

// pendingSub is a subscription whose events are partly in its channel and
// partly still on their way (a feeder moves them in later), as
// engine.Subscription's are when its subscriber is behind.
type pendingSub struct {
	c       chan engine.Event
	pending atomic.Int64
}

func (s *pendingSub) Events() <-chan engine.Event { return s.c }
func (s *pendingSub) Dropped() int64              { return 0 }
func (s *pendingSub) Close()                      {}
func (s *pendingSub) Pending() int                { return int(s.pending.Load()) }

// The pump's drain before a seek takes what the subscription held — also
// the events still queued behind its channel — and stops there, even while
// the engine goes on publishing.
func TestDrainHeldTakesWhatWasHeldAndNoMore(t *testing.T) {
	s := &pendingSub{c: make(chan engine.Event, 4)}
	for i := range 2 {
		s.c <- engine.Event{Seq: int64(i + 1)}
	}
	s.pending.Store(5) // 2 in the channel, 3 queued
	go func() {        // the queue's forwarder, slowly
		for i := 2; i < 5; i++ {
			time.Sleep(5 * time.Millisecond)
			s.c <- engine.Event{Seq: int64(i + 1)}
		}
		// The engine goes on: more events arrive after the drain's count.
		s.pending.Store(1)
		s.c <- engine.Event{Seq: 6}
	}()
	var got []int64
	closed := drainHeld(s, s.c, func(e engine.Event) {
		got = append(got, e.Seq)
		s.pending.Add(-1)
	})
	assert.False(t, closed)
	assert.Equal(t, []int64{1, 2, 3, 4, 5}, got, "every held event, in order, and not the newer one")

	// A closed channel ends it.
	c := make(chan engine.Event)
	close(c)
	s2 := &pendingSub{c: c}
	s2.pending.Store(1)
	assert.True(t, drainHeld(s2, c, func(engine.Event) {}))

	// A subscription that cannot count gives what its channel holds.
	plain := make(chan engine.Event, 3)
	plain <- engine.Event{Seq: 1}
	plain <- engine.Event{Seq: 2}
	n := 0
	assert.False(t, drainHeld(&testSubNoPending{plain}, plain, func(engine.Event) { n++ }))
	assert.Equal(t, 2, n)
}

type testSubNoPending struct{ c chan engine.Event }

func (s *testSubNoPending) Events() <-chan engine.Event { return s.c }
func (s *testSubNoPending) Dropped() int64              { return 0 }
func (s *testSubNoPending) Close()                      {}
