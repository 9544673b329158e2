package state

import (
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
)

// Copies of live state, for a job that forks: the engine copies a running
// job into a new, independent one (a classroom follower's own copy, a point
// of the timeline kept to seek from). The original is not disturbed: its
// figures (last snapshot, restore) stay as they were, and nothing it will
// do later depends on the copy.

// cloneTarget names the snapshot a copy is made through; it never reaches
// a checkpoint storage the job uses.
var cloneTarget = SnapshotTarget{CheckpointID: 1, Savepoint: true, Copy: true}

// CloneKeyedBackend returns an independent backend with b's state, made
// for cfg (the copy's own local directory for pebble; the same key-group
// range and max parallelism as b); the copy reports b's metrics.
// Incremental snapshots of the copy start afresh (its first one uploads
// every file), since its files are its own.
//
// A Pebble backend copied to a Pebble backend goes through a Pebble
// checkpoint into the copy's directory: SST files are hard-linked (they are
// never rewritten in place), so the copy costs a flush and a few small
// files, not a second copy of the state in memory — a classroom of forks
// of one run shares the original's files on disk. Every other pair goes
// through a full snapshot in memory, so both share nothing.
func CloneKeyedBackend(b KeyedBackend, cfg KeyedBackendConfig) (KeyedBackend, error) {
	if b.KeyGroupRange() != cfg.KeyGroupRange || b.MaxParallelism() != cfg.MaxParallelism {
		return nil, fmt.Errorf("%w: copy of range %v (max parallelism %d) asked for range %v (max parallelism %d)",
			ErrIncompatible, b.KeyGroupRange(), b.MaxParallelism(), cfg.KeyGroupRange, cfg.MaxParallelism)
	}
	if pb, ok := b.(*pebbleBackend); ok && cfg.Kind == Pebble {
		return clonePebble(pb, cfg)
	}
	return cloneThroughSnapshot(b, cfg)
}

// cloneThroughSnapshot copies b through a full snapshot in memory,
// restored into a backend made for cfg.
func cloneThroughSnapshot(b KeyedBackend, cfg KeyedBackendConfig) (KeyedBackend, error) {
	scratch, err := NewCheckpointStorage(StorageConfig{Kind: JobManagerStorage, JobID: "copy", MaxStateSize: 1 << 40})
	if err != nil {
		return nil, err
	}
	before := metricsOf(b)
	h, err := b.Snapshot(cloneTarget, scratch)
	setMetrics(b, before)
	if err != nil {
		return nil, fmt.Errorf("state: copy keyed backend: %w", err)
	}
	nb, err := RestoreKeyedBackend(cfg, scratch, []*KeyedStateHandle{h})
	if err != nil {
		return nil, fmt.Errorf("state: copy keyed backend: %w", err)
	}
	// A restore registers the states it finds entries of, in the order it
	// finds them; the copy's handles (copied from the original's) address
	// states by the original's ids, with its renderers: register every
	// state again, in id order, and check that the ids agree.
	if err := reregister(b, nb); err != nil {
		_ = nb.Close()
		return nil, fmt.Errorf("state: copy keyed backend: %w", err)
	}
	setMetrics(nb, before)
	return nb, nil
}

func reregister(from, to KeyedBackend) error {
	rf, err := rawOf(from)
	if err != nil {
		return err
	}
	rt, err := rawOf(to)
	if err != nil {
		return err
	}
	renders := renderersOf(rf)
	for _, s := range from.States() {
		var r entryRenderer
		if int(s.ID) < len(renders) {
			r = renders[s.ID]
		}
		id, err := rt.register(s.Name, s.Kind, r)
		if err != nil {
			return err
		}
		if id != s.ID {
			return fmt.Errorf("%w: state %q has id %d in the copy, %d in the original", ErrIncompatible, s.Name, id, s.ID)
		}
	}
	return nil
}

func renderersOf(b rawBackend) []entryRenderer {
	switch x := b.(type) {
	case *heapBackend:
		return x.render
	case *pebbleBackend:
		return x.render
	}
	return nil
}

func metricsOf(b KeyedBackend) BackendMetrics {
	switch x := b.(type) {
	case *heapBackend:
		return x.metrics
	case *pebbleBackend:
		x.mu.Lock()
		defer x.mu.Unlock()
		return x.metrics
	}
	return BackendMetrics{}
}

func setMetrics(b KeyedBackend, m BackendMetrics) {
	switch x := b.(type) {
	case *heapBackend:
		x.metrics = m
	case *pebbleBackend:
		x.mu.Lock()
		x.metrics = m
		x.mu.Unlock()
	}
}

// CloneStorage returns an independent copy of checkpoint storage s: the
// same retained checkpoints and savepoints, pending checkpoints' files and
// shared-file bookkeeping. A filesystem storage is copied into dir (the
// copy's own checkpoint directory, which must not be s's); jobmanager
// storage stays in memory and ignores dir. Call it while nothing writes to
// s (no file open for writing).
func CloneStorage(s CheckpointStorage, dir string) (CheckpointStorage, error) {
	cs, ok := s.(*checkpointStorage)
	if !ok {
		return nil, fmt.Errorf("state: %T is not a storage made by this package", s)
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	n := &checkpointStorage{cfg: cs.cfg,
		completed: slices.Clone(cs.completed), savepoints: slices.Clone(cs.savepoints),
		shared: map[int64][]string{}, sharedRefs: maps.Clone(cs.sharedRefs), pending: map[int64]map[string]bool{},
		names: maps.Clone(cs.names), sizes: maps.Clone(cs.sizes), written: cs.written}
	for id, f := range cs.shared {
		n.shared[id] = slices.Clone(f)
	}
	for id, f := range cs.pending {
		n.pending[id] = maps.Clone(f)
	}
	n.read.Store(cs.read.Load())
	switch b := cs.blobs.(type) {
	case *memBlobs:
		b.mu.Lock()
		// Committed blobs are never written again: the copy may share them.
		n.blobs = &memBlobs{files: maps.Clone(b.files)}
		b.mu.Unlock()
	case *fsBlobs:
		if dir == "" {
			return nil, fmt.Errorf("state: copy filesystem checkpoint storage: no directory for the copy")
		}
		n.cfg.Dir = dir
		root := filepath.Join(dir, cs.cfg.JobID)
		if filepath.Clean(root) == filepath.Clean(b.root) {
			return nil, fmt.Errorf("state: copy filesystem checkpoint storage: %s is the original's directory", root)
		}
		if err := copyTree(b.fsys, b.root, root); err != nil {
			return nil, fmt.Errorf("state: copy filesystem checkpoint storage: %w", err)
		}
		nb, err := newFSBlobs(b.fsys, root)
		if err != nil {
			return nil, err
		}
		n.blobs = nb
	default:
		return nil, fmt.Errorf("state: cannot copy blob store %T", cs.blobs)
	}
	return n, nil
}

// copyTree copies the regular files under src into dst on fsys (hard
// links where the file system allows: checkpoint files are never rewritten
// in place). An error names the file.
func copyTree(fsys FileSystem, src, dst string) error {
	return fsys.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return fsys.MkdirAll(to)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if fsys.Link(p, to) == nil {
			return nil
		}
		if err := copyFile(fsys, p, to); err != nil {
			return fmt.Errorf("copy %s: %w", p, err)
		}
		return nil
	})
}

func copyFile(fsys FileSystem, from, to string) error {
	in, err := fsys.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fsys.Create(to)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fsys.Remove(to)
	}
	return err
}
