// A classroom's page: the live view (live.js) plus, for the presenter, the
// join band, the follower count and clicker keys (PageDown steps on, PageUp
// goes back in time, "." plays or pauses); for a follower, the bar to fork
// the run into a copy of one's own and to go back to following. The server
// decides who may do what; this page only offers what will be allowed.

import './live.js';
import { $ } from './dom.js';
import { t } from './i18n.js';

const CLICK_STEPS = 10;

function start(app) {
  const room = $('classroom');
  if (!room) return;
  const code = room.dataset.code;
  if (room.dataset.role === 'presenter') presenter(app, code);
  else follower(app, room, code);
}

function presenter(app, code) {
  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const tag = (e.target.tagName || '').toLowerCase();
    if (tag === 'input' || tag === 'textarea' || tag === 'select' || e.target.isContentEditable) return;
    if ($('help')?.open) return;
    switch (e.key) {
      case 'PageDown': e.preventDefault(); app.timeline.stepBy(CLICK_STEPS); break;
      case 'PageUp': e.preventDefault(); app.timeline.stepBy(-CLICK_STEPS); break;
      case '.': e.preventDefault(); $('btn-play')?.click(); break;
      default:
    }
  });
  // A fork of the presenter's own opens beside the classroom, never in
  // place of it.
  app.timeline.onFork = (session, step) => window.open(`/sandbox/live?session=${encodeURIComponent(session)}&forked=${encodeURIComponent(step ?? '')}`, '_blank', 'noopener');
  const out = $('followers');
  const poll = async () => {
    try {
      const r = await fetch(`/api/classrooms/${encodeURIComponent(code)}`);
      if (r.ok) out.textContent = t('classroom.followers', { n: (await r.json()).followers });
    } catch { /* the next poll tries again */ }
  };
  poll();
  setInterval(poll, 3000);
}

function follower(app, room, code) {
  const forkBtn = $('btn-fork');
  const followBtn = $('btn-follow');
  const state = $('room-state');
  const hint = $('room-hint');
  const setMode = (mode) => {
    room.dataset.mode = mode;
    app.timeline.readOnly = mode === 'follow';
    app.setReadOnly(mode === 'follow');
    app.timeline.render();
    forkBtn.hidden = mode !== 'follow';
    followBtn.hidden = mode === 'follow';
    state.textContent = `${t(mode === 'follow' ? 'classroom.following' : 'classroom.forked')} `;
    state.append(Object.assign(document.createElement('strong'), { textContent: code }));
    hint.textContent = t(mode === 'follow' ? 'classroom.followHint' : 'classroom.forkedHint');
  };
  const toFork = (session, step) => {
    app.toast(t('toast.forked', { step }));
    app.forked(session, step);
    app.connect(`session=${encodeURIComponent(session)}`);
    setMode('fork');
  };
  forkBtn.addEventListener('click', () => {
    app.send('fork').then((ack) => toFork(ack.session, ack.step)).catch(() => {});
  });
  followBtn.addEventListener('click', () => {
    app.unfork();
    app.connect(`classroom=${encodeURIComponent(code)}`);
    setMode('follow');
  });
  app.timeline.onFork = (session, step) => toFork(session, step);
  setMode('follow');
}

if (window.statelab?.connect) start(window.statelab);
else document.addEventListener('statelab:ready', (e) => start(e.detail), { once: true });
