#!/usr/bin/env python3
"""test_migrate — kernelindexd migrate between the LMDB and the etcd
store, both ways: a store holding the Liger CSV (kernelindex import
liger), the seed bundle, label patches, a deleted object and a token is
copied LMDB -> etcd, a daemon over the copy answers every GET by name and
by digest, every list page, the facets and the watch history exactly as
the source's daemon did (same bytes: same ids, resourceVersions and
digests); then etcd -> LMDB again, same comparison. A destination that
is not empty is refused and left as it was. Starts its own loopback etcd
(etcdcluster.py); skipped (77) when etcd is not installed."""
import json
import os
import re
import subprocess
import sys
import time
import http.client

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
sys.path.insert(0, HERE)
os.environ.pop('KI_ETCD_ENDPOINTS', None)  # the tests choose the store
import etcdcluster  # noqa: E402
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402

PLURALS = ['benchmarkruns', 'benchmarkprotocols', 'executionenvironments',
           'workloads', 'implementations', 'verifications', 'thresholds']
CSV = os.path.join(os.environ.get('KI_DATA_DIR',
                                  os.path.join(HERE, '..', 'data')),
                   'liger', 'all_benchmark_data.csv')
DIGEST = re.compile(rb'"digest":"(sha256:[0-9a-f]{64})"')
ETCD = None


def cli_path():
    return os.environ.get('KI_CLI') or os.path.join(
        os.path.dirname(kitest.daemon_path()), 'kernelindex')


def etcd_args(prefix):
    return ['--store', 'etcd', '--etcd-endpoints', ETCD.endpoints(),
            '--etcd-prefix', prefix]


def migrate(frm, to, extra=()):
    cmd = [kitest.daemon_path()] + list(extra) + \
        ['migrate', '--from', frm, '--to', to]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def watch_history(d, token, until):
    """Every event a watch of each kind from resourceVersion 1 replays:
    until the last resourceVersion until[plural] when given (the source's
    answer), else what comes before the watch's 2 s timeout."""
    events = []
    for plural in PLURALS:
        c = http.client.HTTPConnection('127.0.0.1', d.port, timeout=120)
        c.request('GET', G + '/%s?watch=true&resourceVersion=1&'
                  'timeoutSeconds=%d' % (plural, 60 if until else 2),
                  headers={'Authorization': 'Bearer ' + token})
        r = c.getresponse()
        eq(r.status, 200, 'watch %s' % plural)
        last = until.get(plural) if until else None
        while last is not None or not until:
            line = r.readline()
            if not line:
                break
            if not line.strip():
                continue
            events.append((plural, line))
            rv = json.loads(line)['object']['metadata']['resourceVersion']
            if until and rv == last:
                break
        c.close()
    return events


def last_rvs(events):
    out = {}
    for plural, line in events:
        out[plural] = json.loads(line)['object']['metadata'][
            'resourceVersion']
    return out


def answers(d, token, until=None):
    """What d answers: every list page, every object by name and by digest,
    the facets, the watch history of each kind."""
    h = {'Authorization': 'Bearer ' + token}
    out = {}
    for plural in PLURALS:
        cont = ''
        page = 0
        while True:
            r = d.get(G + '/%s?limit=500%s' % (plural, cont), headers=h)
            eq(r.status, 200, 'list %s' % plural)
            body = json.loads(r.body)
            out[('list', plural, page)] = r.body
            for item in body['items']:
                name = item['metadata']['name']
                g = d.get(G + '/%s/%s' % (plural, name), headers=h)
                eq(g.status, 200, 'get %s/%s' % (plural, name))
                out[('get', plural, name)] = g.body
                m = DIGEST.search(g.body)
                if m is not None:
                    dg = m.group(1).decode()
                    g = d.get(G + '/objects/' + dg, headers=h)
                    eq(g.status, 200, 'get objects/%s' % dg)
                    out[('digest', dg)] = g.body
            cont = body['metadata'].get('continue')
            if not cont:
                break
            cont = '&continue=' + cont
            page += 1
    r = d.get(G + '/facets', headers=h)
    eq(r.status, 200, 'facets')
    out[('facets',)] = r.body
    out[('watch',)] = watch_history(d, token, until)
    return out


def same(a, b, what):
    eq(sorted(b.keys(), key=repr), sorted(a.keys(), key=repr),
       '%s: the same requests answer' % what)
    diff = [k for k in a if a[k] != b[k]]
    if diff and diff[0] == ('watch',):
        wa, wb = a[diff[0]], b[diff[0]]
        at = next((i for i, (x, y) in enumerate(zip(wa, wb)) if x != y),
                  min(len(wa), len(wb)))
        check(False, '%s: watch histories differ: %d and %d events, from '
              'event %d:\n%r\n%r' % (what, len(wa), len(wb), at,
                                     wa[at:at + 1], wb[at:at + 1]))
    check(not diff, '%s: %d answers differ, first %r:\n%r\n%r' % (
        what, len(diff), diff[:1], a[diff[0]][:300] if diff else '',
        b[diff[0]][:300] if diff else ''))


def build_source():
    """An LMDB store with the Liger CSV, the seed, patched labels, a
    deleted object and a token: its daemon (stopped), data dir, token."""
    data = kitest.tempdir('ki-migrate-src-')
    d = kitest.Daemon(data_dir=data, sync=False).start()
    url = 'http://127.0.0.1:%d' % d.port
    eq(d.post(G + '/benchmarkruns', kitest.seed()).status, 201, 'seed')
    r = subprocess.run([cli_path(), '--server', url, 'import', 'liger', CSV],
                       capture_output=True, text=True, timeout=600)
    eq(r.returncode, 0, 'kernelindex import liger: %s' % r.stderr[-500:])
    runs = json.loads(d.get(G + '/benchmarkruns?limit=5').body)['items']
    for i, run in enumerate(runs[:3]):
        r = d.request('PATCH', G + '/benchmarkruns/%s' %
                      run['metadata']['name'],
                      {'metadata': {'labels': {'migrate-test': 'p%d' % i}}},
                      content_type='application/merge-patch+json')
        eq(r.status, 200, 'label patch: %s' % r.body[:200])
    eq(d.delete(G + '/benchmarkruns/%s' % runs[3]['metadata']['name']).status,
       200, 'delete a run')
    t = subprocess.run([kitest.daemon_path(), '--data-dir', data, 'token',
                        'create', '--role', 'reader'],
                       capture_output=True, text=True, timeout=60)
    eq(t.returncode, 0, 'token create: %s' % t.stderr)
    return d, data, t.stdout.strip()


@test
def lmdb_to_etcd_and_back_serves_the_same_answers():
    src, data, token = build_source()
    before = answers(src, token)
    check(len(before) > 2000, 'the source holds the Liger CSV (%d answers)'
          % len(before))
    check(len(before[('watch',)]) > 3000, 'the watch history: %d events'
          % len(before[('watch',)]))
    eq(src.stop(), 0, 'source daemon stopped')
    t0 = time.time()
    r = migrate('lmdb:' + data, 'etcd:' + ETCD.endpoints(),
                ['--etcd-prefix', '/m1/'])
    to_etcd = time.time() - t0
    eq(r.returncode, 0, 'migrate lmdb -> etcd: %s%s' % (r.stdout, r.stderr))
    check('tokens           source        1  destination        1'
          in r.stdout, 'summary names the token: %s' % r.stdout)
    print('      lmdb -> etcd: %.1f s\n%s' % (to_etcd, r.stdout.rstrip()))
    e = kitest.Daemon(sync=False, args=etcd_args('/m1/')).start()
    until = last_rvs(before[('watch',)])
    same(before, answers(e, token, until), 'daemon over etcd')
    eq(e.stop(), 0, 'etcd daemon stopped')
    back = kitest.tempdir('ki-migrate-back-')
    t0 = time.time()
    r = migrate('etcd:' + ETCD.endpoints(), 'lmdb:' + back,
                ['--etcd-prefix', '/m1/'])
    eq(r.returncode, 0, 'migrate etcd -> lmdb: %s%s' % (r.stdout, r.stderr))
    print('      etcd -> lmdb: %.1f s' % (time.time() - t0))
    b = kitest.Daemon(data_dir=back, sync=False).start()
    same(before, answers(b, token, until), 'daemon over the LMDB copy')
    b.stop()


@test
def a_destination_that_is_not_empty_is_refused():
    src, data, token = build_source()
    src.stop()
    r = migrate('lmdb:' + data, 'etcd:' + ETCD.endpoints(),
                ['--etcd-prefix', '/m2/'])
    eq(r.returncode, 0, 'first migrate: %s' % r.stderr)
    r = migrate('lmdb:' + data, 'etcd:' + ETCD.endpoints(),
                ['--etcd-prefix', '/m2/'])
    eq(r.returncode, 1, 'second migrate into the same prefix')
    check('the destination is not empty' in r.stderr,
          'the refusal says why: %r' % r.stderr)
    r = migrate('etcd:' + ETCD.endpoints(), 'lmdb:' + data,
                ['--etcd-prefix', '/m2/'])
    eq(r.returncode, 1, 'migrate into the source LMDB store')
    check('the destination is not empty' in r.stderr,
          'the refusal says why: %r' % r.stderr)
    r = migrate('lmdb', 'etcd:')
    eq(r.returncode, 2, 'a malformed store is a usage error')
    check('usage:' in r.stderr, r.stderr)


if __name__ == '__main__':
    etcdcluster.skip_without_etcd()
    ETCD = etcdcluster.Cluster(1).start_all()
    try:
        rc = kitest.run_all()
    finally:
        ETCD.remove()
    sys.exit(rc)
