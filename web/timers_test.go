package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/state"
)

// TestAlertsTemplateShowsTimers: a sandbox of the alerts template, over the
// protocol: after some steps the state inspector's answer for an alerts
// subtask lists its pending event-time timers (in firing order, each in the
// subtask's key groups) and its watermark, and the keyed entries hold the
// timers as entries of Flink's timer state; after a crash and a restore
// the restored subtask lists timers again.
func TestAlertsTemplateShowsTimers(t *testing.T) {
	ts := newRealServer(t, nil)
	c := ts.dial("template=alerts&seed=4", nil)
	id := readUntil(t, c, "snapshot", "")["session"].(string)
	send(t, c, `{"type":"command","id":"s1","name":"step","args":{"count":300}}`)
	require.Equal(t, "ack", reply(t, c, "s1")["type"])

	inspect := func(task string) TaskStateAnswer {
		t.Helper()
		resp, err := http.Get(ts.hs.URL + "/api/sessions/" + id + "/tasks/" + url.PathEscape(task) + "/state")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var a TaskStateAnswer
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
		return a
	}
	a := inspect("alerts#0")
	require.NotEmpty(t, a.Timers, "pending timers")
	require.NotNil(t, a.KeyGroups)
	for i, tm := range a.Timers {
		assert.Equal(t, state.EventTime, tm.Domain)
		assert.True(t, a.KeyGroups.Contains(tm.KeyGroup), "%+v outside %v", tm, *a.KeyGroups)
		if i > 0 {
			assert.LessOrEqual(t, a.Timers[i-1].Timestamp, tm.Timestamp, "firing order")
		}
	}
	timerEntries := 0
	for _, e := range a.Keyed {
		if e.State == state.TimerStateName("user-timers", state.EventTime) {
			timerEntries++
		}
	}
	assert.Equal(t, len(a.Timers), timerEntries, "every timer is a keyed state entry")

	send(t, c, `{"type":"command","id":"cp","name":"trigger-checkpoint"}`)
	require.Equal(t, "ack", reply(t, c, "cp")["type"])
	send(t, c, `{"type":"command","id":"s2","name":"step","args":{"count":200}}`)
	require.Equal(t, "ack", reply(t, c, "s2")["type"])
	send(t, c, `{"type":"command","id":"x","name":"crash-subtask","args":{"operator":"alerts","index":0}}`)
	require.Equal(t, "ack", reply(t, c, "x")["type"])
	s, _ := ts.srv.Session(id)
	for i := 0; i < 100; i++ {
		st := s.Snapshot()
		if st.Counters.Restores > 0 && st.Job.Operators[1].Subtasks[0].Status == "RUNNING" {
			break
		}
		send(t, c, `{"type":"command","id":"st","name":"step","args":{"count":50}}`)
		require.Equal(t, "ack", reply(t, c, "st")["type"])
	}
	assert.NotEmpty(t, inspect("alerts#0").Timers, "the restore brought timers back")
}

// The sandbox's TTL settings build every keyed operator's StateTtlConfig
// options, a share link carries them back, and bad values name the setting.
func TestTTLSettingsBuildTheSpec(t *testing.T) {
	for _, id := range []string{"wordcount", "clicks", "alerts"} {
		tpl, ok := Template(id)
		require.True(t, ok)
		q, err := url.ParseQuery("ttl=750ms&ttlUpdateType=OnReadAndWrite&ttlStateVisibility=ReturnExpiredIfNotCleanedUp&ttlCleanupFullSnapshot=true&maxParallelism=64")
		require.NoError(t, err)
		set, err := ParseSettings(tpl, q)
		require.NoError(t, err)
		spec, err := tpl.Build(set)
		require.NoError(t, err)
		keyed := 0
		for _, o := range spec.Operators {
			if !keyedKind(o.Kind) {
				assert.NotContains(t, o.Options, "ttl", "%s: %s keeps no keyed state", id, o.ID)
				continue
			}
			keyed++
			assert.Equal(t, "750ms", o.Options["ttl"])
			assert.Equal(t, "OnReadAndWrite", o.Options["ttlUpdateType"])
			assert.Equal(t, "ReturnExpiredIfNotCleanedUp", o.Options["ttlStateVisibility"])
			assert.Equal(t, true, o.Options["ttlCleanupFullSnapshot"])
		}
		assert.Equal(t, 1, keyed, id)
		back, err := settingsFromSpec(tpl, spec)
		require.NoError(t, err, "a share link of %s rebuilds the same job", id)
		assert.Equal(t, "750ms", back.Get("ttl"))
		assert.Equal(t, "true", back.Get("ttlCleanupFullSnapshot"))
	}
	tpl, _ := Template("wordcount")
	for _, tc := range []struct{ query, want string }{
		{"ttl=soon", `ttl: "soon": want a duration`},
		{"ttl=-1s", "ttl"},
		{"ttl=48h", "at most 24h0m0s"},
		{"ttl=1s&ttlUpdateType=OnRead", "choose OnCreateAndWrite or OnReadAndWrite"},
		{"ttl=1s&ttlStateVisibility=Never", "choose NeverReturnExpired or ReturnExpiredIfNotCleanedUp"},
		{"ttl=1s&ttlCleanupFullSnapshot=yes", "want true or false"},
		{"ttlUpdateType=OnReadAndWrite", "need a ttl as well"},
	} {
		q, err := url.ParseQuery(tc.query)
		require.NoError(t, err)
		_, err = ParseSettings(tpl, q)
		require.ErrorIs(t, err, ErrBadArgs, tc.query)
		assert.Contains(t, err.Error(), tc.want, tc.query)
	}
}

// Over the protocol, a sandbox with a TTL shows each keyed entry's last
// access in the state inspector's answer.
func TestTTLSandboxShowsLastAccess(t *testing.T) {
	ts := newRealServer(t, nil)
	c := ts.dial("template=wordcount&seed=5&ttl=2s", nil)
	id := readUntil(t, c, "snapshot", "")["session"].(string)
	send(t, c, `{"type":"command","id":"s1","name":"step","args":{"count":300}}`)
	require.Equal(t, "ack", reply(t, c, "s1")["type"])
	resp, err := http.Get(ts.hs.URL + "/api/sessions/" + id + "/tasks/" + url.PathEscape("count#0") + "/state")
	require.NoError(t, err)
	defer resp.Body.Close()
	var a TaskStateAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
	require.NotEmpty(t, a.Keyed)
	for _, e := range a.Keyed {
		assert.Positive(t, e.LastAccess, "%+v", e)
	}
}

// Every operator kind has a name in every language (the job graph and the
// inspector show kind.<kind>).
func TestOperatorKindsAreTranslated(t *testing.T) {
	c, err := LoadCatalog()
	require.NoError(t, err)
	for _, lang := range Languages {
		tr := c.T(lang.Code)
		for _, k := range []string{engine.KindSource, engine.KindTokenizer, engine.KindMap, engine.KindFilter, engine.KindCount, engine.KindSum,
			engine.KindWindowCount, engine.KindBroadcastFilter, engine.KindTally, engine.KindSink, engine.KindAlerts} {
			assert.NotEqual(t, "kind."+k, tr("kind."+k), "%s: kind.%s", lang.Code, k)
		}
	}
}
