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
// slot failure, a lost TaskManager), a rescale in progress, or a second
// failure while a region restarts.

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

// regionPending is a region waiting for its restart delay.
type regionPending struct {
	tasks []string
	epoch int
}

// regionCandidate returns failed's pipelined region when a region
// failover applies, else nil (a global failover).
func (c *core) regionCandidate(failed *subtask) []*subtask {
	if failed == nil || c.ex == nil || c.spec.Cluster.Failover != FailoverRegion || c.rescaling != nil || c.region != nil ||
		c.status != JobRunning || c.ex.byName[failed.name] != failed {
		return nil
	}
	region := c.regionOf(failed)
	if len(region) == len(c.ex.tasks) {
		return nil
	}
	for _, t := range region {
		if t.tm == nil || !t.tm.alive || t.dead.Load() {
			return nil
		}
	}
	return region
}

// regionFailover cancels region and restarts it after delay; the other
// subtasks keep running.
func (c *core) regionFailover(failed *subtask, region []*subtask, delay time.Duration, reason string) {
	c.counters.Failovers++
	c.failures++
	for _, p := range c.coord.pendingList() {
		c.abortCheckpoint(p, JobFailoverRegion, "a region fails over: "+reason)
	}
	names := make([]string, len(region))
	for i, t := range region {
		names[i] = t.name
		c.drv.stopTask(t)
	}
	for _, t := range region {
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
	c.regionEpoch++
	c.region = &regionPending{tasks: names, epoch: c.regionEpoch}
	c.rs.lastDelay, c.rs.restartAt = delay, c.clock()+delay
	of := ""
	if m := c.restart.maxAttempts(); m > 0 {
		of = fmt.Sprintf(" of %d", m)
	}
	c.setJobStatus(JobRestarting, fmt.Sprintf("job %s restarts the pipelined region of %s (%s) in %v (%s, restart %d%s); the other subtasks keep running: %s",
		c.spec.Name, failed.name, strings.Join(names, ", "), delay, c.restart.Strategy, c.failures, of, reason))
	c.counters.Restarts++
	c.drv.after(delay, timer{kind: timerRegionRestart, attempt: c.attempt, id: int64(c.regionEpoch)})
}

// restartRegion deploys new attempts of the pending region's subtasks,
// restored from the latest completed checkpoint.
func (c *core) restartRegion(epoch int) {
	r := c.region
	if r == nil || r.epoch != epoch || c.ex == nil || c.terminal {
		return
	}
	c.region = nil
	ex := c.ex
	c.setJobStatus(JobRunning, "")
	var fresh []*subtask
	for _, name := range r.tasks {
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
		t.setStatus(TaskDeploying)
		t.sendCtl(control{kind: ctlDeploy, attempt: ex.attempt, restore: specs[t], seq: c.nextSeq(), localDir: t.tm.localDir})
		c.drv.startTask(t)
	}
}
