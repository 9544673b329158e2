package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
)

// A short write in the middle of a checkpoint file (the disk filled up)
// fails the writer; after Abort nothing of the file is left, under its real
// name or a temporary one, and the storage takes the next file as before.
func TestPartialWriteLeavesNoFile(t *testing.T) {
	efs := NewErrorFS(nil)
	dir := t.TempDir()
	st, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: "job", Dir: dir, FS: efs})
	require.NoError(t, err)
	efs.SetInjector(func(op Op, p string) error {
		if op == OpWrite {
			return PartialWrite{N: 5}
		}
		return nil
	})
	w, err := st.CreateFile(SnapshotTarget{CheckpointID: 1}, Exclusive, "count-0.kgs")
	require.NoError(t, err)
	_, err = w.Write([]byte("0123456789"))
	require.ErrorIs(t, err, ErrInjected)
	var pe *fs.PathError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Contains(t, pe.Path, filepath.Join(dir, "job", "chk-1"), "the error names the file")
	w.Abort()
	var left []string
	require.NoError(t, filepath.WalkDir(filepath.Join(dir, "job"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, p)
		}
		return err
	}))
	assert.Empty(t, left)

	efs.SetInjector(nil)
	w, err = st.CreateFile(SnapshotTarget{CheckpointID: 1}, Exclusive, "count-0.kgs")
	require.NoError(t, err)
	_, err = w.Write([]byte("0123456789"))
	require.NoError(t, err)
	ref, err := w.Commit()
	require.NoError(t, err)
	assert.Equal(t, int64(10), ref.Size)
}

// A failed rename or directory sync at commit fails the file, and no
// half-written file appears under its real name.
func TestCommitFaultsFailTheFile(t *testing.T) {
	for _, op := range []Op{OpSync, OpRename, OpSyncDir} {
		t.Run(string(op), func(t *testing.T) {
			efs := NewErrorFS(nil)
			dir := t.TempDir()
			st, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: "job", Dir: dir, FS: efs})
			require.NoError(t, err)
			efs.SetInjector(func(o Op, p string) error {
				if o == op {
					return ErrInjected
				}
				return nil
			})
			w, err := st.CreateFile(SnapshotTarget{CheckpointID: 1}, Exclusive, "count-0.kgs")
			require.NoError(t, err)
			_, err = w.Write([]byte("state"))
			require.NoError(t, err)
			_, err = w.Commit()
			require.ErrorIs(t, err, ErrInjected)
			ents, _ := os.ReadDir(filepath.Join(dir, "job", "chk-1"))
			for _, e := range ents {
				assert.True(t, op == OpSyncDir || strings.HasPrefix(e.Name(), "."), "no file under a real name before its rename is durable: %s", e.Name())
				assert.False(t, strings.HasPrefix(e.Name(), ".inprogress"), "the temporary file is removed: %s", e.Name())
			}
		})
	}
}

// The task-local store writes its copy beside checkpoint storage and reads
// it first; a copy whose size differs, or one that is gone, is read from
// checkpoint storage; a failing local disk never fails the checkpoint.
func TestTaskLocalStore(t *testing.T) {
	dir := t.TempDir()
	st, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: "job", Dir: filepath.Join(dir, "remote")})
	require.NoError(t, err)
	efs := NewErrorFS(nil)
	local := NewTaskLocalStore(efs, filepath.Join(dir, "tm-1"))
	write := func(name, body string) FileRef {
		w, err := local.Duplicating(st).CreateFile(SnapshotTarget{CheckpointID: 1}, Exclusive, name)
		require.NoError(t, err)
		_, err = w.Write([]byte(body))
		require.NoError(t, err)
		ref, err := w.Commit()
		require.NoError(t, err)
		return ref
	}
	a := write("a.kgs", "aaaa")
	efs.SetInjector(func(op Op, p string) error {
		if op == OpWrite {
			return ErrInjected
		}
		return nil
	})
	b := write("b.kgs", "bbbbbb") // the local copy fails; the checkpoint file does not
	efs.SetInjector(nil)

	var stats RecoveryStats
	read := func(ref FileRef) string {
		r, err := local.Prioritized(st, &stats).OpenFile(ref)
		require.NoError(t, err)
		defer r.Close()
		buf := make([]byte, ref.Size)
		_, err = r.ReadAt(buf, 0)
		require.NoError(t, err)
		return string(buf)
	}
	assert.Equal(t, "aaaa", read(a))
	assert.Equal(t, int64(4), stats.Local.Load())
	assert.Equal(t, "bbbbbb", read(b))
	assert.Equal(t, int64(6), stats.Remote.Load(), "b has no local copy")

	require.NoError(t, local.Retain(map[string]bool{}))
	assert.Zero(t, local.Bytes())
	assert.Equal(t, "aaaa", read(a))
	assert.Equal(t, int64(10), stats.Remote.Load(), "a's copy was discarded")
}

// The pebble backend's own file operations go through the seam too: a
// failing read of a local SST while an incremental checkpoint uploads it
// fails the snapshot, and a failing create while a restore downloads an
// SST fails the restore, naming the file; with the disk healed both work.
func TestPebbleFaultsThroughTheSeam(t *testing.T) {
	skipWithoutPebble(t)
	efs := NewErrorFS(nil)
	dir := t.TempDir()
	st, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: "job", Dir: filepath.Join(dir, "remote")})
	require.NoError(t, err)
	all := rescale.KeyGroupRange{Start: 0, End: 127}
	b, err := NewKeyedBackend(KeyedBackendConfig{Kind: Pebble, Dir: filepath.Join(dir, "db"), MaxParallelism: 128, KeyGroupRange: all, Incremental: true, FS: efs})
	require.NoError(t, err)
	defer b.Close()
	v, err := Value(b, "count", Int64Codec)
	require.NoError(t, err)
	for i := range 100 {
		require.NoError(t, b.SetCurrentKeyString("k"+string(rune('a'+i%26))+string(rune('a'+i/26)), i%128))
		require.NoError(t, v.Update(int64(i)))
	}
	efs.SetInjector(func(op Op, p string) error {
		if op == OpRead && strings.HasSuffix(p, ".sst") {
			return ErrInjected
		}
		return nil
	})
	_, err = b.Snapshot(SnapshotTarget{CheckpointID: 1}, st)
	require.ErrorIs(t, err, ErrInjected)
	assert.Contains(t, err.Error(), ".sst")

	efs.SetInjector(nil)
	h, err := b.Snapshot(SnapshotTarget{CheckpointID: 2}, st)
	require.NoError(t, err)

	efs.SetInjector(func(op Op, p string) error {
		if op == OpCreate && strings.HasSuffix(p, ".sst") {
			return ErrInjected
		}
		return nil
	})
	cfg := KeyedBackendConfig{Kind: Pebble, Dir: filepath.Join(dir, "restored"), MaxParallelism: 128, KeyGroupRange: all, Incremental: true, FS: efs}
	_, err = RestoreKeyedBackend(cfg, st, []*KeyedStateHandle{h})
	require.ErrorIs(t, err, ErrInjected)
	assert.Contains(t, err.Error(), ".sst")

	efs.SetInjector(nil)
	cfg.Dir = filepath.Join(dir, "restored-2")
	r, err := RestoreKeyedBackend(cfg, st, []*KeyedStateHandle{h})
	require.NoError(t, err)
	require.NoError(t, r.Close())
}

// A copy of filesystem checkpoint storage (a fork) goes through the
// storage's FileSystem: when neither a hard link nor a copy of a file can
// be made, CloneStorage fails with the file's name; healed, the copy holds
// the checkpoint and the original is untouched.
func TestCloneStorageFaultNamesTheFile(t *testing.T) {
	efs := NewErrorFS(nil)
	dir := t.TempDir()
	st, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: "job", Dir: filepath.Join(dir, "a"), FS: efs})
	require.NoError(t, err)
	b := newTestBackend(t, Memory, 128, fullRange)
	changeKeys(t, b, 0, 50, 7)
	h, err := b.Snapshot(SnapshotTarget{CheckpointID: 1}, st)
	require.NoError(t, err)
	_, err = st.CompleteCheckpoint(&CheckpointMetadata{JobID: "job", CheckpointID: 1, Operators: []OperatorState{{OperatorID: "count", Parallelism: 1, MaxParallelism: 128, Subtasks: []SubtaskState{{Keyed: h}}}}})
	require.NoError(t, err)
	var ops []Op
	efs.SetInjector(func(op Op, p string) error {
		if strings.HasPrefix(p, filepath.Join(dir, "b")) && strings.HasSuffix(p, ".kgs") {
			ops = append(ops, op)
			if op == OpLink || op == OpCreate {
				return ErrInjected
			}
		}
		return nil
	})
	_, err = CloneStorage(st, filepath.Join(dir, "b"))
	require.ErrorIs(t, err, ErrInjected)
	assert.Contains(t, err.Error(), filepath.Base(h.File.Path), "the error names the file")
	assert.Equal(t, []Op{OpLink, OpCreate}, ops, "a link is tried first, then a copy")

	efs.SetInjector(nil)
	cp, err := CloneStorage(st, filepath.Join(dir, "c"))
	require.NoError(t, err)
	md, err := cp.Load(1)
	require.NoError(t, err)
	require.NoError(t, cp.Verify(md))
	_, err = os.Stat(filepath.Join(dir, "a", "job", h.File.Path))
	assert.NoError(t, err, "the original keeps its file")
}
