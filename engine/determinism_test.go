package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runLogged runs spec for steps, applying cmds at their steps, and returns
// every event as JSON lines.
func runLogged(t *testing.T, spec *JobSpec, steps int64, cmds []LoggedCommand) ([]string, []LoggedCommand) {
	t.Helper()
	var lines []string
	s, err := NewStepper(spec, Options{Dir: t.TempDir(), RecordEvents: func(e Event) {
		b, err := json.Marshal(e)
		require.NoError(t, err)
		lines = append(lines, string(b))
	}})
	require.NoError(t, err)
	defer s.Close()
	done := int64(0)
	for _, c := range cmds {
		done += int64(s.Steps(int(c.Step - done)))
		require.Equal(t, c.Step, done)
		_ = s.Do(c.Command)
	}
	s.Steps(int(steps - done))
	return lines, s.CommandLog()
}

// The same spec, seed and commands give the same run, event for event; a
// different seed gives a different run.
func TestSameSeedSameEvents(t *testing.T) {
	cmds := []LoggedCommand{
		{Step: 300, Command: Command{Name: CmdCrashSubtask, Task: "count#1"}},
		{Step: 700, Command: Command{Name: CmdRescale, Operator: "count", Parallelism: 3}},
		{Step: 900, Command: Command{Name: CmdCrashTaskManager, TaskManager: "tm-2"}},
		{Step: 950, Command: Command{Name: CmdRestartTaskManager, TaskManager: "tm-2"}},
		{Step: 960, Command: Command{Name: CmdInject, Operator: "source", Partition: 1, Text: "hello flink"}},
	}
	spec := ChaosSpec(11, 600, BackendMemory, SinkExactlyOnce)
	a, logA := runLogged(t, spec, 2500, cmds)
	b, logB := runLogged(t, spec, 2500, cmds)
	require.Greater(t, len(a), 1000)
	require.Equal(t, len(a), len(b))
	for i := range a {
		require.Equal(t, a[i], b[i], "event %d differs", i)
	}
	assert.Equal(t, logA, logB)

	other := ChaosSpec(12, 600, BackendMemory, SinkExactlyOnce)
	c, _ := runLogged(t, other, 2500, cmds)
	assert.NotEqual(t, a, c)
}

// Replay applies a command log at the recorded steps and reproduces the run.
func TestReplay(t *testing.T) {
	spec := ChaosSpec(5, 400, BackendMemory, SinkExactlyOnce)
	var first []Event
	s, err := NewStepper(spec, Options{Dir: t.TempDir(), RecordEvents: func(e Event) { first = append(first, e) }})
	require.NoError(t, err)
	defer s.Close()
	s.Steps(200)
	require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-1"}))
	s.Steps(100)
	require.NoError(t, s.Do(Command{Name: CmdRestartTaskManager, TaskManager: "tm-1"}))
	s.Steps(300)
	log := s.CommandLog()
	require.Len(t, log, 2)
	assert.Equal(t, int64(200), log[0].Step)

	var second []Event
	r, err := NewStepper(spec, Options{Dir: t.TempDir(), RecordEvents: func(e Event) { second = append(second, e) }})
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.Replay(log))
	r.Steps(300)
	require.Equal(t, len(first), len(second))
	for i := range first {
		a, _ := json.Marshal(first[i])
		b, _ := json.Marshal(second[i])
		require.Equal(t, string(a), string(b), "event %d", i)
	}
}

// `statelab chaos --driver step` prints the same line for the same seed.
func TestChaosStepDeterministic(t *testing.T) {
	run := func() (*ChaosResult, error) {
		return RunChaos(context.Background(), ChaosConfig{Seed: 99, Records: 500, Crashes: 4, Rescales: 2, Dir: t.TempDir()})
	}
	a, err := run()
	require.NoError(t, err)
	b, err := run()
	require.NoError(t, err)
	assert.Equal(t, a.Summary(), b.Summary())
	assert.Equal(t, a.Actions, b.Actions)
	assert.Equal(t, a.Steps, b.Steps)
}
