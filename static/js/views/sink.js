// The sink against the ground truth: what has been committed, what the
// engine computes every record of the source topics should produce, the
// records committed twice (duplicates) and the ones missing. Until the
// input is read to the end a missing record may simply not be there yet;
// once everything is read, a missing record is lost.

import { h, clear } from '../dom.js';
import { t } from '../i18n.js';
import { num } from '../format.js';

export class SinkView {
  constructor(root, model) {
    this.root = root;
    this.model = model;
    this.dirty = true;
  }

  onChange(change) {
    if (change.type === 'snapshot' || change.events.some((e) => e.kind.startsWith('txn'))) this.dirty = true;
  }

  drained() {
    const snap = this.model.snap;
    const read = snap.sources.every((sv) => sv.partitions.every((p) => p.offset >= p.end));
    const quiet = snap.channels.every((c) => c.sent === c.delivered);
    const open = snap.sinks.some((s) => s.transactions.some((x) => x.records > 0));
    return read && quiet && !open;
  }

  render() {
    if (!this.dirty || !this.model.ready) return;
    this.dirty = false;
    const parts = [];
    const drained = this.drained();
    for (const sk of this.model.snap.sinks) {
      const c = sk.comparison;
      const head = h('div', { class: 'sink-head' },
        h('span', { class: `pill ${sk.semantics}` }, t(`sink.${sk.semantics === 'exactly-once' ? 'exactlyOnce' : 'atLeastOnce'}`)),
        h('span', {}, t('sink.committed', { n: num(sk.committed) })));
      parts.push(head);
      if (!c || !c.supported) {
        parts.push(h('p', { class: 'empty' }, t('sink.noTruth')));
        continue;
      }
      const pct = c.expected ? Math.min(100, (100 * c.committed) / c.expected) : 0;
      const fill = h('span', { class: 'fill' });
      fill.style.width = `${pct}%`;
      parts.push(h('div', { class: 'sink-progress' }, h('span', { class: 'bar' }, fill),
        h('span', {}, t('sink.progress', { committed: num(c.committed), expected: num(c.expected), records: num(c.records) }))));
      if (c.ignoresTTL) parts.push(h('p', { class: 'muted ttl-note' }, t('sink.ignoresTTL')));
      const missing = c.lostRecords;
      const verdict = c.duplicateRecords > 0
        ? h('p', { class: 'verdict dup' }, t('sink.duplicates', { n: num(c.duplicateRecords) }))
        : drained && missing > 0
          ? h('p', { class: 'verdict lost' }, t('sink.lost', { n: num(missing) }))
          : drained || (missing === 0 && c.committed === c.expected)
            ? h('p', { class: 'verdict ok' }, t('sink.exact'))
            : h('p', { class: 'verdict ok' }, t('sink.noDuplicates', { n: num(missing) }));
      parts.push(verdict);
      const rows = [];
      for (const d of c.duplicates) rows.push(['dup', d]);
      for (const d of c.unexpected) rows.push(['unexpected', d]);
      if (drained) for (const d of c.losses) rows.push(['lost', d]);
      if (rows.length) {
        const tbody = h('tbody');
        for (const [kind, d] of rows.slice(0, 30)) {
          tbody.append(h('tr', { class: kind },
            h('td', {}, h('code', {}, d.key), d.window ? h('span', { class: 'muted' }, ` ${d.window}`) : ''),
            h('td', { class: 'num' }, num(d.value)),
            h('td', { class: 'num' }, `${d.committed}×`),
            h('td', { class: 'num' }, `${d.expected}×`),
            h('td', {}, h('span', { class: `mark ${kind}` }, t(`sink.mark.${kind}`)))));
        }
        parts.push(h('div', { class: 'table-wrap', tabindex: 0 }, h('table', { class: 'sinkdiff' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, t('sink.key')), h('th', { scope: 'col', class: 'num' }, t('sink.value')),
            h('th', { scope: 'col', class: 'num' }, t('sink.got')), h('th', { scope: 'col', class: 'num' }, t('sink.want')), h('th', { scope: 'col' }, ''))), tbody)));
      } else if (!drained && c.losses.length) {
        parts.push(h('p', { class: 'muted' }, t('sink.next', { items: c.losses.slice(0, 4).map((d) => `${d.key}=${d.value}`).join(', ') })));
      }
      if (sk.transactions.length) {
        parts.push(h('h3', {}, t('sink.transactions')));
        parts.push(h('ul', { class: 'txns' }, sk.transactions.map((x) =>
          h('li', {}, h('code', {}, x.id), ` ${x.status}`, x.checkpoint ? ` · ${t('cp.checkpoint')} ${x.checkpoint}` : '', ` · ${t('sink.records', { n: num(x.records) })}`))));
      }
    }
    if (!parts.length) parts.push(h('p', { class: 'empty' }, t('sink.none')));
    clear(this.root).append(...parts);
  }
}
