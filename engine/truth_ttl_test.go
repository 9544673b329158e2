package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ground truth leaves state TTL out (TTL runs on processing time, so
// what expires depends on when each record is processed, not on the input
// alone) and says so: a sink downstream of an operator with TTL is compared
// against the truth of the same job without TTL, with IgnoresTTL set. With
// a TTL no value reaches the output is exactly the truth; with a TTL of
// 1 ms counts expire between a key's records on the Stepper's clock, and
// the differences show.
func TestTruthIgnoresTTLAndSaysSo(t *testing.T) {
	run := func(ttl string) Comparison {
		spec := wordCount(400, 2, 2, 0)
		if ttl != "" {
			spec.Operators[2].Options = map[string]any{"ttl": ttl}
		}
		s, err := NewStepper(spec, Options{Dir: t.TempDir()})
		require.NoError(t, err)
		defer s.Close()
		runToEnd(t, s)
		cmp, err := s.Compare()
		require.NoError(t, err)
		require.Len(t, cmp, 1)
		return cmp[0]
	}
	plain := run("")
	assert.False(t, plain.IgnoresTTL)
	assert.True(t, plain.ExactlyOnce)

	long := run("1h")
	assert.True(t, long.IgnoresTTL, "count has a TTL")
	assert.True(t, long.ExactlyOnce, "no value expired: the output is the truth")
	assert.Equal(t, plain.Expected, long.Expected, "the truth is the job's without TTL")

	short := run("1ms")
	assert.True(t, short.IgnoresTTL)
	assert.Equal(t, plain.Expected, short.Expected, "the truth is the job's without TTL")
	assert.False(t, short.ExactlyOnce, "expired counts start again from 1, which the truth does not expect")
	assert.NotZero(t, short.LostRecords+short.DuplicateRecords+len(short.Unexpected), "differences listed")
}
