package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Over the protocol: a sandbox with unaligned checkpoints and an
// aligned-checkpoint-timeout says the timeout in its snapshot
// (checkpoints.alignedCheckpointTimeout, nanoseconds like interval), so
// the page can say that checkpoints start aligned and where StateLab
// simplifies the switch; without the timeout, or without unaligned
// checkpoints, the field is absent.
func TestAlignedCheckpointTimeoutOverTheProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	_, hs := newEngineServer(t)
	for _, tc := range []struct {
		query string
		want  any
	}{
		{"template=wordcount&seed=3&unaligned=true&alignedCheckpointTimeout=20ms", float64(20 * time.Millisecond)},
		{"template=etl&seed=5&unaligned=true&alignedCheckpointTimeout=1.5s", float64(1500 * time.Millisecond)},
		{"template=wordcount&seed=3&unaligned=true", nil},
		{"template=wordcount&seed=3", nil},
	} {
		c := dialURL(t, hs, tc.query)
		first := readUntil(t, c, "snapshot", "")
		cp, ok := first["checkpoints"].(map[string]any)
		require.True(t, ok, "%s: a checkpoints object", tc.query)
		got, present := cp["alignedCheckpointTimeout"]
		if tc.want == nil {
			assert.False(t, present, "%s: no timeout, no field (got %v)", tc.query, got)
			continue
		}
		assert.Equal(t, true, cp["unaligned"], tc.query)
		assert.Equal(t, tc.want, got, tc.query)
		c.Close()
	}
}
