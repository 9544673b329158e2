// The in-page transport of the static site (statelab site DIR): the real
// engine, compiled to WebAssembly, runs in this page, and the views talk to
// it with the same protocol messages they send a server over WebSocket.
//
// A page of the static site has <html data-site="static">. There, conn.js
// opens an InPageSocket instead of a WebSocket (both have readyState,
// send, close, onopen, onmessage, onclose), and fetches of /api/... go to
// the in-page server instead of the network. On a page statelab serve
// sends, nothing here runs.
//
// The engine runs in a worker (engine-worker.js), off the main thread, so
// the views keep drawing while it plays; the worker loads memfs.js as its
// file system, then wasm_exec.js and statelab.wasm (cmd/statelab-wasm).

export function inPage() {
  return document.documentElement.dataset.site === 'static';
}

// wasmRoot is where the site keeps statelab.wasm and wasm_exec.js.
function wasmRoot() {
  return document.documentElement.dataset.wasm || '/wasm/';
}

let engine = null;

// Times since the page's navigation started, in milliseconds (read by the
// site's browser test): engineStartMs, engineReadyMs, firstMessageMs.
globalThis.statelabSiteTimings ??= {};

// start starts the engine worker (engine-worker.js) once per page and
// resolves with a handle on it: {connect, request}.
export function start() {
  if (engine) return engine;
  engine = new Promise((resolve, reject) => {
    const t0 = performance.now();
    const worker = new Worker(`/static/js/engine-worker.js?wasm=${encodeURIComponent(wasmRoot())}`);
    const sockets = new Map();
    const requests = new Map();
    let next = 1;
    worker.onmessage = (ev) => {
      const m = ev.data;
      switch (m.type) {
        case 'ready':
          Object.assign(globalThis.statelabSiteTimings, { engineStartMs: t0, engineReadyMs: performance.now() });
          resolve({
            connect(query, s) {
              const id = next++;
              sockets.set(id, s);
              worker.postMessage({ type: 'connect', id, query });
              return {
                send: (data) => worker.postMessage({ type: 'send', id, data }),
                close: () => worker.postMessage({ type: 'close', id }),
              };
            },
            request(method, url, body, contentType) {
              const rid = next++;
              return new Promise((res) => {
                requests.set(rid, res);
                worker.postMessage({ type: 'request', rid, method, url, body, contentType });
              });
            },
          });
          break;
        case 'failed':
          reject(new Error(m.message));
          break;
        case 'open':
          sockets.get(m.id)?.opened();
          break;
        case 'message':
          sockets.get(m.id)?.received(m.data);
          break;
        case 'close':
          sockets.get(m.id)?.closed(m.code, m.reason);
          sockets.delete(m.id);
          break;
        case 'response':
          requests.get(m.rid)?.(m);
          requests.delete(m.rid);
          break;
      }
    };
    worker.onerror = (ev) => reject(new Error(ev.message || 'the engine worker failed to start'));
  });
  return engine;
}

// The live page puts ?session=ID in the address once its run has started
// (live.js), but a page of the site that loads again has a new engine with
// no session ID: it starts the run ID was started from instead, from its
// beginning (the query is kept in sessionStorage, for this tab).
const opened = new Set();
// known: every session this page's engine holds (a run, a fork, an
// imported scenario), from snapshots, acks and /api/ answers.
const known = new Set();
function learn(text) {
  if (!text.includes('"session"')) return;
  try {
    const m = JSON.parse(text);
    if (typeof m.session === 'string' && m.session) known.add(m.session);
  } catch { /* not JSON */ }
}
function siteQuery(query) {
  const id = new URLSearchParams(query).get('session');
  if (id && !opened.has(id)) {
    const first = sessionStorage.getItem(`statelab.site.${id}`);
    if (first) return first;
  }
  return query;
}

// InPageSocket is a WebSocket to the in-page server: the same readyState
// values, send, close and handlers, so Connection uses either unchanged.
export class InPageSocket {
  constructor(url) {
    this.readyState = 0; // CONNECTING
    const query = siteQuery(new URL(url, location.href).search.slice(1));
    this.query = query;
    start().then((eng) => {
      if (this.readyState === 3) return;
      this.c = eng.connect(query, this);
    }).catch((err) => {
      this.closed(1008, `the in-page engine did not start: ${err.message}`);
    });
  }

  opened() {
    this.readyState = 1;
    this.onopen?.({});
  }

  received(data) {
    // The site's load budget: first snapshot within 3 s of load.
    globalThis.statelabSiteTimings.firstMessageMs ??= performance.now();
    if (data.startsWith('{"type":"ack"')) learn(data);
    if (!this.session && data.startsWith('{"type":"snapshot"')) {
      try {
        this.session = JSON.parse(data).session;
        opened.add(this.session);
        known.add(this.session);
        if (!/(^|&)session=/.test(this.query)) sessionStorage.setItem(`statelab.site.${this.session}`, this.query);
      } catch { /* not ours to judge */ }
    }
    this.onmessage?.({ data });
  }

  // closed: 1008 before any session is final, and the page says why.
  closed(code, reason) {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }

  send(text) {
    if (this.readyState !== 1) throw new Error('the in-page connection is not open');
    this.c.send(text);
  }

  close() {
    if (this.c) this.c.close();
    else this.closed(1000, '');
  }
}

// On the static site one live page serves every run: its query (a
// template with settings, a session, a share link's s=) comes from the
// address bar, where statelab serve writes it into the page.
if (inPage()) {
  const ws = document.getElementById('workspace');
  if (ws && ws.dataset.ws === '') {
    const q = new URLSearchParams(location.search);
    q.delete('lang');
    ws.dataset.ws = q.toString();
  }
}

// On the static site, /api/... requests go to the in-page server.
if (inPage()) {
  const netFetch = globalThis.fetch.bind(globalThis);
  globalThis.fetch = async (input, init) => {
    const req = new Request(input, init);
    const u = new URL(req.url);
    if (u.origin !== location.origin || !u.pathname.startsWith('/api/')) return netFetch(input, init);
    const eng = await start();
    const body = req.method === 'GET' || req.method === 'HEAD' ? null : new Uint8Array(await req.arrayBuffer());
    const r = await eng.request(req.method, u.pathname + u.search, body, req.headers.get('Content-Type') || '');
    if (typeof r.body === 'string') learn(r.body);
    return new Response(r.status === 204 || r.status === 304 ? null : r.body, { status: r.status, headers: { 'Content-Type': r.contentType || 'text/plain' } });
  };
}

// Going to the live view of a session this page's engine holds (a fork, an
// imported scenario) stays in this page: a new page would start a new
// engine without it. The address changes as it would; the live view
// connects to the session and a fork plays on, as on a server. (Where the
// browser has no Navigation API, such a page says the session is unknown.)
if (inPage() && globalThis.navigation) {
  globalThis.navigation.addEventListener('navigate', (e) => {
    if (!e.canIntercept || e.hashChange || e.downloadRequest || e.formData) return;
    const u = new URL(e.destination.url);
    const id = u.searchParams.get('session');
    if (u.origin !== location.origin || !/^(\/zh)?\/sandbox\/live\/?$/.test(u.pathname) || !id || !known.has(id)) return;
    const live = globalThis.statelab;
    if (!live?.connect) return;
    e.intercept({
      handler: async () => {
        // A fork's page tells its story and plays it on (live.js).
        if (u.searchParams.has('forked')) live.forked?.(id, u.searchParams.get('forked'), true);
        live.connect(`session=${encodeURIComponent(id)}`);
      },
    });
  });
}
