// catalog.js — the first view: kernels × providers × GPUs with counts,
// filters, search by name, and a page of matching runs.

import { h, put, notice, id } from './dom.js';
import * as api from './api.js';
import * as state from './state.js';
import * as live from './live.js';
import { FACET_KEYS, selector, labels, title, loose } from './model.js';
import { int } from './format.js';
import { runsTable, runRow, errorBox, compareBar } from './widgets.js';
import { csvButton } from './export.js';

const PAGE = 50;
const SCAN_PAGE = 500;
const SCAN_MAX = 2000;
const NAMES = { kernel: 'Kernel', provider: 'Provider', gpu: 'GPU', pass: 'Pass', dtype: 'Data type', metric: 'Metric', verdict: 'Plausibility' };
// Filters shown only where the server counts them.
const OPTIONAL = ['verdict'];
const FILTERS = [...FACET_KEYS, ...OPTIONAL];
const DNS = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

let root = null;
let els = null;
let dataKey = null;
let ctl = null;
let unsub = null;
let arrived = [];
let refreshTimer = null;
let current = null;

function filtersOf(st) {
  const f = {};
  for (const k of FILTERS) f[k] = st[k] || '';
  return f;
}

const picked = (st) => new Set((st.pick || '').split(',').filter(Boolean));

function setPick(set) {
  state.patch({ pick: [...set].join(',') }, { replace: true });
}

function buildForm() {
  const selects = {};
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter runs' });
  const grid = h('div', { class: 'filter-grid' });
  for (const k of FILTERS) {
    const fid = id(`f-${k}`);
    const sel = h('select', { id: fid, name: k, on: { change: () => submit(form) } }, h('option', { value: '' }, 'any'));
    selects[k] = sel;
    grid.append(h('div', { class: 'field', hidden: OPTIONAL.includes(k) }, h('label', { for: fid }, NAMES[k]), sel));
  }
  const selId = id('f-sel');
  const qId = id('f-q');
  const selInput = h('input', { id: selId, name: 'sel', type: 'text', spellcheck: 'false', autocomplete: 'off', placeholder: 'provider in (liger,huggingface),gpu!=rtx-4090', 'aria-describedby': `${selId}-help` });
  const qInput = h('input', { id: qId, name: 'q', type: 'search', spellcheck: 'false', autocomplete: 'off', placeholder: 'run name or title' });
  grid.append(
    h('div', { class: 'field field-wide' }, h('label', { for: selId }, 'Label selector'), selInput,
      h('small', { id: `${selId}-help` }, 'Kubernetes syntax: key=value, key!=value, key in (a,b), key notin (a,b), key, !key; a comma means AND.')),
    h('div', { class: 'field field-wide' }, h('label', { for: qId }, 'Search by name'), qInput));
  form.append(grid, h('div', { class: 'filter-actions' },
    h('button', { type: 'submit' }, 'Apply'),
    h('a', { href: state.href({ view: 'catalog' }), class: 'link-button' }, 'Clear all filters')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    submit(form);
  });
  return { form, selects, selInput, qInput };
}

function submit(form) {
  const fd = new FormData(form);
  const st = { view: 'catalog' };
  for (const [k, v] of fd) if (String(v).trim()) st[k] = String(v).trim();
  const cur = state.read();
  if (cur.pick) st.pick = cur.pick;
  state.navigate(st);
}

/* {labels: {key: {value: count}}}: each key counted under the other filters. */
async function menuCounts(st, filters, facP, signal) {
  const fac = await facP;
  const out = { labels: {} };
  const jobs = FILTERS.map(async (k) => {
    let f = fac;
    if (filters[k]) {
      const sel = selector({ ...filters, [k]: '' }, st.sel, OPTIONAL);
      f = await api.facets(sel || undefined, signal).catch((e) => e);
    }
    out.labels[k] = f instanceof Error || !f || !f.labels ? {} : f.labels[k] || {};
  });
  await Promise.all(jobs);
  return out;
}

function fillSelects(all, st) {
  for (const k of FILTERS) {
    const sel = els.selects[k];
    const counts = (all && all.labels && all.labels[k]) || {};
    if (OPTIONAL.includes(k)) sel.parentElement.hidden = !Object.keys(counts).length && !st[k];
    const values = Object.keys(counts).sort();
    if (st[k] && !values.includes(st[k])) values.unshift(st[k]);
    sel.replaceChildren(h('option', { value: '' }, 'any'),
      ...values.map((v) => h('option', { value: v }, counts[v] !== undefined ? `${v} (${int(counts[v])})` : v)));
    sel.value = st[k] || '';
  }
}

export function mount(el, st) {
  root = el;
  const f = buildForm();
  els = {
    ...f,
    summary: h('p', { class: 'lede', 'aria-live': 'polite' }, 'Counting runs…'),
    matrix: h('section', { 'aria-labelledby': 'matrix-h' }),
    arrived: h('section', { class: 'arrived', 'aria-label': 'Runs that arrived while this page was open', hidden: true }),
    search: h('section', { hidden: true, 'aria-label': 'Search results' }),
    runs: h('section', { 'aria-labelledby': 'runs-h' }),
    compare: h('div'),
  };
  put(root,
    h('h1', 'Catalog'),
    els.summary,
    els.form,
    els.matrix,
    els.arrived,
    els.search,
    els.runs);
  dataKey = null;
  arrived = [];
  unsub = live.subscribe(onEvent);
  return update(st);
}

export function unmount() {
  if (ctl) ctl.abort();
  if (unsub) unsub();
  clearTimeout(refreshTimer);
  refreshTimer = null;
  root = els = null;
  dataKey = null;
}

export async function update(st) {
  current = st;
  const filters = filtersOf(st);
  const sel = selector(filters, st.sel, OPTIONAL);
  els.selInput.value = st.sel || '';
  els.qInput.value = st.q || '';
  for (const k of FILTERS) els.selects[k].value = st[k] || '';
  const key = JSON.stringify([sel, st.cont || '', st.q || '', st.page || '']);
  if (key === dataKey) {
    renderCompare(st);
    return;
  }
  if (dataKey !== null && JSON.parse(dataKey)[0] !== sel) arrived = [];
  dataKey = key;
  if (ctl) ctl.abort();
  ctl = new AbortController();
  const signal = ctl.signal;

  // One page of runs is the cheapest answer the API has: ask it first, so
  // that it never waits behind counting on a busy server.
  const runsP = api.list('benchmarkruns', { limit: PAGE, cont: st.cont, labelSelector: sel || undefined }, signal).catch((e) => e);
  const facP = runsP.then(() => api.facets(sel || undefined, signal)).catch((e) => e);
  // Each menu counts what the other filters leave (a set filter's own menu
  // is asked without it, so its other values stay offered); asked last, so
  // the matching counts and runs come first.
  const allP = Promise.all([facP, runsP]).then(() => menuCounts(st, filters, facP, signal));

  // Each part is drawn as its answer arrives: the runs do not wait for the
  // counts, nor the counts for the filter menus' totals.
  let facVal = null;
  allP.then((all) => { if (!signal.aborted) fillSelects(all instanceof Error ? null : all, st); });
  const facDone = facP.then((fac) => {
    if (signal.aborted) return fac;
    facVal = fac;
    renderSummary(fac, sel);
    renderMatrix(fac, filters, st);
    performance.mark('ki-catalog-counts');
    return fac;
  });
  const runsDone = runsP.then((page) => {
    if (signal.aborted) return page;
    renderRuns(page, st, facVal);
    performance.mark('ki-catalog-runs');
    return page;
  });
  const [fac, page] = await Promise.all([facDone, runsDone, allP]);
  if (signal.aborted) return;
  // The pager names the total once the counts are in.
  if (els.range && !(fac instanceof Error)) els.range.textContent = rangeText(page, st, fac.total);
  renderArrived();
  performance.mark('ki-catalog-ready');
  if (st.q) search(st, sel, signal);
  else els.search.hidden = true;

  const rvs = [fac, page].filter((x) => !(x instanceof Error)).map((x) => Number(x.metadata && x.metadata.resourceVersion)).filter(Number.isFinite);
  if (rvs.length) live.follow(sel, String(Math.min(...rvs)), () => { dataKey = null; update(current); });
}

function renderSummary(fac, sel) {
  if (fac instanceof Error) {
    put(els.summary, fac.status === 404
      ? 'Counts are not available: this server has no facets endpoint. Runs are still listed below, a page at a time.'
      : `Counts are not available: ${fac.message}`);
    return;
  }
  const n = fac.total;
  put(els.summary, `${int(n)} run${n === 1 ? '' : 's'}`, sel ? h('span', ' match ', h('code', sel)) : ' in the index', '.');
}

function cellHref(st, kernel, gpu) {
  const s = { view: 'kernel', kernel };
  if (gpu) s.gpu = gpu;
  for (const k of ['pass', 'metric', 'dtype', 'provider', 'verdict']) if (st[k]) s[k] = st[k];
  return state.href(s);
}

function renderMatrix(fac, filters, st) {
  const head = h('h2', { id: 'matrix-h' }, 'Kernels × GPUs');
  if (fac instanceof Error) {
    put(els.matrix, head, fac.status === 400 ? errorBox(fac, 'The label selector was refused') : errorBox(fac, 'Counts could not be loaded'));
    return;
  }
  const combos = fac.combinations || [];
  if (!combos.length) {
    put(els.matrix, head, notice('empty', 'No runs match these filters.',
      h('p', 'Loosen a filter, or ', h('a', { href: state.href({ view: 'catalog' }) }, 'clear them all'),
        '. To add results, POST them to ', h('code', `${api.BASE}/benchmarkruns`), ' (see the README).')));
    return;
  }
  const kernels = new Map();
  const gpuTotals = new Map();
  // Combinations may split further (by metric, say): add them up per
  // kernel, GPU and provider.
  for (const c of combos) {
    if (!kernels.has(c.kernel)) kernels.set(c.kernel, new Map());
    const byGpu = kernels.get(c.kernel);
    if (!byGpu.has(c.gpu)) byGpu.set(c.gpu, []);
    const list = byGpu.get(c.gpu);
    const same = list.find((x) => x.provider === c.provider);
    if (same) same.count += c.count;
    else list.push({ kernel: c.kernel, gpu: c.gpu, provider: c.provider, count: c.count });
    gpuTotals.set(c.gpu, (gpuTotals.get(c.gpu) || 0) + c.count);
  }
  const gpus = [...gpuTotals.keys()].sort((a, b) => gpuTotals.get(b) - gpuTotals.get(a) || String(a).localeCompare(String(b)));
  const rows = [...kernels.keys()].sort((a, b) => String(a).localeCompare(String(b))).map((k) => {
    const byGpu = kernels.get(k);
    let total = 0;
    for (const list of byGpu.values()) for (const c of list) total += c.count;
    return h('tr', { dataset: { kernel: k } },
      h('th', { scope: 'row' }, h('a', { href: cellHref(st, k) }, k), h('span', { class: 'count' }, int(total))),
      gpus.map((g) => {
        const list = (byGpu.get(g) || []).sort((a, b) => b.count - a.count);
        if (!list.length) return h('td', { class: 'empty-cell' }, h('span', { class: 'visually-hidden' }, 'none'));
        const n = list.reduce((s, c) => s + c.count, 0);
        return h('td', { dataset: { gpu: g, count: n } },
          h('a', { href: cellHref(st, k, g), class: 'cell-link', 'aria-label': `${k} on ${g}: ${n} runs` }, int(n)),
          h('ul', { class: 'providers' }, list.map((c) => h('li', { dataset: { provider: c.provider, count: c.count } },
            h('a', { href: cellHref({ ...st, provider: c.provider }, k, g) }, c.provider), ' ', h('span', { class: 'count' }, int(c.count))))));
      }));
  });
  put(els.matrix, head,
    h('p', { class: 'hint' }, 'A kernel opens its plots; a cell opens them for one GPU; a provider narrows to it. ',
      csvButton(() => els.matrix.querySelector('table.matrix'), 'kernels-by-gpu')),
    h('div', { class: 'table-scroll', role: 'region', 'aria-label': 'Kernels by GPU with run counts', tabindex: '0' },
      h('table', { class: 'matrix' },
        h('caption', { class: 'visually-hidden' }, 'Run counts by kernel (rows) and GPU (columns), split by provider'),
        h('thead', h('tr', h('th', { scope: 'col' }, 'Kernel'), gpus.map((g) => h('th', { scope: 'col', dataset: { gpu: g } }, g)))),
        h('tbody', rows))));
}

function renderRuns(page, st, fac) {
  const sel = selector(filtersOf(st), st.sel, OPTIONAL);
  const head = h('h2', { id: 'runs-h' }, 'Runs');
  els.range = null;
  if (page instanceof Error) {
    put(els.runs, head, page.status === 400 ? errorBox(page, 'The label selector was refused') : errorBox(page, 'Runs could not be listed'));
    return;
  }
  const items = page.items || [];
  const pageNo = Number(st.page || 1);
  const total = fac && !(fac instanceof Error) ? fac.total : null;
  els.compare = h('div');
  renderCompare(st);
  if (!items.length) {
    put(els.runs, head, notice('empty', st.cont ? 'No more runs on this page.' : 'No runs match these filters.',
      h('p', h('a', { href: state.href({ view: 'catalog' }) }, 'Clear the filters'), ' or change the label selector.')));
    return;
  }
  const next = page.metadata && page.metadata.continue;
  els.range = h('span', rangeText(page, st, total));
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages of runs' },
    st.cont ? h('a', { href: state.href({ ...st, cont: '', page: '' }) }, '« First page') : null,
    els.range,
    next ? h('a', { href: state.href({ ...st, cont: next, page: String(pageNo + 1) }), rel: 'next' }, 'Next page »') : null);
  put(els.runs, head, els.compare,
    runsTable(items, { pick: picked(st), onPick, caption: 'Runs matching the filters' }), pager,
    h('p', { class: 'toolbar' }, 'This page of runs: ', csvButton(() => els.runs.querySelector('table.runs'), 'runs'), ' ',
      h('a', { href: `${api.BASE}/benchmarkruns?format=csv${sel ? `&labelSelector=${encodeURIComponent(sel)}` : ''}`, download: 'runs.csv' }, 'every matching run as CSV from the API')));
}

function rangeText(page, st, total) {
  const n = (page.items || []).length;
  const first = (Number(st.page || 1) - 1) * PAGE + 1;
  return `Runs ${int(first)}–${int(first + n - 1)}${total !== null && total !== undefined ? ` of ${int(total)}` : ''}`;
}

function onPick(name, on) {
  const set = picked(state.read());
  if (on) set.add(name);
  else set.delete(name);
  setPick(set);
}

function renderCompare(st) {
  if (!els || !els.compare) return;
  put(els.compare, compareBar(picked(st), () => setPick(new Set())));
}

/* Search by name: an exact name is fetched; otherwise pages are scanned
 * (bounded) for names and titles holding the words, and facet values that
 * hold them are offered as filters. */
async function search(st, sel, signal) {
  const q = st.q.trim();
  const ql = loose(q);
  const out = h('div');
  const status = h('p', { class: 'hint', 'aria-live': 'polite' }, 'Searching…');
  const results = h('tbody');
  let matched = 0;
  let scanned = 0;
  put(els.search, h('h2', `Runs named like “${q}”`), status, out);
  els.search.hidden = false;

  api.facets(undefined, signal).then((all) => {
    const sugg = [];
    for (const k of FILTERS) for (const [v, n] of Object.entries(all.labels[k] || {})) if (loose(v).includes(ql)) sugg.push([k, v, n]);
    if (sugg.length) {
      out.prepend(h('p', { class: 'suggest' }, 'Filter by: ',
        sugg.slice(0, 12).map(([k, v, n]) => h('a', { class: 'chip', href: state.href({ view: 'catalog', [k]: v }) }, `${k}=${v} (${int(n)})`))));
    }
  }, () => {});

  const table = h('div', { class: 'table-scroll', role: 'region', 'aria-label': 'Search results', tabindex: '0' },
    h('table', { class: 'runs' }, h('thead', h('tr', ['Run', 'Kernel', 'Provider', 'GPU', 'Pass', 'Metric', 'Size', 'Version', 'Median', 'Observed'].map((t) => h('th', { scope: 'col' }, t)))), results));
  out.append(table);
  const seen = new Set();
  const add = (r) => {
    if (seen.has(r.metadata.name)) return;
    seen.add(r.metadata.name);
    matched += 1;
    results.append(runRow(r));
  };
  if (DNS.test(q)) {
    // An exact name, asked as a field selector so that no match is an empty
    // list rather than an error.
    try {
      const exact = await api.list('benchmarkruns', { limit: 1, fieldSelector: `metadata.name=${q}` }, signal);
      for (const r of exact.items) if (r.metadata.name === q) add(r);
    } catch (e) {
      if (e.name === 'AbortError') return;
    }
  }
  let cont;
  const more = h('button', { type: 'button', hidden: true, on: { click: () => scan() } }, 'Search further');
  out.append(more);
  async function scan() {
    more.hidden = true;
    const stopAt = scanned + SCAN_MAX;
    try {
      for await (const page of api.pages('benchmarkruns', { limit: SCAN_PAGE, cont, labelSelector: sel || undefined }, SCAN_MAX, signal)) {
        for (const r of page.items) {
          scanned += 1;
          const hay = loose(`${r.metadata.name} ${title(r)} ${labels(r).kernel || ''}`);
          if (hay.includes(ql)) add(r);
        }
        cont = page.metadata.continue;
        status.textContent = `Searched ${int(scanned)} runs, ${int(matched)} match…`;
        if (matched >= PAGE || scanned >= stopAt) break;
      }
    } catch (e) {
      if (e.name === 'AbortError') return;
      put(status, errorBox(e, 'The search stopped'));
      return;
    }
    status.textContent = `${int(matched)} match${matched === 1 ? '' : 'es'} in ${int(scanned)} runs searched${cont ? ' so far' : ' (all that match the filters)'}.`;
    more.hidden = !cont;
  }
  await scan();
}

/* Live: counts refresh, and runs that arrive are listed at the top. */
function onEvent(ev) {
  if (!els || !ev.object || ev.object.kind !== 'BenchmarkRun') return;
  const st = current;
  if (ev.type === 'ADDED' && !arrived.some((r) => r.metadata.name === ev.object.metadata.name)) {
    const l = labels(ev.object);
    const ok = FILTERS.every((k) => !st[k] || l[k] === st[k]);
    if (ok) {
      arrived.unshift(ev.object);
      arrived = arrived.slice(0, 20);
      live.announce(`New run: ${title(ev.object)}`);
    }
  }
  if (ev.type === 'DELETED') arrived = arrived.filter((r) => r.metadata.name !== ev.object.metadata.name);
  renderArrived();
  // At most one refresh of the counts per half second, however fast runs arrive.
  if (!refreshTimer) refreshTimer = setTimeout(() => { refreshTimer = null; refreshCounts(); }, 500);
}

function renderArrived() {
  if (!els) return;
  if (!arrived.length) {
    els.arrived.hidden = true;
    return;
  }
  els.arrived.hidden = false;
  put(els.arrived, h('h2', 'Just arrived'),
    runsTable(arrived, { fresh: true, caption: 'Runs that arrived while this page was open' }));
}

async function refreshCounts() {
  if (!els || !current) return;
  const st = current;
  const sel = selector(filtersOf(st), st.sel, OPTIONAL);
  try {
    const f = await api.facets(sel || undefined);
    const all = await menuCounts(st, filtersOf(st), Promise.resolve(f));
    if (!els || current !== st) return;
    fillSelects(all, st);
    renderSummary(f, sel);
    renderMatrix(f, filtersOf(st), st);
  } catch { /* counts stay as they were; the next event retries */ }
}

export default { mount, update, unmount };
