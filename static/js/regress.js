// regress.js — the regressions view: every series that moved beyond a
// threshold between two versions (or any two selectors), sortable by the
// size of the change. The server pairs the runs (GET …/comparisons).

import { h, put, notice, id } from './dom.js';
import * as api from './api.js';
import * as state from './state.js';
import { figure, ratio, int } from './format.js';
import { errorBox } from './widgets.js';
import { csvButton } from './export.js';
import { versionCompare } from './model.js';

let root = null;
let els = null;
let ctl = null;

const VERSION = 'liger_version';
const SORTS = {
  change: (a, b) => Math.abs(b.changePercent) - Math.abs(a.changePercent),
  worst: (a, b) => b.changePercent - a.changePercent,
  best: (a, b) => a.changePercent - b.changePercent,
  kernel: (a, b) => a.series.kernel.localeCompare(b.series.kernel) || Math.abs(b.changePercent) - Math.abs(a.changePercent),
};

function field(labelText, input, help) {
  return h('div', { class: 'field' }, h('label', { for: input.id }, labelText), input, help ? h('small', help) : null);
}

function versionSelect(name, versions, value) {
  const sel = h('select', { id: id(`r-${name}`), name },
    h('option', { value: '' }, 'pick a version…'),
    name === 'bv' && versions.length ? h('option', { value: `${VERSION}!=${versions[versions.length - 1]}`, selected: `${VERSION}!=${versions[versions.length - 1]}` === value }, `every version but ${versions[versions.length - 1]}`) : null,
    versions.map((v) => h('option', { value: `${VERSION}=${v}`, selected: `${VERSION}=${v}` === value }, v)));
  return sel;
}

export async function mount(el, st) {
  root = el;
  els = { form: h('form', { class: 'filters', 'aria-label': 'What to compare' }), status: h('div', { 'aria-live': 'polite' }), result: h('section', { 'aria-labelledby': 'regress-h' }) };
  put(root, h('h1', 'Regressions'),
    h('p', { class: 'lede' }, 'Every series (kernel, pass, data type, size, provider and GPU) whose median moved beyond the threshold between a baseline and a candidate: a version, or any label selector.'),
    els.form, els.status, els.result);
  return update(st);
}

export function unmount() {
  if (ctl) ctl.abort();
  root = els = null;
}

async function versions(signal) {
  try {
    const fac = await api.facets(undefined, signal);
    return Object.keys((fac.labels && fac.labels[VERSION]) || {}).sort(versionCompare);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    return [];
  }
}

function renderForm(st, vs) {
  const base = st.baseline || '';
  const cand = st.candidate || '';
  const bIn = h('input', { id: id('r-b'), name: 'baseline', type: 'text', spellcheck: 'false', autocomplete: 'off', value: base, placeholder: `${VERSION}=0.2.1` });
  const cIn = h('input', { id: id('r-c'), name: 'candidate', type: 'text', spellcheck: 'false', autocomplete: 'off', value: cand, placeholder: `${VERSION}=0.3.0` });
  const bSel = versionSelect('bv', vs, base);
  const cSel = versionSelect('cv', vs, cand);
  bSel.addEventListener('change', () => { if (bSel.value) bIn.value = bSel.value; });
  cSel.addEventListener('change', () => { if (cSel.value) cIn.value = cSel.value; });
  const lIn = h('input', { id: id('r-l'), name: 'sel', type: 'text', spellcheck: 'false', autocomplete: 'off', value: st.sel || '', placeholder: 'gpu=h100-sxm5-80gb,kernel=rope' });
  const tIn = h('input', { id: id('r-t'), name: 'threshold', type: 'number', min: '0', max: '1000', step: 'any', value: st.threshold || '5' });
  const imp = h('input', { type: 'checkbox', name: 'implausible', value: '1', checked: st.implausible === '1' });
  const grid = h('div', { class: 'filter-grid' },
    field('Baseline version', bSel), field('Candidate version', cSel),
    h('div', { class: 'field field-wide' }, h('label', { for: bIn.id }, 'Baseline selector'), bIn),
    h('div', { class: 'field field-wide' }, h('label', { for: cIn.id }, 'Candidate selector'), cIn),
    h('div', { class: 'field field-wide' }, h('label', { for: lIn.id }, 'Both sides: label selector'), lIn),
    field('Threshold (%)', tIn),
    h('label', { class: 'check' }, imp, 'Include implausible runs'));
  put(els.form, grid, h('div', { class: 'filter-actions' }, h('button', { type: 'submit' }, 'Compare')));
  els.form.onsubmit = (e) => {
    e.preventDefault();
    state.navigate({ view: 'regressions', baseline: bIn.value.trim(), candidate: cIn.value.trim(), sel: lIn.value.trim(), threshold: tIn.value !== '5' ? tIn.value : '', implausible: imp.checked ? '1' : '', sort: st.sort || '', show: st.show || '' });
  };
}

export async function update(st) {
  if (ctl) ctl.abort();
  ctl = new AbortController();
  const signal = ctl.signal;
  document.title = 'Regressions · kernelindex';
  let vs;
  try {
    vs = await versions(signal);
  } catch {
    return;
  }
  // With nothing asked yet: the newest version against every other one
  // (each series' runs of the other versions are its baseline).
  if (!st.baseline && !st.candidate && vs.length >= 2) {
    const newest = vs[vs.length - 1];
    state.navigate({ ...st, baseline: `${VERSION}!=${newest}`, candidate: `${VERSION}=${newest}` }, { replace: true });
    return;
  }
  renderForm(st, vs);
  if (!st.baseline || !st.candidate) {
    put(els.status, notice('empty', 'Pick a baseline and a candidate to compare.'));
    els.result.replaceChildren();
    return;
  }
  put(els.status, notice('loading', 'Comparing…'));
  const q = new URLSearchParams({ baseline: st.baseline, candidate: st.candidate });
  if (st.sel) q.set('labelSelector', st.sel);
  if (st.threshold) q.set('thresholdPercent', st.threshold);
  if (st.implausible === '1') q.set('includeImplausible', 'true');
  let cmp;
  try {
    const r = await fetch(`${api.BASE}/comparisons?${q}`, { signal, headers: { Accept: 'application/json' } });
    cmp = await r.json().catch(() => null);
    if (!r.ok) {
      const e = new Error((cmp && cmp.message) || `HTTP ${r.status}`);
      e.status = r.status;
      throw e;
    }
  } catch (e) {
    if (e.name === 'AbortError') return;
    put(els.status, errorBox(e, 'The comparison failed'));
    els.result.replaceChildren();
    return;
  }
  if (signal.aborted || !els) return;
  els.status.replaceChildren();
  render(st, cmp, q);
}

function render(st, cmp, q) {
  const sum = (cmp.status && cmp.status.summary) || {};
  const all = (cmp.status && cmp.status.pairs) || [];
  const show = st.show || 'changed';
  const sortKey = SORTS[st.sort] ? st.sort : 'change';
  const pairs = all.filter((p) => (show === 'all' ? true : show === 'regressions' ? p.verdict === 'Regression' : p.verdict !== 'Unchanged')).sort(SORTS[sortKey]);
  const head = h('h2', { id: 'regress-h' }, sum.regressed ? `${int(sum.regressions)} regression${sum.regressions === 1 ? '' : 's'} beyond ${sum.thresholdPercent}%` : `No regression beyond ${sum.thresholdPercent ?? 5}%`);
  const facts = h('p', { class: 'hint', dataset: { regressions: sum.regressions || 0, improvements: sum.improvements || 0 } },
    `${int(sum.pairs || 0)} series in both; ${int(sum.regressions || 0)} slower or larger, ${int(sum.improvements || 0)} better, ${int(sum.unchanged || 0)} unchanged; `,
    `${int(sum.baselineOnly || 0)} only in the baseline, ${int(sum.candidateOnly || 0)} only in the candidate`,
    sum.excludedImplausible ? `; ${int(sum.excludedImplausible)} implausible runs left out` : '',
    Number.isFinite(sum.geomeanRatio) ? `; geometric mean candidate ÷ baseline ${ratio(sum.geomeanRatio)}.` : '.');
  const link = (k, v, text) => (st[k] === v || (!st[k] && v === (k === 'sort' ? 'change' : 'changed'))
    ? h('strong', { 'aria-current': 'true' }, text)
    : h('a', { href: state.href({ ...st, [k]: v }) }, text));
  const bar = h('p', { class: 'toolbar' }, 'Show: ', link('show', 'changed', 'changed'), ' · ', link('show', 'regressions', 'regressions only'), ' · ', link('show', 'all', 'all'),
    ' — Sort by: ', link('sort', 'change', 'size of change'), ' · ', link('sort', 'worst', 'worst first'), ' · ', link('sort', 'best', 'best first'), ' · ', link('sort', 'kernel', 'kernel'));
  const runLink = (side) => (side && side.runs && side.runs.length ? h('a', { href: state.href({ view: 'run', name: side.runs[0] }) }, figure(side.metric, side.median)) : '—');
  const rows = pairs.map((p) => {
    const sr = p.series;
    const metric = sr.metric === 'peak_memory' ? 'peak_memory' : 'latency';
    const b = { ...p.baseline, metric };
    const c = { ...p.candidate, metric };
    const cls = p.verdict === 'Regression' ? 'worse' : p.verdict === 'Improvement' ? 'better' : '';
    return h('tr', { class: cls, dataset: { verdict: p.verdict, change: p.changePercent, kernel: sr.kernel, provider: sr.provider } },
      h('td', p.verdict),
      h('td', { class: 'num', dataset: { csv: String(p.changePercent) } }, `${p.changePercent > 0 ? '+' : ''}${p.changePercent.toFixed(1)}%`),
      h('td', h('a', { href: state.href({ view: 'kernel', kernel: sr.kernel, pass: sr.pass, metric: sr.metric, gpu: sr.gpu }) }, sr.kernel)),
      h('td', sr.pass), h('td', sr.dtype), h('td', sr.provider), h('td', sr.gpu), h('td', sr.metric),
      h('td', sr.xName ? `${sr.xName} = ${sr.xValue}` : sr.workload),
      h('td', { class: 'num' }, b.version || '', ' ', runLink(b)),
      h('td', { class: 'num' }, c.version || '', ' ', runLink(c)),
      h('td', { class: 'num' }, ratio(p.ratio), p.confident ? '' : ' (interval spans 1)'));
  });
  const table = h('table', { class: 'runs regressions' },
    h('caption', { class: 'visually-hidden' }, 'Series that changed between the baseline and the candidate'),
    h('thead', h('tr', ['Verdict', 'Change', 'Kernel', 'Pass', 'Data type', 'Provider', 'GPU', 'Metric', 'Size', 'Baseline', 'Candidate', 'Ratio'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', rows));
  put(els.result, head, facts, bar,
    h('p', { class: 'toolbar' }, csvButton(() => table, 'regressions'), ' ',
      h('a', { href: `${api.BASE}/comparisons?${q}&format=csv`, download: 'comparison.csv' }, 'Every pair as CSV from the API')),
    pairs.length
      ? h('div', { class: 'table-scroll', role: 'region', 'aria-label': 'Changed series', tabindex: '0' }, table)
      : notice('empty', show === 'all' ? 'No series is in both selections.' : 'Nothing moved beyond the threshold.', h('p', h('a', { href: state.href({ ...st, show: 'all' }) }, 'Show every pair'), '.')));
}

export default { mount, update, unmount };
