// state.js — the page's state lives in the URL: every view is a link, and
// the back button walks through what was shown.

export function read(search = location.search) {
  const q = new URLSearchParams(search);
  const st = {};
  for (const [k, v] of q) st[k] = v;
  if (!st.view) st.view = 'catalog';
  return st;
}

/* The link of a state; empty values are left out, keys in a stable order. */
export function href(st) {
  const q = new URLSearchParams();
  const keys = Object.keys(st).filter((k) => st[k] !== undefined && st[k] !== null && st[k] !== '');
  keys.sort((a, b) => (a === 'view' ? -1 : b === 'view' ? 1 : a.localeCompare(b)));
  for (const k of keys) q.set(k, st[k]);
  return `/?${q.toString()}`;
}

const listeners = new Set();
export const onChange = (fn) => listeners.add(fn);

export function navigate(st, { replace = false } = {}) {
  const url = typeof st === 'string' ? st : href(st);
  if (url === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  for (const fn of listeners) fn({ source: 'navigate' });
}

/* Same view, some keys changed. */
export function patch(changes, opts) {
  navigate({ ...read(), ...changes }, opts);
}

window.addEventListener('popstate', () => {
  for (const fn of listeners) fn({ source: 'popstate' });
});
