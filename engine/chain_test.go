package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func chainedWordCount(records, p int) *JobSpec {
	spec := wordCount(records, p, p, 0)
	on := true
	spec.Chaining = &on
	// count -> sink forward with equal parallelism, so count and sink
	// chain as well.
	spec.Operators[3].Parallelism = p
	spec.Edges[2].Partitioner = Forward
	spec.Checkpointing.Interval = ms(20)
	return spec
}

// Each of Flink's chaining rules (StreamingJobGraphGenerator.isChainable /
// isChainableInput) keeps source -> tokenizer out of a chain on its own.
func TestChainableRules(t *testing.T) {
	on, off := true, false
	base := func() *JobSpec {
		s := wordCount(10, 2, 2, 0)
		s.Chaining = &on
		return s
	}
	ok, _, err := base().chainable(0, nil)
	require.NoError(t, err)
	require.True(t, ok, "source -> tokenizer, forward, same parallelism, chaining on")
	unset := base()
	unset.Chaining = nil
	ok, _, err = unset.chainable(0, nil)
	require.NoError(t, err)
	require.True(t, ok, "a spec without chaining: chains (pipeline.operator-chaining defaults to true)")

	cases := []struct {
		name   string
		change func(s *JobSpec)
		rule   ChainRule
	}{
		{"pipeline.operator-chaining false", func(s *JobSpec) { s.Chaining = &off }, ChainRuleDisabled},
		{"startNewChain on the downstream operator", func(s *JobSpec) { s.Operators[1].Chain = ChainStartNew }, ChainRuleStrategy},
		{"disableChaining on the downstream operator", func(s *JobSpec) { s.Operators[1].Chain = ChainDisable }, ChainRuleStrategy},
		{"disableChaining on the upstream operator", func(s *JobSpec) { s.Operators[0].Chain = ChainDisable }, ChainRuleStrategy},
		{"different parallelism", func(s *JobSpec) { s.Operators[1].Parallelism = 3 }, ChainRuleParallelism},
		{"not forward", func(s *JobSpec) { s.Edges[0].Partitioner = Rebalance }, ChainRulePartitioner},
		{"second input", func(s *JobSpec) {
			s.Operators = append(s.Operators, OperatorSpec{ID: "rules", Kind: KindSource, Parallelism: 2})
			s.Edges = append(s.Edges, EdgeSpec{From: "rules", To: "tokenizer", Partitioner: Forward})
		}, ChainRuleInputs},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := base()
			c.change(s)
			ok, rule, err := s.chainable(0, nil)
			assert.False(t, ok)
			assert.Equal(t, c.rule, rule)
			assert.ErrorIs(t, err, errNotChainable)
		})
	}
	// startNewChain on the upstream operator makes it a head, which may
	// still chain to its downstream (ChainingStrategy.HEAD).
	s := base()
	s.Operators[0].Chain = ChainStartNew
	ok, _, _ = s.chainable(0, nil)
	assert.True(t, ok)
	// A parallelism given at run time (a rescale) decides, not the spec's.
	ok, rule, _ := base().chainable(0, map[string]int{"source": 2, "tokenizer": 1})
	assert.False(t, ok)
	assert.Equal(t, ChainRuleParallelism, rule)
}

func TestChainSpecValidation(t *testing.T) {
	s := wordCount(10, 1, 1, 0)
	s.Operators[1].Chain = "never"
	err := s.Validate()
	require.ErrorIs(t, err, ErrInvalidSpec)
	assert.Contains(t, err.Error(), "start-new")
	assert.Contains(t, err.Error(), "disableChaining")
}

// Chains are named as Flink's Web UI names job vertices.
func TestChainNames(t *testing.T) {
	s := chainedWordCount(10, 2)
	require.NoError(t, s.Validate())
	var names []string
	for _, c := range s.Chains(nil) {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"Source: source -> tokenizer", "count -> Sink: sink"}, names)

	s.Operators[3].Chain = ChainDisable
	names = nil
	for _, c := range s.Chains(nil) {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"Source: source -> tokenizer", "count", "Sink: sink"}, names)

	// A chain that branches: Flink's createChainedName writes "a -> (b, c)".
	b := &JobSpec{Name: "b", Chaining: s.Chaining, Operators: []OperatorSpec{
		{ID: "src", Kind: KindSource}, {ID: "m", Kind: KindMap}, {ID: "k1", Kind: KindSink}, {ID: "k2", Kind: KindSink},
	}, Edges: []EdgeSpec{{From: "src", To: "m"}, {From: "m", To: "k1"}, {From: "m", To: "k2"}}}
	require.NoError(t, b.Validate())
	require.Len(t, b.Chains(nil), 1)
	assert.Equal(t, "Source: src -> m -> (Sink: k1, Sink: k2)", b.Chains(nil)[0].Name)
}

// A chained word count gives the ground truth on the Stepper, and no record
// crosses a channel inside a chain: the chained channels stay empty while
// the chained operators process every record.
func TestChainedWordCountStepper(t *testing.T) {
	s, _ := newTestStepper(t, chainedWordCount(500, 2))
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	require.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])

	snap := s.Snapshot()
	var chained, plain int
	for _, ch := range snap.Channels {
		if ch.Chained {
			chained++
			assert.Zero(t, ch.Sent, "%s is inside a chain", ch.Name)
		} else {
			plain++
			assert.Positive(t, ch.Sent, "%s", ch.Name)
		}
	}
	assert.Equal(t, 4, chained, "source->tokenizer and count->sink, two subtasks each")
	assert.Equal(t, 4, plain, "tokenizer -> count is hash")
	assert.Positive(t, subtaskView(t, snap, "tokenizer#0").RecordsIn)
	assert.Positive(t, subtaskView(t, snap, "sink#1").RecordsIn)
	for _, o := range snap.Job.Operators {
		switch o.ID {
		case "source", "tokenizer":
			assert.Equal(t, "Source: source -> tokenizer", o.Chain)
		default:
			assert.Equal(t, "count -> Sink: sink", o.Chain)
		}
	}
	assert.Positive(t, snap.Checkpoints.Counts.Completed)
}

// The same job unchained sends every record over every channel: the test
// above is not passing for a job that never chains.
func TestUnchainedWordCountUsesChannels(t *testing.T) {
	spec := chainedWordCount(200, 2)
	off := false
	spec.Chaining = &off
	s, _ := newTestStepper(t, spec)
	runToEnd(t, s)
	for _, ch := range s.Snapshot().Channels {
		assert.False(t, ch.Chained)
		assert.Positive(t, ch.Sent, "%s", ch.Name)
	}
}

// A chain is one schedulable unit on the Stepper: no step is ever offered
// for a subtask chained after another.
func TestChainIsOneSchedulableUnit(t *testing.T) {
	s, _ := newTestStepper(t, chainedWordCount(200, 2))
	for i := 0; i < 2000; i++ {
		s.mu.Lock()
		for _, cd := range s.candidates(nil) {
			if cd.t != nil {
				require.Nil(t, cd.t.chainUp(), "step %d offers %s for %s", i, cd, cd.t.name)
				require.NotEqual(t, "tokenizer", cd.t.op.spec.ID)
				require.NotEqual(t, "sink", cd.t.op.spec.ID)
			}
		}
		ok := s.stepLocked()
		s.mu.Unlock()
		if !ok {
			break
		}
	}
}

// A crash of one operator of a chain fails the chain's whole subtask, as a
// crash of Flink's task "Source: source -> tokenizer (1/2)" does: source#0
// fails with tokenizer#0 (not cancelled as a neighbour in its region would
// be), the output stays exactly once.
func TestChainFailsAsOneUnit(t *testing.T) {
	spec := chainedWordCount(400, 2)
	spec.Cluster.Failover = FailoverRegion
	s, log := newTestStepper(t, spec)
	_, err := s.RunUntil(func(sn *Snapshot) bool { return sn.Checkpoints.Counts.Completed > 0 }, 100000)
	require.NoError(t, err)
	require.NoError(t, s.Do(Command{Name: CmdCrashSubtask, Task: "tokenizer#0"}))
	assert.Contains(t, log.statuses(EvTaskStatus, "source#0"), string(TaskFailed), "the chain's head fails with it")
	assert.NotContains(t, log.statuses(EvTaskStatus, "source#0"), string(TaskCanceled))
	var msg string
	for _, e := range log.kinds(EvTaskFailed) {
		if strings.Contains(e.Message, "fails as one task") {
			msg = e.Message
		}
	}
	assert.Contains(t, msg, "Source: source -> tokenizer (1/2)")
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])

	// An operator failing inside the chain (an error from its handler)
	// fails the chain too, named by the failing operator.
	s2, log2 := newTestStepper(t, chainedWordCount(400, 2))
	_, err = s2.RunUntil(func(sn *Snapshot) bool { return sn.Job.Status == JobRunning && allRunning(sn) }, 10000)
	require.NoError(t, err)
	s2.mu.Lock()
	head := s2.c.ex.byName["source#0"]
	tok := s2.c.ex.byName["tokenizer#0"]
	tok.fn = failingLogic{tok.fn}
	s2.mu.Unlock()
	_, err = s2.RunUntil(func(sn *Snapshot) bool { return sn.Counters.Failovers > 0 }, 100000)
	require.NoError(t, err)
	assert.Contains(t, log2.statuses(EvTaskStatus, "source#0"), string(TaskFailed))
	assert.Contains(t, log2.statuses(EvTaskStatus, "tokenizer#0"), string(TaskFailed))
	assert.Equal(t, "tokenizer#0 (chained): boom", head.getFailure())
}

type failingLogic struct{ operatorLogic }

func (failingLogic) process(*subtask, int, []Record) error { return errBoom }

var errBoom = errorString("boom")

type errorString string

func (e errorString) Error() string { return string(e) }

// On the Live driver a chain is one goroutine: the chained subtasks have
// none of their own, and the job still gives the ground truth.
func TestChainedWordCountLive(t *testing.T) {
	l, err := NewLive(chainedWordCount(2000, 2), Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, l.Start(ctx))
	require.NoError(t, l.WaitDrained(ctx))
	cmp, err := l.Compare()
	require.NoError(t, err)
	assert.True(t, cmp[0].ExactlyOnce, "%+v", cmp[0])
	l.mu.Lock()
	for _, tk := range l.c.ex.tasks {
		if tk.chainUp() != nil {
			assert.Nil(t, tk.stop, "%s runs in its chain's goroutine", tk.name)
			assert.Equal(t, tk.chainHead().wakeC, tk.wakeC)
		} else {
			assert.NotNil(t, tk.stop, "%s heads a chain and has a goroutine", tk.name)
		}
	}
	l.mu.Unlock()
	for _, ch := range l.Snapshot().Channels {
		if ch.Chained {
			assert.Zero(t, ch.Sent, ch.Name)
		}
	}
	v, err := l.TaskState("sink#0", 5)
	require.NoError(t, err, "a chained subtask answers the inspector through its chain's thread")
	assert.Equal(t, "sink#0", v.Task)
}
