package flinkref

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// An exported job chains on Flink exactly when it chains in StateLab:
// job.json says chaining either way, since JobBuilder turns chaining off
// (env.disableOperatorChaining()) for a spec without the field, while a
// StateLab spec without it chains, as Flink's pipeline.operator-chaining
// does by default.
func TestExportSaysChaining(t *testing.T) {
	off, on := false, true
	for _, tc := range []struct {
		name string
		set  *bool
		want bool
	}{{"left out", nil, true}, {"false", &off, false}, {"true", &on, true}} {
		spec := &engine.JobSpec{
			Name: "export-chaining", Seed: 1, Chaining: tc.set,
			Operators: []engine.OperatorSpec{
				{ID: "source", Kind: engine.KindSource, Parallelism: 1, Options: map[string]any{"generator": engine.GeneratorNone, "partitions": 1, "lines": []string{"a b"}}},
				{ID: "tokenizer", Kind: engine.KindTokenizer, Parallelism: 1},
				{ID: "sink", Kind: engine.KindSink, Parallelism: 1},
			},
			Edges: []engine.EdgeSpec{
				{From: "source", To: "tokenizer", Partitioner: engine.Forward},
				{From: "tokenizer", To: "sink", Partitioner: engine.Forward},
			},
		}
		require.NoError(t, spec.Validate(), tc.name)
		files := map[string][]byte{}
		require.NoError(t, Export(spec, 100, func(path string, data []byte) error { files[path] = data; return nil }), tc.name)
		var job map[string]any
		require.NoError(t, json.Unmarshal(files["job.json"], &job), tc.name)
		assert.Equal(t, tc.want, job["chaining"], tc.name)
		assert.Equal(t, tc.set, spec.Chaining, "%s: the spec itself is left as it was", tc.name)
	}
}
