package lessons

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// TestTrackerKeepsTheFirstAction: lesson 05's step 2 on the Stepper, as a
// viewer follows it. The learner crashes tm-1; the job restarts; then a
// second click asks to crash tm-1 again (the engine refuses: it is already
// lost). Judged from the second click alone, "restarted in this step"
// can never hold; the Tracker keeps the first action's moment and ticks.
func TestTrackerKeepsTheFirstAction(t *testing.T) {
	c, err := Default()
	require.NoError(t, err)
	l, ok := c.Lesson("05-failure-and-recovery")
	require.True(t, ok)
	st, ok := l.Step("kill-taskmanager")
	require.True(t, ok)
	pos, err := l.PlayTo(context.Background(), 1, RunOptions{Dir: t.TempDir()})
	require.NoError(t, err)
	s := pos.Stepper
	defer s.Close()
	_, err = s.RunUntil(func(sn *engine.Snapshot) bool { return NotReady(sn) == "" }, 1_000_000)
	require.NoError(t, err)

	sub := s.Subscribe(1 << 16)
	defer sub.Close()
	tr := NewTracker(st, s.Snapshot())
	require.NoError(t, s.Do(engine.Command{Name: "crash-taskmanager", TaskManager: "tm-1"}))
	_, err = s.RunUntil(func(sn *engine.Snapshot) bool { return sn.Counters.Restarts > 0 }, 1_000_000)
	require.NoError(t, err)
	second := s.Snapshot()
	require.NotEmpty(t, NotReady(&second), "the restarted job does not run yet")
	require.Error(t, s.Do(engine.Command{Name: "crash-taskmanager", TaskManager: "tm-1"}), "tm-1 is already lost")
	tr.Restart(second)
	alone := NewTracker(st, second)
	_, err = s.RunUntil(func(sn *engine.Snapshot) bool { return NotReady(sn) == "" }, 1_000_000)
	require.NoError(t, err)
	for drained := false; !drained; {
		select {
		case e := <-sub.C:
			tr.Observe(e)
			alone.Observe(e)
		default:
			drained = true
		}
	}
	now := s.Snapshot()
	res := tr.Check(now, s)
	assert.True(t, res.Done, "judged from the first click: %+v", res.Checks)
	assert.Equal(t, 2, tr.Starts())
	res = alone.Check(now, s)
	assert.False(t, res.Done, "from the refused second click alone the step cannot hold")
	assert.Contains(t, res.Checks[1].Why, "restarted 0 time(s)")
}

// TestTrackerStartsAreBounded: many repeated clicks keep the first moment
// and the latest ones.
func TestTrackerStartsAreBounded(t *testing.T) {
	st := &Step{}
	tr := NewTracker(st, engine.Snapshot{Step: 1})
	for i := 2; i <= 20; i++ {
		tr.Restart(engine.Snapshot{Step: int64(i)})
	}
	require.Equal(t, maxStarts, tr.Starts())
	assert.EqualValues(t, 1, tr.starts[0].Step, "the first action is kept")
	assert.EqualValues(t, 20, tr.starts[maxStarts-1].Step, "and the latest")
}
