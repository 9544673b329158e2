// The savepoint page: pick (or drop) a Flink _metadata file, or the savepoint
// directory holding one. The browser keeps the file's bytes and sends them to
// POST /api/savepoint/inspect (the report) and POST /api/savepoint/plan
// (?operator=&parallelism=, the rescale plan); the server reads them in memory
// and keeps nothing. Everything shown comes from those two answers.

import { h, s, clear, $, reducedMotion } from './dom.js';
import { loadCatalog, t, has } from './i18n.js';
import { bytes, num } from './format.js';
import { ownerColor } from './palette.js';

const page = $('savepoint');
const maxBytes = Number(page.dataset.maxBytes) || 32 << 20;
const statusEl = $('sp-status');
const errorEl = $('sp-error');
const summaryEl = $('sp-summary');
const graphEl = $('sp-graph');
const opsEl = $('sp-operators');
const planPanel = $('sp-plan-panel');
const planForm = $('sp-plan-form');
const planOp = $('sp-plan-operator');
const planPar = $('sp-plan-parallelism');
const planEl = $('sp-plan');

let file = null; // the body last sent (a Blob, or FormData for a directory); the plan sends it again
let report = null;

// showError shows a message: text, or text and elements (a reason's parts).
function showError(...parts) {
  clear(errorEl).append(...parts.filter((p) => p !== ''));
  errorEl.hidden = parts.every((p) => p === '');
}

async function post(path, body) {
  const headers = { Accept: 'application/json' };
  if (!(body instanceof FormData)) headers['Content-Type'] = 'application/octet-stream';
  const r = await fetch(path, { method: 'POST', body, headers });
  const answer = await r.json().catch(() => ({}));
  if (!r.ok) {
    const err = new Error(answer.message || t('savepoint.err.http', { status: r.status }));
    err.reason = answer.reason; // the reader's failure as a code with its values
    throw err;
  }
  return answer;
}

// load sends a _metadata file (blob), or with a directory pick also the
// other files of its directory (others: [path inside the directory, File]) so
// the server can read the state files the metadata points at.
async function load(blob, name, others = []) {
  showError('');
  if (blob.size > maxBytes) {
    showError(t('savepoint.err.tooLarge', { size: bytes(blob.size), max: bytes(maxBytes) }));
    return;
  }
  let body = blob;
  let size = blob.size;
  const total = others.reduce((a, [, f]) => a + f.size, blob.size);
  if (others.length > 0 && total <= maxBytes) {
    body = new FormData();
    body.append('metadata', blob, '_metadata');
    for (const [p, f] of others) body.append(`path:${p}`, f, f.name);
    size = total;
  }
  statusEl.textContent = t('savepoint.reading', { name });
  try {
    report = await post('/api/savepoint/inspect', body);
    file = body;
  } catch (e) {
    statusEl.textContent = '';
    const el = h('span', { class: 'sp-failure', 'data-code': e.reason ? e.reason.code : '' });
    el.append(...sentence(t('savepoint.err.read', { name }), 'message', reasonOrText(e.reason, e.message)));
    showError(el);
    return;
  }
  let status = t('savepoint.read', { name, size: bytes(size) });
  if (report.loadedFiles) status += ' ' + t('savepoint.filesRead', { n: report.loadedFiles });
  if (others.length > 0 && total > maxBytes) status += ' ' + t('savepoint.filesTooLarge', { size: bytes(total), max: bytes(maxBytes) });
  statusEl.textContent = status;
  render(report);
}

// A directory pick: the _metadata nearest the top, and the other files of
// its directory with their paths inside it.
function fromDirectory(files) {
  const all = [...files];
  const metas = all.filter((f) => f.name === '_metadata');
  metas.sort((a, b) => (a.webkitRelativePath || '').split('/').length - (b.webkitRelativePath || '').split('/').length);
  const meta = metas[0];
  if (!meta) return null;
  const rel = meta.webkitRelativePath || '';
  const base = rel.slice(0, rel.length - '_metadata'.length);
  const others = all.filter((f) => f !== meta && (f.webkitRelativePath || '').startsWith(base))
    .map((f) => [f.webkitRelativePath.slice(base.length), f]);
  return { meta, others };
}

$('sp-file').addEventListener('change', (e) => {
  const f = e.target.files[0];
  if (f) load(f, f.name);
});
$('sp-dir').addEventListener('change', (e) => {
  const d = fromDirectory(e.target.files);
  if (!d) {
    showError(t('savepoint.err.noMetadata'));
    return;
  }
  load(d.meta, d.meta.webkitRelativePath || d.meta.name, d.others);
});
const drop = $('sp-drop');
drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  const f = e.dataTransfer.files[0];
  if (f) load(f, f.name);
});

function opLabel(op) {
  return op.name || op.uid || op.id.slice(0, 8) + '…';
}

function render(rep) {
  renderSummary(rep);
  renderGraph(rep);
  clear(opsEl);
  rep.operators.forEach((op, i) => opsEl.append(renderOperator(op, i)));
  clear(planOp);
  // A phone's closed select has room for about 30 characters: the name
  // with the ID's first 8 hex digits (the whole ID is the option's title
  // and in the report's table).
  rep.operators.forEach((op) => planOp.append(h('option', { value: op.id, title: op.id },
    op.name || op.uid ? `${opLabel(op)} (${op.id.slice(0, 8)}…)` : opLabel(op))));
  const stateful = rep.operators.find((op) => op.stateBytes > 0);
  if (stateful) planOp.value = stateful.id;
  planPanel.hidden = rep.operators.length === 0;
  clear(planEl);
}

function renderSummary(rep) {
  clear(summaryEl).hidden = false;
  const p = rep.properties;
  let kind = t('savepoint.kindUnknown');
  if (p) kind = p.snapshotType === 'SavepointType' ? t('savepoint.kindSavepoint', { format: p.formatType || '?', name: p.name || '' }) : t('savepoint.kindCheckpoint', { name: p.name || '' });
  summaryEl.append(
    h('h2', {}, t('savepoint.summaryTitle')),
    h('dl', { class: 'sp-facts' },
      h('dt', {}, t('savepoint.version')), h('dd', { id: 'sp-version' }, String(rep.version)),
      h('dt', {}, t('savepoint.checkpointId')), h('dd', { id: 'sp-checkpoint' }, String(rep.checkpointId)),
      h('dt', {}, t('savepoint.kind')), h('dd', { id: 'sp-kind' }, kind),
      h('dt', {}, t('savepoint.size')), h('dd', {}, bytes(rep.size)),
      h('dt', {}, t('savepoint.operators')), h('dd', { id: 'sp-operator-count' }, String(rep.operators.length)),
      h('dt', {}, t('savepoint.masterStates')), h('dd', {}, rep.masterStates.length ? rep.masterStates.map((m) => `${m.name} (${bytes(m.bytes)})`).join(', ') : t('savepoint.none'))),
  );
  if (rep.propertiesError) {
    const r = rep.propertiesErrorReason;
    summaryEl.append(h('p', { class: 'hint sp-failure', 'data-code': r ? r.code : '' },
      ...sentence(t('savepoint.propertiesError'), 'message', reasonOrText(r, rep.propertiesError))));
  }
}

// The operators as boxes, in the order the file lists them: _metadata holds
// no edges (the job graph is not saved), so they are not joined. Each box is a
// button that scrolls to the operator's details.
function renderGraph(rep) {
  clear(graphEl).hidden = false;
  graphEl.append(h('h2', {}, t('savepoint.graphTitle')), h('p', { class: 'hint' }, t('savepoint.graphHint')));
  const row = h('div', { class: 'sp-graph-row' });
  for (const op of rep.operators) {
    row.append(h('button', { type: 'button', class: op.stateBytes > 0 ? 'sp-node stateful' : 'sp-node', 'data-operator': op.id,
      onclick: () => $(`sp-op-${op.id}`)?.scrollIntoView({ behavior: reducedMotion() ? 'instant' : 'smooth' }) },
      h('strong', { class: 'name' }, opLabel(op)),
      h('span', {}, t('savepoint.nodeParallelism', { p: op.parallelism, max: op.maxParallelism })),
      h('span', {}, t('savepoint.nodeState', { size: bytes(op.stateBytes) })),
      op.coordinatorBytes > 0 ? h('span', {}, t('savepoint.nodeCoordinator', { size: bytes(op.coordinatorBytes) })) : null));
  }
  graphEl.append(row);
}

function renderOperator(op) {
  const card = h('section', { class: 'panel sp-operator', id: `sp-op-${op.id}`, 'data-operator': op.id });
  card.append(h('h2', {}, opLabel(op)),
    h('p', { class: 'sp-op-facts' },
      h('code', {}, op.id), ' · ',
      op.name ? [t('savepoint.name'), ' ', h('strong', {}, op.name), ' · '] : null,
      op.uid ? ['uid ', h('strong', {}, op.uid), ' · '] : null,
      t('savepoint.nodeParallelism', { p: op.parallelism, max: op.maxParallelism })));
  if (op.fullyFinished) card.append(h('p', { class: 'hint' }, t('savepoint.fullyFinished')));
  if (op.coordinatorBytes > 0) {
    const c = op.coordinator;
    let text = t('savepoint.coordinator', { size: bytes(op.coordinatorBytes) });
    if (c && c.kafkaPartitions) text += ' ' + t('savepoint.kafkaEnumerator', { n: c.kafkaPartitions.length, partitions: c.kafkaPartitions.map((p) => `${p.topic}-${p.partition}`).join(', ') });
    card.append(h('p', { class: 'sp-coordinator' }, text));
  }
  const keyed = op.subtasks.some((st) => st.keyedState.length > 0);
  if (keyed) card.append(keyGroupStrip(op));
  const table = h('table', { class: 'sp-subtasks' },
    h('thead', {}, h('tr', {}, h('th', {}, t('savepoint.subtask')), h('th', {}, t('savepoint.operatorState')), h('th', {}, t('savepoint.keyedState')))));
  const body = h('tbody');
  for (const st of op.subtasks) {
    const tr = h('tr', { 'data-subtask': st.subtask });
    tr.append(h('th', { scope: 'row' }, h('span', { class: 'sp-swatch', 'data-owner': st.subtask }, svgSwatch(st.subtask)), ` ${st.subtask}`));
    if (st.finished) {
      tr.append(h('td', { colspan: 2, class: 'muted' }, t('savepoint.finished')));
    } else {
      tr.append(h('td', {}, st.operatorState.length ? st.operatorState.map(renderList) : h('span', { class: 'muted' }, t('savepoint.none'))),
        h('td', {}, st.keyedState.length ? st.keyedState.map((k) => h('div', { class: 'sp-keyed' },
          t('savepoint.keyedRange', { start: k.start, end: k.end, size: bytes(k.bytes) }), ' ', h('span', { class: 'muted' }, `${k.kind}, ${k.location}`),
          keyedValues(k.values))) : h('span', { class: 'muted' }, t('savepoint.none'))));
    }
    body.append(tr);
  }
  table.append(body);
  card.append(table);
  return card;
}

// The decoded entries of an inline full snapshot: per state, its entry count
// and a few entries; then how many keys Flink's assignment puts in the key
// group they were stored under.
function keyedValues(v) {
  if (!v) return null;
  const box = h('div', { class: 'sp-keyed-values' });
  for (const st of v.states) {
    box.append(h('div', { class: 'sp-list', 'data-state': st.name }, h('strong', {}, st.name), ' ', h('span', { class: 'sp-mode' }, st.stateType || '?'), ' ',
      t('savepoint.keyedEntries', { n: st.entries })));
    if (st.samples && st.samples.length) {
      const ul = h('ul', { class: 'sp-values' });
      for (const e of st.samples.slice(0, 10)) {
        let key = e.userKey !== undefined ? `${JSON.stringify(e.key)}[${JSON.stringify(e.userKey)}]` : JSON.stringify(e.key);
        if (e.namespace && e.namespace.start !== undefined) key += ` @ [${e.namespace.start}, ${e.namespace.end})`;
        ul.append(h('li', { class: 'sp-keyed-entry' }, h('span', { class: 'muted' }, `#${e.keyGroup} `), `${key} = ${JSON.stringify(e.value)}`));
      }
      box.append(ul);
    }
    if (st.notDecoded) box.append(notDecoded(st.notDecoded, st.notDecodedReason));
  }
  if (v.keyGroupChecked > 0) box.append(h('p', { class: 'hint sp-kg-check' }, t('savepoint.kgCheck', { ok: v.keyGroupChecked - v.keyGroupMismatches, n: v.keyGroupChecked })));
  if (v.notDecoded) box.append(notDecoded(v.notDecoded, v.notDecodedReason));
  return box;
}

// notDecoded says why values were not decoded, in the page's language: the
// reader gives each reason a code (savepoint/reason.go) whose sentence is
// "savepoint.reason.<code>" in static/i18n; the values it names (state and
// class names, paths, numbers, the reader's own detail) are set as code. The
// English text is the fallback for a code the catalogue lacks.
function notDecoded(text, reason) {
  const p = h('p', { class: 'hint sp-reason', 'data-code': reason ? reason.code : '' });
  p.append(...sentence(t('savepoint.notDecoded'), 'reason', reasonOrText(reason, text)));
  return p;
}

// sentence is tpl (a translated sentence) with its {slot} replaced by parts.
function sentence(tpl, slot, parts) {
  const [before, after = ''] = tpl.split(`{${slot}}`);
  return [before, ...parts, after].filter((x) => x !== '');
}

// reasonOrText is a reason in the page's language, or the English text for
// a code the catalogue lacks (or no reason at all).
function reasonOrText(reason, text) {
  return reason && has(`savepoint.reason.${reason.code}`) ? reasonParts(reason) : [text];
}

function reasonParts(r) {
  const parts = [];
  const tpl = t(`savepoint.reason.${r.code}`);
  let last = 0;
  for (const m of tpl.matchAll(/\{(\w+)\}/g)) {
    parts.push(tpl.slice(last, m.index));
    const name = m[1];
    if (name === 'cause' && r.cause) parts.push(...(has(`savepoint.reason.${r.cause.code}`) ? reasonParts(r.cause) : ['?']));
    else parts.push(h('code', {}, r.args && name in r.args ? r.args[name] : m[0]));
    last = m.index + m[0].length;
  }
  parts.push(tpl.slice(last));
  return parts.filter((x) => x !== '');
}

function svgSwatch(i) {
  return s('svg', { width: 12, height: 12, 'aria-hidden': 'true' }, s('rect', { width: 12, height: 12, rx: 2, fill: ownerColor(i) }));
}

function renderList(l) {
  const box = h('div', { class: 'sp-list', 'data-state': l.name });
  box.append(h('div', {}, h('strong', {}, l.name), ' ', h('span', { class: 'sp-mode' }, l.mode), ' ',
    t('savepoint.elements', { n: l.elements, size: bytes(l.bytes) })));
  if (l.values && l.values.length) {
    const ol = h('ol', { class: 'sp-values', start: 0 });
    for (const v of l.values.slice(0, 20)) ol.append(h('li', { class: 'sp-value' }, h('span', { class: 'muted' }, v.type || ''), ' ', valueText(v)));
    if (l.values.length > 20) ol.append(h('li', { class: 'muted' }, t('savepoint.more', { n: l.values.length - 20 })));
    box.append(ol);
  }
  if (l.notDecoded) box.append(notDecoded(l.notDecoded, l.notDecodedReason));
  return box;
}

function valueText(v) {
  if (v.text) return v.text; // a long beyond what a double holds exactly
  const x = v.value;
  if (v.type === 'KafkaPartitionSplit') {
    if (x.stoppingOffset === undefined) return t('savepoint.kafkaSplitUnbounded', { topic: x.topic, partition: x.partition, offset: x.startingOffset });
    return t('savepoint.kafkaSplit', { topic: x.topic, partition: x.partition, offset: x.startingOffset, stop: x.stoppingOffset });
  }
  return typeof x === 'string' ? x : JSON.stringify(x);
}

// The key-group strip of the saved state: one cell per key group, its width
// proportional to the bytes the handle records for it (equal widths where a
// handle has no per-key-group offsets), coloured by the subtask that saved it.
function keyGroupStrip(op) {
  const cells = [];
  for (const st of op.subtasks) {
    for (const k of st.keyedState) {
      const n = k.end - k.start + 1;
      for (let g = k.start; g <= k.end; g++) {
        const b = k.keyGroupBytes ? k.keyGroupBytes[g - k.start] : k.bytes / Math.max(n, 1);
        cells.push({ g, b, owner: st.subtask });
      }
    }
  }
  cells.sort((a, b) => a.g - b.g);
  const total = cells.reduce((a, c) => a + c.b, 0);
  const W = 1000, H = 28;
  const svg = s('svg', { class: 'sp-strip', viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': t('savepoint.stripLabel', { n: cells.length, size: bytes(total) }) });
  let x = 0;
  for (const c of cells) {
    const w = total > 0 ? (c.b / total) * W : W / cells.length;
    svg.append(s('rect', { x, y: 0, width: Math.max(w, 0), height: H, fill: ownerColor(c.owner), class: 'sp-kg', 'data-key-group': c.g, 'data-bytes': Math.round(c.b) },
      s('title', {}, t('savepoint.kgTitle', { g: c.g, owner: c.owner, size: bytes(Math.round(c.b)) }))));
    x += w;
  }
  return h('figure', { class: 'sp-strip-figure' }, svg, h('figcaption', { class: 'hint' }, t('savepoint.stripCaption', { n: num(cells.length), size: bytes(total) })));
}

planForm.addEventListener('submit', async (e) => {
  e.preventDefault();
  if (!file) return;
  showError('');
  const q = new URLSearchParams({ operator: planOp.value, parallelism: planPar.value });
  clear(planEl);
  try {
    const plan = await post(`/api/savepoint/plan?${q}`, file);
    renderPlan(plan);
  } catch (err) {
    planEl.append(h('p', { class: 'notice error', id: 'sp-plan-error', role: 'alert' }, err.message));
  }
});

function renderPlan(p) {
  planEl.append(h('p', { id: 'sp-plan-summary' }, t('savepoint.planSummary', { from: p.from, to: p.to, max: p.maxParallelism, moved: p.movedKeyGroups.length })));
  // New owners of every key group; the moved ones outlined.
  const W = 1000, H = 20, cw = W / p.maxParallelism;
  const moved = new Set(p.movedKeyGroups);
  const svg = s('svg', { class: 'sp-strip', viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': t('savepoint.planStrip') });
  for (const st of p.subtasks) {
    for (let g = st.range.start; g <= st.range.end; g++) {
      svg.append(s('rect', { x: g * cw, y: 0, width: cw, height: H, fill: ownerColor(st.subtask), class: moved.has(g) ? 'sp-kg moved' : 'sp-kg', 'data-key-group': g }));
    }
  }
  planEl.append(h('figure', { class: 'sp-strip-figure' }, svg, h('figcaption', { class: 'hint' }, t('savepoint.planStrip'))));
  const table = h('table', { class: 'sp-plan-table', id: 'sp-plan-table' },
    h('thead', {}, h('tr', {}, h('th', {}, t('savepoint.newSubtask')), h('th', {}, t('savepoint.keyGroups')), h('th', {}, t('savepoint.keyedReads')), h('th', {}, t('savepoint.operatorState')))));
  const body = h('tbody');
  for (const st of p.subtasks) {
    body.append(h('tr', { 'data-subtask': st.subtask },
      h('th', { scope: 'row' }, h('span', { class: 'sp-swatch' }, svgSwatch(st.subtask)), ` ${st.subtask}`),
      h('td', {}, `[${st.range.start}, ${st.range.end}]`),
      h('td', {}, st.keyedReads.length ? st.keyedReads.map((r) => h('div', {}, t(r.wholeHandle ? 'savepoint.readWhole' : 'savepoint.read1', { old: r.oldSubtask, start: r.range.start, end: r.range.end, size: bytes(r.bytes) }))) : h('span', { class: 'muted' }, t('savepoint.none'))),
      h('td', {}, st.operatorState.length ? st.operatorState.map((o) => h('div', { class: 'sp-plan-state', 'data-state': o.name },
        t('savepoint.planState', { name: o.name, mode: o.mode, n: o.elements.length, size: bytes(o.bytes), from: o.elements.map((e) => `${e.oldSubtask}#${e.index}`).join(' ') }))) : h('span', { class: 'muted' }, t('savepoint.none')))));
  }
  table.append(body);
  planEl.append(table);
  if (p.rawState) planEl.append(h('p', { class: 'hint' }, t('savepoint.noteRaw')));
  if (p.coordinator) planEl.append(h('p', { class: 'hint' }, t('savepoint.noteCoordinator')));
}

await loadCatalog(document.body.dataset.lang);
page.dataset.ready = 'true';
