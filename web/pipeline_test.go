package web

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The chaining and unaligned checkpoint settings reach the engine's spec
// and a scenario rebuilds them; without them the sandbox keeps StateLab's
// defaults (no chaining, aligned checkpoints).
func TestPipelineSettingsBuildTheSpec(t *testing.T) {
	tpl, ok := Template("etl")
	require.True(t, ok)
	q, err := url.ParseQuery("chaining=true&unaligned=true&alignedCheckpointTimeout=20ms")
	require.NoError(t, err)
	set, err := ParseSettings(tpl, q)
	require.NoError(t, err)
	spec, err := tpl.Build(set)
	require.NoError(t, err)
	require.NotNil(t, spec.Chaining)
	assert.True(t, *spec.Chaining)
	assert.True(t, spec.Checkpointing.Unaligned)
	assert.Equal(t, 20*time.Millisecond, spec.Checkpointing.AlignedCheckpointTimeout.D())
	chains := spec.Chains(nil)
	require.Len(t, chains, 1, "etl is forward edges only: one chain")
	assert.Equal(t, "Source: source -> map -> Sink: sink", chains[0].Name)

	back, err := settingsFromSpec(tpl, spec)
	require.NoError(t, err)
	assert.Equal(t, "true", back.Get("chaining"))
	assert.Equal(t, "true", back.Get("unaligned"))
	assert.Equal(t, "20ms", back.Get("alignedCheckpointTimeout"))

	set, err = ParseSettings(tpl, url.Values{})
	require.NoError(t, err)
	spec, err = tpl.Build(set)
	require.NoError(t, err)
	assert.Nil(t, spec.Chaining)
	assert.False(t, spec.Checkpointing.Unaligned)
	assert.Len(t, spec.Chains(nil), 3, "no chaining: every operator is its own task")
}

func TestPipelineSettingsErrors(t *testing.T) {
	tpl, _ := Template("wordcount")
	for _, tc := range []struct{ query, want string }{
		{"chaining=yes", "chaining: \"yes\": want true or false"},
		{"unaligned=on", "unaligned"},
		{"unaligned=true&alignedCheckpointTimeout=soon", "alignedCheckpointTimeout"},
		{"alignedCheckpointTimeout=20ms", "needs unaligned=true"},
	} {
		q, err := url.ParseQuery(tc.query)
		require.NoError(t, err)
		_, err = ParseSettings(tpl, q)
		require.Error(t, err, tc.query)
		assert.ErrorIs(t, err, ErrBadArgs)
		assert.Contains(t, err.Error(), tc.want, tc.query)
	}
}

// Over the protocol: a chained etl sandbox's snapshot names its chain, the
// operators carry it and the chained channels say so.
func TestChainsOverTheProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	_, hs := newEngineServer(t)
	c := dialURL(t, hs, "template=etl&seed=5&chaining=true&unaligned=true")
	first := readUntil(t, c, "snapshot", "")
	job := first["job"].(map[string]any)
	chains := job["chains"].([]any)
	require.Len(t, chains, 1, "one chain of three operators: %v", chains)
	assert.Equal(t, "Source: source -> map -> Sink: sink", chains[0].(map[string]any)["name"])
	assert.Equal(t, "Source: source -> map -> Sink: sink", operator(first, "map")["chain"])
	for _, ch := range first["channels"].([]any) {
		assert.Equal(t, true, ch.(map[string]any)["chained"], ch)
	}
}
