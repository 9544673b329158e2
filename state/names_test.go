package state

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidDirName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"wordcount", true},
		{"chaos-wordcount", true},
		{"job_1.v2", true},
		{"", false},
		{".", false},
		{"..", false},
		{".hidden", false},
		{"word count", false},
		{"a/b", false},
		{`a\b`, false},
		{"../x", false},
		{"/etc", false},
		{"wörter", false},
		{string(make([]byte, 65)), false},
		{"a234567890123456789012345678901234567890123456789012345678901234", true}, // 64 characters
		{"a2345678901234567890123456789012345678901234567890123456789012345", false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.ok, ValidDirName(tc.name), "%q", tc.name)
	}
}

func TestSafeDirName(t *testing.T) {
	// Expected suffixes are the first 4 bytes of SHA-256 of the name,
	// computed independently: printf '%s' 'word count' | sha256sum.
	tests := []struct {
		name, want string
	}{
		{"wordcount", "wordcount"}, // already safe: kept
		{"word count", "word-count-16eea39c"},
		{"../x", "x-d6b96a97"},
		{"..", "job-5ec1f7e7"},
		{"/etc/passwd", "etc-passwd-74acf318"},
		{"", "job-e3b0c442"},
	}
	for _, tc := range tests {
		got := SafeDirName(tc.name)
		assert.Equal(t, tc.want, got, "%q", tc.name)
		assert.True(t, ValidDirName(got), "%q -> %q", tc.name, got)
	}
	// Names that differ only in unsafe characters stay apart.
	assert.NotEqual(t, SafeDirName("a b"), SafeDirName("a/b"))
	long := SafeDirName(string(make([]byte, 500)) + "x y")
	assert.LessOrEqual(t, len(long), 64)
	assert.True(t, ValidDirName(long))
}

// A job id that is not a plain directory name is refused with a message
// that says which characters are allowed; a dot-only id ("..") used to pass
// the character check and name the parent of the checkpoint directory.
func TestStorageRejectsUnsafeJobID(t *testing.T) {
	for _, id := range []string{"..", ".", "word count", "../x", "/abs", ".hidden"} {
		t.Run(id, func(t *testing.T) {
			dir := t.TempDir()
			_, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: id, Dir: filepath.Join(dir, "checkpoints")})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "letters A-Z and a-z, digits, '.', '_' and '-'")
			assert.Contains(t, err.Error(), "SafeDirName")
			entries, _ := os.ReadDir(dir)
			assert.Empty(t, entries, "nothing is created for a refused id")
		})
	}
	s, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: SafeDirName("word count"), Dir: t.TempDir()})
	require.NoError(t, err)
	assert.Equal(t, "word-count-16eea39c", filepath.Base(s.Dir()))
}

// A file name that would be "." or ".." after sanitising stays inside the
// checkpoint's directory.
func TestCreateFileNamesStayInsideTheCheckpoint(t *testing.T) {
	forEachStorage(t, 1, func(t *testing.T, s CheckpointStorage) {
		for _, name := range []string{"..", ".", "../../x", ".inprogress-1"} {
			ref := writeFile(t, s, 1, Exclusive, name, "x")
			assert.NoError(t, checkRelPath(ref.Path), "%q -> %q", name, ref.Path)
			dir, base := filepath.Split(ref.Path)
			assert.Equal(t, "chk-1/", dir, "%q -> %q", name, ref.Path)
			assert.NotEqual(t, '.', rune(base[0]), "%q -> %q", name, ref.Path)
		}
	})
}

// Paths in checkpoint metadata are read back from a shared disk; one that
// leaves the job's directory is refused as corrupt (so a restore falls back
// to an older checkpoint) and nothing outside is read.
func TestStorageRefusesPathsOutsideTheJobDirectory(t *testing.T) {
	root := t.TempDir()
	secret := filepath.Join(root, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("outside"), 0o644))
	s, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: "job1", Dir: filepath.Join(root, "checkpoints")})
	require.NoError(t, err)
	for _, p := range []string{"../../secret", "shared/../../../secret", secret, "./chk-1/x", "chk-1//x", `..\..\secret`} {
		_, err := s.OpenFile(FileRef{Path: p, Size: 7})
		require.Error(t, err, p)
		assert.ErrorIs(t, err, ErrCorrupt, p)
		assert.ErrorIs(t, s.ReferenceShared(1, FileRef{Path: p}), ErrCorrupt, p)
		_, err = s.CompleteCheckpoint(metaWith(1, nil, FileRef{Path: p, Size: 7}))
		assert.ErrorIs(t, err, ErrCorrupt, p)
		assert.ErrorIs(t, s.Verify(metaWith(1, nil, FileRef{Path: p, Size: 7})), ErrCorrupt, p)
	}
}
