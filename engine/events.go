package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/statelab/statelab/rescale"
)

// EventKind says what an Event reports. The web client switches on it.
type EventKind string

// Event kinds. Fields set per kind are listed beside each.
const (
	// Data plane (Stepper always; Live only as EvFlow summaries).
	EvRecordsSent      EventKind = "records-sent"      // Channel, From, To, Edge, Records
	EvRecordsReceived  EventKind = "records-received"  // Channel, Task, Records
	EvSourceRead       EventKind = "source-read"       // Task, Partition, Offset (first), Records
	EvWatermark        EventKind = "watermark"         // Task, Watermark
	EvFlow             EventKind = "flow"              // Flows: records per channel since the last flow event (Live)
	EvBarrierSent      EventKind = "barrier-sent"      // Channel, From, To, Checkpoint
	EvBarrierReceived  EventKind = "barrier-received"  // Channel, Task, Checkpoint
	EvChannelBlocked   EventKind = "channel-blocked"   // Channel, Task, Checkpoint
	EvChannelUnblocked EventKind = "channel-unblocked" // Channel, Task, Checkpoint
	EvStateUpdated     EventKind = "state-updated"     // Task, Updates (keyed state writes of one batch)
	EvWindowFired      EventKind = "window-fired"      // Task, Key, Window, Value
	EvTimerFired       EventKind = "timer-fired"       // Task, Key, Value, Watermark: a KeyedProcessFunction timer

	// Sinks.
	EvSinkWrite       EventKind = "sink-write"       // Task, Records, Transaction ("" for at-least-once)
	EvTxnPreCommitted EventKind = "txn-precommitted" // Task, Transaction, Checkpoint, Records
	EvTxnCommitted    EventKind = "txn-committed"    // Task, Transaction, Records
	EvTxnAborted      EventKind = "txn-aborted"      // Transaction, Records

	// Status.
	EvJobStatus         EventKind = "job-status"        // Status, Previous, Message
	EvTaskStatus        EventKind = "task-status"       // Task, Status, Previous, TaskManager
	EvTaskManager       EventKind = "taskmanager"       // TaskManager, Status ("ALIVE", "LOST"), Message
	EvTaskFailed        EventKind = "task-failed"       // Task, TaskManager, Message
	EvWaitingResources  EventKind = "waiting-resources" // Message (slots needed vs free)
	EvRestore           EventKind = "restore"           // Task, Checkpoint, Restore
	EvRestoreFailed     EventKind = "restore-failed"    // Checkpoint (0: the latest), Message naming the broken file
	EvRestoreRequested  EventKind = "restore-requested" // Checkpoint, Records (read again), Value (sink records written again), Message
	EvCheckpointTrigger EventKind = "checkpoint-triggered"
	EvCheckpointAck     EventKind = "checkpoint-acknowledged" // Task, Checkpoint, Ack
	EvCheckpointDone    EventKind = "checkpoint-completed"    // Checkpoint, Stats
	EvCheckpointAbort   EventKind = "checkpoint-aborted"      // Checkpoint, Message, Stats
	EvCheckpointDecline EventKind = "checkpoint-declined"     // Task, Checkpoint, Message
	EvCheckpointSubsume EventKind = "checkpoint-subsumed"     // Checkpoint (deleted from storage)
	// A checkpoint asked for by hand waits: Checkpoint is the oldest pending
	// one, Value max-concurrent-checkpoints, Records how many requests wait.
	EvCheckpointQueued EventKind = "checkpoint-queued"
	// A periodic checkpoint request waits (max-concurrent-checkpoints are
	// pending): Checkpoint is the oldest pending one, Value
	// max-concurrent-checkpoints, Records how many periodic requests wait.
	EvPeriodicCheckpointQueued EventKind = "periodic-checkpoint-queued"
	// Queued checkpoint requests were dropped (the job left RUNNING, or not
	// every subtask runs when their turn came): Records how many, Message why.
	EvCheckpointRequestFailed EventKind = "checkpoint-request-failed"
	EvNotifyComplete          EventKind = "checkpoint-notified" // Task, Checkpoint
	EvRescaleStarted          EventKind = "rescale-started"     // Operator, Parallelism (new), Value (old)
	EvRescalePlan             EventKind = "rescale-plan"        // Operator, Rescale
	EvRescaleDone             EventKind = "rescale-completed"   // Operator, Parallelism
	EvRescaleFailed           EventKind = "rescale-failed"      // Operator, Message
	EvInjected                EventKind = "record-injected"     // Operator, Partition, Offset, Text
	EvCommand                 EventKind = "command"             // Command (as applied), Message
	EvDriver                  EventKind = "driver"              // Status ("step" or "live"): the job changed driver
)

// Event is one thing that happened in the engine, as plain data. Only the
// fields its Kind lists are set; Message is always a sentence in English for
// the event log.
type Event struct {
	Seq  int64         `json:"seq"`
	At   time.Duration `json:"at"`   // virtual time (Stepper) or elapsed time (Live), in nanoseconds
	Step int64         `json:"step"` // Stepper step that produced it (0 for Live)
	Kind EventKind     `json:"kind"`

	Task        string `json:"task,omitempty"` // "count#1"
	Operator    string `json:"operator,omitempty"`
	TaskManager string `json:"taskManager,omitempty"`
	Channel     string `json:"channel,omitempty"` // "tokenizer#0->count#1"
	From        string `json:"from,omitempty"`
	To          string `json:"to,omitempty"`
	Edge        *int   `json:"edge,omitempty"` // index into Snapshot.Job.Edges (channel events only)
	Records     int    `json:"records,omitempty"`
	Checkpoint  int64  `json:"checkpoint,omitempty"`
	Savepoint   bool   `json:"savepoint,omitempty"`
	Status      string `json:"status,omitempty"`
	Previous    string `json:"previous,omitempty"`
	Partition   int    `json:"partition,omitempty"`
	Offset      int64  `json:"offset,omitempty"`
	Watermark   int64  `json:"watermark,omitempty"`
	Key         string `json:"key,omitempty"`
	Window      string `json:"window,omitempty"`
	Value       int64  `json:"value,omitempty"`
	Text        string `json:"text,omitempty"`
	Parallelism int    `json:"parallelism,omitempty"`
	Transaction string `json:"transaction,omitempty"`
	Message     string `json:"message"`

	Updates []StateUpdate          `json:"updates,omitempty"`
	Flows   []ChannelFlow          `json:"flows,omitempty"`
	Ack     *AckStats              `json:"ack,omitempty"`
	Stats   *CheckpointStats       `json:"stats,omitempty"`
	Restore *RestoreInfo           `json:"restore,omitempty"`
	Rescale *RescaleInfo           `json:"rescale,omitempty"`
	Command *Command               `json:"command,omitempty"`
	Range   *rescale.KeyGroupRange `json:"keyGroups,omitempty"`
}

// StateUpdate is one keyed state write.
type StateUpdate struct {
	Key      string `json:"key"`
	KeyGroup int    `json:"keyGroup"`
	State    string `json:"state"`
	Value    int64  `json:"value"`
	Window   string `json:"window,omitempty"`
}

// ChannelFlow is how many records crossed a channel since the last flow event.
type ChannelFlow struct {
	Channel string `json:"channel"`
	Records int64  `json:"records"`
}

// RestoreInfo is what one subtask restored.
type RestoreInfo struct {
	Checkpoint int64 `json:"checkpoint"` // 0: fresh start, nothing restored
	// KeyGroups is the subtask's new key-group range (keyed operators).
	KeyGroups *rescale.KeyGroupRange `json:"keyGroups,omitempty"`
	// Reads are the key-group ranges read from old subtasks' handles.
	Reads []rescale.Read `json:"reads,omitempty"`
	// Offsets are the source partitions and offsets the subtask will read from.
	Offsets []PartitionOffset `json:"offsets,omitempty"`
	// OperatorState lists the operator state elements restored, by state
	// name: the subtask's share as Flink's repartitioner hands it over,
	// before the operator looks at it (with union state, every element).
	OperatorState map[string][]string `json:"operatorState,omitempty"`
	// KeptOperatorState is the operator state after the operator opened:
	// what it kept of the restored elements (a union-offsets source keeps
	// its own partitions; a two-phase sink commits and clears its pending
	// transactions).
	KeptOperatorState map[string][]string `json:"keptOperatorState,omitempty"`
	// Transactions are the pending sink transactions committed on restore.
	Transactions []string `json:"transactions,omitempty"`
}

// PartitionOffset is one source partition and the next offset to read.
type PartitionOffset struct {
	Partition int   `json:"partition"`
	Offset    int64 `json:"offset"`
}

// RescaleInfo describes a rescale: the key-group plan of a keyed operator and
// the operator-state moves.
type RescaleInfo struct {
	Operator string        `json:"operator"`
	From     int           `json:"from"`
	To       int           `json:"to"`
	Plan     *rescale.Plan `json:"plan,omitempty"`
	// OperatorState is, per new subtask, the restored elements by state name
	// (e.g. source offsets [[p0 p1 p2] [p3 p4]]).
	OperatorState []map[string][]string `json:"operatorState,omitempty"`
	Savepoint     int64                 `json:"savepoint"`
}

// Subscription receives events. Events arrive in order; when the subscriber
// falls more than its buffer behind, further events are dropped (never
// waited for) and Dropped counts them, so the subscriber can resynchronise
// with Snapshot.
//
// The buffer is a bound, not an allocation: C holds at most directEvents,
// and only a subscriber that falls behind has the rest queued, in memory
// that grows with its backlog and is given back once it has caught up. An
// Event is some 420 bytes, so a channel of the web server's 8,192 would
// hold 3.3 MB per viewed session whether or not the events come; a class
// of 64 forks watched at the teaching pace (a few hundred events a second)
// would hold 210 MB of it, empty.
type Subscription struct {
	C       <-chan Event
	c       chan Event
	dropped atomic.Int64
	bus     *bus
	once    sync.Once
	limit   int // the buffer: most events waiting, in C and queued

	mu sync.Mutex
	// queue holds, oldest first, events that found C full; forwarding is
	// set while a goroutine moves them into C (then every new event
	// queues behind them, so the order holds).
	queue      []Event
	forwarding bool
	closed     bool
	quit       chan struct{}
}

// directEvents is the capacity of a Subscription's channel.
const directEvents = 128

// Pending is how many events wait for the subscriber: in C, and queued
// behind it on their way in. It never misses one; while an event moves
// from the queue into C it may count it twice for a moment, so a caller
// waiting for zero polls rather than blocks on C.
func (s *Subscription) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.c) + len(s.queue)
}

// Dropped is how many events this subscriber missed.
func (s *Subscription) Dropped() int64 { return s.dropped.Load() }

// Close stops the subscription and closes C. Events already in C can still
// be received; queued ones are dropped.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.bus.mu.Lock()
		delete(s.bus.subs, s)
		s.bus.mu.Unlock()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closed = true
		close(s.quit)
		if !s.forwarding {
			close(s.c) // else the forwarder closes it as it stops
		}
	})
}

// offer hands e to the subscriber: straight into C when it has room and
// nothing is queued, else to the queue, else (over the buffer) nowhere.
func (s *Subscription) offer(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if !s.forwarding {
		select {
		case s.c <- e:
			return
		default:
		}
	}
	if len(s.c)+len(s.queue) >= s.limit {
		s.dropped.Add(1)
		return
	}
	s.queue = append(s.queue, e)
	if !s.forwarding {
		s.forwarding = true
		go s.forward()
	}
}

// forward moves the queue into C, waiting for the subscriber, until the
// queue is empty (its memory is let go) or the subscription is closed.
func (s *Subscription) forward() {
	for {
		s.mu.Lock()
		if s.closed || len(s.queue) == 0 {
			s.queue, s.forwarding = nil, false
			if s.closed {
				close(s.c)
			}
			s.mu.Unlock()
			return
		}
		e := s.queue[0]
		s.mu.Unlock()
		select {
		case s.c <- e:
		case <-s.quit:
			continue // closed: the loop's first check ends it
		}
		s.mu.Lock()
		s.queue[0] = Event{}
		s.queue = s.queue[1:]
		s.mu.Unlock()
	}
}

// bus fans events out to subscribers without ever blocking.
type bus struct {
	mu     sync.Mutex
	subs   map[*Subscription]struct{}
	active atomic.Bool
	seq    atomic.Int64
	// record, when set, receives every event synchronously (tests, replay).
	record func(Event)
}

func newBus() *bus { return &bus{subs: map[*Subscription]struct{}{}} }

func (b *bus) subscribe(buffer int) *Subscription {
	if buffer < 1 {
		buffer = 1
	}
	c := make(chan Event, min(buffer, directEvents))
	s := &Subscription{C: c, c: c, bus: b, limit: buffer, quit: make(chan struct{})}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.active.Store(true)
	b.mu.Unlock()
	return s
}

// wanted reports whether anyone listens, so hot paths can skip building events.
func (b *bus) wanted() bool { return b.active.Load() || b.record != nil }

func (b *bus) publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e.Seq = b.seq.Add(1)
	if b.record != nil {
		b.record(e)
	}
	for s := range b.subs {
		s.offer(e)
	}
	b.active.Store(len(b.subs) > 0)
}

func edgeRef(i int) *int { return &i }
