package savepoint

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// LoadFiles reads the state files the metadata points at from fsys, the
// savepoint's or checkpoint's directory, so their values can be decoded like
// inline state: RelativeFileStateHandle paths (a savepoint keeps each
// subtask's state file beside _metadata when it is too large to inline) and,
// when root is the directory's absolute local path, the FileStateHandle paths
// that lie inside it (a retained checkpoint's exclusive files). Only paths
// inside fsys are opened (fs.ValidPath; give an os.Root's FS so that symbolic
// links cannot lead out either). A file is read only when its size is the one
// the handle records, and at most budget bytes in all. What it read and what
// it could not are in m.LoadedFiles and m.FileProblems.
func (m *Metadata) LoadFiles(fsys fs.FS, root string, budget int64) {
	seen := map[*StreamHandle]bool{}
	load := func(h *StreamHandle) {
		if h == nil || h.Data != nil || seen[h] {
			return
		}
		seen[h] = true
		var name string
		switch h.Kind {
		case KindRelativeFile:
			name = path.Clean(strings.ReplaceAll(h.Path, "\\", "/"))
			if !fs.ValidPath(name) || name == "." {
				m.FileProblems = append(m.FileProblems, fmt.Sprintf("%s: a relative path that leaves the savepoint directory is not read", h.Path))
				return
			}
		case KindFile:
			if root == "" {
				return
			}
			local, ok := strings.CutPrefix(h.Path, "file:")
			if !ok && !strings.HasPrefix(h.Path, "/") {
				return // a remote file system (s3://, hdfs://, …)
			}
			rel, err := filepath.Rel(root, filepath.Clean(filepath.FromSlash(local)))
			if err != nil || !filepath.IsLocal(rel) {
				return // outside the directory: not this savepoint's to read
			}
			name = filepath.ToSlash(rel)
		default:
			return
		}
		if h.Size < 0 || h.Size > budget {
			m.FileProblems = append(m.FileProblems, fmt.Sprintf("%s: %d bytes is more than is left to read (%d)", h.Path, h.Size, budget))
			return
		}
		f, err := fsys.Open(name)
		if err != nil {
			m.FileProblems = append(m.FileProblems, fmt.Sprintf("%s: %v", h.Path, unwrap(err)))
			return
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, h.Size+1))
		switch {
		case err != nil:
			m.FileProblems = append(m.FileProblems, fmt.Sprintf("%s: %v", h.Path, unwrap(err)))
		case int64(len(b)) != h.Size:
			m.FileProblems = append(m.FileProblems, fmt.Sprintf("%s: the metadata says %d bytes, the file has a different size", h.Path, h.Size))
		default:
			h.Data, h.Loaded = b, true
			budget -= h.Size
			m.LoadedFiles++
		}
	}
	for i := range m.Operators {
		for j := range m.Operators[i].Subtasks {
			st := &m.Operators[i].Subtasks[j]
			for _, oh := range []*OperatorStateHandle{st.ManagedOperatorState, st.RawOperatorState} {
				if oh != nil {
					load(oh.Delegate)
				}
			}
			for _, kh := range []*KeyedHandle{st.ManagedKeyedState, st.RawKeyedState} {
				if kh != nil && len(kh.Offsets) > 0 {
					load(kh.Delegate)
				}
			}
		}
	}
}

func unwrap(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// MemFS is a read-only file system of files held in memory, by slash path:
// what the /savepoint page builds from the files of a picked directory.
type MemFS map[string][]byte

// Open implements fs.FS for regular files.
func (m MemFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	b, ok := m[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{name: path.Base(name), r: strings.NewReader(string(b)), size: int64(len(b))}, nil
}

type memFile struct {
	name string
	r    *strings.Reader
	size int64
}

func (f *memFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *memFile) Close() error               { return nil }
func (f *memFile) Stat() (fs.FileInfo, error) { return memInfo{f.name, f.size}, nil }

type memInfo struct {
	name string
	size int64
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
