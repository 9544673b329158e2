// "What just happened": the story of the last thing the learner did, told
// step by step as the engine's events arrive — a crash and its failover, a
// rescale and its key-group moves, a checkpoint and its barriers. Nothing
// here is scripted: a step appears when its event does.

import { h, clear } from '../dom.js';
import { t } from '../i18n.js';
import { num, bytes, dur } from '../format.js';
import { cpFailureText } from './checkpoints.js';
import { keyGroupFor } from '../keygroups.js';

// byPresenter: on a classroom follower's screen (following, not in a fork
// of one's own) the presenter acted, not the viewer, so the story says who.
function byPresenter() {
  const room = document.getElementById('classroom');
  return !!room && room.dataset.role !== 'presenter' && room.dataset.mode === 'follow';
}

// ta translates a key whose text names who acted ("You crashed …").
function ta(key, args) { return t(byPresenter() ? `${key}.presenter` : key, args); }

// isSavepoint says whether completed checkpoint n is a savepoint.
function isSavepoint(snap, n) {
  return !!snap.checkpoints?.history?.find((c) => c.id === n)?.savepoint;
}

// failoverText says what a failover of failed (a subtask's name) restarts —
// its pipelined region or every subtask — and from what: the latest
// completed checkpoint, or nothing when none has completed; and the restart
// strategy.
function failoverText(snap, failed, whole) {
  const r = snap.job.restart;
  const strategy = r?.strategy || 'fixed-delay';
  if (strategy === 'none') return t(r?.default ? 'explain.failover.noRestartDefault' : 'explain.failover.noRestart');
  const attempts = strategy === 'fixed-delay' || r?.maxAttempts ? t('explain.failover.left', { left: snap.job.restartsLeft }) : '';
  const cp = snap.checkpoints?.counts?.completed > 0;
  const region = failed && !whole && regions(snap) > 1 ? regionOf(snap, failed) : null;
  if (region) return t(cp ? 'explain.failover.region' : 'explain.failover.regionNone', { task: failed, tasks: region.join(', '), strategy, attempts });
  return t(cp ? 'explain.failover' : 'explain.failover.none', { strategy, attempts });
}

// reactive says whether the job runs under the adaptive scheduler's
// reactive mode, which has no region failover: Flink's AdaptiveScheduler
// restarts the whole job on any failure, whatever the failover strategy.
function reactive(snap) { return snap.job.scheduler === 'reactive'; }

// regions counts the job's pipelined regions as Flink's region failover
// computes them: forward edges join subtask i of both ends, any other edge
// joins everything (one region). Reactive mode and failover full restart
// the whole job: one region as far as a failure goes.
function regions(snap) {
  const ops = snap.job.operators;
  if (!ops.length || reactive(snap) || snap.job.failover === 'full' || snap.job.edges.some((e) => e.partitioner !== 'forward')) return 1;
  return Math.max(...ops.map((o) => o.parallelism));
}

// regionOf lists the subtasks of failed's pipelined region in a job of
// forward edges only (regions(snap) > 1): subtask i of every operator.
function regionOf(snap, failed) {
  const i = Number(failed.split('#').pop());
  const out = [];
  for (const op of snap.job.operators) if (i < op.parallelism) out.push(`${op.id}#${i}`);
  return out.length ? out : null;
}

// wholeJobHere says why StateLab fails a job of several pipelined regions
// over as a whole where Flink's DefaultScheduler would restart only the
// failed subtask's region (docs/flink-fidelity.md): 'waiting' while a
// restarted region waits for slots, 'rescale' while a rescale's savepoint
// is taken or its new execution starts; '' otherwise. Once a rescale's
// savepoint has completed (phase stopping) Flink fails over globally too
// (StopWithSavepointTerminationHandlerImpl), and under the none strategy
// the job fails either way.
function wholeJobHere(snap) {
  if (regions(snap) <= 1 || snap.job.restart?.strategy === 'none') return '';
  if (snap.job.waitingForResources) return 'waiting';
  if (snap.job.rescale && snap.job.rescale.phase !== 'stopping') return 'rescale';
  return '';
}

// regionWaits says whether what waits for slots is a restarted pipelined
// region while the job's other subtasks run (not the whole job), under a
// strategy that restarts.
function regionWaits(snap) {
  return regions(snap) > 1 && snap.job.restart?.strategy !== 'none' &&
    snap.job.operators.some((o) => o.subtasks.some((st) => st.status === 'RUNNING'));
}

// failureText is a failed checkpoint's reason in the page's language.
function failureText(e) {
  return cpFailureText(e.stats?.failureReason || e.failureReason, e.stats?.failureMessage || e.message);
}

export class ExplainView {
  constructor(root, model, actions) {
    this.root = root;
    this.model = model;
    this.actions = actions;
    this.episode = null;
    this.previous = null;
    this.sawCheckpoint = false;
    this.dirty = true;
  }

  start(kind, title) {
    if (this.episode && !this.episode.done) this.episode.done = true;
    this.previous = this.episode;
    this.episode = { kind, title, steps: [], done: false, data: {} };
    this.dirty = true;
    return this.episode;
  }

  step(text, state = 'done', extra) {
    if (!this.episode) return;
    this.episode.steps.push({ text, state, extra });
    this.dirty = true;
  }

  // failureOf is the current failover episode a failure of cause started,
  // not yet named after the command that caused it.
  failureOf(cause) {
    const ep = this.episode;
    return ep && ep.kind === 'failover' && ep.data.cause === cause && !ep.data.titled ? ep : null;
  }

  active(kind) { return this.episode && !this.episode.done && this.episode.kind === kind ? this.episode : null; }

  onChange(change) {
    if (!this.model.ready) return;
    if (change.type === 'snapshot') {
      if (!change.previous || change.previous.seed !== this.model.snap.seed) {
        this.episode = null;
        this.previous = null;
        this.sawCheckpoint = false;
      }
      this.settle();
      this.followInject();
      this.dirty = true;
      return;
    }
    const snap = this.model.snap;
    for (const e of change.events) {
      switch (e.kind) {
        case 'command': {
          const c = e.command || {};
          const refused = / refused: /.test(e.message);
          if (refused) break;
          if (c.name === 'crash-subtask') {
            // The engine reports the failure before the command that caused
            // it: adopt the episode the failure started.
            // (also when the failure already ended it: a job that failed for good).
            let ep = this.failureOf(c.task);
            if (ep) {
              ep.title = ta('explain.crashSubtask.title', { task: c.task });
              ep.steps.unshift({ text: t('explain.crashSubtask.step', { task: c.task }), state: 'bad' });
              ep.data.titled = true;
              this.dirty = true;
            } else {
              ep = this.start('failover', ta('explain.crashSubtask.title', { task: c.task }));
              ep.data.cause = c.task;
              ep.data.titled = true;
              this.step(t('explain.crashSubtask.step', { task: c.task }), 'bad');
            }
          } else if (c.name === 'crash-taskmanager') {
            const ep = this.failureOf(c.taskManager);
            if (ep) {
              ep.data.titled = true;
              ep.title = ta('explain.crashTm.title', { tm: c.taskManager });
              this.dirty = true;
            }
          } else if (c.name === 'trigger-savepoint' || c.name === 'trigger-checkpoint') {
            const ep = this.start('checkpoint', ta(c.name === 'trigger-savepoint' ? 'explain.savepoint.title' : 'explain.checkpoint.title'));
            ep.data.manual = true;
          } else if (c.name === 'add-taskmanager') {
            if (!this.active('rescale') && !this.active('failover')) this.start('cluster', t('explain.addTm.title'));
          } else if (c.name === 'inject') {
            const ep = this.active('inject');
            if (!ep || ep.data.text !== c.text) {
              this.start('inject', ta('explain.inject.title', { text: c.text })).data.text = c.text;
            }
          }
          break;
        }
        case 'taskmanager':
          if (e.status === 'LOST') {
            const ep = this.start('failover', t('explain.tmLost.title', { tm: e.taskManager }));
            // Which subtasks died with it: the failures reported in this
            // frame, else the subtasks placed on it (the snapshot may already
            // show them gone).
            const names = new Set(change.events.filter((x) => x.kind === 'task-failed' && x.taskManager === e.taskManager).map((x) => x.task));
            if (!names.size) {
              for (const op of snap.job.operators) for (const st of op.subtasks) if (st.taskManager === e.taskManager) names.add(st.name);
            }
            const tasks = names.size ? [...names].join(', ') : t('explain.none');
            ep.data.cause = e.taskManager;
            this.step(t('explain.tmLost.step', { tm: e.taskManager, tasks }), 'bad');
            if (snap.backend === 'pebble') this.step(t('explain.tmLost.disk'), 'bad');
            // Region failover restarts only the lost subtasks' regions;
            // reactive mode restarts the whole job; StateLab restarts the
            // whole job too while a region waits or a rescale is under way.
            const whole = names.size ? wholeJobHere(snap) : '';
            if (whole) {
              ep.data.whole = true;
              this.step(t(`explain.simplified.wholeJob.${whole}`, { tasks: [...new Set([...names].flatMap((n) => regionOf(snap, n) || []))].join(', ') }), 'simplified');
            } else if (regions(snap) > 1) {
              this.step(t('explain.tmLost.regions'));
              ep.data.region = [...new Set([...names].flatMap((n) => regionOf(snap, n) || []))];
            } else if (reactive(snap)) this.step(t('explain.reactiveRestart'));
            // How the JobManager noticed: Flink's heartbeat rule when the
            // job sets heartbeat.interval, else where StateLab differs from
            // Flink here, and why (docs/flink-fidelity.md).
            const hb = snap.job.heartbeat;
            if (hb?.interval > 0) {
              const args = { interval: dur(hb.interval), timeout: dur(hb.timeout), threshold: hb.rpcFailureThreshold };
              this.step(t(hb.rpcFailureThreshold > 0 ? 'explain.tmLost.heartbeatRule' : 'explain.tmLost.heartbeatTimeoutOnly', args));
              // A subtask elsewhere reading from a lost one over the network
              // fails first on Flink (its connection closes); not modelled.
              const tmOf = (name) => this.model.tasks.get(name)?.st.taskManager;
              const readers = [...new Set((snap.channels || []).filter((ch) => names.has(ch.from) && tmOf(ch.to) && tmOf(ch.to) !== e.taskManager).map((ch) => ch.to))];
              if (readers.length) this.step(t('explain.simplified.heartbeatNetwork', { readers: readers.join(', ') }), 'simplified');
            } else {
              this.step(t('explain.simplified.heartbeat'), 'simplified');
            }
          } else {
            this.step(t('explain.tmJoined', { tm: e.taskManager }));
          }
          break;
        case 'task-failed': {
          let ep = this.active('failover');
          // A subtask failing while a restarted region waits for slots (or
          // a rescale is under way) is a failure of its own: its story.
          const whole = ep?.data.whole ? '' : wholeJobHere(snap);
          if (ep && whole && ep.data.cause !== e.task) ep = null;
          if (!ep) {
            ep = this.start('failover', t('explain.taskFailed.title', { task: e.task }));
            ep.data.cause = e.task;
          }
          if (!ep.data.failed) {
            ep.data.failed = true;
            if (!whole && regions(snap) > 1 && snap.job.restart?.strategy !== 'none') ep.data.region = regionOf(snap, e.task);
            this.step(failoverText(snap, e.task, !!whole), 'work');
            if (whole) {
              ep.data.whole = true;
              // Where StateLab differs from Flink here (docs/flink-fidelity.md).
              this.step(t(`explain.simplified.wholeJob.${whole}`, { tasks: (regionOf(snap, e.task) || [e.task]).join(', ') }), 'simplified');
            }
            if (reactive(snap) && snap.job.restart?.strategy !== 'none') this.step(t('explain.reactiveRestart'));
          }
          break;
        }
        case 'waiting-resources': {
          const ep = this.episode && !this.episode.done ? this.episode : this.start('cluster', t('explain.waiting.title'));
          if (!ep.data.waiting) {
            ep.data.waiting = true;
            // Told when the wait began: the subtasks' statuses change as
            // the events of a later failover arrive.
            ep.data.regionWaiting = regionWaits(snap);
            // The figures come from the snapshot that follows this event.
            this.step(() => t('explain.waiting.step', { need: this.model.snap.job.slotsNeeded, have: this.model.snap.job.slotsAvailable }), 'wait', 'add-tm');
            // A standalone Flink past its start-up time would not wait
            // (docs/flink-fidelity.md, conformance slot-request-timeout).
            this.step(t('explain.simplified.slotWait'), 'simplified');
          }
          break;
        }
        case 'restore': {
          const ep = this.episode && !this.episode.done ? this.episode : null;
          if (!ep || !e.restore) break;
          const cp = e.restore.checkpoint;
          if (!ep.data.restoreTold) {
            ep.data.restoreTold = true;
            ep.data.restoredFrom = cp;
            if (cp) {
              const sp = ep.kind === 'rescale' || isSavepoint(snap, cp);
              // A region failover restores the failed subtask's region only.
              const key = sp ? 'explain.restore.savepoint' : ep.data.region ? 'explain.restore.region' : 'explain.restore.checkpoint';
              this.step(t(key, { n: cp, tasks: ep.data.region?.join(', ') }));
            } else {
              this.step(t('explain.restore.empty'), 'bad');
            }
          }
          if (e.restore.offsets && e.restore.offsets.length && cp) {
            const offs = e.restore.offsets.map((o) => `p${o.partition}@${num(o.offset)}`).join(', ');
            this.step(t('explain.restore.offsets', { task: e.task, offsets: offs }));
          }
          break;
        }
        case 'job-status': {
          const ep = this.episode && !this.episode.done ? this.episode : null;
          if (!ep) break;
          if (e.status !== 'RUNNING') ep.data.down = true;
          // The waiting region's slot request timed out: StateLab fails
          // the whole job over, Flink only that region (docs/flink-fidelity.md).
          if (e.status === 'RESTARTING' && /NoResourceAvailableException/.test(e.message || '') && !ep.data.slotTimeoutTold && ep.data.regionWaiting) {
            ep.data.slotTimeoutTold = true;
            this.step(t('explain.simplified.wholeJob.slotTimeout'), 'simplified');
          }
          if (e.status === 'FAILED') {
            // The engine's message is Flink's exception text, kept as it is
            // (English, as Flink's): it hangs under the step as its detail.
            this.step(t('explain.jobFailed'), 'bad');
            if (e.message) this.step(e.message, 'detail');
            // Flink's way out: start the job again from a retained checkpoint.
            if (snap.checkpoints?.retained?.length) this.step(t('explain.jobFailed.restore'), 'wait', 'restore');
            ep.done = true;
          }
          break;
        }
        case 'task-status': {
          // A failover is over only after it was seen: the snapshot this
          // batch of events follows can still say every subtask runs.
          const ep = this.episode && !this.episode.done ? this.episode : null;
          if (ep && e.status && e.status !== 'RUNNING') ep.data.down = true;
          break;
        }
        case 'restore-requested': {
          const sp = isSavepoint(snap, e.checkpoint) || snap.checkpoints?.retained?.find((c) => c.id === e.checkpoint)?.savepoint;
          this.start('failover', ta(sp ? 'explain.restoreCmd.titleSp' : 'explain.restoreCmd.title', { n: e.checkpoint }));
          this.episode.data.failed = true;
          this.step(t(sp ? 'explain.restoreCmd.stepSp' : 'explain.restoreCmd.step', { n: e.checkpoint, records: num(e.records || 0), value: num(e.value || 0) }), 'work');
          this.step(t('explain.restoreCmd.ids', { n: e.checkpoint, next: e.checkpoint + 1 }));
          this.step(t('explain.simplified.restoreIds', { n: e.checkpoint }), 'simplified');
          break;
        }
        case 'restore-failed': {
          const ep = this.episode && !this.episode.done ? this.episode : this.start('failover', t('explain.restoreFailed.title'));
          ep.data.failed = true;
          this.step(t('explain.restoreFailed.step', { n: e.checkpoint || t('explain.latest') }), 'bad');
          if (e.message) this.step(e.message, 'detail');
          if (!ep.data.restoreChecksFirst) {
            ep.data.restoreChecksFirst = true;
            this.step(t('explain.simplified.restoreChecksFirst'), 'simplified');
          }
          break;
        }
        case 'record-injected': {
          // The command's event may come after this one: start the story here.
          let ep = this.active('inject');
          if (!ep || ep.data.offset !== undefined) {
            ep = this.start('inject', ta('explain.inject.title', { text: e.text }));
            ep.data.text = e.text;
          }
          // Zero fields are left out of the event's JSON.
          ep.data.op = e.operator;
          ep.data.partition = e.partition ?? 0;
          ep.data.offset = e.offset ?? 0;
          this.step(t('explain.inject.step', { op: e.operator, p: ep.data.partition, offset: num(ep.data.offset) }));
          // How many records the source reads before it: live while it waits.
          this.step(() => {
            const ahead = this.injectAhead(ep);
            return ahead > 0 ? t('explain.inject.behind', { n: num(ahead), p: ep.data.partition }) : t('explain.inject.next', { p: ep.data.partition });
          }, 'wait');
          this.rememberCounts(ep);
          break;
        }
        case 'rescale-started': {
          const from = e.value || this.model.operator(e.operator)?.parallelism;
          // A rescale started while one is under way is that one changed: its
          // new execution waited for slots, and the engine resubmits it from
          // the same savepoint (engine's replanRescale).
          const waited = this.active('rescale')?.data.savepoint || 0;
          const ep = this.start('rescale', t('explain.rescale.title', { op: e.operator, from, to: e.parallelism }));
          if (waited) {
            ep.data.savepoint = waited;
            this.step(t('explain.simplified.rescaleWaiting', { n: waited, p: e.parallelism }), 'simplified');
          } else {
            this.step(t('explain.rescale.step1', { op: e.operator }), 'work');
          }
          break;
        }
        case 'rescale-plan': {
          if (!this.active('rescale') || !e.rescale) break;
          const r = e.rescale;
          if (r.plan) {
            this.step(t('explain.rescale.plan', { moved: r.plan.moved.length, max: r.plan.maxParallelism, from: r.plan.from, to: r.plan.to }));
            for (const sa of r.plan.subtasks) {
              const reads = sa.reads.map((rd) => t('explain.rescale.read', { op: r.operator, i: rd.oldSubtask, start: rd.range.start, end: rd.range.end })).join('; ');
              this.step(t('explain.rescale.subtask', { op: r.operator, i: sa.subtask, start: sa.range.start, end: sa.range.end, reads }), 'detail');
            }
          }
          if (r.operatorState && r.operatorState.length) {
            r.operatorState.forEach((m, i) => {
              for (const [name, items] of Object.entries(m)) {
                this.step(t('explain.rescale.opstate', { op: r.operator, i, name, items: items.join(', ') || '–' }), 'detail');
              }
            });
          }
          break;
        }
        case 'rescale-completed':
          if (this.active('rescale')) {
            this.step(t('explain.rescale.done', { op: e.operator, p: e.parallelism }), 'good');
            this.episode.done = true;
          }
          break;
        case 'rescale-failed':
          if (this.active('rescale')) {
            this.step(t('explain.rescale.failed'), 'bad');
            if (e.message) this.step(e.message, 'detail');
            this.episode.done = true;
          }
          break;
        case 'checkpoint-triggered': {
          let ep = this.active('checkpoint');
          if (!ep && !this.sawCheckpoint && (!this.episode || this.episode.done)) {
            // Joined mid-run (a reload, a follower): the first one seen is not the first.
            const title = e.checkpoint <= 1 ? t('explain.firstCheckpoint.title') : t(e.savepoint ? 'explain.spSeen.title' : 'explain.cpSeen.title', { n: e.checkpoint });
            ep = this.start('checkpoint', title);
          }
          this.sawCheckpoint = true;
          if (ep && !ep.data.id) {
            ep.data.id = e.checkpoint;
            ep.data.savepoint = !!e.savepoint;
            // With aligned-checkpoint-timeout a checkpoint starts aligned
            // and may switch; StateLab simplifies where it switches.
            const cv = this.model.snap?.checkpoints;
            const ato = !e.savepoint && cv?.unaligned ? cv.alignedCheckpointTimeout || 0 : 0;
            this.step(t(e.savepoint ? 'explain.cp.triggeredSp' : ato ? 'explain.cp.triggeredAlignedTimeout' : cv?.unaligned ? 'explain.cp.triggeredUnaligned' : 'explain.cp.triggered', { n: e.checkpoint, d: dur(ato) }));
            if (ato) this.step(t('explain.simplified.alignedTimeout', { d: dur(ato) }), 'simplified');
          }
          break;
        }
        case 'channel-blocked': {
          const ep = this.active('checkpoint');
          if (ep && ep.data.id === e.checkpoint && !ep.data.aligned) {
            ep.data.aligned = true;
            this.step(t('explain.cp.align', { task: e.task, channel: e.channel, n: e.checkpoint }));
          }
          break;
        }
        case 'checkpoint-completed': {
          const ep = this.active('checkpoint');
          if (ep && ep.data.id === e.checkpoint) {
            const st = e.stats || {};
            this.step(t(st.savepoint ? 'explain.sp.done' : 'explain.cp.done', { n: e.checkpoint, acked: st.acknowledged, total: st.total, d: dur(st.endToEndDuration), size: bytes(st.checkpointedSize) }), 'good');
            ep.data.completed = true;
            // A savepoint commits nothing on its own story: it ends here.
            if (st.savepoint && ep.data.manual) ep.done = true;
          }
          const rs = this.active('rescale');
          if (rs && e.stats?.savepoint) {
            rs.data.savepoint = e.checkpoint;
            this.step(t('explain.rescale.savepoint', { n: e.checkpoint }));
          }
          break;
        }
        case 'txn-committed': {
          const ep = this.active('checkpoint');
          if (ep && ep.data.completed && !ep.data.committed) {
            ep.data.committed = true;
            this.step(t('explain.cp.commit', { task: e.task, records: num(e.records) }), 'good');
            ep.done = true;
          }
          break;
        }
        case 'checkpoint-aborted': {
          const ep = this.active('checkpoint');
          if (ep && ep.data.id === e.checkpoint) {
            this.step(t(ep.data.savepoint ? 'explain.sp.aborted' : 'explain.cp.aborted', { n: e.checkpoint, message: failureText(e) }), 'bad');
            ep.done = true;
          }
          break;
        }
      }
    }
    this.settle();
  }

  // injectAhead is how many records of the line's partition the source has
  // still to read before the typed line (-1 once it has read it).
  injectAhead(ep) {
    const sv = this.model.snap.sources.find((x) => x.operator === ep.data.op);
    const p = sv?.partitions.find((x) => x.partition === ep.data.partition);
    if (!p) return 0;
    return p.offset > ep.data.offset ? -1 : ep.data.offset - p.offset;
  }

  // followInject ends the typed line's story once its source has read it.
  followInject() {
    const ep = this.active('inject');
    if (ep && ep.data.follow) { this.followCount(ep); return; }
    if (!ep || ep.data.read || ep.data.offset === undefined || this.injectAhead(ep) >= 0) return;
    const wait = ep.steps.find((st) => typeof st.text === 'function');
    if (wait) { wait.text = t('explain.inject.waited'); wait.state = 'done'; }
    const sv = this.model.snap.sources.find((x) => x.operator === ep.data.op);
    const p = sv?.partitions.find((x) => x.partition === ep.data.partition);
    const owner = p && p.owner >= 0 ? `${ep.data.op}#${p.owner}` : ep.data.op;
    this.step(t('explain.inject.read', { task: owner, p: ep.data.partition, offset: num(ep.data.offset) }), 'good');
    ep.data.read = true;
    if (!this.followKeyed(ep)) ep.done = true;
  }

  // injectPath finds where a typed line's records are keyed: through a
  // tokenizer (one record per word, lower-cased, split at white space, as
  // the engine's tokenize) or straight from the source (keyed by the line),
  // along a hash edge to a keyed operator; and the sink after it. Null when
  // the job does something else on the way.
  injectPath(ep) {
    const snap = this.model.snap;
    const out = (id) => snap.job.edges.filter((e) => e.from === id);
    const op = (id) => snap.job.operators.find((o) => o.id === id);
    let keys = [ep.data.text];
    let at = ep.data.op;
    let edges = out(at);
    if (edges.length === 1 && edges[0].partitioner !== 'hash' && op(edges[0].to)?.kind === 'tokenizer') {
      keys = ep.data.text.split(/[ \t\n\r]+/).filter((w) => w !== '').map((w) => w.toLowerCase());
      at = edges[0].to;
      edges = out(at);
    }
    if (edges.length !== 1 || edges[0].partitioner !== 'hash') return null;
    const keyed = op(edges[0].to);
    if (!keyed || !keyed.keyed) return null;
    const next = out(keyed.id);
    const sink = next.length === 1 && op(next[0].to)?.kind === 'sink' ? op(next[0].to) : null;
    return { keys, keyed, sink, forward: next.length === 1 && next[0].partitioner === 'forward' };
  }

  // owners says, for each key, its key group and the subtask of the keyed
  // operator whose range holds it now (as the key-group strip computes it).
  owners(keyed, keys) {
    const out = [];
    for (const key of [...new Set(keys)]) {
      const kg = keyGroupFor(key, keyed.maxParallelism);
      const st = keyed.subtasks.find((s) => s.keyGroups && s.keyGroups.start <= kg && kg <= s.keyGroups.end);
      out.push({ key, kg, task: st ? st.name : `${keyed.id}#?`, times: keys.filter((k) => k === key).length });
    }
    return out;
  }

  // countOf reads a key's value from its subtask's keyed state (the state
  // inspector's endpoint, one key group); undefined when the key has none.
  async countOf(o) {
    const r = await fetch(`/api/sessions/${encodeURIComponent(this.model.snap.session)}/tasks/${encodeURIComponent(o.task)}/state?keyGroup=${o.kg}`);
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    const body = await r.json();
    const e = (body.keyed || []).find((x) => x.key === o.key);
    return e ? Number(e.value) : 0;
  }

  // rememberCounts keeps each key's count as it was when the line was typed.
  rememberCounts(ep) {
    const path = this.injectPath(ep);
    if (!path || path.keyed.kind !== 'count' || !this.model.snap.session) return;
    const owners = this.owners(path.keyed, path.keys);
    ep.data.before = {};
    for (const o of owners) this.countOf(o).then((n) => { if (ep.data.before) ep.data.before[o.key] = n; }).catch(() => {});
  }

  // followKeyed goes on with the line's story after the source read it: the
  // keyed operator each record goes to, its count rising in that subtask's
  // state, then the sink that writes the new counts and the checkpoint that
  // commits them. False when the job's shape is not one it can follow.
  followKeyed(ep) {
    const path = this.injectPath(ep);
    if (!path) return false;
    if (path.keys.length === 0) {
      this.step(t('explain.inject.noWords', { op: path.keyed.id }), 'good');
      return false;
    }
    const owners = this.owners(path.keyed, path.keys);
    this.step(t('explain.inject.keyBy', { op: path.keyed.id, routes: owners.map((o) => t('explain.inject.route', { key: o.key, kg: o.kg, task: o.task })).join('; ') }));
    if (path.keyed.kind !== 'count' || !ep.data.before) return false;
    ep.data.follow = { phase: 'count', path, owners, polled: 0 };
    this.step(t('explain.inject.counting', { op: path.keyed.id }), 'wait');
    ep.data.follow.wait = ep.steps[ep.steps.length - 1];
    return true;
  }

  // followCount is called with every snapshot while a line is followed.
  followCount(ep) {
    const f = ep.data.follow;
    const snap = this.model.snap;
    if (f.phase === 'count') {
      if (f.busy || Date.now() - f.polled < 1000) return;
      f.busy = true;
      f.polled = Date.now();
      const owners = this.owners(snap.job.operators.find((o) => o.id === f.path.keyed.id) || f.path.keyed, f.path.keys);
      Promise.all(owners.map((o) => this.countOf(o).then((n) => ({ ...o, now: n }))))
        .then((got) => {
          if (ep.done || f.phase !== 'count') return;
          if (!got.every((o) => o.now >= (ep.data.before[o.key] ?? 0) + o.times)) return;
          f.wait.state = 'done';
          this.step(t('explain.inject.counted', { counts: got.map((o) => t('explain.inject.count', { task: o.task, key: o.key, value: num(o.now), before: num(ep.data.before[o.key] ?? 0) })).join('; ') }), 'good');
          const sink = f.path.sink;
          if (!sink) { ep.done = true; this.dirty = true; return; }
          const eo = snap.sinks.find((x) => x.operator === sink.id)?.semantics !== 'at-least-once';
          const tasks = f.path.forward ? [...new Set(got.map((o) => o.task.replace(`${f.path.keyed.id}#`, `${sink.id}#`)))].join(', ') : sink.id;
          if (!eo) {
            this.step(t('explain.inject.sinkAlo', { op: f.path.keyed.id, sink: tasks }), 'good');
            ep.done = true;
          } else {
            this.step(t('explain.inject.sinkEo', { op: f.path.keyed.id, sink: tasks }), 'wait');
            f.wait = ep.steps[ep.steps.length - 1];
            f.after = Math.max(0, ...this.model.snap.checkpoints.history.map((c) => c.id));
            f.sink = tasks;
            f.phase = 'sink';
          }
          this.dirty = true;
        })
        .catch(() => {})
        .finally(() => { f.busy = false; });
    } else if (f.phase === 'sink') {
      const cp = snap.checkpoints.history.find((c) => c.id > f.after && c.status === 'COMPLETED');
      if (!cp) return;
      f.wait.state = 'done';
      this.step(t('explain.inject.committed', { n: cp.id, sink: f.sink }), 'good');
      f.phase = 'done';
      ep.done = true;
    }
  }

  // settle ends a failover once every subtask runs again: the job turns
  // RUNNING before its subtasks restore, so the job status alone is early.
  settle() {
    const ep = this.episode;
    if (!ep || ep.done || (ep.kind !== 'failover' && ep.kind !== 'cluster') || !ep.steps.length) return;
    if (!ep.data.failed && !ep.data.waiting) return;
    const snap = this.model.snap;
    const running = snap.job.status === 'RUNNING' && snap.job.operators.every((o) => o.subtasks.every((st) => st.status === 'RUNNING'));
    if (!running) { ep.data.down = true; return; }
    // Events run ahead of snapshots: a failure's events can arrive while
    // the latest snapshot still shows every subtask running. Running
    // again needs the failure seen first (an event or a snapshot).
    if (!ep.data.down) return;
    const sem = snap.sinks[0]?.semantics === 'at-least-once' ? 'alo' : 'eo';
    let key = 'explain.running.plain';
    if (ep.data.restoreTold) key = ep.data.restoredFrom ? `explain.running.${sem}` : `explain.running.empty.${sem}`;
    this.step(t(key), 'good');
    ep.done = true;
  }

  render() {
    if (!this.dirty || !this.model.ready) return;
    this.dirty = false;
    const parts = [];
    const snap = this.model.snap;
    const read = snap.sources.length > 0 && snap.sources.every((sv) => sv.partitions.every((p) => p.offset >= p.end));
    // A fork says what it is a copy of, above whatever happens in it.
    if (this.fork && !this.timeline?.viewing()) {
      parts.push(h('p', { class: 'intro fork-note' }, t(this.fork.step ? 'explain.fork.step' : 'explain.fork.present', { step: this.fork.step })));
    }
    if (this.timeline?.viewing()) {
      parts.push(this.renderPast());
    } else if (!this.episode && this.fork) {
      parts.push(h('p', { class: 'hint' }, t('explain.try')));
    } else if (!this.episode) {
      const tmpl = this.model.snap.template || '';
      parts.push(h('p', { class: 'intro' }, t(`explain.intro.${tmpl.startsWith('lesson:') ? 'lesson' : tmpl || 'wordcount'}`)));
      parts.push(h('p', { class: 'hint' }, ta('explain.try')));
    } else {
      parts.push(this.renderEpisode(this.episode, true));
      // The earlier episode stays open across redraws once the learner opened it.
      if (this.previous) {
        parts.push(h('details', { class: 'previous', open: this.previousOpen, ontoggle: (ev) => { this.previousOpen = ev.target.open; } },
          h('summary', {}, this.previous.title), this.renderEpisode(this.previous, false)));
      }
    }
    if (read && snap.job.status === 'RUNNING') parts.push(h('p', { class: 'note-end' }, t('explain.inputRead')));
    clear(this.root).append(...parts);
  }

  // renderPast tells what the panels show while the timeline looks at a past
  // step: the run as it was then, from the snapshot of that step.
  renderPast() {
    const snap = this.model.snap;
    const ol = h('ol', { class: 'story' });
    const li = (text, state = 'done') => ol.append(h('li', { class: `st-${state}` }, text));
    li(t('explain.past.where', { step: snap.step, head: this.timeline.head() }));
    const down = [];
    for (const op of snap.job.operators) for (const st of op.subtasks) if (st.status !== 'RUNNING') down.push(`${st.name} ${st.status}`);
    li(down.length ? t('explain.past.notRunning', { status: snap.job.status, tasks: down.join(', ') }) : t('explain.past.running', { status: snap.job.status }), down.length ? 'bad' : 'good');
    const lost = snap.taskManagers.filter((tm) => tm.status === 'LOST').map((tm) => tm.id);
    if (lost.length) li(t('explain.past.lost', { tms: lost.join(', ') }), 'bad');
    li(t('explain.past.parallelism', { ops: snap.job.operators.map((o) => `${o.id} ${o.parallelism}`).join(' · ') }));
    const done = snap.checkpoints.history.filter((c) => c.status === 'COMPLETED');
    const last = done[done.length - 1];
    li(last ? t(last.savepoint ? 'explain.past.savepoint' : 'explain.past.checkpoint', { n: last.id, count: snap.checkpoints.counts.completed }) : t('explain.past.noCheckpoint'));
    const marks = (this.timeline.tl.markers || []).filter((m) => m.step <= snap.step);
    const m = marks[marks.length - 1];
    if (m) li(t('explain.past.lastMark', { kind: t(`timeline.marker.${m.kind}`), step: m.step }));
    li(t('explain.past.back'));
    return h('div', { class: 'episode past' }, h('h3', {}, t('explain.past.title', { step: snap.step })), ol);
  }

  renderEpisode(ep, current) {
    const ol = h('ol', { class: 'story' });
    let last = null;
    let sub = null;
    for (const st of ep.steps) {
      if (st.state === 'detail' && last) {
        // Details (one line per subtask) hang under the step they explain.
        if (!sub) { sub = h('ul', { class: 'story-detail' }); last.append(sub); }
        sub.append(h('li', {}, st.text));
        continue;
      }
      sub = null;
      if (typeof st.text === 'function') {
        // A step whose figures come with a later snapshot: live while the
        // job waits, frozen afterwards.
        const waiting = this.model.snap.job.waitingForResources;
        if (waiting) {
          st.sawWaiting = true;
          st.shown = st.text();
        } else if (st.sawWaiting) {
          st.text = st.shown; // the figures of the wait, kept
        } else {
          st.shown = st.text();
        }
      }
      const li = h('li', { class: `st-${st.state}` }, typeof st.text === 'function' ? st.shown : st.text);
      if (st.extra === 'add-tm' && current && this.model.snap.job.waitingForResources) {
        li.append(' ', h('button', { type: 'button', class: 'button mini primary', onclick: () => this.actions.addTM() }, t('controls.addTaskManager')));
      }
      const retained = this.model.snap.checkpoints?.retained || [];
      const latest = retained[retained.length - 1];
      if (st.extra === 'restore' && this.model.snap.job.status === 'FAILED' && latest && this.actions.restore) {
        li.append(' ', h('button', { type: 'button', class: 'button mini primary restore-button', dataset: { checkpoint: latest.id }, onclick: () => this.actions.restore(latest.id) },
          t(latest.savepoint ? 'explain.restoreButtonSp' : 'explain.restoreButton', { n: latest.id })));
      }
      ol.append(li);
      last = li;
    }
    if (current && !ep.done) ol.append(h('li', { class: 'st-pending' }, t('explain.waitingFor')));
    return h('div', { class: `episode ${ep.kind}` }, current ? h('h3', {}, ep.title) : null, ol);
  }
}
