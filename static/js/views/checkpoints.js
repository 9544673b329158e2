// Checkpoints: a timeline of checkpoints and savepoints on the job's clock,
// with restore markers, and a table with the figures and labels of Flink's
// web UI (ID, status, acknowledged, end-to-end duration, checkpointed data
// size, alignment).

import { h, s, clear } from '../dom.js';
import { t, getLang } from '../i18n.js';
import { num, bytes, dur } from '../format.js';

const ROWS = 8;
const WINDOW = 24; // checkpoints on the timeline
const NOW_W = 40; // room for the "now" label at the axis' end

// failureText is a failed checkpoint's reason: Flink's CheckpointFailureReason
// explained in the page's language; English pages add the engine's message.
export function cpFailureText(reason, message) {
  const key = `cpFailure.${reason}`;
  const said = reason ? t(key) : key;
  if (said === key) return message || '';
  return getLang() === 'en' && message ? `${reason}: ${message}` : `${reason}: ${said}`;
}

// Events that change the picture; acknowledgements show in the next snapshot.
const REDRAW = new Set(['checkpoint-triggered', 'checkpoint-completed', 'checkpoint-aborted', 'restore']);

export class CheckpointsView {
  constructor(root, model) {
    this.root = root;
    this.model = model;
    this.dirty = true;
    this.summary = h('div', { class: 'cp-summary' });
    this.timeline = h('div', { class: 'timeline' });
    this.table = h('div', { class: 'table-wrap', tabindex: 0 });
    clear(root).append(this.summary, this.timeline, this.table);
    new ResizeObserver(() => { this.dirty = true; }).observe(this.timeline);
  }

  onChange(change) {
    if (change.type === 'snapshot' || change.events.some((e) => REDRAW.has(e.kind))) this.dirty = true;
  }

  render() {
    if (!this.dirty || !this.model.ready) return;
    this.dirty = false;
    const cv = this.model.snap.checkpoints;
    const c = cv.counts;
    // Each part is drawn again only when what it shows changed: a snapshot
    // arrives many times a second at full speed, a checkpoint once in a while.
    const lr = cv.latestRestore;
    const ato = cv.unaligned ? cv.alignedCheckpointTimeout || 0 : 0;
    const sumKey = JSON.stringify([c, cv.queued, cv.maxConcurrent, cv.mode, cv.modeNoInterval, cv.interval, cv.storage.kind, lr?.localBytes, lr?.remoteBytes, ato]);
    if (sumKey !== this.sumKey) {
      this.sumKey = sumKey;
      clear(this.summary).append(
        stat(t('cp.triggered'), c.triggered), stat(t('cp.inProgress'), c.inProgress), stat(t('cp.completed'), c.completed),
        stat(t('cp.failed'), c.failed), stat(t('cp.restored'), c.restored),
        // Checkpoints asked for by hand that wait for one in progress to end
        // (max-concurrent-checkpoints), shown only while some wait.
        ...(cv.queued ? [h('span', { class: 'cp-queued', title: t('cp.queuedTitle', { max: cv.maxConcurrent || 1 }) },
          stat(t('cp.queued'), cv.queued))] : []),
        // Where the latest restore read its keyed state: task-local copies
        // on the TaskManagers' disks or checkpoint storage (local recovery).
        ...(lr && (lr.localBytes || lr.remoteBytes)
          ? [h('span', { class: 'cp-restore-bytes', title: t('cp.restoreBytesTitle') },
            t('cp.restoreBytes', { local: bytes(lr.localBytes || 0), remote: bytes(lr.remoteBytes || 0) }))]
          : []),
        h('span', { class: 'cp-mode' }, `${ato ? t('mode.exactly-once-alignedTimeout', { d: dur(ato) }) : t(`mode.${cv.mode}${cv.unaligned ? '-unaligned' : ''}`)} · ${cv.interval ? t('cp.every', { d: dur(cv.interval) }) : t('cp.manual')} · ${t(`storage.${cv.storage.kind}`)}`),
        // Where StateLab's aligned-checkpoint-timeout differs from Flink's
        // (docs/flink-fidelity.md): said wherever such a job's checkpoints show.
        ...(ato ? [h('p', { class: 'cp-simplified simplified' }, t('explain.simplified.alignedTimeout', { d: dur(ato) }))] : []),
        // Exactly-once asked for without an interval: Flink enables no
        // checkpointing and counts every barrier (StreamGraph.getCheckpointingMode).
        ...(cv.modeNoInterval ? [h('p', { class: 'cp-note cp-mode-no-interval' }, t('cp.modeNoInterval'))] : []),
        // Unaligned asked for with at-least-once: turned off, as Flink does.
        ...(cv.unalignedIgnored ? [h('p', { class: 'cp-note' }, t('cp.unalignedIgnored'))] : []));
    }
    this.renderTimeline(cv);
    this.renderTable(cv);
  }

  renderTimeline(cv) {
    const now = this.model.snap.at;
    // The window: the last WINDOW checkpoints, and the restores among them.
    const hist = cv.history.slice(-WINDOW);
    const first = Math.min(...hist.map((x) => x.triggerTime), now);
    // Only restores up to the moment shown (the timeline may show the past).
    const restores = this.model.restores.filter((r) => r.at <= now && (r.at >= first || hist.length < WINDOW));
    const start = Math.max(0, Math.min(first, ...restores.map((r) => r.at), now - 1));
    const W = Math.max(300, this.timeline.clientWidth || 600);
    const H = 64;
    const x = (tm) => 12 + ((W - 24 - NOW_W) * (tm - start)) / Math.max(1, now - start);
    // The axis stretches as time passes: drawn again when a dot would move
    // by about half a percent of the axis, or when a dot or restore changed.
    const key = JSON.stringify([W, start, Math.round(Math.log(Math.max(1, now - start)) * 200),
      hist.map((cp) => [cp.id, cp.status, cp.savepoint, cp.triggerTime, cp.endToEndDuration]), restores.map((r) => [r.at, r.checkpoint])]);
    if (key === this.timelineKey) return;
    this.timelineKey = key;
    const svg = s('svg', { class: 'timeline-svg', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': t('cp.timelineLabel') });
    svg.append(s('line', { x1: 12, x2: W - 12 - NOW_W, y1: 34, y2: 34, class: 'axis' }));
    let lastLabel = -Infinity;
    for (const cp of hist) {
      const cx = x(cp.triggerTime);
      const cls = `cp-dot ${cp.status}${cp.savepoint ? ' savepoint' : ''}`;
      const title = s('title', {}, `${cp.savepoint ? t('cp.savepoint') : t('cp.checkpoint')} ${cp.id}: ${cp.status}`);
      if (cp.status === 'COMPLETED' && cp.endToEndDuration) {
        svg.append(s('line', { x1: cx, x2: x(cp.triggerTime + cp.endToEndDuration), y1: 34, y2: 34, class: 'cp-span' }));
      }
      svg.append(cp.savepoint
        ? s('path', { d: `M${cx},26 L${cx + 8},34 L${cx},42 L${cx - 8},34 Z`, class: cls }, title)
        : s('circle', { cx, cy: 34, r: 6, class: cls }, title));
      if (cx - lastLabel >= 22) {
        svg.append(s('text', { x: cx, y: 18, class: 'cp-id', 'text-anchor': 'middle' }, String(cp.id)));
        lastLabel = cx;
      }
    }
    for (const r of restores) {
      const rx = x(r.at);
      svg.append(s('path', { d: `M${rx},44 L${rx + 7},58 L${rx - 7},58 Z`, class: r.checkpoint ? 'restore' : 'restore empty' },
        s('title', {}, r.checkpoint ? t('cp.restoredFrom', { n: r.checkpoint }) : t('cp.restoredEmpty'))));
      const right = rx > W - 60 - NOW_W;
      svg.append(s('text', { x: right ? rx - 10 : rx + 10, y: 57, class: 'restore-label', 'text-anchor': right ? 'end' : 'start' },
        r.checkpoint ? `↺ ${r.checkpoint}` : `↺ ${t('cp.empty')}`));
    }
    // "now" sits at the end of the axis, beside the newest checkpoint, never on its label.
    svg.append(s('text', { x: W - 12, y: 38, class: 'now', 'text-anchor': 'end' }, t('cp.now')));
    clear(this.timeline).append(svg);
  }

  renderTable(cv) {
    const rows = cv.history.slice(-ROWS).reverse();
    const key = JSON.stringify([cv.interval, rows.map((cp) => [cp.id, cp.status, cp.discarded, cp.acknowledged, cp.total, cp.triggerTime,
      cp.endToEndDuration, cp.checkpointedSize, cp.stateSize, cp.savepoint, cp.failureReason, cp.failureMessage,
      (cp.subtasks || []).map((a) => a.alignmentDuration || 0)])]);
    if (key === this.tableKey) return;
    this.tableKey = key;
    if (!rows.length) {
      clear(this.table).append(h('p', { class: 'empty' }, cv.interval ? t('cp.noneYet') : t('cp.noneManual')));
      return;
    }
    const tbody = h('tbody');
    for (const cp of rows) {
      const align = Math.max(0, ...(cp.subtasks || []).map((a) => a.alignmentDuration || 0));
      tbody.append(h('tr', { class: `cp-row ${cp.status}` },
        h('td', { class: 'num' }, `${cp.savepoint ? '◆ ' : ''}${cp.id}`),
        h('td', {}, h('span', { class: `status ${cp.status}` }, cp.status), cp.discarded ? h('span', { class: 'muted' }, ` ${t('cp.discarded')}`) : ''),
        h('td', { class: 'num' }, `${cp.acknowledged}/${cp.total}`),
        h('td', { class: 'num' }, dur(cp.triggerTime)),
        h('td', { class: 'num' }, cp.status === 'IN_PROGRESS' ? '…' : dur(cp.endToEndDuration)),
        h('td', { class: 'num' }, bytes(cp.checkpointedSize)),
        h('td', { class: 'num' }, bytes(cp.stateSize)),
        // An unaligned checkpoint does not align: it shows the in-flight
        // records it holds as channel state instead.
        cp.unaligned ? h('td', { class: 'num', title: t('cp.unalignedTitle') }, t('cp.unalignedCell', { size: bytes(cp.channelStateSize || 0) }))
          : h('td', { class: 'num' }, dur(align))));
      if (cp.failureMessage || cp.failureReason) {
        tbody.append(h('tr', { class: 'cp-failure' }, h('td', { colspan: 8, title: cp.failureMessage || '' }, cpFailureText(cp.failureReason, cp.failureMessage))));
      }
    }
    const th = (key) => h('th', { scope: 'col', title: t(`${key}.flink`) }, t(key));
    clear(this.table).append(h('table', { class: 'checkpoints' },
      h('thead', {}, h('tr', {}, th('cp.id'), th('cp.status'), th('cp.acknowledged'), th('cp.triggerTime'),
        th('cp.endToEnd'), th('cp.checkpointedSize'), th('cp.fullSize'), th('cp.alignment'))), tbody));
  }
}

function stat(label, value) {
  return h('span', { class: 'stat' }, h('strong', {}, num(value)), ` ${label}`);
}
