// The WebSocket client of docs/protocol.md: one socket per tab, commands
// with ids answered by ack or error, reconnection to the same session.
//
// The transport is a WebSocket to the server, or on the static site an
// InPageSocket to the engine running in this page (inpage.js): the same
// messages either way.

import { inPage, InPageSocket } from './inpage.js';

// openSocket opens the transport for url (ws://host/ws?query).
export function openSocket(url) {
  return inPage() ? new InPageSocket(url) : new WebSocket(url);
}

export class Connection {
  // query: "template=wordcount&…" or "session=ID"; handlers: onSnapshot,
  // onEvents, onStatus(state, detail), onError(msg) for errors without a
  // pending command.
  constructor(query, handlers) {
    this.query = query;
    this.h = handlers;
    this.pending = new Map();
    this.next = 1;
    this.session = null;
    this.retry = 0;
    this.closedByUs = false;
    this.open();
  }

  url(query) {
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    return `${scheme}//${location.host}/ws?${query}`;
  }

  open() {
    // A classroom's presenter and followers reconnect as what they are,
    // not through the session id.
    const q = this.session && !/(^|&)classroom=/.test(this.query) ? `session=${encodeURIComponent(this.session)}` : this.query;
    this.h.onStatus?.('connecting');
    const ws = openSocket(this.url(q));
    this.ws = ws;
    ws.onopen = () => { this.retry = 0; this.h.onStatus?.('open'); };
    ws.onmessage = (ev) => this.receive(ev.data);
    ws.onclose = (ev) => {
      for (const [, p] of this.pending) p.reject({ code: 'disconnected', message: ev.reason || 'the connection closed' });
      this.pending.clear();
      if (this.closedByUs) return;
      // 1008 with a reason from the opening handshake (unknown session,
      // bad settings, limit) is final: say why and stop.
      if (ev.code === 1008 && !this.session) { this.h.onStatus?.('failed', ev.reason); return; }
      if (ev.code === 1008 && /no session|there is no session/.test(ev.reason)) { this.h.onStatus?.('failed', ev.reason); return; }
      this.h.onStatus?.('closed', ev.reason);
      const delay = Math.min(10000, 500 * 2 ** this.retry++);
      setTimeout(() => this.open(), delay);
    };
  }

  receive(data) {
    let m;
    try { m = JSON.parse(data); } catch { return; }
    switch (m.type) {
      case 'snapshot':
        this.session = m.session;
        this.h.onSnapshot?.(m);
        break;
      case 'events':
        this.h.onEvents?.(m.events);
        break;
      case 'timeline':
        this.h.onTimeline?.(m);
        break;
      case 'lesson':
        this.h.onLesson?.(m);
        break;
      case 'ack': {
        const p = this.pending.get(m.id);
        if (p) { this.pending.delete(m.id); p.resolve(m); }
        break;
      }
      case 'error': {
        const p = this.pending.get(m.id);
        if (p) { this.pending.delete(m.id); p.reject(m); } else this.h.onError?.(m);
        break;
      }
    }
  }

  // command sends a command and resolves with its ack, or rejects with its
  // error ({code, message}).
  command(name, args) {
    const id = `c${this.next++}`;
    return new Promise((resolve, reject) => {
      if (!this.ws || this.ws.readyState !== 1) { // OPEN
        reject({ code: 'disconnected', message: 'not connected' });
        return;
      }
      this.pending.set(id, { resolve, reject });
      const msg = { type: 'command', id, name };
      if (args) msg.args = args;
      this.ws.send(JSON.stringify(msg));
    });
  }

  close() {
    this.closedByUs = true;
    this.ws?.close();
  }
}
