// dom.js — building the page out of elements; text is only ever inserted as text.

const SVG_NS = 'http://www.w3.org/2000/svg';

/* Attributes a caller may set. Event handlers are passed as functions under
 * "on" and never as attribute strings, and nothing here can set innerHTML. */
function apply(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'on') {
      for (const [type, fn] of Object.entries(v)) el.addEventListener(type, fn);
    } else if (k === 'class') {
      el.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
    } else if (k === 'dataset') {
      for (const [dk, dv] of Object.entries(v)) if (dv !== undefined) el.dataset[dk] = String(dv);
    } else if (k.startsWith('on') || k === 'style' || k === 'innerHTML' || k === 'srcdoc') {
      throw new Error(`refusing to set ${k} as an attribute`);
    } else if (k === 'value' && 'value' in el) {
      el.value = v;
    } else if (k === 'checked' || k === 'selected' || k === 'disabled' || k === 'open') {
      el[k] = Boolean(v);
      if (v) el.setAttribute(k, '');
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/* h('a', {href}, 'text', child…): an HTML element. Strings become text nodes. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs && (attrs instanceof Node || typeof attrs !== 'object' || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  apply(el, attrs);
  append(el, children);
  return el;
}

/* s('circle', {cx, cy, r}): an SVG element. */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  if (attrs && (attrs instanceof Node || typeof attrs !== 'object' || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'on') for (const [type, fn] of Object.entries(v)) el.addEventListener(type, fn);
    else if (k === 'dataset') for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = String(dv);
    else if (k.startsWith('on') || k === 'style') throw new Error(`refusing to set ${k}`);
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

/* Replaces el's children. */
export function put(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/* A message box for empty, loading and error states. */
export function notice(kind, title, ...body) {
  return h('div', { class: ['notice', `notice-${kind}`], role: kind === 'error' ? 'alert' : 'status' },
    h('p', { class: 'notice-title' }, title), ...body.map((b) => (b instanceof Node ? b : h('p', b))));
}

let uid = 0;
/* A fresh id for label/aria wiring. */
export function id(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}
