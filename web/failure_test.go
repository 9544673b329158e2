package web

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// The failure settings, spelled exactly as issue 15 names them, reach the
// engine's spec; Flink's defaults apply when they are left out.
func TestFailureSettingsBuildTheSpec(t *testing.T) {
	tpl, ok := Template("wordcount")
	require.True(t, ok)
	q, err := url.ParseQuery("restart=failure-rate&restartAttempts=3&restartDelay=250ms&checkpointTimeout=30s&tolerableFailedCheckpoints=2" +
		"&retainedCheckpoints=3&failover=full&scheduler=reactive&slotRequestTimeout=1m&heartbeatTimeout=50s")
	require.NoError(t, err)
	set, err := ParseSettings(tpl, q)
	require.NoError(t, err)
	spec, err := tpl.Build(set)
	require.NoError(t, err)
	assert.Equal(t, engine.RestartSpec{Strategy: "failure-rate", Attempts: 3, Delay: engine.Duration(250 * time.Millisecond)}, spec.Restart)
	assert.Equal(t, 30*time.Second, spec.Checkpointing.Timeout.D())
	assert.Equal(t, 2, spec.Checkpointing.TolerableFailed)
	assert.Equal(t, 3, spec.Checkpointing.Retained)
	assert.Equal(t, "full", spec.Cluster.Failover)
	assert.True(t, spec.Cluster.Reactive)
	assert.Equal(t, time.Minute, spec.Cluster.SlotRequestTimeout.D())
	assert.Equal(t, 50*time.Second, spec.Cluster.HeartbeatTimeout.D())

	// max-concurrent-checkpoints and min-pause, and back from the spec.
	q, err = url.ParseQuery("maxConcurrentCheckpoints=2&minPauseBetweenCheckpoints=250ms")
	require.NoError(t, err)
	set, err = ParseSettings(tpl, q)
	require.NoError(t, err)
	spec, err = tpl.Build(set)
	require.NoError(t, err)
	assert.Equal(t, 2, spec.Checkpointing.MaxConcurrent)
	assert.Equal(t, 250*time.Millisecond, spec.Checkpointing.MinPause.D())
	back, err := settingsFromSpec(tpl, spec)
	require.NoError(t, err)
	assert.Equal(t, "2", back.Get("maxConcurrentCheckpoints"))
	assert.Equal(t, "250ms", back.Get("minPauseBetweenCheckpoints"))

	// Flink's heartbeat rule: interval and threshold, and back from the spec.
	q, err = url.ParseQuery("heartbeatTimeout=2s&heartbeatInterval=200ms&heartbeatRpcFailureThreshold=-1")
	require.NoError(t, err)
	set, err = ParseSettings(tpl, q)
	require.NoError(t, err)
	spec, err = tpl.Build(set)
	require.NoError(t, err)
	assert.Equal(t, 200*time.Millisecond, spec.Cluster.HeartbeatInterval.D())
	assert.Equal(t, -1, spec.Cluster.HeartbeatRPCFailureThreshold)
	back, err = settingsFromSpec(tpl, spec)
	require.NoError(t, err)
	assert.Equal(t, "200ms", back.Get("heartbeatInterval"))
	assert.Equal(t, "-1", back.Get("heartbeatRpcFailureThreshold"))
	assert.Equal(t, "2s", back.Get("heartbeatTimeout"))

	// An interval alone takes Flink's heartbeat.timeout.
	set, err = ParseSettings(tpl, url.Values{"heartbeatInterval": {"200ms"}})
	require.NoError(t, err)
	spec, err = tpl.Build(set)
	require.NoError(t, err)
	assert.Equal(t, 50*time.Second, spec.Cluster.HeartbeatTimeout.D())

	// Nothing set: Flink's defaults.
	set, err = ParseSettings(tpl, url.Values{})
	require.NoError(t, err)
	spec, err = tpl.Build(set)
	require.NoError(t, err)
	assert.Equal(t, "exponential-delay", spec.Effective().Strategy, "the sandbox checkpoints every 200ms: Flink's default is exponential-delay")
	assert.Equal(t, 10*time.Minute, spec.Checkpointing.Timeout.D())
	assert.Equal(t, 1, spec.Checkpointing.Retained)
	assert.Equal(t, 0, spec.Checkpointing.TolerableFailed)
	assert.Equal(t, 0, spec.Checkpointing.MaxConcurrent, "0: the engine's default, Flink's 1")
	assert.Zero(t, spec.Checkpointing.MinPause)
	assert.Equal(t, "region", spec.Cluster.Failover)
	assert.Zero(t, spec.Cluster.HeartbeatInterval, "unset: StateLab's simplified heartbeat")
	assert.Zero(t, spec.Cluster.HeartbeatRPCFailureThreshold)
	q = url.Values{"interval": {"0"}}
	set, err = ParseSettings(tpl, q)
	require.NoError(t, err)
	spec, err = tpl.Build(set)
	require.NoError(t, err)
	assert.Equal(t, "none", spec.Effective().Strategy, "no checkpointing: Flink's default is none")

	// A scenario records them and rebuilds the same job.
	full, err := url.ParseQuery("restart=fixed-delay&restartAttempts=4&checkpointTimeout=1s&tolerableFailedCheckpoints=1&retainedCheckpoints=2&failover=full")
	require.NoError(t, err)
	set, err = ParseSettings(tpl, full)
	require.NoError(t, err)
	spec, err = tpl.Build(set)
	require.NoError(t, err)
	back, err = settingsFromSpec(tpl, spec)
	require.NoError(t, err)
	assert.Equal(t, "fixed-delay", back.Get("restart"))
	assert.Equal(t, "4", back.Get("restartAttempts"))
	assert.Equal(t, "1s", back.Get("checkpointTimeout"))
	assert.Equal(t, "full", back.Get("failover"))
}

// Bad failure settings get an error that names the setting and says what
// would be accepted.
func TestFailureSettingsErrors(t *testing.T) {
	tpl, _ := Template("wordcount")
	for _, tc := range []struct{ query, want string }{
		{"restart=exponential", `restart: "exponential" is unknown; choose default, none, fixed-delay, failure-rate, exponential-delay`},
		{"restartAttempts=-1", "restartAttempts"},
		{"restartDelay=soon", "restartDelay"},
		{"checkpointTimeout=5ms", "checkpointTimeout"},
		{"tolerableFailedCheckpoints=x", "tolerableFailedCheckpoints"},
		{"retainedCheckpoints=0", "retainedCheckpoints"},
		{"maxConcurrentCheckpoints=0", "maxConcurrentCheckpoints: \"0\": want a whole number from 1 to 10"},
		{"maxConcurrentCheckpoints=11", "max-concurrent-checkpoints"},
		{"minPauseBetweenCheckpoints=soon", "minPauseBetweenCheckpoints"},
		{"failover=individual", "choose region"},
		{"scheduler=adaptive", "choose default or reactive"},
		{"slotRequestTimeout=0", "slotRequestTimeout"},
		{"heartbeatTimeout=-1s", "heartbeatTimeout"},
		{"heartbeatInterval=0", "heartbeatInterval"},
		{"heartbeatInterval=1m", "heartbeatInterval: 1m0s is longer than heartbeatTimeout 50s"},
		{"heartbeatInterval=10s&heartbeatTimeout=5s", "raise heartbeatTimeout"},
		{"heartbeatInterval=200ms&heartbeatRpcFailureThreshold=0", "want -1 (off) or a whole number from 1 to 100"},
		{"heartbeatInterval=200ms&heartbeatRpcFailureThreshold=-2", "heartbeatRpcFailureThreshold"},
		{"heartbeatRpcFailureThreshold=2", "needs heartbeatInterval"},
	} {
		q, err := url.ParseQuery(tc.query)
		require.NoError(t, err)
		_, err = ParseSettings(tpl, q)
		require.Error(t, err, tc.query)
		assert.ErrorIs(t, err, ErrBadArgs)
		assert.Contains(t, err.Error(), tc.want, tc.query)
	}
}

// The restore command, spelled {"checkpoint": N}, starts the job from a
// retained checkpoint; a share link of the run replays it exactly.
func TestRestoreCommandOverTheProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	srv, hs := newEngineServer(t)
	c := dialURL(t, hs, "template=wordcount&seed=3&interval=200ms&keys=40&retainedCheckpoints=3&restart=fixed-delay&restartAttempts=5")
	readUntil(t, c, "snapshot", "")
	send(t, c, `{"type":"command","id":"fast","name":"speed","args":{"factor":50}}`)
	require.Equal(t, "ack", reply(t, c, "fast")["type"])
	waitSnapshot(t, c, 60*time.Second, "two completed checkpoints", func(m msg) bool {
		return m["checkpoints"].(map[string]any)["counts"].(map[string]any)["completed"].(float64) >= 2
	})
	// Pause, so no newer checkpoint subsumes the one chosen below.
	send(t, c, `{"type":"command","id":"pause","name":"pause"}`)
	require.Equal(t, "ack", reply(t, c, "pause")["type"])
	send(t, c, `{"type":"command","id":"snap","name":"snapshot"}`)
	snap := readUntil(t, c, "snapshot", "")
	var first float64
	for _, r := range snap["checkpoints"].(map[string]any)["retained"].([]any) {
		if id := r.(map[string]any)["id"].(float64); first == 0 || id < first {
			first = id
		}
	}
	require.NotZero(t, first)
	send(t, c, `{"type":"command","id":"bad","name":"restore","args":{}}`)
	r := reply(t, c, "bad")
	assert.Equal(t, "error", r["type"])
	assert.Contains(t, r["message"], `{"checkpoint":3}`)
	send(t, c, `{"type":"command","id":"gone","name":"restore","args":{"checkpoint":999}}`)
	r = reply(t, c, "gone")
	assert.Equal(t, "error", r["type"])
	assert.Contains(t, r["message"], "no retained checkpoint or savepoint 999")

	raw, _ := json.Marshal(map[string]any{"type": "command", "id": "restore", "name": "restore", "args": map[string]any{"checkpoint": first}})
	send(t, c, string(raw))
	require.Equal(t, "ack", reply(t, c, "restore")["type"])
	send(t, c, `{"type":"command","id":"resume","name":"resume"}`)
	require.Equal(t, "ack", reply(t, c, "resume")["type"])
	restored := waitSnapshot(t, c, 60*time.Second, "the job restored from the first checkpoint", func(m msg) bool {
		lr, _ := m["checkpoints"].(map[string]any)["latestRestore"].(map[string]any)
		return allRunning(m) && lr != nil && lr["checkpoint"] == first
	})
	assert.EqualValues(t, 1, restored["counters"].(map[string]any)["manualRestores"])

	// The run's scenario holds the restore and replays it.
	var s *Session
	for _, ss := range srv.sessions.all() {
		s = ss
	}
	require.NotNil(t, s)
	sc, pe := srv.scenarioOf(s)
	require.Nil(t, pe)
	found := false
	for _, lc := range sc.Commands {
		if lc.Command.Name == "restore" && !lc.Failed {
			found = true
			assert.Equal(t, int64(first), lc.Command.Checkpoint)
		}
	}
	assert.True(t, found, "the scenario records the restore")
	assert.Equal(t, "3", sc.Settings["retainedCheckpoints"])
	run, pe := runOf(sc)
	require.Nil(t, pe)
	assert.Equal(t, 3, run.Spec.Checkpointing.Retained)
}

// The etl template has two pipelined regions: crashing source#0 restarts
// source#0, map#0 and sink#0, and the index-1 pipeline stays RUNNING in
// every snapshot a client sees (RestartPipelinedRegionFailoverStrategy).
func TestEtlRegionFailoverOverTheProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	_, hs := newEngineServer(t)
	c := dialURL(t, hs, "template=etl&seed=5")
	first := readUntil(t, c, "snapshot", "")
	assert.Equal(t, "etl", first["template"])
	send(t, c, `{"type":"command","id":"fast","name":"speed","args":{"factor":50}}`)
	require.Equal(t, "ack", reply(t, c, "fast")["type"])
	waitSnapshot(t, c, 60*time.Second, "a completed checkpoint", func(m msg) bool {
		return allRunning(m) && m["checkpoints"].(map[string]any)["counts"].(map[string]any)["completed"].(float64) >= 1
	})
	send(t, c, `{"type":"command","id":"crash","name":"crash-subtask","args":{"operator":"source","index":0}}`)
	status := func(m msg, op string, i int) string {
		return operator(m, op)["subtasks"].([]any)[i].(map[string]any)["status"].(string)
	}
	restarted := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		require.NoError(t, c.SetReadDeadline(deadline))
		var m msg
		require.NoError(t, c.ReadJSON(&m))
		switch m["type"] {
		case "events":
			for _, e := range m["events"].([]any) {
				e := e.(map[string]any)
				if e["kind"] == "task-status" && (e["status"] == "CANCELED" || e["status"] == "FAILED") {
					restarted[e["task"].(string)] = true
				}
			}
		case "snapshot":
			for _, op := range []string{"source", "map", "sink"} {
				assert.Equal(t, "RUNNING", status(m, op, 1), "%s#1 keeps running", op)
			}
			if m["counters"].(map[string]any)["restarts"].(float64) >= 1 && allRunning(m) {
				assert.Equal(t, map[string]bool{"source#0": true, "map#0": true, "sink#0": true}, restarted)
				return
			}
		}
	}
	t.Fatal("the region did not restart within a minute")
}
