package bench

import (
	"context"
	"fmt"
	"time"
)

// GroupSessions measures what sessions cost the server (issue 17): a
// share link's replay must cost time linear in its steps, an idle sandbox
// little memory, and a classroom whose 64 students each fork the run must
// fit a laptop.
const GroupSessions = "sessions"

// SessionsFuncs measure StateLab's web server (package web implements them;
// cmd/statelab injects them, since web sits above bench).
type SessionsFuncs struct {
	// Replay replays a sandbox share link of steps steps with the given
	// settings (as /ws?template=wordcount takes them) and returns the
	// steps actually taken (a run that drains stops early) and the time.
	Replay func(ctx context.Context, settings map[string]string, steps int64) (taken int64, elapsed time.Duration, err error)
	// IdleHeap opens n sandboxes, plays them, lets their viewers leave
	// until the runs pause, and returns the live heap per session in bytes.
	IdleHeap func(ctx context.Context, n int) (float64, error)
	// ClassroomRSS opens a classroom, lets forks students fork its run and
	// watch their copies, and returns the process's resident set in bytes
	// and its live heap.
	ClassroomRSS func(ctx context.Context, forks int) (rss, heap float64, err error)
}

// Targets of the sessions group (issue 17).
const (
	ReplaySlopeTarget     = 1.15
	IdleHeapTarget        = 4 << 20
	ClassroomRSSTarget    = 512 << 20
	ClassroomForks        = 64
	idleSandboxesMeasured = 8
)

// replaySeries are the share links whose replay is timed: a default
// sandbox, and one at the server's default bounds (10,000 keys, Flink's
// least checkpoint interval of 10 ms), where every checkpoint copies the
// most state.
var replaySeries = []struct {
	name     string
	settings map[string]string
	scale    int64 // steps are the sizes divided by scale
}{
	{"default sandbox", map[string]string{}, 1},
	{"10,000 keys, 10 ms checkpoints", map[string]string{"keys": "10000", "interval": "10ms"}, 1},
}

func (r *runner) sessions(ctx context.Context) error {
	f := r.cfg.Sessions
	if f == nil {
		r.note("sessions: StateLab's web server was not injected (Config.Sessions); nothing measured")
		return nil
	}
	// From 40,000 steps: the first tens of thousands of a run are its
	// start, while its state grows to the source's keys (every checkpoint
	// copying more of it), not its steady cost.
	steps := []int64{50_000, 100_000, 200_000, 400_000}
	if r.cfg.Quick {
		steps = []int64{40_000, 80_000, 160_000, 320_000}
	}
	if r.cfg.Sizes != nil && len(r.cfg.Sizes.ReplaySteps) > 0 {
		steps = r.cfg.Sizes.ReplaySteps
	}
	for _, sr := range replaySeries {
		var s Series
		details := map[string]float64{}
		for _, n := range steps {
			n /= sr.scale
			var taken int64
			trials, err := Interleave(r.rounds, Trial{Name: "replay", Run: func() (float64, error) {
				got, d, err := f.Replay(ctx, sr.settings, n)
				taken = got
				return d.Seconds(), err
			}})
			if err != nil {
				return fmt.Errorf("replay %d steps: %w", n, err)
			}
			sec := Median(trials[0])
			s.Points = append(s.Points, Point{X: float64(taken), Y: sec})
			details[fmt.Sprintf("seconds@%d", taken)] = sec
			fmt.Fprintf(r.log, "bench: sessions   replay %s, %d steps: %.3fs\n", sr.name, taken, sec)
		}
		slope := Slope(s)
		r.add(Case{Group: GroupSessions, Name: "share-link replay time against steps, " + sr.name, Metric: MetricSlope,
			Value: slope, Baseline: "linear growth", BaselineValue: 1, Target: AtMost(ReplaySlopeTarget), Details: details})
	}

	heap, err := f.IdleHeap(ctx, idleSandboxesMeasured)
	if err != nil {
		return fmt.Errorf("idle sandboxes: %w", err)
	}
	r.add(Case{Group: GroupSessions, Name: "live heap of one idle sandbox", Metric: MetricBytes,
		Value: heap, Baseline: "target 4 MiB", BaselineValue: IdleHeapTarget, Target: AtMost(1),
		Details: map[string]float64{"sandboxes": idleSandboxesMeasured}})

	forks := ClassroomForks
	if r.cfg.Sizes != nil && r.cfg.Sizes.ClassroomForks > 0 {
		forks = r.cfg.Sizes.ClassroomForks
	}
	rss, live, err := f.ClassroomRSS(ctx, forks)
	if err != nil {
		return fmt.Errorf("classroom forks: %w", err)
	}
	r.add(Case{Group: GroupSessions, Name: fmt.Sprintf("process RSS, classroom of %d forks", forks), Metric: MetricBytes,
		Value: rss, Baseline: "target 512 MiB", BaselineValue: ClassroomRSSTarget, Target: AtMost(1),
		Details: map[string]float64{"forks": float64(forks), "liveHeapBytes": live}})
	return nil
}
