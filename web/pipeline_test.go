package web

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The chaining and unaligned checkpoint settings reach the engine's spec
// and a scenario rebuilds them; without them the sandbox keeps the
// templates' settings: chaining: false, said in the spec (Flink's default
// is on), and aligned checkpoints.
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
	require.NotNil(t, spec.Chaining, "the template says chaining: false, not Flink's default")
	assert.False(t, *spec.Chaining)
	assert.False(t, spec.Checkpointing.Unaligned)
	assert.Len(t, spec.Chains(nil), 3, "no chaining: every operator is its own task")
	back, err = settingsFromSpec(tpl, spec)
	require.NoError(t, err)
	assert.Equal(t, "false", back.Get("chaining"), "a scenario carries the setting")
}

// Every sandbox template says chaining: false (a spec without it chains,
// as Flink's pipeline.operator-chaining does by default), so its graph has
// one task per operator, each named as Flink's Web UI names a lone operator.
func TestTemplatesTurnChainingOff(t *testing.T) {
	for _, tpl := range Templates {
		set, err := ParseSettings(tpl, url.Values{})
		require.NoError(t, err, tpl.ID)
		spec, err := tpl.Build(set)
		require.NoError(t, err, tpl.ID)
		require.NotNil(t, spec.Chaining, tpl.ID)
		assert.False(t, *spec.Chaining, tpl.ID)
		assert.Len(t, spec.Chains(nil), len(spec.Operators), tpl.ID)
	}
}

// A share link or scenario file of version 1 without the chaining setting
// was made when a sandbox job without it ran unchained: it replays
// unchained, and one that says chaining=true replays chained. The
// scenarios are written as such a link's JSON, not made by this code.
func TestOldScenarioWithoutChainingStaysUnchained(t *testing.T) {
	for _, tc := range []struct {
		settings string
		chains   []string
	}{
		{`{}`, []string{"Source: source", "map", "Sink: sink"}},
		{`{"chaining":"true"}`, []string{"Source: source -> map -> Sink: sink"}},
		{`{"chaining":"false"}`, []string{"Source: source", "map", "Sink: sink"}},
	} {
		var sc Scenario
		require.NoError(t, decodeScenario([]byte(`{"format":"statelab-scenario","version":1,"template":"etl","settings":`+tc.settings+`,"seed":5,"step":100,"commands":[]}`), &sc))
		link, err := ShareLink(sc)
		require.NoError(t, err)
		back, err := ParseShareLink(link)
		require.NoError(t, err)
		run, pe := runOf(back)
		require.Nil(t, pe, tc.settings)
		var names []string
		for _, c := range run.Spec.Chains(nil) {
			names = append(names, c.Name)
		}
		assert.Equal(t, tc.chains, names, tc.settings)
	}
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
