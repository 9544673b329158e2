// The session model: the latest snapshot, indexed, with the structural
// events applied between snapshots (task status, blocked channels,
// TaskManagers, checkpoint progress), so the views stay current at frame
// rate while the server's periodic snapshot keeps every counter exact.

export class Model {
  constructor() {
    this.snap = null;
    this.listeners = new Set();
    this.restores = []; // {at, checkpoint, savepoint}
    this.expectRestore = false; // set by a failover or rescale, so a deployment's fresh start is no restore
    this.prevOwners = new Map(); // operator -> key-group owners before the last rescale
  }

  on(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); }

  emit(change) { for (const fn of this.listeners) fn(change, this); }

  get ready() { return this.snap !== null; }

  applySnapshot(m) {
    const old = this.snap;
    if (old && old.seed !== m.seed) {
      // A reset: a new run.
      this.restores = [];
      this.expectRestore = false;
    }
    if (old) {
      for (const op of old.job.operators) {
        const now = m.job.operators.find((o) => o.id === op.id);
        if (op.keyed && now && now.parallelism !== op.parallelism) {
          this.prevOwners.set(op.id, { parallelism: op.parallelism, owners: ownersOf(op) });
        }
      }
    }
    this.snap = m;
    if (m.job.rescale || m.job.status === 'RESTARTING') this.expectRestore = true;
    this.index();
    this.emit({ type: 'snapshot', previous: old });
  }

  index() {
    const m = this.snap;
    this.opById = new Map(m.job.operators.map((o) => [o.id, o]));
    this.tasks = new Map();
    for (const op of m.job.operators) for (const st of op.subtasks) this.tasks.set(st.name, { op, st });
    this.channels = new Map(m.channels.map((c) => [c.name, c]));
    this.tmById = new Map(m.taskManagers.map((t) => [t.id, t]));
    this.order = topoOrder(m.job);
    this.cpById = new Map(m.checkpoints.history.map((c) => [c.id, c]));
  }

  applyEvents(evs) {
    if (!this.snap) return;
    for (const e of evs) {
      switch (e.kind) {
        case 'task-status': {
          const t = this.tasks.get(e.task);
          if (t) {
            t.st.status = e.status;
            if (e.taskManager) t.st.taskManager = e.taskManager;
          }
          break;
        }
        case 'channel-blocked':
        case 'channel-unblocked': {
          const c = this.channels.get(e.channel);
          if (c) c.blocked = e.kind === 'channel-blocked';
          break;
        }
        case 'taskmanager': {
          const tm = this.tmById.get(e.taskManager);
          if (tm) tm.status = e.status;
          break;
        }
        case 'job-status':
          this.snap.job.status = e.status;
          if (e.status === 'RESTARTING' || e.status === 'FAILING') this.expectRestore = true;
          break;
        case 'rescale-started':
          this.expectRestore = true;
          break;
        case 'checkpoint-triggered':
        case 'checkpoint-completed':
        case 'checkpoint-aborted':
          if (e.stats) this.upsertCheckpoint(e.stats);
          break;
        case 'checkpoint-acknowledged': {
          const cp = this.cpById.get(e.checkpoint);
          // The ack's trigger time names the checkpoint (ids repeat after a restore).
          const same = !e.ack || cp?.triggerTime === e.ack.ackTime - e.ack.endToEnd;
          if (cp && same && cp.status === 'IN_PROGRESS') cp.acknowledged = Math.min(cp.total, (cp.acknowledged || 0) + 1);
          break;
        }
        case 'restore':
          if (this.expectRestore && e.restore) this.addRestore(e);
          break;
        case 'restore-requested':
          // A job started again from checkpoint N numbers its checkpoints
          // from N + 1: the old job's later ones leave the history, as the
          // engine's does.
          this.dropOldJob(e.checkpoint + 1, e.at);
          break;
      }
    }
    this.emit({ type: 'events', events: evs });
  }

  // upsertCheckpoint applies a checkpoint's statistics. An id alone does not
  // name a checkpoint: a job started again from checkpoint N (the restore
  // command, an upgrade) numbers its checkpoints from N + 1, as Flink's
  // CheckpointCoordinator.restoreSavepoint does, so the old job's N + 1 and
  // the new job's share an id. A checkpoint is its id and its trigger time:
  // the same id triggered later is the new job's, which replaces the old
  // job's entries from that id on; one triggered earlier is the old job's,
  // already replaced (an event that arrived late).
  upsertCheckpoint(stats) {
    const h = this.snap.checkpoints.history;
    const cp = this.cpById.get(stats.id);
    if (cp && cp.triggerTime === stats.triggerTime) {
      Object.assign(cp, stats);
      return;
    }
    if (cp && cp.triggerTime > stats.triggerTime) return;
    this.dropOldJob(stats.id, stats.triggerTime);
    const copy = { ...stats };
    h.push(copy);
    this.cpById.set(copy.id, copy);
  }

  // dropOldJob removes from the history the checkpoints with an id of at
  // least id triggered before at: within one job ids grow with trigger
  // time, so those are an earlier job's whose ids the current job reuses.
  dropOldJob(id, at) {
    const cv = this.snap.checkpoints;
    const old = (c) => c.id >= id && c.triggerTime < at;
    if (!cv.history.some(old)) return;
    cv.history = cv.history.filter((c) => !old(c));
    this.cpById = new Map(cv.history.map((c) => [c.id, c]));
  }

  addRestore(e) {
    const last = this.restores[this.restores.length - 1];
    const cp = e.restore.checkpoint;
    if (last && last.checkpoint === cp && Math.abs(e.at - last.at) < 2e9) return;
    this.restores.push({ at: e.at, checkpoint: cp });
  }

  operator(id) { return this.opById.get(id); }

  keyedOperators() { return this.snap.job.operators.filter((o) => o.keyed); }

  sourceOperator() { return this.snap.job.operators.find((o) => o.kind === 'source'); }
}

// ownersOf returns, per key group, the index of the subtask owning it.
export function ownersOf(op) {
  const owners = new Array(op.maxParallelism).fill(-1);
  for (const st of op.subtasks) {
    if (!st.keyGroups) continue;
    for (let g = st.keyGroups.start; g <= st.keyGroups.end; g++) owners[g] = st.index;
  }
  return owners;
}

// topoOrder lists operators so every edge goes left to right.
export function topoOrder(job) {
  const indeg = new Map(job.operators.map((o) => [o.id, 0]));
  for (const e of job.edges) indeg.set(e.to, indeg.get(e.to) + 1);
  const order = [];
  const left = new Set(job.operators.map((o) => o.id));
  while (left.size) {
    const ready = job.operators.filter((o) => left.has(o.id) && indeg.get(o.id) === 0);
    if (!ready.length) { order.push(...[...left]); break; }
    for (const o of ready) {
      order.push(o.id);
      left.delete(o.id);
      for (const e of job.edges) if (e.from === o.id) indeg.set(e.to, indeg.get(e.to) - 1);
    }
  }
  return order;
}
