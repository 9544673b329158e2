package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLessonRunsShareSeekAndFork: a lesson session opened at a later step
// (played there by the lesson's earlier steps) shares as a scenario naming
// the lesson and its job, and the link reproduces the run; it seeks into
// its past and forks like any teaching-mode run.
func TestLessonRunsShareSeekAndFork(t *testing.T) {
	ts := newRealServer(t, nil)
	lc := dialLesson(t, ts, "lesson=05-failure-and-recovery&step=3")
	c := lc.c
	send(t, c, `{"type":"command","id":"p","name":"pause"}`)
	require.Equal(t, "ack", reply(t, c, "p")["type"])
	send(t, c, `{"type":"command","id":"s","name":"step","args":{"count":500}}`)
	require.Equal(t, "ack", reply(t, c, "s")["type"])
	var id string
	for _, s := range ts.srv.sessions.all() {
		if strings.HasPrefix(s.Template, "lesson:05") {
			id = s.ID
		}
	}
	require.NotEmpty(t, id)
	s, _ := ts.srv.Session(id)
	orig := s.Snapshot()

	resp, err := http.Get(ts.hs.URL + "/api/sessions/" + id + "/share")
	require.NoError(t, err)
	var share ShareAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&share))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%+v", share)
	assert.Equal(t, "05-failure-and-recovery", share.Scenario.Lesson)
	assert.NotEmpty(t, share.Scenario.Job)
	assert.Empty(t, share.Scenario.Template)
	assert.Equal(t, orig.Step, share.Scenario.Step)

	sc, err := ParseShareLink(strings.TrimPrefix(share.URL, ts.hs.URL+"/replay?s="))
	require.NoError(t, err)
	cp, pe := ts.srv.replaySession(context.Background(), sc)
	require.Nil(t, pe)
	again := cp.Snapshot()
	assert.Equal(t, "lesson:05-failure-and-recovery", cp.Template)
	assert.True(t, sameAt(orig, again), "the link reproduces the lesson run: %v", diffAt(orig, again))

	// Seek into the lesson run's past, and fork it.
	send(t, c, `{"type":"command","id":"q","name":"seek","args":{"step":`+itoa(orig.Step-200)+`}}`)
	require.Equal(t, "ack", reply(t, c, "q")["type"])
	assert.Equal(t, orig.Step-200, s.Snapshot().Step)
	send(t, c, `{"type":"command","id":"f","name":"fork"}`)
	ack := reply(t, c, "f")
	require.Equal(t, "ack", ack["type"], "%v", ack)
	fork, ok := ts.srv.Session(ack["session"].(string))
	require.True(t, ok)
	assert.Equal(t, orig.Step-200, fork.Snapshot().Step)
	// The copy of a lesson run shares too.
	resp, err = http.Get(ts.hs.URL + "/api/sessions/" + fork.ID + "/share")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
