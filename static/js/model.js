// model.js — what the page reads out of a run: labels, figures, references.

export const FACET_KEYS = ['kernel', 'provider', 'gpu', 'pass', 'dtype', 'metric'];
export const REF_ROLES = ['protocol', 'workload', 'environment', 'implementation'];

export const labels = (o) => (o && o.metadata && o.metadata.labels) || {};

export function metricOf(run) {
  const l = labels(run).metric;
  if (l) return l;
  const spec = run.spec || {};
  if (spec.timing) return 'latency';
  const m = (spec.measurements || []).find((x) => x && x.metric);
  return m ? m.metric : 'latency';
}

/* {metric, median, p20, p80} in the run's own unit (ns or bytes); NaN where absent. */
export function figures(run) {
  const spec = run.spec || {};
  const metric = metricOf(run);
  const ms = (spec.measurements || []).filter((x) => x && x.metric === metric);
  const stat = (name) => {
    const m = ms.find((x) => x.statistic === name);
    return m && Number.isFinite(m.value) ? m.value : NaN;
  };
  let median = stat('median');
  if (!Number.isFinite(median) && metric === 'latency') {
    const t = spec.timing && spec.timing.latencyNs;
    if (t && Number.isFinite(t.median)) median = t.median;
  }
  return { metric, median, p20: stat('p20'), p80: stat('p80') };
}

export function digestOf(run, role) {
  const spec = run.spec || {};
  const ref = run.status && run.status.references && run.status.references[role];
  return (ref && ref.digest) || spec[`${role}Digest`];
}

export function reference(run, role) {
  const ref = (run.status && run.status.references && run.status.references[role]) || {};
  return { digest: digestOf(run, role), name: ref.name, resolved: ref.resolved };
}

export function condition(obj, type) {
  const cs = (obj.status && obj.status.conditions) || [];
  return cs.find((c) => c.type === type);
}

export const title = (o) => (o.metadata && (o.metadata.title || o.metadata.name)) || '';

/* Builds a label selector from structured filters plus free text. */
export function selector(filters, extra, more = []) {
  const parts = [];
  for (const k of [...FACET_KEYS, ...more]) if (filters[k]) parts.push(`${k}=${filters[k]}`);
  if (extra && extra.trim()) parts.push(extra.trim());
  return parts.join(',');
}

/* Whether a run's labels satisfy an equality-only selector object. */
export function matches(run, filters) {
  const l = labels(run);
  return Object.entries(filters).every(([k, v]) => !v || l[k] === v);
}

/* The family of a workload: everything but the swept parameter's value. */
export function familyOf(w) {
  const spec = (w && w.spec) || {};
  const params = { ...(spec.parameters || {}) };
  const sweep = spec.sweep;
  delete params[sweep];
  const fixed = Object.keys(params).sort().map((k) => `${k}=${params[k]}`).join(' ');
  return {
    key: `${spec.pass}|${spec.dtype}|${sweep}|${fixed}`,
    sweep,
    fixed,
    dtype: spec.dtype,
    pass: spec.pass,
    x: spec.parameters ? Number(spec.parameters[sweep]) : NaN,
  };
}

/* Versions part by part: 0.10.0 after 0.9.1, 1.0 before 1.0.1. */
export function versionCompare(a, b) {
  const pa = String(a).split(/[.\-+]/);
  const pb = String(b).split(/[.\-+]/);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i];
    const y = pb[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    const nx = /^\d+$/.test(x);
    const ny = /^\d+$/.test(y);
    const d = nx && ny ? Number(x) - Number(y) : x.localeCompare(y);
    if (d) return d < 0 ? -1 : 1;
  }
  return 0;
}

/* The release a run belongs to: the liger_version label, else version. */
export const versionOf = (run) => labels(run).liger_version || labels(run).version || '';

/* Names compared as people type them: '_' and '-' alike, any case. */
export const loose = (s) => String(s).toLowerCase().replace(/_/g, '-');
