//go:build !js

package state

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
)

// TestPebbleTimersMemoryDoesNotGrowWithPendingTimers registers ever more
// timers on a pebble backend and counts the timers its queue holds in
// memory: at most timerCacheSize per key group, whether 2,000 or 20,000 are
// pending. The memory backend, for contrast, holds every one. All of them
// then fire in the documented order, each once.
func TestPebbleTimersMemoryDoesNotGrowWithPendingTimers(t *testing.T) {
	const maxP = 8
	bound := timerCacheSize * maxP
	for _, kind := range []BackendKind{Memory, Pebble} {
		t.Run(string(kind), func(t *testing.T) {
			b := newTestBackend(t, kind, maxP, rescale.KeyGroupRange{Start: 0, End: maxP - 1})
			svc, err := NewTimerService(b, "t")
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(3, 4))
			ref := map[refTimer]bool{}
			var held []int
			for _, n := range []int{2_000, 20_000} {
				for len(ref) < n {
					x := refTimer{d: EventTime, ts: int64(rng.IntN(1_000_000)), key: fmt.Sprintf("k%d", rng.IntN(5_000))}
					setKey(t, b, x.key)
					require.NoError(t, svc.Register(x.d, "", x.ts))
					ref[x] = true
				}
				assert.Equal(t, n, svc.Len(EventTime))
				held = append(held, svc.queues[EventTime].inMemory())
			}
			if kind == Pebble {
				assert.LessOrEqual(t, held[0], bound, "timers in memory with 2,000 pending")
				assert.Equal(t, held[0], held[1], "timers in memory with 2,000 and with 20,000 pending")
			} else {
				assert.Equal(t, []int{2_000, 20_000}, held, "the memory backend holds every timer")
			}
			want := sortedRef(ref, EventTime, maxP, b.KeyGroupRange())
			var fired []Timer
			require.NoError(t, svc.Advance(EventTime, 1<<40, func(tm Timer) error {
				fired = append(fired, tm)
				return nil
			}))
			assert.Equal(t, want, fired)
			assert.Equal(t, 0, svc.Len(EventTime))
			assert.Equal(t, 0, svc.queues[EventTime].inMemory())
		})
	}
}

// TestPebbleTimersAgreeWithModel runs seeded random registers, deletes,
// advances (whose callbacks register and delete too) and restores on
// pebble, full and incremental, against a model set, with far more timers
// per key group than the cache holds, so caches evict and refill.
func TestPebbleTimersAgreeWithModel(t *testing.T) {
	const maxP = 4
	for _, incremental := range []bool{false, true} {
		t.Run(fmt.Sprintf("incremental=%v", incremental), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			storage := newTestStorage(t, FileSystemStorage)
			r := rescale.KeyGroupRange{Start: 0, End: maxP - 1}
			open := func(h *KeyedStateHandle) (KeyedBackend, *TimerService) {
				cfg := testConfig(t, Pebble, maxP, r)
				cfg.Incremental = incremental
				var b KeyedBackend
				var err error
				if h == nil {
					b, err = NewKeyedBackend(cfg)
				} else {
					b, err = RestoreKeyedBackend(cfg, storage, []*KeyedStateHandle{h})
				}
				require.NoError(t, err)
				svc, err := NewTimerService(b, "t")
				require.NoError(t, err)
				return b, svc
			}
			b, svc := open(nil)
			ref := map[refTimer]bool{}
			var now int64
			random := func() refTimer {
				return refTimer{d: TimeDomain(rng.IntN(2)), ts: now + int64(rng.IntN(400)), key: fmt.Sprintf("k%d", rng.IntN(60)), ns: []string{"", "w"}[rng.IntN(2)]}
			}
			for round := range 40 {
				for range 150 {
					x := random()
					setKey(t, b, x.key)
					if rng.IntN(4) == 0 {
						require.NoError(t, svc.Delete(x.d, x.ns, x.ts))
						delete(ref, x)
					} else {
						require.NoError(t, svc.Register(x.d, x.ns, x.ts))
						ref[x] = true
					}
				}
				now += int64(rng.IntN(120))
				for _, d := range []TimeDomain{EventTime, ProcessingTime} {
					want := sortedRef(ref, d, maxP, r)
					n := 0
					for n < len(want) && want[n].Timestamp <= now {
						n++
					}
					var fired []Timer
					require.NoError(t, svc.Advance(d, now, func(tm Timer) error {
						fired = append(fired, tm)
						delete(ref, refTimer{d: tm.Domain, ts: tm.Timestamp, key: tm.Key, ns: tm.Namespace})
						if rng.IntN(10) == 0 {
							// A timer of the firing key, later than now: fires later.
							x := refTimer{d: d, ts: now + 1 + int64(rng.IntN(50)), key: tm.Key, ns: "cb"}
							require.NoError(t, svc.Register(x.d, x.ns, x.ts))
							ref[x] = true
						}
						return nil
					}))
					require.Equal(t, want[:n], append([]Timer{}, fired...), "round %d %s: fired", round, d)
					assert.Equal(t, len(sortedRef(ref, d, maxP, r)), svc.Len(d), "round %d %s: count", round, d)
					assert.LessOrEqual(t, svc.queues[d].inMemory(), timerCacheSize*maxP)
				}
				if round%10 == 9 {
					h, err := b.Snapshot(SnapshotTarget{CheckpointID: int64(round + 1)}, storage)
					require.NoError(t, err)
					b.NotifyCheckpointComplete(int64(round + 1))
					require.NoError(t, b.Close())
					b, svc = open(h)
					for _, d := range []TimeDomain{EventTime, ProcessingTime} {
						require.Equal(t, sortedRef(ref, d, maxP, r), svc.Timers(d, 0), "round %d %s: restored", round, d)
					}
				}
			}
			require.NoError(t, b.Close())
		})
	}
}

// TestPebbleTimersListLimit: the inspector's first n timers come from disk
// in firing order even when no cache holds them all.
func TestPebbleTimersListLimit(t *testing.T) {
	const maxP = 2
	b := newTestBackend(t, Pebble, maxP, rescale.KeyGroupRange{Start: 0, End: maxP - 1})
	svc, err := NewTimerService(b, "t")
	require.NoError(t, err)
	var all []Timer
	for i := range 3 * timerCacheSize * maxP {
		key := fmt.Sprintf("k%d", i%7)
		setKey(t, b, key)
		ts := int64(10_000 - i)
		require.NoError(t, svc.Register(EventTime, "", ts))
		all = append(all, Timer{Domain: EventTime, Timestamp: ts, Key: key, KeyGroup: rescale.KeyGroupForString(key, maxP)})
	}
	slices.SortFunc(all, compareTimers)
	assert.Equal(t, all[:5], svc.Timers(EventTime, 5))
	assert.Equal(t, all, svc.Timers(EventTime, 0))
	next, ok := svc.Next(EventTime)
	require.True(t, ok)
	assert.Equal(t, all[0], next)
}

// TestPebbleTimersBeyondAFullCacheFire: timers registered in ascending
// order after a key group's cache is full stay on disk only, and fire
// after the cached ones (the cache refills when it runs empty).
func TestPebbleTimersBeyondAFullCacheFire(t *testing.T) {
	b := newTestBackend(t, Pebble, 1, rescale.KeyGroupRange{Start: 0, End: 0})
	svc, err := NewTimerService(b, "t")
	require.NoError(t, err)
	setKey(t, b, "a")
	const n = 3*timerCacheSize + 5
	for i := range n {
		require.NoError(t, svc.Register(EventTime, "", int64(i)))
	}
	assert.Equal(t, timerCacheSize, svc.queues[EventTime].inMemory())
	var got []int64
	require.NoError(t, svc.Advance(EventTime, n, func(tm Timer) error {
		got = append(got, tm.Timestamp)
		return nil
	}))
	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i)
	}
	assert.Equal(t, want, got)
}
