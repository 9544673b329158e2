package web

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// upgradeArgs sends an upgrade command and returns the reply.
func sendUpgrade(t *testing.T, c *websocket.Conn, id string, args map[string]any) msg {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"type": "command", "id": id, "name": "upgrade", "args": args})
	require.NoError(t, err)
	send(t, c, string(raw))
	return reply(t, c, id)
}

// operatorsOf lists the snapshot's operators by id.
func operatorsOf(m msg) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range m["job"].(map[string]any)["operators"].([]any) {
		om := o.(map[string]any)
		out[om["id"].(string)] = om
	}
	return out
}

// The upgrade command over the protocol: a uid given to count after the
// savepoint files count's state under an ID no operator has, so the
// upgrade is refused with Flink's message and the job runs on unchanged;
// with allowNonRestoredState it goes through and the snapshot shows the
// uid and the new operator ID. An inserted operator shows in the graph.
// The scenario records the upgrades.
func TestUpgradeCommandOverTheProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	srv, hs := newEngineServer(t)
	c := dialURL(t, hs, "template=wordcount&seed=3&interval=200ms&keys=40&retainedCheckpoints=3&restart=fixed-delay&restartAttempts=5")
	first := readUntil(t, c, "snapshot", "")
	before := operatorsOf(first)
	require.Contains(t, before, "count")
	countID := before["count"]["operatorId"].(string)
	require.Len(t, countID, 32)
	assert.Nil(t, before["count"]["uid"], "the template sets no uids")

	send(t, c, `{"type":"command","id":"fast","name":"speed","args":{"factor":50}}`)
	require.Equal(t, "ack", reply(t, c, "fast")["type"])
	waitSnapshot(t, c, 60*time.Second, "the job running", allRunning)
	send(t, c, `{"type":"command","id":"sp","name":"trigger-savepoint"}`)
	require.Equal(t, "ack", reply(t, c, "sp")["type"])
	var sp float64
	waitSnapshot(t, c, 60*time.Second, "a retained savepoint", func(m msg) bool {
		for _, r := range m["checkpoints"].(map[string]any)["retained"].([]any) {
			if rm := r.(map[string]any); rm["savepoint"] == true {
				sp = rm["id"].(float64)
			}
		}
		return sp > 0
	})
	send(t, c, `{"type":"command","id":"pause","name":"pause"}`)
	require.Equal(t, "ack", reply(t, c, "pause")["type"])

	r := sendUpgrade(t, c, "bad", map[string]any{"checkpoint": sp, "change": "rename"})
	assert.Equal(t, "bad-args", r["code"])
	assert.Contains(t, r["message"], "add-operator")
	r = sendUpgrade(t, c, "nokind", map[string]any{"checkpoint": sp, "change": "add-operator", "operator": "tokenizer", "kind": "count"})
	assert.Equal(t, "bad-args", r["code"])

	r = sendUpgrade(t, c, "uid", map[string]any{"checkpoint": sp, "change": "set-uid", "operator": "count", "uid": "count"})
	require.Equal(t, "error", r["type"])
	assert.Equal(t, "refused", r["code"])
	assert.Contains(t, r["message"], "Cannot map checkpoint/savepoint state for operator "+countID+" to the new program, because the operator is not available in the new program. If you want to allow to skip this, you can set the --allowNonRestoredState option on the CLI.")
	send(t, c, `{"type":"command","id":"snap","name":"snapshot"}`)
	snap := readUntil(t, c, "snapshot", "")
	assert.Nil(t, operatorsOf(snap)["count"]["uid"], "the refused upgrade changed nothing")
	assert.Equal(t, "RUNNING", snap["job"].(map[string]any)["status"])

	r = sendUpgrade(t, c, "uid2", map[string]any{"checkpoint": sp, "change": "set-uid", "operator": "count", "uid": "count", "allowNonRestoredState": true})
	require.Equal(t, "ack", r["type"], "%v", r)
	upgraded := waitSnapshot(t, c, 60*time.Second, "count with its uid", func(m msg) bool {
		return operatorsOf(m)["count"]["uid"] == "count"
	})
	assert.NotEqual(t, countID, operatorsOf(upgraded)["count"]["operatorId"])

	r = sendUpgrade(t, c, "add", map[string]any{"checkpoint": sp, "change": "add-operator", "operator": "tokenizer", "kind": "filter", "uid": "no-stop-words", "allowNonRestoredState": true})
	require.Equal(t, "ack", r["type"], "%v", r)
	waitSnapshot(t, c, 60*time.Second, "a filter after the tokenizer", func(m msg) bool {
		f := operatorsOf(m)["filter"]
		return f != nil && f["uid"] == "no-stop-words"
	})

	var s *Session
	for _, ss := range srv.sessions.all() {
		s = ss
	}
	require.NotNil(t, s)
	sc, pe := srv.scenarioOf(s)
	require.Nil(t, pe)
	var logged []string
	for _, lc := range sc.Commands {
		if lc.Command.Name == "upgrade" {
			logged = append(logged, lc.Command.String())
		}
	}
	assert.Equal(t, []string{
		`upgrade operator=count checkpoint=` + jsonNum(sp) + ` change=set-uid uid="count"`,
		`upgrade operator=count checkpoint=` + jsonNum(sp) + ` change=set-uid uid="count" allowNonRestoredState=true`,
		`upgrade operator=tokenizer checkpoint=` + jsonNum(sp) + ` change=add-operator kind=filter uid="no-stop-words" allowNonRestoredState=true`,
	}, logged)
	assert.Nil(t, checkScenarioCommands(sc))
}

func jsonNum(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}
