// One job of the attach page: its job graph, a card per keyed vertex (the
// key-group strip with Flink's ranges, the "rescale to N" planner and the
// key lookup) and the checkpoint timeline with Flink's labels. Every number
// comes from StateLab's server (package attach and rescale); this module
// only draws.

import { h, s, clear, toggle } from '../dom.js';

// put replaces el's children; null and false children are left out (the
// DOM's own append would print them).
function put(el, ...kids) {
  clear(el).append(...kids.flat().filter((k) => k !== null && k !== undefined && k !== false));
  return el;
}
import { t, getLang } from '../i18n.js';
import { num, bytes, dur } from '../format.js';
import { ownerColor, STATUS_COLOR } from '../palette.js';

// Above this many key groups the strip draws one bar per range instead of
// one cell per key group (max parallelism can be 32768).
const MAX_CELLS = 1024;

export class JobView {
  constructor(job, api, labels) {
    this.api = api;
    this.labels = labels || {};
    this.cards = new Map();
    this.graphKey = '';
    this.cpKey = '';
    this.title = h('h2', { class: 'attach-job-title' });
    this.badge = h('span', { class: 'badge' });
    this.idEl = h('code', { class: 'muted attach-job-id' });
    this.graph = h('div', { class: 'attach-graph' });
    this.keyed = h('div', { class: 'attach-keyed' });
    this.cp = h('div', { class: 'attach-cp' });
    this.root = h('section', { class: 'attach-job', dataset: { job: job.id } },
      h('header', { class: 'attach-job-head' }, this.title, this.badge, this.idEl),
      h('section', { class: 'panel' }, h('header', {}, h('h3', {}, t('attach.graph'))), this.graph,
        h('p', { class: 'hint' }, t('attach.graphHint'))),
      this.keyed,
      h('section', { class: 'panel' }, h('header', {}, h('h3', {}, t('attach.checkpoints'))), this.cp));
  }

  remove() { this.root.remove(); }

  resized() {
    this.graphKey = '';
    this.cpKey = '';
    if (this.job) this.drawGraph(this.job);
    for (const c of this.cards.values()) c.resized();
  }

  update(job) {
    this.job = job;
    this.title.textContent = job.name || job.id;
    this.badge.textContent = job.state;
    this.badge.className = `badge st-${job.state}`;
    this.idEl.textContent = job.id;
    this.drawGraph(job);
    this.updateKeyed(job);
    this.drawCheckpoints(job);
  }

  drawGraph(job) {
    const key = JSON.stringify([job.vertices, job.edges, this.graph.clientWidth]);
    if (key === this.graphKey) return;
    this.graphKey = key;
    put(this.graph, graphSVG(job, Math.max(480, this.graph.clientWidth || 900)));
  }

  updateKeyed(job) {
    const keyed = job.vertices.filter((v) => v.keyed);
    const seen = new Set();
    if (!keyed.length) {
      if (!this.keyed.querySelector('.attach-none')) {
        put(this.keyed, h('p', { class: 'empty attach-none' }, t('attach.notKeyedAny')));
      }
      for (const c of this.cards.values()) c.root.remove();
      this.cards.clear();
      return;
    }
    this.keyed.querySelector('.attach-none')?.remove();
    for (const v of keyed) {
      seen.add(v.id);
      let c = this.cards.get(v.id);
      if (!c) {
        c = new VertexCard(job.id, v, this.api);
        this.cards.set(v.id, c);
        this.keyed.append(c.root);
      }
      c.update(v);
    }
    for (const [id, c] of this.cards) {
      if (!seen.has(id)) { c.root.remove(); this.cards.delete(id); }
    }
  }

  drawCheckpoints(job) {
    const width = Math.max(400, (this.cp.clientWidth || 900) - 4);
    const key = JSON.stringify([job.checkpoints, getLang(), width]);
    if (key === this.cpKey) return;
    this.cpKey = key;
    put(this.cp, checkpointsView(job, this.labels, width));
  }
}

// ---- job graph --------------------------------------------------------

const BOX_W = 230;
const BOX_H = 78;
const GAP_X = 90;
const GAP_Y = 22;

function graphSVG(job, width) {
  const ids = job.vertices.map((v) => v.id);
  const inputs = new Map(ids.map((id) => [id, []]));
  for (const e of job.edges) inputs.get(e.target)?.push(e);
  // Columns by longest path from a source; GET /jobs/{id} lists vertices in
  // topological order, so one pass suffices (a guard covers odd answers).
  const depth = new Map();
  for (let pass = 0; pass < 2; pass++) {
    for (const id of ids) {
      const d = Math.max(-1, ...inputs.get(id).map((e) => (depth.has(e.source) ? depth.get(e.source) : -1))) + 1;
      depth.set(id, Math.min(d, ids.length));
    }
  }
  const cols = [];
  for (const id of ids) {
    const d = depth.get(id);
    (cols[d] = cols[d] || []).push(id);
  }
  const pos = new Map();
  const rows = Math.max(...cols.map((c) => (c ? c.length : 0)), 1);
  const H = rows * (BOX_H + GAP_Y) + 16;
  const W = cols.length * (BOX_W + GAP_X) - GAP_X + 24;
  cols.forEach((col, ci) => {
    if (!col) return;
    const top = (H - col.length * (BOX_H + GAP_Y) + GAP_Y) / 2;
    col.forEach((id, ri) => pos.set(id, { x: 12 + ci * (BOX_W + GAP_X), y: top + ri * (BOX_H + GAP_Y) }));
  });
  const svg = s('svg', { class: 'attach-graph-svg', viewBox: `0 0 ${W} ${H}`, width: Math.min(W, width), role: 'img',
    'aria-label': t('attach.graphAria', { name: job.name, n: job.vertices.length }) });
  svg.append(s('defs', {}, s('marker', { id: `arrow-${job.id}`, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
    s('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'attach-arrow' }))));
  for (const e of job.edges) {
    const a = pos.get(e.source);
    const b = pos.get(e.target);
    if (!a || !b) continue;
    const x1 = a.x + BOX_W;
    const y1 = a.y + BOX_H / 2;
    const x2 = b.x - 2;
    const y2 = b.y + BOX_H / 2;
    const mx = (x1 + x2) / 2;
    svg.append(s('path', { d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`, class: `attach-edge${e.keyed ? ' keyed' : ''}`,
      'marker-end': `url(#arrow-${job.id})`, dataset: { ship: e.shipStrategy } }));
    svg.append(s('text', { x: mx, y: (y1 + y2) / 2 - 6, class: `attach-edge-label${e.keyed ? ' keyed' : ''}`, 'text-anchor': 'middle' },
      e.keyed ? `${e.shipStrategy} (keyBy)` : e.shipStrategy));
  }
  for (const v of job.vertices) {
    const p = pos.get(v.id);
    const g = s('g', { class: `attach-vertex${v.keyed ? ' keyed' : ''}`, transform: `translate(${p.x},${p.y})`, dataset: { vertex: v.id } },
      s('title', {}, `${v.name}\n${v.id}`),
      s('rect', { width: BOX_W, height: BOX_H, rx: 8, class: 'attach-box' }),
      s('rect', { width: 5, height: BOX_H, rx: 2, class: 'attach-box-bar', fill: STATUS_COLOR[v.status] || '#c8d0dc' }),
      s('text', { x: 14, y: 22, class: 'attach-box-title' }, clip(v.name, 30)),
      s('text', { x: 14, y: 42, class: 'attach-box-detail' }, `${t('attach.parallelism')} ${v.parallelism}` +
        ` · ${t('attach.maxParallelismShort')} ${v.maxParallelism || '?'}`),
      s('text', { x: 14, y: 62, class: 'attach-box-status' }, v.status || ''));
    if (v.keyed) {
      g.append(s('rect', { x: BOX_W - 58, y: 50, width: 48, height: 18, rx: 9, class: 'attach-keyed-pill' }),
        s('text', { x: BOX_W - 34, y: 63, class: 'attach-keyed-text', 'text-anchor': 'middle' }, t('attach.keyed')));
    }
    svg.append(g);
  }
  return svg;
}

function clip(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

// ---- key groups ---------------------------------------------------------

// ownerOf returns, for ranges [{start, end}] indexed by subtask, the owner
// of each key group.
function ownersFrom(ranges, max) {
  const owners = new Array(max).fill(-1);
  ranges.forEach((r, i) => { for (let g = r.start; g <= r.end && g < max; g++) owners[g] = i; });
  return owners;
}

function stripSVG(max, owners, { width, label, moved, highlight }) {
  if (max > MAX_CELLS) return rangeStripSVG(max, owners, { width, label, moved, highlight });
  const perRow = max <= 32 ? max : max <= 256 ? Math.min(64, max) : 128;
  const rows = Math.ceil(max / perRow);
  const cell = Math.max(5, Math.min(22, Math.floor((width - 4) / perRow)));
  const W = perRow * cell + 2;
  const H = rows * cell + 2;
  const svg = s('svg', { class: 'strip-svg attach-strip', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': label });
  const cells = [];
  for (let g = 0; g < max; g++) {
    const x = 1 + (g % perRow) * cell;
    const y = 1 + Math.floor(g / perRow) * cell;
    const r = s('rect', { x, y, width: cell - 1, height: cell - 1, rx: Math.min(3, cell / 4), class: 'kg', fill: ownerColor(owners[g]), dataset: { kg: g, owner: owners[g] } },
      s('title', {}, t('attach.cellTitle', { kg: g, subtask: owners[g] })));
    if (moved?.has(g)) r.classList.add('moving');
    if (g === highlight) r.classList.add('highlight');
    cells.push(r);
    svg.append(r);
  }
  svg.cells = cells;
  return svg;
}

function rangeStripSVG(max, owners, { width, label, moved, highlight }) {
  const W = Math.max(300, width - 4);
  const H = 28;
  const x = (g) => 1 + ((W - 2) * g) / max;
  const svg = s('svg', { class: 'strip-svg attach-strip ranges', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': label });
  let start = 0;
  for (let g = 1; g <= max; g++) {
    if (g === max || owners[g] !== owners[start]) {
      svg.append(s('rect', { x: x(start), y: 1, width: Math.max(1, x(g) - x(start) - 1), height: H - 2, class: 'kg-range', fill: ownerColor(owners[start]), dataset: { start, end: g - 1 } },
        s('title', {}, t('attach.rangeTitle', { start, end: g - 1, subtask: owners[start] }))));
      start = g;
    }
  }
  if (moved) {
    for (const g of moved) svg.append(s('rect', { x: x(g), y: 1, width: Math.max(1, x(g + 1) - x(g)), height: 5, class: 'kg-moved-tick' }));
  }
  if (highlight >= 0) svg.append(s('line', { x1: x(highlight + 0.5), x2: x(highlight + 0.5), y1: 0, y2: H, class: 'kg-key-line' }));
  svg.cells = null;
  return svg;
}

function legend(ranges) {
  return h('ul', { class: 'strip-legend' }, ranges.map((r, i) => {
    const sw = h('span', { class: 'swatch' });
    sw.style.background = ownerColor(i);
    return h('li', { dataset: { subtask: i } }, sw, h('strong', {}, t('attach.subtask', { i, n: ranges.length, nth: i + 1 })),
      ` ${t('attach.kgRange', { start: r.start, end: r.end, n: r.end - r.start + 1 })}`);
  }));
}

class VertexCard {
  constructor(jobId, v, api) {
    this.jobId = jobId;
    this.api = api;
    this.shape = '';
    this.plan = null;
    this.owner = null; // the key lookup's answer
    this.heading = h('h3', {});
    this.source = h('span', { class: 'pill' });
    this.formula = h('p', { class: 'move-note' });
    this.strip = h('div', { class: 'strip' });
    this.legend = h('div', {});
    this.toInput = h('input', { type: 'number', min: 1, step: 1, class: 'attach-to', 'aria-label': t('attach.plannerAria') });
    this.keyType = h('select', { class: 'attach-key-type', 'aria-label': t('attach.lookupType') },
      h('option', { value: 'string' }, 'String'), h('option', { value: 'int' }, 'Integer (int)'), h('option', { value: 'long' }, 'Long (long)'));
    this.keyInput = h('input', { type: 'text', class: 'attach-key', placeholder: t('attach.lookupPlaceholder'), spellcheck: 'false', 'aria-label': t('attach.lookupKey') });
    this.keyOut = h('output', { class: 'attach-key-out' });
    this.planOut = h('div', { class: 'attach-plan', 'aria-live': 'polite' });
    const planner = h('form', { class: 'attach-planner' },
      h('label', { class: 'field inline' }, h('span', {}, t('attach.planner')), this.toInput),
      h('span', { class: 'hint' }, t('attach.plannerHint')));
    const lookup = h('form', { class: 'attach-lookup' },
      h('label', { class: 'field inline' }, h('span', {}, t('attach.lookupType')), this.keyType),
      h('label', { class: 'field inline' }, h('span', {}, t('attach.lookupKey')), this.keyInput));
    planner.addEventListener('submit', (e) => { e.preventDefault(); this.runPlan(); });
    lookup.addEventListener('submit', (e) => { e.preventDefault(); this.runLookup(); });
    this.toInput.addEventListener('input', debounce(() => this.runPlan(), 250));
    this.keyInput.addEventListener('input', debounce(() => this.runLookup(), 250));
    this.keyType.addEventListener('change', () => this.runLookup());
    this.body = h('div', { class: 'attach-kg-body' });
    this.root = h('article', { class: 'panel attach-kg', dataset: { vertex: v.id } },
      h('header', {}, this.heading, this.source), this.body);
    this.tools = h('div', { class: 'attach-tools' },
      h('section', { class: 'attach-tool' }, h('h4', {}, t('attach.lookup')), lookup, this.keyOut),
      h('section', { class: 'attach-tool' }, h('h4', {}, t('attach.plannerTitle')), planner));
    this.stripLabel = '';
  }

  resized() { this.shape = ''; if (this.v) this.update(this.v); }

  update(v) {
    this.v = v;
    this.heading.textContent = t('attach.keyGroupsOf', { vertex: v.name });
    const ready = v.keyGroups && v.keyGroups.length > 0;
    const shape = JSON.stringify([v.parallelism, v.maxParallelism, v.keyGroups, this.root.clientWidth]);
    if (shape === this.shape) return;
    const first = this.shape === '';
    this.shape = shape;
    if (!ready) {
      this.source.hidden = true;
      const useDefault = h('button', { type: 'button', class: 'button mini attach-use-default' }, t('attach.useDefault'));
      useDefault.addEventListener('click', () => {
        const field = document.getElementById('attach-maxp');
        const form = document.getElementById('attach-form');
        if (!field || !form) return;
        field.value = 'default';
        form.requestSubmit();
      });
      put(this.body, h('p', { class: 'notice attach-missing', dataset: { field: 'maxParallelism' } },
        h('strong', {}, t('attach.noKeyGroups')), ' ', t('attach.err.missing-field.todo'), ' ', useDefault));
      return;
    }
    this.source.hidden = false;
    this.source.textContent = t('attach.maxFrom', { max: v.maxParallelism, source: v.maxParallelismSource || '' });
    this.formula.textContent = t('attach.kgFormula', { max: v.maxParallelism, p: v.parallelism });
    this.ranges = v.keyGroups.map((k) => k.range);
    this.owners = ownersFrom(this.ranges, v.maxParallelism);
    this.stripLabel = t('attach.stripAria', { vertex: v.name, max: v.maxParallelism });
    if (first || !this.toInput.value || Number(this.toInput.value) > v.maxParallelism) {
      this.toInput.value = String(v.parallelism < v.maxParallelism ? v.parallelism + 1 : Math.max(1, v.parallelism - 1));
    }
    this.toInput.max = String(v.maxParallelism);
    put(this.body, this.formula, this.strip, this.legend, this.tools, this.planOut);
    this.drawCurrent();
    put(this.legend, legend(this.ranges));
    this.runPlan();
    if (this.keyInput.value) this.runLookup();
  }

  width() { return Math.max(320, (this.root.clientWidth || 900) - 40); }

  drawCurrent() {
    const hl = this.owner ? this.owner.keyGroup : -1;
    put(this.strip, stripSVG(this.v.maxParallelism, this.owners, { width: this.width(), label: this.stripLabel, highlight: hl }));
  }

  async runPlan() {
    const v = this.v;
    if (!v?.keyGroups) return;
    const to = this.toInput.value.trim();
    if (!to) { put(this.planOut); return; }
    try {
      const plan = await this.api.get('rescale', { job: this.jobId, vertex: v.id, to });
      if (this.v !== v || this.toInput.value.trim() !== to) return;
      this.plan = plan;
      this.drawPlan();
    } catch (err) {
      this.plan = null;
      put(this.planOut, h('p', { class: 'notice error attach-plan-error', dataset: { code: err.code } }, err.message));
    }
  }

  drawPlan() {
    const plan = this.plan;
    const v = this.v;
    const after = plan.subtasks.map((st) => st.range);
    const owners = ownersFrom(after, plan.maxParallelism);
    const moved = new Set(plan.moved);
    const hl = this.owner ? this.owner.keyGroup : -1;
    const summary = plan.moved.length
      ? t('attach.plannerResult', { from: plan.from, to: plan.to, moved: num(plan.moved.length), max: num(plan.maxParallelism),
        pct: Math.round((100 * plan.moved.length) / plan.maxParallelism) })
      : t('attach.plannerNone', { from: plan.from, to: plan.to });
    const reads = h('ul', { class: 'attach-reads' }, plan.subtasks.map((st) => h('li', {},
      h('strong', {}, `#${st.subtask}`), ` ${t('attach.kgRange', { start: st.range.start, end: st.range.end, n: st.range.end - st.range.start + 1 })} ← `,
      st.reads.map((r, i) => [i ? ', ' : '', t('attach.readFrom', { start: r.range.start, end: r.range.end, old: r.oldSubtask })]))));
    const runs = plan.movedRuns.length
      ? h('p', { class: 'muted attach-moved-runs' }, t('attach.movedRuns', { runs: plan.movedRuns.map((r) => (r.start === r.end ? `${r.start}` : `${r.start}–${r.end}`)).join(', ') }))
      : null;
    put(this.planOut,
      h('p', { class: 'attach-plan-summary', dataset: { moved: plan.moved.length } }, h('strong', {}, summary)),
      h('div', { class: 'strip attach-after' }, stripSVG(plan.maxParallelism, owners, { width: this.width(), moved, highlight: hl,
        label: t('attach.afterAria', { vertex: v.name, to: plan.to }) })),
      h('p', { class: 'hint' }, t('attach.plannerAfter')),
      legend(after),
      runs,
      h('details', { class: 'attach-reads-box' }, h('summary', {}, t('attach.readsTitle')), reads));
  }

  async runLookup() {
    const v = this.v;
    const key = this.keyInput.value;
    if (!v?.keyGroups) return;
    if (key === '') {
      this.owner = null;
      put(this.keyOut);
      this.refreshHighlight();
      return;
    }
    const type = this.keyType.value;
    try {
      const o = await this.api.get('key', { job: this.jobId, vertex: v.id, type, key });
      if (this.keyInput.value !== key || this.keyType.value !== type) return;
      this.owner = o;
      const afterIdx = this.plan ? this.plan.subtasks.findIndex((st) => o.keyGroup >= st.range.start && o.keyGroup <= st.range.end) : -1;
      put(this.keyOut,
        h('span', { class: 'attach-key-answer' }, t('attach.lookupResult', { key: o.key, type: o.type, hash: o.hashCode, max: o.maxParallelism, kg: o.keyGroup,
          subtask: o.subtask, start: o.range.start, end: o.range.end })),
        afterIdx >= 0 ? h('span', { class: 'muted' }, ` ${t('attach.lookupAfter', { to: this.plan.to, subtask: afterIdx })}`) : null);
    } catch (err) {
      if (this.keyInput.value !== key) return;
      this.owner = null;
      put(this.keyOut, h('span', { class: 'attach-key-error' }, err.message));
    }
    this.refreshHighlight();
  }

  refreshHighlight() {
    const hl = this.owner ? this.owner.keyGroup : -1;
    for (const svg of this.root.querySelectorAll('svg.attach-strip')) {
      if (!svg.cells) continue;
      svg.cells.forEach((c, g) => toggle(c, 'highlight', g === hl));
    }
    if (this.v.maxParallelism > MAX_CELLS) {
      this.drawCurrent();
      if (this.plan) this.drawPlan();
    }
  }
}

function debounce(fn, ms) {
  let timer = null;
  return () => { clearTimeout(timer); timer = setTimeout(fn, ms); };
}

// ---- checkpoints --------------------------------------------------------

function fmtTime(ms) {
  if (!ms || ms <= 0) return '–';
  return new Date(ms).toLocaleTimeString(getLang() === 'zh' ? 'zh-CN' : 'en-GB');
}

function msDur(ms) {
  if (ms === undefined || ms === null || ms < 0) return '–';
  return dur(ms * 1e6);
}

function size(n) {
  return n === undefined || n === null || n < 0 ? '–' : bytes(n);
}

// label prints Flink's own word, with the page language's beside it when
// that differs.
function label(labels, key) {
  const flink = labels[key] || key;
  const local = t(`attach.label.${key}`);
  return local && local !== flink && local !== `attach.label.${key}`
    ? [h('span', { class: 'flink-label' }, flink), h('span', { class: 'local-label' }, local)]
    : [h('span', { class: 'flink-label' }, flink)];
}

function checkpointsView(job, labels, width) {
  const cp = job.checkpoints;
  if (!cp.enabled) return [h('p', { class: 'empty attach-cp-disabled' }, t('attach.cpDisabled'))];
  const c = cp.counts;
  const stat = (key, n) => h('span', { class: 'stat', dataset: { label: key } }, h('strong', {}, num(n)), ' ', ...label(labels, key));
  const out = [h('div', { class: 'cp-summary' }, stat('triggered', c.total), stat('inProgress', c.in_progress), stat('completed', c.completed),
    stat('failed', c.failed), stat('restored', c.restored))];
  if (cp.latestRestored) {
    const r = cp.latestRestored;
    out.push(h('p', { class: 'attach-restore' }, ...label(labels, 'latestRestore'), ': ',
      t(r.savepoint ? 'attach.restoreSavepoint' : 'attach.restoreCheckpoint', { id: r.id, time: fmtTime(r.restoreTimestamp) }),
      r.externalPath ? h('code', { class: 'muted' }, ` ${r.externalPath}`) : null));
  }
  const tl = job.timeline || [];
  if (!tl.length) {
    out.push(h('p', { class: 'empty' }, t('attach.cpNone')));
    return out;
  }
  out.push(h('div', { class: 'timeline' }, timelineSVG(tl, cp.latestRestored, width)));
  const th = (key) => h('th', { scope: 'col', dataset: { label: key } }, ...label(labels, key));
  const rows = [...tl].reverse().map((x) => {
    const tr = h('tr', { class: `cp-row ${x.status}` },
      h('td', { class: 'num' }, `${x.savepoint ? '◆ ' : ''}${x.id}`),
      h('td', {}, h('span', { class: `status ${x.status}` }, x.status), x.type && x.type !== 'CHECKPOINT' ? h('span', { class: 'muted' }, ` ${x.type}`) : null),
      h('td', { class: 'num' }, `${x.numAcknowledged}/${x.numSubtasks}`),
      h('td', { class: 'num' }, fmtTime(x.triggerTimestamp)),
      h('td', { class: 'num' }, fmtTime(x.latestAckTimestamp)),
      h('td', { class: 'num' }, x.status === 'IN_PROGRESS' ? '…' : msDur(x.endToEndDuration)),
      h('td', { class: 'num' }, size(x.checkpointedSize)),
      h('td', { class: 'num' }, size(x.fullSize)),
      h('td', { class: 'num' }, `${size(x.processedData)} (${size(x.persistedData)})`));
    return x.failureMessage ? [tr, h('tr', { class: 'cp-failure' }, h('td', { colspan: 9 }, x.failureMessage))] : tr;
  });
  out.push(h('div', { class: 'table-wrap', tabindex: 0 }, h('table', { class: 'checkpoints attach-cp-table' },
    h('caption', {}, t('attach.cpTable')),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'ID'), h('th', { scope: 'col' }, 'Status'), th('acknowledged'), th('triggerTime'),
      th('latestAck'), th('endToEnd'), th('checkpointedSize'), th('fullSize'), th('processedPersisted'))),
    h('tbody', {}, rows.flat()))));
  return out;
}

function timelineSVG(tl, restored, width) {
  const W = width;
  const H = 84;
  const ends = tl.map((x) => Math.max(x.triggerTimestamp, x.latestAckTimestamp || 0, x.triggerTimestamp + Math.max(0, x.endToEndDuration || 0)));
  let lo = Math.min(...tl.map((x) => x.triggerTimestamp));
  let hi = Math.max(...ends);
  if (restored?.restoreTimestamp) { lo = Math.min(lo, restored.restoreTimestamp); hi = Math.max(hi, restored.restoreTimestamp); }
  if (hi <= lo) hi = lo + 1000;
  const x = (ms) => 16 + ((W - 32) * (ms - lo)) / (hi - lo);
  const svg = s('svg', { class: 'timeline-svg attach-timeline', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': t('attach.cpTimeline') });
  svg.append(s('line', { x1: 16, x2: W - 16, y1: 36, y2: 36, class: 'axis' }));
  let lastLabel = -Infinity;
  for (const cp of tl) {
    const cx = x(cp.triggerTimestamp);
    const cls = `cp-dot ${cp.status}${cp.savepoint ? ' savepoint' : ''}`;
    const tip = s('title', {}, `${cp.savepoint ? t('attach.cpSavepoint') : t('attach.cpCheckpoint')} ${cp.id}: ${cp.status} · ${fmtTime(cp.triggerTimestamp)} · ${msDur(cp.endToEndDuration)}`);
    if (cp.status === 'COMPLETED' && cp.endToEndDuration > 0) {
      svg.append(s('line', { x1: cx, x2: Math.max(cx + 2, x(cp.triggerTimestamp + cp.endToEndDuration)), y1: 36, y2: 36, class: 'cp-span' }));
    }
    svg.append(cp.savepoint
      ? s('path', { d: `M${cx},28 L${cx + 8},36 L${cx},44 L${cx - 8},36 Z`, class: cls, dataset: { id: cp.id } }, tip)
      : s('circle', { cx, cy: 36, r: 6, class: cls, dataset: { id: cp.id } }, tip));
    if (cx - lastLabel >= 24) {
      svg.append(s('text', { x: cx, y: 20, class: 'cp-id', 'text-anchor': 'middle' }, String(cp.id)));
      lastLabel = cx;
    }
  }
  if (restored?.restoreTimestamp) {
    const rx = x(restored.restoreTimestamp);
    svg.append(s('path', { d: `M${rx},48 L${rx + 7},62 L${rx - 7},62 Z`, class: 'restore' }, s('title', {}, t('attach.restoredFrom', { id: restored.id }))));
    const right = rx > W - 80;
    svg.append(s('text', { x: right ? rx - 10 : rx + 10, y: 61, class: 'restore-label', 'text-anchor': right ? 'end' : 'start' }, `↺ ${restored.id}`));
  }
  svg.append(s('text', { x: 16, y: H - 2, class: 'now', 'text-anchor': 'start' }, fmtTime(lo)));
  svg.append(s('text', { x: W - 16, y: H - 2, class: 'now', 'text-anchor': 'end' }, fmtTime(hi)));
  return svg;
}
