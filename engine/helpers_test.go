package engine

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// describe names a candidate for failure messages.
func (cd candidate) String() string {
	switch cd.kind {
	case candDeliver:
		return "deliver " + cd.ch.name
	case candPoll:
		return "poll " + cd.t.name
	case candControl:
		return "control " + cd.t.name
	case candJM:
		return "jobmanager"
	}
	return "timer"
}

// stepWhere performs the first possible event that match accepts.
func (s *Stepper) stepWhere(t *testing.T, desc string, match func(cd candidate) bool) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	cands := s.candidates(nil)
	for _, cd := range cands {
		if match(cd) {
			s.step++
			s.execute(cd)
			return
		}
	}
	var names []string
	for _, cd := range cands {
		names = append(names, cd.String())
	}
	t.Fatalf("cannot %s; possible: %s", desc, strings.Join(names, ", "))
}

func (s *Stepper) canStep(match func(cd candidate) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cd := range s.candidates(nil) {
		if match(cd) {
			return true
		}
	}
	return false
}

func deliver(t *testing.T, s *Stepper, channel string) {
	t.Helper()
	s.stepWhere(t, "deliver on "+channel, func(cd candidate) bool { return cd.kind == candDeliver && cd.ch.name == channel })
}

func poll(t *testing.T, s *Stepper, task string) {
	t.Helper()
	s.stepWhere(t, "poll "+task, func(cd candidate) bool { return cd.kind == candPoll && cd.t.name == task })
}

func sendControl(t *testing.T, s *Stepper, task string) {
	t.Helper()
	s.stepWhere(t, "deliver control to "+task, func(cd candidate) bool { return cd.kind == candControl && cd.t.name == task })
}

// settle delivers every control and JobManager message (no data, no timers)
// until none is left.
func settle(t *testing.T, s *Stepper) {
	t.Helper()
	rpc := func(cd candidate) bool { return cd.kind == candControl || cd.kind == candJM }
	for i := 0; s.canStep(rpc); i++ {
		require.Less(t, i, 10000)
		s.stepWhere(t, "deliver a message", rpc)
	}
}

// advanceTimers jumps the virtual clock to the next timer and fires it.
func advanceTimer(t *testing.T, s *Stepper) {
	t.Helper()
	s.mu.Lock()
	require.NotEmpty(t, s.timers, "no timer pending")
	if s.timers[0].at > s.clock {
		s.clock = s.timers[0].at
	}
	s.mu.Unlock()
	s.stepWhere(t, "fire a timer", func(cd candidate) bool { return cd.kind == candTimer })
}

// eventLog records events for assertions.
type eventLog struct {
	mu  sync.Mutex
	evs []Event
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	l.evs = append(l.evs, e)
	l.mu.Unlock()
}

func (l *eventLog) kinds(k EventKind) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, e := range l.evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func (l *eventLog) statuses(kind EventKind, task string) []string {
	var out []string
	for _, e := range l.kinds(kind) {
		if e.Task == task {
			out = append(out, e.Status)
		}
	}
	return out
}

func newTestStepper(t *testing.T, spec *JobSpec) (*Stepper, *eventLog) {
	t.Helper()
	skipWithoutBackend(t, spec.Backend)
	log := &eventLog{}
	s, err := NewStepper(spec, Options{Dir: t.TempDir(), RecordEvents: log.add})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, log
}

// wordCount is a small word count job.
func wordCount(records, sourceP, countP, maxP int) *JobSpec {
	return &JobSpec{
		Name: "wordcount", Seed: 7,
		Operators: []OperatorSpec{
			{ID: "source", Kind: KindSource, Parallelism: sourceP, Options: map[string]any{"partitions": 4, "records": records, "keys": 30}},
			{ID: "tokenizer", Kind: KindTokenizer, Parallelism: sourceP},
			{ID: "count", Kind: KindCount, Parallelism: countP, MaxParallelism: maxP},
			{ID: "sink", Kind: KindSink, Parallelism: 1},
		},
		Edges: []EdgeSpec{
			{From: "source", To: "tokenizer", Partitioner: Forward},
			{From: "tokenizer", To: "count", Partitioner: Hash},
			{From: "count", To: "sink", Partitioner: Rebalance},
		},
		Cluster: ClusterSpec{TaskManagers: 2, SlotsPerTaskManager: 3},
		Runtime: RuntimeSpec{FIFO: true},
		// Without periodic checkpointing Flink's default restart strategy
		// is none; these tests crash the job on purpose and configure a
		// restart strategy, as a Flink user would.
		Restart: RestartSpec{Strategy: RestartFixedDelay, Attempts: 100, Delay: ms(1)},
	}
}

func subtaskView(t *testing.T, s Snapshot, name string) SubtaskView {
	t.Helper()
	for _, o := range s.Job.Operators {
		for _, st := range o.Subtasks {
			if st.Name == name {
				return st
			}
		}
	}
	t.Fatalf("no subtask %s", name)
	return SubtaskView{}
}

func channelView(t *testing.T, s Snapshot, name string) ChannelView {
	t.Helper()
	for _, c := range s.Channels {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no channel %s", name)
	return ChannelView{}
}

func ms(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }

var _ = fmt.Sprint

// deliverBarrier delivers the elements of a channel up to and including its
// first barrier.
func deliverBarrier(t *testing.T, s *Stepper, channel string) {
	t.Helper()
	for i := 0; i < 100; i++ {
		s.mu.Lock()
		e, _, ok := s.c.ex.byName[strings.Split(channel, "->")[1]].inputs[0].peek()
		for _, ch := range s.c.ex.channels {
			if ch.name == channel {
				e, _, ok = ch.peek()
			}
		}
		s.mu.Unlock()
		require.True(t, ok, "no barrier in %s", channel)
		deliver(t, s, channel)
		if e.kind == elemBarrier {
			return
		}
	}
	t.Fatalf("no barrier in %s", channel)
}

// drain delivers everything queued on a channel.
func drain(t *testing.T, s *Stepper, channel string) {
	t.Helper()
	for s.canStep(func(cd candidate) bool { return cd.kind == candDeliver && cd.ch.name == channel }) {
		deliver(t, s, channel)
	}
}

// runToEnd runs to the end of input, triggering checkpoints by hand when
// the job has no periodic ones, until the sink output is final.
func runToEnd(t *testing.T, s *Stepper) {
	t.Helper()
	for i := 0; i < 50; i++ {
		if _, err := s.RunUntilDrained(200000); err == nil {
			return
		}
		_ = s.Do(Command{Name: CmdTriggerCheckpoint})
	}
	t.Fatal("the job never drained")
}

func dirNames(es []os.DirEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
