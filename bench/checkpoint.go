package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// CheckpointRound is one checkpoint taken after ChangedKeys keys changed, on
// two Pebble backends holding the same state: one snapshotting
// incrementally (Flink's state.backend.incremental: true), one writing a
// full snapshot every time.
type CheckpointRound struct {
	CheckpointID int64
	ChangedKeys  int
	// IncrementalBytes is what the incremental checkpoint uploaded (Flink's
	// "Checkpointed Data Size"); IncrementalStateSize is all the files it
	// refers to ("Full Checkpoint Data Size").
	IncrementalBytes     int64
	IncrementalStateSize int64
	IncrementalTime      time.Duration
	// FullBytes is the full snapshot of the same state; FullTime its time.
	FullBytes int64
	FullTime  time.Duration
}

// CheckpointBench is a pair of Pebble backends with keys keys, each with
// its own filesystem checkpoint storage, ready to checkpoint round after
// round. Close it.
type CheckpointBench struct {
	keys        int
	maxP        int
	dir         string
	incremental backendAndStorage
	full        backendAndStorage
	nextID      int64
	round       int
}

type backendAndStorage struct {
	b     state.KeyedBackend
	v     state.ValueState[int64]
	store state.CheckpointStorage
}

// NewCheckpointBench fills both backends with keys keys (values = key
// index) and takes checkpoint 1 on both, so the next round measures what a
// checkpoint after a small change costs. dir is a scratch directory.
func NewCheckpointBench(keys int, dir string) (*CheckpointBench, error) {
	if keys < 100 {
		return nil, fmt.Errorf("bench: a checkpoint case needs at least 100 keys to change 1 %% of them (got %d)", keys)
	}
	c := &CheckpointBench{keys: keys, maxP: rescale.DefaultMaxParallelism(1), dir: dir, nextID: 1}
	var err error
	if c.incremental, err = c.open("incremental", true); err == nil {
		c.full, err = c.open("full", false)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	for i := range keys {
		for _, bs := range []backendAndStorage{c.incremental, c.full} {
			if err := put(bs, c.maxP, i, int64(i)); err != nil {
				c.Close()
				return nil, err
			}
		}
	}
	if _, err := c.checkpoint(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *CheckpointBench) open(name string, incremental bool) (backendAndStorage, error) {
	b, err := state.NewKeyedBackend(state.KeyedBackendConfig{Kind: state.Pebble, Name: "count#0",
		Dir: filepath.Join(c.dir, name, "local"), MaxParallelism: c.maxP,
		KeyGroupRange: rescale.NewKeyGroupRange(0, c.maxP-1), Incremental: incremental})
	if err != nil {
		return backendAndStorage{}, fmt.Errorf("bench: open %s backend: %w", name, err)
	}
	v, err := state.Value(b, "count", state.Int64Codec)
	if err != nil {
		b.Close()
		return backendAndStorage{}, err
	}
	store, err := state.NewCheckpointStorage(state.StorageConfig{Kind: state.FileSystemStorage,
		JobID: "bench-" + name, Dir: filepath.Join(c.dir, name, "checkpoints"), Retained: 2})
	if err != nil {
		b.Close()
		return backendAndStorage{}, fmt.Errorf("bench: open %s checkpoint storage: %w", name, err)
	}
	return backendAndStorage{b: b, v: v, store: store}, nil
}

func put(bs backendAndStorage, maxP, i int, v int64) error {
	k := KeyName(i)
	if err := bs.b.SetCurrentKey([]byte(k), rescale.KeyGroupForString(k, maxP)); err != nil {
		return err
	}
	return bs.v.Update(v)
}

// Round changes 1 % of the keys (a different 1 % each round, spread over
// all key groups) on both backends and checkpoints both.
func (c *CheckpointBench) Round() (CheckpointRound, error) {
	c.round++
	changed := 0
	for i := c.round % 100; i < c.keys; i += 100 {
		for _, bs := range []backendAndStorage{c.incremental, c.full} {
			if err := put(bs, c.maxP, i, int64(c.round)*int64(c.keys)+int64(i)); err != nil {
				return CheckpointRound{}, err
			}
		}
		changed++
	}
	r, err := c.checkpoint()
	r.ChangedKeys = changed
	return r, err
}

func (c *CheckpointBench) checkpoint() (CheckpointRound, error) {
	id := c.nextID
	c.nextID++
	r := CheckpointRound{CheckpointID: id}
	hi, ti, err := snapshotAndComplete(c.incremental, id)
	if err != nil {
		return r, fmt.Errorf("bench: incremental checkpoint %d: %w", id, err)
	}
	hf, tf, err := snapshotAndComplete(c.full, id)
	if err != nil {
		return r, fmt.Errorf("bench: full checkpoint %d: %w", id, err)
	}
	r.IncrementalBytes, r.IncrementalStateSize, r.IncrementalTime = hi.CheckpointedSize, hi.StateSize, ti
	r.FullBytes, r.FullTime = hf.CheckpointedSize, tf
	return r, nil
}

// snapshotAndComplete times the synchronous snapshot (for Pebble: flush,
// Pebble checkpoint, upload) and then completes the checkpoint in storage,
// as the coordinator would after every subtask acknowledged.
func snapshotAndComplete(bs backendAndStorage, id int64) (*state.KeyedStateHandle, time.Duration, error) {
	start := time.Now()
	h, err := bs.b.Snapshot(state.SnapshotTarget{CheckpointID: id}, bs.store)
	elapsed := time.Since(start)
	if err != nil {
		return nil, 0, err
	}
	meta := &state.CheckpointMetadata{JobID: bs.store.JobID(), CheckpointID: id, Operators: []state.OperatorState{{
		OperatorID: "count", Parallelism: 1, MaxParallelism: h.MaxParallelism,
		Subtasks: []state.SubtaskState{{Subtask: 0, Keyed: h}},
	}}}
	if _, err := bs.store.CompleteCheckpoint(meta); err != nil {
		return nil, 0, err
	}
	bs.b.NotifyCheckpointComplete(id)
	return h, elapsed, nil
}

// Close closes both backends and removes the scratch directory.
func (c *CheckpointBench) Close() error {
	for _, bs := range []backendAndStorage{c.incremental, c.full} {
		if bs.b != nil {
			bs.b.Close()
		}
	}
	return os.RemoveAll(c.dir)
}
