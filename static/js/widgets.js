// widgets.js — pieces several views share: run tables, label chips, error boxes.

import { h, notice } from './dom.js';
import { href } from './state.js';
import { figures, labels, title, versionOf } from './model.js';
import { figure, when } from './format.js';

export const runHref = (name) => href({ view: 'run', name });

/* An error box that says what failed and what to do about it. */
export function errorBox(e, what) {
  const status = e && e.status;
  let hint = 'Check that kernelindexd is running, then reload the page.';
  if (status === 404) hint = 'It may have been deleted, or the link is mistyped; go back to the catalog to find it.';
  if (status === 400) hint = 'Fix the request (for a label selector: key=value, key!=value, key in (a,b), comma for AND) and try again.';
  if (status === 0) hint = 'The server did not answer: is kernelindexd running on this address?';
  return notice('error', `${what}: ${(e && e.message) || e}`, hint);
}

export function chips(obj, keys) {
  const l = labels(obj);
  const ks = keys || Object.keys(l).sort();
  return h('ul', { class: 'chips', 'aria-label': 'Labels' },
    ks.filter((k) => l[k] !== undefined).map((k) => h('li', { class: 'chip' }, h('span', { class: 'chip-k' }, k), '=', h('span', { class: 'chip-v' }, l[k]))));
}

/*
 * A table of runs. opts.pick: Set of picked names and opts.onPick(name, on)
 * add a checkbox column for choosing runs to compare; opts.caption names it.
 */
export function runsTable(runs, opts = {}) {
  const pick = opts.pick;
  const head = h('tr',
    pick && h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Compare')),
    h('th', { scope: 'col' }, 'Run'),
    h('th', { scope: 'col' }, 'Kernel'),
    h('th', { scope: 'col' }, 'Provider'),
    h('th', { scope: 'col' }, 'GPU'),
    h('th', { scope: 'col' }, 'Pass'),
    h('th', { scope: 'col' }, 'Metric'),
    h('th', { scope: 'col', class: 'num' }, 'Size'),
    h('th', { scope: 'col' }, 'Version'),
    h('th', { scope: 'col', class: 'num' }, 'Median'),
    h('th', { scope: 'col' }, 'Observed'));
  const body = h('tbody', runs.map((r) => runRow(r, opts)));
  return h('div', { class: 'table-scroll', role: 'region', 'aria-label': opts.caption || 'Runs', tabindex: '0' },
    h('table', { class: 'runs' }, opts.caption && h('caption', { class: 'visually-hidden' }, opts.caption), h('thead', head), body));
}

/* The swept size of a run: Liger's swept parameter and its value. */
export function sizeOf(r) {
  const a = (r.metadata && r.metadata.annotations) || {};
  const n = a['liger.kernelindex.dev/x-name'];
  const v = a['liger.kernelindex.dev/x-value'];
  return v !== undefined ? `${n ? `${n} = ` : ''}${v}` : '—';
}

export function runRow(r, opts = {}) {
  const l = labels(r);
  const f = figures(r);
  const name = r.metadata.name;
  const pick = opts.pick;
  return h('tr', { dataset: { name }, class: opts.fresh ? 'fresh' : undefined },
    pick && h('td', h('input', {
      type: 'checkbox', checked: pick.has(name), 'aria-label': `Compare ${title(r)}`,
      on: { change: (e) => opts.onPick(name, e.target.checked) },
    })),
    h('td', { class: 'run-cell' }, h('a', { href: runHref(name), class: 'run-title' }, title(r)), h('span', { class: 'run-name' }, name)),
    h('td', l.kernel || '—'),
    h('td', l.provider || '—'),
    h('td', l.gpu || '—'),
    h('td', l.pass || '—'),
    h('td', l.metric || f.metric),
    h('td', { class: 'num size' }, sizeOf(r)),
    h('td', { class: 'version' }, versionOf(r) || '—'),
    h('td', { class: 'num' }, figure(f.metric, f.median)),
    h('td', { class: 'when' }, when(r.spec && r.spec.observedAt)));
}

/* The compare bar: what is picked and a link to compare it. */
export function compareBar(pick, onClear) {
  const names = [...pick];
  return h('div', { class: 'compare-bar', role: 'region', 'aria-label': 'Runs picked for comparison' },
    h('span', names.length ? `${names.length} run${names.length === 1 ? '' : 's'} picked` : 'Tick runs to compare them side by side.'),
    names.length >= 2 ? h('a', { class: 'button', href: href({ view: 'compare', runs: names.join(',') }) }, `Compare ${names.length} runs`) : null,
    names.length ? h('button', { type: 'button', class: 'link-button', on: { click: onClear } }, 'Clear') : null);
}
