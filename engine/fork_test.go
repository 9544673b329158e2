package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snapJSON is a Stepper's snapshot as JSON, the form viewers receive,
// without the two things a copy cannot share with its original: where its
// local disks are (its own directory), and how many bytes Pebble's files
// take there (a copy's DB is written afresh, so its files differ); and
// without the bytes read from checkpoint storage, which count the views'
// own reads too (a snapshot reads the newest checkpoint's offsets), so
// they depend on how often someone looked.
func snapJSON(t *testing.T, s *Stepper) string {
	t.Helper()
	sn := s.Snapshot()
	sn.Checkpoints.Storage.BytesRead = 0
	for i := range sn.TaskManagers {
		sn.TaskManagers[i].LocalDir = strings.TrimPrefix(sn.TaskManagers[i].LocalDir, s.c.dir)
	}
	for i := range sn.Job.Operators {
		for j := range sn.Job.Operators[i].Subtasks {
			if st := sn.Job.Operators[i].Subtasks[j].State; st != nil {
				st.LocalDiskBytes = 0
			}
		}
	}
	b, err := json.Marshal(sn)
	require.NoError(t, err)
	return string(b)
}

// recorder collects a Stepper's events as JSON lines.
type recorder struct {
	t     *testing.T
	lines []string
}

func (r *recorder) record(e Event) {
	b, err := json.Marshal(e)
	require.NoError(r.t, err)
	r.lines = append(r.lines, string(b))
}

func requireExactlyOnce(t *testing.T, s *Stepper, what string) {
	t.Helper()
	_, err := s.RunUntilDrained(400000)
	require.NoError(t, err, what)
	cmps, err := s.Compare()
	require.NoError(t, err)
	require.NotEmpty(t, cmps)
	for _, c := range cmps {
		require.True(t, c.Supported, "%s: %s", what, c.Reason)
		assert.True(t, c.ExactlyOnce, "%s: sink %s: %d duplicated, %d lost, %d unexpected", what, c.Sink, c.DuplicateRecords, c.LostRecords, len(c.Unexpected))
		assert.Equal(t, c.Expected, c.Committed, "%s: every expected record committed once", what)
	}
}

// A fork of a Stepper is the run itself at that step: the same snapshot,
// and stepped like the original it does what the original does, event for
// event. Then each goes its own way, and exactly-once holds in both.
func TestForkStepperIsTheRunAtThatStep(t *testing.T) {
	for _, backend := range []Backend{BackendMemory, BackendFS, BackendPebble} {
		t.Run(string(backend), func(t *testing.T) {
			spec := ChaosSpec(21, 1500, backend, SinkExactlyOnce)
			orig := &recorder{t: t}
			s, err := NewStepper(spec, Options{Dir: t.TempDir(), RecordEvents: orig.record})
			require.NoError(t, err)
			defer s.Close()
			s.Steps(400)
			require.NoError(t, s.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-2"}))
			s.Steps(150)
			require.NoError(t, s.Do(Command{Name: CmdRestartTaskManager, TaskManager: "tm-2"}))
			require.NoError(t, s.Do(Command{Name: CmdInject, Operator: "source", Partition: 0, Text: "fork me"}))
			// Fork where something is in flight: a checkpoint pending
			// (barriers on their way, acknowledgements to come) and records
			// queued on channels.
			_, err = s.RunUntil(func(sn *Snapshot) bool {
				queued := 0
				for _, ch := range sn.Channels {
					queued += len(ch.Queued)
				}
				return sn.Checkpoints.Counts.InProgress > 0 && queued > 2 && sn.Job.Status == JobRunning
			}, 20000)
			require.NoError(t, err)
			at := snapJSON(t, s)
			mark := len(orig.lines)

			forked := &recorder{t: t}
			f, err := s.Fork(Options{Dir: t.TempDir(), RecordEvents: forked.record})
			require.NoError(t, err)
			defer f.Close()
			require.Equal(t, at, snapJSON(t, f), "the fork's snapshot is the original's at the fork point")
			require.Equal(t, at, snapJSON(t, s), "forking does not disturb the original")

			// The same steps, the same command: the same run.
			s.Steps(700)
			f.Steps(700)
			require.NoError(t, s.Do(Command{Name: CmdRescale, Operator: "count", Parallelism: 3}))
			require.NoError(t, f.Do(Command{Name: CmdRescale, Operator: "count", Parallelism: 3}))
			s.Steps(900)
			f.Steps(900)
			require.Equal(t, snapJSON(t, s), snapJSON(t, f))
			require.Equal(t, len(orig.lines)-mark, len(forked.lines))
			for i, line := range forked.lines {
				require.Equal(t, orig.lines[mark+i], line, "event %d after the fork", i)
			}

			// Now they diverge: the fork alone loses a TaskManager.
			require.NoError(t, f.Do(Command{Name: CmdCrashTaskManager, TaskManager: "tm-1"}))
			f.Steps(50)
			require.NoError(t, f.Do(Command{Name: CmdRestartTaskManager, TaskManager: "tm-1"}))
			assert.NotEqual(t, snapJSON(t, s), snapJSON(t, f))
			so, fo := s.Snapshot(), f.Snapshot()
			assert.Equal(t, 1, so.Counters.Crashes, "the original saw only its own crash")
			assert.Equal(t, 2, fo.Counters.Crashes)
			requireExactlyOnce(t, s, "original")
			requireExactlyOnce(t, f, "fork")
		})
	}
}

// A Stepper forked at step N and stepped to M is what a replay of the seed
// and command log from step 0 shows at M.
func TestForkThenStepEqualsReplayFromZero(t *testing.T) {
	spec := ChaosSpec(8, 800, BackendMemory, SinkExactlyOnce)
	s, err := NewStepper(spec, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	s.Steps(300)
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#1"}))
	s.Steps(200)
	keep, err := s.Fork(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer keep.Close()
	s.Steps(100)
	require.NoError(t, s.Do(Command{Name: CmdTriggerSavepoint}))
	s.Steps(400)
	log := s.CommandLog()

	// From the kept fork: apply the rest of the log, step to 1000.
	var rest []LoggedCommand
	for _, lc := range log {
		if lc.Step > 500 {
			rest = append(rest, lc)
		}
	}
	require.NoError(t, keep.Replay(rest))
	keep.Steps(int(1000 - keep.Snapshot().Step))

	r, err := NewStepper(spec, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.Replay(log))
	r.Steps(int(1000 - r.Snapshot().Step))
	assert.Equal(t, int64(1000), keep.Snapshot().Step)
	assert.Equal(t, snapJSON(t, r), snapJSON(t, keep))
}

// A Live run forks into a Stepper at any moment: the copy has the Live
// job's state at that instant (nothing in flight lost), the Live job runs
// on undisturbed, and both end exactly once.
func TestForkLive(t *testing.T) {
	spec := ChaosSpec(5, 20000, BackendMemory, SinkExactlyOnce)
	l, err := NewLive(spec, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, l.Start(context.Background()))
	waitLive(t, l, func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 2 })
	require.NoError(t, l.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
	waitLive(t, l, func(s *Snapshot) bool { return s.Counters.Failovers >= 1 })

	f, err := l.Fork(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer f.Close()
	fs := f.Snapshot()
	ls := l.Snapshot()
	assert.Equal(t, "step", fs.Driver)
	assert.True(t, fs.Paused)
	assert.Equal(t, ls.Job.Attempt, fs.Job.Attempt, "the same execution")
	assert.Equal(t, 1, fs.Counters.Failovers, "the fork carries the Live run's crash")
	assert.LessOrEqual(t, fs.Sinks[0].Committed, ls.Sinks[0].Committed, "the Live run went on from where the fork was made")
	assert.Equal(t, ls.Commands, fs.Commands)

	// The fork goes its own way on the Stepper; the Live run goes on.
	require.NoError(t, f.Do(Command{Name: CmdAddTaskManager}))
	requireExactlyOnce(t, f, "fork of a Live run")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, l.WaitDrained(ctx))
	cmps, err := l.Compare()
	require.NoError(t, err)
	assert.True(t, cmps[0].ExactlyOnce, "the Live run: %d duplicated, %d lost", cmps[0].DuplicateRecords, cmps[0].LostRecords)
	assert.Len(t, l.Snapshot().TaskManagers, 3, "the fork's TaskManager is its own")
}

// A Live run forked while paused and quiet: the copy's picture is the Live
// job's own (the parts both drivers show alike).
func TestForkLivePausedSamePicture(t *testing.T) {
	spec := ChaosSpec(6, 3000, BackendFS, SinkExactlyOnce)
	l, err := NewLive(spec, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, l.Start(context.Background()))
	waitLive(t, l, func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed >= 1 })
	l.Pause()
	before := waitQuiet(t, l)
	f, err := l.Fork(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer f.Close()
	fs := f.Snapshot()
	for i, op := range before.Job.Operators {
		for j, st := range op.Subtasks {
			got := fs.Job.Operators[i].Subtasks[j]
			assert.Equal(t, st.Status, got.Status, st.Name)
			assert.Equal(t, st.RecordsIn, got.RecordsIn, st.Name)
			assert.Equal(t, st.RecordsOut, got.RecordsOut, st.Name)
		}
	}
	assert.Equal(t, before.Sources, fs.Sources)
	for i := range before.Sinks {
		// Live leaves the comparison out of its snapshot.
		assert.Equal(t, before.Sinks[i].Committed, fs.Sinks[i].Committed)
		assert.Equal(t, before.Sinks[i].Transactions, fs.Sinks[i].Transactions)
	}
	assert.Equal(t, before.Checkpoints.Counts, fs.Checkpoints.Counts)
	assert.Equal(t, before.Checkpoints.Retained, fs.Checkpoints.Retained)
	for i := range before.Channels {
		assert.Equal(t, before.Channels[i].Queued, fs.Channels[i].Queued, before.Channels[i].Name)
	}
	l.Resume()
	requireExactlyOnce(t, f, "fork")
}

// waitQuiet waits until a paused Live run is quiet — every subtask parked at
// its gate, the JobManager's mailbox empty and the published figures (a Live
// subtask publishes a few times a second) no longer changing across half a
// second of polls — and returns its snapshot then. On a busy machine it
// waits longer; it never returns early because the machine is slow, since
// any change starts the half second again.
func waitQuiet(t *testing.T, l *Live) Snapshot {
	t.Helper()
	picture := func(s Snapshot) string {
		s.At, s.Step = 0, 0
		data, err := json.Marshal(s)
		require.NoError(t, err)
		return string(data)
	}
	deadline := time.Now().Add(2 * time.Minute)
	last, since := "", time.Now()
	for {
		s := l.Snapshot()
		l.qmu.Lock()
		queued := len(l.queue)
		l.qmu.Unlock()
		p := picture(s)
		switch {
		case p != last || queued > 0:
			last, since = p, time.Now()
		case time.Since(since) >= 500*time.Millisecond:
			return s
		}
		require.True(t, time.Now().Before(deadline), "the paused Live run never became quiet")
		time.Sleep(10 * time.Millisecond)
	}
}
