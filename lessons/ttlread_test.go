package lessons

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// ttl-read follows StateTtlConfig.StateVisibility: an expired value is never
// returned with NeverReturnExpired (the default); with
// ReturnExpiredIfNotCleanedUp it is only when no cleanup can have removed it,
// and the lint refuses a question whose answer depends on when cleanup ran.
func TestPredictionTTLRead(t *testing.T) {
	spec := func(opts string) *engine.JobSpec {
		s, err := engine.LoadSpec([]byte(`
name: ttl
operators:
  - {id: source, kind: source, parallelism: 1, options: {partitions: 1, generator: none}}
  - {id: tokenizer, kind: tokenizer, parallelism: 1}
  - {id: count, kind: count, parallelism: 1, options: {` + opts + `}}
  - {id: sink, kind: sink, parallelism: 1}
edges:
  - {from: source, to: tokenizer, partitioner: forward}
  - {from: tokenizer, to: count, partitioner: hash}
  - {from: count, to: sink, partitioner: forward}
checkpointing: {interval: 1s}
`))
		require.NoError(t, err)
		return s
	}
	for _, tc := range []struct{ opts, want, err string }{
		{"ttl: 1m", No, ""},
		{"ttl: 1m, ttlStateVisibility: NeverReturnExpired, ttlCleanupSize: -1", No, ""},
		{"ttl: 1m, ttlStateVisibility: ReturnExpiredIfNotCleanedUp, ttlCleanupSize: -1", Yes, ""},
		{"ttl: 1m, ttlStateVisibility: ReturnExpiredIfNotCleanedUp", "", "depends on when cleanup ran"},
		{"ttl: 1m, ttlStateVisibility: ReturnExpiredIfNotCleanedUp, ttlCleanupSize: -1, ttlCleanupFullSnapshot: true", "", "depends on when cleanup ran"},
		{"", "", "has no state TTL"},
	} {
		p, err := newPrediction(&predictFile{Kind: "ttl-read", Operator: "count"}, newJobState(MainJob, spec(tc.opts)))
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.opts)
			continue
		}
		require.NoError(t, err, tc.opts)
		assert.Equal(t, tc.want, p.Answer, tc.opts)
	}
}
