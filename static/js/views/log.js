// The event log: every event in words, newest first, so what the pictures
// show can be read (by a screen reader too) and read again later. Records,
// barriers and other data-plane events are hidden unless asked for; status
// changes of many subtasks in one frame are told in one line.

import { h } from '../dom.js';
import { t, getLang, has } from '../i18n.js';
import { clock, dur, bytes, num } from '../format.js';

const MAX_ITEMS = 400;

const DETAIL = new Set(['records-sent', 'records-received', 'source-read', 'watermark', 'state-updated', 'sink-write',
  'barrier-sent', 'barrier-received', 'channel-blocked', 'channel-unblocked', 'checkpoint-acknowledged',
  'checkpoint-notified', 'txn-precommitted', 'flow', 'window-fired', 'checkpoint-triggered', 'checkpoint-subsumed']);

const GROUPED = new Set(['task-status', 'restore']);

export class LogView {
  constructor(root, toggleBox, model) {
    this.root = root;
    this.model = model;
    // Detail events are kept as data and drawn only while shown: at full
    // speed they are hundreds a second.
    this.detail = [];
    this.showDetail = toggleBox.checked;
    toggleBox.addEventListener('change', () => {
      this.showDetail = toggleBox.checked;
      this.root.classList.toggle('show-detail', this.showDetail);
      if (this.showDetail) for (const d of this.detail.splice(0)) this.add(d.at, 'detail', say(d.e), d.e.kind);
    });
    this.root.classList.toggle('show-detail', this.showDetail);
    this.lastSeed = null;
    this.newest = 0; // the latest job time logged
    this.hiding = false;
  }

  onChange(change) {
    if (change.type === 'snapshot') {
      const snap = this.model.snap;
      // A reset starts the job time again: nothing logged is 'later'.
      if (this.lastSeed !== null && snap.seed !== this.lastSeed) this.newest = 0;
      // Looking at a past step (the timeline): what happened later is hidden.
      const later = snap.at < this.newest;
      if (later || this.hiding) {
        this.hiding = later;
        for (const li of this.root.children) li.classList.toggle('later', later && Number(li.dataset.at) > snap.at);
      }
      if (this.lastSeed !== null && snap.seed !== this.lastSeed) {
        this.add(snap.at, 'main', t('log.reset', { seed: snap.seed }));
      } else if (this.lastSeed === null) {
        this.add(snap.at, 'main', t('log.joined', { job: snap.job.name, seed: snap.seed }));
      }
      this.lastSeed = snap.seed;
      return;
    }
    // Group status changes and restores of one frame.
    const groups = new Map();
    const lines = [];
    for (const e of change.events) {
      if (GROUPED.has(e.kind)) {
        const key = e.kind === 'task-status' ? `s|${e.status}` : `r|${e.restore?.checkpoint ?? 0}`;
        if (!groups.has(key)) {
          const g = { e, tasks: [] };
          groups.set(key, g);
          lines.push(g);
        }
        groups.get(key).tasks.push(e.task);
        continue;
      }
      lines.push({ e });
    }
    for (const l of lines) {
      const e = l.e;
      if (l.tasks && l.tasks.length > 1) {
        const tasks = l.tasks.join(', ');
        const s = e.kind === 'task-status'
          ? t('log.tasksStatus', { tasks, status: e.status })
          : e.restore?.checkpoint ? t('log.tasksRestored', { tasks, n: e.restore.checkpoint }) : t('log.tasksEmpty', { tasks });
        this.add(e.at, 'main', s, e.kind);
      } else if (DETAIL.has(e.kind)) {
        if (this.showDetail) this.add(e.at, 'detail', say(e), e.kind);
        else {
          this.detail.push({ at: e.at, e });
          if (this.detail.length > MAX_ITEMS) this.detail.splice(0, this.detail.length - MAX_ITEMS);
        }
      } else {
        this.add(e.at, 'main', say(e), e.kind);
      }
    }
  }

  add(at, cat, sentence, kind) {
    const li = h('li', { class: `${cat} ${kind ? `k-${kind}` : ''}`, dataset: { at: at || 0 } }, h('time', {}, clock(at || 0)), h('span', {}, sentence));
    this.newest = Math.max(this.newest, at || 0);
    this.root.prepend(li);
    while (this.root.childElementCount > MAX_ITEMS) this.root.lastElementChild.remove();
  }
}

// say tells one event in the page's language: the engine's own English
// sentence, or the catalogue's translation of it.
export function say(e) {
  const key = `ev.${e.kind}${variant(e)}`;
  if (getLang() === 'en' || !has(key)) return e.message;
  return t(key, {
    task: e.task, operator: e.operator, taskManager: e.taskManager, channel: e.channel, from: e.from, to: e.to,
    // Zero fields are left out of an event's JSON.
    records: num(e.records || 0), checkpoint: e.checkpoint ?? 0, status: e.status, previous: e.previous, partition: e.partition ?? 0,
    offset: e.offset ?? 0, watermark: e.watermark, key: e.key, window: e.window, value: e.value ?? 0, text: e.text,
    parallelism: e.parallelism, transaction: e.transaction,
    duration: e.stats ? dur(e.stats.endToEndDuration) : '', size: e.stats ? bytes(e.stats.checkpointedSize) : '',
    restoreCheckpoint: e.restore?.checkpoint ?? 0, command: e.command ? e.command.name : '',
    moved: e.rescale?.plan ? e.rescale.plan.moved.length : 0,
    kind: e.savepoint ? t('cp.savepoint') : t('cp.checkpoint'),
  });
}

function variant(e) {
  switch (e.kind) {
    case 'taskmanager': return `.${e.status}`;
    case 'restore': return e.restore?.checkpoint ? '' : '.empty';
    default: return '';
  }
}
