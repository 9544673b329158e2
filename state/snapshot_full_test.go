package state

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFullSnapshotsLargerThanTheWriteBuffer: a full snapshot (a savepoint,
// canonical on either backend) of 1.9 MB, with one value larger than the
// 256 KiB write buffer, restores every value, and a second snapshot of the
// same state, whose writer may get the buffer the first one used, is the
// same bytes (issue 17: the buffers pass from one checkpoint to the next).
func TestFullSnapshotsLargerThanTheWriteBuffer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		s := newTestStorage(t, FileSystemStorage)
		b := newTestBackend(t, kind, 128, fullRange)
		blob, err := Value(b, "blob", StringCodec)
		require.NoError(t, err)
		want := map[string]string{}
		for i := range 40 {
			want[fmt.Sprintf("k%d", i)] = strings.Repeat(string(rune('a'+i%26)), 40_000+i)
		}
		want["big"] = strings.Repeat("z", fullWriteBuffer+12_345)
		for k, v := range want {
			setKey(t, b, k)
			require.NoError(t, blob.Update(v))
		}
		var files []FileRef
		for id := int64(1); id <= 2; id++ {
			h, err := b.Snapshot(SnapshotTarget{CheckpointID: id, Savepoint: true}, s)
			require.NoError(t, err)
			require.Equal(t, FormatFull, h.Format)
			require.Greater(t, h.File.Size, int64(7*fullWriteBuffer))
			files = append(files, *h.File)

			nb, err := RestoreKeyedBackend(testConfig(t, kind, 128, fullRange), s, []*KeyedStateHandle{h})
			require.NoError(t, err)
			got, err := Value(nb, "blob", StringCodec)
			require.NoError(t, err)
			for k, v := range want {
				setKey(t, nb, k)
				have, ok, err := got.Value()
				require.NoError(t, err)
				require.True(t, ok, "checkpoint %d restores %s", id, k)
				require.Equal(t, len(v), len(have), "checkpoint %d, key %s", id, k)
				require.True(t, v == have, "checkpoint %d, key %s: a value of the same length but other bytes", id, k)
			}
			require.NoError(t, nb.Close())
		}
		assert.Equal(t, files[0].CRC32C, files[1].CRC32C)
		assert.Equal(t, files[0].Size, files[1].Size)
	})
}
