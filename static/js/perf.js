// The Performance page: starts the server's quick bench (POST /api/perf/run)
// and follows its progress (GET /api/perf) until it ends; then the page is
// drawn again by the server, so a fresh run shows in the same table and
// charts as the committed results (docs/protocol.md, "Performance page").

import { h, clear, $ } from './dom.js';
import { loadCatalog, t, has } from './i18n.js';

const root = $('perf');
const form = $('perf-run-form');
const runBtn = $('perf-run-btn');
const cancelBtn = $('perf-cancel-btn');
const progress = $('perf-progress');
const log = $('perf-log');
const logWrap = $('perf-log-wrap');

let timer = null;
let seenRunning = false;

function secs(s) {
  return s >= 60 ? t('perf.minSec', { m: Math.floor(s / 60), s: Math.round(s % 60) }) : t('perf.sec', { s: Math.round(s) });
}

// group is a bench group by its name on this page (perf.group.*), as the
// table's chips write it.
function group(id) {
  return has(`perf.group.${id}`) ? t(`perf.group.${id}`) : id;
}

function message(code, fallback) {
  const key = `perf.err.${code}`;
  return has(key) ? t(key) : fallback;
}

function render(st) {
  root.dataset.state = st.state;
  root.dataset.run = String(st.run);
  runBtn.disabled = !st.canRun;
  cancelBtn.hidden = st.state !== 'running';
  const parts = [];
  if (st.state === 'running') {
    const bar = h('progress', { max: st.groups.length, value: st.done, 'aria-label': t('perf.progressAria') });
    parts.push(h('p', {}, h('strong', {}, t('perf.running', { group: st.current ? group(st.current) : '…', done: st.done, total: st.groups.length,
      cases: st.cases, elapsed: secs(st.elapsedSeconds), cap: secs(st.timeoutSeconds) }))), bar);
  } else if (st.state === 'done') {
    parts.push(h('p', { class: 'perf-done' }, t('perf.done', { seconds: secs(st.elapsedSeconds), cases: st.cases })));
  } else if (st.state === 'failed') {
    parts.push(h('p', { class: 'notice error' }, t('perf.failed'), ' ', h('code', {}, st.error)));
  } else if (st.state === 'cancelled') {
    parts.push(h('p', { class: 'muted' }, t('perf.cancelled')));
  }
  if (!st.canRun && st.state !== 'running' && st.waitSeconds) parts.push(h('p', { class: 'muted' }, t('perf.wait', { n: st.waitSeconds })));
  clear(progress).append(...parts);
  if (st.lines.length && st.state !== 'idle') {
    logWrap.hidden = false;
    clear(log).append(...st.lines.slice(-12).map((l) => h('li', {}, l)));
  }
}

async function poll() {
  clearTimeout(timer);
  try {
    const r = await fetch('/api/perf', { headers: { Accept: 'application/json' } });
    const st = await r.json();
    render(st);
    if (st.state === 'running') {
      seenRunning = true;
      timer = setTimeout(poll, 1000);
      return;
    }
    if (seenRunning && st.state === 'done') {
      // The server draws the new results with the committed ones' table and charts.
      clear(progress).append(h('p', { class: 'perf-done' }, t('perf.doneReload')));
      setTimeout(() => location.reload(), 400);
      return;
    }
    seenRunning = false;
    if (st.waitSeconds) timer = setTimeout(poll, st.waitSeconds * 1000 + 200);
  } catch (err) {
    clear(progress).append(h('p', { class: 'notice error' }, t('perf.err.network'), ' ', h('code', {}, err.message)));
    timer = setTimeout(poll, 3000);
  }
}

async function start() {
  runBtn.disabled = true;
  clear(progress).append(h('p', {}, t('perf.starting')));
  try {
    const r = await fetch('/api/perf/run', { method: 'POST', headers: { Accept: 'application/json' } });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) {
      clear(progress).append(h('p', { class: 'notice error', dataset: { code: body.code } }, message(body.code, body.message), ' ', h('span', { class: 'muted' }, body.message || '')));
      timer = setTimeout(poll, 2000);
      return;
    }
    seenRunning = true;
    render(body);
    timer = setTimeout(poll, 500);
  } catch (err) {
    clear(progress).append(h('p', { class: 'notice error' }, t('perf.err.network'), ' ', h('code', {}, err.message)));
    runBtn.disabled = false;
  }
}

async function main() {
  await loadCatalog(document.body.dataset.lang);
  if (!form) return; // runs disabled on this server
  form.addEventListener('submit', (e) => { e.preventDefault(); start(); });
  cancelBtn.addEventListener('click', async () => {
    cancelBtn.disabled = true;
    await fetch('/api/perf/cancel', { method: 'POST' }).catch(() => {});
    cancelBtn.disabled = false;
    poll();
  });
  await poll();
  root.dataset.ready = 'true';
}

main();
