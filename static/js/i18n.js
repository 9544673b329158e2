// Message catalogues: the same static/i18n/<lang>.json files the server
// renders pages with. t(key, params) fills {name} placeholders.

let lang = 'en';
let msgs = {};
let en = {};

async function fetchCatalog(code) {
  const r = await fetch(`/static/i18n/${code}.json`);
  if (!r.ok) throw new Error(`catalogue ${code}: HTTP ${r.status}`);
  return r.json();
}

export async function loadCatalog(code) {
  lang = code || 'en';
  en = await fetchCatalog('en');
  msgs = lang === 'en' ? en : await fetchCatalog(lang);
}

export function getLang() { return lang; }

export function has(key) { return key in msgs || key in en; }

export function t(key, params) {
  let s = msgs[key] ?? en[key] ?? key;
  if (params) {
    s = s.replace(/\{(\w+)\}/g, (m, name) => (name in params ? String(params[name]) : m));
  }
  return s;
}

// errorText is a command's error ({code, message}, docs/protocol.md) for a
// toast: the server's message is English (the engine's words, Flink's where
// it quotes Flink), so a sentence in the page's language says first what
// kind of error it is and that the reason follows in the original.
export function errorText(err) {
  const msg = err?.message || String(err);
  const key = `error.${err?.code}`;
  return err?.code && has(key) ? t(key, { message: msg }) : msg;
}
