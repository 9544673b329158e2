//go:build !js

package engine

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMeasureChainingAndUnaligned gives the figures of docs/benchmarks.md
// for issue 18 items 5 and 6; it asserts nothing. Run it with
// MEASURE_CHAINING=1 go test -count=1 -run TestMeasureChainingAndUnaligned -v ./engine/
//
// First, word count with chaining against the same job without: Live wall
// time and process CPU to the end of input (median of alternating runs),
// and the Stepper's steps to the end (deterministic: the schedulable units
// a chain saves). Second, checkpoint duration under backpressure, unaligned
// against aligned, on the Stepper's virtual clock (deterministic for the
// seed): four sources into one keyed count whose input channels stay full.
func TestMeasureChainingAndUnaligned(t *testing.T) {
	if os.Getenv("MEASURE_CHAINING") == "" {
		t.Skip("set MEASURE_CHAINING=1 to measure")
	}
	const lines = 300_000
	spec := func(chained bool) *JobSpec {
		s := chainedWordCount(lines, 2)
		s.Runtime.FIFO = false
		s.Checkpointing.Interval = Duration(20 * time.Millisecond)
		s.Chaining = &chained
		return s
	}
	runLive := func(chained bool) (time.Duration, time.Duration) {
		l, err := NewLive(spec(chained), Options{Dir: t.TempDir()})
		require.NoError(t, err)
		defer l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		w := startWindow(0)
		require.NoError(t, l.Start(ctx))
		require.NoError(t, l.WaitDrained(ctx))
		tp := w.end(lines)
		cmp, err := l.Compare()
		require.NoError(t, err)
		require.True(t, cmp[0].ExactlyOnce)
		return tp.Elapsed, tp.CPU
	}
	var wall, cpu [2][]time.Duration
	for range 5 {
		for i, chained := range []bool{false, true} {
			w, c := runLive(chained)
			wall[i], cpu[i] = append(wall[i], w), append(cpu[i], c)
		}
	}
	med := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	t.Logf("word count, %d lines, parallelism 2, Live: unchained %v wall %v CPU; chained %v wall %v CPU; chained/unchained wall %.2f, CPU %.2f",
		lines, med(wall[0]), med(cpu[0]), med(wall[1]), med(cpu[1]),
		float64(med(wall[1]))/float64(med(wall[0])), float64(med(cpu[1]))/float64(med(cpu[0])))

	steps := func(chained bool) int {
		s, err := NewStepper(spec(chained), Options{Dir: t.TempDir()})
		require.NoError(t, err)
		defer s.Close()
		n, err := s.RunUntilDrained(50_000_000)
		require.NoError(t, err)
		return n
	}
	su, sc := steps(false), steps(true)
	t.Logf("word count, %d lines, Stepper steps to the end: unchained %d, chained %d; chained/unchained %.2f", lines, su, sc, float64(sc)/float64(su))

	// Checkpoint duration under backpressure.
	bp := func(unaligned bool) (mean, align time.Duration, channel int64, n int) {
		s := &JobSpec{
			Name: "backpressure", Seed: 5,
			Operators: []OperatorSpec{
				{ID: "source", Kind: KindSource, Parallelism: 4, Options: map[string]any{"partitions": 4, "records": 40_000, "keys": 500, "wordsPerLine": 1}},
				{ID: "count", Kind: KindCount, Parallelism: 1},
				{ID: "sink", Kind: KindSink, Parallelism: 1},
			},
			Edges: []EdgeSpec{
				{From: "source", To: "count", Partitioner: Hash},
				{From: "count", To: "sink", Partitioner: Forward},
			},
			Checkpointing: CheckpointingSpec{Interval: Duration(50 * time.Millisecond), Unaligned: unaligned},
			Cluster:       ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 4},
			Runtime:       RuntimeSpec{ChannelCapacity: 16},
		}
		st, err := NewStepper(s, Options{Dir: t.TempDir()})
		require.NoError(t, err)
		defer st.Close()
		_, err = st.RunUntilDrained(50_000_000)
		require.NoError(t, err)
		cmp, err := st.Compare()
		require.NoError(t, err)
		require.True(t, cmp[0].ExactlyOnce)
		var sum, al time.Duration
		for _, c := range st.Snapshot().Checkpoints.History {
			if c.Status != CheckpointCompleted {
				continue
			}
			n++
			sum += c.EndToEndDuration
			channel += c.ChannelStateSize
			for _, a := range c.Subtasks {
				if a.Task == "count#0" {
					al += a.AlignmentDuration
				}
			}
		}
		return sum / time.Duration(n), al / time.Duration(n), channel / int64(n), n
	}
	am, aa, _, an := bp(false)
	um, ua, uc, un := bp(true)
	t.Logf("checkpoints under backpressure (4 sources -> 1 count, channel capacity 16, Stepper virtual time): aligned mean %v (count#0 alignment %v, %d checkpoints); unaligned mean %v (alignment %v, %d B channel state per checkpoint, %d checkpoints); unaligned/aligned duration %.2f",
		am, aa, an, um, ua, uc, un, float64(um)/float64(am))
}
