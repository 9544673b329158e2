package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// Unaligned checkpoints (execution.checkpointing.unaligned,
// execution.checkpointing.aligned-checkpoint-timeout), after Flink's
// SingleCheckpointBarrierHandler with its alternating states
// (AlternatingWaitingForFirstBarrierUnaligned,
// AlternatingCollectingBarriersUnaligned) and ChannelStateWriter:
//
//   - A barrier sent unaligned is a priority event: it overtakes the records
//     queued ahead of it in the channel (pushPriority). Those records were
//     sent before the sender's snapshot and not yet processed by the
//     receiver, so they become part of the checkpoint as the sender's output
//     channel state (ChannelStateWriter.addOutputData).
//   - A subtask takes its snapshot at the first barrier of a checkpoint,
//     forwards the barrier at once (unaligned too) and blocks no input. The
//     records that still arrive on an input before that input's barrier are
//     persisted as input channel state (addInputData) while they are
//     processed. The acknowledgement waits until every input delivered the
//     barrier, when the channel state is complete.
//   - With aligned-checkpoint-timeout > 0 a checkpoint starts aligned; a
//     subtask whose alignment is still going on when the timeout (measured
//     from the checkpoint's trigger, as Flink does) has passed switches to
//     unaligned: it unblocks its inputs, snapshots and forwards the barrier
//     unaligned, and persists what still arrives on the inputs that have not
//     delivered the barrier. A barrier that already arrives late starts
//     unaligned.
//   - Savepoints are always aligned (Flink 1.x); unaligned checkpoints need
//     exactly-once mode.
//   - On restore the channel state is replayed before anything else: output
//     state is sent again through the edge's partitioner (so a keyed
//     downstream gets each record on the subtask now owning its key group),
//     input state is processed again by the subtask owning it (after a
//     rescale: by key group for a keyed operator, as Flink's rescaling
//     descriptors filter records by key group, else round-robin).
//
// Channel state is filed in the checkpoint under the operator's reserved
// union operator state channelStateName (Flink keeps it in
// InputChannelStateHandle / ResultSubpartitionStateHandle beside the
// operator state).

// channelStateName is the reserved operator state holding channel state.
const channelStateName = "_channel_state"

// Event kinds of unaligned checkpoints.
const (
	// EvBarrierOvertook: Channel, From, To, Checkpoint, Records (the
	// records the barrier overtook, now channel state).
	EvBarrierOvertook EventKind = "barrier-overtook"
	// EvUnalignedCheckpoint: Task, Checkpoint, Records (in-flight records
	// persisted as input channel state), Value (channel state bytes).
	EvUnalignedCheckpoint EventKind = "unaligned-checkpoint"
)

// channelEntry is one in-flight record of a checkpoint's channel state.
type channelEntry struct {
	// Dir is "in" (persisted by the receiver) or "out" (overtaken in the
	// sender's output).
	Dir string `json:"dir"`
	// Edge is the spec edge the record travelled on; To the receiving
	// subtask's index (broadcast output).
	Edge int `json:"edge"`
	To   int `json:"to"`
	// Subtask and Parallelism are the recording subtask's index and its
	// operator's parallelism then.
	Subtask     int    `json:"subtask"`
	Parallelism int    `json:"parallelism"`
	Rec         Record `json:"rec"`
}

// unalignedCP is a subtask's unaligned checkpoint in progress.
type unalignedCP struct {
	id        int64
	waiting   []bool // input i has not delivered the barrier yet
	remaining int
	input     [][]byte
	inputRecs int
	ack       *pendingAck // held until the channel state is complete
}

// validateUnaligned checks the unaligned checkpoint settings.
func (s *JobSpec) validateUnaligned() error {
	c := s.Checkpointing
	if c.AlignedCheckpointTimeout < 0 {
		return specErr("checkpointing alignedCheckpointTimeout cannot be negative (0 starts every checkpoint unaligned)")
	}
	if c.AlignedCheckpointTimeout > 0 && !c.Unaligned {
		return specErr("checkpointing alignedCheckpointTimeout %v needs unaligned: true (execution.checkpointing.aligned-checkpoint-timeout only applies to unaligned checkpoints)", c.AlignedCheckpointTimeout.D())
	}
	// Unaligned with at-least-once is not refused: Flink turns unaligned
	// off and runs the job (StreamingJobGraphGenerator.configureCheckpointing
	// logs "Unaligned checkpoints can only be used with checkpointing mode
	// EXACTLY_ONCE" and calls enableUnalignedCheckpoints(false));
	// unalignedOn does the same, and the checkpoints view says so
	// (CheckpointsView.UnalignedIgnored).
	return nil
}

// unalignedOn reports whether the job's checkpoints may be unaligned: only
// when its barriers are handled exactly-once (barrierMode), so not with mode
// at-least-once nor with no checkpoint interval.
func (c *core) unalignedOn() bool {
	return c.spec.Checkpointing.Unaligned && c.barrierMode() == ExactlyOnce
}

// startsUnaligned reports whether a checkpoint's barrier leaves the sources
// unaligned: unaligned checkpoints without an alignment timeout (a
// savepoint never is).
func (c *core) startsUnaligned(savepoint bool) bool {
	return c.unalignedOn() && !savepoint && c.spec.Checkpointing.AlignedCheckpointTimeout == 0
}

// alignmentTimedOut reports whether checkpoint b, started aligned, has passed
// the aligned-checkpoint-timeout at time now.
func (c *core) alignmentTimedOut(b barrier, now time.Duration) bool {
	to := c.spec.Checkpointing.AlignedCheckpointTimeout.D()
	return c.unalignedOn() && !b.Savepoint && to > 0 && now-time.Duration(b.Time) >= to
}

// unalignedBarrier handles barrier b on input in when it belongs to an
// unaligned checkpoint; done is false when the aligned path handles it.
func (t *subtask) unalignedBarrier(in int, b barrier) (done bool, err error) {
	if u := t.unal; u != nil {
		if b.ID == u.id {
			if !u.waiting[in] {
				return true, fmt.Errorf("barrier %d arrived twice on %s", b.ID, t.inputs[in].name)
			}
			u.waiting[in] = false
			u.remaining--
			if u.remaining == 0 {
				t.completeUnaligned()
			}
			return true, nil
		}
		if b.ID > u.id {
			t.abortUnaligned(fmt.Sprintf("barrier %d arrived at %s before checkpoint %d had all its channel state", b.ID, t.name, u.id), true)
		}
	}
	if b.ID <= t.lastBarrier || b.Savepoint || !t.c.unalignedOn() {
		return false, nil
	}
	if !b.Unaligned && !t.c.alignmentTimedOut(b, t.now) {
		return false, nil // an aligned start; checkAlignmentTimeout may switch it
	}
	seen := make([]bool, len(t.inputs))
	seen[in] = true
	var alignment time.Duration
	if t.alignID == b.ID {
		// Aligning this checkpoint already: the timeout switches it.
		copy(seen, t.alignSeen)
		seen[in] = true
		alignment = t.now - t.alignStart
		t.unblockAll(b.ID)
		t.alignID = 0
	} else if t.alignID != 0 {
		t.abortAlignment(fmt.Sprintf("barrier %d arrived at %s before checkpoint %d was aligned", b.ID, t.name, t.alignID), true)
	}
	return true, t.startUnaligned(b, seen, alignment)
}

// checkAlignmentTimeout switches the checkpoint being aligned to unaligned
// once its aligned-checkpoint-timeout has passed (Flink's alignment timer
// firing in AlternatingCollectingBarriers).
func (t *subtask) checkAlignmentTimeout() error {
	if t.alignID == 0 || !t.c.alignmentTimedOut(t.alignBar, t.now) {
		return nil
	}
	seen := slices.Clone(t.alignSeen)
	alignment := t.now - t.alignStart
	b := t.alignBar
	t.unblockAll(b.ID)
	t.alignID = 0
	return t.startUnaligned(b, seen, alignment)
}

// startUnaligned snapshots at once for barrier b, forwards it unaligned and
// holds the acknowledgement until the inputs not in seen delivered it.
func (t *subtask) startUnaligned(b barrier, seen []bool, alignment time.Duration) error {
	t.lastBarrier = b.ID
	u := &unalignedCP{id: b.ID, waiting: make([]bool, len(t.inputs))}
	for i := range t.inputs {
		if !seen[i] {
			u.waiting[i] = true
			u.remaining++
		}
	}
	b.Unaligned = true
	n := len(t.acks)
	if err := t.checkpoint(b, alignment); err != nil {
		return err
	}
	if len(t.acks) == n {
		return nil // declined
	}
	a := t.acks[n]
	t.acks = t.acks[:n]
	if a.async != nil {
		// The keyed snapshot's asynchronous part runs now: the
		// acknowledgement is held for the channel state, possibly over
		// many steps, and a held ack must be plain data (a fork copies it).
		a = pendingAck{msg: a.finish(), delay: a.delay}
	}
	a.msg.ack.Unaligned = true
	u.ack = &a
	t.unal = u
	if u.remaining == 0 {
		t.completeUnaligned()
		return nil
	}
	t.event(Event{Kind: EvUnalignedCheckpoint, Checkpoint: b.ID,
		Message: fmt.Sprintf("%s took checkpoint %d unaligned at its first barrier and blocks nothing: its barrier goes ahead of the records queued in its outputs, and what still arrives on %d input(s) before their barrier is persisted as channel state", t.name, b.ID, u.remaining)})
	return nil
}

// persistInFlight records the records of a batch arriving on input in
// before that input's barrier while an unaligned checkpoint waits for it.
func (t *subtask) persistInFlight(in int, recs []Record) {
	u := t.unal
	if u == nil || !u.waiting[in] {
		return
	}
	edge := t.inputEdge[in]
	for _, r := range recs {
		b, _ := json.Marshal(channelEntry{Dir: "in", Edge: edge, Subtask: t.index, Parallelism: t.op.parallelism, Rec: r})
		u.input = append(u.input, b)
	}
	u.inputRecs += len(recs)
}

// completeUnaligned releases the acknowledgement of the unaligned checkpoint
// with its input channel state.
func (t *subtask) completeUnaligned() {
	u := t.unal
	t.unal = nil
	a := u.ack
	n := addChannelState(a, u.input)
	t.acks = append(t.acks, *a)
	msg := fmt.Sprintf("%s has every barrier of checkpoint %d: %d in-flight input record(s) (%s) persisted as channel state; it acknowledges", t.name, u.id, u.inputRecs, fmtBytes(n))
	if len(u.waiting) <= 1 {
		msg = fmt.Sprintf("%s took checkpoint %d unaligned at its barrier and acknowledges: with a single input it waits for no other barrier and persists no input", t.name, u.id)
	}
	t.event(Event{Kind: EvUnalignedCheckpoint, Checkpoint: u.id, Records: u.inputRecs, Value: n, Message: msg})
}

// abortUnaligned gives up the unaligned checkpoint in progress.
func (t *subtask) abortUnaligned(reason string, decline bool) {
	u := t.unal
	if u == nil {
		return
	}
	t.unal = nil
	if decline {
		t.toJM = append(t.toJM, jmMsg{kind: jmDecline, attempt: t.ex.attempt, task: t, id: u.id, reason: reason, failReason: CheckpointDeclinedSubsumed})
		t.event(Event{Kind: EvCheckpointDecline, Checkpoint: u.id, Message: fmt.Sprintf("%s declined checkpoint %d: %s", t.name, u.id, reason)})
	}
}

// addChannelState adds encoded channel entries to an acknowledgement's
// operator state and figures; it returns their bytes.
func addChannelState(a *pendingAck, entries [][]byte) int64 {
	var n int64
	for _, e := range entries {
		n += int64(len(e))
	}
	st := a.msg.state
	if st != nil && len(entries) > 0 {
		cp := *st
		op := &state.OperatorSnapshot{}
		if cp.Operator != nil {
			op.States = slices.Clone(cp.Operator.States)
		}
		i := slices.IndexFunc(op.States, func(s state.OperatorStateSnapshot) bool { return s.Name == channelStateName })
		if i < 0 {
			op.States = append(op.States, state.OperatorStateSnapshot{Name: channelStateName, Mode: rescale.Union})
			i = len(op.States) - 1
		}
		op.States[i].Elements = append(slices.Clone(op.States[i].Elements), entries...)
		cp.Operator = op
		a.msg.state = &cp
	}
	a.msg.ack.ChannelStateSize += n
	a.msg.ack.StateSize += n
	a.msg.ack.CheckpointedSize += n
	return n
}

// pushElement pushes an output element into its channel. An unaligned
// barrier is a priority event: it goes ahead of the records queued in the
// channel (not of another barrier), which join the sender's checkpoint as
// output channel state. owner is the subtask whose outputs are being moved
// (the chain's head when from is chained after it).
func (owner *subtask) pushElement(it outItem, seq int64) {
	if it.e.kind != elemBarrier || !it.e.barrier.Unaligned {
		it.ch.push(it.e, seq)
		return
	}
	over := it.ch.pushPriority(it.e, seq)
	from := it.ch.from
	id := it.e.barrier.ID
	var a *pendingAck
	if u := from.unal; u != nil && u.id == id {
		a = u.ack
	} else {
		for i := range owner.acks {
			if m := owner.acks[i].msg; m.task == from && m.id == id {
				a = &owner.acks[i]
				break
			}
		}
	}
	if len(over) == 0 {
		return
	}
	if a != nil {
		entries := make([][]byte, len(over))
		for i, r := range over {
			entries[i], _ = json.Marshal(channelEntry{Dir: "out", Edge: it.ch.edge, To: it.ch.to.index, Subtask: from.index, Parallelism: from.op.parallelism, Rec: r})
		}
		addChannelState(a, entries)
	}
	owner.events = append(owner.events, Event{Kind: EvBarrierOvertook, Task: from.name, Operator: from.op.spec.ID, Channel: it.ch.name, From: from.name, To: it.ch.to.name,
		Edge: edgeRef(it.ch.edge), Checkpoint: id, Records: len(over),
		Message: fmt.Sprintf("unaligned barrier %d overtook %d record(s) queued on %s; they are part of checkpoint %d as channel state", id, len(over), it.ch.name, id)})
}

// pushPriority puts barrier e ahead of every record queued in the channel
// (behind barriers already there) and returns the records it overtook.
func (c *channel) pushPriority(e element, seq int64) []Record {
	c.barriers.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	pos := c.qh
	for pos < len(c.q) && c.q[pos].kind == elemBarrier {
		pos++
	}
	var over []Record
	for i := pos; i < len(c.q); i++ {
		if c.q[i].kind == elemRecords {
			over = append(over, c.q[i].batch.recs...)
		}
	}
	if pos < len(c.seqs) {
		seq = c.seqs[pos] // it is deliverable as early as what it overtook
	}
	c.q = slices.Insert(c.q, pos, e)
	c.seqs = slices.Insert(c.seqs, pos, seq)
	c.n.Store(int64(len(c.q) - c.qh))
	return over
}

// takeChannelState removes the channel state from a restored operator
// backend and keeps this subtask's share for replay.
func (t *subtask) takeChannelState() error {
	if t.opBackend == nil {
		return nil
	}
	has := false
	for _, e := range t.opBackend.Entries() {
		if e.State == channelStateName {
			has = true
			break
		}
	}
	if !has {
		return nil
	}
	l, err := state.UnionList(t.opBackend, channelStateName, state.JSONCodec[channelEntry]())
	if err != nil {
		return err
	}
	all, err := l.Get()
	if err != nil {
		return fmt.Errorf("%w: channel state of %s: %w", ErrCorruptCheckpoint, t.name, err)
	}
	_ = l.Clear()
	var kgr *rescale.KeyGroupRange
	if t.op.keyed() {
		r := t.op.keyGroupRange(t.index)
		kgr = &r
	}
	for _, e := range all {
		mine := e.Subtask == t.index
		if e.Parallelism != t.op.parallelism {
			mine = e.Subtask%t.op.parallelism == t.index
			if e.Dir == "in" && kgr != nil {
				mine = kgr.Contains(rescale.KeyGroupForString(e.Rec.Key, t.op.maxPar))
			}
		}
		if mine {
			t.replay = append(t.replay, e)
		}
	}
	return nil
}

// replayChannelState sends the restored output channel state again and
// processes the restored input channel state, before anything else.
func (t *subtask) replayChannelState() error {
	if len(t.replay) == 0 {
		return nil
	}
	replay := t.replay
	t.replay = nil
	for _, e := range replay {
		if e.Dir != "out" {
			continue
		}
		for _, oe := range t.outs {
			if oe.edge != e.Edge {
				continue
			}
			switch oe.part {
			case Forward:
				oe.add(0, e.Rec)
			case Rebalance:
				oe.add(oe.rr, e.Rec)
				oe.rr = (oe.rr + 1) % len(oe.chans)
			case Hash:
				kg := rescale.KeyGroupForString(e.Rec.Key, oe.down.maxPar)
				b := oe.add(rescale.OperatorIndexForKeyGroup(oe.down.maxPar, oe.down.parallelism, kg), e.Rec)
				b.kgs = append(b.kgs, int32(kg))
			case Broadcast:
				if e.To < len(oe.chans) {
					oe.add(e.To, e.Rec)
				}
			}
		}
	}
	t.flush()
	in := 0
	for _, e := range replay {
		if e.Dir != "in" {
			continue
		}
		idx := slices.Index(t.op.inEdges, e.Edge)
		if idx < 0 {
			continue
		}
		if err := t.fn.process(t, idx, []Record{e.Rec}); err != nil {
			return err
		}
		in++
	}
	t.flush()
	t.event(Event{Kind: EvUnalignedCheckpoint, Checkpoint: t.restoredCP.Load(), Records: in,
		Message: fmt.Sprintf("%s replayed %d record(s) of channel state before new input (%d sent again downstream, %d processed again)", t.name, len(replay), len(replay)-in, in)})
	return nil
}

// channelStateTotals sums the channel state of a checkpoint's acknowledgements.
func channelStateTotals(acks []AckStats) (size int64, unaligned bool) {
	for _, a := range acks {
		size += a.ChannelStateSize
		unaligned = unaligned || a.Unaligned
	}
	return size, unaligned
}
