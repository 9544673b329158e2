package state

import (
	"errors"
	"sync"
)

// AsyncSnapshot is a snapshot whose synchronous part is done: it sees
// exactly the state at the barrier. Finish does the rest (writing or
// uploading files) and may run on another goroutine while the task goes on
// processing records, as Flink runs a snapshot's asynchronous part. Call
// Finish or Cancel exactly once. Closing the backend cancels an AsyncSnapshot
// not yet finishing and waits for one that is.
type AsyncSnapshot interface {
	// Finish completes the snapshot and returns its durable handle.
	Finish() (*KeyedStateHandle, error)
	// Cancel gives up (the checkpoint was declined) and frees what the
	// synchronous part holds (a Pebble snapshot or a local checkpoint).
	Cancel()
}

// ErrSnapshotDone is returned by Finish when the snapshot was already
// finished, or cancelled (also by closing its backend).
var ErrSnapshotDone = errors.New("state: snapshot already finished or cancelled")

// doneSnapshot is an AsyncSnapshot whose work all happened synchronously.
type doneSnapshot struct {
	once sync.Once
	h    *KeyedStateHandle
}

func (d *doneSnapshot) Finish() (*KeyedStateHandle, error) {
	err := ErrSnapshotDone
	d.once.Do(func() { err = nil })
	if err != nil {
		return nil, err
	}
	return d.h, nil
}

func (d *doneSnapshot) Cancel() { d.once.Do(func() {}) }

// asyncSet tracks a backend's snapshots between StartSnapshot and the end of
// Finish or Cancel, so that Close never pulls the DB from under one.
type asyncSet struct {
	mu      sync.Mutex
	pending map[*asyncSnapshot]struct{}
	running sync.WaitGroup
}

type asyncSnapshot struct {
	set     *asyncSet
	run     func() (*KeyedStateHandle, error)
	release func()
	started bool // under set.mu
}

func (s *asyncSet) start(run func() (*KeyedStateHandle, error), release func()) AsyncSnapshot {
	a := &asyncSnapshot{set: s, run: run, release: release}
	s.mu.Lock()
	if s.pending == nil {
		s.pending = map[*asyncSnapshot]struct{}{}
	}
	s.pending[a] = struct{}{}
	s.mu.Unlock()
	return a
}

func (a *asyncSnapshot) Finish() (*KeyedStateHandle, error) {
	s := a.set
	s.mu.Lock()
	if _, ok := s.pending[a]; !ok || a.started {
		s.mu.Unlock()
		return nil, ErrSnapshotDone
	}
	a.started = true
	s.running.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, a)
		s.mu.Unlock()
		s.running.Done()
	}()
	return a.run()
}

func (a *asyncSnapshot) Cancel() {
	s := a.set
	s.mu.Lock()
	_, ok := s.pending[a]
	if !ok || a.started {
		s.mu.Unlock()
		return
	}
	delete(s.pending, a)
	s.mu.Unlock()
	a.release()
}

// closeAll cancels the snapshots not started and waits for the running ones.
func (s *asyncSet) closeAll() {
	s.mu.Lock()
	var cancel []*asyncSnapshot
	for a := range s.pending {
		if !a.started {
			cancel = append(cancel, a)
			delete(s.pending, a)
		}
	}
	s.mu.Unlock()
	for _, a := range cancel {
		a.release()
	}
	s.running.Wait()
}
