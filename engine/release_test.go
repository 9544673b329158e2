package engine

import (
	"container/heap"
	"math/rand/v2"
	"testing"
	"time"
)

// TestDueTimersMatchAFullScan: dueTimers, which visits only the due part of
// the timer heap, yields exactly the candidates of a scan of the whole
// queue, in the same order (the seeded pick depends on it).
func TestDueTimersMatchAFullScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 500 {
		var q timerQueue
		for i := range rng.IntN(300) {
			heap.Push(&q, stepTimer{at: time.Duration(rng.IntN(1000)), seq: int64(i)})
		}
		s := &Stepper{timers: q, clock: time.Duration(rng.IntN(1100))}
		var want []candidate
		for _, tm := range s.timers {
			if tm.at <= s.clock {
				want = append(want, candidate{kind: candTimer, seq: tm.seq})
			}
		}
		got := s.dueTimers(nil)
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d due timers, a full scan finds %d", trial, len(got), len(want))
		}
		for i := range got {
			if got[i].seq != want[i].seq || got[i].kind != candTimer {
				t.Fatalf("trial %d: candidate %d is timer %d, a full scan gives %d", trial, i, got[i].seq, want[i].seq)
			}
		}
	}
}
