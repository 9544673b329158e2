package state

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
)

// backendKinds is every keyed backend the contract suite runs against.
// The WebAssembly build has no Pebble (state.PebbleAvailable), so there the
// suite runs on memory alone.
var backendKinds = func() []BackendKind {
	if PebbleAvailable {
		return []BackendKind{Memory, Pebble}
	}
	return []BackendKind{Memory}
}()

func testConfig(t *testing.T, kind BackendKind, maxP int, r rescale.KeyGroupRange) KeyedBackendConfig {
	t.Helper()
	cfg := KeyedBackendConfig{Kind: kind, MaxParallelism: maxP, KeyGroupRange: r, Name: "op#" + fmt.Sprint(r.Start)}
	if kind == Pebble {
		cfg.Dir = filepath.Join(t.TempDir(), "db")
	}
	return cfg
}

func newTestBackend(t *testing.T, kind BackendKind, maxP int, r rescale.KeyGroupRange) KeyedBackend {
	t.Helper()
	b, err := NewKeyedBackend(testConfig(t, kind, maxP, r))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

// setKey makes key current, with its Flink key group.
func setKey(t *testing.T, b KeyedBackend, key string) {
	t.Helper()
	require.NoError(t, b.SetCurrentKey([]byte(key), rescale.KeyGroupForString(key, b.MaxParallelism())))
}

// skipWithoutPebble skips a test that compares with or needs Pebble in the
// WebAssembly build, which has none.
func skipWithoutPebble(t *testing.T) {
	t.Helper()
	if !PebbleAvailable {
		t.Skip("no pebble backend in this build (GOOS=js)")
	}
}

// changeKeys sets count to v for keys k<from> .. k<to-1>.
func changeKeys(t *testing.T, b KeyedBackend, from, to int, v int64) {
	t.Helper()
	cnt, _ := Value(b, "count", Int64Codec)
	for i := from; i < to; i++ {
		setKey(t, b, fmt.Sprintf("k%d", i))
		require.NoError(t, cnt.Update(v))
	}
}

func forEachBackend(t *testing.T, fn func(t *testing.T, kind BackendKind)) {
	for _, k := range backendKinds {
		t.Run(string(k), func(t *testing.T) { fn(t, k) })
	}
}

var fullRange = rescale.KeyGroupRange{Start: 0, End: 127}

func TestContractValueState(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		b := newTestBackend(t, kind, 128, fullRange)
		count, err := Value(b, "count", Int64Codec)
		require.NoError(t, err)

		setKey(t, b, "alice")
		_, ok, err := count.Value()
		require.NoError(t, err)
		assert.False(t, ok, "no value before the first update")
		require.NoError(t, count.Update(7))

		setKey(t, b, "bob")
		_, ok, err = count.Value()
		require.NoError(t, err)
		assert.False(t, ok, "bob must not see alice's value")
		require.NoError(t, count.Update(1))

		setKey(t, b, "alice")
		v, ok, err := count.Value()
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, int64(7), v)
		require.NoError(t, count.Update(v+1))
		v, _, _ = count.Value()
		assert.Equal(t, int64(8), v)

		require.NoError(t, count.Clear())
		_, ok, err = count.Value()
		require.NoError(t, err)
		assert.False(t, ok)
		setKey(t, b, "bob")
		v, _, _ = count.Value()
		assert.Equal(t, int64(1), v, "clearing alice leaves bob")
	})
}

func TestContractListState(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		b := newTestBackend(t, kind, 128, fullRange)
		l, err := List(b, "seen", StringCodec)
		require.NoError(t, err)
		setKey(t, b, "k")
		got, err := l.Get()
		require.NoError(t, err)
		assert.Equal(t, []string{}, got)
		require.NoError(t, l.Add("a"))
		require.NoError(t, l.AddAll([]string{"", "ccc"}))
		require.NoError(t, l.Add(strings.Repeat("x", 300))) // two-byte length prefix
		got, err = l.Get()
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "", "ccc", strings.Repeat("x", 300)}, got)
		require.NoError(t, l.Update([]string{"z"}))
		got, _ = l.Get()
		assert.Equal(t, []string{"z"}, got)
		setKey(t, b, "other")
		got, _ = l.Get()
		assert.Empty(t, got)
		setKey(t, b, "k")
		require.NoError(t, l.Clear())
		got, _ = l.Get()
		assert.Empty(t, got)
	})
}

func TestContractMapState(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		b := newTestBackend(t, kind, 128, fullRange)
		m, err := Map(b, "clicks", StringCodec, Int64Codec)
		require.NoError(t, err)
		setKey(t, b, "u1")
		empty, err := m.IsEmpty()
		require.NoError(t, err)
		assert.True(t, empty)
		for k, v := range map[string]int64{"b": 2, "a": 1, "": 0, "ab": 3} {
			require.NoError(t, m.Put(k, v))
		}
		v, ok, err := m.Get("ab")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, int64(3), v)
		ok, err = m.Contains("")
		require.NoError(t, err)
		assert.True(t, ok, "the empty user key is a key like any other")
		require.NoError(t, m.Remove("b"))
		ok, _ = m.Contains("b")
		assert.False(t, ok)

		var keys []string
		require.NoError(t, m.Iterate(func(k string, v int64) bool { keys = append(keys, fmt.Sprintf("%s=%d", k, v)); return true }))
		assert.Equal(t, []string{"=0", "a=1", "ab=3"}, keys, "user-key byte order")

		// u1's prefix "u" must not see u1's map (length-safe key layout).
		setKey(t, b, "u")
		empty, _ = m.IsEmpty()
		assert.True(t, empty)
		setKey(t, b, "u1x")
		empty, _ = m.IsEmpty()
		assert.True(t, empty)
		setKey(t, b, "u1")
		require.NoError(t, m.Clear())
		empty, _ = m.IsEmpty()
		assert.True(t, empty)
	})
}

func TestContractReducingState(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		b := newTestBackend(t, kind, 128, fullRange)
		r, err := Reducing(b, "max", Int64Codec, func(a, v int64) int64 { return max(a, v) })
		require.NoError(t, err)
		setKey(t, b, "k")
		for _, v := range []int64{3, 9, -1, 4} {
			require.NoError(t, r.Add(v))
		}
		got, ok, err := r.Get()
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, int64(9), got)
		require.NoError(t, r.Clear())
		_, ok, _ = r.Get()
		assert.False(t, ok)
	})
}

func TestContractKeysOfDifferentLengthsDoNotCollide(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		b := newTestBackend(t, kind, 128, fullRange)
		v, err := Value(b, "v", StringCodec)
		require.NoError(t, err)
		keys := []string{"a", "a\x00", "a\x00\x01", "ab", "", "\x00", "\xff"}
		for _, k := range keys {
			// All in one key group, so only the key encoding separates them.
			require.NoError(t, b.SetCurrentKey([]byte(k), 5))
			require.NoError(t, v.Update("v:"+k))
		}
		for _, k := range keys {
			require.NoError(t, b.SetCurrentKey([]byte(k), 5))
			got, ok, err := v.Value()
			require.NoError(t, err)
			assert.True(t, ok, "%q", k)
			assert.Equal(t, "v:"+k, got)
		}
		ents, err := b.Entries(rescale.KeyGroupRange{Start: 5, End: 5}, 0)
		require.NoError(t, err)
		var got []string
		for _, e := range ents {
			got = append(got, e.Key)
		}
		// Entries come back in key byte order, keys decoded exactly.
		assert.Equal(t, []string{"", "0x00", "a", "0x6100", "0x610001", "ab", "0xff"}, got)
	})
}

func TestContractErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		b := newTestBackend(t, kind, 128, rescale.KeyGroupRange{Start: 10, End: 20})
		v, err := Value(b, "v", Int64Codec)
		require.NoError(t, err)
		_, _, err = v.Value()
		assert.ErrorIs(t, err, ErrNoCurrentKey)
		assert.ErrorIs(t, b.SetCurrentKey([]byte("x"), 9), ErrKeyGroupOutOfRange)
		assert.ErrorIs(t, b.SetCurrentKey([]byte("x"), 21), ErrKeyGroupOutOfRange)
		require.NoError(t, b.SetCurrentKey([]byte("x"), 20))
		_, err = List(b, "v", Int64Codec)
		assert.ErrorIs(t, err, ErrStateKind)
		_, err = Value(b, "v", Int64Codec)
		assert.NoError(t, err, "asking again for the same kind returns the state")
		require.NoError(t, b.Close())
		assert.ErrorIs(t, b.SetCurrentKey([]byte("x"), 20), ErrClosed)
	})
}

func TestContractEntriesAndMetrics(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		b := newTestBackend(t, kind, 8, rescale.KeyGroupRange{Start: 2, End: 5})
		cnt, _ := Value(b, "count", Int64Codec)
		tags, _ := Map(b, "tags", StringCodec, StringCodec)
		hist, _ := List(b, "hist", Int64Codec)
		require.NoError(t, b.SetCurrentKey([]byte("k1"), 3))
		require.NoError(t, cnt.Update(5))
		require.NoError(t, tags.Put("color", "red"))
		require.NoError(t, tags.Put("size", "L"))
		require.NoError(t, b.SetCurrentKey([]byte("k2"), 5))
		require.NoError(t, hist.AddAll([]int64{1, 2}))

		ents, err := b.Entries(rescale.KeyGroupRange{Start: 0, End: 7}, 0)
		require.NoError(t, err)
		assert.Equal(t, []Entry{
			{State: "count", Kind: KindValue, KeyGroup: 3, Key: "k1", Value: "5"},
			{State: "tags", Kind: KindMap, KeyGroup: 3, Key: "k1", UserKey: "color", Value: "red"},
			{State: "tags", Kind: KindMap, KeyGroup: 3, Key: "k1", UserKey: "size", Value: "L"},
			{State: "hist", Kind: KindList, KeyGroup: 5, Key: "k2", Value: "[1 2]"},
		}, ents)
		ents, _ = b.Entries(rescale.KeyGroupRange{Start: 5, End: 5}, 0)
		assert.Len(t, ents, 1)
		ents, _ = b.Entries(rescale.KeyGroupRange{Start: 0, End: 7}, 2)
		assert.Len(t, ents, 2)

		kgm, err := b.KeyGroupMetrics()
		require.NoError(t, err)
		// k1: count (2+8 bytes), tags color (2+5+3), size (2+4+1); k2: hist 2 + (1+8)*2.
		assert.Equal(t, []KeyGroupMetrics{{KeyGroup: 2}, {KeyGroup: 3, Keys: 2, Bytes: 10 + 10 + 7}, {KeyGroup: 4}, {KeyGroup: 5, Keys: 1, Bytes: 20}}, kgm)
		m, err := b.Metrics()
		require.NoError(t, err)
		assert.Equal(t, int64(3), m.Keys)
		assert.Equal(t, int64(47), m.Bytes)
		if kind == Pebble {
			assert.Positive(t, m.LocalDiskBytes)
		}
	})
}

// fill writes count[key] = i and a map entry for keys k0..k(n-1) into
// whichever backend owns each key's group.
func fill(t *testing.T, owners []KeyedBackend, n int) {
	t.Helper()
	for _, b := range owners {
		for i := range n {
			key := fmt.Sprintf("k%d", i)
			g := rescale.KeyGroupForString(key, b.MaxParallelism())
			if !b.KeyGroupRange().Contains(g) {
				continue
			}
			setKey(t, b, key)
			cnt, _ := Value(b, "count", Int64Codec)
			m, _ := Map(b, "last", StringCodec, StringCodec)
			require.NoError(t, cnt.Update(int64(i)))
			require.NoError(t, m.Put("seen", key))
		}
	}
}

func newTestStorage(t *testing.T, kind StorageKind) CheckpointStorage {
	t.Helper()
	s, err := NewCheckpointStorage(StorageConfig{Kind: kind, JobID: "job1", Dir: t.TempDir(), Retained: 3})
	require.NoError(t, err)
	return s
}

func TestContractRescaleTwoToThree(t *testing.T) {
	const maxP, n = 128, 400
	// Flink's ranges, by hand from [(i*128+p-1)/p, ((i+1)*128-1)/p].
	oldRanges := []rescale.KeyGroupRange{{Start: 0, End: 63}, {Start: 64, End: 127}}
	newRanges := []rescale.KeyGroupRange{{Start: 0, End: 42}, {Start: 43, End: 85}, {Start: 86, End: 127}}
	for _, from := range backendKinds {
		for _, to := range backendKinds {
			for _, incremental := range []bool{false, true} {
				if incremental && (from != Pebble || to != Pebble) {
					continue
				}
				t.Run(fmt.Sprintf("%s_to_%s_incremental=%v", from, to, incremental), func(t *testing.T) {
					storage := newTestStorage(t, FileSystemStorage)
					var handles []*KeyedStateHandle
					var olds []KeyedBackend
					for _, r := range oldRanges {
						cfg := testConfig(t, from, maxP, r)
						cfg.Incremental = incremental
						b, err := NewKeyedBackend(cfg)
						require.NoError(t, err)
						olds = append(olds, b)
					}
					fill(t, olds, n)
					for _, b := range olds {
						h, err := b.Snapshot(SnapshotTarget{CheckpointID: 1}, storage)
						require.NoError(t, err)
						handles = append(handles, h)
						require.NoError(t, b.Close())
					}
					plan, err := rescale.NewPlan(maxP, 2, 3)
					require.NoError(t, err)
					seen := map[string]int{}
					for i, a := range plan.Subtasks {
						require.Equal(t, newRanges[i], a.Range)
						var hs []*KeyedStateHandle
						for _, rd := range a.Reads {
							hs = append(hs, handles[rd.OldSubtask])
						}
						b, err := RestoreKeyedBackend(testConfig(t, to, maxP, a.Range), storage, hs)
						require.NoError(t, err)
						ents, err := b.Entries(a.Range, 0)
						require.NoError(t, err)
						for _, e := range ents {
							assert.True(t, a.Range.Contains(e.KeyGroup))
							if e.State == "count" {
								seen[e.Key]++
							}
						}
						for _, e := range ents {
							if e.State != "count" {
								continue
							}
							setKey(t, b, e.Key)
							cnt, _ := Value(b, "count", Int64Codec)
							m, _ := Map(b, "last", StringCodec, StringCodec)
							v, ok, err := cnt.Value()
							require.NoError(t, err)
							require.True(t, ok)
							assert.Equal(t, e.Key, fmt.Sprintf("k%d", v))
							s, ok, _ := m.Get("seen")
							assert.True(t, ok)
							assert.Equal(t, e.Key, s)
						}
						require.NoError(t, b.Close())
					}
					assert.Len(t, seen, n, "every key restored")
					for k, c := range seen {
						assert.Equal(t, 1, c, "key %s restored once", k)
					}
				})
			}
		}
	}
}

func TestContractCorruptionDetected(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		for _, incremental := range []bool{false, true} {
			if incremental && kind != Pebble {
				continue
			}
			for _, fault := range []string{"flip", "delete"} {
				t.Run(fmt.Sprintf("incremental=%v/%s", incremental, fault), func(t *testing.T) {
					storage := newTestStorage(t, FileSystemStorage)
					cfg := testConfig(t, kind, 128, fullRange)
					cfg.Incremental = incremental
					b, err := NewKeyedBackend(cfg)
					require.NoError(t, err)
					defer b.Close()
					fill(t, []KeyedBackend{b}, 200)
					h, err := b.Snapshot(SnapshotTarget{CheckpointID: 4}, storage)
					require.NoError(t, err)
					_, err = storage.CompleteCheckpoint(&CheckpointMetadata{CheckpointID: 4, Operators: []OperatorState{
						{OperatorID: "count", Parallelism: 1, MaxParallelism: 128, Subtasks: []SubtaskState{{Keyed: h}}}}})
					require.NoError(t, err)
					// The biggest file holds the data.
					victim := h.Files()[0]
					for _, f := range h.Files() {
						if f.Size > victim.Size {
							victim = f
						}
					}
					p := filepath.Join(storage.Dir(), filepath.FromSlash(victim.Path))
					if fault == "flip" {
						data, err := os.ReadFile(p)
						require.NoError(t, err)
						data[len(data)/2] ^= 0x01
						require.NoError(t, os.WriteFile(p, data, 0o644))
					} else {
						require.NoError(t, os.Remove(p))
					}
					meta, err := storage.Load(4)
					require.NoError(t, err)
					err = storage.Verify(meta)
					require.Error(t, err)
					assert.Contains(t, err.Error(), victim.Path)
					assert.Contains(t, err.Error(), "checkpoint 4")

					r, err := RestoreKeyedBackend(testConfig(t, kind, 128, fullRange), storage, []*KeyedStateHandle{h})
					require.Error(t, err)
					assert.Nil(t, r)
					if fault == "flip" {
						assert.ErrorIs(t, err, ErrCorrupt)
					} else {
						assert.ErrorIs(t, err, ErrMissing)
					}
					assert.Contains(t, err.Error(), victim.Path)
					assert.Contains(t, err.Error(), "checkpoint 4")
				})
			}
		}
	})
}

// TestContractRandomOpsAgreeAcrossBackends drives both backends with the same
// seeded mix of puts, removes and clears, checks each against a plain model,
// and checks their full snapshots are the same bytes after every round
// (snapshots are taken between rounds, so the memory backend's kept key
// order is exercised across snapshots).
func TestContractRandomOpsAgreeAcrossBackends(t *testing.T) {
	skipWithoutPebble(t)
	rng := rand.New(rand.NewPCG(42, 0))
	s := newTestStorage(t, FileSystemStorage)
	var bs []KeyedBackend
	for _, kind := range backendKinds {
		bs = append(bs, newTestBackend(t, kind, 16, rescale.KeyGroupRange{Start: 0, End: 15}))
	}
	model := map[string]string{} // "state/key[/userKey]" -> value
	for round := int64(1); round <= 4; round++ {
		for range 400 {
			key := fmt.Sprintf("k%d", rng.IntN(60))
			uk := fmt.Sprintf("u%d", rng.IntN(4))
			op := rng.IntN(6)
			val := fmt.Sprint(rng.IntN(1000))
			for _, b := range bs {
				setKey(t, b, key)
				v, _ := Value(b, "v", StringCodec)
				m, _ := Map(b, "m", StringCodec, StringCodec)
				switch op {
				case 0, 1:
					require.NoError(t, v.Update(val))
				case 2:
					require.NoError(t, v.Clear())
				case 3, 4:
					require.NoError(t, m.Put(uk, val))
				case 5:
					require.NoError(t, m.Remove(uk))
				}
			}
			switch op {
			case 0, 1:
				model["v/"+key] = val
			case 2:
				delete(model, "v/"+key)
			case 3, 4:
				model["m/"+key+"/"+uk] = val
			case 5:
				delete(model, "m/"+key+"/"+uk)
			}
		}
		var crcs []uint32
		for _, b := range bs {
			ents, err := b.Entries(b.KeyGroupRange(), 0)
			require.NoError(t, err)
			got := map[string]string{}
			for _, e := range ents {
				if e.Kind == KindMap {
					got["m/"+e.Key+"/"+e.UserKey] = e.Value
				} else {
					got["v/"+e.Key] = e.Value
				}
			}
			assert.Equal(t, model, got, "%s round %d", b.Kind(), round)
			h, err := b.Snapshot(SnapshotTarget{CheckpointID: round}, s)
			require.NoError(t, err)
			crcs = append(crcs, h.File.CRC32C)
		}
		assert.Equal(t, crcs[0], crcs[1], "round %d: both backends write the same bytes", round)
	}
}

// TestContractAsyncSnapshotSeesTheBarrier: records processed while Finish
// runs on another goroutine do not leak into the snapshot.
func TestContractAsyncSnapshotSeesTheBarrier(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		for _, incremental := range []bool{false, true} {
			t.Run(fmt.Sprint("incremental=", incremental), func(t *testing.T) {
				s := newTestStorage(t, FileSystemStorage)
				cfg := testConfig(t, kind, 128, fullRange)
				cfg.Incremental = incremental
				b, err := NewKeyedBackend(cfg)
				require.NoError(t, err)
				defer b.Close()
				fill(t, []KeyedBackend{b}, 300) // count[k_i] = i
				a, err := b.StartSnapshot(SnapshotTarget{CheckpointID: 1}, s)
				require.NoError(t, err)
				type result struct {
					h   *KeyedStateHandle
					err error
				}
				done := make(chan result)
				go func() {
					h, err := a.Finish()
					done <- result{h, err}
				}()
				changeKeys(t, b, 0, 300, -7) // after the barrier
				res := <-done
				require.NoError(t, res.err)
				_, err = a.Finish()
				assert.ErrorIs(t, err, ErrSnapshotDone)

				r, err := RestoreKeyedBackend(testConfig(t, kind, 128, fullRange), s, []*KeyedStateHandle{res.h})
				require.NoError(t, err)
				defer r.Close()
				cnt, _ := Value(r, "count", Int64Codec)
				for _, i := range []int{0, 150, 299} {
					setKey(t, r, fmt.Sprintf("k%d", i))
					v, _, err := cnt.Value()
					require.NoError(t, err)
					assert.Equal(t, int64(i), v, "k%d holds its value at the barrier", i)
				}
			})
		}
	})
}

// TestContractCloseCancelsPendingSnapshots: a snapshot started but never
// finished does not keep the backend from closing, and cannot finish after.
func TestContractCloseCancelsPendingSnapshots(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		cfg := testConfig(t, kind, 128, fullRange)
		cfg.Incremental = kind == Pebble
		b, err := NewKeyedBackend(cfg)
		require.NoError(t, err)
		fill(t, []KeyedBackend{b}, 50)
		s := newTestStorage(t, JobManagerStorage)
		a1, err := b.StartSnapshot(SnapshotTarget{CheckpointID: 1}, s)
		require.NoError(t, err)
		a2, err := b.StartSnapshot(SnapshotTarget{CheckpointID: 2}, s)
		require.NoError(t, err)
		a2.Cancel()
		_, err = a2.Finish()
		assert.ErrorIs(t, err, ErrSnapshotDone)
		require.NoError(t, b.Close())
		if kind == Pebble {
			_, err = a1.Finish()
			assert.ErrorIs(t, err, ErrSnapshotDone)
			left, _ := filepath.Glob(filepath.Join(cfg.Dir, "chk-*"))
			assert.Empty(t, left, "local checkpoints of cancelled snapshots are removed")
		}
	})
}

// A key set as a string and the same key set as bytes address the same
// state, and reusing the caller's byte buffer for the next key (as a
// subtask does) never changes a key the backend stored: values of every
// length, list appends and map entries keep their keys.
func TestContractStringKeysAndReusedKeyBuffers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, kind BackendKind) {
		b := newTestBackend(t, kind, 128, fullRange)
		count, err := Value(b, "count", Int64Codec)
		require.NoError(t, err)
		name, err := Value(b, "name", StringCodec)
		require.NoError(t, err)
		list, err := List(b, "list", Int64Codec)
		require.NoError(t, err)
		m, err := Map(b, "map", StringCodec, Int64Codec)
		require.NoError(t, err)

		keys := []string{"alice", "bob", "carol", "dave", "erin"}
		buf := make([]byte, 0, 16)
		for round := range 3 {
			for i, k := range keys {
				kg := rescale.KeyGroupForString(k, 128)
				if (round+i)%2 == 0 {
					require.NoError(t, b.SetCurrentKeyString(k, kg))
				} else {
					buf = append(buf[:0], k...)
					require.NoError(t, b.SetCurrentKey(buf, kg))
				}
				n, _, err := count.Value()
				require.NoError(t, err)
				require.NoError(t, count.Update(n+1))
				// A name that grows every round: its value is replaced, not overwritten in place.
				require.NoError(t, name.Update(strings.Repeat(k, round+1)))
				require.NoError(t, list.Add(int64(round)))
				require.NoError(t, m.Put(fmt.Sprint(round), int64(i)))
			}
			// Overwrite the buffer: a stored key that viewed it would change.
			buf = append(buf[:0], "zzzzzzzzzzzzzzzz"...)
		}

		for i, k := range keys {
			require.NoError(t, b.SetCurrentKeyString(k, rescale.KeyGroupForString(k, 128)))
			n, ok, err := count.Value()
			require.NoError(t, err)
			require.True(t, ok, k)
			assert.Equal(t, int64(3), n, k)
			s, _, err := name.Value()
			require.NoError(t, err)
			assert.Equal(t, strings.Repeat(k, 3), s)
			l, err := list.Get()
			require.NoError(t, err)
			assert.Equal(t, []int64{0, 1, 2}, l, k)
			v, ok, err := m.Get("2")
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, int64(i), v)
		}
		entries, err := b.Entries(fullRange, 0)
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, e := range entries {
			seen[e.Key] = true
		}
		assert.Len(t, seen, len(keys), "exactly the keys written, none changed by the reused buffer: %v", seen)
		for _, k := range keys {
			assert.True(t, seen[k], k)
		}
	})
}
