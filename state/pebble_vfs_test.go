//go:build !js

package state

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
)

// Pebble's own files go through the seam too (pebbleFS): a fault injected
// on the write of an SST into the local Pebble checkpoint an incremental
// snapshot takes at the barrier (the hard link fails, then the copy) fails
// the snapshot, so the checkpoint is declined, with a message naming the
// file; the DB itself is untouched and, with the disk healed, the next
// checkpoint completes and restores every key.
func TestPebbleSSTWriteFaultDeclinesCheckpoint(t *testing.T) {
	efs := NewErrorFS(nil)
	dir := t.TempDir()
	st, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: "job", Dir: filepath.Join(dir, "remote")})
	require.NoError(t, err)
	all := rescale.KeyGroupRange{Start: 0, End: 127}
	b, err := NewKeyedBackend(KeyedBackendConfig{Kind: Pebble, Dir: filepath.Join(dir, "local"), MaxParallelism: 128, KeyGroupRange: all, Incremental: true, FS: efs})
	require.NoError(t, err)
	defer b.Close()
	v, err := Value(b, "count", Int64Codec)
	require.NoError(t, err)
	put := func(from, to int) {
		for i := from; i < to; i++ {
			key := fmt.Sprintf("k%d", i)
			require.NoError(t, b.SetCurrentKey([]byte(key), rescale.KeyGroupForString(key, 128)))
			require.NoError(t, v.Update(int64(i)))
		}
	}
	put(0, 500)
	_, err = b.Snapshot(SnapshotTarget{CheckpointID: 1}, st)
	require.NoError(t, err)
	b.NotifyCheckpointComplete(1)
	put(500, 1000)

	var mu sync.Mutex
	var faulted []string
	efs.SetInjector(func(op Op, p string) error {
		if (op == OpLink || op == OpWrite) && strings.HasSuffix(p, ".sst") && strings.Contains(filepath.Base(filepath.Dir(p)), "chk-") {
			mu.Lock()
			faulted = append(faulted, p)
			mu.Unlock()
			return ErrInjected
		}
		return nil
	})
	_, err = b.StartSnapshot(SnapshotTarget{CheckpointID: 2}, st)
	require.ErrorIs(t, err, ErrInjected)
	mu.Lock()
	require.NotEmpty(t, faulted, "Pebble's checkpoint linked its SSTs through the seam")
	first := faulted[0]
	mu.Unlock()
	assert.Contains(t, err.Error(), filepath.Base(first), "the error names the SST")
	assert.Contains(t, err.Error(), "checkpoint 2")
	t.Logf("declined: %v", err)
	b.NotifyCheckpointAborted(2)

	efs.SetInjector(nil)
	h, err := b.Snapshot(SnapshotTarget{CheckpointID: 3}, st)
	require.NoError(t, err)
	r, err := RestoreKeyedBackend(KeyedBackendConfig{Kind: Pebble, Dir: filepath.Join(dir, "restored"), MaxParallelism: 128, KeyGroupRange: all}, st, []*KeyedStateHandle{h})
	require.NoError(t, err)
	defer r.Close()
	rv, err := Value(r, "count", Int64Codec)
	require.NoError(t, err)
	for i := range 1000 {
		key := fmt.Sprintf("k%d", i)
		require.NoError(t, r.SetCurrentKey([]byte(key), rescale.KeyGroupForString(key, 128)))
		got, ok, err := rv.Value()
		require.NoError(t, err)
		require.True(t, ok, key)
		require.Equal(t, int64(i), got)
	}
}
