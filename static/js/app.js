// app.js — starts the page: picks the view the URL names and keeps it in
// step with the URL.

import { h, put, notice } from './dom.js';
import * as state from './state.js';
import * as live from './live.js';
import catalog from './catalog.js';

performance.mark('ki-boot');

const loaders = {
  catalog: async () => catalog,
  kernel: async () => (await import('./kernel.js')).default,
  run: async () => (await import('./run.js')).default,
  compare: async () => (await import('./compare.js')).default,
  regressions: async () => (await import('./regress.js')).default,
  leaderboard: async () => (await import('./leaderboard.js')).default,
  object: async () => (await import('./object.js')).default,
};

const main = document.getElementById('main');
let active = null; // {name, view}
let generation = 0;

function markNav(name) {
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

async function render({ source } = {}) {
  const st = state.read();
  const gen = ++generation;
  const load = loaders[st.view];
  // Set again once the view has drawn what it was asked for.
  delete document.documentElement.dataset.ready;
  markNav(st.view);
  if (!load) {
    live.stop();
    active = null;
    put(main, h('h1', { tabindex: '-1' }, 'Not a view of this page'),
      notice('error', `There is no view called “${st.view}”.`, h('p', h('a', { href: state.href({ view: 'catalog' }) }, 'Go to the catalog'))));
    return;
  }
  try {
    const view = await load();
    if (gen !== generation) return;
    if (active && active.name === st.view && active.view.update) {
      await active.view.update(st, { source });
      if (gen === generation) document.documentElement.dataset.ready = st.view;
      return;
    }
    if (active && active.view.unmount) active.view.unmount();
    active = { name: st.view, view };
    main.replaceChildren();
    await view.mount(main, st, { source });
    if (gen === generation) document.documentElement.dataset.ready = st.view;
    if (source === 'navigate') {
      const h1 = main.querySelector('h1');
      if (h1) {
        h1.setAttribute('tabindex', '-1');
        h1.focus({ preventScroll: true });
      }
      window.scrollTo(0, 0);
    }
  } catch (e) {
    if (e && e.name === 'AbortError') return;
    console.warn(e);
    put(main, h('h1', { tabindex: '-1' }, 'Something went wrong'),
      notice('error', 'The view could not be shown.', h('p', String((e && e.message) || e)),
        h('p', 'Reload the page; if this persists, check that kernelindexd is running and reachable.')));
  }
}

/* Links inside the page change the URL and the view without a reload. */
document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target.closest && e.target.closest('a[href]');
  if (!a || a.getAttribute('target') || a.hasAttribute('download')) return;
  const url = new URL(a.getAttribute('href'), location.href);
  if (url.origin !== location.origin || url.pathname !== '/' || !url.search) return;
  e.preventDefault();
  state.navigate(url.pathname + url.search);
});

state.onChange(render);
render({ source: 'load' });
