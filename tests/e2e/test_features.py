#!/usr/bin/env python3
"""test_features — watch streams, facets, derived labels and late-arriving
references, plausibility, the Liger importer through the CLI, and the
Verification controller with the reference program (CPU backend).

Environment: KI_DAEMON, KI_DATA_DIR (see kitest), KI_CLI (the kernelindex
binary) and KI_REF (the kernelindex-ref binary)."""
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.dirname(kitest.daemon_path())
CLI = os.environ.get('KI_CLI') or os.path.join(BUILD, 'kernelindex')
REF = os.environ.get('KI_REF') or os.path.join(BUILD, 'kernelindex-ref')
CSV = os.path.join(kitest.DATA, 'liger', 'all_benchmark_data.csv')
SEED = kitest.seed()
SEED_RUN = SEED['run']['metadata']['name']


class Watch:
    """A raw watch stream read on a thread: events as parsed JSON."""

    def __init__(self, d, query):
        self.events = []
        self.conn = http.client.HTTPConnection('127.0.0.1', d.port, timeout=30)
        self.conn.request('GET', G + '/benchmarkprotocols?' + query)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        try:
            while True:
                line = self.resp.readline()
                if not line:
                    break
                self.events.append(json.loads(line))
        except Exception:  # the stream is closed under the reader: done
            pass

    def wait(self, n, timeout=10):
        end = time.time() + timeout
        while len(self.events) < n and time.time() < end:
            time.sleep(0.05)
        return self.events

    def close(self):
        try:
            self.conn.sock.shutdown(2)
        except OSError:
            pass
        self.conn.close()


def proto(name, reps, labels=None):
    m = {'name': name}
    if labels:
        m['labels'] = labels
    return {'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'BenchmarkProtocol',
            'metadata': m, 'spec': {'measurement': {
                'timer': 'cuda_events', 'primaryStatistic': 'median',
                'repetitions': reps}}}


@test
def watch_replays_then_streams_in_order_with_selectors():
    d = kitest.Daemon(sync=False).start()
    eq(d.post(G + '/benchmarkprotocols', proto('w0', 100)).status, 201, 'w0')
    rv = d.list_rv('benchmarkprotocols')
    w = Watch(d, 'watch=true&resourceVersion=%s&labelSelector=team%%3Da' % rv)
    wall = Watch(d, 'watch=true')
    eq(w.status, 200, 'watch status')
    for i in range(1, 6):
        eq(d.post(G + '/benchmarkprotocols',
                  proto('w%d' % i, i, {'team': 'a' if i % 2 else 'b'})).status,
           201, 'w%d' % i)
    eq(d.delete(G + '/benchmarkprotocols/w1').status, 200, 'delete w1')
    ev = w.wait(4)
    eq([(e['type'], e['object']['metadata']['name']) for e in ev],
       [('ADDED', 'w1'), ('ADDED', 'w3'), ('ADDED', 'w5'), ('DELETED', 'w1')],
       'selected events in order')
    rvs = [int(e['object']['metadata']['resourceVersion']) for e in ev]
    eq(rvs, sorted(rvs), 'resourceVersions increase')
    allev = wall.wait(7)
    eq([e['type'] for e in allev][:1], ['ADDED'], 'initial ADDED for w0')
    eq(len(allev), 7, 'w0 + 5 added + 1 deleted')
    w.close()
    wall.close()
    # A Table watch: one-row Tables.
    c = http.client.HTTPConnection('127.0.0.1', d.port, timeout=10)
    c.request('GET', G + '/benchmarkprotocols?watch=true&resourceVersion=0',
              headers={'Accept': 'application/json;as=Table;v=v1;'
                                 'g=meta.k8s.io,application/json'})
    r = c.getresponse()
    first = json.loads(r.readline())
    eq(first['object']['kind'], 'Table', 'Table event')
    eq(len(first['object']['rows']), 1, 'one row')
    c.close()


@test
def watch_from_a_trimmed_resource_version_is_410():
    d = kitest.Daemon(sync=False, args=['--history', '100']).start()
    for i in range(130):
        eq(d.post(G + '/benchmarkprotocols', proto('h%d' % i, i)).status, 201,
           'h%d' % i)
    w = Watch(d, 'watch=true&resourceVersion=5')
    ev = w.wait(1)
    eq(ev[0]['type'], 'ERROR', 'an ERROR event')
    eq((ev[0]['object']['code'], ev[0]['object']['reason']), (410, 'Expired'),
       'the Status')
    w.close()
    # Within the history: replayed.
    w = Watch(d, 'watch=true&resourceVersion=120')
    eq(len(w.wait(10)), 10, 'events 121..130')
    w.close()
    # timeoutSeconds ends the stream by itself; bookmarks only when asked.
    t0 = time.time()
    r = d.get(G + '/benchmarkprotocols?watch=true&resourceVersion=130'
              '&timeoutSeconds=1')
    check(time.time() - t0 < 8, 'the stream ended after its timeout')
    eq(r.status, 200, 'status')
    check(b'BOOKMARK' not in r.body, 'no bookmark unasked')


def ndjson_protos(names_reps, team=None):
    return ''.join(json.dumps(proto(n, r, team and {'team': team(i)}))
                   + '\n' for i, (n, r) in enumerate(names_reps)).encode()


def post_ndjson(d, body):
    r = d.post(G + '/benchmarkprotocols', body,
               content_type='application/x-ndjson')
    eq(r.status, 201, 'NDJSON upload (%r)' % r)
    eq(r.json()['summary']['failed'], 0, 'no line failed')


def stalled_watch(d, query):
    """A watch whose reader takes nothing until asked: a tiny receive
    buffer, so the server's side fills up at once."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(60)
    s.connect(('127.0.0.1', d.port))
    c = http.client.HTTPConnection('127.0.0.1', d.port, timeout=60)
    c.sock = s
    c.request('GET', G + '/benchmarkprotocols?' + query)
    r = c.getresponse()
    eq(r.status, 200, 'stalled watch status')
    return c, r


def events_past_socket_buffers(size=400):
    """How many events of about size bytes overflow what the kernel may
    buffer in the server's socket (its largest send buffer), twice over: a
    watcher that stops reading is then left behind by that many."""
    try:
        with open('/proc/sys/net/ipv4/tcp_wmem') as f:
            wmem = int(f.read().split()[2])
    except (OSError, ValueError, IndexError):
        wmem = 4 << 20
    return max(6000, 2 * wmem // size // 1000 * 1000)


def post_past_socket_buffers(d, prefix):
    """Posts protocols prefix0, prefix1, ... in uploads of 1,000 until they
    are events_past_socket_buffers() events; returns that count."""
    n = events_past_socket_buffers()
    for k in range(0, n, 1000):
        post_ndjson(d, ndjson_protos([('%s%d' % (prefix, i), 10 + i)
                                      for i in range(k, k + 1000)]))
    return n


def event_key(e):
    """(type, name, resourceVersion) of a plain or a one-row Table event."""
    o = e['object']
    if o.get('kind') == 'Table':
        return (e['type'], o['rows'][0]['cells'][0],
                int(o['metadata']['resourceVersion']))
    return (e['type'], o['metadata']['name'],
            int(o['metadata']['resourceVersion']))


@test
def many_watchers_each_get_exactly_their_events_in_order():
    """Watchers of every representation and selector share the hub: each
    gets exactly the events its selectors pick, in order, however the
    commits are batched, and Tables carry their columns only first."""
    d = kitest.Daemon(sync=False).start()
    eq(d.post(G + '/benchmarkprotocols',
              proto('f0', 1000, {'team': 'a'})).status, 201, 'f0')
    rv0 = int(d.list_rv('benchmarkprotocols'))
    table = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json'
    specs = []  # (query, Accept, name filter, from the initial list)
    for sel, pick in [('', lambda n, t: True),
                      ('&labelSelector=team%3Da', lambda n, t: t == 'a'),
                      ('&labelSelector=team%21%3Da', lambda n, t: t != 'a'),
                      ('&fieldSelector=metadata.name%3Df7',
                       lambda n, t: n == 'f7')]:
        for accept in [None, table + '', table + '&includeObject=None',
                       table + '&includeObject=Object']:
            inc = ''
            if accept and '&' in accept:
                accept, inc = accept.split('&')
                inc = '&' + inc
            for _ in range(3):
                specs.append(('watch=true&resourceVersion=%d%s%s' %
                              (rv0, sel, inc), accept, pick, inc))
    # Without a resourceVersion: the current objects first, then the rest.
    specs.append(('watch=true', None, lambda n, t: True, 'initial'))
    watches = []
    for q, accept, pick, inc in specs:
        c = http.client.HTTPConnection('127.0.0.1', d.port, timeout=60)
        c.request('GET', G + '/benchmarkprotocols?' + q,
                  headers={'Accept': accept} if accept else {})
        r = c.getresponse()
        eq(r.status, 200, 'watch %s' % q)
        w = {'c': c, 'r': r, 'ev': [], 'pick': pick, 'inc': inc,
             'table': accept is not None, 'q': q}
        w['t'] = threading.Thread(target=lambda w=w: read_lines(w),
                                  daemon=True)
        w['t'].start()
        watches.append(w)
    time.sleep(0.3)
    # Writes from several threads, so that commits come in batches of
    # varying size: ADDs by NDJSON chunk and one by one, and deletes.
    truth = {}  # rv -> (type, name, team)
    errors = []

    def writer(k):
        try:
            if k == 0:
                names = [('f%d' % i, 1000 + i) for i in range(1, 201)]
                post_ndjson(d, ndjson_protos(
                    names, team=lambda i: 'ab'[(i + 1) % 2]))
            else:
                for i in range(k * 1000, k * 1000 + 40):
                    r = d.post(G + '/benchmarkprotocols',
                               proto('g%d' % i, 5000 + i,
                                     {'team': 'abc'[i % 3]}))
                    if r.status != 201:
                        errors.append('g%d: %r' % (i, r))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    ts = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(not errors, 'writes: %s' % errors)
    # The ADDED rv of each object is its resourceVersion (none changed).
    r = d.get(G + '/benchmarkprotocols?limit=1000')
    items = r.json()['items']
    for o in items:
        m = o['metadata']
        truth[int(m['resourceVersion'])] = ('ADDED', m['name'],
                                            m['labels'].get('team'))
    for name in ['f3', 'f7', 'g1001', 'g2002', 'g3000']:
        r = d.delete(G + '/benchmarkprotocols/' + name)
        eq(r.status, 200, 'delete ' + name)
        m = r.json()['metadata']
        truth[int(m['resourceVersion'])] = ('DELETED', name,
                                            m['labels'].get('team'))
    eq(len(truth), 1 + 200 + 120 + 5, 'events written')
    for w in watches:
        want = [(ty, n, rv) for rv, (ty, n, t) in sorted(truth.items())
                if rv > rv0 and w['pick'](n, t)]
        if w['inc'] == 'initial':
            want = [('ADDED', 'f0', rv0)] + want
        end = time.time() + 30
        while time.time() < end and len(w['ev']) < len(want):
            time.sleep(0.05)
        got = [event_key(e) for e in w['ev']]
        eq(got, want, 'the events of %s (%s)' %
           (w['q'], 'Table' if w['table'] else 'JSON'))
        if w['table'] and got:
            defs = [len(e['object']['columnDefinitions']) for e in w['ev']]
            check(defs[0] > 0 and not any(defs[1:]),
                  'columns only in the first Table: %r' % defs[:5])
            for e in w['ev']:
                obj = e['object']['rows'][0].get('object')
                if w['inc'] == '&includeObject=None':
                    check(obj is None, 'no object with None')
                elif w['inc'] == '&includeObject=Object':
                    eq(obj['metadata']['name'], e['object']['rows'][0]
                       ['cells'][0], 'the whole object')
                    check('spec' in obj, 'the object has its spec')
                else:
                    eq(obj['kind'], 'PartialObjectMetadata', 'metadata')
    for w in watches:
        w['c'].sock.shutdown(socket.SHUT_RDWR)
        w['c'].close()


def read_lines(w):
    try:
        while True:
            line = w['r'].readline()
            if not line:
                break
            w['ev'].append(json.loads(line))
    except Exception:  # the stream is closed under the reader: done
        pass


@test
def a_stalled_watcher_catches_up_from_the_store_in_order():
    """A watcher that stops reading holds a bounded queue while others go
    on; when it reads again it has fallen behind the hub's ring and gets
    the rest from the store: every event once, in order."""
    # A watcher whose socket stays full for the connection timeout is
    # ended (the test after the next): far beyond the time the uploads
    # take, even under valgrind.
    d = kitest.Daemon(sync=False,
                      args=['--connection-timeout', '600']).start()
    rv0 = int(d.list_rv('benchmarkprotocols'))
    c, r = stalled_watch(d, 'watch=true&resourceVersion=%d' % rv0)
    live = Watch(d, 'watch=true&resourceVersion=%d' % rv0)
    n = post_past_socket_buffers(d, 's')
    eq(len(live.wait(n, timeout=120)), n, 'the live watcher is not held up')
    got = []
    while len(got) < n:
        line = r.readline()
        if not line:
            break
        got.append(json.loads(line))
    eq([(e['type'], e['object']['metadata']['name'],
         int(e['object']['metadata']['resourceVersion'])) for e in got],
       [('ADDED', 's%d' % i, rv0 + 1 + i) for i in range(n)],
       'the stalled watcher\'s events')
    c.close()
    live.close()


@test
def a_watcher_left_behind_the_history_gets_410():
    """What is queued for a watcher that stops reading is bounded: once the
    store's history has moved past it, it is told so (410 Expired), as a
    client resuming from that resourceVersion would be."""
    d = kitest.Daemon(sync=False, args=['--history', '1000',
                                        '--connection-timeout', '600']).start()
    rv0 = int(d.list_rv('benchmarkprotocols'))
    c, r = stalled_watch(d, 'watch=true&resourceVersion=%d' % rv0)
    n = post_past_socket_buffers(d, 't')
    got = []
    while len(got) <= n:
        line = r.readline()
        if not line:
            break
        got.append(json.loads(line))
    check(len(got) >= 2, 'events, then the error: %d lines' % len(got))
    rvs = [int(e['object']['metadata']['resourceVersion']) for e in got[:-1]]
    eq(rvs, list(range(rv0 + 1, rv0 + 1 + len(rvs))),
       'what came before the error is in order, without gaps')
    check(len(rvs) < n - 1000, 'the queue held %d events of %d' %
          (len(rvs), n))
    eq((got[-1]['type'], got[-1]['object']['code'],
        got[-1]['object']['reason']), ('ERROR', 410, 'Expired'),
       'the last event')
    c.close()


@test
def a_watcher_whose_socket_stays_full_is_ended_after_the_connection_timeout():
    """A watcher that takes nothing while its socket is full is ended once
    that has lasted the connection timeout, as an idle connection would be;
    what it got before is in order, and a watcher that reads goes on."""
    timeout = 10
    d = kitest.Daemon(sync=False, args=['--connection-timeout',
                                        str(timeout)]).start()
    rv0 = int(d.list_rv('benchmarkprotocols'))
    c, r = stalled_watch(d, 'watch=true&resourceVersion=%d' % rv0)
    live = Watch(d, 'watch=true&resourceVersion=%d' % rv0)
    n = post_past_socket_buffers(d, 'h')
    eq(len(live.wait(n, timeout=120)), n, 'the reading watcher got them all')
    time.sleep(timeout + 3)
    got, ended = [], False
    try:
        while True:
            line = r.readline()
            if not line or not line.endswith(b'\n'):
                ended = True
                break
            got.append(json.loads(line))
    except socket.timeout:
        pass
    except (http.client.IncompleteRead, ConnectionError, OSError):
        ended = True
    check(ended, 'the stalled stream was ended (%d events read)' % len(got))
    check(0 < len(got) < n, 'it got part of the events: %d of %d' %
          (len(got), n))
    eq([int(e['object']['metadata']['resourceVersion']) for e in got],
       list(range(rv0 + 1, rv0 + 1 + len(got))),
       'what it got is in order, without gaps')
    # The live one is still served.
    post_ndjson(d, ndjson_protos([('h-after', 10 + n)]))
    eq(len(live.wait(n + 1, timeout=30)), n + 1, 'the live watcher goes on')
    c.close()
    live.close()
    log = d.stderr()
    check('client read nothing for %d s' % timeout in log,
          'the daemon says why it ended the watch')
    check('application error' not in log,
          'no warning from libmicrohttpd for the ending it was asked for')


def raw_watch(d, query, version, extra=''):
    """Sends a watch request as given and returns the socket."""
    s = socket.create_connection(('127.0.0.1', d.port), timeout=30)
    s.sendall(('GET %s/benchmarkprotocols?%s %s\r\nHost: x\r\n%s\r\n' %
               (G, query, version, extra)).encode())
    return s


def dechunk(b):
    """The data of a whole chunked body (it must end with its last chunk)."""
    out = b''
    while True:
        size, _, b = b.partition(b'\r\n')
        n = int(size.split(b';')[0], 16)
        if n == 0:
            return out
        out += b[:n]
        check(b[n:n + 2] == b'\r\n', 'a chunk ends with CRLF')
        b = b[n + 2:]


def read_to_close(s):
    data = b''
    while True:
        b = s.recv(65536)
        if not b:
            return data
        data += b


@test
def watch_streams_end_cleanly_over_every_framing():
    """HTTP/1.1 streams (chunks written by the hub), HTTP/1.0 ones (ended
    by closing) and ones asked to close (left to libmicrohttpd) carry the
    same events and end at their timeout; a kept-alive one leaves its
    connection fit for the next request."""
    d = kitest.Daemon(sync=False).start()
    rv0 = int(d.list_rv('benchmarkprotocols'))
    q = 'watch=true&resourceVersion=%d&timeoutSeconds=3' % rv0
    c = http.client.HTTPConnection('127.0.0.1', d.port, timeout=30)
    c.request('GET', G + '/benchmarkprotocols?' + q)
    r = c.getresponse()
    eq(r.getheader('Transfer-Encoding'), 'chunked', 'HTTP/1.1 is chunked')
    s10 = raw_watch(d, q, 'HTTP/1.0')
    sclose = raw_watch(d, q, 'HTTP/1.1', 'Connection: close\r\n')
    time.sleep(0.2)
    want = []
    for k in range(3):
        post_ndjson(d, ndjson_protos([('e%d' % i, 10 + i)
                                      for i in range(k * 10, k * 10 + 10)]))
        want += ['e%d' % i for i in range(k * 10, k * 10 + 10)]
    got = []
    while True:
        line = r.readline()
        if not line:
            break
        got.append(json.loads(line))
    eq([e['object']['metadata']['name'] for e in got], want,
       'the chunked stream')
    c.request('GET', '/healthz')
    eq(c.getresponse().status, 200, 'the next request on that connection')
    c.close()
    for s, what in [(s10, 'HTTP/1.0'), (sclose, 'Connection: close')]:
        head, _, body = read_to_close(s).partition(b'\r\n\r\n')
        s.close()
        check(b' 200 ' in head.split(b'\r\n')[0], what + ': 200')
        if b'transfer-encoding: chunked' in head.lower():
            check(what != 'HTTP/1.0', 'HTTP/1.0 is not chunked')
            body = dechunk(body)
        eq([json.loads(x)['object']['metadata']['name']
            for x in body.splitlines() if x], want, what + ': the events')


@test
def late_references_resolve_and_relabel_the_run():
    d = kitest.Daemon(sync=False).start()
    b = kitest.deepcopy(SEED)
    wl = {'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Workload',
          'metadata': {'name': 'emb-wl'},
          'spec': {'kernel': 'embedding', 'pass': 'full', 'dtype': 'bfloat16',
                   'parameters': {'batch': 8, 'seq': 2048, 'hidden': 4096,
                                  'vocab': 131072}, 'sweep': 'vocab'}}
    r = d.post(G + '/workloads?dryRun=All', wl)
    eq(r.status, 201, 'dry run')
    digest = r.json()['status']['digest']
    b['run']['spec']['workloadDigest'] = digest
    b['run']['metadata']['name'] = 'late'
    b['run']['spec']['sourceNative']['externalId'] += '-late'
    eq(d.post(G + '/benchmarkruns', b).status, 201, 'bundle')
    run = d.get(G + '/benchmarkruns/late').json()
    eq(run['status']['references']['workload']['resolved'], False, 'before')
    eq(run['metadata']['labels']['dtype'], 'float32', 'dtype from sourceNative')
    rv = int(run['metadata']['resourceVersion'])
    eq(d.post(G + '/workloads', wl).status, 201, 'the workload arrives')
    run = d.get(G + '/benchmarkruns/late').json()
    eq(run['status']['references']['workload'],
       {'digest': digest, 'name': 'emb-wl', 'resolved': True}, 'after')
    eq(run['metadata']['labels']['dtype'], 'bfloat16', 'dtype from the workload')
    check(int(run['metadata']['resourceVersion']) > rv, 'a new rv')
    eq(run['spec']['workloadDigest'], digest, 'spec unchanged')
    # Deleting it makes the run unresolved again.
    eq(d.delete(G + '/workloads/emb-wl').status, 200, 'delete')
    run = d.get(G + '/benchmarkruns/late').json()
    eq(run['status']['references']['workload']['resolved'], False, 'again')


@test
def plausibility_floor_verdict_and_label():
    d = kitest.Daemon(sync=False).start()
    eq(d.post(G + '/benchmarkruns', SEED).status, 201, 'seed')
    st = d.get(G + '/benchmarkruns/' + SEED_RUN).json()['status']
    p = st['plausibility']
    eq(p['verdict'], 'Plausible', 'seed verdict')
    eq(p['gpu'], 'a100-sxm4-80gb', 'GPU row')
    check(p['derivedWorkload'] is True, 'workload from sourceNative')
    check(0 < p['floorNs'] < 7489376, 'floor below the claim: %s' % p)
    check(abs(p['achievedFraction'] - p['floorNs'] / 7489376) < 1e-9,
          'fraction = floor / claim')
    conds = {c['type']: c for c in st['conditions']}
    eq(conds['Plausible']['status'], 'True', 'condition')
    # A planted run claiming 0.1 ms for the seed's workload on the A100:
    # faster than physics.
    b = kitest.deepcopy(SEED)
    b['run']['metadata']['name'] = 'too-fast'
    r = b['run']['spec']
    r['sourceNative']['externalId'] += '-fast'
    r['timing']['latencyNs']['median'] = 100000
    r['measurements'] = [m for m in r['measurements'] if m['statistic'] != 'p80']
    r['measurements'][0]['value'] = 90000
    r['sourceNative']['metrics'] = {'ms_50': 0.1, 'ms_20': 0.09}
    eq(d.post(G + '/benchmarkruns', b).status, 201, 'too-fast')
    st = d.get(G + '/benchmarkruns/too-fast').json()['status']
    eq(st['plausibility']['verdict'], 'Implausible', 'verdict')
    conds = {c['type']: c for c in st['conditions']}
    eq((conds['Plausible']['status'], conds['Plausible']['reason']),
       ('False', 'FasterThanPhysicalLimit'), 'condition')
    names = [i['metadata']['name'] for i in d.get(
        G + '/benchmarkruns?labelSelector=verdict%3Dimplausible').json()['items']]
    eq(names, ['too-fast'], 'only the planted run is flagged')


@test
def liger_import_facets_and_reimport():
    d = kitest.Daemon(sync=False).start()
    p = subprocess.run([CLI, '--server', 'http://127.0.0.1:%d' % d.port,
                        'import', 'liger', CSV], capture_output=True, text=True,
                       timeout=300)
    eq(p.returncode, 0, 'import rc: ' + p.stderr)
    check('2448 created' in p.stdout + p.stderr, p.stdout + p.stderr)
    f = d.get(G + '/facets').json()
    eq(f['total'], 2448, 'total')
    eq(f['labels']['metric'], {'latency': 1649, 'peak_memory': 799}, 'metrics')
    eq(sum(f['labels']['pass'].values()), 2448, 'passes')
    eq(f['labels']['kernel']['embedding'], 144, 'embedding rows')
    eq(f['labels']['gpu']['a100-sxm4-80gb'], 594, 'A100 rows')
    eq(sum(c['count'] for c in f['combinations']), 2448, 'combinations')
    # The same counts through a selector (scan path) and the index path.
    fs = d.get(G + '/facets?labelSelector=kernel%3Dembedding').json()
    eq(fs['total'], 144, 'facets under a selector')
    eq(fs['labels']['kernel'], {'embedding': 144}, 'label counts under it')
    eq(sum(fs['labels']['pass'].values()), 144, 'passes under it')
    eq(sum(c['count'] for c in fs['combinations']), 144, 'combinations')
    items = d.get(G + '/benchmarkruns?labelSelector=kernel%3Dembedding'
                  '&limit=1000').json()['items']
    eq(len(items), 144, 'list by label')
    # Paging through the label index visits each once.
    seen, cont = [], ''
    while True:
        r = d.get(G + '/benchmarkruns?labelSelector=kernel%3Dembedding'
                  '&limit=50' + ('&continue=' + cont if cont else '')).json()
        seen += [i['metadata']['name'] for i in r['items']]
        cont = r['metadata'].get('continue')
        if not cont:
            break
    eq(len(seen), 144, 'pages')
    eq(len(set(seen)), 144, 'no repeats')
    p = subprocess.run([CLI, '--server', 'http://127.0.0.1:%d' % d.port,
                        'import', 'liger', CSV], capture_output=True, text=True,
                       timeout=300)
    eq(p.returncode, 0, 'reimport rc')
    check('2448 unchanged' in p.stdout + p.stderr, p.stdout + p.stderr)
    eq(d.get(G + '/facets').json()['total'], 2448, 'still 2448')


def list_counters(d):
    """The daemon's list counters: (objects examined, items returned)."""
    vals = {}
    for line in d.get('/metrics').body.decode().splitlines():
        if line.startswith('kernelindex_list_'):
            k, v = line.rsplit(' ', 1)
            vals[k] = int(float(v))
    return (vals['kernelindex_list_objects_examined_total'],
            vals['kernelindex_list_items_returned_total'])


@test
def lists_are_served_by_index_postings():
    """Equality, set and reference requirements are answered from posting
    lists: the daemon reads exactly the objects it answers, in creation
    order, and they are what a filter over every run gives."""
    d = kitest.Daemon(sync=False).start()
    p = subprocess.run([CLI, '--server', 'http://127.0.0.1:%d' % d.port,
                        'import', 'liger', CSV], capture_output=True, text=True,
                       timeout=300)
    eq(p.returncode, 0, 'import rc: ' + p.stderr)
    every = []
    cont = ''
    while True:
        r = d.get(G + '/benchmarkruns?limit=1000' +
                  ('&continue=' + cont if cont else '')).json()
        every += r['items']
        cont = r['metadata'].get('continue')
        if not cont:
            break
    eq(len(every), 2448, 'all runs')
    wl = every[100]['spec']['workloadDigest']
    cases = [
        ('labelSelector=kernel%3Dembedding,gpu%3Da100-sxm4-80gb',
         lambda o: o['metadata']['labels'].get('kernel') == 'embedding' and
         o['metadata']['labels'].get('gpu') == 'a100-sxm4-80gb'),
        ('labelSelector=kernel%20in%20(embedding,swiglu),pass%3Dfull',
         lambda o: o['metadata']['labels'].get('kernel') in
         ('embedding', 'swiglu') and
         o['metadata']['labels'].get('pass') == 'full'),
        ('fieldSelector=spec.workloadDigest%3D' + wl,
         lambda o: o['spec']['workloadDigest'] == wl),
        ('fieldSelector=spec.workloadDigest%3D' + wl +
         '&labelSelector=provider%3Dliger',
         lambda o: o['spec']['workloadDigest'] == wl and
         o['metadata']['labels'].get('provider') == 'liger'),
    ]
    for query, keep in cases:
        want = [o['metadata']['name'] for o in every if keep(o)]
        check(len(want) > 0, 'the case selects something: ' + query)
        e0, r0 = list_counters(d)
        got = d.get(G + '/benchmarkruns?limit=1000&' + query).json()['items']
        e1, r1 = list_counters(d)
        eq([o['metadata']['name'] for o in got], want, query)
        eq(r1 - r0, len(want), 'returned: ' + query)
        eq(e1 - e0, len(want), 'examined only what it answers: ' + query)
    # notin is served by no index: the daemon reads runs until the page
    # is full, and says so in its counters.
    kernels = sorted({o['metadata']['labels']['kernel'] for o in every})
    notin = ','.join(k for k in kernels if k != 'swiglu')
    e0, _ = list_counters(d)
    got = d.get(G + '/benchmarkruns?limit=5&labelSelector=kernel%20notin%20(' +
                notin + ')').json()['items']
    e1, _ = list_counters(d)
    eq({o['metadata']['labels']['kernel'] for o in got}, {'swiglu'}, 'notin')
    check(e1 - e0 > 5, 'a scan reads more than it answers: %d' % (e1 - e0))
    # A malformed digest in a reference field selector is a 400 that says
    # what a digest looks like.
    r = d.get(G + '/benchmarkruns?fieldSelector=spec.workloadDigest%3Dabc')
    eq(r.status, 400, 'bad digest')
    check('sha256:' in r.json()['message'], r.json()['message'])
    r = d.get(G + '/benchmarkprotocols?fieldSelector=spec.workloadDigest%3D' +
              wl)
    eq(r.status, 400, 'reference fields are a run\'s')


def wait_phase(d, name, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        st = d.get(G + '/verifications/' + name).json().get('status', {})
        if st.get('phase') in ('Succeeded', 'Failed'):
            return st
        time.sleep(0.2)
    raise kitest.TestFailure('verification %s did not finish' % name)


def verification(name, run):
    return {'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Verification',
            'metadata': {'name': name}, 'spec': {'runName': run}}


@test
def verification_runs_the_reference_program():
    d = kitest.Daemon(sync=False, args=['--ref-program', REF]).start()
    eq(d.post(G + '/benchmarkruns', SEED).status, 201, 'seed')
    r = d.post(G + '/verifications', verification('v1', SEED_RUN))
    eq(r.status, 201, 'create')
    eq(r.json()['status']['phase'], 'Pending', 'queued')
    st = wait_phase(d, 'v1')
    eq(st['phase'], 'Succeeded', 'phase: %s' % st)
    res = st['result']
    eq(res['backend'], 'cpu', 'no GPU here: the CPU backend')
    check(res['correct'] is True and res['maxRelError'] <= res['tolerance'],
          'checked against float64: %s' % res)
    check(res['checkedOutputs'] > 0, 'outputs compared')
    lat = st['reference']
    check(0 < lat['p20'] <= lat['median'] <= lat['p80'], 'quantiles %s' % lat)
    # A scaled-down CPU run is no figure for an A100: the verdict is on a
    # prediction for the run's GPU, and no ratio of the two times is kept.
    check(st['reason'] in ('WithinPrediction', 'SlowerThanPrediction',
                           'FasterThanPrediction', 'FasterThanFloor'),
          'a verdict on a prediction: %s' % st['reason'])
    check('ratio' not in st and 'prediction' in st, 'no cross-device ratio')
    print(st['message'])
    conds = {c['type']: c['status'] for c in st['conditions']}
    eq(conds['Complete'], 'True', 'conditions')
    eq(conds['Verified'], {'Consistent': 'True', 'Implausible': 'False'}[
        st['verdict']], 'Verified follows the verdict')
    run = d.get(G + '/benchmarkruns/' + SEED_RUN).json()
    eq(run['status']['verification']['name'], 'v1', 'mirrored on the run')
    eq(run['status']['verification']['verdict'], st['verdict'], 'verdict')
    check('ratio' not in run['status']['verification'] and
          'referenceNs' not in run['status']['verification'],
          'no cross-device ratio on the run')
    r = d.post(G + '/verifications', verification('v2', 'no-such-run'))
    eq(r.status, 422, 'a verification of a missing run')
    eq(kitest.cause_fields(r.json()), ['spec.runName'], 'the field')


def process_alive(pid):
    """Whether pid runs (a zombie waiting for its reaper does not)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


@test
def a_verification_survives_a_restart_and_kver_watch_shows_progress():
    data = kitest.tempdir('kitest-ver-')
    d = kitest.Daemon(data_dir=data, sync=True,
                      args=['--ref-program', '/nonexistent/kernelindex-ref'])
    d.start()
    eq(d.post(G + '/benchmarkruns', SEED).status, 201, 'seed')
    eq(d.post(G + '/verifications', verification('vr', SEED_RUN)).status, 201,
       'queued')
    st = wait_phase(d, 'vr', timeout=30)
    eq(st['phase'], 'Failed', 'no program: failed, %s' % st)
    check('cannot start' in st['message'], st['message'])
    d.stop()
    # Running when the daemon dies (its program still measuring): the
    # program dies with it, and a restart with a working program runs the
    # verification again from the start.
    prog_dir = kitest.tempdir('kitest-prog-')
    slow = os.path.join(prog_dir, 'slow.sh')
    pidfile = os.path.join(prog_dir, 'pid')
    with open(slow, 'w') as f:
        # It lists no GPU (the controller asks at start), then measures
        # for 30 s.
        f.write('#!/bin/sh\n[ "$1" = --list-devices ] && '
                '{ echo \'{"devices": []}\'; exit 0; }\n'
                'echo $$ >%s\ncat >/dev/null\nexec sleep 30\n' % pidfile)
    os.chmod(slow, 0o755)
    d.args = ['--ref-program', slow]
    d.start()
    eq(d.post(G + '/verifications', verification('vq', SEED_RUN)).status, 201,
       'queued 2')
    end = time.time() + 30
    while d.get(G + '/verifications/vq').json()['status'].get('phase') != \
            'Running' or not os.path.exists(pidfile):
        check(time.time() < end, 'vq never started running')
        time.sleep(0.1)
    end = time.time() + 10
    while True:
        with open(pidfile) as f:
            text = f.read().strip()
        if text or time.time() > end:
            break
        time.sleep(0.05)
    prog = int(text)
    check(process_alive(prog), 'the program runs while the daemon does')
    d.kill()
    end = time.time() + 10
    while process_alive(prog) and time.time() < end:
        time.sleep(0.05)
    check(not process_alive(prog),
          'the program (pid %d) outlived the killed daemon' % prog)
    d.args = ['--ref-program', REF]
    d.start()
    w = http.client.HTTPConnection('127.0.0.1', d.port, timeout=30)
    w.request('GET', G + '/verifications?watch=true&fieldSelector='
              'metadata.name%3Dvq')
    resp = w.getresponse()
    phases = []
    end = time.time() + 60
    while time.time() < end and 'Succeeded' not in phases and \
            'Failed' not in phases:
        line = resp.readline()
        if not line:
            break
        phases.append(json.loads(line)['object']['status'].get('phase'))
    w.close()
    check(phases and phases[-1] in ('Succeeded', 'Failed'),
          'watched to the end: %s' % phases)
    eq(wait_phase(d, 'vq')['phase'], 'Succeeded', 'run after the restart')


@test
def a_crashing_or_hanging_reference_fails_only_that_verification():
    tmp = kitest.tempdir('kitest-ref-')
    crash = os.path.join(tmp, 'crash.sh')
    hang = os.path.join(tmp, 'hang.sh')
    with open(crash, 'w') as f:
        f.write('#!/bin/sh\ncat >/dev/null\nkill -SEGV $$\n')
    with open(hang, 'w') as f:
        f.write('#!/bin/sh\nsleep 600 &\nsleep 600\n')
    os.chmod(crash, 0o755)
    os.chmod(hang, 0o755)
    for prog, want in [(crash, 'signal'), (hang, 'killed')]:
        d = kitest.Daemon(sync=False, args=['--ref-program', prog,
                                            '--ref-timeout', '2']).start()
        eq(d.post(G + '/benchmarkruns', SEED).status, 201, 'seed')
        eq(d.post(G + '/verifications', verification('bad', SEED_RUN)).status,
           201, 'create')
        st = wait_phase(d, 'bad', timeout=30)
        eq(st['phase'], 'Failed', 'phase')
        check(want in st['message'], 'message: %s' % st['message'])
        eq(d.get('/healthz').status, 200, 'the daemon is fine')
        d.stop()


if __name__ == '__main__':
    sys.exit(kitest.run_all())
