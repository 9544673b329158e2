// A lesson page: the lesson's own session beside its text. This module opens
// the session at the step of the address's #step-N (the server plays the
// lesson up to there), starts the live view (live.js), and follows the
// server's "lesson" messages: the current step, a tick when a step's check
// holds, "do it for me" and "replay this step". Progress is kept in the
// browser (localStorage), per lesson, as the steps ever done.

import { $, reducedMotion } from './dom.js';
import { t } from './i18n.js';
import { loadProgress, markDone } from './progress.js';

const root = document.querySelector('.lesson');
const ws = $('workspace');
const slug = root?.dataset.lesson;
const total = Number(root?.dataset.steps || 0);
const stepEls = [...document.querySelectorAll('.steps .step')];
// Code blocks and tables of the text scroll sideways when wide: the
// keyboard must reach them too (WCAG 2.1.1).
for (const el of document.querySelectorAll('.md pre, .md table')) el.tabIndex = 0;

// stepFromHash reads #step-N (0 when absent or out of range).
function stepFromHash() {
  const m = /^#step-(\d+)$/.exec(location.hash);
  const n = m ? Number(m[1]) : 0;
  return n >= 1 && n <= total ? n : 0;
}

// A deep link opens a new session at its step; joining a running session
// (a language switch) keeps that session's step.
const linked = stepFromHash();
const joining = Boolean(ws && ws.dataset.ws.startsWith('session='));
if (ws && !joining && linked > 1) ws.dataset.ws += `&step=${linked}`;

const state = {
  lesson: null, // the newest lesson message
  ticks: [], // steps ticked on this page, in order (the browser test reads them)
  session: null,
  scrolled: false,
  replaying: 0, // the step a replay goes to: the steps before it are played, not ticked
};

let app = null;

function stepEl(n) { return stepEls[n - 1]; }

// send runs a command; failures are shown by live.js's toast.
function send(name, args) {
  return app.send(name, args);
}

// Predictions ("predict first"): a step may ask a question before its
// action (a form.predict card the server renders at the top of the step).
// The learner commits an answer, acts, and when the step is done sees the
// engine's answer beside theirs, with the why. Never blocking: the step
// ticks whatever was answered, and an unanswered card is revealed too.
function wirePredictions() {
  for (const f of document.querySelectorAll('form.predict')) {
    f.addEventListener('submit', (e) => {
      e.preventDefault();
      let v = new FormData(f).get('answer');
      if (v === null || v === '') return;
      if (f.querySelector('input[type=number]')) v = String(Number(v)); // 063 is 63
      f.dataset.given = String(v);
      for (const x of f.querySelectorAll('input, button')) x.disabled = true;
      // A choice shows as its label (Yes / 会), a number as typed.
      const picked = f.querySelector('input[type=radio]:checked');
      f.querySelector('.predict-mine').textContent = picked ? picked.closest('label').textContent.trim() : String(v);
      f.querySelector('.predict-committed').hidden = false;
      render();
    });
  }
}

function renderPrediction(el, done) {
  const f = el.querySelector('form.predict');
  if (!f) return;
  const given = f.dataset.given;
  f.querySelector('.predict-result').hidden = !done;
  f.querySelector('.predict-right').hidden = !done || given !== f.dataset.predict;
  f.querySelector('.predict-wrong').hidden = !done || given === undefined || given === f.dataset.predict;
  f.classList.toggle('revealed', done);
}

// A capstone's hints unlock over time: hint k of a step shows k × the
// lesson's interval after the step became current on this page (the
// server renders each with data-unlock, in seconds). A finished step shows
// them all.
const capstone = Boolean(root?.classList.contains('capstone'));
const since = new Map(); // step -> when it became current here (ms)

function fmtWait(s) {
  const m = Math.floor(s / 60);
  return `${m}:${String(s % 60).padStart(2, '0')}`;
}

function renderHints() {
  if (!capstone || !state.lesson) return;
  const m = state.lesson;
  const done = new Set(m.completed);
  for (const [i, el] of stepEls.entries()) {
    const n = i + 1;
    const current = n === m.step && !m.finished;
    if (current && !since.has(n)) since.set(n, Date.now());
    const elapsed = since.has(n) ? Math.floor((Date.now() - since.get(n)) / 1000) : 0;
    let next = null;
    for (const [k, d] of [...el.querySelectorAll('details[data-unlock]')].entries()) {
      const open = done.has(n) || (since.has(n) && elapsed >= Number(d.dataset.unlock));
      d.hidden = !open;
      if (!open && next === null) next = { n: k + 1, left: Number(d.dataset.unlock) - elapsed };
    }
    const lock = el.querySelector('[data-hint-locked]');
    if (lock) {
      lock.hidden = !current;
      lock.textContent = !current ? '' : next ? t('lessons.hintLocked', { n: next.n, time: fmtWait(next.left) }) : t('lessons.hintsOpen');
    }
  }
}
if (capstone) setInterval(renderHints, 1000);

function wireButtons() {
  wirePredictions();
  for (const b of document.querySelectorAll('.steps [data-do]')) {
    b.addEventListener('click', () => {
      const n = Number(b.dataset.do);
      b.disabled = true;
      send('lesson-do', { step: n }).catch(() => render());
    });
  }
  // A step that switches to another job of the lesson offers the switch
  // itself: the toolbar's reset starts the job that runs.
  for (const b of document.querySelectorAll('.steps [data-job]')) {
    b.addEventListener('click', () => {
      b.disabled = true;
      send('reset', { job: b.dataset.job }).catch(() => {}).finally(() => render());
    });
  }
  for (const b of document.querySelectorAll('.steps [data-replay]')) {
    b.addEventListener('click', () => {
      const n = Number(b.dataset.replay);
      for (const x of document.querySelectorAll('.steps button')) x.disabled = true;
      app.toast(t('lessons.replaying', { n }));
      state.replaying = n;
      send('lesson-replay', { step: n })
        .then(() => { app.toast(t('lessons.replayed', { n })); state.scrolled = false; })
        .catch(() => render());
    });
  }
}

// langLinks keep the session and the step when the language changes.
function langLinks() {
  const step = state.lesson ? state.lesson.step : stepFromHash() || 1;
  for (const a of document.querySelectorAll('[data-lang-link]')) {
    const q = new URLSearchParams({ lang: a.dataset.langLink });
    if (state.session) q.set('session', state.session);
    // Step 1 needs no anchor: the page opens at the introduction, not
    // scrolled down to the first step.
    a.href = `/lessons/${encodeURIComponent(slug)}?${q}${step > 1 ? `#step-${step}` : ''}`;
  }
}

function scrollToEl(el, smooth) {
  if (!el) return;
  smooth = smooth && !reducedMotion();
  const box = document.querySelector('.lesson-text');
  // The text column scrolls on its own beside the live view; on a narrow
  // screen the page scrolls.
  if (box && box.scrollHeight > box.clientHeight + 4) {
    const top = box.scrollTop + el.getBoundingClientRect().top - box.getBoundingClientRect().top - 8;
    box.scrollTo({ top, behavior: smooth ? 'smooth' : 'instant' });
  } else {
    el.scrollIntoView({ block: 'start', behavior: smooth ? 'smooth' : 'instant' });
  }
}

// render shows the newest lesson message on the steps.
function render() {
  const m = state.lesson;
  if (!m) return;
  const done = new Set(m.completed);
  const earlier = new Set(loadProgress(slug));
  for (const [i, el] of stepEls.entries()) {
    const n = i + 1;
    const current = n === m.step && !m.finished;
    el.classList.toggle('done', done.has(n));
    el.classList.toggle('current', current);
    el.classList.toggle('ahead', n > m.step);
    el.classList.toggle('seen', !done.has(n) && earlier.has(n));
    const awaiting = current && !m.acted && !m.doing && el.querySelector('[data-do]') !== null;
    el.classList.toggle('awaiting', awaiting);
    const wait = el.querySelector('.step-wait');
    if (wait) wait.hidden = !awaiting;
    if (current) el.setAttribute('aria-current', 'step');
    else el.removeAttribute('aria-current');
    const st = el.querySelector('[data-state-text]');
    if (st) st.textContent = done.has(n) ? t('lessons.stepDone') : current ? t('lessons.current') : earlier.has(n) ? t('lessons.seenBefore') : t('lessons.upcoming');
    for (const li of el.querySelectorAll('.checks li')) {
      const j = Number(li.dataset.check);
      const c = n === m.step ? m.checks[j] : null;
      const ok = done.has(n) || (c ? c.ok : false);
      li.classList.toggle('ok', ok);
      li.classList.toggle('judged', done.has(n) || (c ? c.ok || Boolean(c.why) : false));
      if (c && !c.ok && c.why) li.title = c.why;
      else li.removeAttribute('title');
    }
    const doBtn = el.querySelector('[data-do]');
    if (doBtn) {
      doBtn.disabled = !current || m.doing;
      doBtn.textContent = current && m.doing ? t('lessons.doing') : t('lessons.doIt');
      doBtn.setAttribute('aria-busy', String(current && m.doing));
    }
    const jobBtn = el.querySelector('[data-job]');
    if (jobBtn) jobBtn.disabled = !current || m.doing;
    const replay = el.querySelector('[data-replay]');
    if (replay) replay.disabled = false;
    renderPrediction(el, done.has(n));
    // A capstone offers no jump ahead: each goal is reached, not skipped.
    if (capstone && replay) replay.hidden = n > m.step;
    const err = el.querySelector('.step-error');
    if (err) {
      const show = current && Boolean(m.error);
      err.hidden = !show;
      err.textContent = show ? t('lessons.doFailed', { error: m.error }) : '';
    }
  }
  renderHints();
  const banner = $('lesson-banner');
  if (m.finished) {
    banner.hidden = false;
    banner.replaceChildren(document.createTextNode(t('lessons.finished')));
    const next = document.querySelector('.lesson-nav a[rel="next"]');
    if (next) {
      const a = document.createElement('a');
      a.href = next.getAttribute('href');
      a.className = 'button primary';
      a.textContent = t('lessons.next', { title: next.textContent.replace(/\s*→\s*$/, '') });
      banner.append(' ', a);
    }
  } else {
    banner.hidden = true;
  }
  langLinks();
}

function onLesson(m) {
  if (m.lesson !== slug) return;
  const prev = state.lesson;
  const before = new Set(prev ? prev.completed : []);
  state.lesson = m;
  const fresh = m.completed.filter((n) => !before.has(n));
  // A step done in this page's run is a tick; steps the server played to
  // reach a deep link or a replayed step are not, nor what a joined
  // session did before this page came.
  const replayed = state.replaying === m.step;
  if (replayed) state.replaying = 0;
  const played = (n) => (!prev && (joining || n < (linked || 1))) || (replayed && n < m.step);
  for (const n of fresh) {
    if (played(n)) continue;
    if (!state.ticks.includes(n)) state.ticks.push(n);
    markDone(slug, [n], total);
    const el = stepEl(n);
    if (el) {
      el.classList.remove('just-done');
      void el.offsetWidth; // restart the animation
      el.classList.add('just-done');
      const title = el.querySelector('.step-title')?.textContent.trim() || '';
      app.toast(t('lessons.tick', { n, title }));
    }
  }
  if (!prev || prev.step !== m.step) history.replaceState(null, '', m.step > 1 ? `#step-${m.step}` : location.pathname + location.search);
  render();
  // Show the current step: at once when the page opens at a later step
  // (the introduction stays in view at step 1), smoothly when it moves on;
  // at the end, the banner that says the lesson is complete.
  if (m.finished && (!prev || !prev.finished)) {
    scrollToEl($('lesson-banner'), state.scrolled);
    state.scrolled = true;
  } else if (!state.scrolled) {
    // After the browser's own jump to #step-N, which scrolls the window
    // too: the header stays, the text column shows the step.
    if (m.step > 1) {
      requestAnimationFrame(() => {
        if (document.querySelector('.lesson-text').scrollHeight > document.querySelector('.lesson-text').clientHeight + 4) window.scrollTo({ top: 0, behavior: 'instant' });
        scrollToEl(stepEl(m.step), false);
      });
    }
    state.scrolled = true;
  } else if (prev && prev.step !== m.step && !m.finished) {
    scrollToEl(stepEl(m.step), true);
  }
}

function start(a) {
  app = a;
  wireButtons();
  // Every new connection (the first, a reconnect) asks where the lesson is.
  app.model.on((change) => {
    if (change.type !== 'snapshot') return;
    const s = app.model.snap.session;
    if (s !== state.session) {
      state.session = s;
      send('lesson-status').catch(() => {});
    }
  });
  window.statelab.lesson = state;
}

if (root && ws) {
  document.addEventListener('statelab:lesson', (e) => onLesson(e.detail));
  document.addEventListener('statelab:ready', (e) => start(e.detail), { once: true });
  await import('./live.js');
}
