// kernel.js — one kernel's results as Liger's visualizer draws them, and
// more: x = the swept parameter, y = the median with its p20–p80 band, a
// line per provider, a plot per GPU and workload family, live.

import { h, put, notice, id } from './dom.js';
import * as api from './api.js';
import * as state from './state.js';
import * as live from './live.js';
import { plot, styleFor, swatch } from './plot.js';
import { labels, figures, familyOf, title, selector, matches, reference, versionOf, versionCompare } from './model.js';
import { int, unitFor, figure, ratio, tick, peakLines } from './format.js';
import { csvButton } from './export.js';
import { errorBox } from './widgets.js';

const MAX_RUNS = 5000;
const METRICS = { latency: 'Latency', peak_memory: 'Peak memory' };

let root = null;
let els = null;
let ctl = null;
let unsub = null;
let data = null; // {key, runs: Map name → run, sel}
let redrawTimer = null;
let current = null;

const runHref = (name) => state.href({ view: 'run', name });

function radios(legend, name, options, value) {
  const fs = h('fieldset', { class: 'segmented' }, h('legend', legend));
  for (const [v, text] of options) {
    const input = h('input', { type: 'radio', name, value: v, checked: v === value, on: { change: () => state.patch({ [name]: v }) } });
    fs.append(h('label', input, h('span', text)));
  }
  return fs;
}

function check(name, text, on) {
  return h('label', { class: 'check' },
    h('input', { type: 'checkbox', name, checked: on, on: { change: (e) => state.patch({ [name]: e.target.checked ? '1' : '0' }) } }), text);
}

function select(labelText, name, options, value) {
  const fid = id(`k-${name}`);
  return h('div', { class: 'field' }, h('label', { for: fid }, labelText),
    h('select', { id: fid, name, on: { change: (e) => state.patch({ [name]: e.target.value }) } },
      options.map(([v, t]) => h('option', { value: v, selected: v === value }, t))));
}

export async function mount(el, st) {
  root = el;
  els = {
    title: h('h1', 'Kernel'),
    lede: h('p', { class: 'lede' }),
    controls: h('form', { class: 'controls', 'aria-label': 'What to plot', on: { submit: (e) => e.preventDefault() } }),
    status: h('div', { 'aria-live': 'polite' }),
    summary: h('section', { 'aria-labelledby': 'fastest-h' }),
    families: h('div', { class: 'families' }),
  };
  put(root, els.title, els.lede, els.controls, els.status, els.summary, els.families);
  unsub = live.subscribe(onEvent);
  data = null;
  return update(st);
}

export function unmount() {
  if (ctl) ctl.abort();
  if (unsub) unsub();
  clearTimeout(redrawTimer);
  redrawTimer = null;
  root = els = data = null;
}

function defaults(st, fac) {
  const passes = Object.keys((fac && fac.labels.pass) || {});
  const metrics = Object.keys((fac && fac.labels.metric) || {});
  const metric = st.metric || (metrics.includes('latency') || !metrics.length ? 'latency' : metrics[0]);
  const pass = st.pass || (passes.includes('full') ? 'full' : passes.includes('forward') ? 'forward' : passes[0] || '');
  return { metric, pass };
}

export async function update(st) {
  current = st;
  if (!st.kernel) return pickKernel();
  if (ctl) ctl.abort();
  ctl = new AbortController();
  const signal = ctl.signal;
  put(els.title, 'Kernel ', h('code', st.kernel));
  document.title = `${st.kernel} · kernelindex`;

  let fac;
  try {
    fac = await api.facets(`kernel=${st.kernel}`, signal);
  } catch (e) {
    if (e.name === 'AbortError') return;
    fac = null;
    if (e.status !== 404) {
      put(els.status, errorBox(e, 'Counts for this kernel could not be loaded'));
      return;
    }
  }
  if (fac && fac.total === 0) {
    put(els.lede, '');
    els.controls.replaceChildren();
    put(els.status, notice('empty', `No runs of kernel “${st.kernel}” are in the index.`,
      h('p', 'Check the spelling, or ', h('a', { href: state.href({ view: 'catalog' }) }, 'pick a kernel in the catalog'), '.')));
    els.summary.replaceChildren();
    els.families.replaceChildren();
    return;
  }
  const { metric, pass } = defaults(st, fac);
  const filters = { kernel: st.kernel, metric, pass, gpu: st.gpu || '', dtype: st.dtype || '', provider: st.provider || '', verdict: st.verdict || '', liger_version: st.version || '' };
  const sel = selector(filters, st.sel || '', ['verdict', 'liger_version']);
  renderControls(st, fac, metric, pass);
  if (fac) {
    const gpus = Object.keys(fac.labels.gpu || {});
    const prov = Object.keys(fac.labels.provider || {});
    put(els.lede, `${int(fac.total)} runs of this kernel: ${prov.length} provider${prov.length === 1 ? '' : 's'} on ${gpus.length} GPU${gpus.length === 1 ? '' : 's'}. `,
      h('a', { href: state.href({ view: 'catalog', kernel: st.kernel }) }, 'List them in the catalog'), '.');
  }

  if (!data || data.sel !== sel) {
    data = { sel, metric, pass, runs: new Map(), truncated: false, rv: null };
    put(els.status, notice('loading', 'Loading runs…'));
    let total = 0;
    try {
      for await (const page of api.pages('benchmarkruns', { labelSelector: sel }, MAX_RUNS, signal)) {
        // A server that ignores parts of the selector must not mix kernels.
        for (const r of page.items) if (matches(r, filters)) data.runs.set(r.metadata.name, r);
        total += page.items.length;
        data.rv = page.metadata.resourceVersion;
        data.truncated = Boolean(page.metadata.continue) && total >= MAX_RUNS;
        put(els.status, notice('loading', `Loaded ${int(total)} runs…`));
      }
    } catch (e) {
      if (e.name === 'AbortError') return;
      put(els.status, errorBox(e, 'Runs could not be loaded'));
      return;
    }
    if (signal.aborted) return;
  }
  await draw(st, metric, pass, signal);
  if (signal.aborted) return;
  performance.mark('ki-kernel-ready');
  if (data.rv) live.follow(sel, data.rv, () => { data = null; update(current); });
}

async function pickKernel() {
  put(els.title, 'Kernels');
  els.controls.replaceChildren();
  els.summary.replaceChildren();
  try {
    const fac = await api.facets();
    const ks = Object.entries(fac.labels.kernel || {}).sort((a, b) => a[0].localeCompare(b[0]));
    put(els.lede, 'Pick a kernel to plot its results.');
    put(els.families, h('ul', { class: 'chips' }, ks.map(([k, n]) => h('li', h('a', { class: 'chip', href: state.href({ view: 'kernel', kernel: k }) }, `${k} (${int(n)})`)))));
    els.status.replaceChildren();
  } catch (e) {
    put(els.status, errorBox(e, 'Kernels could not be listed'));
  }
}

function renderControls(st, fac, metric, pass) {
  const L = (k) => Object.keys((fac && fac.labels[k]) || {}).sort();
  const metrics = L('metric');
  const passes = L('pass');
  const gpus = L('gpu');
  const providers = L('provider');
  const dtypes = L('dtype');
  const verdicts = L('verdict');
  const versions = L('liger_version').sort(versionCompare);
  const selIn = h('input', { id: id('k-sel'), type: 'text', name: 'sel', spellcheck: 'false', autocomplete: 'off', value: st.sel || '', placeholder: 'liger_version in (0.2.1,9.9.0)' });
  selIn.addEventListener('change', () => state.patch({ sel: selIn.value.trim() }));
  if (!metrics.includes(metric)) metrics.push(metric);
  if (pass && !passes.includes(pass)) passes.push(pass);
  const logX = st.logx !== '0';
  const logY = st.logy === '1';
  put(els.controls,
    versions.length > 1 || st.version ? select('Version', 'version', [['', 'Every version, a line each'], ...versions.map((v) => [v, v])], st.version || '') : null,
    radios('Metric', 'metric', metrics.map((m) => [m, METRICS[m] || m]), metric),
    passes.length ? radios('Pass', 'pass', passes.map((p) => [p, p]), pass) : null,
    select('GPU', 'gpu', [['', 'All GPUs, side by side'], ...gpus.map((g) => [g, g])], st.gpu || ''),
    providers.length > 1 ? select('Provider', 'provider', [['', 'All providers'], ...providers.map((p) => [p, p])], st.provider || '') : null,
    dtypes.length > 1 ? select('Data type', 'dtype', [['', 'All'], ...dtypes.map((d) => [d, d])], st.dtype || '') : null,
    verdicts.length > 1 || st.verdict ? select('Plausibility', 'verdict', [['', 'All'], ...verdicts.map((d) => [d, d])], st.verdict || '') : null,
    h('fieldset', { class: 'segmented' }, h('legend', 'Axes'), check('logx', 'Log x', logX), check('logy', 'Log y', logY)),
    h('div', { class: 'field field-wide' }, h('label', { for: selIn.id }, 'Label selector'), selIn));
}

/* Groups runs: family → GPU → provider → x → newest run (older ones counted). */
async function group(runs, signal) {
  const digests = [...new Set([...runs.values()].filter((r) => reference(r, 'workload').resolved !== false)
    .map((r) => r.spec && r.spec.workloadDigest).filter(Boolean))];
  const workloads = new Map();
  await Promise.all(digests.map((d) => api.object(d).then((w) => workloads.set(d, w), () => workloads.set(d, null))));
  if (signal && signal.aborted) return null;
  const fams = new Map();
  const unplaced = [];
  // A series per provider and version where the runs span versions.
  const versioned = new Set([...runs.values()].map(versionOf).filter(Boolean)).size > 1;
  for (const r of runs.values()) {
    const w = workloads.get(r.spec && r.spec.workloadDigest);
    const f = w ? familyOf(w) : null;
    const l = labels(r);
    if (!f || !Number.isFinite(f.x)) {
      unplaced.push(r);
      continue;
    }
    if (!fams.has(f.key)) fams.set(f.key, { ...f, gpus: new Map(), count: 0 });
    const fam = fams.get(f.key);
    fam.count += 1;
    const gpu = l.gpu || 'unknown GPU';
    const prov = `${l.provider || 'unknown provider'}\u0000${versioned ? versionOf(r) : ''}`;
    if (!fam.gpus.has(gpu)) fam.gpus.set(gpu, new Map());
    const byProv = fam.gpus.get(gpu);
    if (!byProv.has(prov)) byProv.set(prov, new Map());
    const byX = byProv.get(prov);
    const prev = byX.get(f.x);
    const t = (r.spec && r.spec.observedAt) || '';
    if (!prev) byX.set(f.x, { run: r, others: 0 });
    else if (t > ((prev.run.spec && prev.run.spec.observedAt) || '')) byX.set(f.x, { run: r, others: prev.others + 1 });
    else prev.others += 1;
  }
  return { fams, unplaced };
}

function pointOf(entry, x, metric, unit, prov, gpu, sweep) {
  const r = entry.run;
  const f = figures(r);
  const p = r.status && r.status.plausibility;
  const v = versionOf(r);
  const lines = [`${prov} · ${gpu}`, v ? `version ${v}` : 'no version label', `${sweep} = ${tick(x)} (${int(x)})`, `median ${figure(metric, f.median)}`];
  if (Number.isFinite(f.p20)) lines.push(`p20–p80 ${figure(metric, f.p20)} – ${figure(metric, f.p80)}`);
  if (p && p.verdict) lines.push(`plausibility: ${p.verdict}`);
  lines.push(...peakLines(p, f.median, metric));
  if (entry.others) lines.push(`${entry.others} older run${entry.others === 1 ? '' : 's'} at this point`);
  lines.push(`run ${title(r)}`);
  return {
    x,
    y: f.median / unit.div,
    lo: f.p20 / unit.div,
    hi: f.p80 / unit.div,
    href: runHref(r.metadata.name),
    flagged: p && p.verdict === 'Implausible',
    lines,
    floor: p ? (metric === 'peak_memory' ? p.floorBytes : p.floorNs) : NaN,
  };
}

async function draw(st, metric, pass, signal) {
  const grouped = await group(data.runs, signal);
  if (!grouped || !els) return;
  const { fams, unplaced } = grouped;
  const logX = st.logx !== '0';
  const status = [];
  if (data.truncated) status.push(notice('warn', `Showing the first ${int(MAX_RUNS)} matching runs.`, 'Pick one GPU, provider or data type above to see the rest.'));
  if (unplaced.length) {
    const n = unplaced.length;
    status.push(notice('warn', `${int(n)} run${n === 1 ? ' is' : 's are'} not plotted: ${n === 1 ? 'its' : 'their'} workload is unresolved or names no swept parameter.`,
      h('p', n === 1 ? 'It is: ' : 'They include: ', unplaced.slice(0, 5).flatMap((r, i) => [i ? ', ' : '', h('a', { href: runHref(r.metadata.name) }, title(r))]), '.')));
  }
  if (!fams.size) {
    put(els.status, ...status, notice('empty', `No ${METRICS[metric] || metric} runs of this kernel${pass ? ` for the ${pass} pass` : ''} can be plotted.`,
      h('p', 'Pick another metric or pass above, or ', h('a', { href: state.href({ view: 'catalog', kernel: st.kernel }) }, 'list the runs'), '.')));
    els.summary.replaceChildren();
    els.families.replaceChildren();
    return;
  }
  put(els.status, ...status);

  // A series per provider and version: the provider's colour and marker on
  // every page; the newest version in its dash, older ones dotted.
  const DASH = [null, '1 3', '1 6', '3 6', '1 9'];
  const seriesStyle = (key) => {
    const [prov, v] = key.split('\u0000');
    const st0 = styleFor(prov);
    const vs = allVersions;
    const rank = vs.length > 1 ? vs.length - 1 - vs.indexOf(v) : 0;
    return rank > 0 ? { ...st0, dash: DASH[rank % DASH.length] } : st0;
  };
  const allVersions = [...new Set([...data.runs.values()].map(versionOf))].filter(Boolean).sort(versionCompare);
  const seriesName = (key) => {
    const [prov, v] = key.split('\u0000');
    return allVersions.length > 1 && v ? `${prov} ${v}` : prov;
  };
  const include = st.implausible === '1';
  const width = Math.min(640, (els.families.clientWidth || 640) - 20);

  let maxV = 0;
  for (const r of data.runs.values()) {
    const f = figures(r);
    if (Number.isFinite(f.p80)) maxV = Math.max(maxV, f.p80);
    if (Number.isFinite(f.median)) maxV = Math.max(maxV, f.median);
  }
  const unit = unitFor(metric, maxV);
  const yLabel = `${metric === 'peak_memory' ? 'peak memory' : 'median latency'} (${unit.name})`;

  const famList = [...fams.values()].sort((a, b) => b.count - a.count || a.key.localeCompare(b.key));
  const summaryRows = [];
  const sizes = new Set();
  const sections = famList.map((fam, fi) => {
    const gpus = [...fam.gpus.keys()].sort();
    const famTitle = `${fam.sweep} sweep · ${fam.fixed || 'no fixed parameters'} · ${fam.dtype} · ${fam.pass}`;
    const built = gpus.map((gpu) => {
      const byProv = fam.gpus.get(gpu);
      const series = [...byProv.keys()].sort().map((key) => ({
        name: seriesName(key),
        provider: key.split('\u0000')[0],
        style: seriesStyle(key),
        points: [...byProv.get(key)].map(([x, e]) => pointOf(e, x, metric, unit, seriesName(key), gpu, fam.sweep)),
      }));
      const floorByX = new Map();
      for (const sr of series) for (const p of sr.points) if (Number.isFinite(p.floor)) floorByX.set(p.x, p.floor / unit.div);
      for (const sr of series) for (const p of sr.points) sizes.add(p.x);
      summaryRows.push(summarize(fam, fi, gpu, series, include, st.size ? Number(st.size) : null));
      return { gpu, series, floor: [...floorByX].map(([x, y]) => ({ x, y })) };
    });
    // GPUs side by side share one y-axis; log y when it spans more than 10×.
    const ys = built.flatMap((b) => [...b.series.flatMap((sr) => sr.points.flatMap((p) => [p.y, p.lo, p.hi])), ...b.floor.map((f) => f.y)]).filter((v) => Number.isFinite(v));
    const yDomain = ys.length ? [Math.min(...ys), Math.max(...ys)] : null;
    const logY = st.logy === '1' || (st.logy !== '0' && yDomain && yDomain[0] > 0 && yDomain[1] / yDomain[0] > 10);
    const plots = built.map(({ gpu, series, floor }) => plot({
        title: gpu,
        name: `${st.kernel}-${fam.pass}-${fam.sweep}-${gpu}`,
        gpu,
        unit: unit.name,
        xLabel: fam.sweep,
        yLabel,
        logX,
        logY,
        yDomain,
        width,
        series,
        floor,
        floorTitle: metric === 'peak_memory' ? 'Physical floor: the least memory the workload’s tensors need' : 'Physical floor: the fastest time the GPU’s peak bandwidth and compute allow',
      }));
    return h('section', { 'aria-labelledby': `fam-${fi}`, dataset: { family: fam.key } },
      h('h2', { id: `fam-${fi}` }, famTitle),
      h('p', { class: 'hint' }, `${int(fam.count)} runs · ${gpus.length} GPU${gpus.length === 1 ? '' : 's'}`),
      h('div', { class: 'plots' }, plots));
  });
  renderSummary(summaryRows, metric, st, [...sizes].sort((a, b) => a - b));
  put(els.families, ...sections);
}

/* The provider with the lowest geometric-mean median over the sizes every
 * provider of the plot measured (or its median at one size), and how far
 * behind the others are. Implausible runs take no part unless asked for. */
function summarize(fam, fi, gpu, series, include, size) {
  const usable = series.map((sr) => ({ ...sr, points: sr.points.filter((p) => p.y > 0 && (include || !p.flagged) && (size === null || p.x === size)) }))
    .filter((sr) => sr.points.length);
  const left = series.reduce((n, sr) => n + sr.points.filter((p) => p.flagged).length, 0);
  if (!usable.length) return { fam, fi, gpu, scores: [], shared: 0, left: include ? 0 : left, size };
  const xsets = usable.map((sr) => new Set(sr.points.map((p) => p.x)));
  const shared = [...xsets[0]].filter((x) => xsets.every((xs) => xs.has(x)));
  const useX = shared.length ? shared : null;
  const scores = usable.map((sr) => {
    const ps = sr.points.filter((p) => (useX ? useX.includes(p.x) : true));
    const g = Math.exp(ps.reduce((a, p) => a + Math.log(p.y), 0) / (ps.length || 1));
    return { name: sr.name, provider: sr.provider, g, n: ps.length };
  }).filter((x) => x.n).sort((a, b) => a.g - b.g);
  return { fam, fi, gpu, scores, shared: useX ? useX.length : 0, left: include ? 0 : left, size };
}

function renderSummary(rows, metric, st, sizes) {
  const word = metric === 'peak_memory' ? 'Least memory' : 'Fastest';
  const head = h('h2', { id: 'fastest-h' }, `${word} on each GPU`);
  const body = rows.filter((r) => r.scores.length).map((r) => {
    const best = r.scores[0];
    const others = r.scores.slice(1).map((o) => `${o.name} ${ratio(o.g / best.g)}`).join(', ');
    return h('tr', { dataset: { gpu: r.gpu, best: best.name } },
      h('th', { scope: 'row' }, r.gpu),
      h('td', h('a', { href: `#fam-${r.fi}` }, `${r.fam.sweep} sweep · ${r.fam.fixed}`)),
      h('td', { class: 'best', dataset: { csv: best.name } }, swatch(best.provider), ' ', best.name),
      h('td', others || '—'),
      h('td', { class: 'num' }, r.size !== null ? `${r.fam.sweep} = ${tick(r.size)}` : r.shared ? int(r.shared) : '—'),
      h('td', { class: 'num' }, r.left ? int(r.left) : '—'));
  });
  const sizeId = id('k-size');
  const sizeSel = h('select', { id: sizeId, name: 'size', on: { change: (e) => state.patch({ size: e.target.value }) } },
    h('option', { value: '' }, 'geometric mean over the sizes all measured'),
    sizes.map((x) => h('option', { value: String(x), selected: String(x) === st.size }, `at ${tick(x)} only`)));
  const leftOut = rows.reduce((n, r) => n + r.left, 0);
  const table = h('table', { class: 'summary-table' },
    h('thead', h('tr', ['GPU', 'Workload family', word, 'Others', st.size ? 'Size' : 'Shared sizes', 'Implausible left out'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', body));
  put(els.summary, head,
    h('p', { class: 'hint' }, `Per plot: the provider with the lowest ${st.size ? 'median at the chosen size' : 'geometric mean of the median over the sizes all its providers measured'}; the others as multiples of it (${metric === 'peak_memory' ? 'more memory' : 'slower'} above 1×). `,
      st.implausible === '1' ? 'Implausible runs are counted.' : `Implausible runs are left out${leftOut ? ` (${int(leftOut)} here)` : ''}.`),
    h('div', { class: 'controls' },
      h('div', { class: 'field' }, h('label', { for: sizeId }, 'Size'), sizeSel),
      h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'implausible', checked: st.implausible === '1', on: { change: (e) => state.patch({ implausible: e.target.checked ? '1' : '' }) } }), 'Count implausible runs'),
      csvButton(() => table, `${st.kernel}-${word.toLowerCase().replace(' ', '-')}`)),
    h('div', { class: 'table-scroll', role: 'region', 'aria-label': `${word} provider per GPU`, tabindex: '0' }, table));
}

/* Live: runs of this kernel that arrive, change or go are drawn in place. */
function onEvent(ev) {
  if (!data || !ev.object || ev.object.kind !== 'BenchmarkRun' || !current) return;
  const st = current;
  const l = labels(ev.object);
  const { metric, pass } = data;
  if (l.kernel !== st.kernel || (l.metric && l.metric !== metric) || (pass && l.pass && l.pass !== pass)) return;
  if (st.gpu && l.gpu !== st.gpu) return;
  if (st.provider && l.provider !== st.provider) return;
  if (st.verdict && l.verdict !== st.verdict) return;
  if (st.version && versionOf(ev.object) !== st.version) return;
  if (st.sel) {
    // A free selector is the server's to evaluate: ask again.
    if (!redrawTimer) redrawTimer = setTimeout(() => { redrawTimer = null; if (els && current === st) { data = null; update(st); } }, 500);
    return;
  }
  const name = ev.object.metadata.name;
  if (ev.type === 'DELETED') data.runs.delete(name);
  else data.runs.set(name, ev.object);
  if (ev.type === 'ADDED') live.announce(`New run plotted: ${title(ev.object)}`);
  if (!redrawTimer) {
    redrawTimer = setTimeout(() => {
      redrawTimer = null;
      if (!els || current !== st || !data) return;
      draw(st, data.metric, data.pass);
    }, 300);
  }
}

export default { mount, update, unmount };
