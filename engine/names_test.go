package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/state"
)

// A job name is for people: any text, including a space, a slash or "..".
// Its checkpoint directory is a safe name derived from it, the name shown
// stays as typed, and neither the job name nor an operator id can make the
// engine write outside its directory (Options.Dir).
func TestJobAndOperatorNamesStayInsideTheEngineDirectory(t *testing.T) {
	tests := []struct {
		job, countID string
		backend      Backend
		wantDir      string // checkpoint directory name, derived by hand with sha256sum
	}{
		{"word count", "count", BackendFS, "word-count-16eea39c"},
		{"../escape", "count", BackendFS, "escape-1ba7343c"},
		{"/tmp/abs", "count", BackendPebble, "tmp-abs-13caa5c4"},
		{"..", "../../../../../count", BackendPebble, "job-5ec1f7e7"},
		{"wordcount", "count", BackendFS, "wordcount"}, // a safe name is kept as it is
	}
	for _, tc := range tests {
		t.Run(tc.job, func(t *testing.T) {
			skipWithoutBackend(t, tc.backend)
			spec := wordCount(120, 2, 2, 0)
			spec.Name = tc.job
			spec.Backend = tc.backend
			spec.Operators[2].ID = tc.countID
			spec.Edges[1].To, spec.Edges[2].From = tc.countID, tc.countID
			parent := t.TempDir()
			dir := filepath.Join(parent, "engine")
			s, err := NewStepper(spec, Options{Dir: dir})
			require.NoError(t, err)
			defer s.Close()
			s.Steps(80)
			id := completeCheckpoint(t, s)
			require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: taskName(tc.countID, 1)}))
			_, err = s.RunUntil(runningAgain(2), 5000)
			require.NoError(t, err)
			assert.Equal(t, id, subtaskView(t, s.Snapshot(), taskName(tc.countID, 0)).RestoredFrom)
			runToEnd(t, s)

			snap := s.Snapshot()
			assert.Equal(t, tc.job, snap.Job.Name, "the display name is kept")
			assert.Equal(t, tc.wantDir, snap.Job.CheckpointDir)
			assert.Equal(t, state.SafeDirName(tc.job), snap.Job.CheckpointDir)
			_, err = os.Stat(filepath.Join(dir, "checkpoints", tc.wantDir, "shared"))
			assert.NoError(t, err, "the job's checkpoint directory")
			cmp, err := s.Compare()
			require.NoError(t, err)
			assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])

			entries, err := os.ReadDir(parent)
			require.NoError(t, err)
			assert.Equal(t, []string{"engine"}, dirNames(entries), "nothing is written beside the engine directory")
			entries, err = os.ReadDir(filepath.Join(dir, "checkpoints"))
			require.NoError(t, err)
			assert.Equal(t, []string{tc.wantDir}, dirNames(entries))
		})
	}
}
