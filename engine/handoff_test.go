package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A job moves from the Stepper to Live and back, with crashes and a rescale
// on both sides, and still ends exactly once.
func TestSwitchDrivers(t *testing.T) {
	for _, be := range []Backend{BackendMemory, BackendPebble} {
		t.Run(string(be), func(t *testing.T) {
			spec := wordCount(8000, 2, 2, 0)
			spec.Backend = be
			spec.Checkpointing.Interval = ms(20)
			spec.Restart.Delay = ms(5)
			spec.Operators[0].Options["rate"] = 10000.0
			log := &eventLog{}
			s, err := NewStepper(spec, Options{Dir: t.TempDir(), RecordEvents: log.add})
			require.NoError(t, err)
			s.Steps(400)
			require.NoError(t, s.Do(Command{Name: CmdTriggerCheckpoint}))
			s.Steps(3) // leave messages and timers in flight
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			l, err := s.ToLive(ctx)
			require.NoError(t, err)
			assert.True(t, errors.Is(s.Do(Command{Name: CmdTriggerCheckpoint}), ErrClosed))
			assert.Equal(t, "closed", s.Snapshot().Driver)
			require.NoError(t, s.Close(), "closing a handed-off driver does nothing")
			// Let the Live run go on for a while before the crash, so the
			// crash meets it mid-stream; no check depends on how far it got.
			time.Sleep(60 * time.Millisecond)
			require.NoError(t, l.Do(Command{Name: CmdCrashSubtask, Task: "tokenizer#1"}))
			waitLive(t, l, func(s *Snapshot) bool { return s.Job.Attempt >= 2 && allRunning(s) })
			time.Sleep(40 * time.Millisecond) // hand off mid-stream; no check depends on where

			s2, err := l.ToStepper()
			require.NoError(t, err)
			assert.Equal(t, "closed", l.Snapshot().Driver)
			assert.Equal(t, "step", s2.Snapshot().Driver)
			require.NoError(t, s2.Do(Command{Name: CmdRescale, Operator: "count", Parallelism: 3}))
			_, err = s2.RunUntil(func(s *Snapshot) bool { return s.Counters.Rescales == 1 && allRunning(s) }, 50000)
			require.NoError(t, err)
			s2.Steps(200)
			require.NoError(t, s2.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-1"}))
			require.NoError(t, s2.Do(Command{Name: CmdRestartTaskManager, TaskManager: "tm-1"}))

			l2, err := s2.ToLive(ctx)
			require.NoError(t, err)
			defer l2.Close()
			require.NoError(t, l2.WaitDrained(ctx))
			cmp, err := l2.Compare()
			require.NoError(t, err)
			assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0].truncated(5))
			assert.Equal(t, int64(8000), cmp[0].Records)
			assert.Len(t, log.kinds(EvDriver), 3)
		})
	}
}

// waitLive polls l's snapshot until pred holds. The bound is generous (two
// minutes): it decides only how long a failing test takes, never whether a
// passing one passes on a busy machine.
func waitLive(t *testing.T, l *Live, pred func(s *Snapshot) bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		s := l.Snapshot()
		if pred(&s) {
			return
		}
		require.True(t, time.Now().Before(deadline), "condition never held")
		time.Sleep(time.Millisecond)
	}
}
