package engine

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// JobStatus is Flink's JobStatus.
type JobStatus string

// The job statuses StateLab uses.
const (
	JobCreated    JobStatus = "CREATED"
	JobRunning    JobStatus = "RUNNING"
	JobFailing    JobStatus = "FAILING"
	JobRestarting JobStatus = "RESTARTING"
	JobFailed     JobStatus = "FAILED"
	JobCanceled   JobStatus = "CANCELED"
	JobFinished   JobStatus = "FINISHED"
)

// TaskStatus is Flink's ExecutionState.
type TaskStatus string

// The task statuses.
const (
	TaskCreated      TaskStatus = "CREATED"
	TaskScheduled    TaskStatus = "SCHEDULED"
	TaskDeploying    TaskStatus = "DEPLOYING"
	TaskInitializing TaskStatus = "INITIALIZING"
	TaskRunning      TaskStatus = "RUNNING"
	TaskFinished     TaskStatus = "FINISHED"
	TaskCanceling    TaskStatus = "CANCELING"
	TaskCanceled     TaskStatus = "CANCELED"
	TaskFailed       TaskStatus = "FAILED"
)

// TaskManager statuses as StateLab shows them.
const (
	TMAlive = "ALIVE"
	TMLost  = "LOST"
)

// taskManager is a worker node with slots and a local disk.
type taskManager struct {
	id       string // tm-1, tm-2, ...
	slots    int
	alive    bool
	localDir string // where pebble working directories live; wiped on a crash
	// incarnation counts restarts, so directories of a lost incarnation are never reused.
	incarnation int
	// lostDirs are local disks of crashed incarnations still to wipe: a
	// dead TaskManager's subtasks keep their goroutines until the
	// JobManager notices (heartbeat timeout) and cancels them.
	lostDirs []string
	// notice is how the JobManager noticed the last crash (heartbeat.go):
	// "timeout" or "unreachable".
	notice string
}

// execution is one deployment of the job graph (an attempt): its subtasks
// and channels. A failover or rescale discards it and builds a new one.
type execution struct {
	attempt  int
	ops      []*execOperator
	tasks    []*subtask // all subtasks, in operator topological order then index
	channels []*channel
	byName   map[string]*subtask
	// started is set once the subtasks were placed and handed to the driver.
	started bool
	// restore is the checkpoint this execution restores (nil: fresh
	// start); initialized counts subtasks that opened their state;
	// restoreCounted is set once all have. Guarded by core.restoreMu.
	restore        *RestoreStats
	initialized    int
	restoreCounted bool
	// recovery counts the bytes the restore read from task-local copies
	// and from checkpoint storage (localrecovery.go). Set by restoreSpecs
	// under core.restoreMu.
	recovery *state.RecoveryStats
}

// execOperator is one operator of an execution.
type execOperator struct {
	idx         int // index in spec.Operators
	spec        *OperatorSpec
	opts        operatorOptions
	parallelism int
	maxPar      int
	inEdges     []int // indices into spec.Edges
	outEdges    []int
	tasks       []*subtask
}

// channel is the FIFO between one upstream and one downstream subtask, Flink's
// ResultSubpartition + InputChannel pair. It is bounded: a sender stops when
// it is full (backpressure).
type channel struct {
	idx     int
	name    string // "tokenizer#0->count#1"
	edge    int    // index into spec.Edges
	from    *subtask
	to      *subtask
	toInput int // index in to.inputs
	cap     int

	mu sync.Mutex
	q  []element // FIFO; head at q[head]
	qh int
	// n is len(q) - qh, stored under mu whenever the queue changes, so
	// that len and full read it without the lock: a subtask asks whether
	// each of its outputs has room on every turn of its loop, and the
	// lock it took for that was the one its receiver pops under.
	n atomic.Int64

	// blocked is set by the receiving task while it aligns a checkpoint.
	blocked      atomic.Bool
	blockedFor   atomic.Int64
	sentRecs     atomic.Int64
	deliveredRec atomic.Int64
	queuedRecs   atomic.Int64
	barriers     atomic.Int64 // barriers queued
	lastFlow     int64        // records reported in the last flow event (Live)
	// seqs[i] is when q[i] became deliverable (Stepper FIFO order).
	seqs []int64
	// chained is set when the edge is inside an operator chain (chain.go):
	// records pass by a method call and never queue here.
	chained bool
}

func (c *channel) len() int { return int(c.n.Load()) }

// full reports whether the channel has no room for another element.
func (c *channel) full() bool { return c.len() >= c.cap }

func (c *channel) push(e element, seq int64) {
	// Count before the element is visible: the receiver may take and
	// release the batch as soon as the lock is dropped.
	if n := e.records(); n > 0 {
		c.sentRecs.Add(int64(n))
		c.queuedRecs.Add(int64(n))
	} else if e.kind == elemBarrier {
		c.barriers.Add(1)
	}
	c.mu.Lock()
	c.q = append(c.q, e)
	c.seqs = append(c.seqs, seq)
	c.n.Store(int64(len(c.q) - c.qh))
	c.mu.Unlock()
}

// peek returns the head element without removing it.
func (c *channel) peek() (element, int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.qh >= len(c.q) {
		return element{}, 0, false
	}
	return c.q[c.qh], c.seqs[c.qh], true
}

func (c *channel) pop() (element, bool) {
	c.mu.Lock()
	if c.qh >= len(c.q) {
		c.mu.Unlock()
		return element{}, false
	}
	e := c.q[c.qh]
	c.q[c.qh] = element{}
	c.qh++
	if c.qh == len(c.q) {
		c.q, c.seqs, c.qh = c.q[:0], c.seqs[:0], 0
	} else if c.qh > 64 && c.qh*2 > len(c.q) {
		n := copy(c.q, c.q[c.qh:])
		copy(c.seqs, c.seqs[c.qh:])
		clear(c.q[n:])
		c.q, c.seqs, c.qh = c.q[:n], c.seqs[:n], 0
	}
	c.n.Store(int64(len(c.q) - c.qh))
	c.mu.Unlock()
	if n := e.records(); n > 0 {
		c.deliveredRec.Add(int64(n))
		c.queuedRecs.Add(-int64(n))
	} else if e.kind == elemBarrier {
		c.barriers.Add(-1)
	}
	return e, true
}

// drain empties the channel (the execution is discarded), releasing batches.
func (c *channel) drain() {
	c.mu.Lock()
	for i := c.qh; i < len(c.q); i++ {
		c.q[i].batch.release()
	}
	c.q, c.seqs, c.qh = nil, nil, 0
	c.n.Store(0)
	c.mu.Unlock()
	c.queuedRecs.Store(0)
	c.barriers.Store(0)
}

// snapshotElements lists the queued elements for the view (records counts and barrier ids).
func (c *channel) snapshotElements() []QueuedElement {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]QueuedElement, 0, len(c.q)-c.qh)
	for i := c.qh; i < len(c.q); i++ {
		e := c.q[i]
		switch e.kind {
		case elemRecords:
			out = append(out, QueuedElement{Kind: "records", Records: e.records()})
		case elemBarrier:
			out = append(out, QueuedElement{Kind: "barrier", Checkpoint: e.barrier.ID, Unaligned: e.barrier.Unaligned})
		case elemWatermark:
			out = append(out, QueuedElement{Kind: "watermark", Watermark: e.watermark})
		}
	}
	return out
}

func taskName(op string, index int) string { return fmt.Sprintf("%s#%d", op, index) }

// buildExecution creates the subtasks and channels for the given parallelism
// of every operator. Subtask i of every operator shares slot i (Flink's
// default slot sharing group), so the job needs as many slots as its largest
// parallelism.
func buildExecution(c *core, attempt int, par map[string]int) *execution {
	spec := c.spec
	ex := &execution{attempt: attempt, ops: make([]*execOperator, len(spec.Operators)), byName: map[string]*subtask{}}
	for _, i := range spec.topoOrder() {
		o := &spec.Operators[i]
		opts, _ := parseOptions(o) // validated with the spec
		eo := &execOperator{idx: i, spec: o, opts: opts, parallelism: par[o.ID], maxPar: o.MaxParallelism}
		for ei, e := range spec.Edges {
			if e.To == o.ID {
				eo.inEdges = append(eo.inEdges, ei)
			}
			if e.From == o.ID {
				eo.outEdges = append(eo.outEdges, ei)
			}
		}
		ex.ops[i] = eo
		for k := range eo.parallelism {
			t := newSubtask(c, ex, eo, k)
			eo.tasks = append(eo.tasks, t)
		}
	}
	for _, i := range spec.topoOrder() {
		ex.tasks = append(ex.tasks, ex.ops[i].tasks...)
	}
	for _, t := range ex.tasks {
		ex.byName[t.name] = t
	}
	// Channels per edge: forward connects i to i, every other partitioner
	// connects every upstream subtask to every downstream subtask.
	for ei, e := range spec.Edges {
		from := ex.ops[c.opIndex[e.From]]
		to := ex.ops[c.opIndex[e.To]]
		for _, up := range from.tasks {
			oe := &outEdge{edge: ei, part: e.Partitioner, down: to}
			for _, dn := range to.tasks {
				if e.Partitioner == Forward && dn.index != up.index {
					continue
				}
				ch := &channel{idx: len(ex.channels), name: up.name + "->" + dn.name, edge: ei,
					from: up, to: dn, cap: c.chanCap}
				ch.toInput = len(dn.inputs)
				dn.inputs = append(dn.inputs, ch)
				dn.inputEdge = append(dn.inputEdge, ei)
				oe.chans = append(oe.chans, ch)
				ex.channels = append(ex.channels, ch)
			}
			oe.rr = up.index % len(oe.chans)
			oe.pending = make([]*batch, len(oe.chans))
			up.outs = append(up.outs, oe)
		}
	}
	for _, t := range ex.tasks {
		t.initInputs()
	}
	markChains(c, ex, par)
	return ex
}

// slotsNeeded is the number of slots the execution needs with slot sharing.
func slotsNeeded(par map[string]int) int {
	n := 0
	for _, p := range par {
		n = max(n, p)
	}
	return n
}

// keyGroupRange returns the key groups subtask index of an operator owns.
func (eo *execOperator) keyGroupRange(index int) rescale.KeyGroupRange {
	return rescale.KeyGroupRangeForOperator(eo.maxPar, eo.parallelism, index)
}

func (eo *execOperator) keyed() bool { return isKeyedKind(eo.spec.Kind) }
