package engine

import (
	"errors"
	"fmt"
	"strings"
)

// Operator chaining, as Flink's StreamingJobGraphGenerator builds chains
// (isChainable, isChainableInput, areOperatorsChainable): an operator joins
// the chain of its upstream operator when
//
//  1. it has exactly one input edge (isChainable: getInEdges().size() == 1),
//  2. chaining is on for the job (pipeline.operator-chaining, on unless
//     JobSpec.Chaining says false, as Flink's default),
//  3. both are in the same slot sharing group (StateLab has only Flink's
//     "default" group, so this rule always holds),
//  4. neither opted out: the downstream operator is not the head of a new
//     chain (startNewChain(), ChainingStrategy.HEAD: chain: start-new) and
//     neither has chaining disabled (disableChaining(),
//     ChainingStrategy.NEVER: chain: disable),
//  5. both have the same parallelism, and
//  6. the edge is forward (ForwardPartitioner).
//
// A chain is one task: its subtask i is one thread on the Live driver and one
// schedulable unit on the Stepper, records pass from one chained operator to
// the next by a method call instead of a channel (the channel object stays
// for the views, marked chained, and never holds an element), and a failure
// of any chained operator fails the whole chain's subtask. Every chained
// operator keeps its own state and acknowledges checkpoints for itself, as
// Flink's OperatorChain snapshots each operator of a chain.

// Operator chaining settings of OperatorSpec.Chain, after Flink's
// SingleOutputStreamOperator.startNewChain and disableChaining.
const (
	ChainDefault  = ""
	ChainStartNew = "start-new" // startNewChain(): ChainingStrategy.HEAD
	ChainDisable  = "disable"   // disableChaining(): ChainingStrategy.NEVER
)

// ChainingEnabled reports pipeline.operator-chaining for the job: on unless
// the spec says chaining: false, Flink's default (PipelineOptions.
// OPERATOR_CHAINING, DefaultChaining). A job that shows every operator as
// its own task with its own channels — the lessons' and the sandbox's jobs,
// so that crashing one operator crashes that operator alone — turns it off
// explicitly, as a Flink program calls env.disableOperatorChaining().
func (s *JobSpec) ChainingEnabled() bool {
	if s.Chaining == nil {
		return DefaultChaining
	}
	return *s.Chaining
}

// validateChaining checks the chaining fields of a spec.
func (s *JobSpec) validateChaining() error {
	for _, o := range s.Operators {
		switch o.Chain {
		case ChainDefault, ChainStartNew, ChainDisable:
		default:
			return specErr("operator %q: chain %q is not known (want %q, Flink's startNewChain(), or %q, Flink's disableChaining(); leave it out to chain where Flink would)",
				o.ID, o.Chain, ChainStartNew, ChainDisable)
		}
	}
	return nil
}

// ChainRule names a rule of isChainable that kept an edge out of a chain.
type ChainRule string

// The rules an edge may break, in the order they are checked.
const (
	ChainRuleInputs      ChainRule = "single-input"      // the downstream operator has more than one input
	ChainRuleDisabled    ChainRule = "chaining-off"      // pipeline.operator-chaining is false
	ChainRuleStrategy    ChainRule = "chaining-strategy" // startNewChain / disableChaining
	ChainRuleParallelism ChainRule = "parallelism"       // different parallelism
	ChainRulePartitioner ChainRule = "partitioner"       // not a forward edge
)

// errNotChainable wraps the reasons chainable gives.
var errNotChainable = errors.New("not chainable")

// chainable reports whether edge ei joins its two operators in one chain
// for the operators' parallelism par (nil: the spec's). When it does not,
// the error says which rule failed and why.
func (s *JobSpec) chainable(ei int, par map[string]int) (bool, ChainRule, error) {
	e := s.Edges[ei]
	up, _ := s.Operator(e.From)
	down, _ := s.Operator(e.To)
	n := 0
	for _, x := range s.Edges {
		if x.To == e.To {
			n++
		}
	}
	p := func(o *OperatorSpec) int {
		if v, ok := par[o.ID]; ok {
			return v
		}
		return o.Parallelism
	}
	switch {
	case n != 1:
		return false, ChainRuleInputs, fmt.Errorf("%w: %s has %d inputs; Flink chains only an operator with a single input edge", errNotChainable, e.To, n)
	case !s.ChainingEnabled():
		return false, ChainRuleDisabled, fmt.Errorf("%w: pipeline.operator-chaining is off for the job (chaining: false)", errNotChainable)
	case down.Chain == ChainStartNew:
		return false, ChainRuleStrategy, fmt.Errorf("%w: %s starts a new chain (startNewChain())", errNotChainable, e.To)
	case down.Chain == ChainDisable:
		return false, ChainRuleStrategy, fmt.Errorf("%w: %s has chaining disabled (disableChaining())", errNotChainable, e.To)
	case up.Chain == ChainDisable:
		return false, ChainRuleStrategy, fmt.Errorf("%w: %s has chaining disabled (disableChaining())", errNotChainable, e.From)
	case p(up) != p(down):
		return false, ChainRuleParallelism, fmt.Errorf("%w: %s has parallelism %d and %s %d", errNotChainable, e.From, p(up), e.To, p(down))
	case e.Partitioner != Forward:
		return false, ChainRulePartitioner, fmt.Errorf("%w: %s -> %s is %s, not forward", errNotChainable, e.From, e.To, e.Partitioner)
	}
	return true, "", nil
}

// vertexName is an operator's name as Flink's Web UI shows it: sources
// "Source: id", sinks "Sink: id", others their id.
func vertexName(o *OperatorSpec) string {
	switch o.Kind {
	case KindSource:
		return "Source: " + o.ID
	case KindSink:
		return "Sink: " + o.ID
	}
	return o.ID
}

// ChainView is one chain of the job graph: a task as Flink's Web UI shows it.
type ChainView struct {
	// Name is Flink's chained name ("Source: words -> tokenizer"; a chain
	// that branches: "a -> (b, c)", StreamingJobGraphGenerator.createChainedName).
	Name string `json:"name"`
	// Operators are the chained operators' ids, head first.
	Operators []string `json:"operators"`
}

// Chains returns the job's chains for the operators' parallelism par (nil:
// the spec's), in the order of the heads in the spec. An operator that
// chains with no other is a chain of one.
func (s *JobSpec) Chains(par map[string]int) []ChainView {
	next := map[string][]string{}
	chainedIn := map[string]bool{}
	for ei, e := range s.Edges {
		if ok, _, _ := s.chainable(ei, par); ok {
			next[e.From] = append(next[e.From], e.To)
			chainedIn[e.To] = true
		}
	}
	var name func(id string) string
	var collect func(id string, out []string) []string
	name = func(id string) string {
		o, _ := s.Operator(id)
		n := vertexName(o)
		switch d := next[id]; len(d) {
		case 0:
			return n
		case 1:
			return n + " -> " + name(d[0])
		default:
			parts := make([]string, len(d))
			for i, x := range d {
				parts[i] = name(x)
			}
			return n + " -> (" + strings.Join(parts, ", ") + ")"
		}
	}
	collect = func(id string, out []string) []string {
		out = append(out, id)
		for _, x := range next[id] {
			out = collect(x, out)
		}
		return out
	}
	var out []ChainView
	for _, o := range s.Operators {
		if !chainedIn[o.ID] {
			out = append(out, ChainView{Name: name(o.ID), Operators: collect(o.ID, nil)})
		}
	}
	return out
}

// markChains marks the channels of chained edges in a new execution.
func markChains(c *core, ex *execution, par map[string]int) {
	if !c.spec.ChainingEnabled() {
		return
	}
	for ei := range c.spec.Edges {
		ok, _, _ := c.spec.chainable(ei, par)
		if !ok {
			continue
		}
		for _, ch := range ex.channels {
			if ch.edge == ei {
				ch.chained = true
			}
		}
	}
}

// --- a chain at run time -----------------------------------------------------

// chainUp returns the subtask t is chained after; nil when t heads its
// chain (or is not chained).
func (t *subtask) chainUp() *subtask {
	if len(t.inputs) == 1 && t.inputs[0].chained {
		return t.inputs[0].from
	}
	return nil
}

// chainHead returns the head of t's chain (t when it is not chained).
func (t *subtask) chainHead() *subtask {
	for u := t.chainUp(); u != nil; u = t.chainUp() {
		t = u
	}
	return t
}

// chainTasks appends t and every subtask chained after it, depth first.
func (t *subtask) chainTasks(buf []*subtask) []*subtask {
	buf = append(buf, t)
	for _, oe := range t.outs {
		for _, ch := range oe.chans {
			if ch.chained {
				buf = ch.to.chainTasks(buf)
			}
		}
	}
	return buf
}

// chainRunning reports whether t and every subtask chained after it run:
// a chain takes input only when all of it has restored its state.
func (t *subtask) chainRunning() bool {
	if t.getStatus() != TaskRunning {
		return false
	}
	for _, oe := range t.outs {
		for _, ch := range oe.chans {
			if ch.chained && !ch.to.chainRunning() {
				return false
			}
		}
	}
	return true
}

// peekChainCtl returns the oldest control message for t or a subtask chained
// after it, and which subtask it is for: a chain is one schedulable unit
// that takes its messages in the order they were sent.
func (t *subtask) peekChainCtl() (*subtask, control, bool) {
	best := t
	m, ok := t.peekCtl()
	for _, oe := range t.outs {
		for _, ch := range oe.chans {
			if !ch.chained {
				continue
			}
			if bt, bm, bok := ch.to.peekChainCtl(); bok && (!ok || bm.seq < m.seq) {
				best, m, ok = bt, bm, true
			}
		}
	}
	return best, m, ok
}

// popChainCtl removes and returns the message peekChainCtl names.
func (t *subtask) popChainCtl() (*subtask, control, bool) {
	ct, _, ok := t.peekChainCtl()
	if !ok {
		return t, control{}, false
	}
	m, ok := ct.popCtl()
	return ct, m, ok
}

// chainedError is the failure of an operator inside a chain, reported by
// the chain's head: the whole chain's subtask fails.
type chainedError struct {
	task *subtask
	err  error
}

func (e *chainedError) Error() string { return fmt.Sprintf("%s (chained): %v", e.task.name, e.err) }
func (e *chainedError) Unwrap() error { return e.err }

// runChain hands every element t left for a chained channel to the subtask
// chained after it, at once and in order, and gathers that subtask's own
// outputs (elements for real channels, messages to the JobManager,
// acknowledgements, events) into t's, where the driver moves them on. It
// runs before the driver moves t's outputs; err is the handler's error.
func (t *subtask) runChain(err error) error {
	chained := false
	for _, it := range t.outbox {
		if it.ch.chained {
			chained = true
			break
		}
	}
	if !chained {
		return err
	}
	items := t.outbox
	t.outbox = make([]outItem, 0, len(items))
	for i, it := range items {
		if !it.ch.chained {
			t.outbox = append(t.outbox, it)
			continue
		}
		d := it.ch.to
		if d.getStatus() != TaskRunning || d.fn == nil {
			// Not yet restored: it takes the element when it opens
			// (chainOpened), before anything else reaches it.
			d.early = append(d.early, it.e)
			continue
		}
		d.now = t.now
		derr := d.handleElement(it.ch.toInput, it.e)
		derr = d.runChain(derr)
		t.adoptOutputs(d)
		if derr != nil {
			for _, rest := range items[i+1:] {
				if rest.ch.chained {
					rest.e.batch.release()
				} else {
					t.outbox = append(t.outbox, rest)
				}
			}
			var ce *chainedError
			if !errors.As(derr, &ce) {
				derr = &chainedError{task: d, err: derr}
			}
			if err == nil {
				err = derr
			}
			return err
		}
	}
	return err
}

// adoptOutputs moves d's outputs into t's.
func (t *subtask) adoptOutputs(d *subtask) {
	t.outbox = append(t.outbox, d.outbox...)
	clear(d.outbox)
	d.outbox = d.outbox[:0]
	t.toJM = append(t.toJM, d.toJM...)
	d.toJM = d.toJM[:0]
	t.acks = append(t.acks, d.acks...)
	d.acks = d.acks[:0]
	t.events = append(t.events, d.events...)
	clear(d.events)
	d.events = d.events[:0]
	t.cost += d.cost
	d.cost = 0
}

// chainOpened runs when t has restored its state and runs: it takes the
// elements its chain predecessor handed it while it was still opening.
func (t *subtask) chainOpened() error {
	if len(t.early) == 0 {
		return nil
	}
	early := t.early
	t.early = nil
	in := 0
	for _, e := range early {
		if err := t.handleElement(in, e); err != nil {
			return err
		}
	}
	return nil
}

// failChain marks the other subtasks of failed's chain FAILED with it: a
// chain is one task, so one failure unit. On Live it runs in the chain's
// goroutine (a handler's error), so it reads only the chain's own subtasks
// and channels, nothing of the JobManager's.
func (c *core) failChain(failed *subtask, reason string) {
	head := failed.chainHead()
	var buf [8]*subtask
	members := head.chainTasks(buf[:0])
	if len(members) < 2 {
		return
	}
	for _, t := range members {
		if t == failed || !live(t.getStatus()) {
			continue
		}
		t.setFailure(reason)
		t.setStatus(TaskFailed)
	}
	c.publish(Event{Kind: EvTaskFailed, Task: failed.name, Operator: failed.op.spec.ID,
		Message: fmt.Sprintf("the chain %s (%d/%d) fails as one task with %s: %s", head.chainName(), head.index+1, head.op.parallelism, failed.name, reason)})
}

// chainName is Flink's name of the chain t heads, from its chained
// channels (createChainedName).
func (t *subtask) chainName() string {
	var next []string
	for _, oe := range t.outs {
		for _, ch := range oe.chans {
			if ch.chained {
				next = append(next, ch.to.chainName())
			}
		}
	}
	n := vertexName(t.op.spec)
	switch len(next) {
	case 0:
		return n
	case 1:
		return n + " -> " + next[0]
	}
	return n + " -> (" + strings.Join(next, ", ") + ")"
}

// shareChainWake gives every chained subtask its head's wake channel: the
// head's goroutine runs the whole chain (Live).
func shareChainWake(ex *execution) {
	for _, t := range ex.tasks {
		if h := t.chainHead(); h != t {
			t.wakeC = h.wakeC
		}
	}
}

// chainViews fills in the chains of a snapshot.
func (c *core) chainViews(s *Snapshot) {
	if c.ex == nil {
		return
	}
	chains := c.spec.Chains(c.par)
	s.Job.Chains = chains
	of := map[string]string{}
	for _, ch := range chains {
		for _, id := range ch.Operators {
			of[id] = ch.Name
		}
	}
	for i := range s.Job.Operators {
		s.Job.Operators[i].Chain = of[s.Job.Operators[i].ID]
	}
	chained := map[string]bool{}
	for _, ch := range c.ex.channels {
		if ch.chained {
			chained[ch.name] = true
		}
	}
	for i := range s.Channels {
		s.Channels[i].Chained = chained[s.Channels[i].Name]
	}
}
