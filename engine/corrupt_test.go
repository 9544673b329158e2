package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/state"
)

// damageMetadata rewrites checkpoint id's _metadata so that the first
// element of operator state name of operator op is not JSON, with a valid
// header CRC32C (the damage the CRC cannot see: a writer that wrote garbage).
func damageMetadata(t *testing.T, dir, job string, id int64, op, name string) {
	t.Helper()
	p := filepath.Join(dir, "checkpoints", job, fmt.Sprintf("chk-%d", id), "_metadata")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	nl := bytes.IndexByte(b, '\n')
	require.Positive(t, nl)
	var m state.CheckpointMetadata
	require.NoError(t, json.Unmarshal(b[nl+1:], &m))
	done := false
	for i := range m.Operators {
		if m.Operators[i].OperatorID != op {
			continue
		}
		for _, st := range m.Operators[i].Subtasks {
			if st.Operator == nil {
				continue
			}
			for k := range st.Operator.States {
				if st.Operator.States[k].Name == name && len(st.Operator.States[k].Elements) > 0 && !done {
					st.Operator.States[k].Elements[0] = []byte(`{"id": tru`)
					done = true
				}
			}
		}
	}
	require.True(t, done, "checkpoint %d has no element of %s's %q", id, op, name)
	body, err := json.MarshalIndent(&m, "", "  ")
	require.NoError(t, err)
	body = append(body, '\n')
	head := fmt.Sprintf("%s crc32c=%08x length=%d\n", bytes.Fields(b[:nl])[0], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)), len(body))
	// The magic is two words ("STATELAB-CHECKPOINT-METADATA v1").
	head = string(bytes.Join(bytes.Fields(b[:nl])[:2], []byte(" "))) + head[len(bytes.Fields(b[:nl])[0]):]
	require.NoError(t, os.WriteFile(p, append([]byte(head), body...), 0o644))
}

// A sink's pending transaction that does not decode fails the restore with
// a message naming the checkpoint, operator, subtask and state — it is not
// skipped (which would abort a transaction the checkpoint still needs).
func TestCorruptPendingTransactionFailsRestore(t *testing.T) {
	spec := wordCount(300, 2, 2, 0)
	spec.Backend = BackendFS
	spec.Restart = RestartSpec{Strategy: RestartFixedDelay, Attempts: 1, Delay: ms(10)}
	dir := t.TempDir()
	log := &eventLog{}
	s, err := NewStepper(spec, Options{Dir: dir, RecordEvents: log.add})
	require.NoError(t, err)
	defer s.Close()
	s.Steps(100)
	id := completeCheckpoint(t, s)
	damageMetadata(t, dir, spec.Name, id, "sink", "pending-transactions")

	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "sink#0"}))
	_, err = s.RunUntil(func(s *Snapshot) bool { return s.Job.Status == JobFailed }, 5000)
	require.NoError(t, err, "every restore fails, so the strategy gives up")
	failed := log.kinds(EvRestoreFailed)
	require.NotEmpty(t, failed)
	for _, e := range failed {
		assert.Contains(t, e.Message, fmt.Sprintf("checkpoint %d, operator sink, subtask 0, operator state \"pending-transactions\", element 0 does not decode", id))
	}
	assert.Nil(t, s.Snapshot().Checkpoints.LatestRestore)
}

// Source offsets that do not decode: the restore command refuses the
// checkpoint and names what does not decode.
func TestCorruptOffsetsAreAnError(t *testing.T) {
	spec := wordCount(300, 2, 2, 0)
	spec.Backend = BackendFS
	dir := t.TempDir()
	s, err := NewStepper(spec, Options{Dir: dir})
	require.NoError(t, err)
	defer s.Close()
	s.Steps(100)
	id := completeCheckpoint(t, s)
	damageMetadata(t, dir, spec.Name, id, "source", "offsets")

	err = s.Do(Command{Name: CmdRestore, Checkpoint: id})
	require.ErrorIs(t, err, ErrCorruptCheckpoint)
	assert.Contains(t, err.Error(), "operator source")
	assert.Contains(t, err.Error(), `"offsets"`)
}
