// format.js — numbers, units and times as people read them.

const nf = new Intl.NumberFormat('en-US', { maximumSignificantDigits: 4 });
const intf = new Intl.NumberFormat('en-US');

export const int = (n) => intf.format(n);
export const num = (n) => (Number.isFinite(n) ? nf.format(n) : '—');

/* The time unit that suits the largest of some nanosecond figures. */
export function timeUnit(maxNs) {
  if (maxNs >= 1e9) return { name: 's', div: 1e9 };
  if (maxNs >= 1e6) return { name: 'ms', div: 1e6 };
  if (maxNs >= 1e3) return { name: 'µs', div: 1e3 };
  return { name: 'ns', div: 1 };
}

export function bytesUnit(maxB) {
  if (maxB >= 2 ** 30) return { name: 'GiB', div: 2 ** 30 };
  if (maxB >= 2 ** 20) return { name: 'MiB', div: 2 ** 20 };
  if (maxB >= 2 ** 10) return { name: 'KiB', div: 2 ** 10 };
  return { name: 'B', div: 1 };
}

export function unitFor(metric, max) {
  return metric === 'peak_memory' ? bytesUnit(max) : timeUnit(max);
}

/* A figure with its unit chosen for itself: 7.489 ms, 512 MiB. */
export function figure(metric, v) {
  if (!Number.isFinite(v)) return '—';
  const u = unitFor(metric, v);
  return `${num(v / u.div)} ${u.name}`;
}

/* Axis labels: powers of two from 1024 up as 1Ki, 64Ki; others compact. */
export function tick(v) {
  if (v >= 1024 && Number.isInteger(Math.log2(v))) {
    if (v >= 2 ** 20) return `${v / 2 ** 20}Mi`;
    return `${v / 1024}Ki`;
  }
  if (Math.abs(v) >= 1e4) return new Intl.NumberFormat('en-US', { notation: 'compact', maximumSignificantDigits: 3 }).format(v);
  return nf.format(v);
}

export function ratio(r) {
  if (!Number.isFinite(r)) return '—';
  if (r >= 10) return `${r.toFixed(1)}×`;
  return `${Math.abs(r - 1) < 0.01 ? r.toFixed(3) : r.toFixed(2)}×`;
}

export function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC');
}

export const shortDigest = (d) => (typeof d === 'string' && d.startsWith('sha256:') ? `${d.slice(0, 19)}…` : String(d ?? '—'));

export function pct(f) {
  if (!Number.isFinite(f)) return '—';
  const v = f * 100;
  return `${v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toPrecision(2)}%`;
}

/* How close a run comes to the physical floor, in words that read the
 * right way round: the run reaches N% of peak (the floor is N% of its
 * median); a median below the floor is said to be impossible, not a
 * percentage in the thousands. pl: status.plausibility; median in ns or
 * bytes. Returns lines of text. */
export function peakLines(pl, median, metric) {
  if (!pl) return [];
  const out = [];
  const f = pl.achievedFraction;
  const floor = metric === 'peak_memory' ? pl.floorBytes : pl.floorNs;
  if (Number.isFinite(f)) {
    if (metric === 'peak_memory') {
      if (f <= 1.0001) out.push(`the workload’s tensors (the physical floor, ${figure(metric, floor)}) are ${pct(f)} of this peak`);
      else out.push(`${ratio(f)} below the physical floor (${figure(metric, floor)}): less memory than the workload’s tensors need`);
    } else if (f <= 1.0001) out.push(`reaches ${pct(f)} of peak (physical floor ${figure(metric, floor)})`);
    else out.push(`${ratio(f)} below the physical floor (${figure(metric, floor)}): faster than the GPU allows`);
  }
  if (metric !== 'peak_memory' && Number.isFinite(median) && median > 0) {
    const rates = [];
    if (Number.isFinite(pl.bytes) && pl.bytes > 0) rates.push(`${num(pl.bytes / median)} GB/s`);
    if (Number.isFinite(pl.flops) && pl.flops > 0) rates.push(`${num(pl.flops / median / 1000)} TFLOP/s`);
    if (rates.length) out.push(`achieved ${rates.join(', ')}`);
    if (Number.isFinite(pl.floorNs) && pl.floorNs > 0) {
      const at = [];
      if (Number.isFinite(pl.bytes) && pl.bytes > 0) at.push(`${num(pl.bytes / pl.floorNs)} GB/s`);
      if (Number.isFinite(pl.flops) && pl.flops > 0) at.push(`${num(pl.flops / pl.floorNs / 1000)} TFLOP/s`);
      if (at.length) out.push(`at peak (the floor): ${at.join(', ')}`);
    }
  }
  return out;
}
