// The job graph: operators as columns, TaskManagers as bands, each subtask a
// box in its TaskManager's band, coloured by its status as Flink's web UI
// colours it. Channels join subtasks; records travel on them as dots, the
// records waiting in a channel show at its receiving end, barriers sit in
// the channel behind the records sent before them, and a channel held back
// during barrier alignment is drawn dashed with a lock. Real <button>s lie
// over the boxes and labels, so every control is reachable by keyboard.

import { h, s, clear, attr, text, toggle, reducedMotion } from '../dom.js';
import { t } from '../i18n.js';
import { num } from '../format.js';
import { ownerColor } from '../palette.js';

const LABEL_W = 150; // TaskManager labels on the left
const HEAD_H = 96; // operator headers on top: name, parallelism field, its label (may wrap)
// An operator's header needs HEAD_W: its name and kind, and "− [ n ] +" on
// one line. A column that several operators share (lesson 12's two sources)
// is as wide as their headers side by side.
const HEAD_W = 132;
// Subtask boxes are BOX_W wide where the panel has room, and no narrower
// than BOX_MIN_W (a lesson page's graph panel); a column is COL_GAP wider
// than its boxes. A job that needs more than the panel scrolls sideways
// inside the panel.
const BOX_W = 156;
const BOX_MIN_W = 136;
const COL_GAP = 14;
const RIGHT_PAD = 16;
// An edge's label ("rebalance" over "21,311 records/s (job time)") takes
// EDGE_LABEL_W; a longer rate is squeezed into it.
const EDGE_LABEL_W = 180;
const EDGE_ROW_H = 38;
const BOX_H = 74;
const ROW_GAP = 12;
const BAND_PAD = 14;
const BAND_GAP = 12;
const MAX_PACKETS = 400;
const PACKETS_PER_CHANNEL = 8;
const UNASSIGNED = '';

// fitText sets an SVG text and squeezes it into a subtask box when it is
// wider (five-digit counts, long statuses), instead of drawing over the border.
function fitText(el, value, boxW) {
  const v = String(value);
  if (el.textContent === v && el.dataset.fit === v) return;
  el.textContent = v;
  el.dataset.fit = v;
  el.removeAttribute('textLength');
  el.removeAttribute('lengthAdjust');
  const room = boxW - 20;
  if (v && el.getComputedTextLength() > room) {
    el.setAttribute('textLength', room);
    el.setAttribute('lengthAdjust', 'spacingAndGlyphs');
  }
}

export class GraphView {
  constructor(root, model, actions) {
    this.root = root;
    this.model = model;
    this.actions = actions;
    this.tool = 'crash';
    this.selected = null;
    this.shape = '';
    this.packets = [];
    this.chans = new Map(); // channel name -> {sent, delivered, barriers: [{cp, before, born}], el...}
    this.rates = new Map(); // edge index -> records per second of job time
    this.lastRateSnap = null;
    this.flash = new Map(); // task -> time of last failure, for a short pulse
    this.dirty = true;

    this.svg = s('svg', { class: 'graph-svg', role: 'img', 'aria-labelledby': 'h-graph' });
    this.gBands = s('g', { class: 'bands' });
    this.gEdges = s('g', { class: 'edge-labels' });
    this.gChans = s('g', { class: 'channels' });
    this.gQueues = s('g', { class: 'queues' });
    this.gPackets = s('g', { class: 'packets' });
    this.gBoxes = s('g', { class: 'boxes' });
    this.gBarriers = s('g', { class: 'barriers' });
    this.svg.append(this.gBands, this.gChans, this.gEdges, this.gQueues, this.gPackets, this.gBoxes, this.gBarriers);
    this.overlay = h('div', { class: 'graph-overlay' });
    clear(root).append(this.svg, this.overlay);
    new ResizeObserver(() => { this.dirty = true; }).observe(root);
    // Records travel as dots only while the graph is on screen (a page
    // scrolled down to the log, a phone showing the inspector): off screen
    // they would redraw the page every frame for nobody. Boxes, channels,
    // queues and barriers stay up to date.
    this.onScreen = true;
    if (typeof IntersectionObserver === 'function') {
      new IntersectionObserver((entries) => {
        for (const e of entries) this.onScreen = e.isIntersecting;
      }).observe(root);
    }
  }

  // maxPar is the highest parallelism the header offers: the operator's max
  // parallelism (one key group per subtask at least), and no more than the
  // sandbox's cap (workspace data-max-parallelism) unless it runs more already.
  maxPar(op) {
    const cap = Number(this.root.closest('.workspace')?.dataset.maxParallelism || 0);
    return cap > 0 ? Math.min(op.maxParallelism, Math.max(cap, op.parallelism)) : op.maxParallelism;
  }

  // parInput is the parallelism field on an operator's head: type a number
  // and press Enter (or leave the field) to rescale to it.
  parInput(op) {
    const max = this.maxPar(op);
    const id = `par-${op.id}`;
    const input = h('input', { type: 'number', id, class: 'par-input', min: 1, max, step: 1, value: op.parallelism, inputmode: 'numeric',
      disabled: this.readOnly, dataset: { focus: `op:${op.id}:p` }, 'aria-label': t('graph.parInput', { op: op.id, max }), title: t('graph.parInput', { op: op.id, max }) });
    let sent = null; // leaving the field after Enter does not ask again; Enter does
    const apply = () => {
      delete input.dataset.edited; // a rebuild from here on shows the run's parallelism
      const v = Number(input.value);
      const cur = this.model.operator(op.id)?.parallelism ?? op.parallelism;
      if (v === sent) return;
      if (!Number.isInteger(v) || v < 1) {
        this.actions.notify?.(t('graph.parBad', { op: op.id, value: input.value, max }), 'error');
        input.value = cur;
        return;
      }
      if (v === cur) return;
      sent = v;
      const mp = this.model.operator(op.id)?.maxParallelism ?? op.maxParallelism;
      if (v <= mp) { this.actions.rescale(op.id, v); return; }
      // Above the max parallelism: the field sends it anyway, as a rescale
      // through Flink's REST API would go to Flink, and the engine refuses
      // it (a subtask needs at least one key group); the toast says why.
      this.actions.rescale(op.id, v, (err) => {
        this.actions.notify?.(t('graph.parRefused', { op: op.id, value: v, max: mp, reason: err?.message || '' }), 'error');
        input.value = this.model.operator(op.id)?.parallelism ?? cur;
      });
    };
    // Enter or leaving the field rescales; the arrow keys only change the
    // number (a 'change' event per arrow press would rescale at every step).
    input.addEventListener('input', () => { input.dataset.edited = '1'; });
    input.addEventListener('blur', () => { if (!this.rebuilding) apply(); }); // not a half-typed number a rebuild removes
    input.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); e.stopPropagation(); sent = null; apply(); } });
    return input;
  }

  // setReadOnly greys out the controls on the graph (a classroom follower);
  // a click on a subtask then inspects it.
  setReadOnly(on) { this.readOnly = on; this.shape = ''; this.dirty = true; }

  crashing() { return this.tool === 'crash' && !this.readOnly; }

  // setTool changes what a click on a subtask does. The boxes stay: update
  // sets their class and label. Building them again would replace the
  // button under a person's pointer, and a press on the old button with a
  // release on the new one is no click.
  setTool(tool) { this.tool = tool; this.dirty = true; }

  select(task) { this.selected = task; this.dirty = true; }

  onChange(change) {
    if (change.type === 'snapshot') {
      this.syncChannels();
      this.updateRates();
      this.dirty = true;
      return;
    }
    const now = performance.now();
    for (const e of change.events) {
      switch (e.kind) {
        // Records and barriers are drawn by animate, every frame: they
        // need no layout or update.
        case 'records-sent': {
          const c = this.chan(e.channel);
          if (!c) continue;
          c.sent += e.records;
          this.spawn(e.channel, e.records, now);
          continue;
        }
        case 'records-received': {
          const c = this.chan(e.channel);
          if (c) c.delivered = Math.min(c.sent, c.delivered + e.records);
          continue;
        }
        case 'flow':
          for (const f of e.flows || []) {
            const c = this.chan(f.channel);
            if (c) this.spawn(f.channel, f.records, now);
          }
          continue;
        case 'barrier-sent': {
          const c = this.chan(e.channel);
          if (c) c.barriers.push({ cp: e.checkpoint, before: c.sent, born: now, savepoint: !!e.savepoint });
          continue;
        }
        case 'barrier-overtook': {
          // An unaligned barrier went ahead of the records queued before it.
          const c = this.chan(e.channel);
          const b = c?.barriers.find((x) => x.cp === e.checkpoint);
          if (b) { b.before = c.delivered; b.unaligned = true; }
          continue;
        }
        case 'barrier-received': {
          const c = this.chan(e.channel);
          if (c) {
            const i = c.barriers.findIndex((b) => b.cp === e.checkpoint);
            if (i >= 0) c.barriers.splice(i, 1);
          }
          continue;
        }
        case 'task-failed':
          this.flash.set(e.task, now);
          break;
        case 'channel-blocked':
        case 'channel-unblocked':
        case 'task-status':
        case 'taskmanager':
        case 'job-status':
          break;
        default:
          continue;
      }
      this.dirty = true;
    }
  }

  chan(name) {
    return this.chans.get(name);
  }

  // syncChannels takes the exact queue figures from a snapshot.
  syncChannels() {
    const seen = new Set();
    for (const c of this.model.snap.channels) {
      seen.add(c.name);
      let v = this.chans.get(c.name);
      if (!v) { v = { sent: 0, delivered: 0, barriers: [] }; this.chans.set(c.name, v); }
      v.sent = c.sent;
      v.delivered = c.delivered;
      // Barriers queued now, with the records ahead of each.
      let ahead = 0;
      const barriers = [];
      for (const q of c.queued || []) {
        if (q.kind === 'records') ahead += q.records;
        if (q.kind === 'barrier') {
          const old = v.barriers.find((b) => b.cp === q.checkpoint);
          barriers.push({ cp: q.checkpoint, before: c.delivered + ahead, born: old ? old.born : 0, unaligned: !!q.unaligned });
        }
      }
      v.barriers = barriers;
    }
    for (const k of [...this.chans.keys()]) if (!seen.has(k)) this.chans.delete(k);
    this.packets = this.packets.filter((p) => seen.has(p.ch));
  }

  updateRates() {
    const snap = this.model.snap;
    const prev = this.lastRateSnap;
    const sums = new Map();
    for (const c of snap.channels) sums.set(c.edge, (sums.get(c.edge) || 0) + c.sent);
    if (prev && snap.at > prev.at && snap.seed === prev.seed) {
      const dt = (snap.at - prev.at) / 1e9;
      for (const [edge, sum] of sums) {
        const before = prev.sums.get(edge);
        if (before !== undefined && sum >= before) this.rates.set(edge, (sum - before) / dt);
        else this.rates.delete(edge); // a restart reset the counters
      }
    }
    this.lastRateSnap = { at: snap.at, seed: snap.seed, sums };
  }

  spawn(ch, records, now) {
    // A hidden page draws no frame: packets spawned now would only pile up
    // for the first frame after it shows again.
    // Nor does a person who asked for reduced motion see dots move.
    if (this.packets.length >= MAX_PACKETS || document.hidden || !this.onScreen || reducedMotion()) return;
    let n = 0;
    for (const p of this.packets) if (p.ch === ch) n++;
    if (n >= PACKETS_PER_CHANNEL) return;
    this.packets.push({ ch, born: now, records, el: null });
  }

  // layout computes positions; it rebuilds the DOM only when the shape of
  // the job (subtasks, placements, size) changed.
  layout() {
    const m = this.model;
    const snap = m.snap;
    const depth = this.columnDepths();
    const ncols = Math.max(1, ...[...depth.values()].map((d) => d + 1));
    // Each column is wide enough for its headers side by side and for a
    // box; room the panel has beyond that is shared out evenly.
    const perCol = new Array(ncols).fill(0);
    for (const id of m.order) perCol[depth.get(id)]++;
    const minW = perCol.map((k) => Math.max(k * HEAD_W, BOX_MIN_W + COL_GAP));
    const need = LABEL_W + RIGHT_PAD + minW.reduce((a, b) => a + b, 0);
    const width = Math.max(need, Math.floor(this.root.clientWidth));
    const extra = (width - need) / ncols;
    const colX = [];
    const colW = minW.map((w) => w + extra);
    colW.reduce((x, w, i) => { colX[i] = x; return x + w; }, LABEL_W);
    const boxW = Math.max(BOX_MIN_W, Math.min(BOX_W, Math.min(...colW) - COL_GAP));
    const bands = snap.taskManagers.map((tm) => ({ id: tm.id, tm, cells: new Map() }));
    const bandOf = new Map(bands.map((b) => [b.id, b]));
    let unassigned = null;
    for (const id of m.order) {
      const op = m.operator(id);
      for (const st of op.subtasks) {
        let b = bandOf.get(st.taskManager);
        if (!b) {
          if (!unassigned) unassigned = { id: UNASSIGNED, tm: null, cells: new Map() };
          b = unassigned;
        }
        const c = depth.get(id);
        if (!b.cells.has(c)) b.cells.set(c, []);
        b.cells.get(c).push({ op, st });
      }
    }
    if (unassigned) bands.push(unassigned);
    const pos = new Map();
    let y = HEAD_H;
    for (const b of bands) {
      const rows = Math.max(1, ...[...b.cells.values()].map((l) => l.length));
      b.y = y;
      b.h = BAND_PAD * 2 + rows * BOX_H + (rows - 1) * ROW_GAP;
      for (const [c, list] of b.cells) {
        list.forEach(({ op, st }, i) => {
          const x = colX[c] + (colW[c] - boxW) / 2;
          pos.set(st.name, { x, y: y + BAND_PAD + i * (BOX_H + ROW_GAP), op, st, band: b.id });
        });
      }
      y += b.h + BAND_GAP;
    }
    const labelsY = y + 6;
    const headers = m.order.map((id) => ({ op: m.operator(id), x: colX[depth.get(id)], w: colW[depth.get(id)] }));
    // Several operators in one column share it: side by side, each in a
    // part at least HEAD_W wide (the column was made wide enough).
    const byCol = new Map();
    for (const hd of headers) {
      const c = depth.get(hd.op.id);
      if (!byCol.has(c)) byCol.set(c, []);
      byCol.get(c).push(hd);
    }
    for (const list of byCol.values()) {
      list.forEach((hd, i) => { hd.w /= list.length; hd.x += i * hd.w; });
    }
    const edgeLabels = this.edgeLabelRows(headers);
    const rows = Math.max(1, ...edgeLabels.map((e) => (e ? e.row + 1 : 1)));
    const height = y + 44 + (rows - 1) * EDGE_ROW_H;
    const shape = JSON.stringify([width, boxW, bands.map((b) => [b.id, [...b.cells].map(([c, l]) => [c, l.map((x) => x.st.name)])]),
      snap.channels.map((c) => c.name), headers.map((hd) => [hd.op.id, hd.op.parallelism])]);
    return { width, height, bands, pos, headers, shape, labelsY, boxW, edgeLabels };
  }

  // edgeLabelRows places each edge's label (partitioner and rate) under the
  // bands, midway between the columns it joins; a label that would run into
  // one already placed (an edge that skips columns, as lesson 12's broadcast
  // edge does) goes on a row below.
  edgeLabelRows(headers) {
    const placed = [];
    return this.model.snap.job.edges.map((e) => {
      const from = headers.find((hd) => hd.op.id === e.from);
      const to = headers.find((hd) => hd.op.id === e.to);
      if (!from || !to) return null;
      const x = (from.x + from.w / 2 + to.x + to.w / 2) / 2;
      let row = 0;
      while (placed.some((p) => p.row === row && Math.abs(p.x - x) < EDGE_LABEL_W)) row++;
      placed.push({ x, row });
      return { x, row };
    });
  }

  // columnDepths is each operator's column: the longest path of edges to
  // it. It changes only with the job's operators and edges, so it is
  // computed again only when they change, not for every snapshot.
  columnDepths() {
    const m = this.model;
    const edges = m.snap.job.edges;
    const key = `${m.order.join(' ')}|${edges.map((e) => `${e.from}>${e.to}`).join(' ')}`;
    if (key === this.depthKey) return this.depths;
    const depth = new Map();
    for (const id of m.order) {
      let d = 0;
      for (const e of edges) if (e.to === id) d = Math.max(d, (depth.get(e.from) ?? 0) + 1);
      depth.set(id, d);
    }
    this.depthKey = key;
    this.depths = depth;
    return depth;
  }

  // render draws what changed and moves what travels; it says whether
  // something still moves (the frame loop then asks for the next frame).
  render(now) {
    if (!this.model.ready) return false;
    if (this.dirty) {
      const L = this.layout();
      if (L.shape !== this.shape) this.build(L);
      this.L = L;
      this.update(now);
      this.dirty = false;
    }
    return this.animate(now);
  }

  // build creates every element of the current shape.
  build(L) {
    // Keep the keyboard focus on the same control across a rebuild, and
    // what the person has typed into a parallelism field so far: a rebuild
    // between their digits and Enter made the new field show the old
    // parallelism, and Enter then asked for nothing (a site journey under
    // load typed 3 into count's field and the job stayed at 2).
    const active = this.overlay.contains(document.activeElement) ? document.activeElement : null;
    const focused = active ? active.dataset.focus : null;
    const typed = active && active.dataset.edited ? active.value : null;
    this.rebuilding = true;
    try { this.buildShape(L); } finally { this.rebuilding = false; }
    const el = focused ? this.overlay.querySelector(`[data-focus="${CSS.escape(focused)}"]`) : null;
    if (!el) return;
    if (typed !== null && el.tagName === 'INPUT') { el.value = typed; el.dataset.edited = '1'; }
    el.focus();
  }

  buildShape(L) {
    this.shape = L.shape;
    const snap = this.model.snap;
    attr(this.svg, 'viewBox', `0 0 ${L.width} ${L.height}`);
    attr(this.svg, 'width', L.width);
    attr(this.svg, 'height', L.height);
    // A graph wider than its panel scrolls sideways: room for the scrollbar.
    this.root.style.height = `${L.height + (L.width > this.root.clientWidth ? 16 : 0)}px`;
    clear(this.gBands); clear(this.gChans); clear(this.gQueues); clear(this.gBoxes); clear(this.gBarriers); clear(this.gEdges);
    clear(this.gPackets);
    for (const p of this.packets) p.el = null;
    clear(this.overlay);

    // Operator headers with rescale buttons.
    for (const hd of L.headers) {
      const op = hd.op;
      const el = h('div', { class: 'op-head', dataset: { op: op.id } },
        h('div', { class: 'op-name', title: `${op.id} · ${t(`kind.${op.kind}`)}` }, op.id, t(`kind.${op.kind}`).toLowerCase() !== op.id.toLowerCase() ? h('span', { class: 'op-kind' }, t(`kind.${op.kind}`)) : null),
        // Operator chaining: the task this operator runs in, named as
        // Flink's Web UI names it ("Source: words -> tokenizer").
        op.chain && op.chain.includes(' -> ') ? h('div', { class: 'op-chain', title: t('graph.chainTitle', { chain: op.chain }) }, op.chain) : null,
        h('div', { class: 'op-par' },
          h('button', { type: 'button', class: 'button mini', dataset: { focus: `op:${op.id}:-` }, 'aria-label': t('graph.rescaleDown', { op: op.id, p: op.parallelism - 1 }),
            title: t('graph.rescaleDown', { op: op.id, p: op.parallelism - 1 }), disabled: this.readOnly || op.parallelism <= 1,
            onclick: () => this.actions.rescale(op.id, op.parallelism - 1) }, '−'),
          this.parInput(op),
          h('button', { type: 'button', class: 'button mini', dataset: { focus: `op:${op.id}:+` }, 'aria-label': t('graph.rescaleUp', { op: op.id, p: op.parallelism + 1 }),
            title: t('graph.rescaleUp', { op: op.id, p: op.parallelism + 1 }), disabled: this.readOnly || op.parallelism >= this.maxPar(op),
            onclick: () => this.actions.rescale(op.id, op.parallelism + 1) }, '+')),
        h('label', { class: 'op-max', for: `par-${op.id}` }, t('graph.maxParallelism', { max: op.maxParallelism })));
      el.style.left = `${hd.x + 4}px`;
      el.style.width = `${hd.w - 8}px`;
      this.overlay.append(el);
    }

    // TaskManager bands.
    this.bandEls = new Map();
    for (const b of L.bands) {
      const rect = s('rect', { x: 4, y: b.y, width: L.width - 8, height: b.h, rx: 10, class: 'band' });
      const label = s('text', { x: 18, y: b.y + 24, class: 'band-title' });
      this.gBands.append(rect, label);
      const box = h('div', { class: 'tm-label' });
      box.style.top = `${b.y + 34}px`;
      this.overlay.append(box);
      this.bandEls.set(b.id, { rect, label, box });
    }

    // Channels.
    this.chanEls = new Map();
    for (const c of snap.channels) {
      const a = L.pos.get(c.from);
      const b = L.pos.get(c.to);
      if (!a || !b) continue;
      const x1 = a.x + L.boxW;
      const y1 = a.y + BOX_H / 2;
      const x2 = b.x;
      const y2 = b.y + BOX_H / 2;
      const dx = Math.max(30, (x2 - x1) / 2);
      const geom = { x1, y1, c1x: x1 + dx, c1y: y1, c2x: x2 - dx, c2y: y2, x2, y2 };
      const path = s('path', { d: `M${x1},${y1} C${geom.c1x},${y1} ${geom.c2x},${y2} ${x2},${y2}`, class: c.chained ? 'chan chained' : 'chan' });
      this.gChans.append(path);
      const q = s('rect', { class: 'queue', x: x2 - 6, y: y2 - 4, width: 0, height: 8, rx: 2 });
      const qt = s('text', { class: 'queue-text', x: x2 - 8, y: y2 - 8, 'text-anchor': 'end' });
      const lock = s('g', { class: 'lock', transform: `translate(${x2 - 14},${y2 + 6})` },
        s('rect', { x: 0, y: 3, width: 9, height: 7, rx: 1 }), s('path', { d: 'M2,3 v-2 a2.5,2.5 0 0 1 5,0 v2', fill: 'none' }));
      this.gQueues.append(q, qt, lock);
      this.chanEls.set(c.name, { path, q, qt, lock, geom, barriers: new Map() });
    }

    // Edge labels (partitioner and rate) between operator columns.
    this.edgeEls = [];
    snap.job.edges.forEach((e, i) => {
      const at = L.edgeLabels[i];
      if (!at) return;
      // Under the bands, between the two columns the edge joins.
      const { x } = at;
      const y = L.labelsY + at.row * EDGE_ROW_H;
      const tick = s('path', { class: 'edge-tick', d: `M${x},${L.labelsY} v${6 + at.row * EDGE_ROW_H}` });
      const label = s('text', { class: 'edge-label', x, y: y + 18, 'text-anchor': 'middle' });
      const rate = s('text', { class: 'edge-rate', x, y: y + 35, 'text-anchor': 'middle' });
      this.gEdges.append(tick, label, rate);
      this.edgeEls[i] = { label, rate, e };
    });

    // Subtask boxes with buttons over them.
    this.boxEls = new Map();
    for (const [name, p] of L.pos) {
      const g = s('g', { class: 'box', transform: `translate(${p.x},${p.y})` });
      const BW = L.boxW;
      const rect = s('rect', { width: BW, height: BOX_H, rx: 8, class: 'box-rect' });
      const bar = s('rect', { width: 6, height: BOX_H, rx: 3, class: 'box-bar' });
      const title = s('text', { x: 14, y: 18, class: 'box-title' }, name);
      const status = s('text', { x: 14, y: 35, class: 'box-status' });
      const detail = s('text', { x: 14, y: 51, class: 'box-detail' });
      const kgText = s('text', { x: 14, y: 65, class: 'box-detail' });
      const kg = s('rect', { x: BW - 18, y: 8, width: 10, height: 10, rx: 2, class: 'box-kg' });
      const bp = s('rect', { x: 6, y: 0, width: BW - 12, height: 3, class: 'box-bp' });
      g.append(rect, bar, bp, title, status, detail, kgText, kg);
      this.gBoxes.append(g);
      const btn = h('button', { type: 'button', class: 'box-button', dataset: { task: name, focus: `task:${name}` },
        onclick: () => (this.crashing() ? this.actions.crashSubtask(p.op.id, p.st.index) : this.actions.inspect(name)) });
      btn.style.left = `${p.x}px`;
      btn.style.top = `${p.y}px`;
      btn.style.width = `${BW}px`;
      btn.style.height = `${BOX_H}px`;
      this.overlay.append(btn);
      this.boxEls.set(name, { g, rect, bar, title, status, detail, kgText, kg, bp, btn });
    }
  }

  // update sets what changes without the shape changing.
  update(now) {
    const m = this.model;
    const snap = m.snap;
    const L = this.L;
    for (const b of L.bands) {
      const el = this.bandEls.get(b.id);
      if (!el) continue;
      const lost = b.tm && b.tm.status === 'LOST';
      toggle(el.rect, 'lost', lost);
      toggle(el.rect, 'unassigned', !b.tm);
      if (b.tm) {
        text(el.label, b.tm.id);
        const used = b.tm.tasks ? new Set(b.tm.tasks.map((x) => x)).size : 0;
        const slots = t('graph.slots', { n: b.tm.slots });
        const st = lost ? t('graph.tmLost') : t('graph.tmAlive');
        const key = `${b.tm.id}|${lost}|${b.tm.slots}|${used}|${!!this.readOnly}`;
        if (el.box.dataset.key !== key) {
          el.box.dataset.key = key;
          const hadFocus = el.box.contains(document.activeElement);
          clear(el.box).append(
            h('div', { class: `tm-state ${lost ? 'lost' : 'alive'}` }, `${st} · ${slots}`),
            lost
              ? h('button', { type: 'button', class: 'button mini', disabled: this.readOnly, dataset: { focus: `tm:${b.tm.id}` }, onclick: () => this.actions.restartTM(b.tm.id) }, t('graph.restartTm'))
              : h('button', { type: 'button', class: 'button mini danger', disabled: this.readOnly, dataset: { focus: `tm:${b.tm.id}` }, onclick: () => this.actions.crashTM(b.tm.id),
                'aria-label': t('graph.crashTmLabel', { tm: b.tm.id }) }, t('graph.crashTm')));
          if (hadFocus) el.box.querySelector('button')?.focus();
        }
      } else {
        text(el.label, t('graph.unassigned'));
        if (el.box.dataset.key !== `unassigned|${!!this.readOnly}`) {
          el.box.dataset.key = `unassigned|${!!this.readOnly}`;
          clear(el.box).append(h('div', { class: 'tm-state lost' }, t('graph.unassignedHint')),
            h('button', { type: 'button', class: 'button mini', disabled: this.readOnly, onclick: () => this.actions.addTM() }, t('controls.addTaskManager')));
        }
      }
    }
    for (const [name, el] of this.boxEls) {
      const tk = m.tasks.get(name);
      if (!tk) continue;
      const st = tk.st;
      attr(el.g, 'class', `box st-${st.status}${this.selected === name ? ' selected' : ''}`);
      text(el.status, st.status + (st.aligning ? ` · ${t('graph.aligning', { cp: st.aligning })}` : ''));
      const parts = [`${t('graph.in')} ${num(st.recordsIn)}`];
      if (tk.op.kind !== 'sink') parts.push(`${t('graph.out')} ${num(st.recordsOut)}`);
      fitText(el.detail, parts.join(' · '), L.boxW);
      fitText(el.kgText, st.keyGroups ? `${t('graph.kg')} ${st.keyGroups.start}–${st.keyGroups.end}` : '', L.boxW);
      fitText(el.status, el.status.textContent, L.boxW);
      const keyed = !!st.keyGroups;
      attr(el.kg, 'fill', keyed ? ownerColor(st.index) : 'none');
      toggle(el.kg, 'hidden', !keyed);
      toggle(el.bp, 'on', st.backpressured);
      const f = this.flash.get(name);
      toggle(el.g, 'flash', f !== undefined && now - f < 1200);
      const action = this.crashing() ? t('graph.clickCrash', { task: name }) : t('graph.clickInspect', { task: name });
      const label = `${name}: ${st.status}${st.taskManager ? `, ${st.taskManager}` : ''}${st.keyGroups ? `, ${t('term.keyGroups')} ${st.keyGroups.start}–${st.keyGroups.end}` : ''}. ${action}`;
      attr(el.btn, 'aria-label', label);
      attr(el.btn, 'title', action);
      toggle(el.btn, 'crash-tool', this.crashing());
    }
    for (const c of snap.channels) {
      const el = this.chanEls.get(c.name);
      if (!el) continue;
      toggle(el.path, 'blocked', c.blocked);
      toggle(el.lock, 'on', c.blocked);
    }
    for (const [i, el] of this.edgeEls.entries()) {
      if (!el) continue;
      const r = this.rates.get(i);
      text(el.label, t(`partitioner.${el.e.partitioner}`));
      fitText(el.rate, r !== undefined ? t('graph.rate', { n: num(Math.round(r)) }) : '', EDGE_LABEL_W + 10);
    }
  }

  // animate moves dots and barriers and draws the queues, every frame; it
  // says whether a dot or a barrier is still on its way.
  animate(now) {
    if (!this.chanEls) return false;
    let moving = false;
    const still = reducedMotion();
    if ((!this.onScreen || still) && this.packets.length) {
      for (const p of this.packets) p.el?.remove();
      this.packets = [];
    }
    const speed = this.model.snap.driver === 'live' ? 450 : 700;
    const keep = [];
    for (const p of this.packets) {
      const el = this.chanEls.get(p.ch);
      const tt = (now - p.born) / speed;
      if (!el || tt >= 1) {
        p.el?.remove();
        continue;
      }
      if (!p.el) {
        p.el = s('circle', { r: Math.min(5, 2.5 + Math.log10(1 + p.records)), class: 'packet' });
        this.gPackets.append(p.el);
      }
      const [x, y] = bezier(el.geom, easeInOut(tt) * 0.93);
      p.el.setAttribute('cx', x.toFixed(1));
      p.el.setAttribute('cy', y.toFixed(1));
      keep.push(p);
    }
    this.packets = keep;
    for (const [name, v] of this.chans) {
      const el = this.chanEls.get(name);
      if (!el) continue;
      const queued = Math.max(0, v.sent - v.delivered);
      const w = queued ? Math.min(60, 6 + Math.sqrt(queued) * 3) : 0;
      attr(el.q, 'width', w.toFixed(0));
      attr(el.q, 'x', (el.geom.x2 - w - 2).toFixed(0));
      text(el.qt, queued ? num(queued) : '');
      // Barriers: travel from the sender, then wait behind the records
      // sent before them.
      const seen = new Set();
      for (const b of v.barriers) {
        seen.add(b.cp);
        let be = el.barriers.get(b.cp);
        if (!be) {
          be = s('g', { class: b.savepoint ? 'barrier savepoint' : b.unaligned ? 'barrier unaligned' : 'barrier' },
            s('rect', { x: -2.5, y: -11, width: 5, height: 22, rx: 1.5 }),
            s('text', { y: -14, 'text-anchor': 'middle' }, String(b.cp)));
          this.gBarriers.append(be);
          el.barriers.set(b.cp, be);
        }
        const ahead = Math.max(0, b.before - v.delivered);
        const rest = 0.9 - Math.min(0.55, Math.sqrt(ahead) * 0.04);
        const travel = b.born && !still ? Math.min(1, (now - b.born) / speed) : 1;
        if (travel < 1) moving = true;
        const [x, y] = bezier(el.geom, rest * easeInOut(travel));
        attr(be, 'transform', `translate(${x.toFixed(1)},${y.toFixed(1)})`); // a barrier at rest is not redrawn
      }
      for (const [cp, be] of el.barriers) {
        if (!seen.has(cp)) { be.remove(); el.barriers.delete(cp); }
      }
    }
    return moving || this.packets.length > 0;
  }
}

function bezier(g, tt) {
  const u = 1 - tt;
  const x = u * u * u * g.x1 + 3 * u * u * tt * g.c1x + 3 * u * tt * tt * g.c2x + tt * tt * tt * g.x2;
  const y = u * u * u * g.y1 + 3 * u * u * tt * g.c1y + 3 * u * tt * tt * g.c2y + tt * tt * tt * g.y2;
  return [x, y];
}

function easeInOut(x) {
  return x < 0.5 ? 2 * x * x : 1 - (-2 * x + 2) ** 2 / 2;
}
