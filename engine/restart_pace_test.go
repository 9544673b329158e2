package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// teachingPace is the web's TeachingPace: the Stepper's virtual seconds per
// real second when a learner watches.
const teachingPace = 0.02

// At the teaching pace a crash is followed by RUNNING again within a few of
// Play's ticks, whether the whole job restarts or one pipelined region: the
// restart backoff (exponential-delay, 1 s of job time) passes as an idle
// Stepper passes it. Before, a region restart left the other region
// running, so the 1 s backoff took 1 s / 0.02 = 50 s on screen (over 3,000
// ticks of 16 ms) while a global restart took a few. Ticks are counted,
// not wall time; each is given 16 ms of elapsed real time, as Play's ticker.
func TestRestartBackoffPassesQuicklyAtTeachingPace(t *testing.T) {
	const tick = 16 * time.Millisecond
	for _, failover := range []string{FailoverRegion, FailoverFull} {
		t.Run(failover, func(t *testing.T) {
			spec := etlSpec(200000)
			spec.Operators[0].Options["rate"] = 2000.0
			spec.Cluster.Failover = failover
			s, _ := newTestStepper(t, spec)
			require.NoError(t, s.SetSpeed(teachingPace))
			_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 1 && allRunning(s) }, 50000)
			require.NoError(t, err)
			require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "source#0"}))
			snap := s.Snapshot()
			require.Equal(t, JobRestarting, snap.Job.Status)
			require.Equal(t, RestartExponentialDelay, snap.Job.Restart.Strategy)
			// A backoff of about 1 s: more than 3,000 ticks at the pace.
			ticksAtPace := int(float64(snap.Job.Restart.NextDelay) / teachingPace / float64(tick))
			require.Greater(t, ticksAtPace, 2500)
			ticks := 0
			for ; ticks < 300; ticks++ {
				s.mu.Lock()
				more := s.playTick(tick, time.Now())
				s.mu.Unlock()
				require.True(t, more)
				if snap := s.Snapshot(); snap.Job.Status == JobRunning && allRunning(&snap) {
					break
				}
			}
			t.Logf("RUNNING again after %d ticks", ticks)
			assert.Less(t, ticks, 300, "RUNNING again within 300 ticks (the backoff alone is %d ticks at the teaching pace)", ticksAtPace)
			// Afterwards the clock runs at the teaching pace again.
			before := s.Snapshot().At
			for range 10 {
				s.mu.Lock()
				s.playTick(tick, time.Now())
				s.mu.Unlock()
			}
			assert.Less(t, s.Snapshot().At-before, 200*time.Millisecond, "10 ticks at 0.02 are about 3.2 ms of job time (a step may overshoot), far from the backoff's 1 s")
		})
	}
}
