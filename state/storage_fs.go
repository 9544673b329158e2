package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// fsBlobs keeps files in a directory, the job's directory of a
// FileSystemCheckpointStorage: chk-<n>/, shared/, taskowned/.
type fsBlobs struct {
	fsys FileSystem // every file operation goes through it (fs.go)
	root string
	seq  atomic.Int64 // temporary names; unique within the process
}

func newFSBlobs(fsys FileSystem, root string) (*fsBlobs, error) {
	fsys = orOS(fsys)
	for _, d := range []string{root, filepath.Join(root, "shared"), filepath.Join(root, "taskowned")} {
		if err := fsys.MkdirAll(d); err != nil {
			return nil, fmt.Errorf("state: create checkpoint directory: %w", err)
		}
	}
	return &fsBlobs{fsys: fsys, root: root}, nil
}

func (f *fsBlobs) abs(p string) string { return filepath.Join(f.root, filepath.FromSlash(p)) }

type fsTemp struct {
	f    *fsBlobs
	file File
}

// newTemp creates a hidden temporary file in dir; commit syncs it and renames
// it into place, so a reader never sees a half-written file under a real name.
func (f *fsBlobs) newTemp(dir string) (tempBlob, error) {
	d := f.abs(dir)
	if err := f.fsys.MkdirAll(d); err != nil {
		return nil, err
	}
	name := filepath.Join(d, fmt.Sprintf(".inprogress-%d-%d", os.Getpid(), f.seq.Add(1)))
	file, err := f.fsys.Create(name)
	if err != nil {
		return nil, err
	}
	return &fsTemp{f: f, file: file}, nil
}

func (t *fsTemp) Write(p []byte) (int, error) { return t.file.Write(p) }

func (t *fsTemp) abort() {
	name := t.file.Name()
	t.file.Close()
	t.f.fsys.Remove(name)
}

func (t *fsTemp) commit(p string) error {
	name := t.file.Name()
	if err := t.file.Sync(); err != nil {
		t.abort()
		return err
	}
	if err := t.file.Close(); err != nil {
		t.f.fsys.Remove(name)
		return err
	}
	dst := t.f.abs(p)
	if err := t.f.fsys.MkdirAll(filepath.Dir(dst)); err != nil {
		t.f.fsys.Remove(name)
		return err
	}
	if err := t.f.fsys.Rename(name, dst); err != nil {
		t.f.fsys.Remove(name)
		return err
	}
	return t.f.fsys.SyncDir(filepath.Dir(dst))
}

type fsReader struct {
	File
	size int64
}

func (r fsReader) Size() int64 { return r.size }

func (f *fsBlobs) open(p string) (blobReader, error) {
	file, err := f.fsys.Open(f.abs(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrMissing, p)
	}
	if err != nil {
		return nil, fmt.Errorf("state: open %s: %w", p, err)
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("state: stat %s: %w", p, err)
	}
	return fsReader{File: file, size: st.Size()}, nil
}

func (f *fsBlobs) remove(p string) error {
	if err := f.fsys.Remove(f.abs(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (f *fsBlobs) removeDir(dir string) error { return f.fsys.RemoveAll(f.abs(dir)) }

func (f *fsBlobs) exists(p string) bool {
	_, err := f.fsys.Stat(f.abs(p))
	return err == nil
}

func (f *fsBlobs) list() (map[string]int64, error) {
	out := map[string]int64{}
	err := f.fsys.WalkDir(f.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".inprogress-") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(f.root, p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = info.Size()
		return nil
	})
	return out, err
}
