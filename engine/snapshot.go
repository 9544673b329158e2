package engine

import (
	"slices"

	"github.com/statelab/statelab/state"
)

// snapshot builds the Snapshot. With detail it also reads operator state,
// source cursors and the ground-truth comparison (only safe when no subtask
// runs concurrently: the Stepper); with metrics, keyed backend figures too
// (a scan of the backend: costly on pebble).
func (c *core) snapshot(detail bool) Snapshot { return c.snapshotWith(detail, detail) }

// maxLiveSnapshotTruth bounds the source records of a full-speed run whose
// snapshots compare the sinks with the ground truth (a sandbox holds
// 20,000; the benchmarks a million).
const maxLiveSnapshotTruth = 200_000

func (c *core) snapshotWith(detail, metrics bool) Snapshot {
	s := Snapshot{Seed: c.spec.Seed, At: c.clock(), Backend: c.spec.Backend}
	j := &s.Job
	j.Name, j.Status, j.Attempt, j.WaitingForResources = c.spec.Name, c.status, c.attempt, c.waiting
	j.CheckpointDir = c.storage.JobID()
	j.SlotsNeeded, j.SlotsAvailable = slotsNeeded(c.par), c.aliveSlots()
	j.Restart = RestartView{Strategy: c.restart.Strategy, Default: c.spec.Restart.Strategy == RestartDefault, Class: c.restart.className(),
		Description: c.restart.describe(), Attempt: c.rs.attempt, MaxAttempts: c.restart.maxAttempts(), NextDelay: c.rs.lastDelay}
	if c.restart.Strategy == RestartFailureRate {
		j.Restart.Attempt = len(c.rs.failures)
	}
	if c.status == JobRestarting {
		j.Restart.RestartAt = c.rs.restartAt
	}
	switch m := c.restart.maxAttempts(); {
	case c.restart.Strategy == RestartNone || c.terminal:
		j.RestartsLeft = 0
	case m > 0:
		j.RestartsLeft = max(0, m-c.rs.attempt)
	default:
		j.RestartsLeft = -1 // unlimited, or limited by a rate
	}
	j.Failover = c.spec.Cluster.Failover
	j.Scheduler = "default"
	if c.spec.Cluster.Reactive {
		j.Scheduler = "reactive"
	}
	j.Heartbeat = HeartbeatView{Timeout: c.spec.Cluster.HeartbeatTimeout.D(), Interval: c.spec.Cluster.HeartbeatInterval.D()}
	if j.Heartbeat.Interval > 0 {
		j.Heartbeat.RPCFailureThreshold = c.spec.Cluster.rpcFailureThreshold()
	}
	if c.waiting {
		j.SlotRequestDeadline = c.slotDeadline
	}
	j.TolerableFailedCheckpoints, j.FailedCheckpointsInARow = c.spec.Checkpointing.TolerableFailed, c.cfm.continuous
	if r := c.rescaling; r != nil {
		j.Rescale = &RescaleView{Operator: r.operator, From: r.from, To: r.to, Phase: r.phase, Savepoint: r.savepoint}
	}
	for _, e := range c.spec.Edges {
		j.Edges = append(j.Edges, EdgeView(e))
	}
	tmTasks := map[*taskManager][]string{}
	ids := c.operatorIDs()
	for i, o := range c.spec.Operators {
		ov := OperatorView{ID: o.ID, Kind: o.Kind, Parallelism: c.par[o.ID], MaxParallelism: o.MaxParallelism, Keyed: isKeyedKind(o.Kind),
			UID: o.UID, OperatorID: ids[o.ID], Subtasks: []SubtaskView{}}
		if c.ex != nil {
			eo := c.ex.ops[i]
			ov.Parallelism = eo.parallelism
			for _, t := range eo.tasks {
				sv := SubtaskView{Index: t.index, Name: t.name, Status: t.getStatus(), Slot: t.slot,
					RecordsIn: t.recordsIn.Load(), RecordsOut: t.recordsOut.Load(), Watermark: t.wm.Load(),
					RestoredFrom: t.restoredCP.Load(), Failure: t.getFailure()}
				if t.tm != nil {
					sv.TaskManager = t.tm.id
					if live(sv.Status) {
						tmTasks[t.tm] = append(tmTasks[t.tm], t.name)
					}
				}
				if eo.keyed() {
					r := eo.keyGroupRange(t.index)
					sv.KeyGroups = &r
				}
				for _, ch := range t.inputs {
					if ch.blocked.Load() {
						sv.Aligning = max(sv.Aligning, ch.blockedFor.Load())
					}
				}
				for _, oe := range t.outs {
					for _, ch := range oe.chans {
						if ch.full() {
							sv.Backpressured = true
						}
					}
				}
				if detail && t.src != nil {
					for _, pc := range t.src.parts {
						sv.Offsets = append(sv.Offsets, PartitionOffset{Partition: pc.partition, Offset: pc.offset})
					}
				}
				if detail && t.opBackend != nil && !t.closed {
					if m := operatorStateStrings(t.opBackend); len(m) > 0 {
						sv.OperatorState = m
					}
				}
				if metrics && t.keyed != nil && !t.closed {
					if m, err := t.keyed.Metrics(); err == nil {
						sv.State = &m
					}
				}
				if !detail && live(sv.Status) {
					// A Live subtask's own fields are its goroutine's: take
					// what it last published.
					if f := t.figures.Load(); f != nil {
						sv.Offsets, sv.OperatorState, sv.State = f.offsets, f.opState, f.state
					}
				}
				ov.Subtasks = append(ov.Subtasks, sv)
			}
		}
		j.Operators = append(j.Operators, ov)
	}
	if c.ex != nil {
		for _, ch := range c.ex.channels {
			s.Channels = append(s.Channels, ChannelView{Name: ch.name, From: ch.from.name, To: ch.to.name, Edge: ch.edge,
				Capacity: ch.cap, Queued: ch.snapshotElements(), Blocked: ch.blocked.Load(), BlockedBy: ch.blockedFor.Load(),
				Full: ch.full(), Sent: ch.sentRecs.Load(), Delivered: ch.deliveredRec.Load()})
		}
		c.chainViews(&s)
	}
	for _, tm := range c.tms {
		st := TMAlive
		if !tm.alive {
			st = TMLost
		}
		tv := TaskManagerView{ID: tm.id, Status: st, Slots: tm.slots, Tasks: tmTasks[tm]}
		if c.spec.Backend == BackendPebble {
			tv.LocalDir = tm.localDir
		}
		if tv.Tasks == nil {
			tv.Tasks = []string{}
		}
		s.TaskManagers = append(s.TaskManagers, tv)
	}
	s.Checkpoints = c.checkpointsView()
	s.Sources = c.sourcesView(detail)
	topicRecords := c.topicRecords()
	for _, o := range c.spec.Operators {
		store := c.sinks[o.ID]
		if store == nil {
			continue
		}
		opts, _ := parseOptions(&o)
		_, txns := store.view(false)
		sv := SinkView{Operator: o.ID, Semantics: opts.Semantics, Committed: store.committedCount(), Transactions: txns}
		if sv.Transactions == nil {
			sv.Transactions = []TransactionView{}
		}
		// Both drivers compare: the sink's store and the topics are safe to
		// read while a Live run goes on (Compare does the same), and a
		// comparison is recomputed only when the committed output changed.
		// A full-speed run compares in its snapshots only while its topics
		// are small enough to do it several times a second (Compare still
		// answers for any size).
		if detail || topicRecords <= maxLiveSnapshotTruth {
			if cmp, err := c.compareSink(o.ID); err == nil {
				t := cmp.truncated(50)
				sv.Comparison = &t
			}
		}
		s.Sinks = append(s.Sinks, sv)
	}
	s.Commands = slices.Clone(c.cmdLog)
	if s.Commands == nil {
		s.Commands = []LoggedCommand{}
	}
	c.restoreMu.Lock()
	s.Counters = c.counters
	c.restoreMu.Unlock()
	return s
}

func (c *core) checkpointsView() CheckpointsView {
	c.restoreMu.Lock()
	mode := c.barrierMode()
	v := CheckpointsView{Mode: mode, ModeNoInterval: mode != c.spec.Checkpointing.Mode, Interval: c.spec.Checkpointing.Interval.D(), Counts: c.coord.counts, Unaligned: c.unalignedOn(),
		UnalignedIgnored: c.spec.Checkpointing.Unaligned && mode == AtLeastOnce}
	if v.Unaligned {
		v.AlignedCheckpointTimeout = c.spec.Checkpointing.AlignedCheckpointTimeout.D()
	}
	if r := c.coord.latestRestore; r != nil {
		cp := *r
		v.LatestRestore = &cp
	}
	c.restoreMu.Unlock()
	v.Counts.InProgress = len(c.coord.pending)
	v.MaxConcurrent = c.spec.Checkpointing.maxConcurrent()
	v.Queued, v.QueuedPeriodic = c.coord.queuedCounts()
	for _, h := range c.coord.history {
		v.History = append(v.History, *copyStats(h))
	}
	if v.History == nil {
		v.History = []CheckpointStats{}
	}
	v.Retained = c.storage.Checkpoints()
	if v.Retained == nil {
		v.Retained = []state.CheckpointInfo{}
	}
	v.Storage = c.storage.Metrics()
	return v
}

// sourcesView shows every source topic with its partitions, their owners and
// offsets, and the offsets of the latest completed checkpoint.
func (c *core) sourcesView(detail bool) []SourceView {
	var out []SourceView
	latest, lerr := c.latestCheckpointOffsets()
	for _, o := range c.spec.Operators {
		tp := c.topics[o.ID]
		if tp == nil {
			continue
		}
		sv := SourceView{Operator: o.ID}
		if lerr != nil {
			sv.CheckpointError = lerr.Error()
		}
		for p := range tp.partitions {
			pv := PartitionView{Partition: p, End: tp.end(p), Owner: -1, Checkpointed: -1}
			sv.Records += pv.End
			if off, ok := latest[o.ID][p]; ok {
				pv.Checkpointed = off
			}
			sv.Partitions = append(sv.Partitions, pv)
		}
		for p := range sv.Partitions {
			sv.Partitions[p].Owner = int(tp.progress[p].owner.Load())
			sv.Partitions[p].Offset = tp.progress[p].offset.Load()
		}
		out = append(out, sv)
	}
	return out
}

// latestCheckpointOffsets reads the source offsets of the newest retained
// checkpoint's metadata.
func (c *core) latestCheckpointOffsets() (map[string]map[int]int64, error) {
	out := map[string]map[int]int64{}
	infos := c.storage.Checkpoints()
	if len(infos) == 0 {
		return out, nil
	}
	newest := infos[len(infos)-1].ID
	if c.offCache.id == newest && c.offCache.off != nil {
		return c.offCache.off, nil
	}
	meta, err := c.storage.Peek(newest) // a view: not counted as bytes read
	if err != nil {
		return out, nil
	}
	out, err = c.checkpointOffsets(meta)
	if err != nil {
		return map[string]map[int]int64{}, err
	}
	c.offCache = offsetsCache{id: newest, off: out}
	return out, nil
}

// checkpointOffsets reads the source offsets a checkpoint holds; an offset
// that does not decode is an error (ErrCorruptCheckpoint), never skipped.
func (c *core) checkpointOffsets(meta *state.CheckpointMetadata) (map[string]map[int]int64, error) {
	out := map[string]map[int]int64{}
	byOp, _ := mapStates(c.spec, meta)
	for name, os := range byOp {
		if c.topics[name] == nil {
			continue
		}
		m := map[int]int64{}
		if err := decodeElements(meta, os, "offsets", func(po PartitionOffset) { m[po.Partition] = po.Offset }); err != nil {
			return nil, err
		}
		out[name] = m
	}
	return out, nil
}

// stateViewLimit is the state inspector's view of a subtask.
func (t *subtask) stateViewLimit(limit int) TaskStateView {
	v := TaskStateView{Task: t.name, Keyed: []state.Entry{}, Operator: []state.OperatorEntry{}}
	if t.op.keyed() {
		r := t.op.keyGroupRange(t.index)
		v.KeyGroups = &r
	}
	if t.closed {
		v.Error = "the subtask is not running; its state is gone until it restores"
		return v
	}
	if t.keyed != nil {
		es, err := t.keyed.Entries(t.keyed.KeyGroupRange(), limit)
		if err != nil {
			v.Error = err.Error()
		} else {
			v.Keyed = es
		}
		if m, err := t.keyed.Metrics(); err == nil {
			v.Metrics = &m
		}
		if pg, err := t.keyed.KeyGroupMetrics(); err == nil {
			v.PerGroup = pg
		}
		if to, ok := t.fn.(timerOwner); ok && to.timerService() != nil {
			v.Timers = timerView(to.timerService(), limit)
			v.Watermark = t.wm.Load()
		}
	}
	if t.opBackend != nil {
		if es := t.opBackend.Entries(); es != nil {
			v.Operator = es
		}
	}
	return v
}

func (t *subtask) stateView() TaskStateView { return t.stateViewLimit(0) }

// close releases the current execution and the engine's directory.
func (c *core) close() {
	if c.ex != nil {
		c.drv.stopTasks(c.ex)
		for _, t := range c.ex.tasks {
			t.close()
		}
	}
	c.cleanup()
}
