// bench.mjs — first paint and time to a usable view, measured in headless
// Chromium against a running kernelindexd.
//
//   node bench.mjs URL [REPEATS]
//
// Each load is cold (a fresh browser context: no HTTP cache, no in-memory
// objects). Reported per view, as median and worst of REPEATS loads:
// first contentful paint, the moment the view has drawn its data (the
// page's own performance marks), requests made and bytes received.

import { chromium } from 'playwright-core';

const url = process.argv[2];
const repeats = Number(process.argv[3] || 7);
if (!url) {
  console.error('usage: node bench.mjs URL [REPEATS]');
  process.exit(2);
}

// [name, path, the mark that ends the view's loading, marks of its parts]
const views = [
  ['catalog', '/', 'ki-catalog-ready', ['ki-catalog-runs', 'ki-catalog-counts']],
  ['catalog, filtered to one kernel', '/?view=catalog&kernel=embedding', 'ki-catalog-ready', ['ki-catalog-runs', 'ki-catalog-counts']],
  ['kernel view, embedding latency', '/?view=kernel&kernel=embedding', 'ki-kernel-ready', []],
];

const browser = await chromium.launch({ executablePath: process.env.KI_CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
const facets = await (await fetch(`${url}/apis/kernelindex.dev/v1alpha1/facets`)).json();
console.log(`index: ${facets.total} runs; ${repeats} cold loads per view`);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [name, path, mark, parts] of views) {
  const partTimes = Object.fromEntries(parts.map((p) => [p, []]));
  const fcp = [];
  const ready = [];
  const reqs = [];
  const bytes = [];
  for (let i = 0; i < repeats; i++) {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    let n = 0;
    let b = 0;
    page.on('requestfinished', async (r) => {
      n += 1;
      const s = await r.sizes().catch(() => null);
      if (s) b += s.responseBodySize + s.responseHeadersSize;
    });
    await page.goto(url + path);
    await page.waitForFunction((m) => performance.getEntriesByName(m).length > 0, mark, { timeout: 60000 });
    const t = await page.evaluate(([m, ps]) => ({
      fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime,
      ready: performance.getEntriesByName(m)[0].startTime,
      parts: Object.fromEntries(ps.map((p) => [p, (performance.getEntriesByName(p)[0] || {}).startTime])),
    }), [mark, parts]);
    for (const p of parts) partTimes[p].push(t.parts[p]);
    await page.waitForTimeout(200);
    fcp.push(t.fcp);
    ready.push(t.ready);
    reqs.push(n);
    bytes.push(b);
    await ctx.close();
  }
  console.log(`${name}: first contentful paint ${median(fcp).toFixed(0)} ms (worst ${Math.max(...fcp).toFixed(0)}); ` +
    parts.map((p) => `${p.replace('ki-catalog-', '')} drawn ${median(partTimes[p]).toFixed(0)} ms; `).join('') +
    `all drawn ${median(ready).toFixed(0)} ms (worst ${Math.max(...ready).toFixed(0)}); ` +
    `${median(reqs)} requests, ${(median(bytes) / 1024).toFixed(0)} KiB`);
}
await browser.close();
