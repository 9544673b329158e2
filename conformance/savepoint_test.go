package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/savepoint"
)

// flinkMetadata is flinkref's metadata.json: what Flink's own
// Checkpoints.loadCheckpointMetadata read from the _metadata beside it.
type flinkMetadata struct {
	CheckpointID int64 `json:"checkpointId"`
	MasterStates int   `json:"masterStates"`
	Operators    []struct {
		OperatorID     string `json:"operatorId"`
		Vertex         string `json:"vertex"`
		Parallelism    int    `json:"parallelism"`
		MaxParallelism int    `json:"maxParallelism"`
		Subtasks       []struct {
			Subtask              int `json:"subtask"`
			ManagedOperatorState []struct {
				States map[string]struct {
					Mode    string  `json:"mode"`
					Offsets []int64 `json:"offsets"`
				} `json:"states"`
			} `json:"managedOperatorState"`
			ManagedKeyedState []struct {
				Type          string `json:"type"`
				KeyGroupRange struct {
					Start int `json:"start"`
					End   int `json:"end"`
				} `json:"keyGroupRange"`
				KeyGroupOffsets []int64 `json:"keyGroupOffsets"`
				SharedState     []struct {
					LocalPath string `json:"localPath"`
				} `json:"sharedState"`
				PrivateState []struct {
					LocalPath string `json:"localPath"`
				} `json:"privateState"`
			} `json:"managedKeyedState"`
		} `json:"subtasks"`
	} `json:"operators"`
}

// TestSavepointReaderAgainstFlink reads every savepoint and retained
// checkpoint a real Flink wrote into flinkref/testdata/savepoints (Flink 1.20
// and 2.3; hashmap and RocksDB; canonical and native savepoints, retained
// checkpoints) with StateLab's savepoint reader and compares it with what
// Flink's own Checkpoints.loadCheckpointMetadata read from the same file.
// It needs no Java: the files and Flink's reading of them are committed
// (regenerate with `flinkref savepoints flinkref/testdata/savepoints`).
func TestSavepointReaderAgainstFlink(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot(), "flinkref", "testdata", "savepoints", "*", "*", "_metadata"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no savepoints under flinkref/testdata/savepoints")
	for _, f := range files {
		dir := filepath.Dir(f)
		name, _ := filepath.Rel(filepath.Join(repoRoot(), "flinkref", "testdata", "savepoints"), dir)
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			md, err := savepoint.Read(raw)
			require.NoError(t, err, "StateLab's reader refuses a _metadata Flink wrote")
			b, err := os.ReadFile(filepath.Join(dir, "metadata.json"))
			require.NoError(t, err)
			var want flinkMetadata
			require.NoError(t, json.Unmarshal(b, &want))

			assert.Equal(t, want.CheckpointID, md.CheckpointID, "checkpoint id")
			assert.Equal(t, want.MasterStates, len(md.MasterStates), "master states")
			got := map[string]*savepoint.OperatorState{}
			for i := range md.Operators {
				got[md.Operators[i].ID] = &md.Operators[i]
			}
			require.Len(t, md.Operators, len(want.Operators), "operators")
			for _, wo := range want.Operators {
				o := got[wo.OperatorID]
				if !assert.NotNil(t, o, "operator %s (%s) missing", wo.OperatorID, wo.Vertex) {
					continue
				}
				assert.Equal(t, wo.Parallelism, o.Parallelism, "%s parallelism", wo.Vertex)
				assert.Equal(t, wo.MaxParallelism, o.MaxParallelism, "%s max parallelism", wo.Vertex)
				subs := map[int]*savepoint.SubtaskState{}
				for i := range o.Subtasks {
					subs[o.Subtasks[i].Index] = &o.Subtasks[i]
				}
				for _, ws := range wo.Subtasks {
					s := subs[ws.Subtask]
					if !assert.NotNil(t, s, "%s subtask %d missing", wo.Vertex, ws.Subtask) {
						continue
					}
					// Operator state: names, modes and element offsets.
					wantStates := map[string][2]any{}
					for _, h := range ws.ManagedOperatorState {
						for n, st := range h.States {
							wantStates[n] = [2]any{st.Mode, st.Offsets}
						}
					}
					gotStates := map[string][2]any{}
					if s.ManagedOperatorState != nil {
						for _, st := range s.ManagedOperatorState.States {
							gotStates[st.Name] = [2]any{string(st.Mode), st.Offsets}
						}
					}
					assert.Equal(t, jsonOf(wantStates), jsonOf(gotStates), "%s#%d operator state", wo.Vertex, ws.Subtask)
					// Keyed state: handle kind, key-group range, per-group offsets or files.
					if len(ws.ManagedKeyedState) == 0 {
						assert.Nil(t, s.ManagedKeyedState, "%s#%d keyed state", wo.Vertex, ws.Subtask)
						continue
					}
					require.Len(t, ws.ManagedKeyedState, 1)
					wk := ws.ManagedKeyedState[0]
					k := s.ManagedKeyedState
					if !assert.NotNil(t, k, "%s#%d keyed state missing", wo.Vertex, ws.Subtask) {
						continue
					}
					assert.Equal(t, wk.Type, k.Kind, "%s#%d keyed handle", wo.Vertex, ws.Subtask)
					assert.Equal(t, [2]int{wk.KeyGroupRange.Start, wk.KeyGroupRange.End}, [2]int{k.Range.Start, k.Range.End}, "%s#%d key groups", wo.Vertex, ws.Subtask)
					if wk.KeyGroupOffsets != nil {
						assert.Equal(t, wk.KeyGroupOffsets, k.Offsets, "%s#%d key-group offsets", wo.Vertex, ws.Subtask)
					}
					var wantFiles, gotFiles []string
					for _, x := range wk.SharedState {
						wantFiles = append(wantFiles, "shared:"+x.LocalPath)
					}
					for _, x := range wk.PrivateState {
						wantFiles = append(wantFiles, "private:"+x.LocalPath)
					}
					for _, x := range k.SharedFiles {
						gotFiles = append(gotFiles, "shared:"+x.LocalPath)
					}
					for _, x := range k.PrivateFiles {
						gotFiles = append(gotFiles, "private:"+x.LocalPath)
					}
					assert.ElementsMatch(t, wantFiles, gotFiles, "%s#%d incremental files", wo.Vertex, ws.Subtask)
				}
			}
		})
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
