// The toolbar, keyboard shortcuts and the help overlay. Every control is a
// real <button>; every shortcut has a button doing the same.

import { $, h } from './dom.js';
import { t } from './i18n.js';

const SPEEDS = [0.25, 0.5, 1, 2, 4, 8, 16, 32, 64];

// fire runs a command for a click or a key: a refused command has already
// been shown (the toast), so its rejection ends here, not as an uncaught
// promise rejection in the console.
const fire = (p) => { p.catch(() => {}); };

export class Controls {
  constructor(model, send, actions, toast) {
    this.model = model;
    this.send = send; // (name, args) -> Promise
    this.toolbar = document.querySelector('.toolbar');
    this.readOnly = false;
    this.actions = actions;
    this.toast = toast;
    this.play = $('btn-play');
    this.speedOut = $('speed');
    this.modeStep = $('btn-mode-step');
    this.modeLive = $('btn-mode-live');
    this.help = $('help');
    this.seed = $('reset-seed');
    this.seedTouched = false;

    this.play.addEventListener('click', () => this.togglePlay());
    $('btn-step').addEventListener('click', () => fire(this.send('step', { count: 1 })));
    $('btn-slower').addEventListener('click', () => this.changeSpeed(-1));
    $('btn-faster').addEventListener('click', () => this.changeSpeed(1));
    this.modeStep.addEventListener('click', () => this.setMode('step'));
    this.modeLive.addEventListener('click', () => this.setMode('live'));
    $('btn-checkpoint').addEventListener('click', () => {
      // As in Flink, a checkpoint asked for by hand waits while
      // max-concurrent-checkpoints are in progress (the engine's
      // requestCheckpoint): the toast says so instead of pointing at
      // barriers that do not leave yet.
      const cv = this.model?.snap?.checkpoints;
      const pending = (cv?.history || []).filter((c) => c.status === 'IN_PROGRESS');
      const waits = cv && pending.length && (pending.length >= (cv.maxConcurrent || 1) || cv.queued > 0);
      const said = waits ? t('toast.checkpointWaits', { n: pending[0].id, max: cv.maxConcurrent || 1 }) : t('toast.checkpoint');
      fire(this.send('trigger-checkpoint').then(() => toast(said)));
    });
    $('btn-savepoint').addEventListener('click', () => fire(this.send('trigger-savepoint').then(() => toast(t('toast.savepoint')))));
    $('btn-add-tm').addEventListener('click', () => actions.addTM());
    $('btn-help').addEventListener('click', () => this.openHelp());
    // With more than one source the record box gets a choice of source
    // (shown only then); with one, the line goes to the job's only source.
    this.injectSource = h('select', { id: 'inject-source', class: 'inject-source', hidden: true,
      'aria-label': t('controls.injectSource'), title: t('controls.injectSource') });
    this.sourceIds = '';
    $('inject-text').before(this.injectSource);
    $('inject-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const input = $('inject-text');
      const text = input.value.trim();
      if (!text) { input.focus(); return; }
      const op = this.injectSource.hidden ? '' : this.injectSource.value;
      const args = op ? { text, operator: op } : { text };
      fire(this.send('inject', args).then(() => {
        input.value = '';
        toast(op ? t('toast.injectedInto', { text, op }) : t('toast.injected', { text }));
      }));
    });
    this.seed.addEventListener('input', () => { this.seedTouched = true; });
    $('reset-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const args = {};
      if (this.seed.value !== '') args.seed = Number(this.seed.value);
      this.seedTouched = false;
      fire(this.send('reset', args).then(() => toast(t('toast.reset', { seed: args.seed ?? this.model.snap.seed }))));
    });
    document.addEventListener('keydown', (e) => this.key(e));
  }

  // setReadOnly greys out every control (a classroom follower watches the
  // presenter's run); only help stays.
  setReadOnly(on) {
    this.readOnly = on;
    if (on) this.toolbar.setAttribute('aria-describedby', 'room-hint');
    else this.toolbar.removeAttribute('aria-describedby');
    this.applyReadOnly();
  }

  applyReadOnly() {
    for (const el of this.toolbar.querySelectorAll('button, input, select')) {
      if (el.id !== 'btn-help') el.disabled = this.readOnly;
    }
    if (!this.readOnly) $('btn-step').disabled = this.model.snap?.driver === 'live';
  }

  // update shows the run's state on the controls.
  update() {
    const snap = this.model.snap;
    if (!snap) return;
    const playing = !snap.paused;
    this.play.querySelector('.label').textContent = playing ? t('controls.pause') : t('controls.play');
    this.play.querySelector('.icon').className = `icon ${playing ? 'icon-pause' : 'icon-play'}`;
    this.play.setAttribute('aria-pressed', String(playing));
    if (this.wantSpeed === snap.speed) {
      this.wantSpeed = undefined;
      this.speedLost = false;
    } else if (this.speedLost) {
      this.sendSpeed(); // the first snapshot of a new connection
    }
    this.speedOut.textContent = `${this.wantSpeed ?? snap.speed}×`;
    const live = snap.driver === 'live';
    this.modeStep.setAttribute('aria-pressed', String(!live));
    this.modeLive.setAttribute('aria-pressed', String(live));
    $('btn-step').disabled = live || this.readOnly;
    if (!this.seedTouched && document.activeElement !== this.seed) this.seed.value = snap.seed;
    this.updateSources(snap);
  }

  // updateSources lists the job's sources in the record box's choice, and
  // shows the choice only when there is more than one.
  updateSources(snap) {
    const ids = (snap.job?.operators || []).filter((o) => o.kind === 'source').map((o) => o.id);
    const key = ids.join(',');
    if (key === this.sourceIds) return;
    this.sourceIds = key;
    const keep = this.injectSource.value;
    this.injectSource.replaceChildren(...ids.map((id) => h('option', { value: id }, id)));
    if (ids.includes(keep)) this.injectSource.value = keep;
    this.injectSource.hidden = ids.length < 2;
  }

  togglePlay() {
    const snap = this.model.snap;
    if (!snap) return;
    fire(this.send(snap.paused ? 'resume' : 'pause'));
  }

  changeSpeed(dir) {
    // Count from the last speed asked for, so quick clicks add up before
    // the snapshot that confirms them arrives.
    const cur = this.wantSpeed ?? this.model.snap?.speed ?? 1;
    let i = SPEEDS.findIndex((v) => v >= cur - 1e-9);
    if (i < 0) i = SPEEDS.length - 1;
    const next = SPEEDS[Math.max(0, Math.min(SPEEDS.length - 1, i + dir))];
    if (next === cur) return;
    this.wantSpeed = next;
    // Shown at once: on a busy machine the snapshot that confirms it may
    // take seconds, and a person who sees no change presses again.
    this.speedOut.textContent = `${next}×`;
    this.sendSpeed();
  }

  // sendSpeed asks for the speed last pressed. A press made while the page
  // was reconnecting (a busy machine drops a browser that falls behind the
  // event stream, and it reconnects) is not lost: the command failed for
  // want of a connection, so the wish stays and goes out again with the
  // new connection's first snapshot. A refusal forgets it.
  sendSpeed() {
    const factor = this.wantSpeed;
    if (factor === undefined) return;
    this.speedLost = false;
    this.send('speed', { factor }).catch((err) => {
      if (this.wantSpeed !== factor) return; // a later press is on its way
      if (err?.code === 'disconnected') this.speedLost = true;
      else {
        this.wantSpeed = undefined;
        if (this.model.snap) this.speedOut.textContent = `${this.model.snap.speed}×`;
      }
    });
  }

  // setMode hands the running job to the other driver; nothing restarts.
  setMode(driver) {
    const snap = this.model.snap;
    if (!snap || snap.driver === driver) return;
    this.wantSpeed = undefined;
    this.speedLost = false;
    fire(this.send('speed', { driver }).then(() => this.toast(t('toast.mode', { mode: t(`mode.${driver}`) }))));
  }

  openHelp() {
    if (!this.help.open) this.help.showModal();
  }

  key(e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const tag = (e.target.tagName || '').toLowerCase();
    if (tag === 'input' || tag === 'textarea' || tag === 'select' || e.target.isContentEditable) {
      if (e.key === 'Escape') e.target.blur();
      return;
    }
    if (this.help.open && e.key !== '?') return;
    const k = e.key;
    const run = (fn) => { e.preventDefault(); fn(); };
    // Read-only: only the keys that change nothing in the run.
    if (this.readOnly && !['?', 'l', 'L', 'k', 'K'].includes(k)) return;
    switch (k) {
      case ' ': return run(() => this.togglePlay());
      case 's': case 'S': return run(() => fire(this.send('step', { count: 1 })));
      case '+': case '=': return run(() => this.changeSpeed(1));
      case '-': case '_': return run(() => this.changeSpeed(-1));
      case 'm': case 'M': return run(() => this.setMode(this.model.snap?.driver === 'live' ? 'step' : 'live'));
      case 'c': case 'C': return run(() => $('btn-checkpoint').click());
      case 'v': case 'V': return run(() => $('btn-savepoint').click());
      case 't': case 'T': return run(() => this.actions.addTM());
      case ']': return run(() => this.actions.rescaleKeyed(1));
      case '[': return run(() => this.actions.rescaleKeyed(-1));
      case 'i': case 'I': return run(() => $('inject-text').focus());
      case 'k': case 'K': return run(() => $('key-input').focus());
      case 'r': case 'R': return run(() => this.seed.focus());
      case 'l': case 'L': return run(() => this.actions.switchLanguage());
      case '?': return run(() => (this.help.open ? this.help.close() : this.openHelp()));
      default:
    }
  }
}
