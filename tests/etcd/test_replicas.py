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


if __name__ == '__main__':
    if not os.environ.get('KI_ETCD_ENDPOINTS'):
        print('skipped: KI_ETCD_ENDPOINTS is not set')
        sys.exit(77)
    sys.exit(kitest.run_all())
