//go:build !js

package state

import (
	"errors"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// pebbleFS is the vfs.FS a pebble backend opens its DB on: the real disk
// (vfs.Default), through the fault injection of the backend's FileSystem
// when that is an ErrorFS. Pebble's own files — SSTs written by flushes and
// compactions, the MANIFEST, the files of a local Pebble checkpoint — then
// fail as the injector says, like every other file of the state layer.
// Pebble retries a failed flush or compaction in the background, so a
// fault that lasts on the DB's own directory stalls writes once the
// memtables are full (as a full disk stalls RocksDB); a fault on a local
// checkpoint's files fails that checkpoint.
func pebbleFS(fsys FileSystem) vfs.FS {
	if e, ok := fsys.(*ErrorFS); ok {
		return &faultVFS{FS: pebbleFS(e.Base), e: e}
	}
	return vfs.Default
}

// faultVFS asks an ErrorFS's injector before each operation, as Pebble's
// vfs/errorfs does with its own injectors.
type faultVFS struct {
	vfs.FS
	e *ErrorFS
}

func (f *faultVFS) Unwrap() vfs.FS { return f.FS }

func (f *faultVFS) file(file vfs.File, name string, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, name: name, e: f.e}, nil
}

func (f *faultVFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if err := f.e.check(OpCreate, name); err != nil {
		return nil, err
	}
	file, err := f.FS.Create(name, c)
	return f.file(file, name, err)
}

func (f *faultVFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := f.e.check(OpOpen, name); err != nil {
		return nil, err
	}
	file, err := f.FS.Open(name, opts...)
	return f.file(file, name, err)
}

func (f *faultVFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := f.e.check(OpOpen, name); err != nil {
		return nil, err
	}
	file, err := f.FS.OpenReadWrite(name, c, opts...)
	return f.file(file, name, err)
}

func (f *faultVFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if err := f.e.check(OpCreate, newname); err != nil {
		return nil, err
	}
	file, err := f.FS.ReuseForWrite(oldname, newname, c)
	return f.file(file, newname, err)
}

func (f *faultVFS) Link(oldname, newname string) error {
	if err := f.e.check(OpLink, newname); err != nil {
		return err
	}
	return f.FS.Link(oldname, newname)
}

func (f *faultVFS) Rename(oldname, newname string) error {
	if err := f.e.check(OpRename, newname); err != nil {
		return err
	}
	return f.FS.Rename(oldname, newname)
}

func (f *faultVFS) Remove(name string) error {
	if err := f.e.check(OpRemove, name); err != nil {
		return err
	}
	return f.FS.Remove(name)
}

func (f *faultVFS) RemoveAll(name string) error {
	if err := f.e.check(OpRemove, name); err != nil {
		return err
	}
	return f.FS.RemoveAll(name)
}

func (f *faultVFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := f.e.check(OpMkdir, dir); err != nil {
		return err
	}
	return f.FS.MkdirAll(dir, perm)
}

func (f *faultVFS) List(dir string) ([]string, error) {
	if err := f.e.check(OpReadDir, dir); err != nil {
		return nil, err
	}
	return f.FS.List(dir)
}

func (f *faultVFS) Stat(name string) (vfs.FileInfo, error) {
	if err := f.e.check(OpStat, name); err != nil {
		return nil, err
	}
	return f.FS.Stat(name)
}

// faultFile is a Pebble file whose reads, writes and syncs ask the
// injector; a PartialWrite lets its bytes through first, as ErrorFS does.
type faultFile struct {
	vfs.File
	name string
	e    *ErrorFS
}

func (f *faultFile) writeFault(p []byte, write func([]byte) (int, error)) (int, error) {
	err := f.e.check(OpWrite, f.name)
	if err == nil {
		return write(p)
	}
	var pw PartialWrite
	if errors.As(err, &pw) && pw.N > 0 {
		n, werr := write(p[:min(pw.N, len(p))])
		if werr != nil {
			return n, werr
		}
		return n, err
	}
	return 0, err
}

func (f *faultFile) Write(p []byte) (int, error) { return f.writeFault(p, f.File.Write) }

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	return f.writeFault(p, func(b []byte) (int, error) { return f.File.WriteAt(b, off) })
}

func (f *faultFile) Read(p []byte) (int, error) {
	if err := f.e.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.Read(p)
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.e.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *faultFile) Sync() error {
	if err := f.e.check(OpSync, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) SyncData() error {
	if err := f.e.check(OpSync, f.name); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *faultFile) SyncTo(length int64) (bool, error) {
	if err := f.e.check(OpSync, f.name); err != nil {
		return false, err
	}
	return f.File.SyncTo(length)
}
