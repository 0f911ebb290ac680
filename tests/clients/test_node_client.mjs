// tests/clients/test_node_client.mjs — the JavaScript Kubernetes client
// (@kubernetes/client-node, pinned in package.json) against the real daemon:
// the kubeconfig of docs/clients.md, discovery, lists over more than 1,000
// objects without and with paging, get, create, replace with a stale
// resourceVersion, the client's default (JSON) patch, merge and server-side
// apply patches, delete with DeleteOptions, watch with resume and 410, an
// informer that survives a restart of the daemon (its cache equal to a
// list), and the auth reviews with tokens of each role.
//
// Environment: KI_DAEMON (the kernelindexd binary), KI_SEED (the seed
// bundle), KI_SRCDIR (the source tree); KI_ETCD_ENDPOINTS: every daemon
// over that etcd, as tests/e2e/kitest.py does. Prints one line per test and
// "N passed, M failed" last; exits 1 on any failure.
import * as k8s from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const GROUP = 'kernelindex.dev';
const VERSION = 'v1alpha1';
const GV = `${GROUP}/${VERSION}`;
const NRUNS = 1500;
const SRCDIR = process.env.KI_SRCDIR || path.resolve(import.meta.dirname, '../..');
const SEED = JSON.parse(fs.readFileSync(process.env.KI_SEED, 'utf8'));
const SEED_RUN = SEED.run.metadata.name;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ki-node-'));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The store options of a daemon over dir: none (LMDB in dir), or etcd's
// with a key prefix per directory, so that a restart finds the same store.
function storeArgs(dir) {
  const ep = process.env.KI_ETCD_ENDPOINTS;
  return ep ? ['--store', 'etcd', '--etcd-endpoints', ep, '--etcd-prefix', `/kitest${dir}/`] : [];
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

// One kernelindexd on a fixed port and data directory, so that it can be
// stopped and started again where clients expect it.
class Daemon {
  constructor(name, args = []) {
    this.dir = path.join(tmp, name);
    fs.mkdirSync(this.dir);
    this.args = args;
    this.log = path.join(tmp, `${name}.log`);
    this.proc = null;
  }

  async start() {
    this.port ??= await freePort();
    this.base = `http://127.0.0.1:${this.port}`;
    const out = fs.openSync(this.log, 'a');
    this.proc = spawn(process.env.KI_DAEMON, ['--listen', `127.0.0.1:${this.port}`,
      '--data-dir', this.dir, '--static-dir', path.join(SRCDIR, 'static'),
      '--threads', '2', '--sync', 'false', ...storeArgs(this.dir), ...this.args],
    { stdio: ['ignore', out, out] });
    this.exited = new Promise((r) => this.proc.on('exit', r));
    for (let i = 0; i < 600; i++) {
      try {
        if ((await fetch(`${this.base}/healthz`)).status === 200) return this;
      } catch { /* not up yet */ }
      await sleep(50);
    }
    throw new Error(`the daemon did not start:\n${fs.readFileSync(this.log, 'utf8')}`);
  }

  async stop() {
    if (!this.proc) return;
    this.proc.kill('SIGTERM');
    await this.exited;
    this.proc = null;
  }

  async req(method, p, body, headers = {}) {
    const h = { ...headers };
    if (body !== undefined && !h['Content-Type']) h['Content-Type'] = 'application/json';
    const r = await fetch(this.base + p, {
      method, headers: h,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await r.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    return { status: r.status, json, text };
  }

  // A kubeconfig as docs/clients.md writes it (plain http needs
  // insecure-skip-tls-verify for this client), with token when given.
  kubeconfig(token) {
    const file = path.join(tmp, `kubeconfig-${this.port}-${token ? token.slice(-6) : 'anon'}`);
    fs.writeFileSync(file, [
      'apiVersion: v1', 'kind: Config',
      `clusters: [{name: ki, cluster: {server: "${this.base}", insecure-skip-tls-verify: true}}]`,
      'contexts: [{name: ki, context: {cluster: ki, user: ki}}]',
      `users: [{name: ki, user: {${token ? `token: "${token}"` : ''}}}]`,
      'current-context: ki', ''].join('\n'));
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(file);
    return kc;
  }
}

function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

function eq(got, want, what) {
  const g = JSON.stringify(got);
  const w = JSON.stringify(want);
  if (g !== w) throw new Error(`${what}: got ${g}, want ${w}`);
}

async function apiError(p) {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('the call did not fail');
}

function protocol(name, reps = 100, labels) {
  return {
    apiVersion: GV, kind: 'BenchmarkProtocol',
    metadata: { name, ...(labels ? { labels } : {}) },
    spec: { measurement: { timer: 'cuda_events', primaryStatistic: 'median', repetitions: reps } },
  };
}

function manyRuns(n) {
  const lines = [];
  for (let i = 0; i < n; i++) {
    const b = structuredClone(SEED);
    b.run.metadata.name = `many-${String(i).padStart(5, '0')}`;
    b.run.spec.sourceNative.externalId = `many/${i}`;
    lines.push(JSON.stringify(b));
  }
  return lines.join('\n') + '\n';
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });
const S = {};   // shared: the daemon, its clients

async function setup() {
  S.d = await new Daemon('main', ['--history', '100']).start();
  eq((await S.d.req('POST', `/apis/${GV}/benchmarkruns`, SEED)).status, 201, 'seed');
  const r = await S.d.req('POST', `/apis/${GV}/benchmarkruns`, manyRuns(NRUNS),
    { 'Content-Type': 'application/x-ndjson' });
  eq([r.status, r.json.summary.failed], [201, 0], 'NDJSON upload');
  S.kc = S.d.kubeconfig();
  S.co = S.kc.makeApiClient(k8s.CustomObjectsApi);
}

const q = (plural, extra = {}) => ({ group: GROUP, version: VERSION, plural, ...extra });

test('the_kubeconfig_of_the_docs_works_and_plain_http_alone_is_refused', async () => {
  // The client itself refuses http:// without insecure-skip-tls-verify:
  // the docs say to set it.
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'ki', server: S.d.base }], users: [{ name: 'ki' }],
    contexts: [{ name: 'ki', cluster: 'ki', user: 'ki' }], currentContext: 'ki',
  });
  const e = await apiError(kc.makeApiClient(k8s.CustomObjectsApi)
    .listClusterCustomObject(q('benchmarkprotocols', { limit: 1 })));
  check(/HTTP protocol is not allowed/.test(String(e.message)), `why: ${e.message}`);
  const got = await S.co.listClusterCustomObject(q('benchmarkprotocols', { limit: 1 }));
  eq(got.items.length, 1, 'a list through the documented kubeconfig');
});

test('discovery_lists_the_groups_and_resolves_kinds', async () => {
  const groups = (await S.kc.makeApiClient(k8s.ApisApi).getAPIVersions()).groups.map((g) => g.name);
  for (const g of [GROUP, 'authorization.k8s.io', 'authentication.k8s.io']) {
    check(groups.includes(g), `${g} in /apis: ${groups}`);
  }
  // KubernetesObjectApi finds the plural of a kind through discovery.
  const obj = k8s.KubernetesObjectApi.makeApiClient(S.kc);
  const run = await obj.read({ apiVersion: GV, kind: 'BenchmarkRun', metadata: { name: SEED_RUN } });
  eq(run.metadata.name, SEED_RUN, 'read through discovery');
});

test('list_without_limit_is_the_whole_collection', async () => {
  const got = await S.co.listClusterCustomObject(q('benchmarkruns'));
  eq(got.items.length, NRUNS + 1, 'items');
  eq(new Set(got.items.map((i) => i.metadata.name)).size, NRUNS + 1, 'distinct items');
  check(!got.metadata.continue, 'no continue token');
});

test('list_with_paging_returns_each_object_once', async () => {
  const names = [];
  let cont;
  let pages = 0;
  do {
    const got = await S.co.listClusterCustomObject(q('benchmarkruns', { limit: 400, _continue: cont }));
    pages++;
    names.push(...got.items.map((i) => i.metadata.name));
    cont = got.metadata.continue;
  } while (cont);
  eq(pages, 4, 'pages');
  eq(new Set(names).size, NRUNS + 1, 'distinct items over the pages');
  eq(names.length, NRUNS + 1, 'items over the pages');
});

test('get_create_and_replace_with_a_stale_resource_version', async () => {
  const run = await S.co.getClusterCustomObject(q('benchmarkruns', { name: SEED_RUN }));
  eq(run.metadata.name, SEED_RUN, 'get');
  const made = await S.co.createClusterCustomObject(q('benchmarkprotocols', { body: protocol('js-create', 31) }));
  const old = made.metadata.resourceVersion;
  made.metadata.labels = { team: 'one' };
  const now = await S.co.replaceClusterCustomObject(q('benchmarkprotocols', { name: 'js-create', body: made }));
  eq(now.metadata.labels.team, 'one', 'replaced');
  made.metadata.labels = { team: 'two' };
  made.metadata.resourceVersion = old;
  const e = await apiError(S.co.replaceClusterCustomObject(q('benchmarkprotocols', { name: 'js-create', body: made })));
  eq(e.code, 409, 'a stale replace');
});

test('default_json_patch_merge_patch_and_server_side_apply', async () => {
  // The client's default patch type is application/json-patch+json.
  let r = await S.co.patchClusterCustomObject(q('benchmarkruns', {
    name: SEED_RUN,
    body: [{ op: 'add', path: '/metadata/labels/team', value: 'js' },
      { op: 'test', path: '/metadata/labels/team', value: 'js' }],
  }));
  eq(r.metadata.labels.team, 'js', 'JSON patch');
  const e = await apiError(S.co.patchClusterCustomObject(q('benchmarkruns', {
    name: SEED_RUN, body: [{ op: 'test', path: '/metadata/labels/team', value: 'other' }],
  })));
  eq(e.code, 422, 'a failed test operation');
  r = await S.co.patchClusterCustomObject(q('benchmarkruns', {
    name: SEED_RUN, body: { metadata: { labels: { team: 'merged' } } },
  }), k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
  eq(r.metadata.labels.team, 'merged', 'merge patch');
  const apply = (labels) => S.co.patchClusterCustomObject(q('benchmarkprotocols', {
    name: 'js-apply', fieldManager: 'js', body: protocol('js-apply', 32, labels),
  }), k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply));
  eq((await apply()).metadata.name, 'js-apply', 'apply creates');
  eq((await apply({ stage: 'b' })).metadata.labels.stage, 'b', 'apply updates');
});

test('delete_honours_dry_run_and_preconditions', async () => {
  const made = await S.co.createClusterCustomObject(q('benchmarkprotocols', { body: protocol('js-delete', 33) }));
  const del = (extra) => S.co.deleteClusterCustomObject(q('benchmarkprotocols', { name: 'js-delete', ...extra }));
  await del({ dryRun: 'All' });
  await del({ body: { dryRun: ['All'] } });
  const still = await S.co.getClusterCustomObject(q('benchmarkprotocols', { name: 'js-delete' }));
  eq(still.metadata.uid, made.metadata.uid, 'dry runs left the object');
  eq((await apiError(del({ body: { preconditions: { uid: 'other' } } }))).code, 409, 'uid precondition');
  eq((await apiError(del({ propagationPolicy: 'Sideways' }))).code, 400, 'a bad propagationPolicy');
  await del({ propagationPolicy: 'Foreground', body: { preconditions: { uid: made.metadata.uid } } });
  eq((await apiError(S.co.getClusterCustomObject(q('benchmarkprotocols', { name: 'js-delete' })))).code,
    404, 'deleted');
});

// Events of a watch from rv until it has seen n or ms passed.
async function collect(kc, p, params, n, ms = 3000) {
  const seen = [];
  let ctl;
  await new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    new k8s.Watch(kc).watch(p, params, (type, obj) => {
      seen.push([type, type === 'ERROR' ? obj.code : obj.metadata.name, obj.metadata?.resourceVersion]);
      if (seen.length >= n) { clearTimeout(t); resolve(); }
    }, () => { clearTimeout(t); resolve(); }).then((c) => { ctl = c; });
  });
  ctl?.abort();
  return seen;
}

test('watch_resumes_and_an_old_version_is_gone', async () => {
  const p = `/apis/${GV}/benchmarkprotocols`;
  const rv0 = (await S.co.listClusterCustomObject(q('benchmarkprotocols', { limit: 1 }))).metadata.resourceVersion;
  await S.co.createClusterCustomObject(q('benchmarkprotocols', { body: protocol('js-watch-a', 34) }));
  let seen = await collect(S.kc, p, { resourceVersion: rv0 }, 1);
  eq(seen.map((s) => s.slice(0, 2)), [['ADDED', 'js-watch-a']], 'events after rv0');
  await S.co.createClusterCustomObject(q('benchmarkprotocols', { body: protocol('js-watch-b', 35) }));
  seen = await collect(S.kc, p, { resourceVersion: seen[0][2] }, 1);
  eq(seen.map((s) => s.slice(0, 2)), [['ADDED', 'js-watch-b']], 'resumed');
  seen = await collect(S.kc, `/apis/${GV}/benchmarkruns`, { resourceVersion: '2' }, 1);
  eq(seen.map((s) => s.slice(0, 2)), [['ERROR', 410]], 'a version older than the history');
});

test('informer_survives_a_restart_and_its_cache_equals_a_list', async () => {
  // More runs than a list used to be cut at: the informer's first list
  // must hold them all.
  const d = await new Daemon('informer').start();
  const n = 1100;
  const up = await d.req('POST', `/apis/${GV}/benchmarkruns`, manyRuns(n), { 'Content-Type': 'application/x-ndjson' });
  eq(up.status, 201, 'upload');
  const kc = d.kubeconfig();
  const co = kc.makeApiClient(k8s.CustomObjectsApi);
  const plural = 'benchmarkruns';
  const inf = k8s.makeInformer(kc, `/apis/${GV}/${plural}`, () => co.listClusterCustomObject(q(plural)));
  let stopped = false;
  let errors = 0;
  inf.on('error', () => {
    errors++;
    if (!stopped) setTimeout(() => { if (!stopped) inf.start().catch(() => {}); }, 200);
  });
  const key = (o) => `${o.metadata.name}@${o.metadata.resourceVersion}`;
  const synced = async (what) => {
    let want = [];
    for (let i = 0; i < 150; i++) {
      let list;
      try { list = await co.listClusterCustomObject(q(plural)); } catch { await sleep(100); continue; }
      want = list.items.map(key).sort();
      const got = inf.list().map(key).sort();
      if (JSON.stringify(got) === JSON.stringify(want)) return got;
      await sleep(100);
    }
    throw new Error(`${what}: the cache (${inf.list().length} objects) never equalled a list (${want.length})`);
  };
  const label = (name, v) => co.patchClusterCustomObject(q(plural, { name, body: { metadata: { labels: { x: v } } } }),
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
  try {
    await inf.start();
    eq((await synced('at start')).length, n, 'objects at start');
    await label('many-00002', 'live');
    await synced('after a change');
    eq(inf.get('many-00002').metadata.labels.x, 'live', 'a change seen');
    await d.stop();
    await sleep(300);
    await d.start();
    const b = structuredClone(SEED);
    b.run.metadata.name = 'inf-after';
    b.run.spec.sourceNative.externalId = 'inf/after';
    eq((await d.req('POST', `/apis/${GV}/benchmarkruns`, b)).status, 201, 'a run after the restart');
    await co.deleteClusterCustomObject(q(plural, { name: 'many-00000' }));
    await label('many-00001', 'y');
    const got = await synced('after the restart');
    eq(got.length, n, 'objects after the restart');
    check(got.some((s) => s.startsWith('inf-after@')) && !got.some((s) => s.startsWith('many-00000@')),
      'the create and the delete after the restart are in the cache');
    eq(inf.get('many-00001').metadata.labels.x, 'y', 'a label change after the restart');
    check(errors >= 1, 'the restart was seen by the informer');
  } finally {
    stopped = true;
    await inf.stop();
    await d.stop();
  }
});

test('auth_reviews_answer_for_each_role', async () => {
  const d = await new Daemon('auth').start();
  try {
    eq((await d.req('POST', `/apis/${GV}/benchmarkruns`, SEED)).status, 201, 'seed');
    const tok = {};
    for (const [name, spec] of [['admin', { role: 'admin' }], ['writer', { role: 'writer' }],
      ['reader', { role: 'reader' }], ['scoped', { role: 'writer', source: 'elsewhere' }]]) {
      const r = await d.req('POST', '/admin/tokens', spec,
        tok.admin ? { Authorization: `Bearer ${tok.admin}` } : {});
      eq(r.status, 201, `token ${name}`);
      tok[name] = r.json.token;
    }
    const want = {   // get, create, delete the seed run, POST /admin/tokens
      admin: [true, true, true, true], writer: [true, true, true, false],
      reader: [true, false, false, false], scoped: [true, true, false, false],
      anonymous: [true, false, false, false],
    };
    for (const [role, w] of Object.entries(want)) {
      const kc = d.kubeconfig(tok[role]);
      const authz = kc.makeApiClient(k8s.AuthorizationV1Api);
      const ask = async (attrs) => (await authz.createSelfSubjectAccessReview({
        body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: attrs },
      })).status.allowed;
      const got = [
        await ask({ resourceAttributes: { group: GROUP, resource: 'benchmarkruns', verb: 'get' } }),
        await ask({ resourceAttributes: { group: GROUP, resource: 'benchmarkruns', verb: 'create' } }),
        await ask({ resourceAttributes: { group: GROUP, resource: 'benchmarkruns', verb: 'delete', name: SEED_RUN } }),
        await ask({ nonResourceAttributes: { path: '/admin/tokens', verb: 'post' } }),
      ];
      eq(got, w, `reviews of ${role}`);
      const who = await kc.makeApiClient(k8s.AuthenticationV1Api).createSelfSubjectReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      });
      const groups = who.status.userInfo.groups;
      check(role === 'anonymous' ? groups.includes('system:unauthenticated')
        : groups.includes(`kernelindex:${role === 'scoped' ? 'writer' : role}s`),
      `${role}'s groups: ${groups}`);
    }
  } finally {
    await d.stop();
  }
});

let passed = 0;
let failed = 0;
try {
  await setup();
  const only = process.argv.slice(2);
  for (const t of tests) {
    if (only.length && !only.includes(t.name)) continue;
    const t0 = Date.now();
    try {
      await t.fn();
      passed++;
      console.log(`ok    ${t.name.padEnd(60)} ${((Date.now() - t0) / 1000).toFixed(2)}s`);
    } catch (e) {
      failed++;
      console.log(`FAIL  ${t.name}\n      ${String(e.stack || e).split('\n').join('\n      ')}`);
      if (e.body) console.log(`      body: ${JSON.stringify(e.body).slice(0, 600)}`);
    }
  }
} catch (e) {
  failed++;
  console.log(`FAIL  setup\n      ${e.stack || e}`);
} finally {
  await S.d?.stop();
}
// Sanitizer reports in any daemon's log fail the run.
for (const f of fs.readdirSync(tmp).filter((n) => n.endsWith('.log'))) {
  const text = fs.readFileSync(path.join(tmp, f), 'utf8');
  if (/ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer/.test(text)) {
    failed++;
    console.log(`FAIL  sanitizer report in ${f}:\n${text.slice(-3000)}`);
  }
}
if (!process.env.KI_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
