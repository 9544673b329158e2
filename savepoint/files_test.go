package savepoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/statelab/statelab/rescale"
)

// A canonical savepoint whose keyed state is too large to inline keeps it in a
// file beside _metadata (RelativeFileStateHandle); given the directory,
// LoadFiles reads it and the values decode. Paths leaving the directory, files
// of another size and files elsewhere are not read.
func TestLoadFilesBesideMetadata(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	g := rescale.KeyGroupForString("apple", 128)
	data, offs := canonicalKeyGroups(map[int][]string{g: {"apple"}}, nil)
	if err := os.WriteFile(filepath.Join(dir, "kg-state"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "short"), data[:10], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	x := header(4, 9).i32(0).i32(1)
	opHead(x, 4, "", "", 1, 2, 4, 128)
	x.u8(0).i32(4)
	keyed := func(idx int32, stream func(*w)) {
		x.i32(idx).i32(0).i32(0).u8(codeSavepointKeyGroups).i32(0).i32(128)
		for i := range 128 {
			if i == g {
				x.i64(offs[g])
			} else {
				x.i64(0)
			}
		}
		stream(x)
		x.u8(0).i32(0).i32(0)
	}
	keyed(0, func(x *w) { x.u8(codeRelativeStream).utf("kg-state").i64(int64(len(data))) })
	keyed(1, func(x *w) {
		x.u8(codeRelativeStream).utf("../" + filepath.Base(outside) + "/secret").i64(int64(len(data)))
	})
	keyed(2, func(x *w) { x.u8(codeRelativeStream).utf("short").i64(int64(len(data))) })
	keyed(3, func(x *w) { x.u8(codeFileStream).i64(int64(len(data))).utf("file:" + filepath.Join(outside, "secret")) })
	x.raw([]byte{0xAC, 0xED, 0x00, 0x05, 0x70})
	m, err := Read(x.bytes())
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	m.LoadFiles(root.FS(), dir, 1<<20)
	if m.LoadedFiles != 1 || len(m.FileProblems) != 2 {
		t.Fatalf("loaded %d, problems %q", m.LoadedFiles, m.FileProblems)
	}
	if !strings.Contains(strings.Join(m.FileProblems, "\n"), "leaves the savepoint directory") {
		t.Errorf("%q", m.FileProblems)
	}
	st := m.Operators[0].Subtasks
	if st[1].ManagedKeyedState.Delegate.HasData() || st[3].ManagedKeyedState.Delegate.HasData() {
		t.Fatal("a file outside the savepoint directory was read")
	}
	v := DecodeKeyedState(st[0].ManagedKeyedState, 128)
	if v.NotDecoded != "" || v.States[0].Entries != 1 || v.States[0].Samples[0].Key != "apple" {
		t.Fatalf("%+v", v)
	}
	rep := NewReport(m)
	if k := rep.Operators[0].Subtasks[0].KeyedState[0]; k.Location != "kg-state" || k.Values == nil {
		t.Errorf("%+v", k)
	}
	// The page's in-memory directory reads the same file.
	m3, _ := Read(x.bytes())
	m3.LoadFiles(MemFS{"kg-state": data}, "", 1<<20)
	if m3.LoadedFiles != 1 || DecodeKeyedState(m3.Operators[0].Subtasks[0].ManagedKeyedState, 128).States[0].Entries != 1 {
		t.Errorf("in memory: loaded %d, problems %q", m3.LoadedFiles, m3.FileProblems)
	}
	// A budget smaller than the file reads nothing.
	m2, _ := Read(x.bytes())
	m2.LoadFiles(root.FS(), dir, 10)
	if m2.LoadedFiles != 0 {
		t.Errorf("read %d files over budget", m2.LoadedFiles)
	}
}
