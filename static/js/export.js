// export.js — what the page shows, taken away: a table as CSV, a plot as
// SVG or PNG. Everything is made in the page from what it drew.

import { h } from './dom.js';

function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

const slug = (s) => String(s || 'export').toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 80) || 'export';

const cell = (v) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);

/* A cell's text without its controls (buttons, ticks) and hidden hints. */
function cellText(c) {
  const copy = c.cloneNode(true);
  for (const el of copy.querySelectorAll('button, input, label.check, .visually-hidden, svg')) el.remove();
  return copy.textContent;
}

/* RFC 4180 text of a table's rows as shown (header rows included). */
export function tableCSV(table) {
  const rows = [...table.querySelectorAll('tr')].map((tr) => [...tr.children]
    .filter((c) => !c.classList.contains('no-export'))
    .map((c) => cell((c.dataset.csv !== undefined ? c.dataset.csv : cellText(c)).trim().replace(/\s+/g, ' '))).join(','));
  return `${rows.join('\r\n')}\r\n`;
}

/* A "CSV" button that downloads the table. */
export function csvButton(getTable, name) {
  return h('button', { type: 'button', class: 'secondary export', dataset: { export: 'csv' },
    on: { click: () => download(new Blob([tableCSV(getTable())], { type: 'text/csv' }), `${slug(name)}.csv`) } }, 'CSV');
}

/* The SVG as a standalone document, its styles written into it. */
export function svgText(svg) {
  const copy = svg.cloneNode(true);
  const src = [svg, ...svg.querySelectorAll('*')];
  const dst = [copy, ...copy.querySelectorAll('*')];
  const props = ['fill', 'stroke', 'stroke-width', 'stroke-dasharray', 'opacity', 'font-size', 'font-family', 'display'];
  src.forEach((el, i) => {
    const cs = getComputedStyle(el);
    for (const p of props) {
      const v = cs.getPropertyValue(p);
      if (v) dst[i].setAttribute(p, v);
    }
  });
  for (const a of copy.querySelectorAll('.hit')) a.remove();
  const vb = svg.viewBox.baseVal;
  copy.setAttribute('width', String(vb.width));
  copy.setAttribute('height', String(vb.height));
  copy.insertBefore(document.createElementNS('http://www.w3.org/2000/svg', 'rect'), copy.firstChild);
  const bg = copy.firstChild;
  bg.setAttribute('width', '100%');
  bg.setAttribute('height', '100%');
  bg.setAttribute('fill', getComputedStyle(document.body).backgroundColor || '#fff');
  return new XMLSerializer().serializeToString(copy);
}

async function pngBlob(svg) {
  const text = svgText(svg);
  const vb = svg.viewBox.baseVal;
  // A data: address: the page's policy lets images come from there, not blob:.
  const url = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(text)}`;
  {
    const img = new Image();
    await new Promise((ok, bad) => { img.onload = ok; img.onerror = () => bad(new Error('the plot could not be drawn as an image')); img.src = url; });
    const k = 2;
    const c = h('canvas', { width: vb.width * k, height: vb.height * k });
    const ctx = c.getContext('2d');
    ctx.scale(k, k);
    ctx.drawImage(img, 0, 0);
    return await new Promise((ok) => c.toBlob(ok, 'image/png'));
  }
}

/* "SVG" and "PNG" buttons for a plot. */
export function plotButtons(getSvg, name) {
  return [
    h('button', { type: 'button', class: 'secondary export', dataset: { export: 'svg' },
      on: { click: () => download(new Blob([svgText(getSvg())], { type: 'image/svg+xml' }), `${slug(name)}.svg`) } }, 'SVG'),
    h('button', { type: 'button', class: 'secondary export', dataset: { export: 'png' },
      on: { click: async () => download(await pngBlob(getSvg()), `${slug(name)}.png`) } }, 'PNG'),
  ];
}

export { download, slug };
