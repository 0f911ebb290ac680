// object.js — any object by digest: its canonical content, immutable.

import { h, put, notice } from './dom.js';
import * as api from './api.js';
import * as state from './state.js';
import { errorBox } from './widgets.js';

let root = null;

export function mount(el, st) {
  root = el;
  return update(st);
}

export function unmount() {
  root = null;
}

export async function update(st) {
  const d = st.digest || '';
  if (!api.DIGEST_RE.test(d)) {
    put(root, h('h1', 'Object'), notice('error', 'This is not a digest.', 'A digest is sha256: followed by 64 lowercase hex digits.'));
    return;
  }
  put(root, h('h1', 'Object'), h('p', { class: 'digest' }, d), notice('loading', 'Loading…'));
  let o;
  try {
    o = await api.object(d);
  } catch (e) {
    put(root, h('h1', 'Object'), h('p', { class: 'digest' }, d),
      e.status === 404 ? notice('warn', 'No object with this digest is stored yet.', 'A run that names it shows it as unresolved until someone uploads it.') : errorBox(e, 'The object could not be loaded'));
    return;
  }
  const cmd = `curl -s ${location.origin}${api.objectURL(d)}`;
  put(root,
    h('h1', o.kind || 'Object'),
    h('p', { class: 'digest' }, d),
    h('p', { class: 'hint' }, 'The canonical content (apiVersion, kind, spec) whose SHA-256 is this digest. It never changes, so it is cached for good.'),
    h('h2', 'Fetch it'),
    h('div', { class: 'cmd' }, h('pre', h('code', cmd))),
    h('h2', 'Content'),
    h('pre', { class: 'json', tabindex: '0' }, JSON.stringify(o, null, 2)),
    h('p', h('a', { href: state.href({ view: 'catalog' }) }, 'Back to the catalog')));
}

export default { mount, update, unmount };
