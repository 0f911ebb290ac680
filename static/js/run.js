// run.js — one run: its figures, its four references by digest (each a
// link, each resolved or not), its verdicts, the raw JSON, and the curl and
// kubectl lines that fetch it.

import { h, put, notice } from './dom.js';
import * as api from './api.js';
import * as state from './state.js';
import * as live from './live.js';
import { labels, figures, reference, condition, title, REF_ROLES, FACET_KEYS } from './model.js';
import { figure, when, num, int, pct, ratio, peakLines } from './format.js';
import { chips, errorBox, runsTable } from './widgets.js';

let root = null;
let ctl = null;
let unsub = null;
let shownName = null;
let current = null;

export function mount(el, st) {
  root = el;
  unsub = live.subscribe(onEvent);
  return update(st);
}

export function unmount() {
  if (ctl) ctl.abort();
  if (unsub) unsub();
  root = null;
  shownName = null;
}

export async function update(st) {
  current = st;
  if (ctl) ctl.abort();
  ctl = new AbortController();
  const signal = ctl.signal;
  if (!st.name) {
    put(root, h('h1', 'Run'), notice('empty', 'No run named in the link.', h('p', h('a', { href: state.href({ view: 'catalog' }) }, 'Find one in the catalog'), '.')));
    return;
  }
  if (shownName !== st.name) put(root, h('h1', 'Run'), notice('loading', 'Loading the run…'));
  let run;
  try {
    run = await api.get('benchmarkruns', st.name, signal);
  } catch (e) {
    if (e.name === 'AbortError') return;
    put(root, h('h1', 'Run'), h('p', { class: 'run-name' }, st.name),
      e.status === 404 ? notice('error', 'No run has this name.', h('p', 'It may have been deleted, or the link is mistyped. ', h('a', { href: state.href({ view: 'catalog', q: st.name }) }, 'Search the catalog for it'), '.')) : errorBox(e, 'The run could not be loaded'));
    return;
  }
  render(run, signal);
  const l = labels(run);
  const sel = FACET_KEYS.filter((k) => l[k]).map((k) => `${k}=${l[k]}`).join(',');
  live.follow(sel, run.metadata.resourceVersion, () => update(current));
}

function badge(kind, text) {
  return h('span', { class: ['badge', `badge-${kind}`] }, text);
}

const GOOD = ['Plausible', 'Verified', 'Consistent', 'Passed', 'True'];
const BAD = ['Implausible', 'FasterThanReference', 'ReferenceIncorrect', 'Failed', 'False', 'Mismatch'];
const WARN = ['Unverifiable', 'SlowerThanReference', 'DifferentGPU', 'NotComparable', 'UnresolvedReferences', 'Pending'];

function verdictBadge(v) {
  if (GOOD.includes(v)) return badge('ok', v);
  if (BAD.includes(v)) return badge('bad', v);
  if (WARN.includes(v)) return badge('warn', v);
  return badge('unknown', v || 'Unknown');
}

/* The kernel families and passes the reference program measures: the
 * table in physics/refcover.c, which a test keeps this equal to. A loss's
 * backward (its gradient is made in the forward pass) is not measured,
 * except GRPO's (the stored gradients handed over, as its script times). */
const REFERENCE_COVERAGE = {
  embedding: ['forward', 'backward', 'full'],
  rms_norm: ['forward', 'backward', 'full'],
  megatron_rms_norm: ['forward', 'backward', 'full'],
  fused_add_rms_norm: ['forward', 'backward', 'full'],
  layer_norm: ['forward', 'backward', 'full'],
  group_norm: ['forward', 'backward', 'full'],
  softmax: ['forward', 'backward', 'full'],
  sparsemax: ['forward', 'backward', 'full'],
  relu_squared: ['forward', 'backward', 'full'],
  megatron_swiglu: ['forward', 'backward', 'full'],
  megatron_cross_entropy: ['forward', 'backward', 'full'],
  cross_entropy: ['forward', 'full'],
  kl_div: ['forward', 'full'],
  jsd: ['forward', 'backward', 'full'],
  tvd: ['forward', 'backward', 'full'],
  rope: ['forward', 'backward', 'full'],
  llama4_rope: ['forward', 'backward', 'full'],
  swiglu: ['forward', 'backward', 'full'],
  geglu: ['forward', 'backward', 'full'],
  tiled_swiglu: ['forward', 'backward', 'full'],
  tiled_geglu: ['forward', 'backward', 'full'],
  fused_linear_cross_entropy: ['forward', 'full'],
  fused_linear_jsd: ['forward', 'full'],
  fused_linear_orpo_loss: ['forward', 'full'],
  fused_linear_cpo_loss: ['forward', 'full'],
  fused_linear_simpo_loss: ['forward', 'full'],
  kto_loss: ['forward', 'full'],
  fused_linear_grpo_loss_token: ['forward', 'backward', 'full'],
  fused_linear_grpo_loss_sequence: ['forward', 'backward', 'full'],
  distill_jsd_loss: ['forward', 'full'],
  distill_cosine_loss: ['forward', 'full'],
  multi_token_attention: ['forward', 'backward', 'full'],
  sparse_multi_token_attention: ['forward', 'backward', 'full'],
  fused_neighborhood_attention: ['forward', 'backward', 'full'],
  fused_moe: ['forward', 'backward', 'full'],
};

/* Whether a reference measurement of the run can be asked for. */
function hasReference(run) {
  const l = labels(run);
  return (REFERENCE_COVERAGE[l.kernel] || []).includes(l.pass) && (l.metric || 'latency') === 'latency';
}

/* A button that asks the server for a reference measurement of the run
 * (creates a Verification); the run's status shows the outcome live. A
 * run no reference covers gets a line saying so instead. */
function requestVerification(run) {
  if (!hasReference(run)) {
    const l = labels(run);
    return h('p', { class: 'hint', dataset: { reference: 'none' } },
      `No reference implementation measures ${l.kernel || 'this kernel'}${l.pass ? ` (${l.pass})` : ''}${l.metric && l.metric !== 'latency' ? ` ${l.metric}` : ''}: a reference measurement cannot be requested for this run.`);
  }
  const out = h('p', { class: 'hint', 'aria-live': 'polite' });
  const btn = h('button', { type: 'button', class: 'secondary' }, 'Request a reference measurement');
  btn.addEventListener('click', async () => {
    btn.disabled = true;
    const base = run.metadata.name.slice(0, 200).replace(/[.-]+$/, '');
    const body = { apiVersion: api.GROUP_VERSION, kind: 'Verification', metadata: { name: `${base}-v${Date.now().toString(36)}` }, spec: { runName: run.metadata.name } };
    try {
      const r = await fetch(`${api.BASE}/verifications`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
      const j = await r.json().catch(() => ({}));
      if (!r.ok) throw new Error(j.message || `HTTP ${r.status}`);
      put(out, 'Requested as ', h('a', { href: api.itemURL('verifications', body.metadata.name) }, body.metadata.name), '; the verdict appears here when it is measured.');
    } catch (e) {
      put(out, `The request was refused: ${e.message}`);
      btn.disabled = false;
    }
  });
  return h('div', btn, out);
}

function dl(pairs) {
  return h('dl', { class: 'facts' }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== '').flatMap(([k, v]) => [h('dt', k), h('dd', v)]));
}

function scalar(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/* The fields of an object's spec that say most about it, by kind. */
function specSummary(role, obj) {
  const sp = obj.spec || {};
  if (role === 'workload') {
    return dl([['Kernel', sp.kernel], ['Pass', sp.pass], ['Data type', sp.dtype], ['Swept', sp.sweep],
      ['Parameters', Object.entries(sp.parameters || {}).map(([k, v]) => `${k}=${v}`).join(', ')]]);
  }
  if (role === 'environment') {
    const hw = sp.hardware || {};
    return dl([['GPU', [hw.vendor, hw.product, hw.formFactor].filter(Boolean).join(' · ')], ['Architecture', hw.architecture],
      ['Software', Object.entries(sp.software || {}).map(([k, v]) => `${k} ${scalar(v)}`).join(', ') || 'not recorded']]);
  }
  if (role === 'implementation') {
    return dl([['Provider', sp.provider], ['Framework', sp.framework], ['Version', sp.version]]);
  }
  const m = sp.measurement || {};
  return dl([['Harness', sp.harness && sp.harness.name], ['Timer', m.timer || m.method], ['Statistic', m.primaryStatistic],
    ['Notes', sp.comparability && sp.comparability.notes]]);
}

function refCard(run, role, dv) {
  const ref = reference(run, role);
  const verified = dv && dv.status === 'True';
  const state_ = ref.resolved === true ? (verified ? badge('ok', 'resolved · digest verified') : badge('ok', 'resolved'))
    : ref.resolved === false ? badge('warn', 'unresolved') : badge('unknown', 'not checked');
  const body = h('div', ref.resolved === false ? h('p', { class: 'hint' }, 'No object with this digest is stored yet; it resolves when one is uploaded.') : h('p', { class: 'hint' }, 'Loading…'));
  const card = h('section', { class: 'card', dataset: { role, resolved: String(ref.resolved) } },
    h('h3', role[0].toUpperCase() + role.slice(1), ' ', state_),
    ref.digest ? h('p', h('a', { class: 'digest', href: state.href({ view: 'object', digest: ref.digest }), dataset: { ref: role } }, ref.digest)) : h('p', 'No digest given.'),
    ref.name ? h('p', 'Name: ', h('code', ref.name)) : null,
    body);
  if (ref.digest && ref.resolved !== false) {
    api.object(ref.digest).then((o) => put(body, specSummary(role, o)), (e) => put(body, h('p', { class: 'hint' }, e.status === 404 ? 'Not stored (yet).' : `Could not load: ${e.message}`)));
  }
  return card;
}

function commands(run) {
  const origin = location.origin;
  const name = run.metadata.name;
  const lines = [
    ['curl', `curl -s ${origin}${api.itemURL('benchmarkruns', name)}`],
    ['kubectl', `kubectl --server=${origin} get benchmarkruns.kernelindex.dev ${name} -o yaml`],
  ];
  if (run.status && run.status.digest) lines.push(['curl, by digest (immutable)', `curl -s ${origin}${api.objectURL(run.status.digest)}`]);
  return h('div', lines.map(([what, cmd]) => {
    const pre = h('pre', h('code', cmd));
    const btn = h('button', { type: 'button', class: 'secondary', 'aria-label': `Copy the ${what} command` }, 'Copy');
    btn.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(cmd);
        btn.textContent = 'Copied';
      } catch {
        btn.textContent = 'Select and copy';
      }
      setTimeout(() => { btn.textContent = 'Copy'; }, 2000);
    });
    return h('div', { class: 'cmd', dataset: { cmd: what } }, h('span', { class: 'visually-hidden' }, what), pre, btn);
  }));
}

/* Every figure of status.plausibility, each in its own unit. */
function plausibilityFacts(pl) {
  const known = {
    floorNs: ['Physical floor (time)', (v) => figure('latency', v)],
    floorBytes: ['Physical floor (memory)', (v) => figure('peak_memory', v)],
    achievedFraction: ['Floor ÷ median (share of peak)', (v) => (v <= 1.0001 ? pct(v) : `${ratio(v)} beyond the floor: impossible`)],
    bytes: ['Bytes moved', (v) => figure('peak_memory', v)],
    flops: ['Operations', (v) => `${num(v)} FLOP`],
    gpu: ['GPU model', String],
    model: ['Cost model', scalar],
    derivedWorkload: ['Derived workload', (v) => (v ? 'yes, from the source row' : 'no')],
  };
  const order = Object.keys(known);
  const rank = (k) => (order.includes(k) ? order.indexOf(k) : order.length);
  return Object.entries(pl).filter(([k]) => k !== 'verdict').sort((a, b) => rank(a[0]) - rank(b[0])).map(([k, v]) => {
    const [label, fmt] = known[k] || [k, scalar];
    return [label, typeof v === 'number' && !Number.isFinite(v) ? '—' : fmt(v)];
  });
}

function verdicts(run) {
  const st = run.status || {};
  const dv = condition(run, 'DigestsVerified');
  const pl = st.plausibility;
  const plc = condition(run, 'Plausible');
  const ver = st.verification;
  const verc = condition(run, 'Verified');
  const rows = [];
  rows.push(h('div', { class: 'card', dataset: { verdict: 'digests' } }, h('h3', 'Digests ', dv ? verdictBadge(dv.status === 'True' ? 'Verified' : dv.reason || 'Unverified') : badge('unknown', 'not checked')),
    dv ? h('p', dv.message || '') : h('p', { class: 'hint' }, 'The server has not reported on this run’s references.')));
  rows.push(h('div', { class: 'card', dataset: { verdict: 'plausibility' } }, h('h3', 'Plausibility ', verdictBadge(pl ? pl.verdict : plc ? plc.reason : undefined)),
    pl ? h('div', h('p', { class: 'peak' }, peakLines(pl, figures(run).median, figures(run).metric).join('; ') || (plc && plc.message) || ''), dl(plausibilityFacts(pl)))
      : h('p', { class: 'hint' }, plc ? plc.message : 'No plausibility check has been reported for this run yet.')));
  rows.push(h('div', { class: 'card', dataset: { verdict: 'verification' } }, h('h3', 'Verification ', verdictBadge(ver ? ver.verdict : verc ? verc.reason : 'Not verified')),
    ver ? h('div', ver.message ? h('p', ver.message) : null, dl([
      ['Reason', ver.reason],
      ['Reference median (same GPU)', Number.isFinite(ver.referenceNs) ? figure('latency', ver.referenceNs) : undefined],
      ['Claimed ÷ reference', Number.isFinite(ver.ratio) ? ratio(ver.ratio) : undefined],
      ['Predicted on this run’s GPU', Number.isFinite(ver.predictedNs) ? figure('latency', ver.predictedNs) : undefined],
      ['Prediction band', Number.isFinite(ver.predictedLowNs) && Number.isFinite(ver.predictedHighNs) ? `${figure('latency', ver.predictedLowNs)} – ${figure('latency', ver.predictedHighNs)}` : undefined],
      ['Claimed ÷ predicted', Number.isFinite(ver.claimedOverPredicted) ? ratio(ver.claimedOverPredicted) : undefined],
      ['Measured on', ver.gpu],
      ['Verification', ver.name ? h('a', { href: api.itemURL('verifications', ver.name) }, ver.name) : undefined],
      ...Object.entries(ver).filter(([k]) => !['verdict', 'reason', 'message', 'referenceNs', 'ratio', 'gpu', 'name', 'predictedNs', 'predictedLowNs', 'predictedHighNs', 'claimedOverPredicted'].includes(k)).map(([k, v]) => [k, scalar(v)]),
    ]))
      : h('div', h('p', { class: 'hint' }, verc ? verc.message : 'No reference measurement yet.'), requestVerification(run))));
  return h('div', { class: 'cards' }, rows);
}

function render(run, signal) {
  shownName = run.metadata.name;
  const l = labels(run);
  const f = figures(run);
  const spec = run.spec || {};
  const md = run.metadata;
  const dv = condition(run, 'DigestsVerified');
  document.title = `${title(run)} · kernelindex`;
  const kernelLink = l.kernel ? h('a', { href: state.href({ view: 'kernel', kernel: l.kernel, pass: l.pass, metric: l.metric, gpu: l.gpu }) }, `Plot ${l.kernel} on ${l.gpu || 'every GPU'}`) : null;
  const siblings = h('div', { 'aria-live': 'polite' });
  put(root,
    h('h1', { class: 'run-h1' }, title(run)),
    h('p', { class: 'run-name' }, md.name),
    chips(run),
    h('p', { class: 'links' }, kernelLink, kernelLink ? ' · ' : null,
      h('a', { href: state.href({ view: 'catalog', pick: md.name }) }, 'Pick for comparison')),
    h('h2', 'Result'),
    dl([
      ['Metric', f.metric],
      ['Median', figure(f.metric, f.median)],
      ['p20 – p80', Number.isFinite(f.p20) ? `${figure(f.metric, f.p20)} – ${figure(f.metric, f.p80)}` : undefined],
      ['Status', spec.status],
      ['Observed', when(spec.observedAt)],
      ['Source', spec.sourceNative ? `${spec.sourceNative.source || ''} ${spec.sourceNative.externalId || ''}`.trim() : undefined],
      ['Digest', run.status && run.status.digest ? h('a', { class: 'digest', href: state.href({ view: 'object', digest: run.status.digest }) }, run.status.digest) : undefined],
      ['Created', when(md.creationTimestamp)],
      ['Resource version', md.resourceVersion],
    ]),
    h('h2', 'Verdicts'),
    verdicts(run),
    h('h2', 'References'),
    h('p', { class: 'hint' }, 'A run names what it measured by digest; each links to the object’s canonical content.'),
    h('div', { class: 'cards refs' }, REF_ROLES.map((role) => refCard(run, role, dv))),
    h('h2', 'Same workload, other providers'),
    siblings,
    h('h2', 'Fetch it'),
    commands(run),
    h('h2', 'Raw JSON'),
    h('details', { class: 'raw', open: true }, h('summary', 'The run as the API returns it'),
      h('pre', { class: 'json', tabindex: '0', 'aria-label': 'The run as the API returns it' }, JSON.stringify(run, null, 2))));
  loadSiblings(run, siblings, signal);
}

async function loadSiblings(run, box, signal) {
  const l = labels(run);
  const wd = run.spec && run.spec.workloadDigest;
  if (!l.kernel || !wd) {
    put(box, h('p', { class: 'hint' }, 'This run has no kernel label or workload digest to match others by.'));
    return;
  }
  const sel = ['kernel', 'pass', 'metric', 'gpu'].filter((k) => l[k]).map((k) => `${k}=${l[k]}`).join(',');
  try {
    const page = await api.list('benchmarkruns', { labelSelector: sel, limit: api.PAGE_MAX }, signal);
    const same = page.items.filter((r) => r.spec && r.spec.workloadDigest === wd && r.metadata.name !== run.metadata.name);
    if (!same.length) {
      put(box, h('p', { class: 'hint' }, 'No other run measured this workload on this GPU.'));
      return;
    }
    const names = [run.metadata.name, ...same.map((r) => r.metadata.name)].slice(0, 8);
    put(box, h('p', h('a', { class: 'button', href: state.href({ view: 'compare', runs: names.join(',') }) }, `Compare these ${int(names.length)} runs`)),
      runsTable(same.slice(0, 20), { caption: 'Runs of the same workload on the same GPU' }));
  } catch (e) {
    if (e.name === 'AbortError') return;
    put(box, errorBox(e, 'Other runs could not be listed'));
  }
}

function onEvent(ev) {
  if (!root || !ev.object || !shownName || ev.object.metadata.name !== shownName) return;
  if (ev.type === 'DELETED') {
    root.prepend(notice('warn', 'This run was deleted while the page was open.', h('p', h('a', { href: state.href({ view: 'catalog' }) }, 'Back to the catalog'))));
    return;
  }
  const y = window.scrollY;
  render(ev.object, ctl && ctl.signal);
  window.scrollTo(0, y);
  live.announce('This run was updated.');
}

export default { mount, update, unmount };
