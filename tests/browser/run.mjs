// run.mjs — the browser tests: headless Chromium drives the page served by
// a running kernelindexd (KI_URL) that holds the seed and Liger's CSV.
// Prints one line per test and "N passed, M failed" last.

import { chromium } from 'playwright-core';
import { readFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

const URL_ = process.env.KI_URL;
const SEED = JSON.parse(readFileSync(process.env.KI_SEED, 'utf8'));
const CSV = parseCSV(readFileSync(process.env.KI_CSV, 'utf8'));
const STRICT = process.env.KI_BROWSER_STRICT === '1';
const SHOTS = process.env.KI_SCREENSHOT_DIR || join(tmpdir(), 'kernelindex-screenshots');
const API = `${URL_}/apis/kernelindex.dev/v1alpha1`;
const SEED_NAME = SEED.run.metadata.name;
const XSS = '<img src=x onerror=alert(1)>';
mkdirSync(SHOTS, { recursive: true });

function parseCSV(text) {
  const rows = [];
  let row = [];
  let f = '';
  let q = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (q) {
      if (c === '"' && text[i + 1] === '"') { f += '"'; i++; } else if (c === '"') q = false; else f += c;
    } else if (c === '"') q = true;
    else if (c === ',') { row.push(f); f = ''; } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(f); f = ''; rows.push(row); row = [];
    } else f += c;
  }
  if (f || row.length) { row.push(f); rows.push(row); }
  const head = rows.shift();
  return rows.filter((r) => r.length === head.length).map((r) => Object.fromEntries(head.map((h, i) => [h, r[i]])));
}

async function getJSON(path) {
  const r = await fetch(path.startsWith('http') ? path : API + path);
  const body = await r.json().catch(() => null);
  return { status: r.status, body, headers: r.headers };
}

async function postBundle(bundle) {
  const r = await fetch(`${API}/benchmarkruns`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(bundle) });
  const body = await r.json().catch(() => null);
  if (r.status !== 201 && r.status !== 200) throw new Error(`POST answered ${r.status}: ${JSON.stringify(body).slice(0, 400)}`);
  return body;
}

async function allRuns() {
  const out = [];
  let cont = '';
  do {
    const { body } = await getJSON(`/benchmarkruns?limit=1000${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
    out.push(...body.items);
    cont = body.metadata.continue || '';
  } while (cont);
  return out;
}

/* ---- what the server offers (tests that need more wait for it) ---- */

async function probe() {
  const has = {};
  const fac = await getJSON('/facets');
  has.facets = fac.status === 200 && fac.body && fac.body.kind === 'Facets';
  const sel = await getJSON('/benchmarkruns?limit=50&labelSelector=kernel%3Dembedding');
  has.labels = sel.status === 200 && sel.body.items.length > 0 &&
    sel.body.items.every((r) => r.metadata.labels && r.metadata.labels.kernel === 'embedding');
  const bad = await getJSON('/benchmarkruns?limit=1&labelSelector=%28%28bad');
  has.selectorErrors = bad.status === 400;
  has.watch = await new Promise((resolve) => {
    const ctl = new AbortController();
    const t = setTimeout(() => { ctl.abort(); resolve(true); }, 1500);
    fetch(`${API}/benchmarkruns?watch=true&resourceVersion=${encodeURIComponent((sel.body && sel.body.metadata.resourceVersion) || '0')}`, { signal: ctl.signal })
      .then(async (r) => {
        if (!r.ok) { clearTimeout(t); ctl.abort(); resolve(false); return; }
        const rd = r.body.getReader();
        const { value } = await rd.read();
        const text = new TextDecoder().decode(value || new Uint8Array());
        clearTimeout(t);
        ctl.abort();
        resolve(!/^\s*\{\s*"(kind|apiVersion|items|metadata)"/.test(text));
      })
      .catch(() => { clearTimeout(t); resolve(false); });
  });
  return has;
}

const WAITS = {
  facets: 'GET …/facets',
  labels: 'derived labels (kernel, provider, gpu, pass, dtype, metric) with labelSelector filtering',
  selectorErrors: 'labelSelector parsing (400 for a malformed selector)',
  watch: 'watch=true event streams',
};

/* ---- the harness ---- */

const HAS = {};
const tests = [];
const test = (name, needs, fn) => tests.push({ name, needs, fn });
let browser;

class Failure extends Error {}
function ok(cond, msg) {
  if (!cond) throw new Failure(msg);
}
function eq(a, b, msg) {
  if (a !== b) throw new Failure(`${msg}: expected ${JSON.stringify(b)}, got ${JSON.stringify(a)}`);
}
function close(a, b, rel, msg) {
  if (!(Math.abs(a - b) <= rel * Math.max(Math.abs(a), Math.abs(b), 1e-12))) throw new Failure(`${msg}: expected ${b}, got ${a}`);
}

/* A page that records console errors, page errors, dialogs and CSP reports. */
async function open(path, { width = 1280, height = 900, colorScheme = 'light' } = {}) {
  const ctx = await browser.newContext({ viewport: { width, height }, colorScheme, acceptDownloads: true });
  const page = await ctx.newPage();
  const problems = [];
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    // Without the facets endpoint the page's request for it fails by design.
    const st = (m.text().match(/^Failed to load resource: the server responded with a status of (\d+)/) || [])[1];
    if (st && ((st === '404' && !HAS.facets) || (problems.allow || []).includes(Number(st)))) return;
    problems.push(`console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('response', (r) => {
    if (r.status() >= 400 && !(problems.allow || []).includes(r.status())) problems.push(`HTTP ${r.status()} for ${r.url()}`);
  });
  page.on('dialog', (d) => { problems.push(`dialog opened: ${d.type()} ${d.message()}`); d.dismiss().catch(() => {}); });
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      (window.__csp = window.__csp || []).push(`${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  page.problems = problems;
  page.ctx = ctx;
  if (path !== null) await page.goto(URL_ + path);
  return page;
}

async function finish(page) {
  const csp = await page.evaluate(() => window.__csp || []).catch(() => []);
  for (const c of csp) page.problems.push(`CSP violation: ${c}`);
  await page.ctx.close();
  if (page.problems.length) throw new Failure(page.problems.join('; '));
}

const ready = (page, view) => page.waitForFunction((v) => document.documentElement.dataset.ready === v, view, { timeout: 15000 });
const shot = (page, name) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: false });

/* ---- expectations from the CSV ---- */

const EMB_MAP = { B: 'batch', T: 'seq', D: 'hidden', V: 'vocab' };
function embeddingRows(mode, metric) {
  return CSV.filter((r) => r.kernel_name === 'embedding' && r.kernel_operation_mode === mode && r.metric_name === metric).map((r) => {
    const cfg = JSON.parse(r.extra_benchmark_config_str);
    const fixed = Object.entries(cfg).filter(([k]) => k !== 'dtype').map(([k, v]) => [EMB_MAP[k] || k, v]).sort((a, b) => a[0].localeCompare(b[0])).map(([k, v]) => `${k}=${v}`).join(' ');
    return { provider: r.kernel_provider, x: Number(r.x_value), fixed, y: Number(r.y_value_50), gpu: r.gpu_name, row: r };
  });
}
const isSeedRow = (r) => r.provider === 'huggingface' && r.x === 131072 && r.fixed === 'batch=8 hidden=4096 seq=2048';

/* ---- tests ---- */

test('static files: CSP, nosniff, MIME types, ETag and 304, no path escape', [], async () => {
  const r = await fetch(`${URL_}/`);
  const csp = r.headers.get('content-security-policy') || '';
  ok(csp.includes("default-src 'self'") && !csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'), `CSP is strict: ${csp}`);
  eq(r.headers.get('x-content-type-options'), 'nosniff', 'X-Content-Type-Options');
  ok((r.headers.get('content-type') || '').startsWith('text/html'), 'index is text/html');
  const html = await r.text();
  ok(!/<script(?![^>]*\bsrc=)[^>]*>/i.test(html), 'no inline script in index.html');
  ok(!/\sstyle=/i.test(html) && !/<style/i.test(html), 'no inline style in index.html');
  ok(!/\son[a-z]+=/i.test(html), 'no inline event handlers in index.html');
  for (const [path, type] of [['/js/app.js', 'text/javascript'], ['/css/app.css', 'text/css'], ['/favicon.svg', 'image/svg+xml']]) {
    const a = await fetch(URL_ + path);
    eq(a.status, 200, `${path} status`);
    ok((a.headers.get('content-type') || '').startsWith(type), `${path} is ${type}`);
    const etag = a.headers.get('etag');
    ok(etag, `${path} has an ETag`);
    ok((a.headers.get('cache-control') || '').includes('no-cache'), `${path} Cache-Control`);
    const b = await fetch(URL_ + path, { headers: { 'If-None-Match': etag } });
    eq(b.status, 304, `${path} revalidates`);
  }
  for (const bad of ['/../configure.ac', '/js/../../Makefile.am', '/%2e%2e/configure.ac', '/js/%2e%2e/%2e%2e/README.md']) {
    const a = await fetch(URL_ + bad);
    ok(a.status === 404 || a.status === 400, `${bad} is refused (got ${a.status})`);
  }
});

test('catalog: kernel × GPU counts match the facets API', ['facets', 'labels'], async () => {
  const page = await open('/');
  await ready(page, 'catalog');
  const fac = (await getJSON('/facets')).body;
  const want = new Map();
  for (const c of fac.combinations) {
    const k = `${c.kernel}|${c.gpu}`;
    want.set(k, (want.get(k) || 0) + c.count);
  }
  const got = await page.$$eval('table.matrix tbody tr', (trs) => trs.flatMap((tr) => [...tr.querySelectorAll('td[data-gpu]')].map((td) => [`${tr.dataset.kernel}|${td.dataset.gpu}`, Number(td.dataset.count)])));
  eq(got.length, want.size, 'number of non-empty cells');
  for (const [k, n] of got) eq(n, want.get(k), `count of ${k}`);
  const emb = await page.$eval('table.matrix tr[data-kernel="embedding"] td[data-gpu]', (td) => [...td.querySelectorAll('li')].map((li) => [li.dataset.provider, Number(li.dataset.count)]));
  eq(emb.length, 3, 'embedding has three providers');
  const summary = await page.$eval('.lede', (p) => p.textContent);
  ok(summary.includes(fac.total.toLocaleString('en-US')), `summary names the total ${fac.total}: ${summary}`);
  eq(await page.$$eval('table.runs tbody tr', (t) => t.length), 50, 'first page has 50 runs');
  await shot(page, 'catalog');
  await finish(page);
});

test('catalog: a filter narrows, lands in the URL, and the back button restores', ['facets', 'labels'], async () => {
  const page = await open('/');
  await ready(page, 'catalog');
  const before = await page.$$eval('table.matrix tbody tr', (t) => t.length);
  ok(before > 10, `many kernels at first (${before})`);
  await page.selectOption('select[name="kernel"]', 'embedding');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('kernel') === 'embedding');
  await page.waitForFunction(() => document.querySelectorAll('table.matrix tbody tr').length === 1);
  const rows = await page.$$eval('table.runs tbody tr td:nth-child(3)', (t) => t.map((td) => td.textContent));
  ok(rows.length > 0 && rows.every((k) => k === 'embedding'), 'only embedding runs are listed');
  await page.goBack();
  await page.waitForFunction((n) => document.querySelectorAll('table.matrix tbody tr').length === n, before);
  eq(await page.$eval('select[name="kernel"]', (s) => s.value), '', 'the kernel filter is cleared again');
  await page.goForward();
  await page.waitForFunction(() => document.querySelectorAll('table.matrix tbody tr').length === 1);
  await finish(page);
});

test('catalog: pages through runs with limit/continue and never lists them all', [], async () => {
  const page = await open(null);
  const urls = [];
  page.on('request', (r) => { if (r.url().includes('/benchmarkruns')) urls.push(r.url()); });
  await page.goto(`${URL_}/`);
  await ready(page, 'catalog');
  const first = await page.$$eval('table.runs tbody tr', (t) => t.map((tr) => tr.dataset.name));
  eq(first.length, 50, 'a page of 50');
  await page.click('nav.pager a[rel="next"]');
  await page.waitForFunction(() => new URL(location.href).searchParams.has('cont'));
  await page.waitForFunction((n) => document.querySelector('table.runs tbody tr') && document.querySelector('table.runs tbody tr').dataset.name !== n, first[0]);
  const second = await page.$$eval('table.runs tbody tr', (t) => t.map((tr) => tr.dataset.name));
  ok(second.every((n) => !first.includes(n)), 'the second page holds other runs');
  ok(urls.some((u) => u.includes('continue=')), 'the page asked with continue');
  for (const u of urls) {
    const q = new URL(u).searchParams;
    if (q.get('watch') === 'true') continue;
    ok(q.has('limit') && Number(q.get('limit')) <= 1000, `every list is paged: ${u}`);
  }
  await page.goBack();
  await page.waitForFunction((n) => document.querySelector('table.runs tbody tr').dataset.name === n, first[0]);
  await finish(page);
});

test('catalog: search by name finds the seed run', [], async () => {
  const page = await open(`/?view=catalog&q=${encodeURIComponent('vocab131072-fp32-20')}`);
  await ready(page, 'catalog');
  await page.waitForSelector(`section[aria-label="Search results"] tr[data-name="${SEED_NAME}"]`, { timeout: 15000 });
  const input = await page.$eval('input[name="q"]', (i) => i.value);
  eq(input, 'vocab131072-fp32-20', 'the search box shows the query from the URL');
  await finish(page);
});

test('kernel view: embedding latency curves match the CSV point by point', ['facets', 'labels'], async () => {
  const page = await open('/?view=kernel&kernel=embedding&pass=full&metric=latency');
  await ready(page, 'kernel');
  const want = embeddingRows('full', 'speed');
  const fams = [...new Set(want.map((w) => w.fixed))];
  const sections = await page.$$eval('.families > section', (ss) => ss.map((s) => ({
    key: s.dataset.family,
    plots: [...s.querySelectorAll('figure.plot')].map((f) => ({
      unit: f.dataset.unit,
      gpu: f.dataset.gpu,
      series: [...f.querySelectorAll('g.series')].map((g) => ({
        name: g.dataset.series,
        points: [...g.querySelectorAll('a.pt')].map((a) => ({ x: Number(a.dataset.x), y: Number(a.dataset.y), href: a.getAttribute('href') })),
      })),
    })),
  })));
  eq(sections.length, fams.length, 'one section per workload family');
  let checked = 0;
  for (const sec of sections) {
    const fixed = sec.key.split('|')[3];
    eq(sec.plots.length, 1, `family ${fixed}: one GPU, one plot`);
    const p = sec.plots[0];
    eq(p.gpu, 'a100-sxm4-80gb', 'the GPU slug');
    eq(p.series.length, 3, `family ${fixed}: a series per provider`);
    eq(p.unit, 'ms', 'y unit');
    for (const sr of p.series) {
      const rows = want.filter((w) => w.fixed === fixed && w.provider === sr.name);
      const expect = rows.filter((w) => !isSeedRow(w) || sr.points.some((q) => q.x === w.x));
      eq(sr.points.length, expect.length, `${fixed} ${sr.name}: number of points`);
      for (const pt of sr.points) {
        const row = rows.find((w) => w.x === pt.x);
        ok(row, `${fixed} ${sr.name}: x=${pt.x} is a CSV row`);
        close(pt.y, row.y, 1e-6, `${fixed} ${sr.name} x=${pt.x} median`);
        ok(pt.href.startsWith('/?view=run&name='), 'each point links to its run');
        checked += 1;
      }
    }
  }
  ok(checked >= want.length - 1, `all CSV points plotted (${checked} of ${want.length})`);
  // Where the server reports plausibility, each plot draws the physical floor.
  const sample = (await getJSON('/benchmarkruns?limit=1&labelSelector=kernel%3Dembedding%2Cmetric%3Dlatency%2Cpass%3Dfull')).body.items[0];
  if (sample && sample.status.plausibility && Number.isFinite(sample.status.plausibility.floorNs)) {
    const floors = await page.$$eval('figure.plot path.floor', (ps) => ps.map((p) => Number(p.dataset.floor)));
    eq(floors.length, sections.length, 'a floor line per plot');
    for (const n of floors) eq(n, 8, 'the floor has a point per size');
  }
  // The fastest table: torch_compile wins both families on the A100 in Liger's data.
  const best = await page.$$eval('.summary-table tbody tr', (t) => t.map((tr) => tr.dataset.best));
  eq(best.length, fams.length, 'a summary row per plot');
  for (const fixed of fams) {
    const geo = {};
    for (const prov of new Set(want.map((w) => w.provider))) {
      const ys = want.filter((w) => w.fixed === fixed && w.provider === prov && !isSeedRow(w)).map((w) => w.y);
      geo[prov] = Math.exp(ys.reduce((a, y) => a + Math.log(y), 0) / ys.length);
    }
    const winner = Object.entries(geo).sort((a, b) => a[1] - b[1])[0][0];
    ok(best.includes(winner), `fastest in ${fixed} is ${winner} (table: ${best})`);
  }
  await shot(page, 'kernel-embedding');
  await finish(page);
});

test('kernel view: peak memory in MiB, log y, state in the URL survives a reload', ['facets', 'labels'], async () => {
  const page = await open('/?view=kernel&kernel=embedding&pass=full&metric=peak_memory&logy=1');
  await ready(page, 'kernel');
  const want = embeddingRows('full', 'memory');
  const pts = await page.$$eval('figure.plot', (fs) => fs.map((f) => ({ unit: f.dataset.unit, n: f.querySelectorAll('a.pt').length, series: f.querySelectorAll('g.series').length, ys: [...f.querySelectorAll('a.pt')].map((a) => [a.dataset.series, Number(a.dataset.x), Number(a.dataset.y)]) })));
  eq(pts.length, 2, 'two plots');
  eq(pts.reduce((a, p) => a + p.n, 0), want.length, 'every memory row is a point');
  for (const p of pts) {
    eq(p.series, 3, 'three providers');
    const div = { GiB: 1024, MiB: 1, KiB: 1 / 1024 }[p.unit];
    ok(div, `unit ${p.unit}`);
    for (const [prov, x, y] of p.ys) ok(want.some((w) => w.provider === prov && w.x === x && Math.abs(w.y - y * div) <= 1e-3 * w.y + 1e-6), `${prov} x=${x} ${y} ${p.unit} is a CSV row`);
  }
  ok(await page.$eval('input[name="logy"]', (i) => i.checked), 'log y is ticked from the URL');
  ok((await page.$eval('figure.plot svg', (s) => s.textContent)).includes('(log)'), 'an axis says log');
  await page.click('label:has(input[name="pass"][value="forward"])');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('pass') === 'forward');
  await page.reload();
  await ready(page, 'kernel');
  ok(await page.$eval('input[name="pass"][value="forward"]', (i) => i.checked), 'pass survives a reload');
  ok(await page.$eval('input[name="logy"]', (i) => i.checked), 'log y survives a reload');
  await page.goBack();
  await page.waitForFunction(() => new URL(location.href).searchParams.get('pass') === 'full');
  await ready(page, 'kernel');
  ok(await page.$eval('input[name="pass"][value="full"]', (i) => i.checked), 'back restores the pass');
  await finish(page);
});

test('kernel view: keyboard focus on a point shows it, Enter opens its run', ['facets', 'labels'], async () => {
  const page = await open('/?view=kernel&kernel=embedding&pass=full&metric=latency');
  await ready(page, 'kernel');
  const pt = await page.$('figure.plot a.pt');
  const href = await pt.getAttribute('href');
  await pt.focus();
  const tip = await page.$eval('figure.plot .tip', (t) => ({ hidden: t.hidden, text: t.textContent }));
  ok(!tip.hidden && tip.text.includes('median'), `focus shows the tooltip: ${tip.text}`);
  await page.keyboard.press('Enter');
  await ready(page, 'run');
  eq(new URL(page.url()).searchParams.get('name'), new URLSearchParams(href.slice(2)).get('name'), 'Enter opened the run of the point');
  await finish(page);
});

test('run view: the seed run, its references by digest, raw JSON, curl and kubectl', [], async () => {
  const page = await open(`/?view=run&name=${encodeURIComponent(SEED_NAME)}`);
  await ready(page, 'run');
  const api = (await getJSON(`/benchmarkruns/${SEED_NAME}`)).body;
  eq(await page.$eval('h1', (e) => e.textContent), SEED.run.metadata.title, 'title');
  const refs = await page.$$eval('.refs .card', (cs) => cs.map((c) => ({ role: c.dataset.role, resolved: c.dataset.resolved, digest: c.querySelector('a.digest') && c.querySelector('a.digest').textContent, href: c.querySelector('a.digest') && c.querySelector('a.digest').getAttribute('href') })));
  eq(refs.length, 4, 'four references');
  for (const role of ['protocol', 'workload', 'environment', 'implementation']) {
    const r = refs.find((x) => x.role === role);
    ok(r, `${role} shown`);
    eq(r.digest, api.status.references[role].digest, `${role} digest`);
    eq(r.resolved, String(api.status.references[role].resolved), `${role} resolved flag`);
    ok(r.href.includes(encodeURIComponent(r.digest)) || r.href.includes(r.digest), `${role} links to its object`);
  }
  eq(refs.find((r) => r.role === 'protocol').digest, SEED.run.spec.protocolDigest, 'the seed protocol digest');
  const raw = JSON.parse(await page.$eval('pre.json', (p) => p.textContent));
  eq(raw.metadata.name, SEED_NAME, 'raw JSON is the run');
  eq(JSON.stringify(raw.spec), JSON.stringify(api.spec), 'raw JSON spec equals the API');
  const cmds = await page.$$eval('.cmd pre', (ps) => ps.map((p) => p.textContent));
  ok(cmds.some((c) => c.startsWith('curl -s ') && c.endsWith(`/benchmarkruns/${SEED_NAME}`)), 'a curl line');
  ok(cmds.some((c) => c.startsWith('kubectl ') && c.includes(` get benchmarkruns.kernelindex.dev ${SEED_NAME} `)), 'a kubectl line');
  const curl = cmds.find((c) => c.endsWith(`/benchmarkruns/${SEED_NAME}`)).split(' ').pop();
  eq((await getJSON(curl)).status, 200, 'the curl URL works');
  ok((await page.$eval('main', (m) => m.textContent)).includes('7.489 ms'), 'the median in ms');
  await shot(page, 'run-seed');
  await page.click('.refs .card[data-role="protocol"] a.digest');
  await ready(page, 'object');
  eq(await page.$eval('h1', (e) => e.textContent), 'BenchmarkProtocol', 'the protocol opens by digest');
  await finish(page);
});

test('safety: a run titled <img src=x onerror=alert(1)> renders inert', [], async () => {
  const b = JSON.parse(JSON.stringify(SEED));
  b.run.metadata.name = 'xss-title-run';
  b.run.metadata.title = XSS;
  b.run.metadata.annotations = { note: '<script>alert(2)</script>' };
  b.run.spec.sourceNative.externalId = `${b.run.spec.sourceNative.externalId}/xss`;
  await postBundle(b);
  for (const path of ['/?view=run&name=xss-title-run', `/?view=catalog&q=${encodeURIComponent('xss-title')}`, '/?view=compare&runs=xss-title-run,' + SEED_NAME]) {
    const page = await open(path);
    await ready(page, path.includes('run&') ? 'run' : path.includes('compare') ? 'compare' : 'catalog');
    if (path.includes('q=')) {
      // The search scans a bounded number of runs per press; press on.
      for (let i = 0; i < 10 && !(await page.$('section[aria-label="Search results"] tr[data-name="xss-title-run"]')); i++) {
        const more = await page.waitForSelector('section[aria-label="Search results"] button:not([hidden]), section[aria-label="Search results"] tr[data-name="xss-title-run"]', { timeout: 10000 });
        if ((await more.evaluate((e) => e.tagName)) === 'BUTTON') await more.click();
      }
    }
    await page.waitForFunction((t) => document.querySelector('main').textContent.includes(t), XSS, { timeout: 10000 })
      .catch(async () => { throw new Failure(`${path}: the title is not shown: ${(await page.$eval('main', (m) => m.textContent)).slice(0, 300)}`); });
    eq(await page.$$eval('main img, main script', (x) => x.length), 0, `${path}: no img or script element made from data`);
    const alerted = await page.evaluate(() => new Promise((r) => setTimeout(() => r(false), 300)));
    ok(!alerted, 'no alert');
    if (path.includes('run&')) eq(await page.$eval('h1', (h) => h.textContent), XSS, 'the title is shown literally');
    await finish(page);
  }
});

test('compare: providers side by side, differences marked, ratios right', [], async () => {
  const runs = (await allRuns()).filter((r) => /embedding\/full\/[a-z_]+\/nvidia-a100-sxm4-80gb\/batch8-hidden4096-seq2048-vocab16384-fp32\//.test(r.spec.sourceNative && r.spec.sourceNative.externalId));
  eq(runs.length, 3, 'three providers measured this workload');
  const names = runs.map((r) => r.metadata.name);
  const page = await open(`/?view=compare&runs=${names.join(',')}`);
  await ready(page, 'compare');
  eq(await page.$$eval('table.cmp thead th[data-name]', (t) => t.length), 3, 'three columns');
  const rows = await page.$$eval('table.cmp tbody tr[data-field]', (t) => t.map((tr) => [tr.dataset.field, tr.classList.contains('differs')]));
  const differs = (f) => (rows.find(([n]) => n === f) || [])[1];
  eq(differs('provider'), true, 'provider differs');
  eq(differs('parameters.vocab'), false, 'the workload is the same');
  eq(differs('hardware.product'), false, 'the GPU is the same');
  const ratios = await page.$$eval('[data-ratio]', (t) => t.map((e) => Number(e.dataset.ratio)));
  const med = runs.map((r) => r.spec.timing.latencyNs.median);
  eq(ratios.length, 2, 'a ratio per non-baseline run');
  close(ratios[0], med[1] / med[0], 1e-3, 'ratio of the second to the first');
  close(ratios[1], med[2] / med[0], 1e-3, 'ratio of the third to the first');
  await page.check('input[name="diff"]');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('diff') === '1');
  await page.waitForFunction(() => [...document.querySelectorAll('table.cmp tbody tr[data-field]')].every((tr) => tr.classList.contains('differs') || tr.dataset.field === 'Median'));
  await shot(page, 'compare');
  await page.goBack();
  await page.waitForFunction(() => !new URL(location.href).searchParams.has('diff'));
  await finish(page);
});

test('live: a POSTed run appears in the catalog without a reload', ['watch'], async () => {
  const page = await open('/?view=catalog&kernel=embedding');
  await ready(page, 'catalog');
  await page.waitForFunction(() => document.getElementById('live').dataset.state === 'live', null, { timeout: 10000 });
  await page.evaluate(() => { window.__noReload = true; });
  const like = (await allRuns()).find((r) => r.spec.sourceNative && r.spec.sourceNative.externalId.startsWith('embedding/full/liger/') && r.status.references.workload.resolved);
  ok(like, 'an embedding run to copy');
  const name = `live-embedding-run-${Date.now()}`;
  const run = { apiVersion: like.apiVersion, kind: like.kind, metadata: { name, title: 'Arrived live' }, spec: JSON.parse(JSON.stringify(like.spec)) };
  run.spec.sourceNative.externalId += `/${name}`;
  await postBundle({ run });
  await page.waitForSelector(`section.arrived tr[data-name="${name}"]`, { timeout: 10000 });
  ok(await page.evaluate(() => window.__noReload === true), 'the page did not reload');
  await finish(page);
});

test('live: a new point is drawn on the kernel view', ['watch', 'labels', 'facets'], async () => {
  const page = await open('/?view=kernel&kernel=embedding&pass=full&metric=latency');
  await ready(page, 'kernel');
  await page.waitForFunction(() => document.getElementById('live').dataset.state === 'live', null, { timeout: 10000 });
  const count = () => page.$$eval('g.series[data-series="liger"] a.pt', (t) => t.length);
  const before = await count();
  const row = CSV.find((r) => r.kernel_name === 'embedding' && r.kernel_provider === 'liger' && r.kernel_operation_mode === 'full' && r.metric_name === 'speed');
  const runs = await allRuns();
  const like = runs.find((r) => r.spec.sourceNative && r.spec.sourceNative.externalId.startsWith('embedding/full/liger/nvidia-a100-sxm4-80gb/batch8-hidden4096'));
  ok(like && row, 'a liger embedding run to copy');
  const wl = (await getJSON(`/objects/${like.spec.workloadDigest}`)).body;
  const stamp = Date.now();
  const x = 262144 + 2 * (stamp % 1000000);
  const wspec = { ...wl.spec, parameters: { ...wl.spec.parameters, vocab: x } };
  const workload = { apiVersion: 'kernelindex.dev/v1alpha1', kind: 'Workload', metadata: { name: `embedding-full-vocab${x}-live-${stamp}` }, spec: wspec };
  const { createHash } = await import('node:crypto');
  const jcs = (v) => (v === null || typeof v !== 'object' ? JSON.stringify(v) : Array.isArray(v) ? `[${v.map(jcs).join(',')}]` : `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${jcs(v[k])}`).join(',')}}`);
  const digest = `sha256:${createHash('sha256').update(jcs({ apiVersion: workload.apiVersion, kind: workload.kind, spec: workload.spec })).digest('hex')}`;
  const run = JSON.parse(JSON.stringify({ apiVersion: like.apiVersion, kind: like.kind, metadata: { name: `live-embedding-${stamp}`, title: 'embedding · liger · full (live)', labels: { liger_version: '0.2.1' } }, spec: like.spec }));
  run.spec.workloadDigest = digest;
  run.spec.sourceNative.externalId += `/live-${stamp}`;
  await postBundle({ run, workload });
  await page.waitForFunction((n) => document.querySelectorAll('g.series[data-series="liger"] a.pt').length === n + 1, before, { timeout: 10000 });
  ok(await page.$(`g.series[data-series="liger"] a.pt[data-x="${x}"]`), `the new point is at x=${x}`);
  await finish(page);
});

test('run view: requesting a reference measurement shows its verdict live', ['watch'], async () => {
  const like = (await allRuns()).find((r) => r.spec.sourceNative && r.spec.sourceNative.externalId.startsWith('embedding/forward/liger/') && !r.status.verification);
  ok(like, 'an unverified embedding run');
  const page = await open(`/?view=run&name=${encodeURIComponent(like.metadata.name)}`);
  await ready(page, 'run');
  await page.waitForFunction(() => document.getElementById('live').dataset.state === 'live', null, { timeout: 10000 });
  const card = '.card[data-verdict="verification"]';
  eq(await page.$eval(`${card} .badge`, (b) => b.textContent), 'Not verified', 'no verdict yet');
  await page.click(`${card} button`);
  await page.waitForFunction((c) => document.querySelector(`${c} .badge`).textContent !== 'Not verified', card, { timeout: 45000 });
  const after = (await getJSON(`/benchmarkruns/${like.metadata.name}`)).body.status.verification;
  ok(after && after.verdict, 'the run now has a verification');
  eq(await page.$eval(`${card} .badge`, (b) => b.textContent), after.verdict, 'the page shows the server\'s verdict');
  await finish(page);
});

test('run view: the measurement button only where a reference exists', [], async () => {
  const runs = await allRuns();
  const none = runs.find((r) => r.metadata.labels && r.metadata.labels.kernel === 'rms_norm' && r.metadata.labels.pass === 'full' && r.metadata.labels.metric === 'peak_memory');
  const some = runs.find((r) => r.metadata.labels && r.metadata.labels.kernel === 'rms_norm' && r.metadata.labels.pass === 'forward' && r.metadata.labels.metric === 'latency');
  ok(none && some, 'an rms_norm full peak_memory run (a metric no reference measures) and an rms_norm forward latency run');
  const card = '.card[data-verdict="verification"]';
  let page = await open(`/?view=run&name=${encodeURIComponent(none.metadata.name)}`);
  await ready(page, 'run');
  eq(await page.$$eval(`${card} button`, (bs) => bs.filter((b) => /reference measurement/.test(b.textContent)).length), 0, 'no button without a reference');
  ok(await page.$(`${card} [data-reference="none"]`), 'a line says no reference measures it');
  await finish(page);
  page = await open(`/?view=run&name=${encodeURIComponent(some.metadata.name)}`);
  await ready(page, 'run');
  eq(await page.$$eval(`${card} button`, (bs) => bs.filter((b) => /reference measurement/.test(b.textContent)).length), 1, 'the button where a reference exists');
  await finish(page);
});

test('keyboard: Tab reaches the skip link, navigation, filters and runs', [], async () => {
  const page = await open('/');
  await ready(page, 'catalog');
  const seen = [];
  for (let i = 0; i < 40; i++) {
    await page.keyboard.press('Tab');
    seen.push(await page.evaluate(() => {
      const e = document.activeElement;
      return `${e.tagName.toLowerCase()}${e.name ? `[name=${e.name}]` : ''}${e.classList.contains('skip') ? '.skip' : ''}${e.dataset.nav ? `[nav=${e.dataset.nav}]` : ''}${e.classList.contains('run-title') ? '.run-title' : ''}`;
    }));
  }
  for (const want of ['a.skip', 'a[nav=compare]', 'select[name=kernel]', 'select[name=metric]', 'input[name=sel]', 'input[name=q]', 'button']) ok(seen.includes(want), `Tab reaches ${want} (${seen.join(' ')})`);
  // Enter on a focused link follows it.
  await page.focus('a[data-nav="compare"]');
  await page.keyboard.press('Enter');
  await ready(page, 'compare');
  eq(new URL(page.url()).searchParams.get('view'), 'compare', 'Enter followed the link');
  await finish(page);
});

test('accessibility: labelled controls, named regions, readable contrast', [], async () => {
  for (const [path, colorScheme] of [['/', 'light'], [`/?view=run&name=${encodeURIComponent(SEED_NAME)}`, 'light'], ['/?view=compare', 'light'], ['/', 'dark'], ['/?view=kernel&kernel=embedding', 'dark']]) {
    const page = await open(path, { colorScheme });
    await page.waitForFunction(() => document.documentElement.dataset.ready);
    const unlabelled = await page.$$eval('input, select, textarea, button', (els) => els.filter((e) => {
      if (e.type === 'hidden') return false;
      const named = (e.labels && e.labels.length) || e.getAttribute('aria-label') || e.getAttribute('aria-labelledby') || (e.tagName === 'BUTTON' && e.textContent.trim());
      return !named;
    }).map((e) => e.outerHTML.slice(0, 80)));
    eq(unlabelled.length, 0, `${path}: unlabelled controls ${unlabelled.join(' ')}`);
    const low = await page.evaluate(() => {
      const lum = (c) => {
        const m = c.match(/[\d.]+/g).map(Number);
        const [r, g, b] = m.slice(0, 3).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
      };
      const bgOf = (e) => {
        for (let n = e; n; n = n.parentElement) {
          const c = getComputedStyle(n).backgroundColor;
          if (c && !c.startsWith('rgba(0, 0, 0, 0)') && c !== 'transparent') return c;
        }
        return 'rgb(255, 255, 255)';
      };
      const bad = [];
      for (const e of document.querySelectorAll('main p, main a, main th, main td, main label, main dt, main dd, main legend, main h2, header a, .live, .hint, .count, .badge')) {
        if (!e.textContent.trim() || e.closest('[hidden]')) continue;
        const a = lum(getComputedStyle(e).color);
        const b = lum(bgOf(e));
        const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        if (ratio < 4.5) bad.push(`${e.tagName} "${e.textContent.trim().slice(0, 20)}" ${ratio.toFixed(2)}`);
      }
      return bad;
    });
    eq(low.length, 0, `${path} (${colorScheme}): text under 4.5:1 contrast: ${low.slice(0, 5).join('; ')}`);
    ok(await page.$('main h1'), `${path}: a heading`);
    ok(await page.$('nav[aria-label]'), `${path}: a labelled navigation`);
    await finish(page);
  }
});

test('phone width: no view scrolls sideways', [], async () => {
  const other = (await getJSON('/benchmarkruns?limit=1')).body.items[0].metadata.name;
  for (const [path, view] of [['/', 'catalog'], [`/?view=run&name=${encodeURIComponent(SEED_NAME)}`, 'run'], ['/?view=kernel&kernel=embedding', 'kernel'], [`/?view=compare&runs=${encodeURIComponent(SEED_NAME)},${encodeURIComponent(other)}`, 'compare']]) {
    const page = await open(path, { width: 375, height: 800 });
    await ready(page, view).catch(() => {});
    const w = await page.evaluate(() => document.documentElement.scrollWidth);
    ok(w <= 376, `${path}: page is ${w}px wide at 375`);
    if (view === 'catalog') await shot(page, 'phone-catalog');
    await finish(page);
  }
});

const expectStatus = (page, ...codes) => { page.problems.allow = codes; };

test('empty and error states say what to do', [], async () => {
  let page = await open(null);
  expectStatus(page, 404);
  await page.goto(`${URL_}/?view=run&name=no-such-run`);
  await page.waitForSelector('.notice-error');
  ok((await page.$eval('.notice-error', (n) => n.textContent)).includes('No run has this name'), 'a missing run says so');
  ok(await page.$('.notice-error a[href*="view=catalog"]'), 'and links to a search');
  await finish(page);
  page = await open('/?view=nonsense');
  await page.waitForSelector('.notice-error');
  await finish(page);
  page = await open('/?view=compare&runs=only-one');
  await page.waitForSelector('.notice-empty');
  ok((await page.$eval('.notice-empty', (n) => n.textContent)).includes('Add at least one more run'), 'compare needs two');
  await finish(page);
});

test('empty and error states: unknown kernel, malformed selector', ['facets', 'labels', 'selectorErrors'], async () => {
  let page = await open('/?view=kernel&kernel=no_such_kernel');
  await page.waitForSelector('.notice-empty');
  ok((await page.$eval('.notice-empty', (n) => n.textContent)).includes('No runs of kernel'), 'an unknown kernel says so');
  await finish(page);
  page = await open(null);
  expectStatus(page, 400);
  await page.goto(`${URL_}/?view=catalog&sel=${encodeURIComponent('provider in (liger')}`);
  await page.waitForSelector('.notice-error');
  ok((await page.$eval('.notice-error', (n) => n.textContent)).includes('label selector'), 'a bad selector is explained');
  await finish(page);
});

/* ---- regressions, rankings and answers at a glance ---- */

const FAKE = '9.9.0';
const texts = (page, sel) => page.$$eval(sel, (es) => es.map((e) => e.textContent.trim()));

async function download(page, click) {
  const [d] = await Promise.all([page.waitForEvent('download', { timeout: 10000 }), click()]);
  const { readFileSync: read } = await import('node:fs');
  return { name: d.suggestedFilename(), body: read(await d.path()) };
}

/* A copy of a stored run with another median and a newer observedAt: the
 * newest run at its point of the kernel view. */
async function postVariant(like, median, tag) {
  const stamp = `${Date.now()}${Math.floor(Math.random() * 1000)}`;
  const run = JSON.parse(JSON.stringify({ apiVersion: like.apiVersion, kind: like.kind,
    metadata: { name: `${tag}-${stamp}`, title: `${like.metadata.title} (${tag})`, labels: { liger_version: like.metadata.labels.liger_version } }, spec: like.spec }));
  // Unique content (an equal upload would answer with the stored run).
  run.spec.observedAt = new Date(Date.UTC(2030, 0, 1) + (Date.now() % 1e9)).toISOString();
  delete run.spec.sourceNative;
  run.spec.measurements = (run.spec.measurements || []).filter((m) => m.metric !== 'latency');
  run.spec.timing = { primaryStatistic: 'median', latencyNs: { median } };
  await postBundle({ run });
  return run.metadata.name;
}

test('regressions: the made-up release, 25% slower on large sizes and faster on small, is found at once', [], async () => {
  const page = await open('/?view=regressions');
  await ready(page, 'regressions');
  await page.waitForSelector('table.regressions tbody tr');
  eq(new URL(page.url()).searchParams.get('candidate'), `liger_version=${FAKE}`, 'the newest version is the candidate');
  const rows = await page.$$eval('table.regressions tbody tr', (trs) => trs.map((t) => ({ ...t.dataset, cells: [...t.children].map((c) => c.textContent) })));
  const worse = rows.filter((r) => r.verdict === 'Regression');
  const better = rows.filter((r) => r.verdict === 'Improvement');
  ok(worse.length >= 8, `regressions listed: ${worse.length}`);
  ok(better.length >= 8, `improvements listed: ${better.length}`);
  for (const r of worse) {
    eq(r.provider, 'liger', 'only Liger was slowed');
    close(Number(r.change), 25, 1e-3, `${r.kernel} change`);
    ok(r.cells.join(' ').includes(FAKE), 'the row names the candidate version');
  }
  for (const r of better) close(Number(r.change), -10, 1e-3, `${r.kernel} improvement`);
  ok(rows.every((r) => r.provider === 'liger'), 'other providers are unchanged, so not listed');
  // Sorted by the size of the change: the 25% before the 10%.
  const mags = rows.map((r) => Math.abs(Number(r.change)));
  ok(mags.every((m, i) => !i || mags[i - 1] >= m), 'sorted by the size of change');
  // Worst first and regressions only are links that keep the comparison.
  await page.click('a:text("regressions only")');
  await page.waitForFunction(() => [...document.querySelectorAll('table.regressions tbody tr')].every((t) => t.dataset.verdict === 'Regression'));
  const summary = await page.$eval('#regress-h', (e) => e.textContent);
  ok(/\d+ regressions? beyond 5%/.test(summary), `the heading says how many: ${summary}`);
  await shot(page, 'regressions');
  await finish(page);
});

test('leaderboard: the fastest provider per kernel × pass × size on a GPU, sortable, linked to its runs', [], async () => {
  const gpu = 'a100-sxm4-80gb';
  const page = await open(`/?view=leaderboard&gpu=${gpu}&kernel=cross_entropy&metric=latency`);
  await ready(page, 'leaderboard');
  const api = (await getJSON(`/leaderboard?gpu=${gpu}`)).body.items.filter((i) => i.series.kernel === 'cross_entropy' && i.series.metric === 'latency');
  const rows = await page.$$eval('table.leaderboard tbody tr', (trs) => trs.map((t) => ({ ...t.dataset, href: t.querySelector('td.winner a').getAttribute('href') })));
  eq(rows.length, api.length, 'a row per kernel × pass × size');
  for (const i of api) {
    ok(rows.some((r) => r.winner === i.winner.provider && r.href.includes(encodeURIComponent(i.winner.run))), `${i.series.pass} ${i.series.xValue}: ${i.winner.provider} links to its run`);
  }
  await page.click('a[data-sort="margin"]');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('sort') === 'margin');
  const margins = (await page.$$eval('table.leaderboard tbody tr', (trs) => trs.map((t) => t.dataset.margin))).filter((m) => m !== '').map(Number);
  ok(margins.length > 1 && margins.every((m, i) => !i || margins[i - 1] >= m), 'sorted by margin, largest first');
  ok((await page.$eval('table.leaderboard thead', (t) => t.textContent)).includes('Share of peak'), 'the fraction of the floor is shown');
  await shot(page, 'leaderboard');
  await finish(page);
});

test('kernel view: every version stays visible, a version picker, a selector box, the version in tooltips', [], async () => {
  const page = await open('/?view=kernel&kernel=geglu&pass=full&metric=latency');
  await ready(page, 'kernel');
  const names = new Set(await page.$$eval('g.series', (gs) => gs.map((g) => g.dataset.series)));
  ok(names.has('liger 0.2.1') && names.has(`liger ${FAKE}`), `a series per version: ${[...names]}`);
  const label = await page.$eval(`g.series[data-series="liger ${FAKE}"] a.pt`, (a) => a.getAttribute('aria-label'));
  ok(label.includes(`version ${FAKE}`), `the tooltip names the version: ${label}`);
  const opts = await page.$$eval('select[name="version"] option', (os) => os.map((o) => o.value));
  ok(opts.includes('0.2.1') && opts.includes(FAKE), 'the version picker offers both');
  await page.selectOption('select[name="version"]', FAKE);
  await page.waitForFunction((v) => new URL(location.href).searchParams.get('version') === v, FAKE);
  await ready(page, 'kernel');
  await page.waitForFunction(() => [...document.querySelectorAll('g.series')].every((g) => g.dataset.series.startsWith('huggingface') || g.dataset.series.startsWith('liger')) && document.querySelectorAll('g.series').length === 2);
  await page.fill('input[name="sel"]', 'provider=liger');
  await page.press('input[name="sel"]', 'Enter');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('sel') === 'provider=liger');
  await page.waitForFunction(() => document.querySelectorAll('g.series').length === 1);
  await finish(page);
});

test('kernel view: one implausible 10 ns run does not rewrite "Fastest" unless asked for', [], async () => {
  // The winner by Liger's CSV; a slower provider gets one 10 ns run.
  const rowsCSV = CSV.filter((r) => r.kernel_name === 'swiglu' && r.kernel_operation_mode === 'forward' && r.metric_name === 'speed');
  const geo = {};
  for (const prov of new Set(rowsCSV.map((r) => r.kernel_provider))) {
    const ys = rowsCSV.filter((r) => r.kernel_provider === prov).map((r) => Number(r.y_value_50));
    geo[prov] = Math.exp(ys.reduce((x, y) => x + Math.log(y), 0) / ys.length);
  }
  const [winner, loser] = Object.entries(geo).sort((x, y) => x[1] - y[1]).map((e) => e[0]);
  const runs = (await getJSON('/benchmarkruns?limit=1000&labelSelector=kernel%3Dswiglu%2Cpass%3Dforward%2Cmetric%3Dlatency')).body.items;
  const like = runs.find((r) => r.metadata.labels.provider === loser);
  ok(like, `a ${loser} swiglu run`);
  const name = await postVariant(like, 10, 'implausible-fast');
  let stored = null;
  for (let i = 0; i < 50 && !(stored && stored.status && stored.status.plausibility); i++) {
    if (i) await new Promise((res) => setTimeout(res, 100));
    stored = (await getJSON(`/benchmarkruns/${name}`)).body;
  }
  eq(stored.status.plausibility && stored.status.plausibility.verdict, 'Implausible', 'the server judges 10 ns implausible');
  const page = await open('/?view=kernel&kernel=swiglu&pass=forward&metric=latency');
  await ready(page, 'kernel');
  const rows = await page.$$eval('.summary-table tbody tr', (t) => t.map((tr) => ({ best: tr.dataset.best, text: tr.textContent })));
  ok(rows.length && rows.every((r) => r.best === winner), `${winner} stays fastest: ${JSON.stringify(rows.map((r) => r.best))}`);
  ok(rows.every((r) => !/(^|[^\d.])\d{2,}(\.\d+)?×/.test(r.text)), `no implausible multiple: ${rows.map((r) => r.text)}`);
  ok((await page.$eval('#fastest-h + p', (p) => p.textContent)).includes('left out (1 here)'), 'says one run was left out');
  await page.check('input[name="implausible"]');
  await page.waitForFunction((l) => [...document.querySelectorAll('.summary-table tbody tr')].some((t) => t.dataset.best === l), loser);
  // Its tooltip and run view say it is faster than the floor, not a percentage in the thousands.
  const label = await page.$eval(`a.pt[href*="${name}"]`, (a) => a.getAttribute('aria-label'));
  ok(!/\d{4,}%/.test(label) && label.includes('below the physical floor'), `implausible tooltip: ${label}`);
  await finish(page);
});

test('kernel view: achieved GB/s and TFLOP/s, share of peak with the floor, read the right way round', [], async () => {
  const page = await open('/?view=kernel&kernel=geglu&pass=full&metric=latency');
  await ready(page, 'kernel');
  const label = await page.$eval('g.series a.pt', (a) => a.getAttribute('aria-label'));
  ok(/reaches \d+(\.\d+)?% of peak \(physical floor [\d.]+ (ms|µs|ns|s)\)/.test(label), `share of peak with its floor: ${label}`);
  ok(/achieved [\d.,]+ GB\/s, [\d.,]+ TFLOP\/s/.test(label) && /at peak \(the floor\): [\d.,]+ GB\/s/.test(label), `achieved rates and the peak: ${label}`);
  ok(!label.includes('of the physical floor') && !label.includes('of the physical limit'), 'no backwards wording');
  const name = await page.$eval('g.series a.pt', (a) => new URLSearchParams(a.getAttribute('href').slice(2)).get('name'));
  await page.goto(`${URL_}/?view=run&name=${encodeURIComponent(name)}`);
  await ready(page, 'run');
  const card = await page.$eval('.card[data-verdict="plausibility"] .peak', (p) => p.textContent);
  ok(/reaches \d+(\.\d+)?% of peak/.test(card) && !card.includes('of the physical floor'), `run view: ${card}`);
  await finish(page);
});

test('kernel view: pick one size and see each provider\'s ratio there', [], async () => {
  const page = await open('/?view=kernel&kernel=embedding&pass=full&metric=latency&gpu=a100-sxm4-80gb');
  await ready(page, 'kernel');
  const sizes = await page.$$eval('select[name="size"] option', (os) => os.map((o) => o.value).filter(Boolean));
  ok(sizes.includes('1024'), `sizes offered: ${sizes}`);
  await page.selectOption('select[name="size"]', '1024');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('size') === '1024');
  await ready(page, 'kernel');
  const want = embeddingRows('full', 'speed').filter((w) => w.x === 1024);
  const row = await page.$eval('.summary-table tbody tr', (tr) => ({ best: tr.dataset.best, text: tr.textContent }));
  const fam = want.filter((w) => row.text.includes(w.fixed.split(' ')[0]));
  const best = [...fam].sort((a, b) => a.y - b.y)[0];
  eq(row.best, best.provider, 'the fastest at 1024');
  for (const w of fam.filter((x) => x.provider !== best.provider)) {
    const r = w.y / best.y;
    ok(row.text.includes(`${w.provider} ${r >= 10 ? r.toFixed(1) : Math.abs(r - 1) < 0.01 ? r.toFixed(3) : r.toFixed(2)}×`), `${w.provider}'s ratio at 1024 (${r}): ${row.text}`);
  }
  await finish(page);
});

test('provider colours: one colour and marker per provider on every page', [], async () => {
  const colours = async (path) => {
    const page = await open(path);
    await ready(page, 'kernel');
    const c = await page.$$eval('g.series', (gs) => gs.map((g) => [g.dataset.series, g.querySelector('path.line').getAttribute('stroke'), g.querySelector('.mark').getAttribute('d').slice(0, 1)]));
    await finish(page);
    return new Map(c.map(([n, s]) => [n, s]));
  };
  const a = await colours('/?view=kernel&kernel=geglu&pass=full&metric=latency&version=0.2.1');
  const b = await colours('/?view=kernel&kernel=fused_neighborhood_attention&pass=full&metric=latency');
  ok(a.get('liger') && b.get('liger'), 'liger on both');
  eq(a.get('liger'), b.get('liger'), 'liger has one colour');
  ok(a.get('huggingface') !== a.get('liger') && b.get('torch') !== b.get('liger'), 'providers of one plot differ');
});

test('kernel view: GPUs side by side share a y-axis; log y when values span more than 10×', [], async () => {
  const page = await open('/?view=kernel&kernel=fused_neighborhood_attention&pass=full&metric=latency');
  await ready(page, 'kernel');
  const secs = await page.$$eval('.families > section', (ss) => ss.map((s) => [...s.querySelectorAll('figure.plot svg.chart')].map((v) => ({
    ticks: [...v.querySelectorAll('.axis text[text-anchor="end"]')].map((t) => `${t.textContent}@${t.getAttribute('y')}`).join('|'),
    y: v.querySelector('.axis text[transform]').textContent,
    y0: v.dataset.y0,
    y1: v.dataset.y1,
  }))));
  const multi = secs.filter((s) => s.length > 1);
  ok(multi.length, 'a family drawn on two GPUs');
  for (const s of multi) {
    ok(s.every((p) => p.ticks === s[0].ticks), `one y-axis, the same ticks at the same heights: ${JSON.stringify(s.map((p) => p.ticks))}`);
    for (const p of s) ok(p.y.endsWith('(log)'), `log y without asking: ${p.y}`);
  }
  await finish(page);
});

test('catalog: menu counts follow the filters and names fit', [], async () => {
  const gpu = 'h100-sxm5-80gb';
  const page = await open(`/?view=catalog&gpu=${gpu}`);
  await ready(page, 'catalog');
  const want = (await getJSON(`/facets?labelSelector=gpu%3D${gpu}`)).body.labels.kernel;
  await page.waitForFunction((n) => document.querySelectorAll('select[name="kernel"] option').length === n + 1, Object.keys(want).length, { timeout: 10000 });
  const opts = await texts(page, 'select[name="kernel"] option');
  for (const [k, n] of Object.entries(want)) ok(opts.includes(`${k} (${n.toLocaleString('en-US')})`), `${k} counts ${n} on ${gpu}: ${opts.filter((o) => o.startsWith(k))}`);
  // The GPU menu itself still offers every GPU (counted under the other filters).
  ok((await texts(page, 'select[name="gpu"] option')).length > 3, 'other GPUs stay offered');
  const cut = await page.$$eval('.filters select', (ss) => {
    const c = document.createElement('canvas').getContext('2d');
    return ss.flatMap((s) => {
      const cs = getComputedStyle(s);
      c.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      return [...s.options].filter((o) => c.measureText(o.textContent).width + 28 > s.clientWidth).map((o) => `${s.name}: ${o.textContent} (${s.clientWidth}px)`);
    });
  });
  eq(cut.join('; '), '', 'every menu entry fits its menu');
  await finish(page);
});

test('catalog: searching cross_entropy finds the cross-entropy runs', [], async () => {
  const page = await open('/?view=catalog&q=cross_entropy');
  await ready(page, 'catalog');
  await page.waitForFunction(() => /\d+ match/.test((document.querySelector('[aria-label="Search results"] .hint') || {}).textContent || ''), null, { timeout: 15000 });
  const n = await page.$$eval('[aria-label="Search results"] table tbody tr', (t) => t.length);
  ok(n > 0, `runs found: ${n}`);
  await finish(page);
});

test('catalog: the run list shows the swept size and the version', [], async () => {
  const page = await open('/?view=catalog&kernel=cross_entropy');
  await ready(page, 'catalog');
  const head = await texts(page, '#runs-h ~ div table.runs thead th');
  ok(head.includes('Size') && head.includes('Version'), `columns: ${head}`);
  const sizes = await texts(page, '#runs-h ~ div table.runs tbody td.size');
  const versions = await texts(page, '#runs-h ~ div table.runs tbody td.version');
  ok(sizes.length && sizes.every((s) => /^V = \d+$/.test(s)), `sizes: ${sizes.slice(0, 3)}`);
  ok(versions.every((v) => v === '0.2.1'), `versions: ${versions.slice(0, 3)}`);
  await finish(page);
});

test('phone width: at 400 px the plots reflow and their text stays readable', [], async () => {
  const page = await open('/?view=kernel&kernel=fused_neighborhood_attention&pass=full&metric=latency', { width: 400, height: 800 });
  await ready(page, 'kernel');
  const sizes = await page.$$eval('figure.plot svg .axis text', (ts) => ts.map((t) => t.getBoundingClientRect().height));
  const least = Math.min(...sizes);
  ok(least >= 10, `axis text is ${least.toFixed(1)} px high`);
  ok(await page.evaluate(() => document.documentElement.scrollWidth <= 401), 'no sideways scroll');
  await shot(page, 'phone-kernel');
  for (const view of ['regressions', 'leaderboard']) {
    await page.goto(`${URL_}/?view=${view}`);
    await ready(page, view);
    await page.waitForSelector('table tbody tr');
    const w = await page.evaluate(() => document.documentElement.scrollWidth);
    ok(w <= 401, `${view}: page is ${w}px wide at 400`);
  }
  await finish(page);
});

test('export: a plot as SVG and PNG, a table as CSV', [], async () => {
  const page = await open('/?view=kernel&kernel=geglu&pass=full&metric=latency');
  await ready(page, 'kernel');
  const svg = await download(page, () => page.click('figure.plot button[data-export="svg"]'));
  ok(svg.name.endsWith('.svg'), svg.name);
  const text = svg.body.toString('utf8');
  ok(text.startsWith('<svg') && text.includes('class="series"') && text.includes('liger'), 'an SVG document with the series');
  const png = await download(page, () => page.click('figure.plot button[data-export="png"]'));
  ok(png.name.endsWith('.png') && png.body.subarray(1, 4).toString() === 'PNG' && png.body.length > 2000, `a PNG image (${png.body.length} bytes)`);
  const csv = await download(page, () => page.click('#fastest-h ~ .controls button[data-export="csv"]'));
  const lines = csv.body.toString('utf8').trim().split('\r\n');
  eq(lines[0], 'GPU,Workload family,Fastest,Others,Shared sizes,Implausible left out', 'CSV header');
  ok(lines.length > 1, 'CSV rows');
  await page.goto(`${URL_}/?view=regressions`);
  await ready(page, 'regressions');
  await page.waitForSelector('table.regressions tbody tr');
  const reg = await download(page, () => page.click('button[data-export="csv"]'));
  const rl = reg.body.toString('utf8').trim().split('\r\n');
  ok(rl[0].startsWith('Verdict,Change,Kernel') && rl.length > 10, `regressions CSV: ${rl[0]}`);
  await finish(page);
});

test('daemon: started from the build tree it finds its page, and says where it looked when it cannot', [], async () => {
  const daemon = process.env.KI_DAEMON;
  ok(daemon, 'KI_DAEMON is set');
  const { spawn } = await import('node:child_process');
  const { mkdtempSync, rmSync } = await import('node:fs');
  const net = await import('node:net');
  const freePort = () => new Promise((res) => { const srv = net.createServer(); srv.listen(0, '127.0.0.1', () => { const p = srv.address().port; srv.close(() => res(p)); }); });
  const start = async (extra) => {
    const dir = mkdtempSync(join(tmpdir(), 'ki-static-'));
    const port = await freePort();
    const child = spawn(daemon, ['--listen', `127.0.0.1:${port}`, '--data-dir', join(dir, 'data'), '--sync', 'false', ...extra], { cwd: dir, env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=0' } });
    let log = '';
    child.stdout.on('data', (d) => { log += d; });
    child.stderr.on('data', (d) => { log += d; });
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 100; i++) {
      const r = await fetch(`${base}/readyz`).catch(() => null);
      if (r && r.ok) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    return { base, log: () => log, stop: () => new Promise((res) => { child.on('exit', res); child.kill('SIGTERM'); }).then(() => rmSync(dir, { recursive: true, force: true })) };
  };
  let d = await start([]);
  try {
    const r = await fetch(`${d.base}/`);
    ok((r.headers.get('content-type') || '').startsWith('text/html'), `GET / without --static-dir is the page (${r.status} ${r.headers.get('content-type')}); log: ${d.log()}`);
    ok(/web page served from \S+static/.test(d.log()), `the log says where the page is: ${d.log()}`);
  } finally {
    await d.stop();
  }
  d = await start(['--static-dir', '/nonexistent-page-dir']);
  try {
    ok(d.log().includes('/nonexistent-page-dir') && d.log().includes('--static-dir'), `the log names where it looked and the option: ${d.log()}`);
  } finally {
    await d.stop();
  }
});

/* ---- run them ---- */

const has = await probe();
Object.assign(HAS, has);
const missing = Object.keys(WAITS).filter((k) => !has[k]);
if (missing.length) console.log(`server lacks: ${missing.map((k) => WAITS[k]).join('; ')}`);
browser = await chromium.launch({ executablePath: process.env.KI_CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
let passed = 0;
let failed = 0;
let skipped = 0;
const only = process.env.KI_BROWSER_ONLY;
for (const t of tests) {
  if (only && !t.name.includes(only)) continue;
  const wait = t.needs.filter((n) => !has[n]);
  if (wait.length && !STRICT) {
    skipped += 1;
    console.log(`SKIP ${t.name} (waiting on ${wait.map((w) => WAITS[w]).join('; ')})`);
    continue;
  }
  const t0 = Date.now();
  try {
    await Promise.race([t.fn(), new Promise((_, rej) => setTimeout(() => rej(new Failure('timed out after 60 s')), 60000))]);
    passed += 1;
    console.log(`PASS ${t.name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${t.name}: ${e instanceof Failure ? e.message : e.stack || e}`);
  }
}
await browser.close();
console.log(`screenshots in ${SHOTS}`);
if (skipped) console.log(`${skipped} skipped, waiting on server features (KI_BROWSER_STRICT=1 fails them)`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
