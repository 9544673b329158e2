package state

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// TaskLocalStore keeps task-local copies of checkpointed state files on one
// TaskManager's local disk, as Flink's TaskLocalStateStoreImpl does when
// state.backend.local-recovery is on. A checkpoint writes each state file
// twice — to checkpoint storage and to this store (Flink's duplicating
// checkpoint output stream) — and a restore on the same TaskManager reads
// the local copy; a file the store does not hold (a lost TaskManager's disk
// is wiped) is read from checkpoint storage instead.
//
// A local copy is kept under the path its checkpoint-storage copy has
// (chk-<n>/..., shared/...), so an incremental snapshot that reuses a
// shared file finds its local copy too. Local copies are an optimisation:
// a failure to write one never fails the checkpoint (Flink logs it), and a
// copy whose size differs from the handle's is not used.
type TaskLocalStore struct {
	fsys FileSystem
	root string
	seq  atomic.Int64
}

// NewTaskLocalStore is the store rooted at dir on fsys (nil: the real disk).
func NewTaskLocalStore(fsys FileSystem, dir string) *TaskLocalStore {
	return &TaskLocalStore{fsys: orOS(fsys), root: dir}
}

// Dir is the store's directory.
func (l *TaskLocalStore) Dir() string { return l.root }

func (l *TaskLocalStore) abs(p string) string { return filepath.Join(l.root, filepath.FromSlash(p)) }

// RecoveryStats counts the bytes a restore read from task-local copies and
// from checkpoint storage.
type RecoveryStats struct {
	Local, Remote atomic.Int64
}

// Duplicating returns primary with every file CreateFile writes also copied
// into the store.
func (l *TaskLocalStore) Duplicating(primary CheckpointStorage) CheckpointStorage {
	return &dupStorage{CheckpointStorage: primary, l: l}
}

// Prioritized returns primary with OpenFile reading the store's copy of a
// file first (Flink's PrioritizedOperatorSubtaskState: local state first,
// then the job manager's); stats counts what each side gave.
func (l *TaskLocalStore) Prioritized(primary CheckpointStorage, stats *RecoveryStats) CheckpointStorage {
	return &prioStorage{CheckpointStorage: primary, l: l, stats: stats}
}

// Retain deletes every local copy that keep does not list, as
// TaskLocalStateStoreImpl.confirmCheckpoint discards the local state of
// checkpoints older than the confirmed one. Call it only while no
// checkpoint is being written.
func (l *TaskLocalStore) Retain(keep map[string]bool) error {
	var drop, dirs []string
	err := l.fsys.WalkDir(l.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if p != l.root {
				dirs = append(dirs, p)
			}
			return nil
		}
		rel, err := filepath.Rel(l.root, p)
		if err != nil {
			return err
		}
		if !keep[filepath.ToSlash(rel)] {
			drop = append(drop, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("state: scan task-local state %s: %w", l.root, err)
	}
	for _, p := range drop {
		if err := l.fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("state: discard task-local copy %s: %w", p, err)
		}
	}
	// Directories left empty go too, deepest first (a non-empty one stays).
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = l.fsys.Remove(dirs[i])
	}
	return nil
}

// Bytes is what the store holds.
func (l *TaskLocalStore) Bytes() int64 {
	var n int64
	_ = l.fsys.WalkDir(l.root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

type dupStorage struct {
	CheckpointStorage
	l *TaskLocalStore
}

func (d *dupStorage) CreateFile(target SnapshotTarget, scope Scope, name string) (FileWriter, error) {
	w, err := d.CheckpointStorage.CreateFile(target, scope, name)
	if err != nil {
		return nil, err
	}
	dw := &dupWriter{FileWriter: w, l: d.l}
	tmpDir := d.l.abs(".inprogress")
	if err := d.l.fsys.MkdirAll(tmpDir); err == nil {
		dw.tmp, dw.err = d.l.fsys.Create(filepath.Join(tmpDir, fmt.Sprintf("%d", d.l.seq.Add(1))))
	} else {
		dw.err = err
	}
	return dw, nil
}

// dupWriter writes to checkpoint storage and, best effort, to a local copy.
type dupWriter struct {
	FileWriter
	l   *TaskLocalStore
	tmp File
	err error
}

func (w *dupWriter) Write(p []byte) (int, error) {
	n, err := w.FileWriter.Write(p)
	if w.err == nil && w.tmp != nil {
		_, w.err = w.tmp.Write(p[:n])
	}
	return n, err
}

func (w *dupWriter) Commit() (FileRef, error) {
	ref, err := w.FileWriter.Commit()
	if w.tmp == nil {
		return ref, err
	}
	name := w.tmp.Name()
	cerr := w.tmp.Close()
	if err != nil || w.err != nil || cerr != nil || checkRelPath(ref.Path) != nil {
		_ = w.l.fsys.Remove(name)
		return ref, err
	}
	dst := w.l.abs(ref.Path)
	if e := w.l.fsys.MkdirAll(filepath.Dir(dst)); e != nil {
		_ = w.l.fsys.Remove(name)
		return ref, nil
	}
	if e := w.l.fsys.Rename(name, dst); e != nil {
		_ = w.l.fsys.Remove(name)
	}
	return ref, nil
}

func (w *dupWriter) Abort() {
	w.FileWriter.Abort()
	if w.tmp != nil {
		name := w.tmp.Name()
		_ = w.tmp.Close()
		_ = w.l.fsys.Remove(name)
	}
}

type prioStorage struct {
	CheckpointStorage
	l     *TaskLocalStore
	stats *RecoveryStats
}

func (p *prioStorage) OpenFile(ref FileRef) (FileReader, error) {
	if checkRelPath(ref.Path) == nil && !strings.HasPrefix(path.Base(ref.Path), ".") {
		if f, err := p.l.fsys.Open(p.l.abs(ref.Path)); err == nil {
			if st, err := f.Stat(); err == nil && st.Size() == ref.Size {
				return &countingReader{r: fsReader{File: f, size: st.Size()}, total: &p.stats.Local}, nil
			}
			_ = f.Close()
		}
	}
	r, err := p.CheckpointStorage.OpenFile(ref)
	if err != nil {
		return nil, err
	}
	return &countingReader{r: r, total: &p.stats.Remote}, nil
}

// countingReader counts the bytes read through it into total.
type countingReader struct {
	r interface {
		ReadAt(p []byte, off int64) (int, error)
		Size() int64
		Close() error
	}
	n     atomic.Int64
	total *atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	c.total.Add(int64(n))
	return n, err
}
func (c *countingReader) Size() int64      { return c.r.Size() }
func (c *countingReader) BytesRead() int64 { return c.n.Load() }
func (c *countingReader) Close() error     { return c.r.Close() }
