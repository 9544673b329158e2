// The timeline under the toolbar: a slider over the run's steps with marks
// for checkpoints, crashes, restores and rescales. Moving it shows the run
// at that step: the server replays seed + command log there ("seek").
// "Fork here" copies the run up to that step into a session of one's own.
// Beside it, the share menu: a link that replays the run, the scenario
// file (export / import), the event log, and the job graph as SVG or PNG.

import { h, s, clear, attr, text, prop } from './dom.js';
import { t } from './i18n.js';

const MARK_KINDS = ['checkpoint', 'savepoint', 'crash', 'restore', 'rescale', 'taskmanager', 'command'];

export class Timeline {
  // ws: the workspace element; send(name, args) -> Promise of the ack;
  // toast(msg, kind); onFork(session) switches to a forked session.
  constructor(ws, model, send, toast, onFork) {
    this.model = model;
    this.send = send;
    this.toast = toast;
    this.onFork = onFork;
    this.tl = { replayable: false, head: 0, markers: [] };
    this.dragging = false;
    this.pendingSeek = null;
    this.seeking = false;
    this.readOnly = false;

    this.range = h('input', { type: 'range', id: 'tl-range', min: 0, max: 0, step: 1, value: 0, 'aria-describedby': 'tl-pos' });
    this.marks = s('svg', { class: 'tl-marks', 'aria-hidden': 'true', preserveAspectRatio: 'none', viewBox: '0 0 1000 10' });
    this.pos = h('output', { id: 'tl-pos', class: 'tl-pos', for: 'tl-range' });
    this.present = h('button', { type: 'button', class: 'button mini', id: 'tl-present', onclick: () => this.seek(-1) }, t('timeline.present'));
    this.forkBtn = h('button', { type: 'button', class: 'button mini', id: 'tl-fork', onclick: () => this.forkHere() }, t('timeline.forkHere'));
    this.reason = h('span', { class: 'tl-reason hint', id: 'tl-reason' });
    this.el = h('div', { class: 'timeline', id: 'timeline', role: 'group', 'aria-label': t('timeline.label') },
      h('label', { for: 'tl-range', class: 'tl-label' }, t('timeline.label')),
      h('div', { class: 'tl-track' }, this.marks, this.range),
      this.pos, this.present, this.forkBtn, this.reason, shareMenu(this));
    ws.querySelector('.toolbar')?.after(this.el);

    this.range.addEventListener('pointerdown', () => { this.dragging = true; });
    this.range.addEventListener('pointerup', () => { this.dragging = false; });
    // While dragging, seek at most every 250 ms (each seek replays the
    // run); the final position is always sent.
    this.range.addEventListener('input', () => {
      this.showPos(Number(this.range.value));
      this.queueSeek(Number(this.range.value));
    });
    this.range.addEventListener('change', () => this.queueSeek(Number(this.range.value)));
    model.on((change) => { if (change.type === 'snapshot') this.render(); });
  }

  // update takes the server's "timeline" message.
  update(m) {
    this.tl = m;
    this.render();
  }

  head() {
    const snap = this.model.snap;
    if (this.tl.view != null) return this.tl.head;
    return Math.max(this.tl.head || 0, snap?.step || 0);
  }

  viewing() { return this.tl.view != null; }

  render() {
    const snap = this.model.snap;
    const live = snap?.driver === 'live';
    const ok = this.tl.replayable && !live;
    this.el.classList.toggle('unavailable', !ok);
    this.el.classList.toggle('viewing', this.viewing());
    // A classroom follower sees the timeline but may not move it.
    prop(this.range, 'disabled', !ok || this.readOnly);
    // A fork copies the run in either mode: at full speed, the present.
    prop(this.forkBtn, 'disabled', !snap);
    prop(this.present, 'disabled', !this.viewing() || this.readOnly);
    text(this.reason, ok ? '' : (this.tl.reason || ''));
    const head = this.head();
    attr(this.range, 'max', head);
    if (!this.dragging && this.pendingSeek === null && !this.seeking) {
      this.range.value = this.viewing() ? this.tl.view : head;
    }
    this.showPos(Number(this.range.value));
    this.drawMarks(head);
  }

  showPos(step) {
    const head = this.head();
    text(this.pos, this.viewing() || step < head ? t('timeline.viewing', { step, head }) : t('timeline.at', { step, head }));
  }

  drawMarks(head) {
    // Redraw when a mark came, or the run grew by more than half a percent
    // (the marks' places move with the head, by less than a pixel otherwise).
    const ms = this.tl.markers || [];
    const n = `${ms.length}|${ms.length ? ms[ms.length - 1].step : 0}`;
    if (this.marksN === n && this.marksHead && Math.abs(head - this.marksHead) <= this.marksHead * 0.005) return;
    this.marksN = n;
    this.marksHead = head;
    clear(this.marks);
    if (!head) return;
    for (const m of this.tl.markers || []) {
      if (!MARK_KINDS.includes(m.kind)) continue;
      const x = (m.step / head) * 1000;
      this.marks.append(s('rect', { class: `mark mark-${m.kind}`, x: x - 1.5, y: 0, width: 3, height: 10 },
        s('title', {}, `${t(`timeline.marker.${m.kind}`)} · ${m.step}: ${m.label}`)));
    }
  }

  queueSeek(step) {
    this.pendingSeek = step;
    if (this.seeking) return;
    const next = () => {
      if (this.pendingSeek === null) { this.seeking = false; return; }
      const want = this.pendingSeek;
      this.pendingSeek = null;
      this.seeking = true;
      const target = want >= this.head() ? -1 : want;
      this.send('seek', { step: target }).catch(() => {}).finally(() => setTimeout(next, 250));
    };
    next();
  }

  seek(step) {
    this.pendingSeek = null;
    return this.send('seek', { step }).catch(() => {});
  }

  // stepBy moves along the timeline (presenter's clicker): forward steps
  // the run (or the view of the past), backward travels in time.
  stepBy(n) {
    const cur = this.viewing() ? this.tl.view : this.head();
    if (n > 0 && !this.viewing()) return this.send('step', { count: n }).catch(() => {});
    return this.seek(Math.max(0, cur + n));
  }

  forkHere() {
    const ok = this.tl.replayable && this.model.snap?.driver !== 'live';
    const args = this.viewing() || !ok ? {} : { step: Number(this.range.value) };
    this.send('fork', args).then((ack) => {
      this.toast(t('toast.forked', { step: ack.step }));
      this.onFork?.(ack.session, ack.step);
    }).catch(() => {});
  }
}

// --- share menu -------------------------------------------------------------------

function shareMenu(tl) {
  const session = () => tl.model.snap?.session;
  const item = (key, fn, id) => h('button', { type: 'button', class: 'button mini', id, onclick: fn }, t(key));
  const file = h('input', { type: 'file', accept: 'application/json,.json', class: 'visually-hidden', id: 'share-file' });
  file.addEventListener('change', () => importScenario(file, tl));
  const linkOut = h('input', { type: 'text', readonly: true, class: 'share-link', id: 'share-link', hidden: true, 'aria-label': t('share.copyPrompt') });
  return h('details', { class: 'share-menu', id: 'share-menu' },
    h('summary', { class: 'button mini' }, t('share.menu')),
    h('div', { class: 'share-items' },
      item('share.link', () => shareLink(session(), linkOut, tl), 'share-copy'),
      linkOut,
      item('share.scenario', () => download(`/api/sessions/${encodeURIComponent(session())}/scenario`), 'share-scenario'),
      item('share.flink', () => download(`/api/sessions/${encodeURIComponent(session())}/export-flink`), 'share-flink'),
      item('share.import', () => file.click(), 'share-import'),
      file,
      item('share.events', () => download(`/api/sessions/${encodeURIComponent(session())}/events?format=jsonl`), 'share-events'),
      item('share.eventsCsv', () => download(`/api/sessions/${encodeURIComponent(session())}/events?format=csv`), 'share-events-csv'),
      item('share.svg', () => exportGraph('svg'), 'share-svg'),
      item('share.png', () => exportGraph('png'), 'share-png')));
}

async function shareLink(session, out, tl) {
  try {
    const r = await fetch(`/api/sessions/${encodeURIComponent(session)}/share`);
    const body = await r.json();
    if (!r.ok) throw new Error(body.message || `HTTP ${r.status}`);
    out.value = body.url;
    out.hidden = false;
    out.select();
    // The clipboard needs a secure context (https or localhost); on a LAN
    // address the selected field is there to copy from.
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(body.url);
      tl.toast(t('share.copied'));
    }
  } catch (err) {
    tl.toast(err.message || String(err), 'error');
  }
}

function download(url) {
  const a = h('a', { href: url, download: '' });
  document.body.append(a);
  a.click();
  a.remove();
}

async function importScenario(input, tl) {
  const f = input.files?.[0];
  input.value = '';
  if (!f) return;
  try {
    const r = await fetch('/api/scenarios', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: await f.text() });
    const body = await r.json();
    if (!r.ok) throw new Error(body.message || `HTTP ${r.status}`);
    tl.toast(t('share.imported'));
    location.href = body.url;
  } catch (err) {
    tl.toast(err.message || String(err), 'error');
  }
}

// exportGraph saves the job graph as a standalone SVG (the page's styles
// that the drawing uses are copied onto its elements) or as a PNG drawn
// from that SVG on a canvas, twice the screen size.
export function graphSVG() {
  const src = document.querySelector('#graph svg');
  if (!src) return null;
  const copy = src.cloneNode(true);
  const props = ['fill', 'stroke', 'stroke-width', 'stroke-dasharray', 'opacity', 'font-size', 'font-family', 'font-weight', 'text-anchor', 'dominant-baseline', 'visibility', 'display'];
  const a = src.querySelectorAll('*');
  const b = copy.querySelectorAll('*');
  for (let i = 0; i < a.length; i++) {
    const cs = getComputedStyle(a[i]);
    const decl = props.map((p) => `${p}:${cs.getPropertyValue(p)}`).join(';');
    b[i].setAttribute('style', decl);
  }
  const box = src.getBoundingClientRect();
  copy.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  copy.setAttribute('width', Math.round(box.width));
  copy.setAttribute('height', Math.round(box.height));
  copy.insertBefore(s('rect', { x: 0, y: 0, width: '100%', height: '100%', fill: '#ffffff' }), copy.firstChild);
  return { text: new XMLSerializer().serializeToString(copy), width: box.width, height: box.height };
}

async function exportGraph(kind) {
  const g = graphSVG();
  if (!g) return;
  const name = `statelab-graph-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  if (kind === 'svg') {
    saveBlob(new Blob([g.text], { type: 'image/svg+xml' }), `${name}.svg`);
    return;
  }
  const blob = await graphPNG(g);
  saveBlob(blob, `${name}.png`);
}

// graphPNG draws the SVG text on a canvas. The image loads from a data:
// URL, which the page's CSP allows for images.
export function graphPNG(g, scale = 2) {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => {
      const c = document.createElement('canvas');
      c.width = Math.round(g.width * scale);
      c.height = Math.round(g.height * scale);
      const ctx = c.getContext('2d');
      ctx.scale(scale, scale);
      ctx.drawImage(img, 0, 0, g.width, g.height);
      c.toBlob((b) => (b ? resolve(b) : reject(new Error('cannot encode the PNG'))), 'image/png');
    };
    img.onerror = () => reject(new Error('cannot draw the SVG'));
    img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(g.text)}`;
  });
}

function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
