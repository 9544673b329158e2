// The key-group strip: one cell per key group (max parallelism of them),
// coloured by the subtask that owns it. On a rescale the cells that change
// owner are outlined while the plan runs and pulse when the new owners take
// over. Hovering (or moving with the arrow keys) over a cell lists its keys;
// the key box shows where Flink puts a key, step by step.

import { h, s, clear, attr, text, toggle } from '../dom.js';
import { t } from '../i18n.js';
import { num } from '../format.js';
import { ownerColor } from '../palette.js';
import { ownersOf } from '../model.js';
import { javaStringHashCode, murmurHash, operatorIndexFor, rangeFor } from '../keygroups.js';

export class StripView {
  constructor(root, model, api, keyForm) {
    this.root = root;
    this.model = model;
    this.api = api; // {keysOf(task, keyGroup) -> Promise<{keys: [], total}>}
    this.opId = null;
    this.shape = '';
    this.cursor = -1;
    this.highlight = -1;
    this.moving = new Set();
    this.pulse = new Map(); // key group -> time it changed owner
    this.dirty = true;
    this.keyInput = keyForm.querySelector('input');
    this.keyOut = keyForm.querySelector('output');
    keyForm.addEventListener('submit', (e) => e.preventDefault());
    this.keyInput.addEventListener('input', () => { this.dirty = true; });
    new ResizeObserver(() => { this.dirty = true; }).observe(root);
  }

  onChange(change) {
    if (change.type === 'snapshot') {
      const prev = change.previous;
      const op = this.operator();
      if (prev && op && this.model.snap.step < prev.step) {
        // Back in time (the timeline): what moved later is not history yet.
        this.lastMove = null;
        this.pulse.clear();
        this.moving.clear();
      } else if (prev && op) {
        const before = prev.job.operators.find((o) => o.id === op.id);
        if (before && before.parallelism !== op.parallelism) {
          const a = ownersOf(before);
          const b = ownersOf(op);
          const now = performance.now();
          this.lastMove = { from: before.parallelism, to: op.parallelism, moved: 0 };
          for (let g = 0; g < b.length; g++) {
            if (a[g] !== b[g]) { this.pulse.set(g, now); this.lastMove.moved++; }
          }
          this.moving.clear();
        }
      }
      this.dirty = true;
      return;
    }
    for (const e of change.events) {
      if (e.kind === 'rescale-plan' && e.rescale?.plan && e.operator === this.opId) {
        this.moving = new Set(e.rescale.plan.moved);
        this.dirty = true;
      }
      if (e.kind === 'rescale-failed') { this.moving.clear(); this.dirty = true; }
    }
  }

  operator() {
    if (!this.model.ready) return null;
    const keyed = this.model.keyedOperators();
    if (!keyed.length) return null;
    if (!keyed.find((o) => o.id === this.opId)) this.opId = keyed[0].id;
    return this.model.operator(this.opId);
  }

  render(now) {
    if (!this.model.ready) return;
    const op = this.operator();
    // While key groups pulse the frame loop keeps drawing (render says so).
    const animating = [...this.pulse.values()].some((t0) => now - t0 < 1600);
    if (!this.dirty && !animating) return false;
    this.dirty = false;
    if (!op) {
      if (this.shape !== 'none') {
        this.shape = 'none';
        clear(this.root).append(h('p', { class: 'empty' }, t('keygroups.none')));
      }
      this.keyOut.textContent = '';
      return;
    }
    const max = op.maxParallelism;
    const width = Math.max(320, this.root.clientWidth);
    const perRow = max <= 32 ? max : max <= 256 ? Math.min(64, max) : 128;
    const rows = Math.ceil(max / perRow);
    const cell = Math.max(4, Math.min(44, Math.floor((width - 8) / perRow)));
    const shape = `${op.id}|${max}|${width}`;
    if (shape !== this.shape) this.build(op, max, perRow, rows, cell);
    const owners = ownersOf(op);
    const key = this.keyInput.value;
    this.highlight = key ? murmurHash(javaStringHashCode(key)) % max : -1;
    for (let g = 0; g < max; g++) {
      const c = this.cells[g];
      attr(c, 'fill', ownerColor(owners[g]));
      toggle(c, 'moving', this.moving.has(g));
      const t0 = this.pulse.get(g);
      const pulsing = t0 !== undefined && now - t0 < 1600;
      toggle(c, 'moved', pulsing);
      if (t0 !== undefined && !pulsing) this.pulse.delete(g);
      toggle(c, 'cursor', g === this.cursor);
      toggle(c, 'highlight', g === this.highlight);
    }
    this.renderLegend(op);
    this.renderKey(op, key);
    return animating;
  }

  build(op, max, perRow, rows, cell) {
    this.shape = `${op.id}|${max}|${Math.max(320, this.root.clientWidth)}`;
    const labels = cell >= 22;
    const w = perRow * cell;
    const hgt = rows * (cell + (labels ? 0 : 0)) + 2;
    this.svg = s('svg', { class: 'strip-svg', viewBox: `0 0 ${w + 2} ${hgt}`, width: w + 2, height: hgt, tabindex: 0, role: 'application',
      'aria-label': t('keygroups.aria', { op: op.id, max }) });
    this.cells = [];
    for (let g = 0; g < max; g++) {
      const x = 1 + (g % perRow) * cell;
      const y = 1 + Math.floor(g / perRow) * cell;
      const r = s('rect', { x, y, width: cell - 1, height: cell - 1, rx: Math.min(3, cell / 4), class: 'kg', dataset: { kg: g } });
      this.cells.push(r);
      this.svg.append(r);
      if (labels) this.svg.append(s('text', { x: x + (cell - 1) / 2, y: y + cell / 2 + 4, class: 'kg-num', 'text-anchor': 'middle' }, String(g)));
    }
    this.tip = h('div', { class: 'tip', role: 'status', hidden: true });
    this.legend = h('ul', { class: 'strip-legend' });
    this.moveNote = h('p', { class: 'move-note' });
    clear(this.root).append(this.svg, this.tip, this.moveNote, this.legend);
    this.svg.addEventListener('mousemove', (e) => {
      const g = e.target?.dataset?.kg;
      if (g !== undefined) this.showTip(Number(g), e.target);
    });
    this.svg.addEventListener('mouseleave', () => { this.tip.hidden = true; });
    this.svg.addEventListener('keydown', (e) => {
      const moves = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: perRow, ArrowUp: -perRow, Home: -max, End: max };
      if (!(e.key in moves)) return;
      e.preventDefault();
      this.cursor = Math.max(0, Math.min(max - 1, (this.cursor < 0 ? 0 : this.cursor + moves[e.key])));
      this.dirty = true;
      this.showTip(this.cursor, this.cells[this.cursor]);
    });
    this.svg.addEventListener('blur', () => { this.cursor = -1; this.tip.hidden = true; this.dirty = true; });
  }

  async showTip(g, cellEl) {
    const op = this.operator();
    if (!op) return;
    const owner = ownersOf(op)[g];
    const task = owner >= 0 ? `${op.id}#${owner}` : null;
    const box = cellEl.getBoundingClientRect();
    const rootBox = this.root.getBoundingClientRect();
    this.tip.style.left = `${Math.min(rootBox.width - 260, Math.max(0, box.left - rootBox.left - 20))}px`;
    this.tip.style.top = `${box.bottom - rootBox.top + 6}px`;
    this.tip.hidden = false;
    const head = t('keygroups.tipHead', { kg: g, task: task || t('keygroups.noOwner') });
    clear(this.tip).append(h('strong', {}, head), h('div', { class: 'muted' }, t('keygroups.loading')));
    this.tipFor = g;
    if (!task) return;
    try {
      const r = await this.api.keysOf(task, g);
      if (this.tipFor !== g) return;
      const keys = r.keys;
      const list = keys.length
        ? h('div', { class: 'tip-keys' }, keys.slice(0, 24).join(', ') + (r.total > 24 ? ` … ${t('keygroups.more', { n: num(r.total - 24) })}` : ''))
        : h('div', { class: 'muted' }, t('keygroups.noKeys'));
      clear(this.tip).append(h('strong', {}, head), h('div', {}, t('keygroups.keyCount', { n: num(r.total) })), list);
    } catch (err) {
      if (this.tipFor === g) clear(this.tip).append(h('strong', {}, head), h('div', { class: 'muted' }, err.message || String(err)));
    }
  }

  renderLegend(op) {
    const key = JSON.stringify(op.subtasks.map((st) => [st.index, st.keyGroups, st.state?.keys, st.status])) + (this.lastMove ? this.lastMove.moved : '');
    if (this.legend.dataset.key === key) return;
    this.legend.dataset.key = key;
    clear(this.legend);
    for (const st of op.subtasks) {
      if (!st.keyGroups) continue;
      const n = st.keyGroups.end - st.keyGroups.start + 1;
      const sw = h('span', { class: 'swatch' });
      sw.style.background = ownerColor(st.index);
      const keys = st.state ? ` · ${t('keygroups.keys', { n: num(st.state.keys) })}` : '';
      this.legend.append(h('li', {}, sw, h('strong', {}, st.name), ` ${t('keygroups.range', { start: st.keyGroups.start, end: st.keyGroups.end, n })}${keys}`));
    }
    if (this.lastMove) {
      text(this.moveNote, t('keygroups.moved', { moved: this.lastMove.moved, max: op.maxParallelism, from: this.lastMove.from, to: this.lastMove.to }));
    } else {
      text(this.moveNote, t('keygroups.formula', { max: op.maxParallelism, p: op.parallelism }));
    }
  }

  renderKey(op, key) {
    if (!key) {
      text(this.keyOut, '');
      return;
    }
    const hash = javaStringHashCode(key);
    const mm = murmurHash(hash);
    const kg = mm % op.maxParallelism;
    const idx = operatorIndexFor(op.maxParallelism, op.parallelism, kg);
    const r = rangeFor(op.maxParallelism, op.parallelism, idx);
    text(this.keyOut, t('keygroups.keyResult', { hash, murmur: mm, max: op.maxParallelism, kg, task: `${op.id}#${idx}`, start: r.start, end: r.end }));
  }
}
