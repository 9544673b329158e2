// Number, size and duration formatting in the page's language.
import { getLang } from './i18n.js';

let nf = null;
let nfLang = '';

function numberFormat() {
  if (nfLang !== getLang()) {
    nfLang = getLang();
    nf = new Intl.NumberFormat(nfLang === 'zh' ? 'zh-CN' : 'en-US');
  }
  return nf;
}

export function num(n) {
  return numberFormat().format(n);
}

export function bytes(n) {
  if (n === undefined || n === null) return '–';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

// ns formats a duration given in nanoseconds (Go's time.Duration in JSON).
export function dur(ns) {
  if (ns === undefined || ns === null) return '–';
  const ms = ns / 1e6;
  if (ms < 1) return `${Math.round(ns / 1e3)} µs`;
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(2) : s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
}

// clock formats a job time (ns) as m:ss.mmm.
export function clock(ns) {
  const ms = Math.floor(ns / 1e6);
  const m = Math.floor(ms / 60000);
  const s = Math.floor((ms % 60000) / 1000);
  const r = ms % 1000;
  return `${m}:${String(s).padStart(2, '0')}.${String(r).padStart(3, '0')}`;
}
