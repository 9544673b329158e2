// Source partitions: each partition's read offset against its end, the
// offset in the latest completed checkpoint (where a restore rewinds to),
// and the source subtask that owns it.

import { h, clear, text } from '../dom.js';
import { t } from '../i18n.js';
import { num } from '../format.js';
import { ownerColor } from '../palette.js';

export class SourcesView {
  constructor(root, model) {
    this.root = root;
    this.model = model;
    this.shape = '';
    this.dirty = true;
    this.rewound = new Map();
  }

  onChange(change) {
    if (change.type === 'snapshot') {
      const prev = change.previous;
      if (prev) {
        const now = performance.now();
        for (const sv of this.model.snap.sources) {
          const old = prev.sources.find((x) => x.operator === sv.operator);
          if (!old) continue;
          for (const p of sv.partitions) {
            const o = old.partitions[p.partition];
            if (o && p.offset < o.offset && p.owner >= 0) this.rewound.set(`${sv.operator}/${p.partition}`, { at: now, from: o.offset, to: p.offset });
          }
        }
      }
      this.dirty = true;
    } else if (change.events.some((e) => e.kind === 'source-read' || e.kind === 'record-injected')) {
      this.dirty = true;
    }
  }

  render(now) {
    if (!this.dirty || !this.model.ready) return;
    this.dirty = false;
    const sources = this.model.snap.sources;
    const shape = sources.map((sv) => `${sv.operator}:${sv.partitions.length}`).join();
    if (shape !== this.shape) this.build(sources);
    for (const sv of sources) {
      for (const p of sv.partitions) {
        const r = this.rows.get(`${sv.operator}/${p.partition}`);
        const end = Math.max(1, p.end);
        r.fill.style.width = `${(100 * Math.min(p.offset, end)) / end}%`;
        r.mark.hidden = p.checkpointed < 0;
        if (p.checkpointed >= 0) r.mark.style.left = `${(100 * Math.min(p.checkpointed, end)) / end}%`;
        r.owner.style.background = ownerColor(p.owner);
        text(r.ownerText, p.owner >= 0 ? `${sv.operator}#${p.owner}` : t('sources.unowned'));
        text(r.offset, `${num(p.offset)} / ${num(p.end)}`);
        text(r.cp, p.checkpointed >= 0 ? num(p.checkpointed) : '–');
        const rw = this.rewound.get(`${sv.operator}/${p.partition}`);
        const showRw = rw && now - rw.at < 8000;
        r.tr.classList.toggle('rewound', !!showRw);
        text(r.note, showRw ? t('sources.rewound', { from: num(rw.from), to: num(rw.to) }) : '');
      }
    }
  }

  build(sources) {
    this.shape = sources.map((sv) => `${sv.operator}:${sv.partitions.length}`).join();
    this.rows = new Map();
    const parts = [];
    for (const sv of sources) {
      const tbody = h('tbody');
      for (const p of sv.partitions) {
        const fill = h('span', { class: 'fill' });
        const mark = h('span', { class: 'cp-mark', title: t('sources.checkpointed') });
        const owner = h('span', { class: 'swatch' });
        const ownerText = h('span');
        const offset = h('td', { class: 'num' });
        const cp = h('td', { class: 'num' });
        const note = h('span', { class: 'note' });
        const tr = h('tr', {}, h('th', { scope: 'row' }, `p${p.partition}`), h('td', {}, owner, ownerText),
          h('td', { class: 'bar-cell' }, h('span', { class: 'bar' }, fill, mark), note), offset, cp);
        tbody.append(tr);
        this.rows.set(`${sv.operator}/${p.partition}`, { tr, fill, mark, owner, ownerText, offset, cp, note });
      }
      parts.push(h('table', { class: 'partitions' },
        h('caption', {}, t('sources.caption', { op: sv.operator, n: sv.partitions.length })),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, t('sources.partition')), h('th', { scope: 'col' }, t('sources.owner')),
          h('th', { scope: 'col' }, t('sources.progress')), h('th', { scope: 'col', class: 'num' }, t('sources.offset')),
          h('th', { scope: 'col', class: 'num' }, t('sources.checkpointed')))), tbody));
    }
    if (!sources.length) parts.push(h('p', { class: 'empty' }, t('sources.none')));
    clear(this.root).append(...parts);
  }
}
