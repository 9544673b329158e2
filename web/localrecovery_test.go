package web

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// localRecovery=true turns on state.backend.local-recovery; a scenario
// carries it; anything but a boolean is refused with what would be accepted.
func TestLocalRecoverySetting(t *testing.T) {
	tpl, _ := Template("wordcount")
	set, err := ParseSettings(tpl, url.Values{"localRecovery": {"true"}})
	require.NoError(t, err)
	spec, err := tpl.Build(set)
	require.NoError(t, err)
	assert.True(t, spec.Checkpointing.LocalRecovery)
	back, err := settingsFromSpec(tpl, spec)
	require.NoError(t, err)
	assert.Equal(t, "true", back.Get("localRecovery"))

	set, err = ParseSettings(tpl, url.Values{})
	require.NoError(t, err)
	spec, err = tpl.Build(set)
	require.NoError(t, err)
	assert.False(t, spec.Checkpointing.LocalRecovery, "Flink's default is off")

	_, err = ParseSettings(tpl, url.Values{"localRecovery": {"yes please"}})
	require.ErrorIs(t, err, ErrBadArgs)
	assert.Contains(t, err.Error(), "state.backend.local-recovery")
}

// Over the protocol: with local recovery on, a crashed subtask's restore
// reads its keyed state from the TaskManager's local copy, and the
// snapshot's latestRestore says how many bytes came from each side.
func TestLocalRecoveryOverTheProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	_, hs := newEngineServer(t)
	c := dialURL(t, hs, "template=wordcount&seed=3&interval=200ms&keys=40&backend=fs&localRecovery=true&restart=fixed-delay&restartAttempts=5")
	readUntil(t, c, "snapshot", "")
	send(t, c, `{"type":"command","id":"fast","name":"speed","args":{"factor":50}}`)
	require.Equal(t, "ack", reply(t, c, "fast")["type"])
	waitSnapshot(t, c, 60*time.Second, "a completed checkpoint", func(m msg) bool {
		return allRunning(m) && m["checkpoints"].(map[string]any)["counts"].(map[string]any)["completed"].(float64) >= 1
	})
	send(t, c, `{"type":"command","id":"crash","name":"crash-subtask","args":{"operator":"count","index":0}}`)
	require.Equal(t, "ack", reply(t, c, "crash")["type"])
	m := waitSnapshot(t, c, 60*time.Second, "a restore", func(m msg) bool {
		lr, _ := m["checkpoints"].(map[string]any)["latestRestore"].(map[string]any)
		return allRunning(m) && lr != nil
	})
	lr := m["checkpoints"].(map[string]any)["latestRestore"].(map[string]any)
	assert.Positive(t, lr["localBytes"].(float64), "%v", lr)
	assert.Zero(t, lr["remoteBytes"].(float64), "%v", lr)
}
