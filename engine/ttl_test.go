package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/state"
)

const ttlYAML = `
name: ttl
operators:
  - id: source
    kind: source
    options: {records: 10}
  - id: count
    kind: count
    options: {ttl: 30s, ttlUpdateType: OnReadAndWrite, ttlStateVisibility: ReturnExpiredIfNotCleanedUp, ttlCleanupFullSnapshot: true, ttlCleanupSize: 10}
  - id: sink
    kind: sink
edges:
  - {from: source, to: count, partitioner: hash}
  - {from: count, to: sink}
`

func TestSpecTTLOptions(t *testing.T) {
	s, err := LoadSpec([]byte(ttlYAML))
	require.NoError(t, err)
	o, err := parseOptions(&s.Operators[1])
	require.NoError(t, err)
	require.NotNil(t, o.TTL)
	assert.Equal(t, "30s", o.TTL.TTL.String())
	assert.Equal(t, state.OnReadAndWrite, o.TTL.UpdateType)
	assert.Equal(t, state.ReturnExpiredIfNotCleanedUp, o.TTL.Visibility)
	assert.True(t, o.TTL.CleanupFullSnapshot)
	assert.Equal(t, 10, o.TTL.CleanupSize)

	bad := []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"ttl": "0s"}, `option "ttl": want a time-to-live of at least 1ms`},
		{map[string]any{"ttl": "1s", "ttlUpdateType": "OnRead"}, `option "ttlUpdateType": want OnCreateAndWrite or OnReadAndWrite`},
		{map[string]any{"ttl": "1s", "ttlStateVisibility": "Sometimes"}, `want NeverReturnExpired or ReturnExpiredIfNotCleanedUp`},
		{map[string]any{"ttl": "1s", "ttlCleanupFullSnapshot": "yes"}, `option "ttlCleanupFullSnapshot": want true or false`},
		{map[string]any{"ttlUpdateType": "OnReadAndWrite"}, `option "ttlUpdateType": needs option "ttl"`},
		{map[string]any{"ttl": "1s", "ttlCleanupSize": -3}, `option "ttlCleanupSize"`},
	}
	for _, b := range bad {
		s, err := LoadSpec([]byte(ttlYAML))
		require.NoError(t, err)
		s.Operators[1].Options = b.opts
		err = s.Validate()
		require.ErrorIs(t, err, ErrInvalidSpec, "%v", b.opts)
		assert.Contains(t, err.Error(), b.want)
	}
	// A stateless operator takes no TTL.
	s, err = LoadSpec([]byte(ttlYAML))
	require.NoError(t, err)
	s.Operators[2].Options = map[string]any{"ttl": "1s"}
	require.ErrorIs(t, s.Validate(), ErrInvalidSpec)
}

// countJob is a keyed count over single words, with state options for the
// count operator.
func countJob(backend Backend, opts map[string]any) *JobSpec {
	return &JobSpec{
		Name: "ttl-count", Seed: 3, Backend: backend,
		Operators: []OperatorSpec{
			{ID: "source", Kind: KindSource, Parallelism: 2, Options: map[string]any{"partitions": 4, "records": 400, "keys": 60, "wordsPerLine": 1}},
			{ID: "count", Kind: KindCount, Parallelism: 2, Options: opts},
			{ID: "sink", Kind: KindSink, Parallelism: 1},
		},
		Edges: []EdgeSpec{
			{From: "source", To: "count", Partitioner: Hash},
			{From: "count", To: "sink", Partitioner: Rebalance},
		},
		Cluster: ClusterSpec{TaskManagers: 1, SlotsPerTaskManager: 4},
		Runtime: RuntimeSpec{FIFO: true},
		Restart: RestartSpec{Strategy: RestartFixedDelay, Attempts: 10, Delay: ms(1)},
	}
}

// A TTL shorter than the gaps between a rare key's records expires its
// count (in the Stepper's virtual processing time), so the key counts from
// 1 again and the output differs from the no-TTL truth; a TTL longer than
// the run changes nothing.
func TestTTLExpiresCountsInProcessingTime(t *testing.T) {
	for _, backend := range []Backend{BackendMemory, BackendPebble} {
		t.Run(string(backend), func(t *testing.T) {
			long, _ := newTestStepper(t, countJob(backend, map[string]any{"ttl": "1h"}))
			runToEnd(t, long)
			cmp, err := long.Compare()
			require.NoError(t, err)
			assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])

			short, _ := newTestStepper(t, countJob(backend, map[string]any{"ttl": "2ms"}))
			runToEnd(t, short)
			cmp, err = short.Compare()
			require.NoError(t, err)
			assert.False(t, cmp[0].ExactlyOnce, "expired counts restart at 1")
			assert.NotEmpty(t, cmp[0].Losses, "the higher counts never come")
			assert.NotEmpty(t, cmp[0].Duplicates, "low counts come again")
		})
	}
}

// The last-access timestamps survive a crash and restore: an entry not
// touched since the checkpoint shows the same last access after the
// restore, not the restore's time, and the inspector marks entries that
// expired but were not yet cleaned up.
func TestTTLTimestampsSurviveRestore(t *testing.T) {
	for _, backend := range []Backend{BackendMemory, BackendFS, BackendPebble} {
		t.Run(string(backend), func(t *testing.T) {
			s, _ := newTestStepper(t, countJob(backend, map[string]any{"ttl": "1h", "ttlCleanupSize": -1}))
			s.Steps(150)
			completeCheckpoint(t, s)
			before := map[string]int64{}
			for _, task := range []string{"count#0", "count#1"} {
				v, err := s.TaskState(task, 0)
				require.NoError(t, err)
				for _, e := range v.Keyed {
					require.Positive(t, e.LastAccess, "%+v", e)
					before[e.Key] = e.LastAccess
				}
			}
			require.NotEmpty(t, before)
			require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
			_, err := s.RunUntil(runningAgain(2), 20000)
			require.NoError(t, err)
			same := 0
			for _, task := range []string{"count#0", "count#1"} {
				v, err := s.TaskState(task, 0)
				require.NoError(t, err)
				for _, e := range v.Keyed {
					if ts, ok := before[e.Key]; ok && ts == e.LastAccess {
						same++
					}
				}
			}
			assert.Positive(t, same, "restored entries keep their checkpointed last access")
			runToEnd(t, s)
			cmp, err := s.Compare()
			require.NoError(t, err)
			assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
		})
	}
}

// A fork of a job with timers and a short TTL is the run itself: its timers
// and TTL state are copied, and its TTL reads the fork's own clock (the
// original runs ahead first, then the fork does the same steps).
func TestForkCopiesTimersAndTTL(t *testing.T) {
	for _, backend := range []Backend{BackendMemory, BackendPebble} {
		t.Run(string(backend), func(t *testing.T) {
			spec := AlertsChaosSpec(5, 800, backend, SinkExactlyOnce)
			spec.Operators[1].Options["ttl"] = "3ms"
			spec.Operators[1].Options["ttlCleanupSize"] = 2
			orig := &recorder{t: t}
			s, err := NewStepper(spec, Options{Dir: t.TempDir(), RecordEvents: orig.record})
			require.NoError(t, err)
			defer s.Close()
			s.Steps(300)
			at := snapJSON(t, s)
			mark := len(orig.lines)
			forked := &recorder{t: t}
			f, err := s.Fork(Options{Dir: t.TempDir(), RecordEvents: forked.record})
			require.NoError(t, err)
			defer f.Close()
			require.Equal(t, at, snapJSON(t, f))
			s.Steps(600)
			f.Steps(600)
			require.Equal(t, snapJSON(t, s), snapJSON(t, f))
			require.Equal(t, len(orig.lines)-mark, len(forked.lines))
			for i, line := range forked.lines {
				require.Equal(t, orig.lines[mark+i], line, "event %d after the fork", i)
			}
			for _, task := range []string{"alerts#0", "alerts#1"} {
				a, err := s.TaskState(task, 0)
				require.NoError(t, err)
				b, err := f.TaskState(task, 0)
				require.NoError(t, err)
				assert.Equal(t, a.Keyed, b.Keyed, "%s: the same entries, timestamps and expiry", task)
				assert.Equal(t, a.Timers, b.Timers, "%s: the same timers", task)
			}
		})
	}
}
