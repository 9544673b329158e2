package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/statelab/statelab/state"
)

// A fork is a new, independent job that starts as an exact copy of a
// running one at one instant, then goes its own way: a classroom follower's
// copy of the presenter's run, whatever driver runs it; a point of a
// timeline to seek from without replaying from the first step. It is a
// savepoint of the whole run, not only of its state: besides every
// subtask's keyed state (copied through a full snapshot into the fork's own
// backends and local disks) and operator state, it carries what a
// savepoint leaves out — records, barriers and watermarks in flight on the
// channels, half-aligned checkpoints, pending checkpoints and their
// acknowledgements, JobManager timers, the sources' cursors, the topics
// with the records typed in, the sinks' committed output and open
// transactions, the retained checkpoints (copied into the fork's own
// checkpoint storage), the cluster, counters, the command log, the virtual
// clock and, from a Stepper, the random number generator's state. The
// plain data is deep-copied by reflection (deepcopy.go), so a field added
// to a subtask or an operator is carried over without a line here.
//
// A fork of a Stepper is deterministic: stepped the same and given the same
// commands, it does exactly what the original does, event for event (its
// events are numbered on from the original's). So a copy kept at step N
// and stepped to step M shows what a replay from step 0 shows at M.

// Fork returns a new Stepper running a copy of this Stepper's job as it
// stands between two steps, paused, with its own directory (opts.Dir, or a
// temporary one removed by Close) and its own subscribers
// (opts.RecordEvents). The original is not disturbed.
func (s *Stepper) Fork(opts Options) (*Stepper, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	fk, err := forkCore(s.c, opts)
	if err != nil {
		return nil, err
	}
	f := &Stepper{c: fk.c, fifo: s.fifo, clock: s.clock, step: s.step, paused: true, speed: s.speed, batch: s.batch}
	state, err := s.pcg.MarshalBinary()
	if err == nil {
		f.pcg = &rand.PCG{}
		err = f.pcg.UnmarshalBinary(state)
	}
	if err == nil {
		err = fk.cp.copyInto(&f.timers, &s.timers)
	}
	if err == nil {
		err = fk.cp.copyInto(&f.jmq, &s.jmq)
	}
	if err != nil {
		fk.discard()
		return nil, fmt.Errorf("fork: %w", err)
	}
	f.rng = rand.New(f.pcg)
	f.adopt()
	return f, nil
}

// Fork returns a new, paused Stepper running a copy of this Live job as it
// stands now. The subtasks stop at a quiet point (between two inputs, their
// outputs sent) while the copy is made, then run on; the Live job loses
// nothing. The fork's random choices start from the seed and the clock, as
// after ToStepper.
func (l *Live) Fork(opts Options) (*Stepper, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.runningErr("fork"); err != nil {
		return nil, err
	}
	running := l.exCancel != nil
	l.detaching.Store(true)
	l.stopTasks(nil)
	l.detaching.Store(false)
	if ex := l.c.ex; ex != nil {
		for _, t := range ex.tasks {
			l.sendLeftovers(t)
		}
	}
	now := l.now()
	fk, err := forkCore(l.c, opts)
	if err == nil {
		pcg := rand.NewPCG(uint64(l.c.spec.Seed), uint64(now))
		f := &Stepper{c: fk.c, rng: rand.New(pcg), pcg: pcg, fifo: l.c.spec.Runtime.FIFO, speed: 1, paused: true, clock: now}
		l.tmu.Lock()
		err = fk.cp.copyInto(&f.timers, &l.timers)
		l.tmu.Unlock()
		var queue []liveItem
		if err == nil {
			l.qmu.Lock()
			err = fk.cp.copyInto(&queue, &l.queue)
			l.qmu.Unlock()
		}
		if err == nil {
			c := fk.c
			c.measure, c.verbose = false, true
			c.batch = orDefault(c.spec.Runtime.BatchSize, 16)
			c.chanCap = orDefault(c.spec.Runtime.ChannelCapacity, 4)
			f.batch = c.batch
			if c.ex != nil {
				for _, t := range c.ex.tasks {
					t.verbose = true
				}
			}
			f.adopt()
			for _, it := range queue {
				if it.isMsg {
					f.sendJM(it.msg)
				} else {
					f.after(0, it.tm)
				}
			}
			defer func() { l.restartTasks(running) }()
			return f, nil
		}
		fk.discard()
	}
	l.restartTasks(running)
	return nil, fmt.Errorf("fork: %w", err)
}

// sendLeftovers sends what a subtask stopped mid-output had not sent yet
// (its goroutine is stopped): elements into their channels (over capacity
// if need be, as a handoff does), messages and acknowledgements to the
// JobManager, events to subscribers.
func (l *Live) sendLeftovers(t *subtask) {
	for _, it := range t.outbox {
		it.ch.push(it.e, 0)
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
		} else {
			l.sendJM(a.finish())
		}
	}
	t.acks = t.acks[:0]
	l.c.flushTaskEvents(t)
}

// restartTasks runs the execution's subtask goroutines again after a fork
// stopped them (if they ran).
func (l *Live) restartTasks(running bool) {
	if !running || l.c.ex == nil {
		return
	}
	l.startTasks(l.c.ex)
	for _, t := range l.c.ex.tasks {
		l.wake(t)
	}
}

// adopt makes f the driver of its core.
func (f *Stepper) adopt() {
	c := f.c
	c.drv = f
	c.stepFn = func() int64 { return f.step }
}

// forked is a copied core and the copier that made it, which maps the
// original's subtasks and channels to the copy's.
type forked struct {
	c  *core
	cp *copier
}

// discard closes a copy that never got a driver.
func (fk *forked) discard() {
	if ex := fk.c.ex; ex != nil {
		for _, t := range ex.tasks {
			t.close()
		}
	}
	fk.c.cleanup()
}

// forkCore copies c (its driver quiet: no subtask handling an input) into
// a new core in its own directory, without a driver.
func forkCore(c *core, opts Options) (_ *forked, err error) {
	dir, own := opts.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "statelab-engine-"); err != nil {
			return nil, fmt.Errorf("fork: create engine directory: %w", err)
		}
		own = true
	}
	var backends []state.KeyedBackend
	defer func() {
		if err != nil {
			for _, b := range backends {
				_ = b.Close()
			}
			if own {
				_ = os.RemoveAll(dir)
			}
		}
	}()
	rebase := func(p string) string {
		if rel, ok := strings.CutPrefix(p, c.dir); ok && p != "" {
			return filepath.Join(dir, rel)
		}
		return p
	}
	cp := newCopier()
	nc := &core{}
	cp.seed(c, nc)
	// The driver is not copied (the caller copies what the fork needs of
	// it): a reference to it becomes a nil one.
	if c.drv != nil {
		cp.memo[memoKeyOf(c.drv)] = reflect.Zero(reflect.TypeOf(c.drv))
	}
	b := newBus()
	b.seq.Store(c.bus.seq.Load())
	b.record = opts.RecordEvents
	cp.seed(c.bus, b)
	st, err := state.CloneStorage(c.storage, filepath.Join(dir, "checkpoints"))
	if err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	cp.seed(c.storage, st)
	if ex := c.ex; ex != nil {
		for _, t := range ex.tasks {
			if t.keyed == nil || t.closed {
				continue
			}
			cfg := state.KeyedBackendConfig{Kind: t.keyed.Kind(), Name: t.name, MaxParallelism: t.keyed.MaxParallelism(),
				KeyGroupRange: t.keyed.KeyGroupRange(), Incremental: c.spec.Checkpointing.Incremental, Logger: c.logger,
				KeyRenderer: func(b []byte) string { return string(b) }}
			if cfg.Kind == state.Pebble {
				cfg.Dir = rebase(t.localDir)
			}
			nb, err := state.CloneKeyedBackend(t.keyed, cfg)
			if err != nil {
				return nil, fmt.Errorf("fork %s: %w", t.name, err)
			}
			backends = append(backends, nb)
			cp.seed(t.keyed, nb)
		}
	}
	// The ground truth is replaced, never changed, when a topic grows: the
	// copy shares what was computed.
	for _, tr := range c.truthCache {
		cp.share(tr.exact)
		cp.share(tr.finals)
	}
	if err := cp.copyInto(nc, c); err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	nc.dir, nc.ownDir, nc.drv, nc.stepFn = dir, own, nil, nil
	if opts.Logger != nil {
		nc.logger = opts.Logger
	}
	for _, tm := range nc.tms {
		tm.localDir = rebase(tm.localDir)
	}
	if ex := nc.ex; ex != nil {
		for _, t := range ex.tasks {
			t.localDir = rebase(t.localDir)
			// A state-inspector question of the original's viewer has
			// nobody to answer in the copy.
			t.ctl = slices.DeleteFunc(t.ctl, func(m control) bool { return m.kind == ctlInspect })
			// A deployment in flight opens its state on the copy's disk.
			for i := range t.ctl {
				if t.ctl[i].localDir != "" {
					t.ctl[i].localDir = rebase(t.ctl[i].localDir)
				}
			}
		}
	}
	return &forked{c: nc, cp: cp}, nil
}

// copyTo copies a sink's external system for a fork without copying what
// it has committed: a chunk of committed records is only ever appended to,
// so the copy shares every chunk, each cut to its length (an append by the
// copy allocates its own array, an append by the original writes past
// what the copy sees). The committed output's multiset is left to be
// counted again when the copy is first compared. Together they are most
// of a fork's memory in a class of forks (issue 17): a chunk holds room
// for sinkChunk records from its first one.
func (s *sinkStore) copyTo(cp *copier, dst any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := dst.(*sinkStore)
	cp.fieldsExcept(n, s, "chunks", "counts", "counted")
	if s.chunks != nil {
		n.chunks = make([][]Record, len(s.chunks))
		for i, ch := range s.chunks {
			n.chunks[i] = slices.Clip(ch)
		}
	}
	n.counts = map[outKey]int{}
}
