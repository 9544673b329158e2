package state

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
)

// fakeClock is a processing-time clock the test moves by hand.
type fakeClock struct{ ms int64 }

func (c *fakeClock) now() int64 { return c.ms }

func ttlCfg(c *fakeClock, mod func(*TTLConfig)) TTLConfig {
	cfg := TTLConfig{TTL: 100 * time.Millisecond, Clock: ClockFunc(c.now), CleanupSize: -1}
	if mod != nil {
		mod(&cfg)
	}
	return cfg
}

// entriesOf lists the entries of one state.
func stateEntries(t *testing.T, b KeyedBackend, name string) []Entry {
	t.Helper()
	all, err := b.Entries(b.KeyGroupRange(), 0)
	require.NoError(t, err)
	var out []Entry
	for _, e := range all {
		if e.State == name {
			out = append(out, e)
		}
	}
	return out
}

func TestContractTTLValueExpiryAndVisibility(t *testing.T) {
	for _, kind := range timerKinds() {
		t.Run(string(kind), func(t *testing.T) {
			clk := &fakeClock{}
			b := newTestBackend(t, kind, 128, fullRange)
			never, err := Value(b, "never", Int64Codec, WithTTL(ttlCfg(clk, nil)))
			require.NoError(t, err)
			ret, err := Value(b, "ret", Int64Codec, WithTTL(ttlCfg(clk, func(c *TTLConfig) { c.Visibility = ReturnExpiredIfNotCleanedUp })))
			require.NoError(t, err)
			setKey(t, b, "a")
			require.NoError(t, never.Update(1))
			require.NoError(t, ret.Update(2))

			clk.ms = 99
			v, ok, err := never.Value()
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, int64(1), v)

			clk.ms = 100 // last access 0 + ttl 100 <= 100: expired
			ents := stateEntries(t, b, "never")
			require.Len(t, ents, 1)
			assert.True(t, ents[0].Expired, "the inspector shows an expired entry not yet cleaned up")
			assert.Equal(t, "1", ents[0].Value)
			_, ok, err = never.Value()
			require.NoError(t, err)
			assert.False(t, ok, "NeverReturnExpired")
			assert.Empty(t, stateEntries(t, b, "never"), "the read cleared it")

			v, ok, err = ret.Value()
			require.NoError(t, err)
			assert.True(t, ok, "ReturnExpiredIfNotCleanedUp returns it once")
			assert.Equal(t, int64(2), v)
			_, ok, err = ret.Value()
			require.NoError(t, err)
			assert.False(t, ok, "and clears it")
		})
	}
}

func TestContractTTLUpdateType(t *testing.T) {
	for _, kind := range timerKinds() {
		t.Run(string(kind), func(t *testing.T) {
			clk := &fakeClock{}
			b := newTestBackend(t, kind, 128, fullRange)
			write, err := Value(b, "write", StringCodec, WithTTL(ttlCfg(clk, nil)))
			require.NoError(t, err)
			read, err := Value(b, "read", StringCodec, WithTTL(ttlCfg(clk, func(c *TTLConfig) { c.UpdateType = OnReadAndWrite })))
			require.NoError(t, err)
			setKey(t, b, "k")
			require.NoError(t, write.Update("w"))
			require.NoError(t, read.Update("r"))
			clk.ms = 60
			_, ok, _ := write.Value()
			require.True(t, ok)
			_, ok, _ = read.Value() // refreshes to 60
			require.True(t, ok)
			clk.ms = 120
			_, ok, err = write.Value()
			require.NoError(t, err)
			assert.False(t, ok, "OnCreateAndWrite: a read does not extend the TTL")
			v, ok, err := read.Value()
			require.NoError(t, err)
			assert.True(t, ok, "OnReadAndWrite: the read at 60 extended it to 160")
			assert.Equal(t, "r", v)
			ents := stateEntries(t, b, "read")
			require.Len(t, ents, 1)
			assert.Equal(t, int64(120), ents[0].LastAccess)
		})
	}
}

func TestContractTTLListMapReducing(t *testing.T) {
	for _, kind := range timerKinds() {
		t.Run(string(kind), func(t *testing.T) {
			clk := &fakeClock{}
			b := newTestBackend(t, kind, 128, fullRange)
			l, err := List(b, "l", StringCodec, WithTTL(ttlCfg(clk, nil)))
			require.NoError(t, err)
			m, err := Map(b, "m", StringCodec, Int64Codec, WithTTL(ttlCfg(clk, nil)))
			require.NoError(t, err)
			r, err := Reducing(b, "r", Int64Codec, func(a, x int64) int64 { return a + x }, WithTTL(ttlCfg(clk, nil)))
			require.NoError(t, err)
			setKey(t, b, "k")
			require.NoError(t, l.Add("old"))
			require.NoError(t, m.Put("old", 1))
			require.NoError(t, r.Add(5))
			clk.ms = 50
			require.NoError(t, l.Add("new"))
			require.NoError(t, m.Put("new", 2))
			clk.ms = 120
			got, err := l.Get()
			require.NoError(t, err)
			assert.Equal(t, []string{"new"}, got, "each list element has its own timestamp")
			var keys []string
			require.NoError(t, m.Iterate(func(k string, _ int64) bool { keys = append(keys, k); return true }))
			assert.Equal(t, []string{"new"}, keys)
			assert.Len(t, stateEntries(t, b, "m"), 1, "iterating removed the expired entry")
			require.NoError(t, r.Add(7))
			v, _, _ := r.Get()
			assert.Equal(t, int64(7), v, "an expired accumulator is not folded in")
		})
	}
}

// TestContractTTLThroughSnapshotRestoreRescale: the timestamps travel with
// the values through a snapshot and a restore into a new parallelism (2->3,
// 3->2, every pair of backends); with CleanupFullSnapshot the snapshot
// leaves out what had expired at the barrier.
func TestContractTTLThroughSnapshotRestoreRescale(t *testing.T) {
	const maxP, keys = 128, 120
	kinds := timerKinds()
	for _, pp := range [][2]int{{2, 3}, {3, 2}} {
		for _, from := range kinds {
			for _, to := range kinds {
				for _, fullCleanup := range []bool{false, true} {
					t.Run(fmt.Sprintf("%dto%d_%s_to_%s_cleanup=%v", pp[0], pp[1], from, to, fullCleanup), func(t *testing.T) {
						clk := &fakeClock{}
						cfg := ttlCfg(clk, func(c *TTLConfig) { c.CleanupFullSnapshot = fullCleanup })
						storage := newTestStorage(t, FileSystemStorage)
						oldPlan, err := rescale.NewPlan(maxP, pp[0], pp[0])
						require.NoError(t, err)
						var handles []*KeyedStateHandle
						for _, a := range oldPlan.Subtasks {
							b, err := NewKeyedBackend(testConfig(t, from, maxP, a.Range))
							require.NoError(t, err)
							v, err := Value(b, "v", Int64Codec, WithTTL(cfg))
							require.NoError(t, err)
							for i := 0; i < keys; i++ {
								key := fmt.Sprintf("k%d", i)
								kg := rescale.KeyGroupForString(key, maxP)
								if !a.Range.Contains(kg) {
									continue
								}
								clk.ms = int64(i%2) * 50 // even keys written at 0, odd at 50
								require.NoError(t, b.SetCurrentKey([]byte(key), kg))
								require.NoError(t, v.Update(int64(i)))
							}
							clk.ms = 120 // the barrier: even keys expired, odd ones live until 150
							h, err := b.Snapshot(SnapshotTarget{CheckpointID: 1}, storage)
							require.NoError(t, err)
							handles = append(handles, h)
							require.NoError(t, b.Close())
						}
						plan, err := rescale.NewPlan(maxP, pp[0], pp[1])
						require.NoError(t, err)
						stored, live := 0, 0
						for _, a := range plan.Subtasks {
							var hs []*KeyedStateHandle
							for _, rd := range a.Reads {
								hs = append(hs, handles[rd.OldSubtask])
							}
							b, err := RestoreKeyedBackend(testConfig(t, to, maxP, a.Range), storage, hs)
							require.NoError(t, err)
							v, err := Value(b, "v", Int64Codec, WithTTL(cfg))
							require.NoError(t, err)
							for _, e := range stateEntries(t, b, "v") {
								stored++
								var i int
								_, err := fmt.Sscanf(e.Key, "k%d", &i)
								require.NoError(t, err)
								assert.Equal(t, int64(i%2)*50, e.LastAccess, "the timestamp survived the restore")
								assert.Equal(t, i%2 == 0, e.Expired)
							}
							clk.ms = 149
							for i := 0; i < keys; i++ {
								key := fmt.Sprintf("k%d", i)
								kg := rescale.KeyGroupForString(key, maxP)
								if !a.Range.Contains(kg) {
									continue
								}
								require.NoError(t, b.SetCurrentKey([]byte(key), kg))
								x, ok, err := v.Value()
								require.NoError(t, err)
								assert.Equal(t, i%2 == 1, ok, "key %s", key)
								if ok {
									assert.Equal(t, int64(i), x)
									live++
								}
							}
							require.NoError(t, b.Close())
						}
						assert.Equal(t, keys/2, live)
						if fullCleanup {
							assert.Equal(t, keys/2, stored, "the full snapshot left the expired half out")
						} else {
							assert.Equal(t, keys, stored, "without cleanup the snapshot keeps expired values")
						}
					})
				}
			}
		}
	}
}

// Incremental (memory) and background (pebble) cleanup remove expired
// entries that nobody reads, a few per access.
func TestContractTTLCleanupWithoutReads(t *testing.T) {
	for _, kind := range timerKinds() {
		t.Run(string(kind), func(t *testing.T) {
			clk := &fakeClock{}
			b := newTestBackend(t, kind, 128, fullRange)
			v, err := Value(b, "v", Int64Codec, WithTTL(ttlCfg(clk, func(c *TTLConfig) { c.CleanupSize = 4 })))
			require.NoError(t, err)
			for i := 0; i < 40; i++ {
				setKey(t, b, fmt.Sprintf("cold%d", i))
				require.NoError(t, v.Update(1))
			}
			clk.ms = 1000
			require.Len(t, stateEntries(t, b, "v"), 40)
			// Touch one hot key only: each access cleans a few cold ones.
			setKey(t, b, "hot")
			for i := 0; i < 200; i++ {
				require.NoError(t, v.Update(int64(i)))
			}
			left := stateEntries(t, b, "v")
			require.Len(t, left, 1, "only the hot key is left: %v", left)
			assert.Equal(t, "hot", left[0].Key)
		})
	}
}

func TestContractTTLMismatchOnRestoreIsRefused(t *testing.T) {
	for _, kind := range timerKinds() {
		t.Run(string(kind), func(t *testing.T) {
			clk := &fakeClock{}
			storage := newTestStorage(t, FileSystemStorage)
			b := newTestBackend(t, kind, 128, fullRange)
			v, err := Value(b, "v", Int64Codec, WithTTL(ttlCfg(clk, nil)))
			require.NoError(t, err)
			setKey(t, b, "k")
			require.NoError(t, v.Update(1))
			h, err := b.Snapshot(SnapshotTarget{CheckpointID: 1}, storage)
			require.NoError(t, err)
			b2, err := RestoreKeyedBackend(testConfig(t, kind, 128, fullRange), storage, []*KeyedStateHandle{h})
			require.NoError(t, err)
			defer b2.Close()
			_, err = Value(b2, "v", Int64Codec)
			require.ErrorIs(t, err, ErrTTL)
			assert.Contains(t, err.Error(), "checkpointed with a TTL and is now registered without one")
			_, err = Value(b2, "v", Int64Codec, WithTTL(ttlCfg(clk, nil)))
			require.NoError(t, err, "the same TTL setting restores")
		})
	}
}

func TestTTLConfigErrors(t *testing.T) {
	b := newTestBackend(t, Memory, 128, fullRange)
	clk := &fakeClock{}
	_, err := Value(b, "a", Int64Codec, WithTTL(TTLConfig{Clock: ClockFunc(clk.now)}))
	require.ErrorIs(t, err, ErrTTL)
	assert.Contains(t, err.Error(), "at least 1ms")
	_, err = Value(b, "b", Int64Codec, WithTTL(TTLConfig{TTL: time.Second}))
	assert.Contains(t, err.Error(), "clock")
	_, err = Value(b, "c", Int64Codec, WithTTL(TTLConfig{TTL: time.Second, Clock: ClockFunc(clk.now), UpdateType: "OnRead"}))
	assert.Contains(t, err.Error(), "want OnCreateAndWrite or OnReadAndWrite")
}

// A fork's copy keeps expired entries (it must equal the original), even
// when full snapshots clean them up.
func TestTTLCopyKeepsExpiredEntries(t *testing.T) {
	for _, kind := range timerKinds() {
		t.Run(string(kind), func(t *testing.T) {
			clk := &fakeClock{}
			b := newTestBackend(t, kind, 128, fullRange)
			cfg := ttlCfg(clk, func(c *TTLConfig) { c.CleanupFullSnapshot = true })
			v, err := Value(b, "v", Int64Codec, WithTTL(cfg))
			require.NoError(t, err)
			setKey(t, b, "k")
			require.NoError(t, v.Update(1))
			clk.ms = 500
			cp, err := CloneKeyedBackend(b, testConfig(t, kind, 128, fullRange))
			require.NoError(t, err)
			defer cp.Close()
			_, err = Value(cp, "v", Int64Codec, WithTTL(cfg))
			require.NoError(t, err)
			ents := stateEntries(t, cp, "v")
			require.Len(t, ents, 1)
			assert.True(t, ents[0].Expired)
		})
	}
}
