package engine

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Live runs a job concurrently: one goroutine per subtask, bounded channels
// of pooled record batches between them, a JobManager goroutine, and a
// virtual clock that runs at a speed factor over real time (speed 1: real
// time). The subtasks run the same state machines as on the Stepper; only
// who calls them, and when, differs. Runs are not reproducible.
//
// Locking: l.mu is the JobManager's lock; it serialises JobManager work,
// commands and snapshots. Subtask goroutines never take it, so the
// JobManager may wait for them (to stop an execution) while holding it.
type Live struct {
	mu      sync.Mutex
	c       *core
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started bool
	closed  bool

	// JobManager mailbox: messages from subtasks and due timers.
	qmu   sync.Mutex
	queue []liveItem
	qwake chan struct{}

	// detaching is set while the job is handed to a Stepper: subtasks
	// stopped mid-output keep what they had not sent.
	detaching atomic.Bool

	// Virtual clock: virtual = base + (real - realBase) * speed, frozen while paused.
	cmu      sync.Mutex
	base     time.Duration
	realBase time.Time
	speed    float64
	paused   bool
	pauseC   chan struct{} // closed while running, replaced while paused
	// speedC is closed when the speed changes (and replaced): a subtask
	// that sleeps until a rate-limited source's next poll or a
	// processing-time timer, a wait computed at the old speed, wakes and
	// computes it again.
	speedC chan struct{}
	// clk is a read-only copy of the five fields above, replaced (under
	// cmu) by every change to them: each subtask reads the clock and the
	// pause gate on every loop, and one shared mutex there made the
	// subtasks of a parallel job wait for each other (issue 22).
	clk atomic.Pointer[liveClock]

	tmu    sync.Mutex
	timers timerQueue
	twake  chan struct{}

	// execution goroutines
	exCancel context.CancelFunc
	exCtx    context.Context
	exWG     sync.WaitGroup

	// activity counts every pop, push and poll; inTransit the elements a
	// subtask is handling. Together they let WaitDrained see a quiet moment.
	activity  atomic.Int64
	inTransit atomic.Int64
}

// NewLive creates a Live driver for spec; Start runs it.
func NewLive(spec *JobSpec, opts Options) (*Live, error) {
	c, err := newCore(spec, opts)
	if err != nil {
		return nil, err
	}
	l := &Live{c: c, qwake: make(chan struct{}, 1), twake: make(chan struct{}, 1), speed: 1, pauseC: make(chan struct{}), speedC: make(chan struct{})}
	close(l.pauseC)
	c.drv = l
	c.measure = true
	c.batch, c.chanCap = orDefault(c.spec.Runtime.BatchSize, 64), orDefault(c.spec.Runtime.ChannelCapacity, 16)
	return l, nil
}

// Start deploys the job and runs it until ctx ends or Close is called.
func (l *Live) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.started {
		return fmt.Errorf("%w: already started", ErrBadCommand)
	}
	l.started = true
	l.ctx, l.cancel = context.WithCancel(ctx)
	l.cmu.Lock()
	l.realBase = time.Now()
	l.publishClock()
	l.cmu.Unlock()
	l.wg.Add(3)
	go l.jobManagerLoop()
	go l.timerLoop()
	go l.flowLoop()
	l.c.start()
	return nil
}

// --- clock -----------------------------------------------------------------

// liveClock is one published state of the Live clock (Live.clk).
type liveClock struct {
	base     time.Duration
	realBase time.Time
	speed    float64
	paused   bool
	pauseC   chan struct{}
	speedC   chan struct{}
}

func (c *liveClock) now() time.Duration {
	if c.paused || c.realBase.IsZero() {
		return c.base
	}
	return c.base + time.Duration(float64(time.Since(c.realBase))*c.speed)
}

// nowAt is now for the real time wall, read by the caller (runTask reads
// the real clock once per turn of its loop for the job clock and its
// figures both).
func (c *liveClock) nowAt(wall time.Time) time.Duration {
	if c.paused || c.realBase.IsZero() {
		return c.base
	}
	return c.base + time.Duration(float64(wall.Sub(c.realBase))*c.speed)
}

// publishClock makes the clock fields readable without cmu; the caller
// holds cmu (or owns l before any goroutine of it runs).
func (l *Live) publishClock() {
	l.clk.Store(&liveClock{base: l.base, realBase: l.realBase, speed: l.speed, paused: l.paused, pauseC: l.pauseC, speedC: l.speedC})
}

// clock is the current published clock.
func (l *Live) clock() *liveClock {
	if c := l.clk.Load(); c != nil {
		return c
	}
	l.cmu.Lock()
	defer l.cmu.Unlock()
	return &liveClock{base: l.base, realBase: l.realBase, speed: l.speed, paused: l.paused, pauseC: l.pauseC, speedC: l.speedC}
}

func (l *Live) now() time.Duration { return l.clock().now() }

// SetSpeed sets how many virtual seconds pass per real second: timers
// (checkpoint interval, restart delay) and rate-limited sources follow it.
func (l *Live) SetSpeed(f float64) error {
	if f <= 0 || f > 1e6 {
		return fmt.Errorf("%w: speed %v is not within (0, 1e6]", ErrBadCommand, f)
	}
	l.cmu.Lock()
	if !l.paused && !l.realBase.IsZero() {
		l.base += time.Duration(float64(time.Since(l.realBase)) * l.speed)
		l.realBase = time.Now()
	}
	if f != l.speed {
		l.speed = f
		close(l.speedC)
		l.speedC = make(chan struct{})
	}
	l.publishClock()
	l.cmu.Unlock()
	poke(l.twake)
	return nil
}

// Pause stops the clock and makes every subtask wait before its next input.
func (l *Live) Pause() {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	if l.paused {
		return
	}
	if !l.realBase.IsZero() {
		l.base += time.Duration(float64(time.Since(l.realBase)) * l.speed)
	}
	l.paused = true
	l.pauseC = make(chan struct{})
	l.publishClock()
}

// Resume undoes Pause.
func (l *Live) Resume() {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	if !l.paused {
		return
	}
	l.paused = false
	l.realBase = time.Now()
	close(l.pauseC)
	l.publishClock()
	poke(l.twake)
}

func (l *Live) gate() <-chan struct{} { return l.clock().pauseC }

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// --- JobManager goroutine and timers ------------------------------------------

// liveItem is one entry of the JobManager's mailbox: a message from a
// subtask, or a due timer.
type liveItem struct {
	msg   jmMsg
	isMsg bool
	tm    timer
}

func (l *Live) push(it liveItem) {
	l.qmu.Lock()
	l.queue = append(l.queue, it)
	l.qmu.Unlock()
	poke(l.qwake)
}

func (l *Live) enqueue(tm timer) { l.push(liveItem{tm: tm}) }

func (l *Live) sendJM(m jmMsg) { l.push(liveItem{msg: m, isMsg: true}) }

func (l *Live) jobManagerLoop() {
	defer l.wg.Done()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-l.qwake:
		}
		for {
			// Take the mailbox under the JobManager's lock, so that a
			// handoff to a Stepper finds every unprocessed item in it.
			l.mu.Lock()
			if l.closed {
				l.mu.Unlock()
				return
			}
			l.qmu.Lock()
			q := l.queue
			l.queue = nil
			l.qmu.Unlock()
			for _, it := range q {
				if it.isMsg {
					l.c.handleJM(it.msg)
				} else {
					l.c.fire(it.tm)
				}
			}
			l.mu.Unlock()
			if len(q) == 0 {
				break
			}
		}
	}
}

func (l *Live) after(d time.Duration, tm timer) {
	l.tmu.Lock()
	heap.Push(&l.timers, stepTimer{at: l.now() + d, seq: l.c.nextSeq(), tm: tm})
	l.tmu.Unlock()
	poke(l.twake)
}

func (l *Live) cancelTimer(tm timer) {
	l.tmu.Lock()
	l.timers.cancel(tm)
	l.tmu.Unlock()
}

// timerLoop fires timers on the virtual clock: each due timer runs in the
// JobManager goroutine.
func (l *Live) timerLoop() {
	defer l.wg.Done()
	for {
		l.tmu.Lock()
		var wait time.Duration = -1
		now := l.now()
		for len(l.timers) > 0 && l.timers[0].at <= now {
			tm := heap.Pop(&l.timers).(stepTimer)
			l.enqueue(tm.tm)
		}
		if len(l.timers) > 0 {
			clk := l.clock()
			paused, speed := clk.paused, clk.speed
			if !paused {
				wait = time.Duration(float64(l.timers[0].at-now) / speed)
			}
		}
		l.tmu.Unlock()
		var tc <-chan time.Time
		if wait >= 0 {
			t := time.NewTimer(max(wait, 50*time.Microsecond))
			tc = t.C
			select {
			case <-l.ctx.Done():
				t.Stop()
				return
			case <-l.twake:
				t.Stop()
			case <-tc:
			}
			continue
		}
		select {
		case <-l.ctx.Done():
			return
		case <-l.twake:
		}
	}
}

// flowLoop publishes how many records crossed each channel, ten times a
// second, while someone listens (Live publishes no per-batch events).
func (l *Live) flowLoop() {
	defer l.wg.Done()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-tick.C:
		}
		if !l.c.bus.wanted() {
			continue
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return
		}
		var flows []ChannelFlow
		if ex := l.c.ex; ex != nil {
			for _, ch := range ex.channels {
				n := ch.sentRecs.Load()
				if d := n - ch.lastFlow; d > 0 {
					flows = append(flows, ChannelFlow{Channel: ch.name, Records: d})
				}
				ch.lastFlow = n
			}
		}
		if len(flows) > 0 {
			l.c.publish(Event{Kind: EvFlow, Flows: flows, Message: fmt.Sprintf("records moved on %d channels", len(flows))})
		}
		l.mu.Unlock()
	}
}

// --- subtask goroutines ---------------------------------------------------------

// startTasks runs one goroutine per subtask of ex.
func (l *Live) startTasks(ex *execution) {
	ctx, cancel := context.WithCancel(l.ctx)
	l.exCancel, l.exCtx = cancel, ctx
	for _, t := range ex.tasks {
		t.wakeC = make(chan struct{}, 1)
	}
	shareChainWake(ex)
	for _, t := range ex.tasks {
		if t.chainUp() == nil { // a chain is one thread: its head's
			l.goTask(ctx, t)
		}
	}
}

// goTask runs t's goroutine under its own context, so a region failover
// can stop it alone.
func (l *Live) goTask(ctx context.Context, t *subtask) {
	tctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.stop, t.done = cancel, done
	l.exWG.Add(1)
	go func() {
		defer close(done)
		l.runTask(tctx, t)
	}()
}

// stopTask stops one subtask's goroutine and waits for it.
func (l *Live) stopTask(t *subtask) {
	if t.stop != nil {
		t.stop()
		<-t.done
		t.stop = nil
	}
}

// startTask runs a new attempt of one subtask in the current execution.
// Its wake channel is the previous attempt's (restartRegion copies it before
// the other subtasks can see the new one); only a subtask without one gets
// a new channel here.
func (l *Live) startTask(t *subtask) {
	if t.wakeC == nil {
		t.wakeC = make(chan struct{}, 1)
	}
	if t.chainUp() != nil {
		return // its chain's head runs it
	}
	if l.exCtx != nil {
		l.goTask(l.exCtx, t)
	}
}

// stopTasks cancels the subtask goroutines and waits for them.
func (l *Live) stopTasks(*execution) {
	if l.exCancel != nil {
		l.exCancel()
		l.exCancel, l.exCtx = nil, nil
	}
	l.exWG.Wait()
}

func (l *Live) wake(t *subtask) {
	if t.wakeC != nil {
		poke(t.wakeC)
	}
}

// figuresEvery is how often a Live subtask publishes its figures
// (taskFigures) while it works; figuresIdleEvery how often at most when it
// idles between small pieces of work.
const (
	figuresEvery     = 250 * time.Millisecond
	figuresIdleEvery = 20 * time.Millisecond
	// idleSlack is how much later than needed an armed idle timer may
	// fire and still be kept (runTask); one that fires earlier than
	// needed is kept too: it only costs one more turn of the loop.
	idleSlack = 50 * time.Microsecond
	// lingerFor is how long at most a Live subtask keeps an output batch
	// open while it has more input at hand (subtask.linger): Flink's
	// execution.buffer-timeout, 100 ms by default there, kept short here
	// because a teaching job's records are watched as they move.
	lingerFor = time.Millisecond
)

// figuresDue publishes a Live subtask's figures when due: every
// figuresEvery while it works, and when it runs out of work after changing
// something (at most every figuresIdleEvery: a rate-limited source idles
// after every poll), so a paused or drained job shows where it stopped. It
// returns how soon to call again for what is still pending (keyed figures
// measured too recently to measure again; 0: nothing pending).
func (t *subtask) figuresDue(worked bool, now int64) time.Duration {
	if worked {
		t.pubDirty = true
	}
	if !t.pubDirty {
		return 0
	}
	every := figuresIdleEvery
	if worked {
		every = figuresEvery
	}
	if wait := t.pubAt + int64(every) - now; wait > 0 {
		return time.Duration(wait)
	}
	t.pubAt, t.pubDirty = now, false
	if next := t.publishFigures(now); next > 0 {
		t.pubDirty = true
		return time.Duration(next)
	}
	return 0
}

// runTask is a subtask's goroutine: control messages first, then one input
// element or one source poll at a time, outputs pushed into bounded
// channels (waiting while a channel is full: backpressure).
func (l *Live) runTask(ctx context.Context, t *subtask) {
	defer l.exWG.Done()
	rr := 0
	var idle *time.Timer
	// idleAt is when the armed idle timer fires (UnixNano), 0 when it is
	// not armed. A subtask that runs out of input waits with the same
	// deadline many times a second (its next figures publication), and
	// re-arming a runtime timer each time made the subtasks of a parallel
	// job queue on the runtime's timer locks (mutex profile, issue 22):
	// the armed timer is kept when it fires no later than needed.
	var idleAt int64
	defer func() {
		if idle != nil {
			idle.Stop()
		}
		// Open output batches: a handover or a fork sends them (outbox);
		// a cancelled or failed subtask's are dropped with the rest of its
		// outputs.
		if l.detaching.Load() && t.hasPending() {
			t.flush()
		}
		if t.holding {
			t.holding = false
			l.inTransit.Add(-1)
		}
	}()
	done := ctx.Done()
	for {
		// The job's context and the clock's gate are shared by every
		// subtask: a select over both locks both channels on every turn,
		// so the subtasks of a parallel job queued on those two locks. A
		// receive that does not block reads a channel without its lock;
		// the select that waits is only for a cancelled or paused job.
		gate := l.gate()
		select {
		case <-done:
			return
		default:
		}
		select {
		case <-gate:
		default:
			// Paused: open output batches go out first, so a paused
			// job shows its records on the channels.
			if t.holding && !l.sendHeld(ctx, t) {
				return
			}
			select {
			case <-done:
				return
			case <-gate:
			}
		}
		if t.dead.Load() {
			// Its TaskManager died: nothing more until it is cancelled.
			<-ctx.Done()
			return
		}
		worked := false
		// One reading of the real clock per turn serves the job clock
		// (timers, the element's processing time, a source's poll) and
		// the figures' schedule.
		wall := time.Now()
		clk := l.clock()
		if ct, m, ok := t.popChainCtl(); ok {
			ct.now = l.now()
			err := ct.handleControl(m)
			if !l.afterHandle(ctx, ct, err) {
				return
			}
			t.pubDirty = true // a restore, a snapshot or a rescale changes the figures
			continue
		}
		if t.chainRunning() && t.hasOutputSpace() {
			// Due processing-time timers fire before the next input, as
			// Flink's mailbox runs a timer between two records.
			if now := clk.nowAt(wall); t.procTimerDue(now) {
				l.inTransit.Add(1)
				l.activity.Add(1)
				t.now = now
				err := t.fireProcTimers()
				ok := l.afterHandle(ctx, t, err)
				l.inTransit.Add(-1)
				if !ok {
					return
				}
				t.pubDirty = true
				continue
			}
		}
		if t.chainRunning() {
			for i := range t.inputs {
				ch := t.inputs[(rr+i)%len(t.inputs)]
				if ch.blocked.Load() {
					continue
				}
				l.inTransit.Add(1)
				e, ok := ch.pop()
				if !ok {
					l.inTransit.Add(-1)
					continue
				}
				l.activity.Add(1)
				l.wake(ch.from) // room in its output
				rr = (rr + i + 1) % len(t.inputs)
				t.now = clk.nowAt(wall)
				t.linger = l.c.batch
				err := t.handleElement(ch.toInput, e)
				t.linger = 0
				ok = l.afterHandle(ctx, t, err)
				if ok && !t.holding && t.hasPending() {
					// Counted in transit until flushed, so the job is
					// not drained while a batch is open.
					t.holding, t.holdSince = true, wall.UnixNano()
					l.inTransit.Add(1)
				}
				l.inTransit.Add(-1)
				if !ok {
					return
				}
				worked = true
				break
			}
			if !worked && t.src != nil && t.src.pollable() && t.hasOutputSpace() {
				if now := clk.nowAt(wall); int64(now) >= t.src.nextPoll {
					l.inTransit.Add(1)
					l.activity.Add(1)
					t.now = now
					err := t.src.poll(t, l.c.batch)
					ok := l.afterHandle(ctx, t, err)
					l.inTransit.Add(-1)
					if !ok {
						return
					}
					worked = true
				}
			}
		}
		// Open output batches leave when the subtask has no more input at
		// hand, or after lingerFor (Flink's buffer timeout).
		if t.holding && (!worked || wall.UnixNano()-t.holdSince >= int64(lingerFor)) {
			if !l.sendHeld(ctx, t) {
				return
			}
			worked = true
		}
		// Publish the subtask's figures for snapshots (figuresDue); refresh
		// is how soon it must look again for what is still pending.
		refresh := t.figuresDue(worked, wall.UnixNano())
		if worked {
			continue
		}
		// Nothing to do: wait to be woken (input, room, control, injected
		// record), or for a rate-limited source's next poll.
		var tc <-chan time.Time
		// The waits below are computed at this clock's speed; a change of
		// speed closes its speedC.
		speedC := l.clock().speedC
		if t.src != nil && t.getStatus() == TaskRunning && t.src.pollable() {
			d := 2 * time.Millisecond
			if w := time.Duration(t.src.nextPoll) - l.now(); w > 0 {
				d = time.Duration(float64(w) / l.clock().speed)
			}
			if refresh > 0 {
				d = min(refresh, d)
			}
			refresh = d
		}
		if t.getStatus() == TaskRunning {
			// Wake up for the earliest processing-time timer.
			if at, ok := t.nextProcTimer(); ok {
				d := time.Millisecond
				if w := at - l.now(); w > 0 {
					d = max(time.Duration(float64(w)/l.clock().speed), 50*time.Microsecond)
				}
				if refresh > 0 {
					d = min(refresh, d)
				}
				refresh = d
			}
		}
		if refresh > 0 {
			now := time.Now().UnixNano()
			at := now + int64(refresh)
			switch {
			case idle == nil:
				idle = time.NewTimer(refresh)
				idleAt = at
			case idleAt > now && idleAt <= at+int64(idleSlack):
				// Armed for this deadline (or just before it) already.
			default:
				idle.Reset(refresh)
				idleAt = at
			}
			tc = idle.C
		}
		select {
		case <-ctx.Done():
			return
		case <-t.wakeC:
		case <-speedC:
		case <-tc:
			idleAt = 0
		}
	}
}

// sendHeld sends the output batches a subtask kept open (subtask.linger)
// and stops counting them in transit. It returns false when the subtask
// must stop.
func (l *Live) sendHeld(ctx context.Context, t *subtask) bool {
	t.flush()
	ok := l.afterHandle(ctx, t, nil)
	t.holding = false
	l.inTransit.Add(-1)
	return ok
}

// afterHandle moves a subtask's outputs on. It returns false when the
// subtask must stop (cancelled, or it failed).
func (l *Live) afterHandle(ctx context.Context, t *subtask, err error) bool {
	c := l.c
	rewake := false
	defer func() {
		if rewake {
			poke(t.wakeC)
		}
	}()
	err = t.runChain(err)
	for i, it := range t.outbox {
		if it.e.kind == elemBarrier && it.e.barrier.Unaligned {
			// A priority event: it needs no room (unaligned.go).
			t.pushElement(it, 0)
			l.activity.Add(1)
			l.wake(it.ch.to)
			continue
		}
		for it.ch.full() {
			select {
			case <-ctx.Done():
				if l.detaching.Load() {
					// Handed to a Stepper: it sends the rest.
					n := copy(t.outbox, t.outbox[i:])
					clear(t.outbox[n:])
					t.outbox = t.outbox[:n]
					return false
				}
				for _, rest := range t.outbox[i:] {
					rest.e.batch.release()
				}
				clear(t.outbox)
				t.outbox = t.outbox[:0]
				return false
			case <-t.wakeC:
				// Woken for room, or for a control message that must wait
				// until this output is out; keep the wake for later.
				if _, pending := t.peekCtl(); pending {
					rewake = true
				}
			}
		}
		it.ch.push(it.e, 0)
		l.activity.Add(1)
		l.wake(it.ch.to)
	}
	clear(t.outbox)
	t.outbox = t.outbox[:0]
	for _, m := range t.toJM {
		l.sendJM(m)
	}
	t.toJM = t.toJM[:0]
	for _, a := range t.acks {
		if a.async == nil {
			l.sendJM(a.msg)
			continue
		}
		// The asynchronous part of the snapshot (writing, uploading) runs
		// beside the subtask, which goes on processing records, as in Flink.
		l.exWG.Add(1)
		go func(a pendingAck) {
			defer l.exWG.Done()
			start := l.now()
			m := a.finish()
			m.ack.AsyncDuration = l.now() - start
			l.sendJM(m)
		}(a)
	}
	t.acks = t.acks[:0]
	t.cost = 0
	if len(t.events) > 0 {
		c.flushTaskEvents(t)
	}
	if err != nil {
		c.taskFailed(t, err)
		l.sendJM(jmMsg{kind: jmFailed, attempt: t.ex.attempt, task: t, reason: fmt.Sprintf("%s failed: %v", t.name, err)})
		return false
	}
	return true
}

// --- public API -------------------------------------------------------------------

// Do applies a command.
func (l *Live) Do(cmd Command) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if !l.started {
		return fmt.Errorf("%w: call Start first", ErrNotRunning)
	}
	return l.c.do(cmd, 0)
}

// Subscribe returns a subscription to events.
func (l *Live) Subscribe(buffer int) *Subscription { return l.c.bus.subscribe(buffer) }

// runningErr says why the Live cannot hand over or fork its job now (nil:
// it can); l.mu is held.
func (l *Live) runningErr(what string) error {
	switch {
	case l.closed:
		return ErrClosed
	case !l.started:
		return fmt.Errorf("%w: cannot %s a job that has not started; call Start first", ErrNotRunning, what)
	}
	return nil
}

// Snapshot returns the whole picture. A subtask's offsets, operator state
// and keyed state figures are what it last published (publishFigures: its
// backends belong to its goroutine); TaskState reads the entries.
func (l *Live) Snapshot() Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return Snapshot{Driver: "closed"}
	}
	snap := l.c.snapshot(false)
	l.cmu.Lock()
	snap.Driver, snap.Paused, snap.Speed = "live", l.paused, l.speed
	l.cmu.Unlock()
	return snap
}

// TaskState asks a running subtask for the state inspector's view.
func (l *Live) TaskState(task string, limit int) (TaskStateView, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return TaskStateView{}, ErrClosed
	}
	t, err := l.c.findTask(task)
	if err == nil && t.getStatus() != TaskRunning {
		err = fmt.Errorf("%w: %s is %s", ErrNotRunning, task, t.getStatus())
	}
	reply := make(chan TaskStateView, 1)
	if err == nil {
		t.sendCtl(control{kind: ctlInspect, attempt: t.ex.attempt, reply: reply})
		l.wake(t)
	}
	l.mu.Unlock()
	if err != nil {
		return TaskStateView{}, err
	}
	select {
	case v := <-reply:
		if limit > 0 && len(v.Keyed) > limit {
			v.Keyed = v.Keyed[:limit]
		}
		return v, nil
	case <-time.After(2 * time.Second):
		return TaskStateView{}, fmt.Errorf("%w: %s did not answer (it may be backpressured or paused)", ErrNotRunning, task)
	}
}

// Compare checks every sink's committed output against the ground truth.
func (l *Live) Compare() ([]Comparison, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	return l.c.compare()
}

// WaitDrained waits until the output is final, by the rule of the
// Stepper's RunUntilDrained: sources read to the end and their end-of-input
// watermark sent, nothing in flight (records, watermarks, barriers), no
// checkpoint pending, the sinks' output written or committed.
func (l *Live) WaitDrained(ctx context.Context) error {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if l.drained() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		l.mu.Lock()
		terminal, closed := l.c.terminal, l.closed
		l.mu.Unlock()
		if closed {
			return ErrClosed
		}
		if terminal {
			return fmt.Errorf("%w: the job failed before the end of input", ErrJobTerminal)
		}
	}
}

// drained checks the end-of-input condition at a quiet moment: no element
// moved while it looked.
func (l *Live) drained() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	c := l.c
	a1 := l.activity.Load()
	if l.inTransit.Load() != 0 || c.ex == nil || c.status != JobRunning || c.rescaling != nil || !c.allTasks(TaskRunning) || len(c.coord.pending) > 0 {
		return false
	}
	for _, tp := range c.topics {
		if !tp.readToEnd() {
			return false
		}
	}
	for _, t := range c.ex.tasks {
		if _, ok := t.peekCtl(); ok {
			return false
		}
	}
	// Every element must have arrived (see core.drained), and every
	// source must have sent its end-of-input watermark (+∞, once all its
	// partitions are read): the subtask's own cursor belongs to its
	// goroutine, its watermark is atomic.
	for _, ch := range c.ex.channels {
		if ch.len() > 0 {
			return false
		}
	}
	for _, t := range c.ex.tasks {
		if t.op.spec.Kind == KindSource && t.wm.Load() != MaxWatermark {
			return false
		}
	}
	for _, s := range c.sinks {
		if s.pendingTxns() > 0 {
			return false
		}
	}
	return l.inTransit.Load() == 0 && l.activity.Load() == a1
}

// Close stops every goroutine, closes the state backends and removes the
// engine's temporary directory.
func (l *Live) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	if l.cancel != nil {
		l.cancel()
	}
	l.stopTasks(nil)
	if l.c.ex != nil {
		for _, t := range l.c.ex.tasks {
			t.close()
		}
	}
	l.mu.Unlock()
	l.wg.Wait()
	l.c.cleanup()
	return nil
}

var _ driver = (*Live)(nil)
var _ driver = (*Stepper)(nil)
