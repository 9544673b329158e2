package web

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/lessons"
)

// Protocol tests of lesson sessions, with a Go WebSocket client on the
// real engine (lesson sessions always run the real Stepper).

// lessonClient is one connection to a lesson session.
type lessonClient struct {
	t    *testing.T
	c    *websocket.Conn
	next int
	// ticks are the steps seen done, in the order they were done.
	ticks []int
	last  msg // the newest lesson message
}

func dialLesson(t *testing.T, ts *testServer, query string) *lessonClient {
	t.Helper()
	lc := &lessonClient{t: t, c: ts.dial(query, nil)}
	m := lc.read(10 * time.Second)
	require.Equal(t, "snapshot", m["type"], "the first message is the snapshot: %v", m)
	return lc
}

// read returns the next message; lesson messages also update ticks/last.
func (lc *lessonClient) read(d time.Duration) msg {
	lc.t.Helper()
	require.NoError(lc.t, lc.c.SetReadDeadline(time.Now().Add(d)))
	var m msg
	require.NoError(lc.t, lc.c.ReadJSON(&m), "no message within %s; the last lesson message was %v", d, lc.last)
	if m["type"] == "lesson" {
		// A step done before this client joined shows in completed only.
		for _, step := range intsOf(m["completed"]) {
			if !slices.Contains(lc.ticks, step) {
				lc.ticks = append(lc.ticks, step)
			}
		}
		lc.last = m
	}
	return m
}

// command sends a command and returns its reply (ack or error), reading
// every message before it.
func (lc *lessonClient) command(name string, args any) msg {
	lc.t.Helper()
	lc.next++
	id := fmt.Sprintf("c%d", lc.next)
	body := map[string]any{"type": "command", "id": id, "name": name}
	if args != nil {
		body["args"] = args
	}
	require.NoError(lc.t, lc.c.WriteJSON(body))
	for {
		m := lc.read(30 * time.Second)
		if (m["type"] == "ack" || m["type"] == "error") && m["id"] == id {
			return m
		}
	}
}

// snapshot asks for a fresh snapshot and returns it: the last snapshot
// that came before the command's ack. The server sends its answer, then
// the ack; a periodic snapshot broadcast before the command may arrive
// first, and taking that one (as this did) returned a state older than the
// commands already acked — a test stepping until it saw a restart stepped
// past it (TestLessonRepeatedActionKeepsTheFirst failed once at load 20).
func (lc *lessonClient) snapshot() engine.Snapshot {
	lc.t.Helper()
	lc.next++
	id := fmt.Sprintf("c%d", lc.next)
	require.NoError(lc.t, lc.c.WriteJSON(map[string]any{"type": "command", "id": id, "name": CmdSnapshot}))
	var last []byte
	for {
		require.NoError(lc.t, lc.c.SetReadDeadline(time.Now().Add(30*time.Second)))
		_, data, err := lc.c.ReadMessage()
		require.NoError(lc.t, err)
		var m msg
		require.NoError(lc.t, json.Unmarshal(data, &m))
		switch m["type"] {
		case "snapshot":
			last = data
		case "lesson":
			lc.last = m
			for _, step := range intsOf(m["completed"]) {
				if !slices.Contains(lc.ticks, step) {
					lc.ticks = append(lc.ticks, step)
				}
			}
		case "ack", "error":
			if m["id"] != id {
				continue
			}
			require.Equal(lc.t, "ack", m["type"], "snapshot: %v", m)
			require.NotNil(lc.t, last, "the snapshot comes before its ack")
			var s engine.Snapshot
			require.NoError(lc.t, json.Unmarshal(last, &s))
			return s
		}
	}
}

// until reads until cond holds for the newest lesson message.
func (lc *lessonClient) until(d time.Duration, what string, cond func(m msg) bool) msg {
	lc.t.Helper()
	deadline := time.Now().Add(d)
	for lc.last == nil || !cond(lc.last) {
		left := time.Until(deadline)
		require.Positive(lc.t, left, "timed out after %s waiting for %s; last lesson message %v", d, what, lc.last)
		lc.read(left)
	}
	return lc.last
}

func intsOf(v any) []int {
	var out []int
	for _, x := range v.([]any) {
		out = append(out, int(x.(float64)))
	}
	return out
}

func course(t *testing.T) *lessons.Catalog {
	t.Helper()
	c, err := lessons.Default()
	require.NoError(t, err)
	return c
}

// lessonTickWait is how long a test waits for a step's tick after "do it
// for me": longer than the server waits for the job to be ready before a
// command (lessonReadyWithin), so on a slow machine the test fails with the
// server's reason ("the job did not become ready within 2m0s: count#1 is
// RESTARTING") instead of its own timeout.
const lessonTickWait = lessonReadyWithin + time.Minute

// TestLessonDoItForMeWalksEveryLesson plays every lesson in a web session,
// step by step with "do it for me", and sees every step's tick in order:
// the web's way of performing actions and judging checks agrees with the
// headless runner's.
func TestLessonDoItForMeWalksEveryLesson(t *testing.T) {
	if testing.Short() {
		t.Skip("plays every lesson")
	}
	t.Parallel() // a server of its own; most of its time is the lessons' pace
	ts := newTestServer(t, nil)
	for _, l := range course(t).Lessons {
		if l.Capstone != nil {
			continue // no do it for me: TestLessonCapstoneIsGoalsOnly, and the browser journey
		}
		t.Run(l.Slug, func(t *testing.T) {
			lc := dialLesson(t, ts, "lesson="+l.Slug)
			require.Equal(t, "ack", lc.command(CmdSpeed, map[string]any{"factor": 100})["type"])
			require.Equal(t, "ack", lc.command(CmdLessonStatus, nil)["type"])
			m := lc.until(5*time.Second, "the lesson status", func(m msg) bool { return true })
			assert.Equal(t, l.Slug, m["lesson"])
			assert.EqualValues(t, len(l.Steps), m["steps"])
			for i, st := range l.Steps {
				n := i + 1
				lc.until(lessonTickWait, fmt.Sprintf("step %d to be current", n), func(m msg) bool {
					return int(m["step"].(float64)) == n || slices.Contains(lc.ticks, n)
				})
				if len(st.Actions) > 0 && !slices.Contains(lc.ticks, n) {
					r := lc.command(CmdLessonDo, map[string]any{"step": n})
					require.Equal(t, "ack", r["type"], "lesson-do step %d: %v", n, r)
				}
				lc.until(lessonTickWait, fmt.Sprintf("the tick of step %d (%s)", n, st.ID), func(m msg) bool {
					require.Empty(t, m["error"], "do it for me failed")
					return slices.Contains(lc.ticks, n)
				})
			}
			m = lc.until(5*time.Second, "the finished lesson", func(m msg) bool { return m["finished"] == true })
			want := make([]int, len(l.Steps))
			for i := range want {
				want[i] = i + 1
			}
			assert.Equal(t, want, lc.ticks, "every step ticked, in order")
			assert.Equal(t, want, intsOf(m["completed"]))
		})
	}
}

func TestLessonStatusAndCommandErrors(t *testing.T) {
	ts := newTestServer(t, nil)
	l, _ := course(t).Lesson("01-why-state")
	lc := dialLesson(t, ts, "lesson=01-why-state")
	require.Equal(t, "ack", lc.command(CmdLessonStatus, nil)["type"])
	m := lc.until(5*time.Second, "the status", func(msg) bool { return true })
	assert.Equal(t, "01-why-state", m["lesson"])
	assert.EqualValues(t, 1, m["step"])
	assert.EqualValues(t, 5, m["steps"])
	assert.Equal(t, false, m["done"])
	assert.Equal(t, false, m["acted"], "step 1 waits for its action (typing a line)")
	assert.Equal(t, "main", m["job"])
	assert.Empty(t, m["completed"])
	require.Len(t, m["checks"], len(l.Steps[0].Checks))
	assert.Equal(t, "keyed-state{equals: 2, key: be, operator: count}", m["checks"].([]any)[0].(map[string]any)["check"])

	tests := []struct {
		name string
		args any
		code string
		says string
	}{
		{CmdLessonDo, map[string]any{"step": 2}, CodeRefused, "step 2 is not the current step (1)"},
		{CmdLessonDo, map[string]any{"step": 6}, CodeBadArgs, "steps 1 to 5, not 6"},
		{CmdLessonDo, nil, CodeBadArgs, "args.step is required"},
		{CmdLessonReplay, map[string]any{"step": 0}, CodeBadArgs, "args.step is required"},
		{CmdLessonReplay, map[string]any{"step": "two"}, CodeBadArgs, "args.step must be a whole number"},
		{CmdReset, map[string]any{"job": "nope"}, CodeBadArgs, `no job variant "nope"`},
		{CmdReset, map[string]any{"job": ""}, CodeBadArgs, "job is empty"},
	}
	for _, tt := range tests {
		r := lc.command(tt.name, tt.args)
		assert.Equal(t, "error", r["type"], "%s %v", tt.name, tt.args)
		assert.Equal(t, tt.code, r["code"], "%s %v", tt.name, tt.args)
		assert.Contains(t, r["message"], tt.says, "%s %v", tt.name, tt.args)
	}

	// Outside a lesson the lesson commands are refused, reset's job too.
	sb := dialLesson(t, ts, "template=wordcount")
	r := sb.command(CmdLessonStatus, nil)
	assert.Equal(t, CodeRefused, r["code"])
	assert.Contains(t, r["message"], "not a lesson session")
	r = sb.command(CmdReset, map[string]any{"job": "main"})
	assert.Equal(t, CodeBadArgs, r["code"])
	assert.Contains(t, r["message"], "only a lesson session has jobs")
}

func TestLessonOpeningErrors(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, tt := range []struct{ query, code, says string }{
		{"lesson=99-nope", CodeUnknownJob, `there is no lesson "99-nope"`},
		{"lesson=01-why-state&step=6", CodeBadArgs, "has steps 1 to 5"},
		{"lesson=01-why-state&step=x", CodeBadArgs, "has steps 1 to 5"},
	} {
		c := ts.dial(tt.query, nil)
		m := readMsg(t, c)
		assert.Equal(t, "error", m["type"], tt.query)
		assert.Equal(t, tt.code, m["code"], tt.query)
		assert.Contains(t, m["message"], tt.says, tt.query)
	}
}

// TestLessonDeepLinkAndReplay: step=N plays the earlier steps first; a
// replay goes back to the start of a step.
func TestLessonDeepLinkAndReplay(t *testing.T) {
	ts := newTestServer(t, nil)
	lc := dialLesson(t, ts, "lesson=01-why-state&step=4")
	require.Equal(t, "ack", lc.command(CmdLessonStatus, nil)["type"])
	m := lc.until(10*time.Second, "step 4", func(m msg) bool { return m["step"] == 4.0 })
	assert.Equal(t, []int{1, 2, 3}, intsOf(m["completed"]))
	// The engine is where step 4 begins: the line typed in step 1 was read
	// twice (the restart of step 2 replayed it), so the sink holds 6
	// duplicates and "be" counts 2.
	s := lc.snapshot()
	assert.EqualValues(t, 6, s.Sinks[0].Comparison.DuplicateRecords)

	r := lc.command(CmdLessonReplay, map[string]any{"step": 2})
	require.Equal(t, "ack", r["type"], "%v", r)
	m = lc.until(10*time.Second, "step 2", func(m msg) bool { return m["step"] == 2.0 })
	assert.Equal(t, []int{1}, intsOf(m["completed"]))
	assert.Equal(t, false, m["done"])
	s = lc.snapshot()
	assert.Zero(t, s.Sinks[0].Comparison.DuplicateRecords, "the replayed run has not crashed yet")
	assert.Zero(t, s.Counters.Restarts)
}

// TestLessonWaitsForTheStepsAction: lesson 4's step 5 resets to the
// at-least-once job; the main job already satisfies its checks (a
// checkpoint completed, results committed), so it must not tick before the
// reset, and must after.
func TestLessonWaitsForTheStepsAction(t *testing.T) {
	ts := newTestServer(t, nil)
	lc := dialLesson(t, ts, "lesson=04-checkpoints-and-barriers&step=5")
	require.Equal(t, "ack", lc.command(CmdSpeed, map[string]any{"factor": 100})["type"])
	require.Equal(t, "ack", lc.command(CmdLessonStatus, nil)["type"])
	lc.until(10*time.Second, "step 5", func(m msg) bool { return m["step"] == 5.0 })
	s := lc.snapshot()
	require.GreaterOrEqual(t, s.Checkpoints.Counts.Completed, 1, "the main job has a completed checkpoint")
	// Half a second at full speed is thousands of engine steps.
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		lc.read(5 * time.Second)
	}
	assert.NotContains(t, lc.ticks, 5, "no tick before the step's action")
	assert.Equal(t, false, lc.last["acted"])

	require.Equal(t, "ack", lc.command(CmdLessonDo, map[string]any{"step": 5})["type"])
	m := lc.until(lessonTickWait, "the tick of step 5", func(m msg) bool { return slices.Contains(lc.ticks, 5) })
	assert.Equal(t, "at-least-once", m["job"])
}

// TestLessonTrackerStartsAtTheLearnersAction: the learner reads while
// periodic checkpoints complete, then crashes the TaskManager by hand; the
// step's "restored from the latest checkpoint" means the latest at the
// crash, not at the step's start.
func TestLessonTrackerStartsAtTheLearnersAction(t *testing.T) {
	ts := newTestServer(t, nil)
	lc := dialLesson(t, ts, "lesson=03-state-backends&step=2")
	require.Equal(t, "ack", lc.command(CmdSpeed, map[string]any{"factor": 100})["type"])
	require.Equal(t, "ack", lc.command(CmdLessonStatus, nil)["type"])
	lc.until(10*time.Second, "step 2", func(m msg) bool { return m["step"] == 2.0 })
	start := lc.snapshot().Checkpoints.Counts.Completed
	// Read for a while: two more checkpoints complete.
	for lc.snapshot().Checkpoints.Counts.Completed < start+2 {
		time.Sleep(50 * time.Millisecond)
	}
	r := lc.command(CmdCrashTaskManager, map[string]any{"taskManager": "tm-1"})
	require.Equal(t, "ack", r["type"], "%v", r)
	m := lc.until(lessonTickWait, "the tick of step 2", func(m msg) bool { return slices.Contains(lc.ticks, 2) })
	assert.Equal(t, []int{1, 2}, intsOf(m["completed"]))
}

// TestLessonReplayForgetsThePastRun: replaying a lesson step replaces the
// run, so the old run's images go with it — a seek back must never start
// from an image of another run — as a reset's do.
func TestLessonReplayForgetsThePastRun(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a lesson for two image spacings")
	}
	ts := newRealServer(t, nil)
	c := ts.dial("lesson=05-failure-and-recovery", nil)
	id := readUntil(t, c, "snapshot", "")["session"].(string)
	s, ok := ts.srv.Session(id)
	require.True(t, ok)
	send(t, c, `{"type":"command","id":"s","name":"step","args":{"count":`+itoa(2*imageEvery)+`}}`)
	require.Equal(t, "ack", reply(t, c, "s")["type"])
	eventually(t, 20*time.Second, func() bool { return len(s.Images()) > 0 }, "an image of the played run")

	send(t, c, `{"type":"command","id":"r","name":"lesson-replay","args":{"step":1}}`)
	require.Equal(t, "ack", reply(t, c, "r")["type"])
	assert.Empty(t, s.Images(), "the replaced run's images are gone")
	assert.Less(t, s.Snapshot().Step, int64(imageEvery), "the new run starts again")
}

// Lesson 1's job has nothing to read until the learner types a line, so
// its run stops by itself once every subtask is idle; the line the learner
// then typed waited for a Play the step did not ask for, and the story said
// "waiting for the engine…" forever. A command now plays on a run that
// stopped by itself (not one paused by hand): the typed line travels and
// the step ticks.
func TestLessonTypedLineTravelsInAnIdleRun(t *testing.T) {
	ts := newTestServer(t, nil)
	lc := dialLesson(t, ts, "lesson=01-why-state")
	require.Equal(t, "ack", lc.command(CmdSpeed, map[string]any{"factor": 50})["type"])
	deadline := time.Now().Add(lessonTickWait)
	for s := lc.snapshot(); !(s.Paused && lessons.NotReady(&s) == ""); s = lc.snapshot() {
		require.True(t, time.Now().Before(deadline), "the idle run never stopped by itself: paused %v, %s", s.Paused, lessons.NotReady(&s))
		time.Sleep(50 * time.Millisecond)
	}
	r := lc.command(CmdInject, map[string]any{"text": "to be or not to be"})
	require.Equal(t, "ack", r["type"], "%v", r)
	assert.False(t, lc.snapshot().Paused, "the typed line set the idle run going")
	lc.until(lessonTickWait, "the tick of step 1 without pressing Play", func(m msg) bool { return slices.Contains(lc.ticks, 1) })

	// A run paused by hand stays paused when a command comes.
	require.Equal(t, "ack", lc.command(CmdPause, nil)["type"])
	require.Equal(t, "ack", lc.command(CmdInject, map[string]any{"text": "be"})["type"])
	assert.True(t, lc.snapshot().Paused, "a pause by hand is kept")
}

// Lesson 11, step 2 asks for count at 4; a learner who pressed + once has
// count waiting for slots at 3. Nothing of that execution ran, so the engine
// resubmits it from the same savepoint at 4 (engine.replanRescale): "do it
// for me" then completes the step instead of leaving the learner stuck.
func TestLessonDoItForMeAfterARescaleToAnotherParallelism(t *testing.T) {
	ts := newTestServer(t, nil)
	lc := dialLesson(t, ts, "lesson=11-savepoints-and-scaling-out&step=2")
	require.Equal(t, "ack", lc.command(CmdSpeed, map[string]any{"factor": 100})["type"])
	deadline := time.Now().Add(lessonTickWait)
	for s := lc.snapshot(); lessons.NotReady(&s) != ""; s = lc.snapshot() {
		require.True(t, time.Now().Before(deadline), "the job never ran: %s", lessons.NotReady(&s))
		time.Sleep(50 * time.Millisecond)
	}
	r := lc.command(CmdRescale, map[string]any{"operator": "count", "parallelism": 3})
	require.Equal(t, "ack", r["type"], "%v", r)
	for s := lc.snapshot(); !s.Job.WaitingForResources; s = lc.snapshot() {
		require.True(t, time.Now().Before(deadline), "count at 3 never waited for slots")
		time.Sleep(50 * time.Millisecond)
	}
	assert.NotContains(t, lc.ticks, 2, "count at 3 is not the step")
	require.Equal(t, "ack", lc.command(CmdLessonDo, map[string]any{"step": 2})["type"])
	lc.until(lessonTickWait, "step 2 to tick", func(msg) bool { return slices.Contains(lc.ticks, 2) })
	s := lc.snapshot()
	for _, o := range s.Job.Operators {
		if o.ID == "count" {
			assert.Len(t, o.Subtasks, 4, "count planned at 4")
		}
	}
}

// TestLessonCapstoneIsGoalsOnly: the capstone refuses "do it for me", a
// jump to a step ahead, and a deep link past its first step (the server
// would play the goals for the learner); a replay of the current step is
// fine.
func TestLessonCapstoneIsGoalsOnly(t *testing.T) {
	ts := newTestServer(t, nil)
	var capstone *lessons.Lesson
	for _, l := range course(t).Lessons {
		if l.Capstone != nil {
			capstone = l
		}
	}
	require.NotNil(t, capstone, "the course has a capstone")
	lc := dialLesson(t, ts, "lesson="+capstone.Slug+"&step=3")
	require.Equal(t, "ack", lc.command(CmdLessonStatus, nil)["type"])
	m := lc.until(5*time.Second, "the status", func(msg) bool { return true })
	assert.EqualValues(t, 1, m["step"], "a capstone opens at its first step, whatever the link says")
	r := lc.command(CmdLessonDo, map[string]any{"step": 1})
	assert.Equal(t, CodeRefused, r["code"])
	assert.Contains(t, r["message"], "is a capstone")
	r = lc.command(CmdLessonReplay, map[string]any{"step": 2})
	assert.Equal(t, CodeRefused, r["code"])
	assert.Contains(t, r["message"], "replay a step you have reached (1 to 1), not step 2")
	assert.Equal(t, "ack", lc.command(CmdLessonReplay, map[string]any{"step": 1})["type"])
}

// TestLessonRepeatedActionKeepsTheFirst: a learner's click that the
// browser sends twice under load (chromedp's click timed out after the
// press and the release were delivered, so it clicked again; a person
// double-clicks) crashes TaskManager tm-1 once and then asks to crash it
// again after the job has already restarted. The engine refuses the second
// (tm-1 is already lost), but the step's Tracker used to start again at
// that moment — after the restart — so "restarted at least once in this
// step" and "restored from the latest checkpoint" could never hold and the
// step was never ticked (seen in the capstone's step 2 and lesson 13 under
// load). The run is paused and stepped by hand, so the second request
// lands after the restart and before every subtask runs again, every time.
func TestLessonRepeatedActionKeepsTheFirst(t *testing.T) {
	ts := newTestServer(t, nil)
	lc := dialLesson(t, ts, "lesson=05-failure-and-recovery&step=2")
	require.Equal(t, "ack", lc.command(CmdLessonStatus, nil)["type"])
	lc.until(10*time.Second, "step 2", func(m msg) bool { return m["step"] == 2.0 })
	deadline := time.Now().Add(lessonTickWait)
	for s := lc.snapshot(); lessons.NotReady(&s) != ""; s = lc.snapshot() {
		require.True(t, time.Now().Before(deadline), "the job never ran: %s", lessons.NotReady(&s))
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, "ack", lc.command(CmdPause, nil)["type"])
	r := lc.command(CmdCrashTaskManager, map[string]any{"taskManager": "tm-1"})
	require.Equal(t, "ack", r["type"], "%v", r)
	for s := lc.snapshot(); s.Counters.Restarts == 0; s = lc.snapshot() {
		require.True(t, time.Now().Before(deadline), "the job never restarted after tm-1 was lost")
		require.Equal(t, "ack", lc.command(CmdStep, map[string]any{"count": 1})["type"])
	}
	s := lc.snapshot()
	require.NotEmpty(t, lessons.NotReady(&s), "the restarted job is not running yet")
	require.NotContains(t, lc.ticks, 2, "no tick before the job runs again")
	r = lc.command(CmdCrashTaskManager, map[string]any{"taskManager": "tm-1"})
	require.Equal(t, "error", r["type"], "tm-1 is already lost: %v", r)
	assert.Contains(t, r["message"], "already lost")
	require.Equal(t, "ack", lc.command(CmdResume, nil)["type"])
	lc.until(90*time.Second, "the tick of step 2 after the refused second crash", func(msg) bool { return slices.Contains(lc.ticks, 2) })
}

// TestLessonJoinerIsToldWhereTheLessonIs: a viewer that joins a lesson
// session (a second tab, or the page reconnecting after its connection was
// closed as too slow) is told where the lesson is without asking. The
// lesson message is sent only when it changes, so a page whose connection
// dropped while a step ticked or was acted on kept showing the old step
// (the page asks with lesson-status only when the session id changes,
// which a reconnect to the same session does not): the learner's crash in
// lesson 18's step 4 counted on the server, the page showed acted=false
// and waited forever.
func TestLessonJoinerIsToldWhereTheLessonIs(t *testing.T) {
	ts := newTestServer(t, nil)
	first := ts.dial("lesson=01-why-state", nil)
	id := readUntil(t, first, "snapshot", "")["session"].(string)
	lc := &lessonClient{t: t, c: first}
	require.Equal(t, "ack", lc.command(CmdLessonDo, map[string]any{"step": 1})["type"])
	lc.until(lessonTickWait, "the tick of step 1", func(m msg) bool { return slices.Contains(lc.ticks, 1) })

	// The second viewer sends nothing: the lesson message must come.
	late := dialLesson(t, ts, "session="+id)
	m := late.until(10*time.Second, "a lesson message, unasked", func(msg) bool { return true })
	assert.Equal(t, "01-why-state", m["lesson"])
	assert.Contains(t, intsOf(m["completed"]), 1, "step 1 shows done to the joiner")
	assert.EqualValues(t, 2, m["step"])
}
