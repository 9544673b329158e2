package lessons

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// The "restores-locally" prediction against what the engine reports for the
// restore after the failure (the keyed state bytes it read from task-local
// copies and from checkpoint storage), lesson-free. With local recovery a
// restarted subtask takes its previous slot (Flink's
// PreviousAllocationSlotSelectionStrategy), so a job spread over two
// TaskManagers that loses one restores partly from local copies: neither
// yes nor no, and the predictor must refuse the question rather than
// answer no. Only-local must be predicted yes, only-remote no: a spread job
// whose lost TaskManager ran none of the keyed subtasks restores them all
// locally, one whose lost TaskManager ran all of them restores them all
// from checkpoint storage.
func TestPredictionRestoresLocallyIsTheEngines(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		tms, slots            int
		localRecovery         bool
		crashTM, crashSubtask string
		sourceP, countP       int
		want                  string // the prediction: yes, no, or "" for refused
	}{
		{"spread over two TaskManagers, tm-1 lost", 3, 1, true, "tm-1", "", 2, 2, ""},
		{"all on tm-1, tm-1 lost", 2, 2, true, "tm-1", "", 2, 2, No},
		{"spread over two TaskManagers, a subtask crashed", 3, 1, true, "", "count#0", 2, 2, Yes},
		{"spread, no local recovery, tm-1 lost", 3, 1, false, "tm-1", "", 2, 2, No},
		{"spread over three TaskManagers, tm-3 lost, no keyed subtask on it", 4, 1, true, "tm-3", "", 3, 2, Yes},
		{"spread over two TaskManagers, tm-1 lost, every keyed subtask on it", 3, 1, true, "tm-1", "", 2, 1, No},
		{"two slots each, tm-2 lost, no keyed subtask on it", 3, 2, true, "tm-2", "", 3, 2, Yes},
		{"two slots each, tm-1 lost, keyed subtasks on both", 3, 2, true, "tm-1", "", 3, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := engine.LoadSpec([]byte(fmt.Sprintf(`
name: localrecovery
backend: fs
operators:
  - {id: source, kind: source, parallelism: %d, options: {partitions: %d, generator: words, records: 400, keys: 50}}
  - {id: tokenizer, kind: tokenizer, parallelism: %d}
  - {id: count, kind: count, parallelism: %d}
  - {id: sink, kind: sink, parallelism: 1}
edges:
  - {from: source, to: tokenizer, partitioner: forward}
  - {from: tokenizer, to: count, partitioner: hash}
  - {from: count, to: sink, partitioner: rebalance}
checkpointing: {interval: 1h, localRecovery: %v}
cluster: {taskManagers: %d, slotsPerTaskManager: %d, heartbeatTimeout: 50ms}
`, tc.sourceP, tc.sourceP, tc.sourceP, tc.countP, tc.localRecovery, tc.tms, tc.slots)))
			require.NoError(t, err)
			p, perr := newPrediction(&predictFile{Kind: "restores-locally", TaskManager: tc.crashTM}, newJobState(MainJob, spec))
			if tc.want == "" {
				require.Error(t, perr, "the predictor answered %v", p)
			} else {
				require.NoError(t, perr)
				require.Equal(t, tc.want, p.Answer)
			}

			s, err := engine.NewStepper(spec, engine.Options{Dir: t.TempDir()})
			require.NoError(t, err)
			defer s.Close()
			s.Steps(150)
			require.NoError(t, s.Do(engine.Command{Name: engine.CmdTriggerCheckpoint}))
			_, err = s.RunUntil(func(s *engine.Snapshot) bool { return s.Checkpoints.Counts.Completed >= 1 }, 20000)
			require.NoError(t, err, "a checkpoint completes")
			attempt := s.Snapshot().Job.Attempt
			if tc.crashTM != "" {
				require.NoError(t, s.Do(engine.Command{Name: engine.CmdCrashTaskManager, TaskManager: tc.crashTM}))
			} else {
				require.NoError(t, s.Do(engine.Command{Name: engine.CmdCrashSubtask, Task: tc.crashSubtask}))
			}
			_, err = s.RunUntil(func(s *engine.Snapshot) bool {
				return s.Job.Status == engine.JobRunning && s.Job.Attempt > attempt && s.Checkpoints.LatestRestore != nil && s.Checkpoints.Counts.Restored > 0
			}, 50000)
			require.NoError(t, err, "the job restores and runs again")
			r := s.Snapshot().Checkpoints.LatestRestore
			require.Positive(t, r.LocalBytes+r.RemoteBytes, "the restore read keyed state")

			if r.LocalBytes > 0 && r.RemoteBytes > 0 {
				assert.Error(t, perr, "the restore read %d bytes locally and %d from checkpoint storage: partly local, neither yes nor no, yet the predictor answered %v", r.LocalBytes, r.RemoteBytes, p)
				return
			}
			require.NoError(t, perr, "the restore read %d bytes locally and %d from checkpoint storage", r.LocalBytes, r.RemoteBytes)
			assert.Equal(t, yesNo(r.RemoteBytes == 0), p.Answer, "the restore read %d bytes locally and %d from checkpoint storage", r.LocalBytes, r.RemoteBytes)
		})
	}
}
