// The live view of a session: connects the WebSocket, keeps the model, and
// draws every panel from it in animation frames asked for while something
// changes or moves.

import { $, h, text, prop } from './dom.js';
import { clock, dur } from './format.js';
import { loadCatalog, t, getLang, errorText } from './i18n.js';
import { Connection } from './conn.js';
import { sitePath } from './inpage.js';
import { Model } from './model.js';
import { Controls } from './controls.js';
import { GraphView } from './views/graph.js';
import { StripView } from './views/strip.js';
import { InspectorView } from './views/inspector.js';
import { SourcesView } from './views/sources.js';
import { CheckpointsView } from './views/checkpoints.js';
import { SinkView } from './views/sink.js';
import { LogView } from './views/log.js';
import { ExplainView } from './views/explain.js';
import { Timeline } from './timeline.js';
import { UpgradeDialog } from './upgrade.js';

async function main() {
  const ws = $('workspace');
  if (!ws) return;
  await loadCatalog(document.body.dataset.lang || 'en');
  const model = new Model();
  let conn = null;

  const toastEl = $('toast');
  let toastTimer = 0;
  let refusal = { msg: '', at: 0 };
  const toast = (msg, kind = 'info') => {
    // News right after a refusal (a lesson step ticks because the engine
    // refused, as lesson 09 asks) must not wipe the refusal before anyone
    // reads it: both show, the refusal first.
    if (kind !== 'error' && refusal.msg && !toastEl.hidden && Date.now() - refusal.at < 6000) {
      toastEl.textContent = `${refusal.msg}\n${msg}`;
      refusal.msg = '';
      return;
    }
    refusal = kind === 'error' ? { msg, at: Date.now() } : { msg: '', at: 0 };
    toastEl.textContent = msg;
    toastEl.className = `toast ${kind}`;
    toastEl.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { toastEl.hidden = true; }, kind === 'error' ? 9000 : 3500);
  };
  const send = (name, args) => conn.command(name, args).catch((err) => {
    toast(errorText(err), 'error');
    throw err;
  });
  const quiet = (p) => p.catch(() => {});

  const actions = {
    notify: (msg, kind) => toast(msg, kind),
    crashSubtask: (op, index) => quiet(send('crash-subtask', { operator: op, index })),
    crashTM: (id) => quiet(send('crash-taskmanager', { taskManager: id })),
    restartTM: (id) => quiet(send('restart-taskmanager', { taskManager: id })),
    addTM: () => quiet(send('add-taskmanager').then(() => toast(t('toast.addTm')))),
    restore: (checkpoint) => quiet(send('restore', { checkpoint })),
    // onRefused (optional) runs after the refusal's toast, with the error.
    rescale: (op, p, onRefused) => quiet(send('rescale', { operator: op, parallelism: p }).then(() => toast(t('toast.rescale', { op, p })),
      (err) => { onRefused?.(err); throw err; })),
    rescaleKeyed: (dir) => {
      const op = model.ready && (model.keyedOperators()[0] || model.snap.job.operators[0]);
      if (op) actions.rescale(op.id, op.parallelism + dir);
    },
    inspect: (task) => { inspector.show(task); graph.select(task); $('inspect-task').focus(); },
    switchLanguage: () => {
      const other = document.querySelector(`[data-lang-link]:not([data-lang-link="${getLang()}"])`);
      if (other) location.href = other.href;
    },
  };

  const api = {
    async taskState(task, keyGroup) {
      const q = keyGroup === undefined ? '' : `?keyGroup=${keyGroup}`;
      const r = await fetch(`/api/sessions/${encodeURIComponent(model.snap.session)}/tasks/${encodeURIComponent(task)}/state${q}`);
      const body = await r.json();
      if (!r.ok) throw new Error(body.message || `HTTP ${r.status}`);
      return body;
    },
    async keysOf(task, keyGroup) {
      const d = await api.taskState(task, keyGroup);
      const keys = [...new Set(d.keyed.map((e) => e.key))];
      return { keys, total: keys.length };
    },
  };

  const graph = new GraphView($('graph'), model, actions);
  const strip = new StripView($('strip'), model, api, $('key-form'));
  const inspector = new InspectorView($('inspector'), $('inspect-task'), model, api);
  const sources = new SourcesView($('sources'), model);
  const checkpoints = new CheckpointsView($('checkpoints'), model);
  const sink = new SinkView($('sink'), model);
  const log = new LogView($('log'), $('log-data'), model);
  const explain = new ExplainView($('explain-body'), model, actions);
  const controls = new Controls(model, send, actions, toast);
  new UpgradeDialog(model, send, toast); // eslint-disable-line no-new
  const timeline = new Timeline(ws, model, send, toast, (session, step) => {
    location.href = sitePath(`/sandbox/live?session=${encodeURIComponent(session)}&forked=${encodeURIComponent(step ?? '')}`);
  });
  explain.timeline = timeline;
  // A fork plays on from where it was copied, and its story says what it is
  // a copy of; the page of a fork carries forked=<step> in its address.
  let resumeFork = null;
  const forked = (session, step, resume = true) => {
    explain.fork = { step: Number(step) || 0 };
    explain.episode = null;
    explain.previous = null;
    explain.dirty = true;
    resumeFork = resume ? session : null;
  };
  const params = new URLSearchParams(location.search);
  if (params.has('forked') && params.get('session')) {
    // Played once, on the page the fork opened; a reload or a language
    // switch keeps the fork's story but not a pause the learner chose.
    const key = `statelab.forkPlayed.${params.get('session')}`;
    let first = true;
    try { first = !sessionStorage.getItem(key); sessionStorage.setItem(key, '1'); } catch { /* storage off: play it */ }
    forked(params.get('session'), params.get('forked'), first);
  }
  const views = [graph, strip, inspector, sources, checkpoints, sink, log, explain];
  const names = ['graph', 'strip', 'inspector', 'sources', 'checkpoints', 'sink', 'log', 'explain'];
  // Milliseconds spent per view, for the browser test's frame-rate report.
  const timing = Object.fromEntries(names.map((n) => [n, 0]));
  timing.messages = 0;
  model.on((change) => {
    views.forEach((v, i) => {
      const t0 = performance.now();
      v.onChange(change);
      timing[names[i]] += performance.now() - t0;
    });
    if (change.type === 'snapshot') controls.update();
  });
  for (const input of document.querySelectorAll('input[name="tool"]')) {
    input.addEventListener('change', () => { if (input.checked) graph.setTool(input.value); });
  }

  const status = $('conn');
  const jobStatus = $('job-status');
  const jobName = $('job-name');
  const meta = $('job-meta');
  const clockEl = $('clock');
  // The header is set on every change (20 times a second while records
  // flow), through text and prop: they write only what differs, and an
  // unchanged header costs the page no restyle.
  const renderStatus = () => {
    const snap = model.snap;
    if (!snap) return;
    text(jobName, snap.job.name);
    // A job waiting for slots is RUNNING as Flink reports it, yet nothing
    // runs: the badge says what it waits for.
    const waiting = snap.job.waitingForResources && snap.job.status === 'RUNNING';
    let badge = waiting
      ? `${snap.job.status} · ${t('status.waitingSlots', { need: snap.job.slotsNeeded, have: snap.job.slotsAvailable })}`
      : snap.job.status;
    // RESTARTING says when: the restart strategy's delay (job time).
    const r = snap.job.restart;
    if (snap.job.status === 'RESTARTING' && r?.restartAt > snap.at) {
      badge = `${snap.job.status} · ${t('status.restartIn', { d: dur(r.restartAt - snap.at), strategy: r.strategy })}`;
    }
    text(jobStatus, badge);
    prop(jobStatus, 'className', `badge st-${snap.job.status}${waiting ? ' waiting' : ''}`);
    text(meta, `${t(`backendName.${snap.backend}`)} · ${t(`mode.${snap.driver}`)} · ${t('status.seed', { seed: snap.seed })}`);
  };
  const clockText = (snap) => (snap.driver === 'step' ? t('status.clockStep', { step: snap.step, time: clock(snap.at) }) : t('status.clockLive', { time: clock(snap.at) }));
  model.on(() => renderStatus());

  const handlers = {
    onSnapshot: (m) => {
      const t0 = performance.now();
      model.applySnapshot(m);
      timing.messages += performance.now() - t0;
      if (resumeFork && m.session === resumeFork) {
        resumeFork = null;
        if (m.paused) send('resume').catch(() => {});
      }
      if (!location.search.includes(`session=${m.session}`) && location.pathname.startsWith('/sandbox')) {
        history.replaceState(null, '', `/sandbox/live?session=${encodeURIComponent(m.session)}`);
        for (const a of document.querySelectorAll('[data-lang-link]')) {
          a.href = `/sandbox/live?session=${encodeURIComponent(m.session)}&lang=${a.dataset.langLink}`;
        }
      }
      text(clockEl, clockText(m));
      ws.dataset.ready = 'true';
    },
    onEvents: (evs) => {
      model.applyEvents(evs);
      const last = evs[evs.length - 1];
      if (last && model.snap) {
        model.snap.at = Math.max(model.snap.at, last.at);
        if (last.step) model.snap.step = Math.max(model.snap.step, last.step);
        text(clockEl, clockText(model.snap));
        // The timeline counts the same steps as the header.
        timeline.render();
      }
    },
    onStatus: (state, detail) => {
      status.dataset.state = state;
      status.textContent = t(`conn.${state}`) + (detail ? ` — ${detail}` : '');
    },
    onError: (m) => toast(m.message, 'error'),
    onTimeline: (m) => { timeline.update(m); explain.dirty = true; },
    // A lesson session's progress, for the lesson page (lesson.js).
    onLesson: (m) => document.dispatchEvent(new CustomEvent('statelab:lesson', { detail: m })),
  };
  // connect opens the socket for query, closing the open one (a classroom
  // follower switches between following and its fork this way).
  const connect = (query) => {
    conn?.close();
    conn = new Connection(query, handlers);
    if (window.statelab) window.statelab.conn = conn;
  };
  connect(ws.dataset.ws);

  // One frame loop draws every panel; a panel with nothing new does nothing.
  // Frames are asked for only while something may have changed: a message
  // from the server (every change of the model), a person's input, the page
  // shown again, and for as long as a panel's render says it moves (the
  // graph's dots and barriers, the key-group strip's pulse). A quarter-second
  // tick draws what a panel marked dirty on its own (a resize, a timer). A
  // loop that asked for every frame kept a paused page's browser drawing 60
  // frames a second for nothing (issue 16's notes).
  // A hidden page draws nothing (browsers also stop animation frames there,
  // but not every embedding does); when it shows again every panel redraws
  // once from the newest snapshot.
  let asked = false;
  const wake = () => {
    if (asked) return;
    asked = true;
    requestAnimationFrame(frame);
  };
  const frame = (now) => {
    asked = false;
    if (document.hidden) return; // visibilitychange wakes it
    let moving = false;
    views.forEach((v, i) => {
      if (!v.render) return;
      const t0 = performance.now();
      try {
        if (v.render(now)) moving = true;
      } catch (err) {
        console.error(`render ${names[i]}:`, err); // one failing panel does not stop the others
      }
      timing[names[i]] += performance.now() - t0;
    });
    if (moving) wake();
  };
  wake();
  model.on(wake);
  for (const type of ['pointerdown', 'click', 'keydown', 'input', 'change', 'resize']) {
    addEventListener(type, wake, { capture: true, passive: true });
  }
  setInterval(wake, 250);
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) return;
    for (const v of views) if ('dirty' in v) v.dirty = true;
    wake();
  });
  // setReadOnly: a classroom follower sees every control, greyed out, and
  // the reason beside them (classroom.js); subtasks are then inspected on a click.
  const setReadOnly = (on) => {
    ws.dataset.readonly = String(on);
    controls.setReadOnly(on);
    graph.setReadOnly(on);
    for (const input of document.querySelectorAll('input[name="tool"]')) {
      if (input.value === 'crash') input.disabled = on;
      if (on && input.value === 'inspect') input.checked = true;
    }
    if (!on) graph.setTool(document.querySelector('input[name="tool"]:checked')?.value || 'crash');
  };
  const unfork = () => { explain.fork = null; explain.dirty = true; };
  window.statelab = { model, conn, graph, strip, timing, connect, send, toast, timeline, setReadOnly, forked, unfork };
  document.dispatchEvent(new CustomEvent('statelab:ready', { detail: window.statelab }));
}

main().catch((err) => {
  const ws = $('workspace');
  if (ws) ws.prepend(h('p', { class: 'notice error' }, `StateLab could not start this view: ${err.message || err}. Reload the page; if it happens again, check that the StateLab server is still running.`));
});
