// compare.js — two or more runs side by side: figures, ratios to a
// baseline, and every field of their protocol, environment, workload and
// implementation, with the rows that differ marked.

import { csvButton } from './export.js';
import { h, put, notice, id } from './dom.js';
import * as api from './api.js';
import * as state from './state.js';
import { labels, figures, digestOf, reference, title, REF_ROLES } from './model.js';
import { figure, ratio, when } from './format.js';
import { errorBox } from './widgets.js';

const MAX = 12;
let root = null;
let ctl = null;

const namesOf = (st) => [...new Set((st.runs || '').split(',').map((x) => x.trim()).filter(Boolean))].slice(0, MAX);

export function mount(el, st) {
  root = el;
  return update(st);
}

export function unmount() {
  if (ctl) ctl.abort();
  root = null;
}

function flatten(v, prefix, out) {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    for (const k of Object.keys(v).sort()) flatten(v[k], prefix ? `${prefix}.${k}` : k, out);
  } else if (Array.isArray(v)) {
    out.set(prefix, JSON.stringify(v));
  } else {
    out.set(prefix, v === undefined ? '' : String(v));
  }
  return out;
}

function addForm(names) {
  const fid = id('add');
  const input = h('input', { id: fid, type: 'text', name: 'add', spellcheck: 'false', autocomplete: 'off', placeholder: 'run name, or a link to a run' });
  const form = h('form', { class: 'add-run' },
    h('div', { class: 'field' }, h('label', { for: fid }, 'Add a run'), input),
    h('button', { type: 'submit' }, 'Add'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    let v = input.value.trim();
    try {
      const u = new URL(v, location.href);
      if (u.searchParams.get('name')) v = u.searchParams.get('name');
      else if (u.pathname.includes('/benchmarkruns/')) v = decodeURIComponent(u.pathname.split('/benchmarkruns/')[1]);
    } catch { /* a plain name */ }
    if (!v) return;
    state.patch({ runs: [...names, v].join(',') });
  });
  return form;
}

export async function update(st) {
  if (ctl) ctl.abort();
  ctl = new AbortController();
  const signal = ctl.signal;
  const names = namesOf(st);
  document.title = 'Compare · kernelindex';
  const head = [h('h1', 'Compare runs'), h('p', { class: 'lede' }, 'Runs side by side; rows whose values differ are marked ≠ and shaded.')];
  if (names.length < 2) {
    put(root, ...head, notice('empty', names.length ? 'Add at least one more run to compare.' : 'No runs picked yet.',
      h('p', 'Tick runs in the ', h('a', { href: state.href({ view: 'catalog', pick: names.join(',') }) }, 'catalog'), ' and press Compare, open a run and follow “Compare these runs”, or add runs by name below.')),
    addForm(names));
    if (names.length) root.append(h('ul', names.map((n) => h('li', h('a', { href: state.href({ view: 'run', name: n }) }, n)))));
    return;
  }
  put(root, ...head, notice('loading', 'Loading runs…'));
  const got = await Promise.all(names.map((n) => api.get('benchmarkruns', n, signal).then((r) => r, (e) => e)));
  if (signal.aborted) return;
  const runs = [];
  const missing = [];
  got.forEach((r, i) => (r instanceof Error ? missing.push([names[i], r]) : runs.push(r)));
  if (missing.some(([, e]) => e.name === 'AbortError')) return;
  const objs = await Promise.all(runs.map((r) => Promise.all(REF_ROLES.map((role) => {
    const ref = reference(r, role);
    // Unresolved references name objects the server does not hold.
    return ref.digest && ref.resolved !== false ? api.object(ref.digest).then((o) => o, () => null) : Promise.resolve(null);
  }))));
  if (signal.aborted) return;

  const base = runs.find((r) => r.metadata.name === st.base) || runs[0];
  const bf = figures(base);
  const rows = [];
  const group = (t) => rows.push(h('tr', { class: 'group' }, h('th', { scope: 'colgroup', colspan: String(runs.length + 1) }, t)));
  const row = (label, values, opts = {}) => {
    const shown = values.map((v) => (v === undefined || v === null ? '' : v));
    const texts = shown.map((v) => (v instanceof Node ? v.textContent : String(v)));
    const differs = opts.differs !== undefined ? opts.differs : new Set(texts).size > 1;
    if (st.diff === '1' && !differs && !opts.keep) return;
    rows.push(h('tr', { class: differs ? 'differs' : undefined, dataset: { field: label } },
      h('th', { scope: 'row' }, label, differs ? h('span', { class: 'visually-hidden' }, ' (differs)') : null),
      shown.map((v) => h('td', v === '' ? '—' : v))));
  };

  group('Result');
  const figs = runs.map(figures);
  row('Metric', figs.map((f) => f.metric));
  row('Median', figs.map((f) => figure(f.metric, f.median)), { keep: true });
  row('p20', figs.map((f) => figure(f.metric, f.p20)));
  row('p80', figs.map((f) => figure(f.metric, f.p80)));
  row(`Ratio to ${title(base)}`, figs.map((f, i) => {
    if (runs[i] === base) return h('span', 'baseline');
    const r = f.median / bf.median;
    if (!Number.isFinite(r) || f.metric !== bf.metric) return '—';
    const better = r < 1;
    return h('span', { class: better ? 'faster' : r > 1 ? 'slower' : undefined, dataset: { ratio: r.toFixed(4) } },
      ratio(r), r === 1 ? '' : better ? ` (${ratio(1 / r)} ${f.metric === 'peak_memory' ? 'less' : 'faster'})` : ` (${f.metric === 'peak_memory' ? 'more' : 'slower'})`);
  }), { keep: true, differs: true });
  row('Observed', runs.map((r) => when(r.spec && r.spec.observedAt)));
  row('Status', runs.map((r) => r.spec && r.spec.status));

  group('Labels');
  const lkeys = [...new Set(runs.flatMap((r) => Object.keys(labels(r))))].sort();
  for (const k of lkeys) row(k, runs.map((r) => labels(r)[k]));

  REF_ROLES.forEach((role, ri) => {
    group(role[0].toUpperCase() + role.slice(1));
    row('digest', runs.map((r) => {
      const d = digestOf(r, role);
      return d ? h('a', { class: 'digest', href: state.href({ view: 'object', digest: d }) }, d) : '';
    }));
    const flats = objs.map((o) => flatten(o && o[ri] && o[ri].spec, '', new Map()));
    const keys = [...new Set(flats.flatMap((f) => [...f.keys()]))].sort();
    if (!keys.length) row('content', runs.map(() => 'not stored'));
    for (const k of keys) row(k, flats.map((f) => (f.has(k) ? f.get(k) : '')));
  });

  const cols = runs.map((r) => {
    const n = r.metadata.name;
    const rid = id('base');
    return h('th', { scope: 'col', dataset: { name: n } },
      h('a', { href: state.href({ view: 'run', name: n }), class: 'run-title' }, title(r)),
      h('span', { class: 'run-name' }, n),
      h('label', { class: 'check', for: rid },
        h('input', { id: rid, type: 'radio', name: 'base', checked: r === base, on: { change: () => state.patch({ base: n }) } }), 'baseline'),
      h('button', { type: 'button', class: 'link-button', 'aria-label': `Remove ${title(r)}`, on: { click: () => state.patch({ runs: names.filter((x) => x !== n).join(','), base: st.base === n ? '' : st.base }) } }, 'Remove'));
  });

  put(root, ...head,
    missing.map(([n, e]) => errorBox(e, `Run ${n} could not be loaded`)),
    h('div', { class: 'controls' },
      h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'diff', checked: st.diff === '1', on: { change: (e) => state.patch({ diff: e.target.checked ? '1' : '' }) } }), 'Only rows that differ'),
      csvButton(() => root.querySelector('table.cmp'), 'comparison')),
    h('div', { class: 'table-scroll', role: 'region', 'aria-label': 'Runs compared', tabindex: '0' },
      h('table', { class: 'cmp' },
        h('caption', { class: 'visually-hidden' }, 'The runs compared, one per column'),
        h('thead', h('tr', h('th', { scope: 'col' }, 'Field'), cols)),
        h('tbody', rows))),
    addForm(names));
}

export default { mount, update, unmount };
