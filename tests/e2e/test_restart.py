#!/usr/bin/env python3
"""test_restart — what the daemon answers survives a clean restart.

python3 tests/e2e/test_restart.py [TEST_NAME...]

changed_objects_keep_their_digest_across_a_restart: objects changed after
their creation (a label merge patch, an empty merge patch, a PUT) and one
created after a dryRun=All of the same content; the daemon is stopped with
SIGTERM and started again: each is served by its digest (bytes whose
SHA-256 is the digest), the same content under another name is the same
object, and a run naming the protocol's digest resolves it, whether the
protocol travels in the same bundle or not.

damaged_object_is_refused_and_fsck_reports_it: a byte of a stored
protocol's spec is flipped in data.mdb while the daemon is stopped: after
the restart, that object is refused by digest and by name (500, a Status
saying it is damaged, no immutable caching, a log line), the others are
served, and kernelindexd fsck reports it and exits 1.

full_disk_is_507_and_logged: a daemon whose data directory is a small tmpfs
(mounted by the test as root; skipped with the reason otherwise) is written
until a write fails: the failure is a 507 InsufficientStorage Status, the
log says why, and reads go on.

Over etcd (tests/etcd/e2e.sh) the restart case runs as it is: a daemon
started again over the same etcd prefix finds everything. The other two
are LMDB's own (a byte of data.mdb, a full disk under the data
directory) and skip themselves there.
"""
import copy
import hashlib
import os
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kitest  # noqa: E402
from kitest import G, Daemon, check, eq, test  # noqa: E402

MERGE = 'application/merge-patch+json'


def proto(name, reps):
    return {'apiVersion': 'kernelindex.dev/v1alpha1',
            'kind': 'BenchmarkProtocol', 'metadata': {'name': name},
            'spec': {'measurement': {'timer': 'cuda_events',
                                     'primaryStatistic': 'median',
                                     'repetitions': reps}}}


def by_digest(d, dg, what):
    r = d.get('%s/objects/%s' % (G, dg))
    eq(r.status, 200, '%s by digest %s (%r)' % (what, dg, r.body[:200]))
    eq('sha256:' + hashlib.sha256(r.body).hexdigest(), dg,
       'SHA-256 of what is served for ' + what)


def names(d):
    return sorted(i['metadata']['name'] for i in
                  d.get(G + '/benchmarkprotocols').json()['items'])


def check_all(d, objs):
    before = names(d)
    for name, (obj, dg) in objs.items():
        by_digest(d, dg, name)
        alias = copy.deepcopy(obj)
        alias['metadata'] = {'name': name + '-alias'}
        r = d.post(G + '/benchmarkprotocols', alias)
        eq(r.status, 200, 'the content of %s under another name (%r)' %
           (name, r.body[:300]))
        eq(r.json()['metadata']['name'], name,
           'the answer names the existing object')
    eq(names(d), before, 'no second object for the same content')


@test
def changed_objects_keep_their_digest_across_a_restart():
    d = Daemon().start()
    s = kitest.seed()
    p = s['protocol']
    objs = {}
    r = d.post(G + '/benchmarkprotocols', p)
    eq(r.status, 201, 'POST the seed protocol (%r)' % r.body[:300])
    pname = p['metadata']['name']
    objs[pname] = (p, r.json()['status']['digest'])
    eq(objs[pname][1], s['run']['spec']['protocolDigest'],
       'the run names the protocol by its digest')
    for patch in ({'metadata': {'labels': {'team': 'kernels'}}},
                  {'metadata': {}}):
        r = d.request('PATCH', '%s/benchmarkprotocols/%s' % (G, pname),
                      patch, content_type=MERGE)
        eq(r.status, 200, 'merge patch %r (%r)' % (patch, r.body[:300]))
    q = proto('put-protocol', 7)
    r = d.post(G + '/benchmarkprotocols', q)
    eq(r.status, 201, 'POST put-protocol')
    objs['put-protocol'] = (q, r.json()['status']['digest'])
    cur = d.get(G + '/benchmarkprotocols/put-protocol').json()
    cur['metadata'].setdefault('labels', {})['kept'] = 'yes'
    r = d.request('PUT', G + '/benchmarkprotocols/put-protocol', cur)
    eq(r.status, 200, 'PUT put-protocol (%r)' % r.body[:300])
    w = proto('dry-protocol', 9)
    r = d.post(G + '/benchmarkprotocols?dryRun=All', w)
    eq(r.status, 201, 'dry run (%r)' % r.body[:300])
    r = d.post(G + '/benchmarkprotocols', w)
    eq(r.status, 201, 'POST after the dry run (%r)' % r.body[:300])
    objs['dry-protocol'] = (w, r.json()['status']['digest'])
    check_all(d, objs)
    eq(d.stop(), 0, 'a clean stop')
    d.start()
    check_all(d, objs)
    # A bundle naming the protocol's digest: with the protocol in it, and
    # without.
    r = d.post(G + '/benchmarkruns', s)
    eq(r.status, 201, 'the seed bundle (%r)' % r.body[:300])
    lone = copy.deepcopy(s)
    del lone['protocol']
    lone['run']['metadata']['name'] += '-lone'
    lone['run']['spec']['sourceNative']['externalId'] += '/lone'
    r = d.post(G + '/benchmarkruns', lone)
    eq(r.status, 201, 'a bundle without the protocol (%r)' % r.body[:300])
    eq(d.stop(), 0, 'a clean stop')
    d.start()
    check_all(d, objs)
    for run in (s['run'], lone['run']):
        got = d.get('%s/benchmarkruns/%s' % (G, run['metadata']['name']))
        eq(got.status, 200, 'GET ' + run['metadata']['name'])
        refs = got.json()['status']['references']
        eq(refs['protocol']['resolved'], True,
           'the protocol resolved for ' + run['metadata']['name'])
    check(d.sanitizer_report() is None, 'no sanitizer report')
    d.stop()
    # fsck (over etcd too, given the daemon's store options) finds nothing
    # wrong: runs, protocols and the one environment.
    p = subprocess.run(kitest.command(d.data_dir, 'fsck'),
                       capture_output=True, text=True, timeout=120)
    eq(p.returncode, 0, 'fsck of the store: %s %s' % (p.stdout, p.stderr))
    check(' 0 problems' in p.stdout and '6 objects checked' in p.stdout,
          'fsck: ' + p.stdout)


@test
def damaged_object_is_refused_and_fsck_reports_it():
    kitest.lmdb_only('a byte flipped in data.mdb')
    d = Daemon().start()
    dg = {}
    for name, reps in (('damaged', 1117), ('intact', 1118)):
        r = d.post(G + '/benchmarkprotocols', proto(name, reps))
        eq(r.status, 201, 'POST ' + name)
        dg[name] = r.json()['status']['digest']
    eq(d.stop(), 0, 'a clean stop')
    path = os.path.join(d.data_dir, 'data.mdb')
    with open(path, 'r+b') as f:
        data = bytearray(f.read())
        needle = b'"repetitions":1117'
        at, n = data.find(needle), 0
        while at >= 0:
            data[at + len(needle) - 1] ^= 0x02   # 1117 -> 1115
            n += 1
            at = data.find(needle, at + 1)
        check(n > 0, 'the spec is in data.mdb')
        f.seek(0)
        f.write(data)
    d.start()
    for how in ('/objects/' + dg['damaged'], '/benchmarkprotocols/damaged'):
        r = d.get(G + how)
        st = kitest.status_of(r, 500)
        check('damaged' in st['message'], 'the Status says why: %r' %
              st['message'])
        check('immutable' not in (r.headers.get('Cache-Control') or ''),
              'no immutable caching of a failure')
    by_digest(d, dg['intact'], 'intact')
    check('damaged' in d.stderr(), 'the log says the data is damaged')
    d.stop()
    p = subprocess.run(kitest.command(d.data_dir, 'fsck'), capture_output=True, text=True, timeout=120)
    eq(p.returncode, 1, 'fsck of the damaged store: %s %s' % (p.stdout,
                                                            p.stderr))
    check('damaged' in p.stdout and '1 problems' in p.stdout,
          'fsck names the problem: ' + p.stdout)


@test
def full_disk_is_507_and_logged():
    kitest.lmdb_only('a full tmpfs under the data directory')
    mnt = kitest.tempdir('kitest-tmpfs-')
    p = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=4m', 'tmpfs',
                        mnt], capture_output=True, text=True)
    if p.returncode != 0:
        print('  skipped: cannot mount a tmpfs here (%s)' %
              (p.stderr.strip() or 'not root'))
        return
    try:
        d = Daemon(data_dir=os.path.join(mnt, 'data'),
                   args=['--map-size', '64M']).start()
        last = None
        for i in range(20000):
            last = d.post(G + '/benchmarkprotocols',
                          proto('fill-%d' % i, i + 1))
            if last.status != 201:
                break
        check(last is not None and last.status != 201,
              'the disk never filled')
        kitest.status_of(last, 507, 'InsufficientStorage')
        check(i > 5, 'writes went in before the disk filled (%d)' % i)
        eq(d.get(G + '/benchmarkprotocols/fill-0').status, 200,
           'reads go on')
        log = d.stderr()
        check('no space left on the device' in log,
              'the log says the disk is full:\n' + d.tail())
        d.stop()
    finally:
        subprocess.run(['umount', mnt])


if __name__ == '__main__':
    sys.exit(kitest.run_all())
