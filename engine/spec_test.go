package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const wordCountYAML = `
name: wordcount
seed: 42
backend: pebble
operators:
  - id: source
    kind: source
    parallelism: 2
    options: {partitions: 4, records: 1000, generator: words}
  - id: tokenizer
    kind: tokenizer
    parallelism: 2
  - id: count
    kind: count
    parallelism: 200
  - id: sink
    kind: sink
    options: {semantics: at-least-once}
edges:
  - {from: source, to: tokenizer}
  - {from: tokenizer, to: count, partitioner: hash}
  - {from: count, to: sink}
checkpointing: {interval: 500ms, mode: exactly-once, retained: 3}
cluster: {taskManagers: 2, slotsPerTaskManager: 4}
restart: {strategy: fixed-delay, attempts: 5, delay: 2s}
`

func TestLoadSpecYAML(t *testing.T) {
	s, err := LoadSpec([]byte(wordCountYAML))
	require.NoError(t, err)
	assert.Equal(t, "wordcount", s.Name)
	assert.Equal(t, int64(42), s.Seed)
	assert.Equal(t, BackendPebble, s.Backend)
	assert.Equal(t, 500*time.Millisecond, s.Checkpointing.Interval.D())
	assert.Equal(t, 2*time.Second, s.Restart.Delay.D())
	assert.Equal(t, 3, s.Checkpointing.Retained)
	// Flink's default max parallelism: min(max(roundUpToPowerOfTwo(p + p/2), 128), 32768).
	assert.Equal(t, 128, s.Operators[0].MaxParallelism, "p=2: 3 rounds up to 4, raised to 128")
	assert.Equal(t, 512, s.Operators[2].MaxParallelism, "p=200: 300 rounds up to 512")
	assert.Equal(t, 1, s.Operators[3].Parallelism, "parallelism defaults to 1")
	assert.Equal(t, Forward, s.Edges[0].Partitioner, "same parallelism: forward")
	assert.Equal(t, Rebalance, s.Edges[2].Partitioner, "different parallelism: rebalance")
	// Flink's execution.checkpointing.timeout (CheckpointingOptions): 10 min.
	assert.Equal(t, 10*time.Minute, s.Checkpointing.Timeout.D())
	assert.Equal(t, FailoverRegion, s.Cluster.Failover, "jobmanager.execution.failover-strategy: region")
	assert.Equal(t, 5*time.Minute, s.Cluster.SlotRequestTimeout.D(), "slot.request.timeout: 5 min")
}

func TestLoadSpecJSON(t *testing.T) {
	s, err := LoadSpec([]byte(`{"name":"j","operators":[{"id":"src","kind":"source","options":{"partitions":5,"records":10}},
		{"id":"out","kind":"sink"}],"edges":[{"from":"src","to":"out"}],"checkpointing":{"interval":250}}`))
	require.NoError(t, err)
	assert.Equal(t, 250*time.Millisecond, s.Checkpointing.Interval.D(), "a bare number is milliseconds")
	assert.Equal(t, BackendMemory, s.Backend)
	assert.Equal(t, ExactlyOnce, s.Checkpointing.Mode)
	assert.Equal(t, 1, s.Cluster.TaskManagers)
	assert.Equal(t, 1, s.Cluster.SlotsPerTaskManager)
	assert.Equal(t, RestartDefault, s.Restart.Strategy, "left as written")
	assert.Equal(t, RestartExponentialDelay, s.Effective().Strategy, "checkpointing on: Flink's default is exponential-delay")
	assert.Equal(t, DefaultRetainedCheckpoints, s.Checkpointing.Retained, "state.checkpoints.num-retained: 1")
	opts, err := parseOptions(&s.Operators[0])
	require.NoError(t, err)
	assert.Equal(t, 5, opts.Partitions, "JSON numbers are accepted as integers")
}

func TestValidateErrors(t *testing.T) {
	base := func() *JobSpec {
		return &JobSpec{
			Operators: []OperatorSpec{{ID: "src", Kind: KindSource}, {ID: "count", Kind: KindCount, Parallelism: 2, MaxParallelism: 4}, {ID: "out", Kind: KindSink}},
			Edges:     []EdgeSpec{{From: "src", To: "count", Partitioner: Hash}, {From: "count", To: "out"}},
		}
	}
	tests := []struct {
		name   string
		change func(s *JobSpec)
		want   string
	}{
		{"no operators", func(s *JobSpec) { s.Operators = nil }, "no operators"},
		{"duplicate id", func(s *JobSpec) { s.Operators[2].ID = "src" }, `"src" is used twice`},
		{"unknown kind", func(s *JobSpec) { s.Operators[1].Kind = "join" }, `unknown kind "join"`},
		{"above max parallelism", func(s *JobSpec) { s.Operators[1].Parallelism = 5 }, "parallelism 5 is above max parallelism 4"},
		{"unknown edge end", func(s *JobSpec) { s.Edges[1].To = "nowhere" }, `unknown operator "nowhere"`},
		{"keyed without hash", func(s *JobSpec) { s.Edges[0].Partitioner = Rebalance }, "needs hash (keyBy) inputs"},
		{"forward across parallelism", func(s *JobSpec) { s.Edges[1].Partitioner = Forward }, "forward partitioning does not allow change of parallelism"},
		{"cycle", func(s *JobSpec) {
			s.Operators = append(s.Operators, OperatorSpec{ID: "m", Kind: KindMap, Parallelism: 2})
			s.Edges = append(s.Edges, EdgeSpec{From: "count", To: "m"}, EdgeSpec{From: "m", To: "count", Partitioner: Hash})
		}, "cycle"},
		{"sink with output", func(s *JobSpec) {
			s.Operators = append(s.Operators, OperatorSpec{ID: "m", Kind: KindMap})
			s.Edges = append(s.Edges, EdgeSpec{From: "out", To: "m"})
		}, `sink "out" cannot have outputs`},
		{"dangling operator", func(s *JobSpec) { s.Operators = append(s.Operators, OperatorSpec{ID: "m", Kind: KindMap}) }, `"m" has no input`},
		{"bad backend", func(s *JobSpec) { s.Backend = "rocksdb" }, `unknown backend "rocksdb"`},
		{"bad mode", func(s *JobSpec) { s.Checkpointing.Mode = "twice" }, "unknown checkpointing mode"},
		{"bad option", func(s *JobSpec) { s.Operators[0].Options = map[string]any{"partitons": 3} }, `unknown option "partitons"`},
		{"option type", func(s *JobSpec) { s.Operators[0].Options = map[string]any{"partitions": "three"} }, "want an integer"},
		{"bad sink", func(s *JobSpec) { s.Operators[2].Options = map[string]any{"semantics": "maybe"} }, "want exactly-once or at-least-once"},
		{"bad restart", func(s *JobSpec) { s.Restart.Strategy = "exponential" }, `unknown restart strategy "exponential"`},
		{"negative attempts", func(s *JobSpec) { s.Restart = RestartSpec{Strategy: RestartFixedDelay, Attempts: -1} }, "restart.attempts cannot be negative"},
		{"multiplier not above 1", func(s *JobSpec) { s.Restart = RestartSpec{Strategy: RestartExponentialDelay, Multiplier: 1} }, "must be greater than 1"},
		{"jitter above 1", func(s *JobSpec) { s.Restart = RestartSpec{Strategy: RestartExponentialDelay, Jitter: 1.5} }, "within 0 and 1"},
		{"initial above max backoff", func(s *JobSpec) {
			s.Restart = RestartSpec{Strategy: RestartExponentialDelay, Delay: Duration(2 * time.Minute)}
		}, "above the max backoff"},
		{"negative tolerable", func(s *JobSpec) { s.Checkpointing.TolerableFailed = -1 }, "tolerableFailed must be 0 or more"},
		{"negative max concurrent", func(s *JobSpec) { s.Checkpointing.MaxConcurrent = -1 }, "maxConcurrent must be 1 or more"},
		{"bad failover", func(s *JobSpec) { s.Cluster.Failover = "individual" }, `failover "individual" is unknown`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			require.NoError(t, s.Clone().Validate())
			tc.change(s)
			err := s.Validate()
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrInvalidSpec))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestLoadSpecRejectsUnknownField(t *testing.T) {
	_, err := LoadSpec([]byte("name: x\noperatorz: []\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "operatorz")
}
