package engine

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Both drivers run the same core: the JobManager, the subtasks and the
// channel queues. A running job can therefore change driver — from the
// teaching view to full speed and back — without losing a record, a barrier
// or a pending checkpoint: the old driver stops at a quiet point, the new
// one adopts its timers and undelivered messages and runs on. The old
// driver is then closed for use (its methods return ErrClosed or zero
// values; its Close does nothing); subscriptions carry on. Replay
// determinism ends at the first switch to Live.

// ToLive hands the job to a new Live driver and starts it. The Stepper's
// virtual clock carries on as the Live clock.
func (s *Stepper) ToLive(ctx context.Context) (*Live, error) {
	s.Pause()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	c := s.c
	l := &Live{c: c, qwake: make(chan struct{}, 1), twake: make(chan struct{}, 1), speed: 1, pauseC: make(chan struct{}), speedC: make(chan struct{})}
	close(l.pauseC)
	l.base = s.clock
	l.timers = append(l.timers, s.timers...)
	heap.Init(&l.timers)
	for _, m := range s.jmq {
		l.queue = append(l.queue, liveItem{msg: m, isMsg: true})
	}
	s.timers, s.jmq = nil, nil
	s.closed = true

	c.drv = l
	c.measure, c.verbose, c.stepFn = true, false, nil
	c.batch = orDefault(c.spec.Runtime.BatchSize, 64)
	c.chanCap = orDefault(c.spec.Runtime.ChannelCapacity, 16)
	if c.ex != nil {
		for _, t := range c.ex.tasks {
			t.verbose = false
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.started = true
	l.ctx, l.cancel = context.WithCancel(ctx)
	l.realBase = time.Now()
	l.publishClock()
	l.wg.Add(3)
	go l.jobManagerLoop()
	go l.timerLoop()
	go l.flowLoop()
	if c.ex != nil && c.ex.started {
		l.startTasks(c.ex)
	}
	poke(l.qwake)
	c.publish(Event{Kind: EvDriver, Status: "live", Message: "the job now runs at full speed on the Live driver"})
	return l, nil
}

// ToStepper stops the Live driver's goroutines at a quiet point and hands the
// job to a new, paused Stepper. Outputs a subtask had not sent yet are sent
// by the Stepper; messages and timers carry over.
func (l *Live) ToStepper() (*Stepper, error) {
	l.mu.Lock()
	if err := l.runningErr("hand over"); err != nil {
		l.mu.Unlock()
		return nil, err
	}
	l.detaching.Store(true)
	l.stopTasks(nil) // subtask goroutines and asynchronous snapshots are done after this
	l.closed = true
	now := l.now()
	l.cancel()
	l.mu.Unlock()
	l.wg.Wait()

	c := l.c
	pcg := rand.NewPCG(uint64(c.spec.Seed), uint64(now))
	s := &Stepper{c: c, rng: rand.New(pcg), pcg: pcg, fifo: c.spec.Runtime.FIFO, speed: 1, paused: true, clock: now}
	c.drv = s
	c.measure, c.verbose = false, true
	c.stepFn = func() int64 { return s.step }
	c.batch = orDefault(c.spec.Runtime.BatchSize, 16)
	c.chanCap = orDefault(c.spec.Runtime.ChannelCapacity, 4)
	s.batch = c.batch
	l.tmu.Lock()
	s.timers = append(s.timers, l.timers...)
	l.timers = nil
	l.tmu.Unlock()
	heap.Init(&s.timers)
	l.qmu.Lock()
	queue := l.queue
	l.queue = nil
	l.qmu.Unlock()
	for _, it := range queue {
		if it.isMsg {
			s.sendJM(it.msg)
		} else {
			s.after(0, it.tm)
		}
	}
	if c.ex != nil {
		for _, t := range c.ex.tasks {
			t.verbose = true
			t.wakeC = nil
			if len(t.outbox) > 0 || len(t.toJM) > 0 || len(t.acks) > 0 || len(t.events) > 0 {
				s.afterHandle(t, nil, 0)
			}
		}
	}
	c.publish(Event{Kind: EvDriver, Status: "step", Message: fmt.Sprintf("the job is paused on the Stepper at %v", now)})
	return s, nil
}
