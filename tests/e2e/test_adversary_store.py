#!/usr/bin/env python3
"""test_adversary_store — the store attacked: restarts between writes and
reads, crashes, and files put where they do not belong.

python3 tests/e2e/test_adversary_store.py [TEST_NAME...]

another_stores_redo_log_is_refused: two daemons on two data directories
are killed (SIGKILL) after their writes, and the redo log of the first is
copied beside the data file of the second (files copied between
directories). The second must refuse to start, saying that the log belongs
to another store, with its data.mdb left byte for byte as it was (before
the fix it started with the other store's meta pages and transactions in
its file: a mixture of both stores, most of its own acknowledged writes
gone, fsck clean). With the foreign log moved away it starts and serves
exactly what it acknowledged.

every_read_survives_sigterm_and_sigkill: runs in bundles (some naming a
protocol not yet stored, two Thresholds judging them), a List, NDJSON,
then merge and JSON patches, PUTs, deletes, re-creations under deleted
names and the late protocols resolving references. Every read path —
each collection, label selectors of every form with and without paging
(each compared with the full list filtered here), field selectors on
every reference digest, facets with and without a selector, series,
leaderboard, each object by name and by digest, watches resumed from old
resourceVersions — answers the same after a SIGTERM restart, after a
SIGKILL restart, and after a write followed by another SIGKILL. A watch
ends at its timeoutSeconds whether or not the history was all sent (on a
loaded machine it may not be), so each is read as a client reads it,
resumed from its last event until the last run event.
"""
import copy
import hashlib
import json
import os
import shutil
import sys
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kitest  # noqa: E402
from kitest import G, Daemon, TestFailure, check, eq, test  # noqa: E402
import test_crash as tc  # noqa: E402

# Importing test_crash registered its tests: they run in their own file.
del kitest._tests[:]

MERGE = 'application/merge-patch+json'
JSON_PATCH = 'application/json-patch+json'
LOGS = ('redo.0', 'redo.1', 'redo.side')


def sha_file(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def post_bundles(d, prefix, n):
    """n bundles of their own: {(plural, name): digest} acknowledged."""
    acked = {}
    for i in range(n):
        b = tc.bundle('%s%d' % (prefix, i), '%s.%d' % (prefix, i))
        r = d.post(G + '/benchmarkruns', b)
        eq(r.status, 201, 'POST bundle %s%d (%r)' % (prefix, i, r.body[:200]))
        for plural, name, dg in tc.parts(b):
            acked[(plural, name)] = dg
    return acked


def stored(d):
    out = {}
    for plural in ('benchmarkruns', 'benchmarkprotocols',
                   'executionenvironments'):
        r = d.get('%s/%s' % (G, plural))
        eq(r.status, 200, 'GET ' + plural)
        for it in r.json()['items']:
            out[(plural, it['metadata']['name'])] = it['status']['digest']
    return out


@test
def another_stores_redo_log_is_refused():
    a = Daemon().start()
    post_bundles(a, 'a', 12)
    a.kill()
    b = Daemon().start()
    mine = post_bundles(b, 'b', 7)
    b.kill()
    for f in LOGS:
        src = os.path.join(a.data_dir, f)
        if os.path.exists(src):
            shutil.copy(src, os.path.join(b.data_dir, f))
    data = os.path.join(b.data_dir, 'data.mdb')
    before = sha_file(data)
    try:
        b.start(timeout=20)
        started = True
    except TestFailure:
        started = False
    if started:
        got = stored(b)
        b.stop()
        raise TestFailure('the store started with another store\'s redo log:'
                          ' %d of its %d acknowledged objects served as '
                          'acknowledged' %
                          (sum(got.get(k) == v for k, v in mine.items()),
                           len(mine)))
    check('belongs to another store' in b.stderr(),
          'the log says why the store is refused:\n' + b.tail(6))
    eq(sha_file(data), before, 'data.mdb untouched by the refused start')
    for f in LOGS:
        p = os.path.join(b.data_dir, f)
        if os.path.exists(p):
            os.remove(p)
    b.start()
    eq(stored(b), mine, 'without the foreign log: exactly what it '
       'acknowledged')
    b.stop()


# ---- every read path, before and after restarts ----

def bundle(i, late):
    """Run i's bundle: every 5th names a protocol that arrives later
    (late[k]), odd ones share the seed's environment (a series, judged by
    the Thresholds)."""
    b = tc.bundle('s%d' % i, 's%d' % (i % 7))
    b['run']['metadata']['labels'] = {'grp': 'g%d' % (i % 3),
                                      'odd': str(i % 2)}
    if i % 2:
        b['environment'] = copy.deepcopy(tc.SEED['environment'])
        b['run']['spec']['environmentDigest'] = tc.digest(b['environment'])
        med = 7489376 + (i % 100) * 100 + (15000 if i % 11 == 0 else 0)
        b['run']['spec']['timing']['latencyNs']['median'] = med
        b['run']['spec']['sourceNative']['metrics']['ms_50'] = med / 1e6
    if i % 5 == 0:
        p = late[i % len(late)]
        b['run']['spec']['protocolDigest'] = tc.digest(p)
        del b['protocol']
    return b


def q(s):
    return urllib.parse.quote(s, safe='=,!()')


def list_names(d, query, limit=None):
    names, cont = [], None
    while True:
        url = '%s/benchmarkruns?%s%s%s' % (
            G, query, '&limit=%d' % limit if limit else '',
            '&continue=' + cont if cont else '')
        r = d.get(url)
        eq(r.status, 200, 'GET ' + url)
        body = r.json()
        names += [x['metadata']['name'] for x in body['items']]
        cont = body['metadata'].get('continue')
        if not cont or not limit:
            return names


def selectors(runs):
    labels = {}
    for x in runs:
        for k, v in (x['metadata'].get('labels') or {}).items():
            labels.setdefault(k, set()).add(v)
    out = []
    for k, vs in sorted(labels.items()):
        vs = sorted(vs)
        for v in vs:
            out.append(('%s=%s' % (k, v), lambda L, k=k, v=v: L.get(k) == v))
            out.append(('%s!=%s' % (k, v),
                        lambda L, k=k, v=v: L.get(k) != v))
        out.append((k, lambda L, k=k: k in L))
        out.append(('!' + k, lambda L, k=k: k not in L))
        out.append(('%s in (%s)' % (k, ','.join(vs[:2])),
                    lambda L, k=k, vs=vs: L.get(k) in vs[:2]))
        out.append(('%s notin (%s)' % (k, vs[0]),
                    lambda L, k=k, vs=vs: L.get(k) != vs[0]))
    ks = sorted(labels)
    for k1, k2 in zip(ks, ks[1:]):
        v1, v2 = sorted(labels[k1])[0], sorted(labels[k2])[-1]
        out.append(('%s=%s,%s=%s' % (k1, v1, k2, v2),
                    lambda L, a=(k1, v1, k2, v2):
                    L.get(a[0]) == a[1] and L.get(a[2]) == a[3]))
    return out


def reads(d):
    """Every read path's answer, keyed by what was asked; lists under a
    selector are checked against the full list filtered here."""
    out = {}
    full = d.get(G + '/benchmarkruns').json()
    runs = full['items']
    out['runs'] = [(x['metadata']['name'], x['metadata']['resourceVersion'],
                    json.dumps(x['metadata'].get('labels'), sort_keys=True),
                    json.dumps(x['status'], sort_keys=True)) for x in runs]
    for plural in ('benchmarkprotocols', 'executionenvironments',
                   'thresholds'):
        out[plural] = [(x['metadata']['name'], x['metadata']['resourceVersion'],
                        json.dumps(x.get('status'), sort_keys=True))
                       for x in d.get('%s/%s' % (G, plural)).json()['items']]
    for sel, match in selectors(runs):
        want = [x['metadata']['name'] for x in runs
                if match(x['metadata'].get('labels') or {})]
        for limit in (None, 7) if '=' in sel else (None,):
            got = list_names(d, 'labelSelector=' + q(sel), limit)
            eq(got, want, 'labelSelector %r limit %s' % (sel, limit))
        out['facets ' + sel] = d.get(G + '/facets?labelSelector=' +
                                     q(sel)).body
    for fld in ('protocolDigest', 'environmentDigest', 'workloadDigest',
                'implementationDigest'):
        for v in sorted(set(x['spec'][fld] for x in runs))[:2]:
            for op in ('=', '!='):
                want = [x['metadata']['name'] for x in runs
                        if (x['spec'][fld] == v) == (op == '=')]
                got = list_names(d, 'fieldSelector=' +
                                 q('spec.%s%s%s' % (fld, op, v)))
                eq(got, want, 'fieldSelector %s%s%s' % (fld, op, v))
    for path in ('facets', 'series', 'leaderboard'):
        r = d.get('%s/%s' % (G, path))
        eq(r.status, 200, 'GET ' + path)
        out[path] = r.body
    for plural in ('benchmarkruns', 'benchmarkprotocols'):
        for x in d.get('%s/%s' % (G, plural)).json()['items'][::2]:
            name, dg = x['metadata']['name'], x['status']['digest']
            eq(d.get('%s/%s/%s' % (G, plural, name)).status, 200,
               'GET ' + name)
            r = d.get('%s/objects/%s' % (G, dg))
            eq(r.status, 200, '%s by digest' % name)
            eq('sha256:' + hashlib.sha256(r.body).hexdigest(), dg,
               'the SHA-256 of what is served for ' + name)
    rv = int(full['metadata']['resourceVersion'])
    # The last run event is a write whose object is listed (the writes
    # end with creations or patches, never a delete).
    last = max(int(x['metadata']['resourceVersion']) for x in runs)
    for start in (1, rv // 2):
        out['watch %d' % start] = watch_until(d, start, last)
    return out


def watch_until(d, start, last):
    """Every event after start, up to last, as a client reads them: a
    watch ends at its timeoutSeconds, the history not all sent when the
    machine is slow, and the client resumes from the last event it got."""
    sig, at = [], start
    while at < last:
        r = d.get('%s/benchmarkruns?watch=true&timeoutSeconds=2&'
                  'resourceVersion=%d' % (G, at), timeout=60)
        evs = [json.loads(ln) for ln in r.body.splitlines() if ln.strip()]
        if not evs:
            break
        sig += [(e['type'], e['object']['metadata'].get('name'),
                 e['object']['metadata'].get('resourceVersion'))
                for e in evs]
        at = int(sig[-1][2])
    rvs = [int(s[2]) for s in sig]
    eq(rvs, sorted(set(rvs)), 'watch from %d: ascending, no duplicate'
       % start)
    return sig


def same(before, after, what):
    for k in sorted(set(before) | set(after)):
        if before.get(k) != after.get(k):
            raise TestFailure('%s: %s differs:\n  before %.600s\n  after  '
                              '%.600s' % (what, k, before.get(k),
                                          after.get(k)))


@test
def every_read_survives_sigterm_and_sigkill():
    d = Daemon().start()
    for name, spec in (('pct5', {'test': 'percentage', 'limit': 5}),
                       ('z3', {'test': 'zscore', 'limit': 3})):
        eq(d.post(G + '/thresholds', {
            'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Threshold',
            'metadata': {'name': name}, 'spec': spec}).status, 201,
           'Threshold ' + name)
    late = [tc.protocol('late-%d' % k, 'late.%d' % k) for k in range(3)]
    n = 40
    for i in range(n):
        r = d.post(G + '/benchmarkruns', bundle(i, late))
        eq(r.status, 201, 'bundle %d (%r)' % (i, r.body[:200]))
    r = d.post(G + '/benchmarkruns', ''.join(
        json.dumps(bundle(i, late)) + '\n' for i in range(n, n + 8)),
        content_type='application/x-ndjson')
    eq(r.status, 201, 'NDJSON (%r)' % r.body[:200])
    r = d.post(G + '/benchmarkruns', {
        'apiVersion': 'v1', 'kind': 'List',
        'items': [bundle(i, late) for i in range(n + 8, n + 14)]})
    eq(r.status, 201, 'List (%r)' % r.body[:200])
    names = [x['metadata']['name'] for x in
             d.get(G + '/benchmarkruns').json()['items']]
    url = G + '/benchmarkruns/'
    for name in names[::4]:
        eq(d.request('PATCH', url + name, {'metadata': {'labels': {
            'grp': 'patched', 'extra': 'x'}}}, content_type=MERGE).status,
           200, 'merge patch ' + name)
    for name in names[1::6]:
        eq(d.request('PATCH', url + name, [{
            'op': 'remove', 'path': '/metadata/labels/odd'}],
            content_type=JSON_PATCH).status, 200, 'JSON patch ' + name)
    for name in names[2::9]:
        cur = d.get(url + name).json()
        cur['metadata']['labels']['put'] = 'y'
        eq(d.request('PUT', url + name, cur).status, 200, 'PUT ' + name)
    for name in names[3::7]:
        eq(d.delete(url + name).status, 200, 'DELETE ' + name)
    for i in range(3, n, 7):
        eq(d.post(G + '/benchmarkruns', bundle(i, late)).status, 201,
           'the same run again after its delete')
    for p in late:
        eq(d.post(G + '/benchmarkprotocols', p).status, 201,
           'late protocol ' + p['metadata']['name'])
    before = reads(d)
    eq(d.stop(), 0, 'a clean stop')
    d.start()
    same(before, reads(d), 'after SIGTERM')
    d.kill()
    d.start()
    same(before, reads(d), 'after SIGKILL')
    for name in names[5::11]:
        d.request('PATCH', url + name, {'metadata': {'labels': {
            'late': 'z'}}}, content_type=MERGE)
    before = reads(d)
    d.kill()
    d.start()
    same(before, reads(d), 'after a patch and SIGKILL')
    d.stop()


if __name__ == '__main__':
    sys.exit(kitest.run_all())
