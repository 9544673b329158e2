//go:build !js

package state

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
)

// diskBytes returns the bytes of the regular files under dir, and how many
// of them are hard links to a file under shared (the same inode): a fork's
// own disk cost is total - linked.
func diskBytes(t *testing.T, dir, shared string) (total, linked int64) {
	t.Helper()
	var others []os.FileInfo
	require.NoError(t, filepath.WalkDir(shared, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				others = append(others, info)
			}
		}
		return err
	}))
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		for _, o := range others {
			if os.SameFile(info, o) {
				linked += info.Size()
				break
			}
		}
		return nil
	}))
	return total, linked
}

// A pebble fork shares the original's SST files on disk (hard links of a
// Pebble checkpoint) instead of writing a second copy of the LSM: of the
// copy's files only the small private ones (MANIFEST, OPTIONS, markers)
// are its own. The figures beside it are the copy through a full snapshot
// restored into a fresh DB, what a fork cost before.
func TestPebbleForkSharesSSTFiles(t *testing.T) {
	r := rescale.KeyGroupRange{Start: 0, End: 127}
	dir := t.TempDir()
	cfg := KeyedBackendConfig{Kind: Pebble, MaxParallelism: 128, KeyGroupRange: r, Name: "op#0", Dir: filepath.Join(dir, "orig")}
	orig, err := NewKeyedBackend(cfg)
	require.NoError(t, err)
	defer orig.Close()
	cnt, err := Value(orig, "count", Int64Codec)
	require.NoError(t, err)
	for i := range 20_000 {
		key := fmt.Sprintf("key-%06d", i)
		require.NoError(t, orig.SetCurrentKey([]byte(key), rescale.KeyGroupForString(key, 128)))
		require.NoError(t, cnt.Update(int64(i)))
	}
	own := map[string]int64{}
	for _, how := range []string{"checkpoint", "snapshot"} {
		c := cfg
		c.Dir = filepath.Join(dir, how)
		var cp KeyedBackend
		if how == "checkpoint" {
			cp, err = CloneKeyedBackend(orig, c)
		} else {
			cp, err = cloneThroughSnapshot(orig, c)
		}
		require.NoError(t, err)
		assert.Equal(t, entriesOf(t, orig), entriesOf(t, cp))
		require.NoError(t, cp.Close())
		total, linked := diskBytes(t, c.Dir, cfg.Dir)
		own[how] = total - linked
		t.Logf("fork through a Pebble %s: %d bytes on disk, %d of them shared with the original, %d its own", how, total, linked, total-linked)
	}
	sst, _ := diskBytes(t, cfg.Dir, t.TempDir())
	assert.Less(t, own["checkpoint"]*10, own["snapshot"], "a fork's own bytes are a small part of a copy's")
	assert.Less(t, own["checkpoint"]*10, sst, "a fork's own bytes are a small part of the original's files")
}
