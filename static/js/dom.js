// Small DOM helpers: build HTML and SVG elements without innerHTML, so no
// text from the engine or the user is ever parsed as markup.

const SVG = 'http://www.w3.org/2000/svg';

function set(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.setAttribute('class', v);
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  return el;
}

function append(el, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// h builds an HTML element: h('button', {class: 'button', onclick: f}, 'Crash').
export function h(tag, attrs, ...children) {
  return append(set(document.createElement(tag), attrs), children);
}

// s builds an SVG element.
export function s(tag, attrs, ...children) {
  return append(set(document.createElementNS(SVG, tag), attrs), children);
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export const $ = (id) => document.getElementById(id);

// reducedMotion says whether the person asked their system for less motion
// (prefers-reduced-motion: reduce), read at each use so that a change takes
// effect at once. The job graph then moves no dots along its channels (the
// queues and the edges' rates say what flows), barriers appear where they
// wait, state rows do not flash and nothing scrolls smoothly; app.css stops
// its transitions and animations.
const motionQuery = typeof matchMedia === 'function' ? matchMedia('(prefers-reduced-motion: reduce)') : null;
export const reducedMotion = () => !!motionQuery?.matches;

// attr sets an attribute only when it changes: rendering every frame must
// not touch the DOM when nothing moved.
export function attr(el, name, value) {
  const v = String(value);
  if (el.getAttribute(name) !== v) el.setAttribute(name, v);
}

export function text(el, value) {
  const v = String(value);
  if (el.textContent !== v) el.textContent = v;
}

// prop sets a property (disabled, className, value) only when it changes:
// assigning a property an equal value still rewrites its attribute, and the
// page is restyled for it.
export function prop(el, name, value) {
  if (el[name] !== value) el[name] = value;
}

export function toggle(el, cls, on) {
  if (el.classList.contains(cls) !== !!on) el.classList.toggle(cls, !!on);
}
