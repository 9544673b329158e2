// The state inspector: the keyed state (key, key group, value), operator
// state (e.g. source partition -> offset) and backend figures of one
// subtask. The full view comes from the server; state writes arriving as
// events update the rows in between, so values tick as records are counted.

import { h, clear, text, reducedMotion } from '../dom.js';
import { t } from '../i18n.js';
import { num, bytes } from '../format.js';
import { ownerColor } from '../palette.js';

const PAGE = 200;

export class InspectorView {
  constructor(root, select, model, api) {
    this.root = root;
    this.select = select;
    this.model = model;
    this.api = api; // {taskState(task) -> Promise<answer>}
    this.task = null;
    this.data = null;
    this.rows = new Map(); // state|key|window -> {tr, value td}
    this.shown = PAGE;
    this.filter = '';
    this.lastFetch = 0;
    this.fetching = false;
    this.optionsKey = '';
    // The rows on screen: only those flash when their value changes (a
    // row scrolled away, or a panel below the fold, would animate unseen).
    this.onScreen = new Set();
    this.watch = typeof IntersectionObserver === 'function'
      ? new IntersectionObserver((entries) => {
        for (const e of entries) {
          if (e.isIntersecting) this.onScreen.add(e.target); else this.onScreen.delete(e.target);
        }
      })
      : null;
    select.addEventListener('change', () => this.show(select.value));
  }

  show(task) {
    if (this.task === task && this.data) return;
    this.task = task;
    this.select.value = task;
    this.data = null;
    this.shown = PAGE;
    this.fetch();
  }

  onChange(change) {
    if (!this.model.ready) return;
    if (change.type === 'snapshot') {
      this.syncOptions();
      if (!this.task || !this.model.tasks.has(this.task)) {
        const keyed = this.model.keyedOperators()[0];
        this.show(keyed ? keyed.subtasks[0]?.name : this.model.snap.job.operators[0].subtasks[0]?.name);
      } else if (performance.now() - this.lastFetch > 3000) {
        this.fetch();
      }
      this.renderHead();
      return;
    }
    for (const e of change.events) {
      if (e.kind === 'state-updated' && e.task === this.task && e.updates) {
        for (const u of e.updates) this.applyUpdate(u);
      }
      if ((e.kind === 'restore' && e.task === this.task) || (e.kind === 'task-status' && e.task === this.task && e.status === 'RUNNING')) {
        this.fetch();
      }
    }
  }

  syncOptions() {
    const ops = this.model.snap.job.operators;
    const key = ops.map((o) => o.id + o.parallelism).join();
    if (key === this.optionsKey) return;
    this.optionsKey = key;
    clear(this.select);
    for (const op of ops) {
      const g = h('optgroup', { label: `${op.id} (${t(`kind.${op.kind}`)})` });
      for (const st of op.subtasks) g.append(h('option', { value: st.name }, st.name));
      this.select.append(g);
    }
    if (this.task) this.select.value = this.task;
  }

  async fetch() {
    if (!this.task || this.fetching) return;
    this.fetching = true;
    this.lastFetch = performance.now();
    const task = this.task;
    // At full speed only a RUNNING subtask answers (a fork or a restart is
    // still deploying): wait for its task-status event instead of asking.
    const tk = this.model.tasks.get(task);
    if (tk && tk.st.status !== 'RUNNING' && this.model.snap.driver === 'live') {
      this.fetching = false;
      if (!this.data) clear(this.root).append(h('p', { class: 'empty' }, t('inspector.notRunning', { task, status: tk.st.status })));
      return;
    }
    try {
      const d = await this.api.taskState(task);
      if (task === this.task) { this.data = d; this.renderAll(); }
    } catch (err) {
      if (task === this.task) clear(this.root).append(h('p', { class: 'empty' }, err.message || String(err)));
    } finally {
      this.fetching = false;
    }
  }

  applyUpdate(u) {
    const r = this.rows.get(`${u.state}|${u.key}|${u.window || ''}`);
    if (r) {
      text(r.value, String(u.value));
      // The row flashes by fading a highlight behind it (.flash): an
      // opacity animation runs on the compositor, where one of the row's
      // background redrew and restyled the page every frame (half the main
      // thread of a live word count's page). Web Animations restart without
      // forcing a layout per row.
      r.anim?.cancel();
      if ((this.watch && !this.onScreen.has(r.tr)) || reducedMotion()) return;
      r.anim = r.flash.animate([{ opacity: 1 }, { opacity: 0 }], { duration: 800, easing: 'ease-out' });
    } else if (this.data && !this.data.truncated) {
      // A new key: refetch soon rather than guess its place.
      if (performance.now() - this.lastFetch > 1000) this.fetch();
    }
  }

  renderHead() {
    if (!this.head || !this.task) return;
    const tk = this.model.tasks.get(this.task);
    if (!tk) return;
    const st = tk.st;
    const m = st.state;
    const items = [
      [t('inspector.status'), st.status],
      [t('inspector.taskManager'), st.taskManager || '–'],
      [t('inspector.restoredFrom'), st.restoredFrom ? t('inspector.checkpointN', { n: st.restoredFrom }) : t('inspector.fresh')],
    ];
    if (st.keyGroups) items.push([t('term.keyGroups'), `${st.keyGroups.start}–${st.keyGroups.end}`]);
    if (m) {
      items.push([t('inspector.backend'), t(`backendKind.${m.kind}`)]);
      items.push([t('inspector.keys'), num(m.keys)]);
      items.push([t('inspector.bytes'), bytes(m.bytes)]);
      items.push([t('inspector.localDisk'), bytes(m.localDiskBytes)]);
      if (m.lastCheckpointId) items.push([t('inspector.lastCheckpoint'), `${m.lastCheckpointId} · ${bytes(m.lastCheckpointUploaded)}${m.lastCheckpointIncremental ? ` (${t('inspector.incremental')})` : ''}`]);
    }
    clear(this.head);
    for (const [k, v] of items) this.head.append(h('div', {}, h('dt', {}, k), h('dd', {}, v)));
  }

  renderAll() {
    const d = this.data;
    this.rows.clear();
    this.head = h('dl', { class: 'figures' });
    const parts = [this.head];
    // Operator state.
    if (d.operator && d.operator.length) {
      const byState = new Map();
      for (const e of d.operator) {
        if (!byState.has(e.state)) byState.set(e.state, { mode: e.mode, items: [] });
        byState.get(e.state).items.push(e.key ? `${e.key} → ${e.value}` : e.value);
      }
      const box = h('div', { class: 'opstate' }, h('h3', {}, t('inspector.operatorState')));
      for (const [name, v] of byState) {
        box.append(h('div', { class: 'opstate-row' }, h('code', {}, name), h('span', { class: 'pill' }, v.mode),
          h('span', { class: 'opstate-items' }, v.items.map((x) => h('span', { class: 'chip' }, x)))));
      }
      parts.push(box);
    }
    // Keyed state.
    if (d.keyed && (d.keyed.length || d.keyGroups)) {
      const filter = h('input', { type: 'search', placeholder: t('inspector.find'), 'aria-label': t('inspector.find'), value: this.filter });
      filter.addEventListener('input', () => { this.filter = filter.value; this.renderRows(tbody, more); });
      const tbody = h('tbody');
      const more = h('button', { type: 'button', class: 'button mini', onclick: () => { this.shown += PAGE; this.renderRows(tbody, more); } }, t('inspector.more'));
      parts.push(h('div', { class: 'keyed-head' }, h('h3', {}, t('inspector.keyedState'),
        h('span', { class: 'muted' }, ` ${t('inspector.entries', { n: num(d.total) })}${d.truncated ? ` ${t('inspector.truncated')}` : ''}`)), filter));
      parts.push(h('div', { class: 'table-wrap', tabindex: 0 }, h('table', { class: 'keyed' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, t('inspector.key')), h('th', { scope: 'col' }, t('term.keyGroup')),
          h('th', { scope: 'col' }, t('inspector.state')), h('th', { scope: 'col', class: 'num' }, t('inspector.value')))), tbody)), more);
      this.renderRows(tbody, more);
    } else if (!d.operator || !d.operator.length) {
      parts.push(h('p', { class: 'empty' }, t('inspector.stateless')));
    }
    if (d.timers) parts.push(this.renderTimers(d));
    if (d.error) parts.push(h('p', { class: 'empty' }, d.error));
    clear(this.root).append(...parts);
    this.renderHead();
  }

  // The subtask's timers (Flink's InternalTimerService): keyed state, one
  // priority queue per key group, in the order they will fire.
  renderTimers(d) {
    const w = d.watermark ?? 0; // omitted when 0
    const wm = w <= -9007199254740991 ? '-∞' : w >= 9007199254740991 ? '+∞' : String(w);
    const box = h('div', { class: 'timers' }, h('h3', {}, t('inspector.timers'),
      h('span', { class: 'muted' }, ` ${t('inspector.timerCount', { n: num(d.timers.length) })} · ${t('inspector.watermark', { wm })}`)));
    if (!d.timers.length) {
      box.append(h('p', { class: 'empty' }, t('inspector.noTimers')));
      return box;
    }
    const tbody = h('tbody');
    for (const tm of d.timers.slice(0, PAGE)) {
      tbody.append(h('tr', {}, h('td', { class: 'num' }, String(tm.timestamp)),
        h('td', {}, t(tm.domain === 1 ? 'inspector.processingTime' : 'inspector.eventTime')),
        h('td', {}, h('code', {}, tm.key)), h('td', {}, String(tm.keyGroup)), h('td', {}, tm.namespace ? h('code', {}, tm.namespace) : '–')));
    }
    box.append(h('div', { class: 'table-wrap', tabindex: 0 }, h('table', { class: 'keyed' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col', class: 'num' }, t('inspector.timerAt')), h('th', { scope: 'col' }, t('inspector.timeDomain')),
        h('th', { scope: 'col' }, t('inspector.key')), h('th', { scope: 'col' }, t('term.keyGroup')), h('th', { scope: 'col' }, t('inspector.namespace')))), tbody)));
    return box;
  }

  renderRows(tbody, more) {
    const d = this.data;
    const f = this.filter.trim().toLowerCase();
    const list = f ? d.keyed.filter((e) => e.key.toLowerCase().includes(f)) : d.keyed;
    clear(tbody);
    this.rows.clear();
    this.watch?.disconnect();
    this.onScreen.clear();
    const owner = this.model.tasks.get(this.task)?.st.index ?? -1;
    for (const e of list.slice(0, this.shown)) {
      const value = h('td', { class: 'num' }, e.userKey ? `${e.userKey} → ${e.value}` : e.value);
      // State TTL: the last access travels with the value; an expired entry
      // stays until a read or a cleanup removes it (StateTtlConfig).
      if (e.lastAccess) value.title = t('inspector.lastAccess', { ts: e.lastAccess });
      if (e.expired) value.append(' ', h('span', { class: 'pill', title: t('inspector.expiredHint') }, t('inspector.expired')));
      const chip = h('span', { class: 'swatch small' });
      chip.style.background = ownerColor(owner);
      // The row's highlight (.flash) sits in the key's cell, which value
      // updates never rewrite; it covers the whole row (app.css).
      const flash = h('span', { class: 'flash', 'aria-hidden': 'true' });
      const tr = h('tr', {}, h('td', {}, flash, h('code', {}, e.key)), h('td', {}, chip, String(e.keyGroup)), h('td', {}, e.state), value);
      tbody.append(tr);
      this.watch?.observe(tr);
      this.rows.set(`${e.state}|${e.key}|${e.userKey || ''}`, { tr, value, flash });
    }
    more.hidden = list.length <= this.shown;
  }
}
