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

import { t } from './i18n.js';

export function inPage() {
  return document.documentElement.dataset.site === 'static';
}

// siteBase is where the site's root is on its host: '/' at a host's root,
// '/statelab/' for a project site on GitHub Pages, found from this script's
// own address (static/js/inpage.js under the root), so the site works under
// any path prefix. Its pages link to each other and to their assets by
// relative addresses (web/site.go); the addresses the views build for a
// server ('/sandbox/live?…', '/static/…', '/api/…') go through sitePath.
export const siteBase = new URL('../../', import.meta.url).pathname;

const pageKind = /^(static|wasm|api)\//;

// sitePath is the site's address for p, an address a view builds for a
// server: under the site's base, a page in this page's language tree (the
// Chinese pages are under zh/) with the trailing slash of its directory.
// Off the site, and for other addresses, it is p.
export function sitePath(p) {
  if (!inPage() || typeof p !== 'string' || !p.startsWith('/') || p.startsWith('//')) return p;
  if (siteBase !== '/' && (p.startsWith(siteBase) || `${p}/` === siteBase)) return p;
  let rest = p.slice(1);
  const zh = location.pathname.startsWith(`${siteBase}zh/`);
  if (!pageKind.test(rest)) {
    if (zh && !/^zh(\/|$|\?)/.test(rest)) rest = `zh/${rest}`;
    const cut = rest.search(/[?#]/);
    const path = cut < 0 ? rest : rest.slice(0, cut);
    if (path !== '' && !path.endsWith('/') && !path.split('/').pop().includes('.')) rest = `${path}/${cut < 0 ? '' : rest.slice(cut)}`;
  }
  return siteBase + rest;
}

// wasmRoot is where the site keeps statelab.wasm and wasm_exec.js.
function wasmRoot() {
  return document.documentElement.dataset.wasm || `${siteBase}wasm/`;
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
    const worker = new Worker(`${siteBase}static/js/engine-worker.js?wasm=${encodeURIComponent(wasmRoot())}`);
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
// beginning (the query is kept in sessionStorage, for this tab). A fork, or
// an imported scenario, was started from no query: when the engine makes
// one, the page asks for its share link at once and keeps that (s=…), so a
// reload — or, in a browser without the Navigation API, the fork's own new
// page — replays the run up to the step it was copied at, as a server
// replays a share link.
const opened = new Set();
// known: every session this page's engine holds (a run, a fork, an
// imported scenario), from snapshots, acks and /api/ answers.
const known = new Set();
const storeKey = (id) => `statelab.site.${id}`;
function learn(text) {
  if (!text.includes('"session"')) return;
  try {
    const m = JSON.parse(text);
    if (typeof m.session === 'string' && m.session) known.add(m.session);
  } catch { /* not JSON */ }
}
// siteQuery is the query to open a live view with: a session this page's
// engine holds is connected to as it is (a fork, an imported scenario: the
// engine made it, no socket has opened it yet); one it does not hold is made
// again from what was kept for it. (Replaying a kept fork while the engine
// held the fork itself started a second run, a share link's replay of it
// under a new session that the address did not name, instead of the fork
// playing on.)
function siteQuery(query) {
  const id = new URLSearchParams(query).get('session');
  if (id && !opened.has(id) && !known.has(id)) {
    const first = sessionStorage.getItem(storeKey(id));
    if (first) return first;
  }
  return query;
}

// remember keeps how to make session id again: its share link's s=, and the
// address of the page it came from. A run that cannot be shared (one that
// went to full speed) is not kept; its page says so after a reload.
async function remember(id) {
  try {
    const eng = await start();
    const r = await eng.request('GET', `/api/sessions/${encodeURIComponent(id)}/share`, null, '');
    if (r.status !== 200) return;
    const s = new URL(JSON.parse(r.body).url).searchParams.get('s');
    if (!s) return;
    sessionStorage.setItem(storeKey(id), `s=${encodeURIComponent(s)}`);
    sessionStorage.setItem(`${storeKey(id)}.from`, location.href);
  } catch { /* storage off, or no share: the page says so after a reload */ }
}

// forkOf is the new session a fork's ack names.
function forkOf(data) {
  if (!data.startsWith('{"type":"ack"') || !data.includes('"session"')) return '';
  try {
    const m = JSON.parse(data);
    return typeof m.session === 'string' ? m.session : '';
  } catch { return ''; }
}

// lost says, on a page whose session this page's engine cannot make again,
// what happened and where to go: back to the page the run came from, or a
// new sandbox.
function lost(id) {
  const main = document.getElementById('main');
  if (!main || document.getElementById('site-lost')) return;
  const from = sessionStorage.getItem(`${storeKey(id)}.from`)
    || (document.referrer && new URL(document.referrer).origin === location.origin && document.referrer !== location.href ? document.referrer : '');
  const p = document.createElement('p');
  p.id = 'site-lost';
  p.className = 'notice error';
  p.setAttribute('role', 'alert');
  p.append(t('site.lost'), ' ');
  const link = (href, text, id2) => {
    const a = document.createElement('a');
    a.href = href;
    a.id = id2;
    a.textContent = text;
    return a;
  };
  if (from) p.append(link(from, t('site.lost.back'), 'site-lost-back'), ' · ');
  p.append(link(sitePath('/sandbox'), t('site.lost.sandbox'), 'site-lost-sandbox'));
  main.prepend(p);
}

// InPageSocket is a WebSocket to the in-page server: the same readyState
// values, send, close and handlers, so Connection uses either unchanged.
export class InPageSocket {
  constructor(url) {
    this.readyState = 0; // CONNECTING
    const query = siteQuery(new URL(url, location.href).search.slice(1));
    this.query = query;
    const id = new URLSearchParams(query).get('session');
    if (id && !opened.has(id) && !known.has(id)) {
      // A session of a page that is gone, and nothing kept to make it again.
      setTimeout(() => {
        lost(id);
        this.closed(1008, t('site.lost'));
      }, 0);
      return;
    }
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

  // received passes the engine's messages on in order; a fork's ack waits
  // until the fork's share link is kept (the page may leave for the fork's
  // own page as soon as it has the ack).
  received(data) {
    if (this.held) {
      this.held.push(data);
      return;
    }
    const fork = forkOf(data);
    if (fork) {
      this.held = [];
      remember(fork).finally(() => {
        const rest = this.held;
        this.held = null;
        this.deliver(data);
        for (const d of rest) this.received(d);
      });
      return;
    }
    this.deliver(data);
  }

  deliver(data) {
    if (this.readyState === 3) return;
    // The site's load budget: first snapshot within 3 s of load.
    globalThis.statelabSiteTimings.firstMessageMs ??= performance.now();
    if (data.startsWith('{"type":"ack"')) learn(data);
    if (!this.session && data.startsWith('{"type":"snapshot"')) {
      try {
        this.session = JSON.parse(data).session;
        opened.add(this.session);
        known.add(this.session);
        if (!/(^|&)session=/.test(this.query)) sessionStorage.setItem(storeKey(this.session), this.query);
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

// sitePart is the part of a same-origin path after the site's base, with
// its leading slash ('/api/…', '/static/…'), whether the path was built for
// a server ('/api/x') or is the site's own ('/statelab/api/x').
function sitePart(pathname) {
  return siteBase !== '/' && pathname.startsWith(siteBase) ? pathname.slice(siteBase.length - 1) : pathname;
}

// On the static site, /api/... requests go to the in-page server, and the
// other addresses a view builds for a server (/static/i18n/…) go under the
// site's base.
if (inPage()) {
  const netFetch = globalThis.fetch.bind(globalThis);
  globalThis.fetch = async (input, init) => {
    const req = new Request(input, init);
    const u = new URL(req.url);
    if (u.origin !== location.origin) return netFetch(input, init);
    const part = sitePart(u.pathname);
    if (!part.startsWith('/api/')) {
      if (part === u.pathname && siteBase !== '/') return netFetch(sitePath(u.pathname) + u.search, init);
      return netFetch(input, init);
    }
    const eng = await start();
    const body = req.method === 'GET' || req.method === 'HEAD' ? null : new Uint8Array(await req.arrayBuffer());
    const r = await eng.request(req.method, part + u.search, body, req.headers.get('Content-Type') || '');
    if (typeof r.body === 'string') learn(r.body);
    if (req.method === 'POST' && part === '/api/scenarios' && r.status === 201) {
      // An imported scenario: kept like a fork, for a reload of its page.
      try { await remember(JSON.parse(r.body).session); } catch { /* not JSON */ }
    }
    return new Response(r.status === 204 || r.status === 304 ? null : r.body, { status: r.status, headers: { 'Content-Type': r.contentType || 'text/plain' } });
  };

  // Links and addresses the views build for a server go to the site's
  // pages: a link's press, and history's addresses.
  // A fragment-only link (the skip link's #main) stays on this page: the
  // page's base URL is its directory (web/site.go's siteBaseScript), not
  // its address with the query that names its run.
  document.addEventListener('click', (e) => {
    const a = e.target instanceof Element ? e.target.closest('a[href]') : null;
    const href = a?.getAttribute('href');
    if (href && href.startsWith('/') && !href.startsWith('//')) {
      const to = sitePath(href);
      if (to !== href) a.setAttribute('href', to);
    } else if (href && href.startsWith('#') && !e.defaultPrevented) {
      e.preventDefault();
      location.hash = href;
    }
  }, true);
  for (const name of ['pushState', 'replaceState']) {
    const orig = history[name].bind(history);
    history[name] = (state, unused, url) => orig(state, unused, typeof url === 'string' ? sitePath(url) : url);
  }
}

// Going to the live view of a session this page's engine holds (a fork, an
// imported scenario) stays in this page: a new page would start a new
// engine without it. The address changes as it would; the live view
// connects to the session and a fork plays on, as on a server. (Where the
// browser has no Navigation API the fork's page loads, and its engine
// replays the fork from its kept share link.) Other addresses a view built
// for a server go to the site's page.
if (inPage() && globalThis.navigation) {
  globalThis.navigation.addEventListener('navigate', (e) => {
    if (!e.canIntercept || e.hashChange || e.downloadRequest || e.formData) return;
    const u = new URL(e.destination.url);
    if (u.origin !== location.origin) return;
    const to = sitePath(u.pathname);
    if (to.replace(/\/$/, '') !== u.pathname.replace(/\/$/, '') && e.cancelable) {
      e.preventDefault();
      location.assign(to + u.search + u.hash);
      return;
    }
    const id = u.searchParams.get('session');
    if (!/^(zh\/)?sandbox\/live\/?$/.test(sitePart(u.pathname).slice(1)) || !id || !known.has(id)) return;
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
