package state

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
)

var storageKinds = []StorageKind{JobManagerStorage, FileSystemStorage}

func forEachStorage(t *testing.T, retained int, fn func(t *testing.T, s CheckpointStorage)) {
	for _, k := range storageKinds {
		t.Run(string(k), func(t *testing.T) {
			s, err := NewCheckpointStorage(StorageConfig{Kind: k, JobID: "job1", Dir: t.TempDir(), Retained: retained})
			require.NoError(t, err)
			fn(t, s)
		})
	}
}

func writeFile(t *testing.T, s CheckpointStorage, id int64, scope Scope, name, content string) FileRef {
	t.Helper()
	w, err := s.CreateFile(SnapshotTarget{CheckpointID: id}, scope, name)
	require.NoError(t, err)
	_, err = w.Write([]byte(content))
	require.NoError(t, err)
	ref, err := w.Commit()
	require.NoError(t, err)
	return ref
}

// metaWith makes checkpoint metadata whose one subtask refers to files.
func metaWith(id int64, shared []FileRef, own ...FileRef) *CheckpointMetadata {
	h := &KeyedStateHandle{Backend: Pebble, Format: FormatIncremental, CheckpointID: id, MaxParallelism: 128,
		KeyGroupRange: fullRange}
	for _, f := range shared {
		h.SharedFiles = append(h.SharedFiles, SSTFile{LocalName: f.Path, File: f})
	}
	for _, f := range own {
		h.PrivateFiles = append(h.PrivateFiles, SSTFile{LocalName: f.Path, File: f})
	}
	return &CheckpointMetadata{CheckpointID: id, Operators: []OperatorState{{OperatorID: "count", Parallelism: 1,
		MaxParallelism: 128, Subtasks: []SubtaskState{{Keyed: h}}}}}
}

func ids(infos []CheckpointInfo) []int64 {
	out := []int64{}
	for _, c := range infos {
		out = append(out, c.ID)
	}
	return out
}

func exists(s CheckpointStorage, ref FileRef) bool {
	r, err := s.OpenFile(ref)
	if err != nil {
		return false
	}
	r.Close()
	return true
}

func TestStorageRetentionAndSharedRegistry(t *testing.T) {
	forEachStorage(t, 1, func(t *testing.T, s CheckpointStorage) {
		a := writeFile(t, s, 1, Shared, "000001.sst", "A")
		own1 := writeFile(t, s, 1, Exclusive, "MANIFEST", "m1")
		sub, err := s.CompleteCheckpoint(metaWith(1, []FileRef{a}, own1))
		require.NoError(t, err)
		assert.Empty(t, sub)

		// Checkpoint 2 reuses A and adds B; completing it subsumes 1, but A stays.
		require.NoError(t, s.ReferenceShared(2, a))
		b := writeFile(t, s, 2, Shared, "000002.sst", "B")
		sub, err = s.CompleteCheckpoint(metaWith(2, []FileRef{a, b}))
		require.NoError(t, err)
		assert.Equal(t, []int64{1}, sub)
		assert.True(t, exists(s, a), "A is still used by checkpoint 2")
		assert.False(t, exists(s, own1), "checkpoint 1's own files go with it")

		// Checkpoint 3 pending reuses A; checkpoint 4 completes without A and
		// subsumes 2. A must survive for 3.
		require.NoError(t, s.ReferenceShared(3, a))
		sub, err = s.CompleteCheckpoint(metaWith(4, []FileRef{b}))
		require.NoError(t, err)
		assert.Equal(t, []int64{2}, sub)
		assert.True(t, exists(s, a), "pending checkpoint 3 still refers to A")
		require.NoError(t, s.AbortCheckpoint(3))
		assert.False(t, exists(s, a), "nobody refers to A any more")
		assert.True(t, exists(s, b))

		// An aborted checkpoint's new files are deleted.
		c := writeFile(t, s, 5, Shared, "000003.sst", "C")
		own5 := writeFile(t, s, 5, Exclusive, "x", "x")
		require.NoError(t, s.AbortCheckpoint(5))
		assert.False(t, exists(s, c))
		assert.False(t, exists(s, own5))
		assert.Equal(t, []int64{4}, ids(s.Checkpoints()))

		err = s.ReferenceShared(6, a)
		assert.ErrorIs(t, err, ErrMissing)
		m := s.Metrics()
		assert.Equal(t, 1, m.SharedFiles)
		assert.Equal(t, int64(1), m.SharedBytes)
	})
}

func TestStorageSavepointsSurviveRetention(t *testing.T) {
	forEachStorage(t, 2, func(t *testing.T, s CheckpointStorage) {
		for id := int64(1); id <= 5; id++ {
			m := metaWith(id, nil, writeFile(t, s, id, Exclusive, "f", "data"))
			m.Savepoint = id == 2
			if m.Savepoint {
				h := m.Operators[0].Subtasks[0].Keyed
				w, err := s.CreateFile(SnapshotTarget{CheckpointID: 2, Savepoint: true}, Exclusive, "f")
				require.NoError(t, err)
				w.Write([]byte("savepoint"))
				ref, err := w.Commit()
				require.NoError(t, err)
				h.PrivateFiles = []SSTFile{{LocalName: "f", File: ref}}
			}
			_, err := s.CompleteCheckpoint(m)
			require.NoError(t, err)
		}
		infos := s.Checkpoints()
		assert.Equal(t, []int64{2, 4, 5}, ids(infos))
		assert.True(t, infos[0].Savepoint)
		assert.Equal(t, "savepoint-job1-2", infos[0].Path)
		m, err := s.Load(2)
		require.NoError(t, err)
		require.NoError(t, s.Verify(m))
		_, err = s.Load(3)
		assert.ErrorIs(t, err, ErrNotFound)
		require.NoError(t, s.DiscardSavepoint(2))
		assert.Equal(t, []int64{4, 5}, ids(s.Checkpoints()))
	})
}

func TestStorageUniqueNamesAndMissingFiles(t *testing.T) {
	forEachStorage(t, 1, func(t *testing.T, s CheckpointStorage) {
		a := writeFile(t, s, 1, Exclusive, "count#1.kgs", "a")
		b := writeFile(t, s, 1, Exclusive, "count#1.kgs", "b")
		assert.Equal(t, "chk-1/count-1.kgs", a.Path)
		assert.Equal(t, "chk-1/count-1-2.kgs", b.Path)
		w, err := s.CreateFile(SnapshotTarget{CheckpointID: 1}, Exclusive, "gone")
		require.NoError(t, err)
		w.Write([]byte("partial"))
		w.Abort()
		m := metaWith(1, nil, a, FileRef{Path: "chk-1/gone", Size: 7})
		_, err = s.CompleteCheckpoint(m)
		assert.ErrorIs(t, err, ErrMissing)
		assert.Contains(t, err.Error(), "chk-1/gone")
		assert.Empty(t, s.Checkpoints(), "a failed completion registers nothing")
	})
}

func TestJobManagerStorageCap(t *testing.T) {
	s, err := NewCheckpointStorage(StorageConfig{Kind: JobManagerStorage, JobID: "job1"})
	require.NoError(t, err)
	b := newTestBackend(t, Memory, 128, fullRange)
	v, _ := Value(b, "blob", BytesCodec)
	big := bytes.Repeat([]byte{7}, 1024)
	for i := range 5200 { // 5200 KiB of values: above 5 MiB
		setKey(t, b, fmt.Sprint(i))
		require.NoError(t, v.Update(big))
	}
	_, err = b.Snapshot(SnapshotTarget{CheckpointID: 9}, s)
	require.ErrorIs(t, err, ErrStateTooLarge)
	assert.Contains(t, err.Error(), "5 MiB")
	assert.Contains(t, err.Error(), "checkpoint 9")
	assert.Contains(t, err.Error(), "filesystem")
	assert.Zero(t, s.Metrics().TotalBytes, "nothing of the failed file is kept")

	small, err := NewCheckpointStorage(StorageConfig{Kind: JobManagerStorage, JobID: "job1", MaxStateSize: 4})
	require.NoError(t, err)
	w, _ := small.CreateFile(SnapshotTarget{CheckpointID: 1}, Exclusive, "x")
	_, err = w.Write([]byte("1234"))
	require.NoError(t, err, "exactly the cap is allowed")
	_, err = w.Write([]byte("5"))
	assert.ErrorIs(t, err, ErrStateTooLarge)
	_, err = w.Commit()
	assert.ErrorIs(t, err, ErrStateTooLarge)
}

func TestFileSystemLayoutAndRecovery(t *testing.T) {
	dir := t.TempDir()
	s, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: "job1", Dir: dir, Retained: 2})
	require.NoError(t, err)
	a := writeFile(t, s, 1, Shared, "000001.sst", "A")
	_, err = s.CompleteCheckpoint(metaWith(1, []FileRef{a}, writeFile(t, s, 1, Exclusive, "MANIFEST", "m")))
	require.NoError(t, err)
	_, err = s.CompleteCheckpoint(metaWith(2, nil, writeFile(t, s, 2, Exclusive, "MANIFEST", "m")))
	require.NoError(t, err)

	root := filepath.Join(dir, "job1")
	for _, p := range []string{"chk-1/_metadata", "chk-1/MANIFEST", "chk-2/_metadata", filepath.FromSlash(a.Path)} {
		assert.FileExists(t, filepath.Join(root, p))
	}
	assert.DirExists(t, filepath.Join(root, "shared"))
	assert.DirExists(t, filepath.Join(root, "taskowned"))
	assert.True(t, strings.HasPrefix(a.Path, "shared/") && strings.HasSuffix(a.Path, "-000001.sst"), a.Path)
	head, err := os.ReadFile(filepath.Join(root, "chk-1", "_metadata"))
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(head, []byte(metadataMagic+" crc32c=")))
	leftovers, _ := filepath.Glob(filepath.Join(root, "*", ".inprogress-*"))
	assert.Empty(t, leftovers)

	// A new job manager over the same directory sees both checkpoints and
	// still knows who uses A: completing 3 subsumes 1, which deletes A.
	s2, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: "job1", Dir: dir, Retained: 2})
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2}, ids(s2.Checkpoints()))
	m, err := s2.Load(1)
	require.NoError(t, err)
	assert.Equal(t, a, m.Operators[0].Subtasks[0].Keyed.SharedFiles[0].File)
	sub, err := s2.CompleteCheckpoint(metaWith(3, nil))
	require.NoError(t, err)
	assert.Equal(t, []int64{1}, sub)
	assert.NoFileExists(t, filepath.Join(root, filepath.FromSlash(a.Path)))
	assert.NoDirExists(t, filepath.Join(root, "chk-1"))

	// A flipped byte in _metadata is caught by name.
	p := filepath.Join(root, "chk-2", "_metadata")
	data, _ := os.ReadFile(p)
	data[len(data)-3] ^= 0x20
	require.NoError(t, os.WriteFile(p, data, 0o644))
	_, err = s2.Load(2)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), "chk-2/_metadata")
	assert.Contains(t, err.Error(), "checkpoint 2")
}

func TestStorageRejectsBadConfig(t *testing.T) {
	for _, cfg := range []StorageConfig{
		{Kind: "hdfs", JobID: "j"},
		{Kind: FileSystemStorage, JobID: "j"},
		{Kind: JobManagerStorage},
		{Kind: JobManagerStorage, JobID: "../x"},
	} {
		_, err := NewCheckpointStorage(cfg)
		assert.Error(t, err, "%+v", cfg)
	}
}

// TestRestoreReadsOnlyItsKeyGroups restores one third of the key groups from
// a full snapshot and checks the bytes read are the header plus exactly those
// groups' blocks, which the offset index locates.
func TestRestoreReadsOnlyItsKeyGroups(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		s := newTestStorage(t, FileSystemStorage)
		b := newTestBackend(t, kind, 128, fullRange)
		fill(t, []KeyedBackend{b}, 3000)
		h, err := b.Snapshot(SnapshotTarget{CheckpointID: 1}, s)
		require.NoError(t, err)
		require.Len(t, h.Offsets, 128)
		r := rescale.KeyGroupRange{Start: 43, End: 85}
		want := h.Offsets[0] + h.Offsets[86] - h.Offsets[43]
		before := s.Metrics().BytesRead
		nb, err := RestoreKeyedBackend(testConfig(t, kind, 128, r), s, []*KeyedStateHandle{h})
		require.NoError(t, err)
		defer nb.Close()
		m, err := nb.Metrics()
		require.NoError(t, err)
		assert.Equal(t, want, m.RestoreBytesRead)
		assert.Equal(t, want, s.Metrics().BytesRead-before)
		assert.Less(t, float64(want), 0.4*float64(h.File.Size))
	})
}

// TestFullSnapshotsAreTheSameBytes: both backends write the canonical format
// in the same order, so the same state gives the same file.
func TestFullSnapshotsAreTheSameBytes(t *testing.T) {
	skipWithoutPebble(t)
	s := newTestStorage(t, FileSystemStorage)
	var refs []FileRef
	for _, kind := range backendKinds {
		b := newTestBackend(t, kind, 128, rescale.KeyGroupRange{Start: 10, End: 90})
		fill(t, []KeyedBackend{b}, 500)
		l, _ := List(b, "hist", StringCodec)
		key := "k0"
		for i := 0; !b.KeyGroupRange().Contains(rescale.KeyGroupForString(key, 128)); i++ {
			key = fmt.Sprintf("k%d", i)
		}
		setKey(t, b, key)
		require.NoError(t, l.AddAll([]string{"x", "y"}))
		h, err := b.Snapshot(SnapshotTarget{CheckpointID: 1}, s)
		require.NoError(t, err)
		refs = append(refs, *h.File)
	}
	assert.Equal(t, refs[0].CRC32C, refs[1].CRC32C)
	assert.Equal(t, refs[0].Size, refs[1].Size)
}

// Load is a restore's read and counts toward BytesRead; Peek, a view's look
// at the same metadata, does not, so how often a view looks never changes
// the figure a learner reads.
func TestPeekIsNotCountedAsBytesRead(t *testing.T) {
	for _, kind := range []StorageKind{JobManagerStorage, FileSystemStorage} {
		t.Run(string(kind), func(t *testing.T) {
			s := newTestStorage(t, kind)
			_, err := s.CompleteCheckpoint(metaWith(1, nil))
			require.NoError(t, err)
			before := s.Metrics().BytesRead
			peeked, err := s.Peek(1)
			require.NoError(t, err)
			assert.Equal(t, int64(1), peeked.CheckpointID)
			assert.Equal(t, before, s.Metrics().BytesRead, "a peek is not a read")
			loaded, err := s.Load(1)
			require.NoError(t, err)
			assert.Equal(t, peeked, loaded)
			assert.Greater(t, s.Metrics().BytesRead, before, "a load is")
			_, err = s.Peek(2)
			assert.ErrorIs(t, err, ErrNotFound)
		})
	}
}

// corruptForTest lets tests flip a byte of a file held in memory.
func (m *memBlobs) corruptForTest(p string, off int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[p]
	if !ok || off >= len(b) {
		return false
	}
	b[off] ^= 0xff
	return true
}
