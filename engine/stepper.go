package engine

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Virtual cost of one step on the Stepper's clock. The model is one CPU:
// every delivery takes a little time, more for more records, so checkpoint
// intervals, timeouts and restart delays fall between steps the way they
// would fall between buffers in a real run.
const (
	costBatch     = 200 * time.Microsecond
	costPerRecord = 20 * time.Microsecond
	costElement   = 50 * time.Microsecond  // barrier, watermark
	costMessage   = 100 * time.Microsecond // an RPC between JobManager and subtask
)

// Stepper runs a job deterministically: one event per Step, chosen by a
// seeded random number generator (or oldest first with runtime.fifo) among
// everything that could happen next — a batch, barrier or watermark at the
// head of a channel, a source poll, a message between JobManager and a
// subtask, a due timer — on a virtual clock. The same spec, seed and command
// log give the same run, event for event. All methods are safe for
// concurrent use; each takes the Stepper's lock.
type Stepper struct {
	mu     sync.Mutex
	c      *core
	rng    *rand.Rand
	pcg    *rand.PCG // rng's source, whose state Fork copies
	fifo   bool
	clock  time.Duration
	step   int64
	timers timerQueue
	jmq    []jmMsg
	paused bool
	speed  float64
	closed bool
	batch  int

	// playing is the goroutine Resume started (stopped by Pause and Close).
	playCancel context.CancelFunc
	playWG     sync.WaitGroup
}

// stepTimer is a timer on the virtual clock.
type stepTimer struct {
	at  time.Duration
	seq int64
	tm  timer
}

type timerQueue []stepTimer

func (q timerQueue) Len() int { return len(q) }
func (q timerQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q timerQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *timerQueue) Push(x any)   { *q = append(*q, x.(stepTimer)) }
func (q *timerQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// cancel removes every pending timer equal to tm. A timer that has become
// pointless is taken off the queue rather than left to fire as a no-op, as
// Flink's CheckpointCoordinator cancels a checkpoint's timeout canceller
// when the checkpoint completes or is aborted: a stale timeout would
// otherwise be the next thing an idle Stepper advances its clock to.
func (q *timerQueue) cancel(tm timer) {
	for i := 0; i < len(*q); {
		if (*q)[i].tm == tm {
			heap.Remove(q, i)
			continue
		}
		i++
	}
}

// NewStepper creates a Stepper for spec and schedules the job; nothing runs
// until Step is called.
func NewStepper(spec *JobSpec, opts Options) (*Stepper, error) {
	c, err := newCore(spec, opts)
	if err != nil {
		return nil, err
	}
	pcg := rand.NewPCG(uint64(c.spec.Seed), 0x5eed5eed)
	s := &Stepper{c: c, rng: rand.New(pcg), pcg: pcg, fifo: c.spec.Runtime.FIFO, speed: 1, paused: true}
	c.drv = s
	c.verbose = true
	c.batch, c.chanCap = orDefault(c.spec.Runtime.BatchSize, 16), orDefault(c.spec.Runtime.ChannelCapacity, 4)
	s.batch = c.batch
	c.stepFn = func() int64 { return s.step }
	c.start()
	return s, nil
}

// --- driver hooks (called with s.mu held) -------------------------------------

func (s *Stepper) now() time.Duration    { return s.clock }
func (s *Stepper) startTasks(*execution) {}
func (s *Stepper) stopTasks(*execution)  {}
func (s *Stepper) wake(*subtask)         {}
func (s *Stepper) stopTask(*subtask)     {}
func (s *Stepper) startTask(*subtask)    {}
func (s *Stepper) sendJM(m jmMsg) {
	m.seq = s.c.nextSeq()
	s.jmq = append(s.jmq, m)
}

func (s *Stepper) after(d time.Duration, tm timer) {
	heap.Push(&s.timers, stepTimer{at: s.clock + d, seq: s.c.nextSeq(), tm: tm})
}

func (s *Stepper) cancelTimer(tm timer) { s.timers.cancel(tm) }

// --- stepping ------------------------------------------------------------------

type candKind uint8

const (
	candDeliver candKind = iota
	candPoll
	candControl
	candJM
	candTimer
	candProcTimer // a chain's processing-time timer is due (proctime.go)
)

type candidate struct {
	kind candKind
	t    *subtask
	ch   *channel
	seq  int64
}

// candidates lists everything that can happen now, in a fixed order.
func (s *Stepper) candidates(buf []candidate) []candidate {
	c := s.c
	if ex := c.ex; ex != nil {
		for _, t := range ex.tasks {
			if t.dead.Load() || t.chainUp() != nil {
				continue // a chained subtask runs in its chain's head (chain.go)
			}
			if t.chainRunning() {
				space := t.hasOutputSpace()
				if t.src != nil && space && t.src.pollable() && int64(s.clock) >= t.src.nextPoll {
					buf = append(buf, candidate{kind: candPoll, t: t, seq: t.pollSeq})
				}
				if space && t.procTimerDue(s.clock) {
					// Due since before anything queued now: oldest first
					// (runtime.fifo) fires it before the rest.
					buf = append(buf, candidate{kind: candProcTimer, t: t})
				}
				if space {
					for _, ch := range t.inputs {
						if ch.blocked.Load() {
							continue
						}
						if _, seq, ok := ch.peek(); ok {
							buf = append(buf, candidate{kind: candDeliver, t: t, ch: ch, seq: seq})
						}
					}
				}
			}
			if _, m, ok := t.peekChainCtl(); ok {
				buf = append(buf, candidate{kind: candControl, t: t, seq: m.seq})
			}
		}
	}
	if len(s.jmq) > 0 {
		buf = append(buf, candidate{kind: candJM, seq: s.jmq[0].seq})
	}
	return s.dueTimers(buf)
}

// dueTimers appends a candidate for every timer due by the clock, in the
// queue's index order (the order a scan of the whole queue gives, which the
// seeded pick depends on). It visits only the due timers and their
// children: s.timers is a min-heap, so below a timer not yet due none is.
// A scan of the whole queue made every step cost as much as the timers
// pending, and a run keeps one pending per checkpoint until its timeout
// (Flink's default: 10 minutes), so a replay's cost grew with the square
// of its steps.
func (s *Stepper) dueTimers(buf []candidate) []candidate {
	q := s.timers
	if len(q) == 0 || q[0].at > s.clock {
		return buf
	}
	var stackBuf, dueBuf [64]int
	stack, due := append(stackBuf[:0], 0), dueBuf[:0]
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		due = append(due, i)
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(q) && q[c].at <= s.clock {
				stack = append(stack, c)
			}
		}
	}
	slices.Sort(due)
	for _, i := range due {
		buf = append(buf, candidate{kind: candTimer, seq: q[i].seq})
	}
	return buf
}

// nextWake is the earliest virtual time something becomes possible: a timer,
// a rate-limited source, or a processing-time timer of a running chain.
func (s *Stepper) nextWake() (time.Duration, bool) {
	var at time.Duration
	ok := false
	if len(s.timers) > 0 {
		at, ok = s.timers[0].at, true
	}
	if ex := s.c.ex; ex != nil {
		for _, t := range ex.tasks {
			if t.src != nil && !t.dead.Load() && t.getStatus() == TaskRunning && t.src.pollable() && t.hasOutputSpace() {
				w := time.Duration(t.src.nextPoll)
				if !ok || w < at {
					at, ok = w, true
				}
			}
			if !t.dead.Load() && t.chainUp() == nil && t.chainRunning() && t.hasOutputSpace() {
				if w, has := t.nextProcTimer(); has && (!ok || w < at) {
					at, ok = w, true
				}
			}
		}
	}
	return at, ok
}

// Step performs one event. It returns false when nothing can ever happen
// again (the job failed for good, or the Stepper is closed).
func (s *Stepper) Step() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stepLocked()
}

func (s *Stepper) stepLocked() bool {
	if s.closed {
		return false
	}
	var buf [64]candidate
	cands := s.candidates(buf[:0])
	if len(cands) == 0 {
		at, ok := s.nextWake()
		if !ok {
			return false
		}
		if at > s.clock {
			s.clock = at
		}
		cands = s.candidates(buf[:0])
		if len(cands) == 0 {
			return false
		}
	}
	var pick candidate
	if s.fifo {
		pick = cands[0]
		for _, cd := range cands[1:] {
			if cd.seq < pick.seq {
				pick = cd
			}
		}
	} else {
		pick = cands[s.rng.IntN(len(cands))]
	}
	s.step++
	s.execute(pick)
	return true
}

func (s *Stepper) execute(cd candidate) {
	c := s.c
	switch cd.kind {
	case candPoll:
		t := cd.t
		t.now = s.clock
		before := t.recordsIn.Load()
		err := t.src.poll(t, s.batch)
		t.pollSeq = c.nextSeq()
		n := t.recordsIn.Load() - before
		s.afterHandle(t, err, costBatch+time.Duration(n)*costPerRecord)
	case candDeliver:
		t := cd.t
		t.now = s.clock
		e, _ := cd.ch.pop()
		n := e.records()
		err := t.handleElement(cd.ch.toInput, e)
		cost := costElement
		if e.kind == elemRecords {
			cost = costBatch + time.Duration(n)*costPerRecord
		}
		s.afterHandle(t, err, cost)
	case candControl:
		t, m, _ := cd.t.popChainCtl()
		t.now = s.clock
		err := t.handleControl(m)
		s.afterHandle(t, err, costMessage)
	case candProcTimer:
		t := cd.t
		t.now = s.clock
		err := t.fireProcTimers()
		s.afterHandle(t, err, costElement)
	case candJM:
		m := s.jmq[0]
		s.jmq = s.jmq[1:]
		s.clock += costMessage
		c.handleJM(m)
	case candTimer:
		// The due timer with this sequence number.
		for i, tm := range s.timers {
			if tm.seq == cd.seq {
				heap.Remove(&s.timers, i)
				c.fire(tm.tm)
				break
			}
		}
	}
}

// afterHandle moves a subtask's outputs on: elements into channels,
// messages to the JobManager (acknowledgements after their asynchronous
// part), events to subscribers; a handler error fails the subtask.
func (s *Stepper) afterHandle(t *subtask, err error, cost time.Duration) {
	c := s.c
	err = t.runChain(err)
	s.clock += cost + t.cost
	t.cost = 0
	for _, it := range t.outbox {
		t.pushElement(it, c.nextSeq())
	}
	clear(t.outbox)
	t.outbox = t.outbox[:0]
	for _, m := range t.toJM {
		s.sendJM(m)
	}
	t.toJM = t.toJM[:0]
	for _, a := range t.acks {
		// The asynchronous part runs now (deterministically); the
		// acknowledgement arrives after its modelled duration, through
		// whichever driver runs the job by then.
		s.after(a.delay, timer{kind: timerAck, msg: a.finish()})
	}
	t.acks = t.acks[:0]
	c.flushTaskEvents(t)
	if err != nil {
		c.taskFailed(t, err)
		s.sendJM(jmMsg{kind: jmFailed, attempt: t.ex.attempt, task: t, reason: fmt.Sprintf("%s failed: %v", t.name, err)})
	}
}

// Steps performs up to n steps and returns how many it did.
func (s *Stepper) Steps(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range n {
		if !s.stepLocked() {
			return i
		}
	}
	return n
}

// RunFor steps until the virtual clock has advanced by d.
func (s *Stepper) RunFor(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := s.clock + d
	for s.clock < end && s.stepLocked() {
	}
}

// RunUntil steps until pred holds for the Snapshot, checking before every
// step; it returns the steps taken, or ErrStepperLimit after maxSteps. The
// Snapshot given to pred leaves out SubtaskView.State (keyed backend figures
// cost a scan of the backend; read them with TaskState); everything else is
// there. A snapshot costs about 0.1 ms; for long runs prefer RunUntilDrained.
func (s *Stepper) RunUntil(pred func(*Snapshot) bool, maxSteps int) (int, error) {
	for i := 0; i < maxSteps; i++ {
		snap := s.lightSnapshot()
		if pred(&snap) {
			return i, nil
		}
		if !s.Step() {
			snap = s.lightSnapshot()
			if pred(&snap) {
				return i, nil
			}
			return i, fmt.Errorf("%w: nothing more can happen (job %s)", ErrStepperLimit, snap.Job.Status)
		}
	}
	return maxSteps, fmt.Errorf("%w: %d steps", ErrStepperLimit, maxSteps)
}

// RunUntilDrained steps until the output is final: every source has read
// its whole topic and sent its end-of-input watermark, every element
// (records, watermarks, barriers) has been processed, so every event-time
// window has fired, no checkpoint is pending, and the sinks have written
// (at-least-once) or committed (exactly-once) everything.
func (s *Stepper) RunUntilDrained(maxSteps int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < maxSteps; i++ {
		if !s.closed && s.c.drained() {
			return i, nil
		}
		if !s.stepLocked() {
			return i, fmt.Errorf("%w: nothing more can happen (job %s)", ErrStepperLimit, s.c.status)
		}
	}
	return maxSteps, fmt.Errorf("%w: %d steps", ErrStepperLimit, maxSteps)
}

// Play runs the job in real time: each tick it steps until the virtual
// clock catches up with the time played so far times the speed. It returns
// when Pause is called, ctx ends, or nothing more can happen.
func (s *Stepper) Play(ctx context.Context) error {
	s.mu.Lock()
	if err := ctx.Err(); err != nil {
		// Paused (or cancelled) before this goroutine got to run: the
		// Stepper stays paused.
		s.mu.Unlock()
		return err
	}
	s.paused = false
	s.mu.Unlock()
	tick := time.NewTicker(16 * time.Millisecond)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			// A run that is not playing is paused, whoever ended it.
			s.mu.Lock()
			s.paused = true
			s.mu.Unlock()
			return ctx.Err()
		case now := <-tick.C:
			s.mu.Lock()
			if s.paused || s.closed {
				s.mu.Unlock()
				return nil
			}
			more := s.playTick(now.Sub(last), now)
			last = now
			if !more {
				s.paused = true
				s.mu.Unlock()
				return nil
			}
			s.mu.Unlock()
		}
	}
}

// playTick is one tick of Play, elapsed real time after the previous one
// (started at now), with s.mu held: it steps until the virtual clock has
// advanced by elapsed times the speed. It returns false when nothing more
// can happen.
//
// A restart backoff is passed at once, as an idle Stepper passes it by
// advancing its clock to the restart timer: while a pipelined region waits
// for its restart (region.go) the other regions keep the Stepper busy, so
// the backoff (exponential-delay's 1 s) would pass at the teaching pace,
// some 50 s on screen, where a global restart of the same job (nothing
// else runs, so the clock jumps from timer to timer) takes a few ticks.
// The steps are the same either way (only how many run per tick changes),
// so a replay is not affected.
func (s *Stepper) playTick(elapsed time.Duration, now time.Time) bool {
	target := s.clock + time.Duration(float64(elapsed)*s.speed)
	if c := s.c; c.status == JobRestarting && c.rs.restartAt > target {
		target = c.rs.restartAt
	}
	// Hold the lock at most a few milliseconds per tick, so snapshots and
	// commands stay responsive at any speed; the virtual clock is never
	// moved by hand (that would break replay), so at high speed the run
	// simply falls behind real time.
	for n := 0; s.clock < target; n++ {
		if n&255 == 255 && time.Since(now) > 8*time.Millisecond {
			break
		}
		if !s.stepLocked() {
			return false
		}
	}
	return true
}

// Pause makes Play return after its current tick, and stops what Resume started.
func (s *Stepper) Pause() {
	s.mu.Lock()
	s.paused = true
	cancel := s.playCancel
	s.playCancel = nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.playWG.Wait()
}

// Resume plays in the background (see Play) until Pause or Close.
func (s *Stepper) Resume() {
	s.mu.Lock()
	if s.closed || s.playCancel != nil {
		s.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.playCancel = cancel
	s.playWG.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.playWG.Done()
		_ = s.Play(ctx)
	}()
}

// SetSpeed sets how many virtual seconds Play runs per real second.
func (s *Stepper) SetSpeed(f float64) error {
	if f <= 0 || f > 1e6 {
		return fmt.Errorf("%w: speed %v is not within (0, 1e6]", ErrBadCommand, f)
	}
	s.mu.Lock()
	s.speed = f
	s.mu.Unlock()
	return nil
}

// Do applies a command between two steps and logs it with the step number,
// so Replay can apply it at the same point.
func (s *Stepper) Do(cmd Command) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.c.do(cmd, s.step)
}

// Replay applies a command log recorded by another Stepper of the same spec
// and seed: it steps to each command's step and applies it there. It stops
// at the last command.
func (s *Stepper) Replay(log []LoggedCommand) error {
	for _, lc := range log {
		s.mu.Lock()
		for s.step < lc.Step {
			if !s.stepLocked() {
				s.mu.Unlock()
				return fmt.Errorf("%w: replay ended at step %d before command %s at step %d", ErrStepperLimit, s.step, lc.Command.Name, lc.Step)
			}
		}
		err := s.c.do(lc.Command, s.step)
		s.mu.Unlock()
		if err != nil && !lc.Failed {
			return fmt.Errorf("replay %s at step %d: %w", lc.Command.Name, lc.Step, err)
		}
	}
	return nil
}

// Position returns how many steps the Stepper has taken and its virtual
// clock (cheaper than a Snapshot).
func (s *Stepper) Position() (step int64, at time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.step, s.clock
}

// CommandLog returns the commands applied so far.
func (s *Stepper) CommandLog() []LoggedCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	return append([]LoggedCommand(nil), s.c.cmdLog...)
}

// Subscribe returns a subscription to events.
func (s *Stepper) Subscribe(buffer int) *Subscription { return s.c.bus.subscribe(buffer) }

// Snapshot returns the whole picture.
func (s *Stepper) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Snapshot{Driver: "closed"}
	}
	snap := s.c.snapshotWith(true, true)
	snap.Driver, snap.Step, snap.Paused, snap.Speed = "step", s.step, s.paused, s.speed
	return snap
}

func (s *Stepper) lightSnapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Snapshot{Driver: "closed"}
	}
	snap := s.c.snapshotWith(true, false)
	snap.Driver, snap.Step, snap.Paused, snap.Speed = "step", s.step, s.paused, s.speed
	return snap
}

// TaskState returns the state inspector's view of one subtask (at most
// limit keyed entries; 0 = all).
func (s *Stepper) TaskState(task string, limit int) (TaskStateView, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return TaskStateView{}, ErrClosed
	}
	t, err := s.c.findTask(task)
	if err != nil {
		return TaskStateView{}, err
	}
	return t.stateViewLimit(limit), nil
}

// Compare checks every sink's committed output against the ground truth
// computed from the source topics.
func (s *Stepper) Compare() ([]Comparison, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	return s.c.compare()
}

// Drained reports whether the output is final (see RunUntilDrained).
func (s *Stepper) Drained() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && s.c.drained()
}

// Close stops the Stepper and releases state backends and directories.
func (s *Stepper) Close() error {
	s.Pause()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.c.close()
	return nil
}
