#!/usr/bin/env python3
"""test_cluster — a three-member etcd cluster on loopback (static
--initial-cluster, each member stopped by its PID) under two kernelindexd
replicas whose --etcd-endpoints list all three:
  - what is written through one replica is read and watched through the
    other;
  - with one member killed (SIGKILL, the one the replicas talk to first,
    then the leader) the index stays writable, no write is refused with
    other than 503 (with Retry-After) during the election, and the
    member rejoins;
  - a replica SIGKILLed while concurrent writers post to it loses nothing
    it acknowledged: every 201/200 in the writers' log is read back through
    the other replica;
  - after stopping everything (replicas and all members) and starting it
    again, every acknowledged object is there.
Prints what it measured (writes refused during the member loss, the time
until the first write after it, the member's time to rejoin). Skipped
(77) when etcd is not installed."""
import http.client
import json
import os
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
sys.path.insert(0, HERE)
os.environ.pop('KI_ETCD_ENDPOINTS', None)  # the tests choose the store
import etcdcluster  # noqa: E402
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402

ETCD = None
REPLICAS = []          # the two daemons
ACKED = {}             # name -> repetitions, every acknowledged create
_lock = threading.Lock()
_next = [1000]
REFUSALS = []          # the first bytes of each 5xx answer
NO_RETRY_AFTER = []    # 503 answers without a Retry-After header


def replica_args():
    return ['--store', 'etcd', '--etcd-endpoints', ETCD.endpoints(),
            '--etcd-prefix', '/cluster/']


def start_replicas():
    REPLICAS[:] = [kitest.Daemon(args=replica_args()).start()
                   for _ in range(2)]


def proto(name, reps):
    return {'apiVersion': 'kernelindex.dev/v1alpha1',
            'kind': 'BenchmarkProtocol', 'metadata': {'name': name},
            'spec': {'measurement': {'timer': 'cuda_events',
                                     'primaryStatistic': 'median',
                                     'repetitions': reps}}}


def unique_reps():
    with _lock:
        _next[0] += 1
        return _next[0]


def create(d, name, timeout=30):
    """POSTs a new protocol: its status (None when no answer came), and
    the object logged as acknowledged on 201 or 200."""
    reps = unique_reps()
    try:
        r = d.post(G + '/benchmarkprotocols', proto(name, reps),
                   timeout=timeout)
    except OSError:
        return None
    if r.status in (200, 201):
        with _lock:
            ACKED[name] = reps
    elif r.status >= 500:
        REFUSALS.append(r.body[:200])
        if r.status == 503 and not r.headers.get('Retry-After'):
            NO_RETRY_AFTER.append(r.body[:200])
    return r.status


def check_acked(d, what):
    """Every acknowledged object, read through d, with its spec."""
    items = {}
    cont = ''
    while True:
        r = d.get(G + '/benchmarkprotocols?limit=500' + cont)
        eq(r.status, 200, '%s: list' % what)
        body = json.loads(r.body)
        for i in body['items']:
            items[i['metadata']['name']] = \
                i['spec']['measurement']['repetitions']
        if not body['metadata'].get('continue'):
            break
        cont = '&continue=' + body['metadata']['continue']
    lost = [n for n in ACKED if items.get(n) != ACKED[n]]
    check(not lost, '%s: %d of %d acknowledged writes missing, e.g. %r' %
          (what, len(lost), len(ACKED), lost[:5]))
    return len(items)


@test
def writes_through_one_replica_are_read_and_watched_through_the_other():
    a, b = REPLICAS
    rv = json.loads(b.get(G + '/benchmarkprotocols').body)['metadata'][
        'resourceVersion']
    c = http.client.HTTPConnection('127.0.0.1', b.port, timeout=30)
    c.request('GET', G + '/benchmarkprotocols?watch=true&resourceVersion=%s'
              % rv)
    resp = c.getresponse()
    eq(resp.status, 200, 'watch through b')
    events = []

    def read():
        try:
            while len(events) < 3:
                line = resp.readline()
                if not line:
                    break
                events.append(json.loads(line))
        except (OSError, ValueError):
            pass

    t = threading.Thread(target=read, daemon=True)
    t.start()
    time.sleep(0.3)
    for n in ('x1', 'x2', 'x3'):
        eq(create(a, n), 201, 'create %s through a' % n)
    for n in ('x1', 'x2', 'x3'):
        r = b.get(G + '/benchmarkprotocols/' + n)
        eq(r.status, 200, 'get %s through b' % n)
        eq(json.loads(r.body)['spec']['measurement']['repetitions'],
           ACKED[n], 'spec of %s through b' % n)
    t.join(15)
    eq([(e['type'], e['object']['metadata']['name']) for e in events],
       [('ADDED', 'x1'), ('ADDED', 'x2'), ('ADDED', 'x3')],
       'the watch on b streams the writes made through a')
    c.close()


def member_loss(m, what, tag):
    """SIGKILLs member m, writes 40 objects through both replicas in turn
    (each refusal retried), checks them through b, restarts m."""
    a, b = REPLICAS
    ETCD.stop(m, signal.SIGKILL)
    t0 = time.time()
    refused = []
    first = None
    i = 0
    while time.time() - t0 < 60 and i < 40:
        st = create(a if i % 2 == 0 else b, '%s-%d' % (tag, i), timeout=20)
        if st in (200, 201):
            if first is None:
                first = time.time() - t0
            i += 1
        else:
            refused.append(st)
            time.sleep(0.1)
    check(first is not None, 'no write acknowledged with %s down' % what)
    # An election or a lost member makes the store unavailable for a
    # moment: 503 (with Retry-After), never an internal error.
    check(not any(s is not None and s >= 500 and s != 503
                  for s in refused),
          'with %s down a write was refused with other than 503: %r '
          '(the last refusal: %r)'
          % (what, refused, REFUSALS[-1] if REFUSALS else None))
    check(not NO_RETRY_AFTER, '503 without Retry-After: %r'
          % NO_RETRY_AFTER[:1])
    eq(i, 40, 'writes acknowledged with %s down' % what)
    check_acked(b, 'with %s down' % what)
    print('      %s (m%d) killed: first write acknowledged after %.2f s, '
          'refused before it: %r; 40 writes in %.2f s'
          % (what, m, first, refused, time.time() - t0))
    t1 = time.time()
    if REFUSALS:
        print('      the last refusal: %r' % REFUSALS[-1])
    ETCD.start(m)
    ETCD.wait_healthy(60)
    print('      m%d restarted: healthy again after %.2f s'
          % (m, time.time() - t1))


@test
def with_one_member_killed_the_index_stays_writable():
    # The member the replicas talk to first, then whichever leads.
    member_loss(0, 'the first endpoint', 'down')
    lead = ETCD.leader()
    check(lead is not None, 'a leader after m0 rejoined')
    member_loss(lead, 'the leader', 'nolead')
    eq(create(REPLICAS[0], 'after-rejoin'), 201,
       'write after the members rejoined')


@test
def a_replica_killed_mid_write_loses_nothing_acknowledged():
    a, b = REPLICAS
    stop = threading.Event()
    counts = {'ack': 0, 'other': 0}

    def writer(k):
        j = 0
        while not stop.is_set():
            st = create(a, 'w%d-%d' % (k, j), timeout=10)
            with _lock:
                counts['ack' if st in (200, 201) else 'other'] += 1
            if st is None:
                return      # the replica is gone
            j += 1

    ts = [threading.Thread(target=writer, args=(k,)) for k in range(6)]
    for t in ts:
        t.start()
    time.sleep(2.0)
    a.kill()                # SIGKILL, writes in flight
    stop.set()
    for t in ts:
        t.join(30)
    check(counts['ack'] > 10, 'writes acknowledged before the kill: %r' %
          counts)
    n = check_acked(b, 'through the other replica after the kill')
    print('      replica SIGKILLed mid-write: %d acknowledged, %d without '
          'an answer or refused; %d protocols read back through the other'
          % (counts['ack'], counts['other'], n))
    REPLICAS[0] = kitest.Daemon(args=replica_args()).start()
    check_acked(REPLICAS[0], 'through the restarted replica')


@test
def with_every_member_stopped_a_write_is_answered_503_with_retry_after():
    a = REPLICAS[1]
    ETCD.stop_all()
    t0 = time.time()
    try:
        r = a.post(G + '/benchmarkprotocols',
                   proto('nomember', unique_reps()), timeout=60)
        took = time.time() - t0
        eq(r.status, 503, 'a write with no member up: %r' % r.body[:200])
        check(r.headers.get('Retry-After') == '1',
              'Retry-After on the 503: %r' % r.headers.get('Retry-After'))
        print('      every member stopped: a write answered %d after '
              '%.2f s' % (r.status, took))
    finally:
        for i in range(3):
            ETCD.start(i)
        ETCD.wait_healthy(60)
    eq(create(a, 'after-outage'), 201, 'a write once the members are back')


@test
def stopping_and_restarting_everything_finds_all_data():
    for d in REPLICAS:
        eq(d.stop(), 0, 'replica stopped')
    ETCD.stop_all()
    t0 = time.time()
    for i in range(3):
        ETCD.start(i)
    ETCD.wait_healthy(60)
    start_replicas()
    print('      cluster and replicas restarted in %.2f s'
          % (time.time() - t0))
    for d in REPLICAS:
        check_acked(d, 'after the restart')
    eq(create(REPLICAS[1], 'after-restart'), 201, 'a write after it')
    check_acked(REPLICAS[0], 'the last write through the other replica')


if __name__ == '__main__':
    etcdcluster.skip_without_etcd()
    ETCD = etcdcluster.Cluster(3).start_all()
    try:
        start_replicas()
        rc = kitest.run_all()
    finally:
        kitest.stop_all()
        ETCD.remove()
    sys.exit(rc)
