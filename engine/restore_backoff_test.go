package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A restore that fails is a failure of the restored tasks, after the restart
// the backoff led to: with exponential-delay it is a new attempt with the
// next backoff, not merged into the backoff that already elapsed. Flink's
// ExponentialDelayRestartBackoffTimeStrategy.notifyFailure merges only a
// failure at or before nextRestartTimestamp, and its tasks fail to read
// the broken state after they were deployed, so always after it; StateLab
// restores at the restart's instant, and used to merge the failure into the
// elapsed backoff and restart again at once, forever, without its clock
// moving. Conformance `broken-latest-checkpoint` runs the same on Flink.
func TestBrokenCheckpointUnderExponentialDelayCountsEachRestore(t *testing.T) {
	spec := wordCount(300, 2, 2, 0)
	spec.Backend = BackendFS
	spec.Checkpointing.Retained = 2
	spec.Restart = RestartSpec{Strategy: RestartExponentialDelay, Attempts: 2, Delay: ms(300), Multiplier: 2, Jitter: -1}
	dir := t.TempDir()
	log := &eventLog{}
	s, err := NewStepper(spec, Options{Dir: dir, RecordEvents: log.add})
	require.NoError(t, err)
	defer s.Close()
	s.Steps(100)
	completeCheckpoint(t, s)
	s.Steps(100)
	latest := completeCheckpoint(t, s)
	// Every state file of the latest checkpoint goes missing.
	chk := filepath.Join(dir, "checkpoints", s.Snapshot().Job.CheckpointDir, fmt.Sprintf("chk-%d", latest))
	entries, err := os.ReadDir(chk)
	require.NoError(t, err)
	removed := 0
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != "_metadata" {
			require.NoError(t, os.Remove(filepath.Join(chk, e.Name())))
			removed++
		}
	}
	require.Positive(t, removed, "no state file in %s", chk)
	crashAt := s.Snapshot().At
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "source#0"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobFailed }, 20000)
	require.NoError(t, err, "exponential-delay with 2 attempts gives up after two failed restores")

	failed := log.kinds(EvRestoreFailed)
	require.Len(t, failed, 2, "each of the 2 restarts fails to restore the broken checkpoint")
	for _, e := range failed {
		assert.Contains(t, e.Message, fmt.Sprintf("from checkpoint %d", latest), "no fallback to an older checkpoint")
	}
	// The first restart after 300 ms, the second after 600 ms more (the
	// backoff doubled: a new attempt); the job fails at the second restore.
	assert.Equal(t, crashAt+900*time.Millisecond, failed[1].At, "the restores at 300 ms and 300+600 ms after the crash")
	var restarting []string
	for _, e := range log.kinds(EvJobStatus) {
		if e.Status == string(JobRestarting) {
			restarting = append(restarting, e.Message)
		}
	}
	require.Len(t, restarting, 2)
	assert.True(t, strings.Contains(restarting[1], "restarts in 600ms"), restarting[1])
	// The third failure (the second failed restore) is attempt 3, past 2: refused.
	assert.Equal(t, 3, s.Snapshot().Job.Restart.Attempt)
}
