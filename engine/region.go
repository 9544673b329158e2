package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Region failover, as Flink's RestartPipelinedRegionFailoverStrategy (the
// default, jobmanager.execution.failover-strategy: region): a failed
// subtask restarts together with its pipelined region, the subtasks joined
// to it by pipelined data exchanges. A forward edge joins subtask i of one
// operator with subtask i of the next; every other edge (rebalance, hash,
// broadcast: all-to-all) joins all their subtasks
// (SchedulingPipelinedRegionComputeUtil). The other regions keep running.
// Where StateLab cannot restart a region on its own it fails over globally,
// as Flink's RestartAllFailoverStrategy would: a failover strategy of full,
// a failure that is not one subtask's (a checkpoint failure, a restore or
// slot failure), a rescale in progress, or a failure while a restarted
// region waits for slots.
//
// Every failure is handled on its own, as Flink's DefaultScheduler does
// (handleTaskFailure -> restartTasksWithDelay): a failure in another region
// while a region waits for its restart delay restarts that region too, with
// the delay the restart strategy gives for it, and the job stays RESTARTING
// until no region waits (verticesWaitingForRestart). A subtask that a later
// failure restarts again is left to that later restart
// (ExecutionVertexVersioner.getUnmodifiedExecutionVertices).

// JobFailoverRegion is Flink's CheckpointFailureReason when a region
// failover aborts a pending checkpoint. It never counts.
const JobFailoverRegion CheckpointFailureReason = "JOB_FAILOVER_REGION"

// PipelinedRegions lists the job's pipelined regions at the given
// parallelism, as subtask names, each sorted, in the order of their first
// subtask in topological order.
func (s *JobSpec) PipelinedRegions(par map[string]int) [][]string {
	parent := map[string]string{}
	find := func(x string) string {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	union := func(a, b string) { parent[find(a)] = find(b) }
	var order []string
	for _, i := range s.topoOrder() {
		o := s.Operators[i]
		for k := range par[o.ID] {
			n := taskName(o.ID, k)
			parent[n] = n
			order = append(order, n)
		}
	}
	for _, e := range s.Edges {
		pf, pt := par[e.From], par[e.To]
		for i := range pf {
			for j := range pt {
				if e.Partitioner == Forward && i != j {
					continue
				}
				union(taskName(e.From, i), taskName(e.To, j))
			}
		}
	}
	byRoot := map[string]int{}
	var out [][]string
	for _, n := range order {
		r := find(n)
		k, ok := byRoot[r]
		if !ok {
			k = len(out)
			byRoot[r] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], n)
	}
	for _, reg := range out {
		slices.Sort(reg)
	}
	return out
}

// regionOf returns the subtasks of t's pipelined region in the current
// execution (channels exist exactly where data is exchanged).
func (c *core) regionOf(t *subtask) []*subtask {
	in := map[*subtask]bool{t: true}
	for changed := true; changed; {
		changed = false
		for _, ch := range c.ex.channels {
			if in[ch.from] != in[ch.to] {
				in[ch.from], in[ch.to] = true, true
				changed = true
			}
		}
	}
	var out []*subtask
	for _, x := range c.ex.tasks {
		if in[x] {
			out = append(out, x)
		}
	}
	return out
}

// regionPending is a region waiting for its restart delay: one failure's
// handling, with the version it gave each of its subtasks.
type regionPending struct {
	tasks    []string
	epoch    int
	versions map[string]int
}

// regionRestarting says whether the job is RESTARTING for region failovers
// only: the rest of the job runs.
func (c *core) regionRestarting() bool {
	return c.status == JobRestarting && len(c.regions) > 0
}

// pendingRestart says whether subtask name waits for a region restart.
func (c *core) pendingRestart(name string) bool {
	for _, r := range c.regions {
		if slices.Contains(r.tasks, name) {
			return true
		}
	}
	return false
}

// regionCandidate returns failed's pipelined region when a region
// failover applies, else nil (a global failover).
func (c *core) regionCandidate(failed *subtask) []*subtask {
	if failed == nil {
		return nil
	}
	return c.regionsOf([]*subtask{failed})
}

// regionsOf returns the union of the pipelined regions of failed (one
// failed subtask, or every subtask a lost TaskManager ran) when a region
// failover applies, else nil (a global failover). In Flink every task of a
// lost TaskManager fails (DefaultScheduler.handleTaskFailure, once each) and
// RestartPipelinedRegionFailoverStrategy.getTasksNeedingRestart restarts
// each one's region, so together the union of their regions; the failed
// subtasks may sit on a dead TaskManager, every other subtask of those
// regions must be alive (it is cancelled, then placed again).
func (c *core) regionsOf(failed []*subtask) []*subtask {
	// Reactive mode runs Flink's AdaptiveScheduler, which restarts the
	// whole job on any failure (Executing -> Restarting) and then takes
	// the slots there are: no region failover.
	if len(failed) == 0 || c.ex == nil || c.spec.Cluster.Failover != FailoverRegion || c.spec.Cluster.Reactive || c.rescaling != nil ||
		c.waiting || (c.status != JobRunning && !c.regionRestarting()) {
		return nil
	}
	in := map[*subtask]bool{}
	isFailed := map[*subtask]bool{}
	for _, f := range failed {
		if c.ex.byName[f.name] != f {
			return nil
		}
		isFailed[f] = true
		for _, t := range c.regionOf(f) {
			in[t] = true
		}
	}
	if len(in) == len(c.ex.tasks) {
		return nil
	}
	var region []*subtask
	for _, t := range c.ex.tasks {
		if !in[t] {
			continue
		}
		// A subtask already cancelled for a pending region restart is
		// restarted again by this failure's handling, wherever it ran.
		if !isFailed[t] && !c.pendingRestart(t.name) && (t.tm == nil || !t.tm.alive || t.dead.Load()) {
			return nil
		}
		region = append(region, t)
	}
	return region
}

// failRegion is a failover of region only, failed being the subtask whose
// failure caused it: the restart strategy decides whether and when the
// region restarts; if it refuses, the job fails.
func (c *core) failRegion(failed *subtask, region []*subtask, what, reason string) {
	ok, delay := c.rs.notifyFailure(c.restart, c.clock(), c.spec.Seed)
	if ok {
		c.regionFailover(failed, region, delay, what, reason)
		return
	}
	c.giveUp(failed, reason)
}

// regionFailover cancels region and restarts it after delay; the other
// subtasks keep running. what names the failure for the job-status
// message ("the pipelined region of source#0").
func (c *core) regionFailover(failed *subtask, region []*subtask, delay time.Duration, what, reason string) {
	c.counters.Failovers++
	c.failures++
	for _, p := range c.coord.pendingList() {
		c.abortCheckpoint(p, JobFailoverRegion, "a region fails over: "+reason)
	}
	names := make([]string, len(region))
	var stop []*subtask
	for i, t := range region {
		names[i] = t.name
		// Subtasks cancelled by an earlier failure's handling are stopped
		// already (restarting them again is fine, as in Flink).
		if !c.pendingRestart(t.name) {
			stop = append(stop, t)
		}
	}
	for _, t := range stop {
		c.drv.stopTask(t)
	}
	for _, t := range stop {
		switch t.getStatus() {
		case TaskFailed, TaskCanceled, TaskFinished:
		default:
			if t == failed {
				t.setStatus(TaskFailed)
			} else {
				t.setStatus(TaskCanceled)
			}
		}
		t.close()
		t.ctlMu.Lock()
		t.ctl = nil
		t.ctlMu.Unlock()
		c.flushTaskEvents(t)
		for _, a := range t.acks {
			if a.async != nil {
				a.async.Cancel()
			}
		}
		t.toJM, t.acks = nil, nil
	}
	inRegion := map[*subtask]bool{}
	for _, t := range region {
		inRegion[t] = true
	}
	for _, ch := range c.ex.channels {
		if inRegion[ch.from] || inRegion[ch.to] {
			ch.drain()
			ch.blocked.Store(false)
		}
	}
	// A lost TaskManager's disk goes once its subtasks no longer run.
	c.wipeLostDisks()
	c.regionEpoch++
	// ExecutionVertexVersioner.recordVertexModifications: a restart of
	// these subtasks by an earlier handling now leaves them to this one.
	if c.versions == nil {
		c.versions = map[string]int{}
	}
	versions := make(map[string]int, len(names))
	for _, n := range names {
		c.versions[n]++
		versions[n] = c.versions[n]
	}
	c.regions = append(c.regions, &regionPending{tasks: names, epoch: c.regionEpoch, versions: versions})
	// The job is RESTARTING until the last waiting region restarts.
	at := c.clock() + delay
	if c.status == JobRestarting {
		at = max(at, c.rs.restartAt)
	}
	c.rs.lastDelay, c.rs.restartAt = delay, at
	of := ""
	if m := c.restart.maxAttempts(); m > 0 {
		of = fmt.Sprintf(" of %d", m)
	}
	msg := fmt.Sprintf("job %s restarts %s (%s) in %v (%s, restart %d%s); the other subtasks keep running: %s",
		c.spec.Name, what, strings.Join(names, ", "), delay, c.restart.Strategy, c.failures, of, reason)
	if c.status == JobRestarting {
		// Another region already waits: the job stays RESTARTING (no
		// status change to report), and this failure is handled on its
		// own, as Flink's DefaultScheduler handles each task failure.
		c.logger.Info(msg)
	}
	c.setJobStatus(JobRestarting, msg)
	c.counters.Restarts++
	c.drv.after(delay, timer{kind: timerRegionRestart, attempt: c.attempt, id: int64(c.regionEpoch)})
}

// restartRegion deploys new attempts of the pending region's subtasks,
// restored from the latest completed checkpoint.
func (c *core) restartRegion(epoch int) {
	k := slices.IndexFunc(c.regions, func(r *regionPending) bool { return r.epoch == epoch })
	if k < 0 || c.ex == nil || c.terminal {
		return
	}
	r := c.regions[k]
	c.regions = slices.Delete(c.regions, k, k+1)
	c.rs.restarted = true // as in deploy: a failure from here on comes after this restart
	ex := c.ex
	// RESTARTING -> RUNNING once no region waits any more
	// (DefaultScheduler.removeVerticesFromRestartPending).
	if len(c.regions) == 0 {
		c.setJobStatus(JobRunning, "")
	}
	var fresh []*subtask
	for _, name := range r.tasks {
		// A later failure's handling restarts it (getUnmodifiedExecutionVertices).
		if c.versions[name] != r.versions[name] {
			continue
		}
		c.versions[name]++ // deployed: allocateSlotsAndDeploy records a modification too
		old := ex.byName[name]
		nt := newSubtask(c, ex, old.op, old.index)
		nt.tm, nt.slot = old.tm, old.slot
		nt.incarnation = old.incarnation + 1
		// The Live driver's wake channel, set before running subtasks can
		// reach nt through a channel (they wake it), so startTask need not
		// write it while they run.
		nt.wakeC = old.wakeC
		nt.inputs, nt.inputEdge = old.inputs, old.inputEdge
		for _, oe := range old.outs {
			noe := &outEdge{edge: oe.edge, part: oe.part, down: oe.down, chans: oe.chans, rr: oe.rr, pending: make([]*batch, len(oe.chans))}
			nt.outs = append(nt.outs, noe)
		}
		for _, ch := range ex.channels {
			if ch.from == old {
				ch.from = nt
			}
			if ch.to == old {
				ch.to = nt
			}
		}
		nt.initInputs()
		old.op.tasks[old.index] = nt
		ex.tasks[slices.Index(ex.tasks, old)] = nt
		ex.byName[name] = nt
		fresh = append(fresh, nt)
	}
	if len(fresh) == 0 {
		return
	}
	meta, err := c.chooseCheckpoint()
	var specs map[*subtask]*restoreSpec
	if err == nil && meta != nil {
		specs, err = c.restoreSpecs(ex, meta)
	}
	if err != nil {
		c.restoreFailed(err)
		return
	}
	names := map[string]bool{}
	for _, t := range fresh {
		names[t.name] = true
	}
	if err := c.abortDanglingTransactions(meta, names); err != nil {
		c.restoreFailed(err)
		return
	}
	c.restoreMu.Lock()
	ex.initialized = len(ex.tasks) - len(fresh)
	ex.restoreCounted = false
	ex.restore = nil
	if meta != nil {
		ex.restore = &RestoreStats{Checkpoint: meta.CheckpointID, Savepoint: meta.Savepoint}
	}
	c.restoreMu.Unlock()
	for _, t := range fresh {
		t.verbose = c.verbose
		t.setStatus(TaskScheduled)
		t.pendingRestore = specs[t]
	}
	c.placeScheduled()
}

// slotRef is one slot of one TaskManager.
type slotRef struct {
	tm  *taskManager
	idx int
}

// placeScheduled deploys the SCHEDULED subtasks of a running execution (a
// restarted region) once slots are free for them, as Flink's scheduler
// requests slots for the restarted region's tasks only. A subtask goes
// into the slot of its index's other subtasks when those still run there
// (slot sharing), else back into its previous slot if that TaskManager is
// alive and the slot free, else into the first free slot. Without enough
// free slots the region waits for resources (a lost TaskManager's slots
// are gone) for slot.request.timeout, as a whole job does.
func (c *core) placeScheduled() {
	ex := c.ex
	if ex == nil || c.terminal || (c.status != JobRunning && !c.regionRestarting()) {
		return
	}
	var sched []*subtask
	for _, t := range ex.tasks {
		if t.getStatus() == TaskScheduled {
			sched = append(sched, t)
		}
	}
	if len(sched) == 0 {
		return
	}
	slots, missing := c.regionSlots(sched)
	if missing > 0 {
		for _, t := range sched {
			t.tm, t.slot = nil, 0
		}
		if !c.waiting {
			c.waiting = true
			to := c.spec.Cluster.SlotRequestTimeout.D()
			c.slotDeadline = c.clock() + to
			c.drv.after(to, timer{kind: timerSlotRequest, attempt: c.attempt})
			c.publish(Event{Kind: EvWaitingResources, Message: fmt.Sprintf("the restarted region needs %d more slot(s) than the alive TaskManagers have free; it waits for resources (add or restart a TaskManager) at most %v (slot.request.timeout); the other subtasks keep running", missing, to)})
		}
		return
	}
	if c.waiting {
		c.waiting = false
		c.drv.cancelTimer(timer{kind: timerSlotRequest, attempt: c.attempt})
	}
	for _, t := range sched {
		s := slots[t]
		t.tm, t.slot = s.tm, s.idx
		t.setStatus(TaskDeploying)
		t.sendCtl(control{kind: ctlDeploy, attempt: ex.attempt, restore: t.pendingRestore, seq: c.nextSeq(), localDir: t.tm.localDir})
		t.pendingRestore = nil
		c.drv.startTask(t)
	}
}

// regionSlots chooses a slot for every subtask of sched (see
// placeScheduled), or says how many slots are missing.
func (c *core) regionSlots(sched []*subtask) (map[*subtask]slotRef, int) {
	isSched := map[*subtask]bool{}
	for _, t := range sched {
		isSched[t] = true
	}
	taken := map[slotRef]bool{}
	byIndex := map[int]slotRef{}
	for _, t := range c.ex.tasks {
		if isSched[t] || t.tm == nil || !t.tm.alive || t.dead.Load() {
			continue
		}
		s := slotRef{t.tm, t.slot}
		taken[s] = true
		if _, ok := byIndex[t.index]; !ok {
			byIndex[t.index] = s
		}
	}
	out := map[*subtask]slotRef{}
	// First the slots of the same index and the previous slots, then the
	// first free ones, so that a free slot is not given away before the
	// subtask that held it asks.
	for _, t := range sched {
		if s, ok := byIndex[t.index]; ok {
			out[t] = s
			continue
		}
		if t.tm != nil && t.tm.alive {
			if s := (slotRef{t.tm, t.slot}); !taken[s] {
				taken[s] = true
				byIndex[t.index] = s
				out[t] = s
			}
		}
	}
	missing := 0
	for _, t := range sched {
		if _, ok := out[t]; ok {
			continue
		}
		if s, ok := byIndex[t.index]; ok {
			out[t] = s
			continue
		}
		found := false
		for _, tm := range c.tms {
			if !tm.alive {
				continue
			}
			for i := range tm.slots {
				if s := (slotRef{tm, i}); !taken[s] {
					taken[s] = true
					byIndex[t.index] = s
					out[t] = s
					found = true
					break
				}
			}
			if found {
				break
			}
		}
		if !found {
			missing++
			byIndex[t.index] = slotRef{} // counted once per index
		}
	}
	return out, missing
}

// prevSlot is a slot a subtask index held in the previous execution, on
// the TaskManager incarnation whose disk was localDir.
type prevSlot struct {
	slotRef
	localDir string
}

// previousSlots returns the slots ex's subtasks held, by subtask index.
func previousSlots(ex *execution) map[int]prevSlot {
	out := map[int]prevSlot{}
	for _, t := range ex.tasks {
		if t.tm == nil {
			continue
		}
		if _, ok := out[t.index]; !ok {
			out[t.index] = prevSlot{slotRef{t.tm, t.slot}, t.tm.localDir}
		}
	}
	return out
}

// assignSlots gives each subtask index 0..need-1 a slot of free (enough of
// them). With local recovery (state.backend.local-recovery) Flink's
// scheduler prefers a subtask's previous slot
// (PreviousAllocationSlotSelectionStrategy), so that its task-local state
// is on the TaskManager it restores on: an index whose previous slot is
// still offered by the same TaskManager incarnation keeps it, the others
// take the first free slots left. In reactive mode the adaptive scheduler
// places by state locality instead (StateLocalitySlotAssigner,
// stateLocalityPairs): at the same parallelism a keyed subtask scores
// highest in its own previous slot, which comes to the same; an index with
// no keyed state to find scores nothing and takes a free slot (Flink's in
// no set order). Without local recovery (or without a previous execution) index i takes
// the i-th free slot.
func (c *core) assignSlots(free []slotRef, need int) []slotRef {
	out := make([]slotRef, need)
	taken := map[slotRef]bool{}
	done := make([]bool, need)
	if c.prevSlots != nil {
		offered := map[slotRef]bool{}
		for _, s := range free {
			offered[s] = true
		}
		pairs := [][2]int{}
		if c.spec.Cluster.Reactive && c.ex != nil {
			pairs = stateLocalityPairs(c.ex)
		} else {
			for i := range need {
				pairs = append(pairs, [2]int{i, i})
			}
		}
		for _, pr := range pairs {
			i, j := pr[0], pr[1]
			p, ok := c.prevSlots[j]
			if i >= need || done[i] || !ok || !offered[p.slotRef] || taken[p.slotRef] || p.tm.localDir != p.localDir {
				continue
			}
			out[i], done[i] = p.slotRef, true
			taken[p.slotRef] = true
		}
	}
	next := 0
	for i := range need {
		if done[i] {
			continue
		}
		for taken[free[next]] {
			next++
		}
		out[i] = free[next]
		taken[free[next]] = true
		next++
	}
	return out
}

// stateLocalityPairs orders the (new subtask index, old subtask index)
// pairs of a reactive restore as Flink's StateLocalitySlotAssigner orders
// its (slot-sharing group, previous allocation) scores: the score is the
// keyed state the new index would find in the old index's slot, summed over
// the keyed operators: the key groups the two ranges share times the old
// subtask's state size per key group (its keyed state size in the
// checkpoint restored, StateSizeEstimates, over its key groups, at least 1
// byte each). Highest first; a pair with no shared state scores nothing and
// is left out. Flink breaks ties by allocation and group IDs (run to run they
// differ); StateLab by the lower old index, then the lower new index.
func stateLocalityPairs(ex *execution) [][2]int {
	score := map[[2]int]int64{}
	for _, t := range ex.tasks {
		r := t.pendingRestore
		if r == nil || len(r.keyed) == 0 {
			continue
		}
		mine := t.op.keyGroupRange(t.index)
		for k, h := range r.keyed {
			if h == nil || k >= len(r.reads) {
				continue
			}
			old := h.KeyGroupRange
			n := int64(old.End - old.Start + 1)
			if h.StateSize <= 0 || n <= 0 {
				continue
			}
			perGroup := h.StateSize / min(h.StateSize, n)
			lo, hi := max(mine.Start, old.Start), min(mine.End, old.End)
			if hi < lo {
				continue
			}
			score[[2]int{t.index, r.reads[k].OldSubtask}] += int64(hi-lo+1) * perGroup
		}
	}
	pairs := make([][2]int, 0, len(score))
	for pr := range score {
		pairs = append(pairs, pr)
	}
	slices.SortFunc(pairs, func(a, b [2]int) int {
		if sa, sb := score[a], score[b]; sa != sb {
			if sa > sb {
				return -1
			}
			return 1
		}
		if a[1] != b[1] {
			return a[1] - b[1]
		}
		return a[0] - b[0]
	})
	return pairs
}
