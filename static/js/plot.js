// plot.js — small SVG line plots: a line per series through the medians,
// the p20–p80 band and error bars, log or linear axes, a dashed floor, and
// points that are links (hover or focus shows what they are).

import { h, s } from './dom.js';
import { tick, num } from './format.js';
import { plotButtons, csvButton } from './export.js';

const W0 = 640;
const H0 = 360;
const M0 = { l: 70, r: 18, t: 14, b: 50 };

/* Colours that keep 3:1 against white and dark backgrounds alike, each with
 * its own marker and dash, so no series is told apart by colour alone. */
export const PALETTE = ['#0072b2', '#d55e00', '#009e73', '#cc3d9a', '#8c6d00', '#5e4fa2', '#00838f', '#b2182b', '#6b7b00', '#555555'];
const MARKERS = ['circle', 'square', 'triangle', 'diamond', 'down', 'cross', 'circle', 'square', 'triangle', 'diamond'];
const DASHES = [null, '7 3', '2 3', '9 3 2 3', '4 2', null, '7 3', '2 3', '9 3 2 3', '4 2'];

export function style(i) {
  const k = i + Math.floor(i / PALETTE.length);
  return { color: PALETTE[i % PALETTE.length], marker: MARKERS[k % MARKERS.length], dash: DASHES[k % DASHES.length] };
}

/* One colour, marker and dash per provider on every page: the common
 * providers have their own; any other is placed by a hash of its name. */
const KNOWN = ['liger', 'huggingface', 'torch', 'torch_compile', 'megatron', 'deepspeed_tiled', 'liger_tiled', 'liger_in_place',
  'liger_fused_add_rms_norm', 'liger_rms_norm', 'megatron-fused', 'megatron-unfused', 'triton', 'cutlass', 'cublas', 'flashinfer'];
export function styleFor(provider) {
  const name = String(provider);
  let i = KNOWN.indexOf(name);
  if (i < 0) {
    let hsh = 2166136261;
    for (let c = 0; c < name.length; c++) hsh = Math.imul(hsh ^ name.charCodeAt(c), 16777619) >>> 0;
    i = KNOWN.length + (hsh % 40);
  }
  return style(i);
}

/* The provider's marker and colour, to stand beside its name in tables. */
export function swatch(provider) {
  return markerSwatch(styleFor(provider));
}

function markerPath(kind, x, y, r) {
  switch (kind) {
    case 'square': return `M${x - r},${y - r}h${2 * r}v${2 * r}h${-2 * r}z`;
    case 'triangle': return `M${x},${y - r * 1.2}L${x + r * 1.1},${y + r * 0.8}L${x - r * 1.1},${y + r * 0.8}z`;
    case 'down': return `M${x},${y + r * 1.2}L${x + r * 1.1},${y - r * 0.8}L${x - r * 1.1},${y - r * 0.8}z`;
    case 'diamond': return `M${x},${y - r * 1.3}L${x + r * 1.1},${y}L${x},${y + r * 1.3}L${x - r * 1.1},${y}z`;
    case 'cross': return `M${x - r},${y - r * 0.35}h${r * 0.65}v${-r * 0.65}h${r * 0.7}v${r * 0.65}h${r * 0.65}v${r * 0.7}h${-r * 0.65}v${r * 0.65}h${-r * 0.7}v${-r * 0.65}h${-r * 0.65}z`;
    default: return `M${x - r},${y}a${r},${r} 0 1,0 ${2 * r},0a${r},${r} 0 1,0 ${-2 * r},0`;
  }
}

export function markerSwatch(st) {
  return s('svg', { viewBox: '0 0 26 14', 'aria-hidden': 'true', focusable: 'false' },
    s('line', { x1: 1, y1: 7, x2: 25, y2: 7, stroke: st.color, 'stroke-width': 2, 'stroke-dasharray': st.dash || undefined }),
    s('path', { d: markerPath(st.marker, 13, 7, 4), fill: st.color }));
}

/* Ticks of a scale: decades (with 2 and 5) or powers of two on log axes,
 * 1-2-5 steps on linear ones. */
function ticks(lo, hi, log, pow2) {
  if (log) {
    const out = [];
    if (pow2) {
      const a = Math.ceil(Math.log2(lo) - 1e-9);
      const b = Math.floor(Math.log2(hi) + 1e-9);
      const step = Math.max(1, Math.ceil((b - a + 1) / 9));
      for (let e = a; e <= b; e += step) out.push(2 ** e);
      return out;
    }
    const a = Math.floor(Math.log10(lo));
    const b = Math.ceil(Math.log10(hi));
    const mult = b - a <= 2 ? [1, 2, 5] : [1];
    for (let e = a; e <= b; e++) for (const m of mult) {
      const v = m * 10 ** e;
      if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v);
    }
    if (out.length < 2) return [lo, hi];
    return out;
  }
  const span = hi - lo || Math.abs(hi) || 1;
  const raw = span / 6;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((v) => v >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

function scale(lo, hi, log, a, b) {
  if (log) {
    const l0 = Math.log10(lo);
    const l1 = Math.log10(hi);
    const d = l1 - l0 || 1;
    return (v) => a + ((Math.log10(v) - l0) / d) * (b - a);
  }
  const d = hi - lo || 1;
  return (v) => a + ((v - lo) / d) * (b - a);
}

function domain(values, log, zero) {
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (log) {
    if (lo === hi) {
      lo /= 2;
      hi *= 2;
    }
    return [lo / 1.15, hi * 1.15];
  }
  if (zero) lo = Math.min(0, lo);
  if (lo === hi) hi = lo + (Math.abs(lo) || 1);
  const pad = (hi - lo) * 0.05;
  return [zero && lo === 0 ? 0 : lo - pad, hi + pad];
}

/*
 * plot(opts) → a <figure> holding the SVG, a legend and a data table.
 * opts: {title, xLabel, yLabel, unit, gpu, logX, logY, series: [{name, style, points:
 * [{x, y, lo, hi, href, lines: [text…], flagged}]}], floor: [{x, y}]}
 * y, lo and hi are already in display units.
 */
export function plot(opts) {
  // Drawn for the width it will have: text keeps its size on a phone.
  const avail = Math.floor(opts.width || W0);
  const W = Math.max(280, Math.min(W0, avail));
  const narrow = W < 480;
  const H = narrow ? Math.round(W * 0.8) : H0;
  const M = narrow ? { l: 58, r: 10, t: 12, b: 46 } : M0;
  const series = opts.series.filter((sr) => sr.points.length);
  const pts = series.flatMap((sr) => sr.points);
  const fig = h('figure', { class: 'plot', dataset: { series: series.length, points: pts.length, unit: opts.unit, gpu: opts.gpu } });
  const titleId = `pt-${Math.random().toString(36).slice(2, 9)}`;
  fig.append(h('h4', { id: titleId }, opts.title));
  if (!pts.length) {
    fig.append(h('p', { class: 'hint' }, 'No points to draw.'));
    return fig;
  }
  const xs = pts.map((p) => p.x);
  const ys = pts.flatMap((p) => [p.y, p.lo, p.hi]).filter((v) => Number.isFinite(v));
  const floor = (opts.floor || []).filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y));
  for (const f of floor) ys.push(f.y);
  const logX = opts.logX && xs.every((v) => v > 0);
  const logY = opts.logY && ys.every((v) => v > 0);
  const pow2 = xs.every((v) => Number.isInteger(Math.log2(v)));
  const [x0, x1] = domain(xs, logX, false);
  const yd = opts.yDomain && opts.yDomain.every(Number.isFinite) ? opts.yDomain : ys;
  const [y0, y1] = domain(yd, logY, true);
  const X = scale(x0, x1, logX, M.l, W - M.r);
  const Y = scale(y0, y1, logY, H - M.b, M.t);

  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'group', 'aria-labelledby': titleId, class: 'chart', dataset: { y0, y1, logy: logY ? 1 : 0 } });
  const grid = s('g', { class: 'grid', 'aria-hidden': 'true' });
  const axes = s('g', { class: 'axis', 'aria-hidden': 'true' });
  const xt = ticks(x0 * (logX ? 1.15 : 1), x1 / (logX ? 1.15 : 1), logX, pow2 && logX);
  let xTicks = logX ? xt : ticks(Math.min(...xs), Math.max(...xs), false);
  if (narrow && xTicks.length > 5) xTicks = xTicks.filter((_, i) => i % Math.ceil(xTicks.length / 5) === 0);
  for (const v of xTicks) {
    const px = X(v);
    grid.append(s('line', { x1: px, x2: px, y1: M.t, y2: H - M.b }));
    axes.append(s('line', { x1: px, x2: px, y1: H - M.b, y2: H - M.b + 5 }),
      s('text', { x: px, y: H - M.b + 18, 'text-anchor': 'middle' }, tick(v)));
  }
  const yTicks = ticks(logY ? y0 * 1.15 : y0, logY ? y1 / 1.15 : y1, logY, false);
  for (const v of yTicks) {
    const py = Y(v);
    grid.append(s('line', { x1: M.l, x2: W - M.r, y1: py, y2: py }));
    axes.append(s('line', { x1: M.l - 5, x2: M.l, y1: py, y2: py }),
      s('text', { x: M.l - 8, y: py + 4, 'text-anchor': 'end' }, num(v)));
  }
  axes.append(
    s('path', { d: `M${M.l},${M.t}V${H - M.b}H${W - M.r}`, fill: 'none' }),
    s('text', { x: (M.l + W - M.r) / 2, y: H - 8, 'text-anchor': 'middle' }, opts.xLabel + (logX ? ' (log)' : '')),
    s('text', { x: 14, y: (M.t + H - M.b) / 2, 'text-anchor': 'middle', transform: `rotate(-90 14 ${(M.t + H - M.b) / 2})` }, opts.yLabel + (logY ? ' (log)' : '')));
  svg.append(grid, axes);

  if (floor.length) {
    const fl = [...floor].sort((a, b) => a.x - b.x);
    svg.append(s('path', { class: 'floor', d: fl.map((p, i) => `${i ? 'L' : 'M'}${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join(''), dataset: { floor: fl.length } },
      s('title', null, opts.floorTitle || 'Physical floor: the limit the GPU’s peak bandwidth and compute allow')));
    const first = fl[0];
    svg.append(s('text', { x: X(first.x) + 6, y: Math.max(Y(first.y) - 7, M.t + 10), 'text-anchor': 'start', class: 'floor-label' }, 'physical floor'));
  }

  const tip = h('div', { class: 'tip', hidden: true, role: 'tooltip', id: `${titleId}-tip` });
  const showTip = (p, el) => {
    tip.replaceChildren(...p.lines.map((t, i) => (i === 0 ? h('strong', t) : h('div', t))));
    tip.hidden = false;
    // Beside the point, on the side with more room, so it hides no curve end.
    const box = fig.getBoundingClientRect();
    const r = el.getBoundingClientRect();
    const cx = r.left - box.left + r.width / 2;
    const cy = r.top - box.top + r.height / 2;
    const w = tip.offsetWidth;
    const ht = tip.offsetHeight;
    const left = cx > box.width / 2 ? cx - w - 14 : cx + 14;
    tip.style.left = `${Math.max(4, Math.min(left, box.width - w - 4))}px`;
    tip.style.top = `${Math.max(4, Math.min(cy - ht / 2, box.height - ht - 4))}px`;
  };
  const hideTip = () => { tip.hidden = true; };

  const groups = [];
  series.forEach((sr) => {
    const st = sr.style;
    const sorted = [...sr.points].sort((a, b) => a.x - b.x);
    const g = s('g', { class: 'series', dataset: { series: sr.name, points: sorted.length } });
    const band = sorted.filter((p) => Number.isFinite(p.lo) && Number.isFinite(p.hi));
    if (band.length > 1) {
      const up = band.map((p) => `${X(p.x).toFixed(1)},${Y(p.hi).toFixed(1)}`);
      const down = band.slice().reverse().map((p) => `${X(p.x).toFixed(1)},${Y(p.lo).toFixed(1)}`);
      g.append(s('polygon', { class: 'band', points: [...up, ...down].join(' '), fill: st.color, 'aria-hidden': 'true' }));
    }
    for (const p of band) {
      const px = X(p.x);
      g.append(s('path', { class: 'err', stroke: st.color, 'aria-hidden': 'true', d: `M${px},${Y(p.lo)}V${Y(p.hi)}M${px - 4},${Y(p.lo)}h8M${px - 4},${Y(p.hi)}h8` }));
    }
    g.append(s('path', { class: 'line', stroke: st.color, 'stroke-dasharray': st.dash || undefined, 'aria-hidden': 'true', d: sorted.map((p, i) => `${i ? 'L' : 'M'}${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join('') }));
    for (const p of sorted) {
      const px = X(p.x);
      const py = Y(p.y);
      const label = p.lines.join('; ');
      const a = s('a', { class: 'pt', href: p.href, 'aria-label': label, dataset: { x: p.x, y: p.y, series: sr.name } },
        s('circle', { class: 'hit', cx: px, cy: py, r: 10 }),
        s('path', { class: p.flagged ? 'mark flagged' : 'mark', d: markerPath(st.marker, px, py, 4.5), fill: st.color, stroke: p.flagged ? '#b2182b' : st.color, 'stroke-width': p.flagged ? 2.5 : 1 }));
      a.addEventListener('pointerenter', () => showTip(p, a));
      a.addEventListener('pointerleave', hideTip);
      a.addEventListener('focus', () => showTip(p, a));
      a.addEventListener('blur', hideTip);
      g.append(a);
    }
    svg.append(g);
    groups.push([sr, g]);
  });
  fig.append(svg, tip);

  const legend = h('ul', { class: 'legend', 'aria-label': 'Series (press to hide or show)' });
  for (const [sr, g] of groups) {
    const b = h('button', { type: 'button', 'aria-pressed': 'true', dataset: { series: sr.name } }, markerSwatch(sr.style), sr.name);
    b.addEventListener('click', () => {
      const on = b.getAttribute('aria-pressed') !== 'true';
      b.setAttribute('aria-pressed', String(on));
      g.classList.toggle('off', !on);
    });
    legend.append(h('li', b));
  }
  fig.append(legend);
  fig.append(h('p', { class: 'toolbar export-bar' }, 'Save the plot: ', plotButtons(() => svg, `${opts.name || opts.title}`)));

  const allX = [...new Set(xs)].sort((a, b) => a - b);
  const rows = allX.map((x) => h('tr', h('th', { scope: 'row' }, tick(x)),
    series.map((sr) => {
      const p = sr.points.find((q) => q.x === x);
      return h('td', { class: 'num' }, p ? `${num(p.y)}${Number.isFinite(p.lo) ? ` (${num(p.lo)}–${num(p.hi)})` : ''}` : '—');
    })));
  const dataTable = h('table',
      h('caption', { class: 'visually-hidden' }, `${opts.title}: ${opts.yLabel}, median (p20–p80)`),
      h('thead', h('tr', h('th', { scope: 'col' }, opts.xLabel), series.map((sr) => h('th', { scope: 'col' }, sr.name)))),
      h('tbody', rows));
  fig.append(h('details', { class: 'data' }, h('summary', 'Data table'),
    h('p', { class: 'toolbar' }, csvButton(() => dataTable, `${opts.name || opts.title}-data`)),
    h('div', { class: 'table-scroll' }, dataTable)));
  return fig;
}
