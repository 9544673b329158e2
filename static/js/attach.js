// The attach page: a form for a real JobManager's REST address, then the
// views of its jobs. The browser talks only to StateLab: POST /api/attach
// starts (or joins) the server's reading of that JobManager, GET
// /api/attach/{id} returns the last good reading beside the latest error
// (docs/protocol.md, "Attach mode"). The page stays up whatever Flink does:
// an error is shown with what to do, and the last good reading stays.

import { h, clear, $ } from './dom.js';
import { loadCatalog, t, has } from './i18n.js';
import { JobView } from './views/attachjob.js';

const page = $('attach');
const form = $('attach-form');
const statusEl = $('attach-status');
const errorEl = $('attach-error');
const warningsEl = $('attach-warnings');
const jobsEl = $('attach-jobs');
const stopBtn = $('attach-stop');

const api = {
  watch: null, // {id, intervalMillis}
  async get(path, params) {
    const q = new URLSearchParams(params);
    const r = await fetch(`/api/attach/${encodeURIComponent(this.watch.id)}/${path}?${q}`, { headers: { Accept: 'application/json' } });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw issue(body.error);
    return body;
  },
};

let timer = null;
let generation = 0; // a new attach makes older replies stale
const jobViews = new Map();

function issue(e) {
  const err = new Error(e?.message || t('attach.err.failed.title'));
  err.code = e?.code || 'failed';
  err.field = e?.field;
  return err;
}

// advice is the page's "what to do" for an error code, in the page's language.
function advice(code) {
  const key = `attach.err.${code}.todo`;
  return has(key) ? t(key) : t('attach.err.failed.todo');
}

function title(code) {
  const key = `attach.err.${code}.title`;
  return has(key) ? t(key) : t('attach.err.failed.title');
}

function showError(e, stale) {
  if (!e) {
    errorEl.hidden = true;
    clear(errorEl);
    return;
  }
  errorEl.hidden = false;
  errorEl.dataset.code = e.code;
  const kids = [
    h('p', { class: 'attach-error-title' }, h('strong', {}, title(e.code))),
    h('p', {}, advice(e.code)),
    h('p', { class: 'attach-detail' }, h('code', {}, e.message))];
  if (stale) kids.push(h('p', { class: 'muted' }, t('attach.staleNote')));
  clear(errorEl).append(...kids);
}

function showWarnings(list) {
  if (!list.length) {
    warningsEl.hidden = true;
    clear(warningsEl);
    return;
  }
  warningsEl.hidden = false;
  const items = list.map((w) => h('li', { class: `warning w-${w.code}`, dataset: { code: w.code } },
    h('strong', {}, title(w.code)), ' — ', advice(w.code),
    h('div', { class: 'attach-detail' }, h('code', {}, w.message))));
  clear(warningsEl).append(h('h2', {}, t('attach.warnings', { n: list.length })), h('ul', {}, items));
}

function timeOf(iso) {
  return iso ? new Date(iso).toLocaleTimeString(document.documentElement.lang === 'zh' ? 'zh-CN' : 'en-GB') : '';
}

function showStatus(st) {
  const parts = [h('span', { class: 'conn', dataset: { state: st.error ? 'failed' : (st.updatedAt ? 'open' : 'connecting') } },
    st.error ? t('attach.state.error') : (st.updatedAt ? t('attach.state.ok') : t('attach.state.connecting'))),
  h('strong', { class: 'attach-address' }, st.flink),
  h('span', { class: 'muted' }, t('attach.every', { interval: st.interval }))];
  if (st.updatedAt) parts.push(h('span', { class: 'muted' }, (st.stale ? t('attach.staleAt', { time: timeOf(st.updatedAt) }) : t('attach.updatedAt', { time: timeOf(st.updatedAt) }))));
  else if (st.checkedAt) parts.push(h('span', { class: 'muted' }, t('attach.never')));
  parts.push(h('span', { class: 'muted' }, t('attach.polls', { n: st.polls })));
  clear(statusEl).append(...parts);
}

function render(st) {
  page.dataset.ready = 'true';
  page.dataset.polls = String(st.polls);
  showStatus(st);
  showError(st.error, st.stale);
  showWarnings(st.warnings || []);
  if (!st.updatedAt) {
    if (!jobViews.size && st.polls > 0 && !st.error) clear(jobsEl).append(h('p', { class: 'empty' }, t('attach.noJobs')));
    return;
  }
  const seen = new Set();
  if (!st.jobs.length) {
    for (const v of jobViews.values()) v.remove();
    jobViews.clear();
    clear(jobsEl).append(h('p', { class: 'empty' }, t('attach.noJobs')));
    return;
  }
  jobsEl.querySelector(':scope > p.empty')?.remove();
  for (const job of st.jobs) {
    seen.add(job.id);
    let v = jobViews.get(job.id);
    if (!v) {
      v = new JobView(job, api, st.labels);
      jobViews.set(job.id, v);
      jobsEl.append(v.root);
    }
    v.update(job);
  }
  for (const [id, v] of jobViews) {
    if (!seen.has(id)) { v.remove(); jobViews.delete(id); }
  }
}

async function poll(gen) {
  if (gen !== generation || !api.watch) return;
  try {
    const r = await fetch(`/api/attach/${encodeURIComponent(api.watch.id)}`, { headers: { Accept: 'application/json' } });
    const body = await r.json().catch(() => ({}));
    if (gen !== generation) return;
    if (r.status === 404 && body.error?.code === 'unknown-watch') {
      // The server stopped reading (idle, restarted): attach again.
      await start(readForm(), gen);
      return;
    }
    if (!r.ok) throw issue(body.error);
    render(body);
  } catch (err) {
    if (gen !== generation) return;
    showError({ code: err.code || 'network', message: err.message }, jobViews.size > 0);
  }
  schedule(gen);
}

function schedule(gen) {
  clearTimeout(timer);
  // Ask StateLab at the poll interval, at least every 5 s so the server
  // knows the page is still open, at most every second.
  const every = Math.min(5000, Math.max(1000, api.watch?.intervalMillis || 2000));
  timer = setTimeout(() => poll(gen), every);
}

function readForm() {
  const fd = new FormData(form);
  return { flink: String(fd.get('flink') || '').trim(), interval: String(fd.get('interval') || '').trim(), maxParallelism: String(fd.get('maxParallelism') || '').trim() };
}

async function start(req, gen) {
  clear(statusEl).append(h('span', { class: 'conn', dataset: { state: 'connecting' } }, t('attach.state.connecting')), ' ', req.flink);
  try {
    const r = await fetch('/api/attach', { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, body: JSON.stringify(req) });
    const body = await r.json().catch(() => ({}));
    if (gen !== generation) return;
    if (!r.ok) throw issue(body.error);
    api.watch = { id: body.id, intervalMillis: body.intervalMillis };
    stopBtn.hidden = false;
    render(body);
    schedule(gen);
  } catch (err) {
    if (gen !== generation) return;
    clear(statusEl);
    page.dataset.ready = 'true';
    showError({ code: err.code || 'network', message: err.message }, false);
  }
}

function stop() {
  generation++;
  clearTimeout(timer);
  if (api.watch) {
    fetch(`/api/attach/${encodeURIComponent(api.watch.id)}`, { method: 'DELETE' }).catch(() => {});
  }
  api.watch = null;
  stopBtn.hidden = true;
  clear(statusEl).append(h('span', { class: 'muted' }, t('attach.stopped')));
}

function attachNow() {
  const req = readForm();
  if (!req.flink) return;
  // The address belongs in the page's URL, so a reading can be bookmarked.
  const q = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(req)) {
    if (v) q.set(k, v); else q.delete(k);
  }
  history.replaceState(null, '', `${location.pathname}?${q}`);
  if (api.watch) stop();
  generation++;
  for (const v of jobViews.values()) v.remove();
  jobViews.clear();
  clear(jobsEl);
  showError(null);
  showWarnings([]);
  start(req, generation);
}

async function main() {
  await loadCatalog(document.body.dataset.lang);
  form.addEventListener('submit', (e) => { e.preventDefault(); attachNow(); });
  stopBtn.addEventListener('click', stop);
  let resizeTimer = null;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { for (const v of jobViews.values()) v.resized(); }, 150);
  });
  if (readForm().flink && new URLSearchParams(location.search).has('flink')) attachNow();
  else page.dataset.ready = 'true';
  window.statelab = { attach: { api, jobViews } };
}

main();
