package state

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// FileSystem is the one file system interface the state package's files go
// through: the filesystem checkpoint storage, the TaskManagers' task-local
// state copies and the local directories it removes, copies of storage and
// backends for a fork (clone.go), and the pebble backend's own file work.
// Pebble's LSM files go through Pebble's vfs.FS, which pebbleFS
// (pebble_vfs.go) makes from this one, so an ErrorFS's faults reach them
// too. OSFS is the real disk; ErrorFS wraps any FS and
// injects faults, in the manner of Pebble's vfs/errorfs, so a test breaks a
// disk in a few lines instead of deleting directories.
type FileSystem interface {
	// Create creates name for writing; it fails if name exists.
	Create(name string) (File, error)
	// Open opens name for reading.
	Open(name string) (File, error)
	Rename(oldname, newname string) error
	// Link makes newname a hard link to oldname (a file never rewritten
	// in place: checkpoint files, SSTs); callers copy when it fails.
	Link(oldname, newname string) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	RemoveAll(name string) error
	MkdirAll(dir string) error
	// Stat describes name (fs.ErrNotExist when it is not there).
	Stat(name string) (fs.FileInfo, error)
	// WalkDir walks the tree at root as filepath.WalkDir does.
	WalkDir(root string, fn fs.WalkDirFunc) error
	// ReadDir lists dir as os.ReadDir does.
	ReadDir(dir string) ([]fs.DirEntry, error)
	// SyncDir makes the renames in dir durable.
	SyncDir(dir string) error
}

// File is an open file of a FileSystem.
type File interface {
	io.Reader
	io.Writer
	io.ReaderAt
	io.Closer
	Sync() error
	Stat() (fs.FileInfo, error)
	Name() string
}

// OSFS is the real disk.
var OSFS FileSystem = osFS{}

type osFS struct{}

func (osFS) Create(name string) (File, error) {
	return os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
}
func (osFS) Open(name string) (File, error)        { return os.Open(name) }
func (osFS) Rename(oldname, newname string) error  { return os.Rename(oldname, newname) }
func (osFS) Link(oldname, newname string) error    { return os.Link(oldname, newname) }
func (osFS) Remove(name string) error              { return os.Remove(name) }
func (osFS) RemoveAll(name string) error           { return os.RemoveAll(name) }
func (osFS) MkdirAll(dir string) error             { return os.MkdirAll(dir, 0o755) }
func (osFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }
func (osFS) WalkDir(root string, fn fs.WalkDirFunc) error {
	return filepath.WalkDir(root, fn)
}
func (osFS) ReadDir(dir string) ([]fs.DirEntry, error) { return os.ReadDir(dir) }
func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func orOS(f FileSystem) FileSystem {
	if f == nil {
		return OSFS
	}
	return f
}

// Op is a file operation an ErrorFS may fail.
type Op string

// The operations.
const (
	OpCreate  Op = "create"
	OpOpen    Op = "open"
	OpWrite   Op = "write"
	OpRead    Op = "read"
	OpSync    Op = "sync"
	OpRename  Op = "rename"
	OpLink    Op = "link"
	OpRemove  Op = "remove"
	OpMkdir   Op = "mkdir"
	OpStat    Op = "stat"
	OpWalk    Op = "walk"
	OpReadDir Op = "readdir"
	OpSyncDir Op = "syncdir"
)

// ErrInjected is the error an ErrorFS returns for an injected fault.
var ErrInjected = errors.New("injected fault")

// Injector decides whether operation op on path fails: a nil error lets it
// run. For OpWrite, an error wrapping PartialWrite writes that many bytes
// first, then fails (a short write: the disk filled up mid-file).
type Injector func(op Op, path string) error

// PartialWrite is a write fault that lets N bytes through before it fails.
type PartialWrite struct{ N int }

func (p PartialWrite) Error() string {
	return fmt.Sprintf("%v: short write after %d bytes", ErrInjected, p.N)
}
func (p PartialWrite) Unwrap() error { return ErrInjected }

// ErrorFS wraps Base and asks Inject before every operation, as Pebble's
// errorfs.FS does. Set Inject (under the FS's lock, with SetInjector) at
// any time; nil injects nothing.
type ErrorFS struct {
	Base FileSystem
	mu   sync.Mutex
	in   Injector
}

// NewErrorFS wraps base (nil: the real disk).
func NewErrorFS(base FileSystem) *ErrorFS { return &ErrorFS{Base: orOS(base)} }

// SetInjector replaces the injector (nil: no faults).
func (e *ErrorFS) SetInjector(in Injector) {
	e.mu.Lock()
	e.in = in
	e.mu.Unlock()
}

func (e *ErrorFS) check(op Op, path string) error {
	e.mu.Lock()
	in := e.in
	e.mu.Unlock()
	if in == nil {
		return nil
	}
	if err := in(op, path); err != nil {
		return &fs.PathError{Op: string(op), Path: path, Err: err}
	}
	return nil
}

func (e *ErrorFS) Create(name string) (File, error) {
	if err := e.check(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := e.Base.Create(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, e: e}, nil
}

func (e *ErrorFS) Open(name string) (File, error) {
	if err := e.check(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.Base.Open(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, e: e}, nil
}

func (e *ErrorFS) Rename(oldname, newname string) error {
	if err := e.check(OpRename, newname); err != nil {
		return err
	}
	return e.Base.Rename(oldname, newname)
}

func (e *ErrorFS) Link(oldname, newname string) error {
	if err := e.check(OpLink, newname); err != nil {
		return err
	}
	return e.Base.Link(oldname, newname)
}

func (e *ErrorFS) Remove(name string) error {
	if err := e.check(OpRemove, name); err != nil {
		return err
	}
	return e.Base.Remove(name)
}

func (e *ErrorFS) RemoveAll(name string) error {
	if err := e.check(OpRemove, name); err != nil {
		return err
	}
	return e.Base.RemoveAll(name)
}

func (e *ErrorFS) MkdirAll(dir string) error {
	if err := e.check(OpMkdir, dir); err != nil {
		return err
	}
	return e.Base.MkdirAll(dir)
}

func (e *ErrorFS) Stat(name string) (fs.FileInfo, error) {
	if err := e.check(OpStat, name); err != nil {
		return nil, err
	}
	return e.Base.Stat(name)
}

func (e *ErrorFS) WalkDir(root string, fn fs.WalkDirFunc) error {
	if err := e.check(OpWalk, root); err != nil {
		return err
	}
	return e.Base.WalkDir(root, fn)
}

func (e *ErrorFS) ReadDir(dir string) ([]fs.DirEntry, error) {
	if err := e.check(OpReadDir, dir); err != nil {
		return nil, err
	}
	return e.Base.ReadDir(dir)
}

func (e *ErrorFS) SyncDir(dir string) error {
	if err := e.check(OpSyncDir, dir); err != nil {
		return err
	}
	return e.Base.SyncDir(dir)
}

type errorFile struct {
	File
	e *ErrorFS
}

func (f *errorFile) Write(p []byte) (int, error) {
	if err := f.e.check(OpWrite, f.Name()); err != nil {
		var pw PartialWrite
		if errors.As(err, &pw) && pw.N > 0 {
			n, werr := f.File.Write(p[:min(pw.N, len(p))])
			if werr != nil {
				return n, werr
			}
			return n, err
		}
		return 0, err
	}
	return f.File.Write(p)
}

func (f *errorFile) Read(p []byte) (int, error) {
	if err := f.e.check(OpRead, f.Name()); err != nil {
		return 0, err
	}
	return f.File.Read(p)
}

func (f *errorFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.e.check(OpRead, f.Name()); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *errorFile) Sync() error {
	if err := f.e.check(OpSync, f.Name()); err != nil {
		return err
	}
	return f.File.Sync()
}
