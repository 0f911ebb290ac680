// leaderboard.js — per GPU, for each kernel × pass × size, the fastest
// provider, its margin over the runner-up and its fraction of the physical
// floor (GET …/leaderboard), sortable and filterable, linked to the runs.

import { h, put, notice, id } from './dom.js';
import * as api from './api.js';
import * as state from './state.js';
import { figure, int, pct } from './format.js';
import { errorBox } from './widgets.js';
import { csvButton } from './export.js';
import { loose } from './model.js';
import { swatch } from './plot.js';

let root = null;
let els = null;
let ctl = null;
let cache = null; // {key, board}

const COLS = [
  ['kernel', 'Kernel', (a, b) => a.series.kernel.localeCompare(b.series.kernel) || a.series.pass.localeCompare(b.series.pass) || Number(a.series.xValue) - Number(b.series.xValue)],
  ['pass', 'Pass', (a, b) => a.series.pass.localeCompare(b.series.pass)],
  ['dtype', 'Data type', (a, b) => a.series.dtype.localeCompare(b.series.dtype)],
  ['metric', 'Metric', (a, b) => a.series.metric.localeCompare(b.series.metric)],
  ['size', 'Size', (a, b) => Number(a.series.xValue) - Number(b.series.xValue)],
  ['winner', 'Fastest', (a, b) => a.winner.provider.localeCompare(b.winner.provider)],
  ['median', 'Its median', (a, b) => a.winner.median - b.winner.median],
  ['margin', 'Margin over the next', (a, b) => (b.marginPercent ?? -1) - (a.marginPercent ?? -1)],
  ['floor', 'Share of peak', (a, b) => (b.winner.fractionOfFloor ?? -1) - (a.winner.fractionOfFloor ?? -1)],
  ['providers', 'Providers', (a, b) => b.entries.length - a.entries.length],
];

function select(labelText, name, options, value, onChange) {
  const fid = id(`lb-${name}`);
  return h('div', { class: 'field' }, h('label', { for: fid }, labelText),
    h('select', { id: fid, name, on: { change: (e) => onChange(e.target.value) } },
      options.map(([v, t]) => h('option', { value: v, selected: v === value }, t))));
}

export async function mount(el, st) {
  root = el;
  els = { form: h('form', { class: 'filters', 'aria-label': 'Leaderboard filters', on: { submit: (e) => e.preventDefault() } }), status: h('div', { 'aria-live': 'polite' }), result: h('section', { 'aria-labelledby': 'lb-h' }) };
  put(root, h('h1', 'Leaderboard'),
    h('p', { class: 'lede' }, 'On one GPU, for each kernel, pass and size: the fastest provider’s newest run, how far ahead of the next it is, and how close it comes to the physical floor.'),
    els.form, els.status, els.result);
  cache = null;
  return update(st);
}

export function unmount() {
  if (ctl) ctl.abort();
  root = els = cache = null;
}

export async function update(st) {
  if (ctl) ctl.abort();
  ctl = new AbortController();
  const signal = ctl.signal;
  document.title = 'Leaderboard · kernelindex';
  let fac;
  try {
    fac = await api.facets(undefined, signal);
  } catch (e) {
    if (e.name === 'AbortError') return;
    put(els.status, errorBox(e, 'The GPUs could not be listed'));
    return;
  }
  const gpuCounts = (fac.labels && fac.labels.gpu) || {};
  const gpus = Object.keys(gpuCounts).sort((a, b) => gpuCounts[b] - gpuCounts[a] || a.localeCompare(b));
  if (!gpus.length) {
    put(els.status, notice('empty', 'No runs are in the index yet.'));
    return;
  }
  if (!st.gpu) {
    state.navigate({ ...st, gpu: gpus[0] }, { replace: true });
    return;
  }
  const q = new URLSearchParams({ gpu: st.gpu });
  if (st.implausible === '1') q.set('includeImplausible', 'true');
  const key = q.toString();
  if (!cache || cache.key !== key) {
    put(els.status, notice('loading', `Ranking the providers on ${st.gpu}…`));
    try {
      const r = await fetch(`${api.BASE}/leaderboard?${q}`, { signal, headers: { Accept: 'application/json' } });
      const body = await r.json().catch(() => null);
      if (!r.ok) {
        const e = new Error((body && body.message) || `HTTP ${r.status}`);
        e.status = r.status;
        throw e;
      }
      cache = { key, board: body };
    } catch (e) {
      if (e.name === 'AbortError') return;
      put(els.status, errorBox(e, 'The leaderboard could not be loaded'));
      return;
    }
  }
  if (signal.aborted || !els) return;
  els.status.replaceChildren();
  render(st, gpus, cache.board, q);
}

function render(st, gpus, board, q) {
  const items = board.items || [];
  const kinds = (k) => [...new Set(items.map((i) => i.series[k]))].sort();
  const set = (k) => (v) => state.patch({ [k]: v });
  const textIn = h('input', { id: id('lb-q'), type: 'search', name: 'q', value: st.q || '', spellcheck: 'false', autocomplete: 'off', placeholder: 'kernel or provider' });
  textIn.addEventListener('change', () => state.patch({ q: textIn.value.trim() }, { replace: true }));
  put(els.form, h('div', { class: 'filter-grid' },
    select('GPU', 'gpu', gpus.map((g) => [g, g]), st.gpu, set('gpu')),
    select('Kernel', 'kernel', [['', 'any'], ...kinds('kernel').map((k) => [k, k])], st.kernel || '', set('kernel')),
    select('Pass', 'pass', [['', 'any'], ...kinds('pass').map((k) => [k, k])], st.pass || '', set('pass')),
    select('Metric', 'metric', [['', 'any'], ...kinds('metric').map((k) => [k, k])], st.metric || '', set('metric')),
    select('Fastest provider', 'winner', [['', 'any'], ...[...new Set(items.map((i) => i.winner.provider))].sort().map((k) => [k, k])], st.winner || '', set('winner')),
    h('div', { class: 'field' }, h('label', { for: textIn.id }, 'Search'), textIn),
    h('label', { class: 'check' }, h('input', { type: 'checkbox', checked: st.implausible === '1', on: { change: (e) => state.patch({ implausible: e.target.checked ? '1' : '' }) } }), 'Include implausible runs')));
  const ql = loose(st.q || '');
  const rows = items.filter((i) => (!st.kernel || i.series.kernel === st.kernel) && (!st.pass || i.series.pass === st.pass) &&
    (!st.metric || i.series.metric === st.metric) && (!st.winner || i.winner.provider === st.winner) &&
    (!ql || loose(`${i.series.kernel} ${i.entries.map((e) => e.provider).join(' ')}`).includes(ql)));
  const col = COLS.find((c) => c[0] === st.sort) || COLS[0];
  rows.sort(col[2]);
  if (st.dir === 'desc') rows.reverse();
  const th = ([k, t]) => {
    const on = col[0] === k;
    const dir = on && st.dir !== 'desc' ? 'desc' : '';
    return h('th', { scope: 'col', 'aria-sort': on ? (st.dir === 'desc' ? 'descending' : 'ascending') : undefined },
      h('a', { href: state.href({ ...st, sort: k, dir }), dataset: { sort: k } }, t, on ? (st.dir === 'desc' ? ' ▲' : ' ▼') : ''));
  };
  const runLink = (e) => h('a', { href: state.href({ view: 'run', name: e.run }) }, e.provider);
  const tr = (i) => {
    const sr = i.series;
    const metric = sr.metric === 'peak_memory' ? 'peak_memory' : 'latency';
    return h('tr', { dataset: { kernel: sr.kernel, winner: i.winner.provider, margin: i.marginPercent ?? '' } },
      h('td', h('a', { href: state.href({ view: 'kernel', kernel: sr.kernel, pass: sr.pass, metric: sr.metric, gpu: sr.gpu }) }, sr.kernel)),
      h('td', sr.pass), h('td', sr.dtype), h('td', sr.metric),
      h('td', { dataset: { csv: sr.xName ? `${sr.xName}=${sr.xValue}` : sr.workload } }, sr.xName ? `${sr.xName} = ${sr.xValue}` : sr.workload),
      h('td', { class: 'winner', dataset: { csv: i.winner.provider } }, swatch(i.winner.provider), ' ', runLink(i.winner), i.winner.version ? h('span', { class: 'hint' }, ` ${i.winner.version}`) : null),
      h('td', { class: 'num' }, figure(metric, i.winner.median)),
      h('td', { class: 'num', dataset: { csv: i.marginPercent ?? '' } }, i.marginPercent === null || i.marginPercent === undefined ? 'alone' : `${i.marginPercent.toFixed(1)}% ahead of ${i.runnerUp}`),
      h('td', { class: 'num', dataset: { csv: i.winner.fractionOfFloor ?? '' } }, Number.isFinite(i.winner.fractionOfFloor) ? pct(i.winner.fractionOfFloor) : '—'),
      h('td', i.entries.slice(1).flatMap((e, n) => [n ? ', ' : '', runLink(e)])));
  };
  const table = h('table', { class: 'runs leaderboard' },
    h('caption', { class: 'visually-hidden' }, `Fastest provider per kernel, pass and size on ${st.gpu}`),
    h('thead', h('tr', COLS.map(th))), h('tbody', rows.map(tr)));
  put(els.result, h('h2', { id: 'lb-h' }, `${st.gpu}: ${int(rows.length)} of ${int(items.length)} kernel × pass × size`),
    h('p', { class: 'hint' }, 'Share of peak: the physical floor (the least time the GPU’s peak bandwidth and compute allow) divided by the median; 100% would be the floor itself.',
      board.excludedImplausible ? ` ${int(board.excludedImplausible)} implausible runs left out.` : ''),
    h('p', { class: 'toolbar' }, csvButton(() => table, `leaderboard-${st.gpu}`), ' ',
      h('a', { href: `${api.BASE}/leaderboard?${q}&format=csv`, download: `leaderboard-${st.gpu}.csv` }, 'Every provider as CSV from the API')),
    rows.length ? h('div', { class: 'table-scroll', role: 'region', 'aria-label': 'Leaderboard', tabindex: '0' }, table)
      : notice('empty', 'Nothing matches these filters.'));
}

export default { mount, update, unmount };
