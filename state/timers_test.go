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

// timerKinds is memory, fs and pebble: fs is the memory backend's table
// paired with filesystem checkpoint storage, so it runs too.
func timerKinds() []BackendKind {
	kinds := []BackendKind{FS}
	return append(kinds, backendKinds...)
}

// refTimer is the reference model: a set of (domain, ts, key, ns).
type refTimer struct {
	d   TimeDomain
	ts  int64
	key string
	ns  string
}

func (r refTimer) timer(maxP int) Timer {
	return Timer{Domain: r.d, Timestamp: r.ts, Key: r.key, Namespace: r.ns, KeyGroup: rescale.KeyGroupForString(r.key, maxP)}
}

// sortedRef lists the model's timers of d in the documented firing order,
// computed here from the definition (timestamp, key group, key, namespace).
func sortedRef(ref map[refTimer]bool, d TimeDomain, maxP int, r rescale.KeyGroupRange) []Timer {
	var out []Timer
	for x := range ref {
		if x.d == d && r.Contains(rescale.KeyGroupForString(x.key, maxP)) {
			out = append(out, x.timer(maxP))
		}
	}
	slices.SortFunc(out, func(a, b Timer) int {
		if a.Timestamp != b.Timestamp {
			if a.Timestamp < b.Timestamp {
				return -1
			}
			return 1
		}
		if a.KeyGroup != b.KeyGroup {
			return a.KeyGroup - b.KeyGroup
		}
		if a.Key != b.Key {
			if a.Key < b.Key {
				return -1
			}
			return 1
		}
		if a.Namespace < b.Namespace {
			return -1
		} else if a.Namespace > b.Namespace {
			return 1
		}
		return 0
	})
	return out
}

func TestContractTimersRegisterDeduplicateDeleteFire(t *testing.T) {
	for _, kind := range timerKinds() {
		t.Run(string(kind), func(t *testing.T) {
			b := newTestBackend(t, kind, 128, fullRange)
			ts, err := NewTimerService(b, "user-timers")
			require.NoError(t, err)
			setKey(t, b, "alice")
			require.NoError(t, ts.Register(EventTime, "", 100))
			require.NoError(t, ts.Register(EventTime, "", 100)) // the same timer again: kept once
			require.NoError(t, ts.Register(EventTime, "w1", 100))
			require.NoError(t, ts.Register(ProcessingTime, "", 5))
			setKey(t, b, "bob")
			require.NoError(t, ts.Register(EventTime, "", 50))
			require.NoError(t, ts.Register(EventTime, "", 200))
			require.NoError(t, ts.Delete(EventTime, "", 200))
			require.NoError(t, ts.Delete(EventTime, "", 999)) // none: no error
			assert.Equal(t, 3, ts.Len(EventTime))
			assert.Equal(t, 1, ts.Len(ProcessingTime))

			var fired []string
			require.NoError(t, ts.Advance(EventTime, 99, func(tm Timer) error {
				k, _ := b.CurrentKey()
				assert.Equal(t, tm.Key, string(k), "the timer's key is current when it fires")
				fired = append(fired, fmt.Sprintf("%s@%d/%s", tm.Key, tm.Timestamp, tm.Namespace))
				return nil
			}))
			assert.Equal(t, []string{"bob@50/"}, fired)
			fired = nil
			require.NoError(t, ts.Advance(EventTime, 100, func(tm Timer) error {
				fired = append(fired, fmt.Sprintf("%s@%d/%s", tm.Key, tm.Timestamp, tm.Namespace))
				if tm.Namespace == "" {
					// A timer registered at or before the watermark fires in the same advance.
					require.NoError(t, ts.Register(EventTime, "again", 100))
				}
				return nil
			}))
			// Same timestamp and key: namespaces in byte order ("again" < "w1").
			assert.Equal(t, []string{"alice@100/", "alice@100/again", "alice@100/w1"}, fired)
			assert.Equal(t, 0, ts.Len(EventTime))
			assert.Equal(t, 1, ts.Len(ProcessingTime), "event time leaves processing-time timers alone")

			// Fired and deleted timers leave no entries behind.
			ents, err := b.Entries(fullRange, 0)
			require.NoError(t, err)
			for _, e := range ents {
				assert.NotEqual(t, TimerStateName("user-timers", EventTime), e.State, "entry %+v", e)
			}
			// The processing-time timer is an inspector entry of its own state.
			var pt []Entry
			for _, e := range ents {
				if e.State == TimerStateName("user-timers", ProcessingTime) {
					pt = append(pt, e)
				}
			}
			require.Len(t, pt, 1)
			assert.Equal(t, "@5", pt[0].UserKey)
		})
	}
}

// TestContractTimersThroughSnapshotRestoreRescale registers random timers on
// old subtasks, snapshots them, restores them into a new parallelism (2->3
// and 3->2, full and incremental, across every pair of backends) and checks
// that each new subtask holds exactly the timers of its key groups and fires
// them in order, each once.
func TestContractTimersThroughSnapshotRestoreRescale(t *testing.T) {
	const maxP = 128
	kinds := timerKinds()
	for _, pp := range [][2]int{{2, 3}, {3, 2}} {
		for _, from := range kinds {
			for _, to := range kinds {
				for _, incremental := range []bool{false, true} {
					if incremental && (from != Pebble || to != Pebble) {
						continue
					}
					name := fmt.Sprintf("%dto%d_%s_to_%s_incremental=%v", pp[0], pp[1], from, to, incremental)
					t.Run(name, func(t *testing.T) {
						rng := rand.New(rand.NewPCG(uint64(pp[0]*10+pp[1]), 7))
						storage := newTestStorage(t, FileSystemStorage)
						oldPlan, err := rescale.NewPlan(maxP, pp[0], pp[0])
						require.NoError(t, err)
						ref := map[refTimer]bool{}
						var handles []*KeyedStateHandle
						for _, a := range oldPlan.Subtasks {
							cfg := testConfig(t, from, maxP, a.Range)
							cfg.Incremental = incremental
							b, err := NewKeyedBackend(cfg)
							require.NoError(t, err)
							svc, err := NewTimerService(b, "user-timers")
							require.NoError(t, err)
							cnt, err := Value(b, "count", Int64Codec)
							require.NoError(t, err)
							for i := 0; i < 300; i++ {
								key := fmt.Sprintf("k%d", rng.IntN(200))
								kg := rescale.KeyGroupForString(key, maxP)
								if !a.Range.Contains(kg) {
									continue
								}
								require.NoError(t, b.SetCurrentKey([]byte(key), kg))
								require.NoError(t, cnt.Update(int64(i)))
								x := refTimer{d: TimeDomain(rng.IntN(2)), ts: int64(rng.IntN(50)) - 10, key: key, ns: []string{"", "w"}[rng.IntN(2)]}
								if rng.IntN(5) == 0 {
									require.NoError(t, svc.Delete(x.d, x.ns, x.ts))
									delete(ref, x)
									continue
								}
								require.NoError(t, svc.Register(x.d, x.ns, x.ts))
								ref[x] = true
							}
							h, err := b.Snapshot(SnapshotTarget{CheckpointID: 1}, storage)
							require.NoError(t, err)
							handles = append(handles, h)
							require.NoError(t, b.Close())
						}
						require.NotEmpty(t, ref)
						plan, err := rescale.NewPlan(maxP, pp[0], pp[1])
						require.NoError(t, err)
						total := 0
						for _, a := range plan.Subtasks {
							var hs []*KeyedStateHandle
							for _, rd := range a.Reads {
								hs = append(hs, handles[rd.OldSubtask])
							}
							b, err := RestoreKeyedBackend(testConfig(t, to, maxP, a.Range), storage, hs)
							require.NoError(t, err)
							svc, err := NewTimerService(b, "user-timers")
							require.NoError(t, err)
							for _, d := range []TimeDomain{EventTime, ProcessingTime} {
								want := sortedRef(ref, d, maxP, a.Range)
								if want == nil {
									want = []Timer{}
								}
								assert.Equal(t, want, svc.Timers(d, 0), "restored %s timers of %v", d, a.Range)
								var fired []Timer
								require.NoError(t, svc.Advance(d, 1<<40, func(tm Timer) error {
									fired = append(fired, tm)
									return nil
								}))
								if len(want) == 0 {
									assert.Empty(t, fired)
								} else {
									assert.Equal(t, want, fired, "fired in order, each once")
								}
								total += len(fired)
								assert.Equal(t, 0, svc.Len(d))
							}
							require.NoError(t, b.Close())
						}
						assert.Equal(t, len(ref), total, "every timer restored by exactly one new subtask")
					})
				}
			}
		}
	}
}

// TestContractTimersSecondGeneration: a timer registered after a
// restore, and one deleted, are what a second snapshot holds.
func TestContractTimersSecondGeneration(t *testing.T) {
	for _, kind := range timerKinds() {
		t.Run(string(kind), func(t *testing.T) {
			storage := newTestStorage(t, FileSystemStorage)
			b := newTestBackend(t, kind, 128, fullRange)
			svc, err := NewTimerService(b, "t")
			require.NoError(t, err)
			setKey(t, b, "a")
			require.NoError(t, svc.Register(EventTime, "", 10))
			require.NoError(t, svc.Register(EventTime, "", 20))
			h, err := b.Snapshot(SnapshotTarget{CheckpointID: 1}, storage)
			require.NoError(t, err)
			b2, err := RestoreKeyedBackend(testConfig(t, kind, 128, fullRange), storage, []*KeyedStateHandle{h})
			require.NoError(t, err)
			defer b2.Close()
			svc2, err := NewTimerService(b2, "t")
			require.NoError(t, err)
			setKey(t, b2, "a")
			require.NoError(t, svc2.Delete(EventTime, "", 10))
			require.NoError(t, svc2.Register(EventTime, "", 30))
			h2, err := b2.Snapshot(SnapshotTarget{CheckpointID: 2}, storage)
			require.NoError(t, err)
			b3, err := RestoreKeyedBackend(testConfig(t, kind, 128, fullRange), storage, []*KeyedStateHandle{h2})
			require.NoError(t, err)
			defer b3.Close()
			svc3, err := NewTimerService(b3, "t")
			require.NoError(t, err)
			var got []int64
			for _, tm := range svc3.Timers(EventTime, 0) {
				got = append(got, tm.Timestamp)
			}
			assert.Equal(t, []int64{20, 30}, got)
		})
	}
}
