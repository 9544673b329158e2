// The static site's engine worker: StateLab compiled to WebAssembly
// (cmd/statelab-wasm) runs here, off the page's main thread, so the views
// keep drawing while the engine plays at 64x. inpage.js talks to it with
// the messages below; the engine itself answers with the protocol's own
// messages (docs/protocol.md), passed through as text.
//
// page -> worker: {type:'connect', id, query} | {type:'send', id, data} |
//                 {type:'close', id} | {type:'request', rid, method, url, body, contentType}
// worker -> page: {type:'ready'} | {type:'failed', message} |
//                 {type:'open', id} | {type:'message', id, data} | {type:'close', id, code, reason} |
//                 {type:'response', rid, status, contentType, body}
//
// A classic worker script: importScripts loads memfs.js (the file system
// Go's os package uses here) and Go's wasm_exec.js.
'use strict';

const params = new URL(self.location.href).searchParams;
// The site's root on its host (this script is static/js/ under it): the
// site works under any path prefix (inpage.js's siteBase).
const siteBase = new URL('../../', self.location.href).pathname;
const wasmRoot = params.get('wasm') || `${siteBase}wasm/`;
self.statelabSiteBase = siteBase; // share links name the site's own address (cmd/statelab-wasm)

importScripts(`${siteBase}static/js/memfs.js`);
self.fs = self.StatelabMemFS();
importScripts(`${wasmRoot}wasm_exec.js`);

const conns = new Map();
const early = [];
let engine = null;

function handle(m) {
  switch (m.type) {
    case 'connect': {
      const c = engine.connect(m.query,
        () => postMessage({ type: 'open', id: m.id }),
        (data) => postMessage({ type: 'message', id: m.id, data }),
        (code, reason) => { conns.delete(m.id); postMessage({ type: 'close', id: m.id, code, reason }); });
      conns.set(m.id, c);
      break;
    }
    case 'send':
      if (!conns.get(m.id)?.send(m.data)) postMessage({ type: 'close', id: m.id, code: 1006, reason: 'the in-page connection is not open' });
      break;
    case 'close':
      conns.get(m.id)?.close();
      break;
    case 'request':
      engine.request(m.method, m.url, m.body, m.contentType).then((r) => postMessage({
        type: 'response', rid: m.rid, status: r.status, contentType: r.contentType, body: r.body,
      }));
      break;
  }
}

self.onmessage = (ev) => {
  if (engine) handle(ev.data);
  else early.push(ev.data);
};

(async () => {
  const go = new Go();
  const ready = new Promise((resolve, reject) => {
    self.statelabEngineReady = resolve;
    self.statelabEngineFailed = (msg) => reject(new Error(msg));
  });
  const url = `${wasmRoot}statelab.wasm`;
  let instance;
  try {
    ({ instance } = await WebAssembly.instantiateStreaming(fetch(url), go.importObject));
  } catch {
    // A host that does not send application/wasm: compile from bytes.
    const r = await fetch(url);
    if (!r.ok) throw new Error(`cannot load ${url}: HTTP ${r.status}`);
    ({ instance } = await WebAssembly.instantiate(await r.arrayBuffer(), go.importObject));
  }
  go.run(instance);
  await ready;
  engine = self.statelabEngine;
  postMessage({ type: 'ready' });
  for (const m of early.splice(0)) handle(m);
})().catch((err) => postMessage({ type: 'failed', message: err.message }));
