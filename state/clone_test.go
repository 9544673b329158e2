package state

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
)

// entriesOf returns every entry of b as "state/key/userKey=value" lines.
func entriesOf(t *testing.T, b KeyedBackend) map[string]string {
	t.Helper()
	ents, err := b.Entries(b.KeyGroupRange(), 0)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range ents {
		out[fmt.Sprintf("%s/%s/%s", e.State, e.Key, e.UserKey)] = e.Value
	}
	return out
}

// A copy holds the original's entries, and from then on each goes its own
// way: writes to one are not seen by the other, and the copy outlives the
// original (a fork keeps running after the run it was taken from ends).
func TestCloneKeyedBackendIsIndependent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		r := rescale.KeyGroupRange{Start: 0, End: 63}
		orig := newTestBackend(t, kind, 128, r)
		fill(t, []KeyedBackend{orig}, 300)
		want := entriesOf(t, orig)
		require.NotEmpty(t, want)

		cfg := testConfig(t, kind, 128, r)
		cp, err := CloneKeyedBackend(orig, cfg)
		require.NoError(t, err)
		defer cp.Close()
		assert.Equal(t, want, entriesOf(t, cp), "the copy holds the original's entries")
		assert.Equal(t, orig.States(), cp.States(), "the copy knows the same states by the same ids")

		// Write to each after the copy.
		var key string
		for i := 0; ; i++ {
			key = fmt.Sprintf("k%d", i)
			if r.Contains(rescale.KeyGroupForString(key, 128)) {
				break
			}
		}
		setKey(t, cp, key)
		cv, _ := Value(cp, "count", Int64Codec)
		require.NoError(t, cv.Update(-1))
		setKey(t, orig, key)
		ov, _ := Value(orig, "count", Int64Codec)
		v, ok, err := ov.Value()
		require.NoError(t, err)
		require.True(t, ok)
		assert.NotEqual(t, int64(-1), v, "a write to the copy reached the original")
		require.NoError(t, ov.Update(-2))
		setKey(t, cp, key)
		v, _, err = cv.Value()
		require.NoError(t, err)
		assert.Equal(t, int64(-1), v, "a write to the original reached the copy")

		require.NoError(t, orig.Close())
		got := entriesOf(t, cp)
		assert.Len(t, got, len(want), "the copy outlives the original")
	})
}

func TestCloneKeyedBackendRefusesAnotherRange(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		orig := newTestBackend(t, kind, 128, rescale.KeyGroupRange{Start: 0, End: 63})
		_, err := CloneKeyedBackend(orig, testConfig(t, kind, 128, rescale.KeyGroupRange{Start: 64, End: 127}))
		assert.ErrorIs(t, err, ErrIncompatible)
	})
}

// BenchmarkCloneKeyedBackend copies a backend of 50,000 keys (two states
// each); -benchmem shows what a copy allocates in memory.
//
//	go test -run XXX -bench CloneKeyedBackend -benchmem ./state/
func BenchmarkCloneKeyedBackend(b *testing.B) {
	for _, kind := range backendKinds {
		b.Run(string(kind), func(b *testing.B) {
			r := rescale.KeyGroupRange{Start: 0, End: 127}
			cfg := KeyedBackendConfig{Kind: kind, MaxParallelism: 128, KeyGroupRange: r, Name: "op#0"}
			if kind == Pebble {
				cfg.Dir = filepath.Join(b.TempDir(), "db")
			}
			orig, err := NewKeyedBackend(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer orig.Close()
			for i := range 50000 {
				key := fmt.Sprintf("k%d", i)
				if err := orig.SetCurrentKey([]byte(key), rescale.KeyGroupForString(key, 128)); err != nil {
					b.Fatal(err)
				}
				cnt, _ := Value(orig, "count", Int64Codec)
				m, _ := Map(orig, "last", StringCodec, StringCodec)
				if err := cnt.Update(int64(i)); err != nil {
					b.Fatal(err)
				}
				if err := m.Put("seen", key); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				c := cfg
				if kind == Pebble {
					b.StopTimer()
					c.Dir = filepath.Join(b.TempDir(), "db")
					b.StartTimer()
				}
				cp, err := CloneKeyedBackend(orig, c)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				_ = cp.Close()
				b.StartTimer()
			}
		})
	}
}
