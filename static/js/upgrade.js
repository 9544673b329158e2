// The upgrade control: start a changed job from a retained checkpoint or
// savepoint (the upgrade command, as `flink run -s <savepoint>` starts a new
// version of a program). The dialog lists every operator's uid and
// operator ID — what a savepoint files state under — so a learner can see
// which change moves which ID before Flink's answer comes back.

import { $, h, clear } from './dom.js';
import { t } from './i18n.js';

export class UpgradeDialog {
  constructor(model, send, toast) {
    this.model = model;
    this.send = send;
    this.toast = toast;
    this.dialog = $('upgrade');
    this.form = $('upgrade-form');
    this.result = $('upgrade-result');
    this.change = $('upgrade-change');
    if (!this.dialog || !this.form) return;
    $('btn-upgrade').addEventListener('click', () => this.open());
    $('upgrade-close').addEventListener('click', () => this.dialog.close());
    this.change.addEventListener('change', () => this.showFields());
    this.form.addEventListener('submit', (e) => { e.preventDefault(); this.submit(); });
    // While open, the list follows the storage: newer checkpoints subsume
    // older ones; savepoints stay until discarded.
    model.on((change) => { if (change.type === 'snapshot' && this.dialog.open) this.fillCheckpoints(); });
  }

  // fillCheckpoints lists the retained checkpoints and savepoints, keeping
  // the one chosen if it is still retained, else the newest savepoint.
  fillCheckpoints() {
    const snap = this.model.snap;
    const cps = $('upgrade-checkpoint');
    const keep = cps.value;
    const retained = [...(snap.checkpoints?.retained || [])].sort((a, b) => (b.savepoint - a.savepoint) || (b.id - a.id));
    const same = retained.length === cps.options.length && retained.every((c, i) => String(c.id) === cps.options[i].value);
    if (same) return;
    clear(cps);
    for (const c of retained) {
      cps.append(h('option', { value: c.id }, t(c.savepoint ? 'upgrade.savepointN' : 'upgrade.checkpointN', { n: c.id })));
    }
    if (!retained.length) cps.append(h('option', { value: '', disabled: true }, t('upgrade.noneRetained')));
    if (keep && retained.some((c) => String(c.id) === keep)) cps.value = keep;
    $('upgrade-submit').disabled = !retained.length;
  }

  open() {
    const snap = this.model.snap;
    if (!snap) return;
    clear($('upgrade-checkpoint'));
    this.fillCheckpoints();
    const ops = $('upgrade-operator');
    const keep = ops.value;
    clear(ops);
    const ids = clear($('upgrade-ids'));
    for (const o of snap.job.operators) {
      ops.append(h('option', { value: o.id }, o.id));
      ids.append(h('tr', {}, h('td', {}, o.id), h('td', {}, o.uid ? h('code', {}, o.uid) : t('upgrade.noUid')),
        h('td', {}, h('code', { class: 'opid' }, o.operatorId))));
    }
    if (keep && snap.job.operators.some((o) => o.id === keep)) ops.value = keep;
    this.result.textContent = '';
    this.result.className = '';
    this.showFields();
    if (!this.dialog.open) this.dialog.showModal();
  }

  showFields() {
    const c = this.change.value;
    for (const el of this.form.querySelectorAll('label[data-for]')) {
      el.hidden = !el.dataset.for.split(' ').includes(c);
    }
  }

  submit() {
    const change = this.change.value;
    const checkpoint = Number($('upgrade-checkpoint').value);
    if (!checkpoint) return;
    const args = { checkpoint, change };
    if (change !== 'none') args.operator = $('upgrade-operator').value;
    if (change === 'add-operator') args.kind = $('upgrade-kind').value;
    if (change === 'add-operator' || change === 'set-uid') {
      const uid = $('upgrade-uid').value.trim();
      if (uid || change === 'set-uid') args.uid = uid;
    }
    if (change === 'set-uid') {
      const hash = $('upgrade-uid-hash').value.trim();
      if (hash) args.uidHash = hash;
    }
    if (change === 'set-parallelism') args.parallelism = Number($('upgrade-parallelism').value);
    if (change === 'set-max-parallelism') args.maxParallelism = Number($('upgrade-max-parallelism').value);
    if ($('upgrade-allow').checked) args.allowNonRestoredState = true;
    this.result.textContent = t('upgrade.sending');
    this.result.className = '';
    this.send('upgrade', args).then(() => {
      this.dialog.close();
      this.toast(t('toast.upgraded', { n: checkpoint }));
    }, (err) => {
      this.result.textContent = err.message || String(err);
      this.result.className = 'error';
    });
  }
}
