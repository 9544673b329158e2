package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A fork made when the keyed operators have registered their state but
// hold no entry yet (just RUNNING) has that state under the same id: the
// copied handles write into it. Closing a fork leaves the original and
// other forks running.
func TestForkBeforeAnyStateAndCloseIndependently(t *testing.T) {
	for _, backend := range []Backend{BackendMemory, BackendPebble} {
		t.Run(string(backend), func(t *testing.T) {
			s, err := NewStepper(ChaosSpec(3, 600, backend, SinkExactlyOnce), Options{Dir: t.TempDir()})
			require.NoError(t, err)
			defer s.Close()
			_, err = s.RunUntil(func(sn *Snapshot) bool {
				for _, op := range sn.Job.Operators {
					for _, st := range op.Subtasks {
						if st.Status != TaskRunning {
							return false
						}
					}
				}
				return true
			}, 5000)
			require.NoError(t, err)
			a, err := s.Fork(Options{Dir: t.TempDir()})
			require.NoError(t, err)
			b, err := a.Fork(Options{Dir: t.TempDir()})
			require.NoError(t, err)
			require.NoError(t, a.Close())
			requireExactlyOnce(t, b, "fork of a closed fork")
			requireExactlyOnce(t, s, "original")
			require.NoError(t, b.Close())
		})
	}
}
