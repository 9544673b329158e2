//go:build !js

package state

// Benchmarks of timers and state TTL, each beside its baseline in the same
// run (see bench_test.go for the metrics):
//
//	go test -run '^$' -bench 'Timers|TTL' -benchtime 200000x ./state/

import (
	"container/heap"
	"path/filepath"
	"testing"
	"time"

	"github.com/statelab/statelab/rescale"
)

type bareTimer struct {
	ts  int64
	key string
}

type bareTimerHeap []bareTimer

func (h bareTimerHeap) Len() int           { return len(h) }
func (h bareTimerHeap) Less(i, j int) bool { return h[i].ts < h[j].ts }
func (h bareTimerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *bareTimerHeap) Push(x any)        { *h = append(*h, x.(bareTimer)) }
func (h *bareTimerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func benchBackend(b *testing.B, kind BackendKind) KeyedBackend {
	cfg := KeyedBackendConfig{Kind: kind, MaxParallelism: benchMaxP, KeyGroupRange: rescale.KeyGroupRange{Start: 0, End: benchMaxP - 1}}
	if kind == Pebble {
		cfg.Dir = filepath.Join(b.TempDir(), "backend")
	}
	kb, err := NewKeyedBackend(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { kb.Close() })
	return kb
}

// BenchmarkTimers: per record, SetCurrentKey and register an event-time
// timer one step ahead of the record's time; every 1000 records the
// watermark advances and fires the due timers (each fired timer sets its
// key and is removed from the backend). Baseline: push the same
// (timestamp, key) pairs on a bare container/heap and pop the due ones.
// ratio = bare/backend: the timer service's share of a bare heap's
// throughput. Timers per second = 1e9 / backend-ns/op.
func BenchmarkTimers(b *testing.B) {
	for _, kind := range []BackendKind{Memory, Pebble} {
		b.Run(string(kind), func(b *testing.B) {
			const nkeys = 10_000
			ks := makeKeys(nkeys, 2)
			kb := benchBackend(b, kind)
			svc, err := NewTimerService(kb, "bench")
			if err != nil {
				b.Fatal(err)
			}
			var bare bareTimerHeap
			fired := 0
			fire := func(Timer) error { fired++; return nil }
			interleave(b, func(i int) {
				k := ks.order[i%nkeys]
				kb.SetCurrentKeyString(ks.strs[k], ks.kgs[k])
				if err := svc.Register(EventTime, "", int64(i)+1); err != nil {
					b.Fatal(err)
				}
				if i%1000 == 999 {
					if err := svc.Advance(EventTime, int64(i), fire); err != nil {
						b.Fatal(err)
					}
				}
			}, func(i int) {
				heap.Push(&bare, bareTimer{ts: int64(i) + 1, key: ks.strs[ks.order[i%nkeys]]})
				if i%1000 == 999 {
					for len(bare) > 0 && bare[0].ts <= int64(i) {
						heap.Pop(&bare)
						fired++
					}
				}
			})
		})
	}
}

// BenchmarkTTLValueState: per record, SetCurrentKey + ValueState Value +
// Update with a TTL (default cleanup, a clock that advances 1 ms per
// record, a TTL no value reaches) against the same state without TTL on
// the same backend kind. ratio = plain/ttl; overhead-ns/op = ttl - plain,
// the TTL's cost per record (a read and a write: two state accesses, each
// also a cleanup step, as in Flink). nocleanup-ns/op and ratio-nocleanup:
// the same with cleanup off (ttlCleanupSize -1), the cost of the timestamp
// alone.
func BenchmarkTTLValueState(b *testing.B) {
	for _, kind := range []BackendKind{Memory, Pebble} {
		b.Run(string(kind), func(b *testing.B) {
			const nkeys = 100_000
			ks := makeKeys(nkeys, 3)
			var now int64
			clock := ClockFunc(func() int64 { return now })
			plainB, ttlB, bareB := benchBackend(b, kind), benchBackend(b, kind), benchBackend(b, kind)
			plain, _ := Value(plainB, "count", Int64Codec)
			ttl, err := Value(ttlB, "count", Int64Codec, WithTTL(TTLConfig{TTL: 1000 * time.Hour, Clock: clock}))
			if err != nil {
				b.Fatal(err)
			}
			bare, err := Value(bareB, "count", Int64Codec, WithTTL(TTLConfig{TTL: 1000 * time.Hour, Clock: clock, CleanupSize: -1}))
			if err != nil {
				b.Fatal(err)
			}
			for i := range nkeys {
				plainB.SetCurrentKey(ks.keys[i], ks.kgs[i])
				plain.Update(0)
				ttlB.SetCurrentKey(ks.keys[i], ks.kgs[i])
				ttl.Update(0)
				bareB.SetCurrentKey(ks.keys[i], ks.kgs[i])
				bare.Update(0)
			}
			ns := measure(b, func(i int) {
				k := ks.order[i%nkeys]
				plainB.SetCurrentKey(ks.keys[k], ks.kgs[k])
				v, _, _ := plain.Value()
				plain.Update(v + 1)
			}, func(i int) {
				now++
				k := ks.order[i%nkeys]
				ttlB.SetCurrentKey(ks.keys[k], ks.kgs[k])
				v, _, _ := ttl.Value()
				ttl.Update(v + 1)
			}, func(i int) {
				now++
				k := ks.order[i%nkeys]
				bareB.SetCurrentKey(ks.keys[k], ks.kgs[k])
				v, _, _ := bare.Value()
				bare.Update(v + 1)
			})
			b.ReportMetric(ns[0], "plain-ns/op")
			b.ReportMetric(ns[1], "ttl-ns/op")
			b.ReportMetric(ns[0]/ns[1], "ratio")
			b.ReportMetric(ns[1]-ns[0], "overhead-ns/op")
			b.ReportMetric(ns[2], "nocleanup-ns/op")
			b.ReportMetric(ns[0]/ns[2], "ratio-nocleanup")
		})
	}
}
