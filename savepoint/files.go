package savepoint

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// LoadFiles reads, from dir (the savepoint's or checkpoint's directory), the
// state files the metadata points at, so their values can be decoded like
// inline state: RelativeFileStateHandle paths (savepoints keep each
// subtask's state file beside _metadata) and FileStateHandle paths that lie
// inside dir (a retained checkpoint's exclusive files). A path that would
// leave dir is never read. A file is read only when its size is the one the
// handle records, and at most budget bytes are read in all. It returns nothing;
// what it read and what it could not are in m.LoadedFiles and m.FileProblems.
func (m *Metadata) LoadFiles(dir string, budget int64) {
	root, err := filepath.Abs(dir)
	if err != nil {
		m.FileProblems = append(m.FileProblems, fmt.Sprintf("directory %s: %v", dir, err))
		return
	}
	seen := map[*StreamHandle]bool{}
	load := func(h *StreamHandle) {
		if h == nil || h.Data != nil || seen[h] {
			return
		}
		seen[h] = true
		var p string
		switch h.Kind {
		case KindRelativeFile:
			if !filepath.IsLocal(filepath.FromSlash(h.Path)) {
				m.FileProblems = append(m.FileProblems, fmt.Sprintf("%s: a relative path that leaves the savepoint directory is not read", h.Path))
				return
			}
			p = filepath.Join(root, filepath.FromSlash(h.Path))
		case KindFile:
			local, ok := strings.CutPrefix(h.Path, "file:")
			if !ok && !strings.HasPrefix(h.Path, "/") {
				return // a remote file system (s3://, hdfs://, …)
			}
			local = filepath.Clean(filepath.FromSlash(local))
			rel, err := filepath.Rel(root, local)
			if err != nil || !filepath.IsLocal(rel) {
				return // outside the directory: not this savepoint's to read
			}
			p = local
		default:
			return
		}
		if h.Size < 0 || h.Size > budget {
			m.FileProblems = append(m.FileProblems, fmt.Sprintf("%s: %d bytes is more than is left to read (%d)", h.Path, h.Size, budget))
			return
		}
		f, err := os.Open(p)
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
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
