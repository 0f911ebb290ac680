#!/usr/bin/env python3
"""test_replicas — two kernelindexd over one etcd (--store etcd, the same
etcd-prefix): what one daemon accepts, the other serves at once (get and
list), a watch on one daemon streams the writes made through the other,
and concurrent writes of one name through both daemons leave one object
(each answer 201, 200, 409 or 422 — never a lost write). Needs
KI_ETCD_ENDPOINTS (tests/etcd/e2e.sh sets it); skipped (77) without."""
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'e2e'))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402


def proto(name, reps):
    return {'apiVersion': 'kernelindex.dev/v1alpha1',
            'kind': 'BenchmarkProtocol', 'metadata': {'name': name},
            'spec': {'measurement': {'timer': 'cuda_events',
                                     'primaryStatistic': 'median',
                                     'repetitions': reps}}}


def pair():
    data = kitest.tempdir('kitest-replicas-')
    a = kitest.Daemon(data_dir=data, sync=False).start()
    b = kitest.Daemon(data_dir=data, sync=False).start()
    return a, b


@test
def a_write_through_one_daemon_is_served_by_the_other():
    a, b = pair()
    eq(a.post(G + '/benchmarkprotocols', proto('p1', 10)).status, 201, 'create')
    r = b.get(G + '/benchmarkprotocols/p1')
    eq(r.status, 200, 'get through the other daemon')
    eq(json.loads(r.body)['spec']['measurement']['repetitions'], 10, 'spec')
    r = b.get(G + '/benchmarkprotocols')
    eq([i['metadata']['name'] for i in json.loads(r.body)['items']], ['p1'],
       'list through the other daemon')
    eq(b.delete(G + '/benchmarkprotocols/p1').status, 200, 'delete through b')
    eq(a.get(G + '/benchmarkprotocols/p1').status, 404, 'gone through a')


@test
def a_watch_on_one_daemon_streams_the_others_writes():
    a, b = pair()
    eq(a.post(G + '/benchmarkprotocols', proto('w0', 100)).status, 201, 'w0')
    rv = json.loads(b.get(G + '/benchmarkprotocols').body)['metadata'][
        'resourceVersion']
    c = http.client.HTTPConnection('127.0.0.1', b.port, timeout=20)
    c.request('GET', G + '/benchmarkprotocols?watch=true&resourceVersion=%s'
              % rv)
    resp = c.getresponse()
    eq(resp.status, 200, 'watch')
    events = []

    def read():
        try:
            while len(events) < 3:
                line = resp.readline()
                if not line:
                    break
                events.append(json.loads(line))
        except Exception:
            pass

    t = threading.Thread(target=read, daemon=True)
    t.start()
    time.sleep(0.3)
    for i in (1, 2):
        eq(a.post(G + '/benchmarkprotocols', proto('w%d' % i, i)).status, 201,
           'w%d through a' % i)
    eq(a.delete(G + '/benchmarkprotocols/w1').status, 200, 'delete w1')
    t.join(10)
    eq([(e['type'], e['object']['metadata']['name']) for e in events],
       [('ADDED', 'w1'), ('ADDED', 'w2'), ('DELETED', 'w1')],
       'events of the other daemon, in order')
    c.close()


@test
def concurrent_writes_through_both_daemons_lose_nothing():
    a, b = pair()
    answers = []

    def post(d, reps):
        r = d.post(G + '/benchmarkprotocols', proto('same', reps))
        answers.append(r.status)

    ts = [threading.Thread(target=post, args=(d, 5 + i))
          for i, d in enumerate([a, b, a, b, a, b])]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    check(all(s in (200, 201, 409, 422) for s in answers),
          'answers: %r' % answers)
    eq(answers.count(201), 1, 'one create')
    r = b.get(G + '/benchmarkprotocols')
    items = json.loads(r.body)['items']
    eq([i['metadata']['name'] for i in items], ['same'], 'one object')


def runs_ndjson(prefix, n):
    """n seed bundles as NDJSON lines, each run named PREFIX-i (the
    protocol and environment shared by all)."""
    base = kitest.seed()
    name = base['run']['metadata']['name']
    xid = base['run']['spec']['sourceNative']['externalId']
    text = json.dumps(base, separators=(',', ':'))
    text = text.replace('"%s"' % name, '"@N@"').replace('"%s"' % xid,
                                                        '"x/@N@"')
    return ''.join(text.replace('@N@', '%s-%d' % (prefix, i)) + '\n'
                   for i in range(n))


def digests_of(upload_answer):
    """Every sha256:... string of an answer."""
    out = []

    def walk(o):
        if isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
        elif isinstance(o, str) and o.startswith('sha256:') and len(o) == 71:
            out.append(o)
    walk(upload_answer)
    return sorted(set(out))


@test
def what_one_daemon_writes_the_other_reads_at_once_by_name_and_digest():
    """Each write through a is read through b at once (its cache may not
    have it yet: a lookup that misses asks etcd before answering 404)."""
    a, b = pair()
    # A GET through b right after a's 201 finds b's cache behind a few
    # times in a hundred: enough rounds that a missing confirmation fails.
    for i in range(100):
        eq(a.post(G + '/benchmarkprotocols', proto('now%d' % i, i + 1)).status,
           201, 'create now%d through a' % i)
        r = b.get(G + '/benchmarkprotocols/now%d' % i)
        eq(r.status, 200, 'now%d through b at once' % i)
        eq(r.json()['spec']['measurement']['repetitions'], i + 1, 'its spec')
    bundle = kitest.seed()
    r = a.post(G + '/benchmarkruns', bundle)
    eq(r.status, 201, 'the seed bundle through a')
    ds = digests_of(r.json())
    check(len(ds) >= 3, 'the answer names the digests: %r' % ds)
    for d in ds:
        eq(b.get(G + '/objects/' + d).status, 200, '%s through b' % d)
    eq(b.get(G + '/benchmarkprotocols/nobody').status, 404, 'absent: 404')


@test
def a_list_with_the_resource_version_of_a_write_holds_it_on_the_other():
    a, b = pair()
    for i in range(10):
        r = a.post(G + '/benchmarkprotocols', proto('lv%d' % i, i + 1))
        eq(r.status, 201, 'create lv%d' % i)
        rv = r.json()['metadata']['resourceVersion']
        r = b.get(G + '/benchmarkprotocols?resourceVersion=%s&'
                  'resourceVersionMatch=NotOlderThan' % rv)
        eq(r.status, 200, 'list through b at %s' % rv)
        check(int(r.json()['metadata']['resourceVersion']) >= int(rv),
              'the list is at least at %s' % rv)
        names = [x['metadata']['name'] for x in r.json()['items']]
        check('lv%d' % i in names, 'lv%d listed through b: %r' % (i, names))
        # Without a resourceVersion: the newest state, also at once.
        r = b.get(G + '/benchmarkprotocols')
        check('lv%d' % i in [x['metadata']['name'] for x in
                             r.json()['items']], 'lv%d in a plain list' % i)



def label(d, name, i):
    """Sets protocol name's label round to i through daemon d."""
    return d.request('PATCH', G + '/benchmarkprotocols/' + name,
                     body=json.dumps({'metadata': {'labels': {
                         'round': str(i)}}}),
                     content_type='application/merge-patch+json')


@test
def an_update_through_one_daemon_is_read_through_the_other_at_once():
    """A label patch acknowledged by a is what a GET through b answers
    next, as kube-apiserver answers a GET without a resourceVersion from
    the newest state; only resourceVersion=0 may be served from a cache
    that is behind. Enough rounds that a read the other daemon's watch
    cache serves before it applied the patch shows (15 of 200 did)."""
    a, b = pair()
    eq(a.post(G + '/benchmarkprotocols', proto('up', 3)).status, 201, 'create')
    for i in range(200):
        eq(label(a, 'up', i).status, 200, 'patch %d through a' % i)
        r = b.get(G + '/benchmarkprotocols/up')
        eq(r.json()['metadata'].get('labels', {}).get('round'), str(i),
           'patch %d read through b at once' % i)
    eq(b.delete(G + '/benchmarkprotocols/up').status, 200, 'delete through b')
    eq(a.get(G + '/benchmarkprotocols/up').status, 404, 'gone through a')


@test
def a_daemon_reads_its_own_label_patch_at_once():
    a, b = pair()
    eq(a.post(G + '/benchmarkprotocols', proto('lp', 3)).status, 201, 'create')
    for i in range(10):
        eq(label(a, 'lp', i).status, 200, 'patch %d' % i)
        r = a.get(G + '/benchmarkprotocols/lp')
        eq(r.json()['metadata'].get('labels', {}).get('round'), str(i),
           'its own patch %d, read back at once' % i)
        r = a.get(G + '/benchmarkprotocols?labelSelector=round%%3D%d' % i)
        eq([x['metadata']['name'] for x in r.json()['items']], ['lp'],
           'listed by its new label at once')
        r = b.get(G + '/benchmarkprotocols?labelSelector=round%%3D%d' % i)
        eq([x['metadata']['name'] for x in r.json()['items']], ['lp'],
           'and through the other daemon')


@test
def bulk_uploads_through_both_daemons_at_once_are_never_409():
    """NDJSON (streamed) and List uploads through both daemons at once: a
    batch whose commit finds another daemon's first runs again (every
    line is new: each upload is 201, everything stored)."""
    a, b = pair()
    answers = []

    def upload(d, tag):
        for k in range(4):
            r = d.post(G + '/benchmarkruns', runs_ndjson('%s%d' % (tag, k), 8),
                       content_type='application/x-ndjson')
            answers.append((tag, k, r.status, r.body[:200]))

    def upload_list(d, tag, base):
        for k in range(4):
            items = [proto('%s%d-%d' % (tag, k, i), base + 8 * k + i)
                     for i in range(8)]
            r = d.post(G + '/benchmarkprotocols', {
                'apiVersion': 'v1', 'kind': 'List', 'items': items})
            answers.append((tag, k, r.status, r.body[:200]))

    ts = [threading.Thread(target=upload, args=(d, t))
          for d, t in ((a, 'ua'), (b, 'ub'), (a, 'uc'), (b, 'ud'))]
    ts += [threading.Thread(target=upload_list, args=(d, t, base))
           for d, t, base in ((a, 'qa', 1000), (b, 'qb', 2000))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    eq(sorted(x[2] for x in answers), [201] * 24, 'answers: %r' %
       [x for x in answers if x[2] != 201])
    r = b.get(G + '/benchmarkruns')
    eq(len(r.json()['items']), 16 * 8, 'every run stored')
    r = a.get(G + '/benchmarkprotocols')
    eq(len([x for x in r.json()['items']
            if x['metadata']['name'][0] == 'q']), 8 * 8,
       'every protocol of the Lists stored')


@test
def a_watch_through_the_other_daemon_loses_nothing_when_etcd_restarts():
    """A daemon's own etcd (start.sh) is SIGKILLed and started again over
    its data: the watch cache takes its stream up again from the next
    revision, and a watch through the other daemon streams every write
    made before and after, in order. A resume from a resourceVersion
    older than the history kept is 410."""
    here = os.path.dirname(os.path.abspath(__file__))
    line = subprocess.run([os.path.join(here, 'start.sh')], check=True,
                          capture_output=True, text=True).stdout.split()
    endpoint, pid, tmp = line[0], int(line[1]), line[2]
    with open('/proc/%d/cmdline' % pid, 'rb') as f:
        cmd = [x.decode() for x in f.read().split(b'\0') if x]
    procs = []
    try:
        env = {'KI_ETCD_ENDPOINTS': endpoint}
        data = kitest.tempdir('kitest-replicas-')
        old = os.environ.get('KI_ETCD_ENDPOINTS')
        os.environ['KI_ETCD_ENDPOINTS'] = endpoint
        try:
            a = kitest.Daemon(data_dir=data, sync=False,
                              args=['--history', '100'], env=env).start()
            b = kitest.Daemon(data_dir=data, sync=False,
                              args=['--history', '100'], env=env).start()
        finally:
            os.environ['KI_ETCD_ENDPOINTS'] = old
        eq(a.post(G + '/benchmarkprotocols', proto('e0', 50)).status, 201,
           'e0')
        rv = b.list_rv('benchmarkprotocols')
        c = http.client.HTTPConnection('127.0.0.1', b.port, timeout=60)
        c.request('GET', G + '/benchmarkprotocols?watch=true&'
                  'resourceVersion=%s' % rv)
        resp = c.getresponse()
        eq(resp.status, 200, 'watch through b')
        events = []

        def read():
            try:
                while len(events) < 6:
                    ln = resp.readline()
                    if not ln:
                        break
                    ev = json.loads(ln)
                    if ev['type'] != 'BOOKMARK':
                        events.append(ev)
            except Exception:
                pass

        t = threading.Thread(target=read, daemon=True)
        t.start()
        for i in (1, 2, 3):
            eq(a.post(G + '/benchmarkprotocols', proto('e%d' % i, 50 + i)).status,
               201, 'e%d before the restart' % i)
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        procs.append(p)
        for i in (4, 5, 6):
            st = None
            for _ in range(100):
                st = a.post(G + '/benchmarkprotocols',
                            proto('e%d' % i, 50 + i))
                if st.status != 503:
                    break
                time.sleep(0.1)
            eq(st.status, 201, 'e%d after the restart' % i)
        t.join(20)
        eq([(e['type'], e['object']['metadata']['name']) for e in events],
           [('ADDED', 'e%d' % i) for i in range(1, 7)],
           'every event through b, in order')
        c.close()
        # 120 more: the history (100) no longer holds rv.
        body = ''.join(json.dumps(proto('h%d' % i, 1000 + i)) + '\n'
                       for i in range(120))
        eq(a.post(G + '/benchmarkprotocols', body,
                  content_type='application/x-ndjson').status, 201, 'h*')
        r = b.get(G + '/benchmarkprotocols?watch=true&resourceVersion=%s' % rv,
                  timeout=20)
        check(r.status == 410 or b'"code":410' in r.body,
              'a resume from before the history: 410 (%d %r)' %
              (r.status, r.body[:200]))
        a.stop()
        b.stop()
    finally:
        for p in procs:
            p.kill()
            p.wait()
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    if not os.environ.get('KI_ETCD_ENDPOINTS'):
        print('skipped: KI_ETCD_ENDPOINTS is not set')
        sys.exit(77)
    sys.exit(kitest.run_all())
