#!/usr/bin/env python3
"""Crash safety and full storage of kernelindexd: the real daemon, killed.

python3 tests/e2e/test_crash.py [TEST_NAME...]

crash_kill_restart_keeps_acknowledged_writes: eight writer threads POST
distinct documents (lone protocols, seed-like bundles with their own run,
protocol and environment, small NDJSON batches) with sync on, while the
daemon is killed with SIGKILL at a random moment 50 times and restarted on
the same data directory. Its map starts at 1 MiB, so that it grows (by
doubling) several times under the kills. Afterwards every write that was answered 2xx must
be present with the digest the answer gave, every upload that was cut off
must be wholly present or wholly absent, the resourceVersion must never
have gone backwards across a restart, and the daemon's log must hold no
sanitizer report.

full_storage_answers_507_and_reads_continue: a daemon on a 2 MiB map that
may grow to 4 MiB is written with bundles until a write fails; the map
must have grown, the failure must be a 507 InsufficientStorage Status,
reads must keep working, the refused bundle must have left nothing behind,
and once restarted with room to grow the same bundle must go in whole.

Over etcd (tests/etcd/e2e.sh) the kills run as they are (nothing
acknowledged may be lost there either), without the map's growth; the full
storage case is LMDB's map and skips itself.

KI_DAEMON names the binary, KI_DATA_DIR the test data (see
kitest.py). KI_CRASH_CYCLES changes the number of kills (default 50),
KI_CRASH_SEED fixes the random moments.
"""
import hashlib
import http.client
import json
import os
import random
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kitest  # noqa: E402
from kitest import G, Daemon, TestFailure, check, eq, seed, status_of, test  # noqa: E402,E501

GV = 'kernelindex.dev/v1alpha1'
PLURAL = {
    'BenchmarkRun': 'benchmarkruns',
    'BenchmarkProtocol': 'benchmarkprotocols',
    'ExecutionEnvironment': 'executionenvironments',
    'Workload': 'workloads',
}
CYCLES = int(os.environ.get('KI_CRASH_CYCLES') or 50)
WRITERS = 8

# ---------------------------------------------------------------- digests
# RFC 8785 (JCS), enough for these documents: ASCII keys, integers and
# plain decimal fractions (the seed's floats print the same in Python and
# ECMAScript).


def canon(o):
    if o is None:
        return 'null'
    if o is True:
        return 'true'
    if o is False:
        return 'false'
    if isinstance(o, int):
        return str(o)
    if isinstance(o, float):
        if o == int(o) and abs(o) < 2 ** 53:
            return str(int(o))
        r = repr(o)
        if 'e' in r:
            raise ValueError('no exponents in these documents: %r' % o)
        return r
    if isinstance(o, str):
        return json.dumps(o, ensure_ascii=False)
    if isinstance(o, list):
        return '[' + ','.join(canon(x) for x in o) + ']'
    keys = sorted(o, key=lambda k: k.encode('utf-16-be'))
    return '{' + ','.join(json.dumps(k, ensure_ascii=False) + ':' +
                          canon(o[k]) for k in keys) + '}'


def digest(doc):
    core = {'apiVersion': doc['apiVersion'], 'kind': doc['kind'],
            'spec': doc['spec']}
    return 'sha256:' + hashlib.sha256(canon(core).encode()).hexdigest()


# ---------------------------------------------------------------- documents

SEED = seed()


def protocol(name, tag):
    return {'apiVersion': GV, 'kind': 'BenchmarkProtocol',
            'metadata': {'name': name},
            'spec': {'measurement': {'timer': 'cuda_events',
                                     'primaryStatistic': 'median'},
                     'harness': {'name': 'crash test ' + tag}}}


def environment(name, tag):
    e = kitest.deepcopy(SEED['environment'])
    e['metadata'] = {'name': name}
    e['spec']['software'] = {'build': tag}
    return e


def workload(name, tag):
    return {'apiVersion': GV, 'kind': 'Workload',
            'metadata': {'name': name},
            'spec': {'kernel': 'embedding', 'pass': 'full',
                     'dtype': 'float32', 'sweep': 'vocab',
                     'parameters': {'batch': 8, 'seq': 2048, 'hidden': 4096,
                                    'vocab': 131072, 'tag': tag}}}


def bundle(prefix, tag):
    """A seed-like bundle whose run, protocol and environment are all its
    own (unique content, names and externalId)."""
    b = kitest.deepcopy(SEED)
    b['protocol'] = protocol(prefix + '-p', tag)
    b['environment'] = environment(prefix + '-e', tag)
    run = b['run']
    run['metadata']['name'] = prefix + '-r'
    run['spec']['sourceNative']['externalId'] = 'crash/' + prefix
    run['spec']['protocolDigest'] = digest(b['protocol'])
    run['spec']['environmentDigest'] = digest(b['environment'])
    return b


def parts(body):
    """(plural, name, digest) of each document of an upload body."""
    if 'kind' in body:
        docs = [body]
    else:
        docs = [body[k] for k in ('run', 'protocol', 'environment',
                                  'workload', 'implementation') if k in body]
    return [(PLURAL[d['kind']], d['metadata']['name'], digest(d))
            for d in docs]


# ---------------------------------------------------------------- the load

class Ledger:
    """What the writers sent and what the daemon acknowledged."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = {}        # (plural, name) -> digest from the answer
        # ([(plural, name, digest)] written all or none, the outcome of its
        # upload: 'ok', CUT, REFUSED or 'bad').
        self.units = []
        self.cut = 0           # uploads sent but cut off by a kill
        self.refused = 0       # uploads never sent: the daemon was down
        self.bad = []          # unexpected answers
        self.max_rv = 0        # highest resourceVersion an answer showed
        self.counts = {'lone': 0, 'bundle': 0, 'ndjson': 0}

    def record(self, units, outcome):
        with self.lock:
            for u in units:
                self.units.append((u, outcome))

    def ack(self, plural, name, dg, rv):
        with self.lock:
            self.acked[(plural, name)] = dg
            self.max_rv = max(self.max_rv, rv)


def rv_of(obj):
    try:
        return int(obj['metadata']['resourceVersion'])
    except (KeyError, TypeError, ValueError):
        return 0


REFUSED, CUT = 'refused', 'cut'


def post(d, path, body, content_type):
    """One POST to the daemon's current port: (status, body), REFUSED when
    no connection could be made (the daemon is down), or CUT when the
    connection broke before the whole answer came (killed mid-request)."""
    port = d.port
    if port is None:
        return REFUSED
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=15)
    try:
        try:
            c.connect()
        except OSError:
            return REFUSED
        try:
            c.request('POST', path, body=body,
                      headers={'Content-Type': content_type})
            r = c.getresponse()
            return r.status, r.read()
        except (OSError, http.client.HTTPException):
            return CUT
    finally:
        c.close()


def writer(d, ledger, wid, stop):
    rnd = random.Random(wid)
    seq = 0
    while not stop.is_set():
        seq += 1
        prefix = 'cr-%d-%d' % (wid, seq)
        tag = '%d.%d' % (wid, seq)
        pick = rnd.random()
        if pick < 0.4:
            kind = 'lone'
            doc = protocol(prefix, tag)
            units = [parts(doc)]
            path, ctype, body = (G + '/benchmarkprotocols', 'application/json',
                                 json.dumps(doc))
        elif pick < 0.8:
            kind = 'bundle'
            doc = bundle(prefix, tag)
            units = [parts(doc)]
            path, ctype, body = (G + '/benchmarkruns', 'application/json',
                                 json.dumps(doc))
        else:
            kind = 'ndjson'
            docs = []
            for i in range(rnd.randint(2, 4)):
                if i % 2:
                    docs.append(workload('%s-w%d' % (prefix, i),
                                         '%s.%d' % (tag, i)))
                else:
                    docs.append(protocol('%s-n%d' % (prefix, i),
                                         '%s.%d' % (tag, i)))
            units = [parts(x) for x in docs]
            path, ctype = G + '/benchmarkruns', 'application/x-ndjson'
            body = ''.join(json.dumps(x) + '\n' for x in docs)
        got = post(d, path, body.encode(), ctype)
        if got in (REFUSED, CUT):
            ledger.record(units, got)
            with ledger.lock:
                if got == CUT:
                    ledger.cut += 1
                else:
                    ledger.refused += 1
            time.sleep(0.01)
            continue
        status, raw = got
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        if status not in (200, 201) or not isinstance(answer, dict):
            ledger.record(units, 'bad')
            with ledger.lock:
                ledger.bad.append((kind, status, raw[:300]))
            continue
        ledger.record(units, 'ok')
        with ledger.lock:
            ledger.counts[kind] += 1
        rv = rv_of(answer)
        if answer.get('kind') == 'UploadResult':
            for it in answer.get('items', []):
                if it.get('result') in ('created', 'unchanged'):
                    ledger.ack(PLURAL[it['kind']], it['name'], it['digest'],
                               rv)
                else:
                    with ledger.lock:
                        ledger.bad.append((kind, status, json.dumps(it)[:300]))
        else:
            ledger.ack(PLURAL[answer['kind']], answer['metadata']['name'],
                       (answer.get('status') or {}).get('digest'), rv)


# ---------------------------------------------------------------- reading

def list_all(d, plural):
    """name -> (digest, resourceVersion) of every stored object of plural,
    and the list's resourceVersion."""
    out, cont, rv = {}, None, 0
    while True:
        q = '?limit=500' + ('&continue=' + cont if cont else '')
        r = d.get('%s/%s%s' % (G, plural, q))
        eq(r.status, 200, 'GET %s' % plural)
        body = r.json()
        rv = max(rv, int(body['metadata']['resourceVersion']))
        for it in body['items']:
            out[it['metadata']['name']] = (it['status']['digest'],
                                           rv_of(it))
        cont = body['metadata'].get('continue')
        if not cont:
            return out, rv


def start_checked(d, what):
    try:
        d.start()
    except TestFailure as e:
        raise TestFailure('%s: the store did not open: %s' % (what, e))
    rep = d.sanitizer_report()
    check(rep is None, '%s: sanitizer report in the log:\n%s' % (what, rep))


# ---------------------------------------------------------------- tests

@test
def crash_kill_restart_keeps_acknowledged_writes():
    # A small first map, so that it grows several times under the kills.
    d = Daemon(sync=True, args=['--map-size', '1M', '--map-max', '1G'])
    start_checked(d, 'first start')
    ledger = Ledger()
    stop = threading.Event()
    threads = [threading.Thread(target=writer, args=(d, ledger, i, stop),
                                daemon=True) for i in range(WRITERS)]
    for t in threads:
        t.start()
    rnd = random.Random(int(os.environ.get('KI_CRASH_SEED') or
                            time.time() * 1000))
    rv_seen = []
    t0 = time.time()
    try:
        for cycle in range(CYCLES):
            time.sleep(rnd.uniform(0.05, 0.4))
            d.kill()
            # Answers already in the socket buffers count as acknowledged:
            # they were sent after the commit.
            time.sleep(0.02)
            with ledger.lock:
                acked_rv = ledger.max_rv
            start_checked(d, 'restart %d' % (cycle + 1))
            rv = int(d.list_rv('benchmarkprotocols'))
            check(rv >= acked_rv, 'restart %d: the resourceVersion %d is '
                  'below %d, which an acknowledged write showed before the '
                  'kill' % (cycle + 1, rv, acked_rv))
            if rv_seen and rv < rv_seen[-1]:
                raise TestFailure('restart %d: the resourceVersion went back '
                                  'from %d to %d' % (cycle + 1, rv_seen[-1],
                                                     rv))
            rv_seen.append(rv)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    load_s = time.time() - t0
    # One more kill, then a clean start to read everything back.
    d.kill()
    start_checked(d, 'final restart')

    check(not ledger.bad, '%d writes got unexpected answers, the first: %r'
          % (len(ledger.bad), ledger.bad[:3]))
    check(len(ledger.acked) >= 100, 'only %d writes were acknowledged: the '
          'load did not run' % len(ledger.acked))
    stored = {}
    final_rv = 0
    for plural in sorted(set(PLURAL.values())):
        stored[plural], rv = list_all(d, plural)
        final_rv = max(final_rv, rv)
    check(final_rv >= ledger.max_rv, 'the final resourceVersion %d is below '
          'an acknowledged %d' % (final_rv, ledger.max_rv))
    check(not rv_seen or final_rv >= rv_seen[-1],
          'the final resourceVersion went back')

    missing, wrong = [], []
    for (plural, name), dg in sorted(ledger.acked.items()):
        got = stored[plural].get(name)
        if got is None:
            missing.append((plural, name))
        elif dg is not None and got[0] != dg:
            wrong.append((plural, name, dg, got[0]))
        elif got[1] > final_rv:
            wrong.append((plural, name, 'rv %d' % got[1],
                          'above the store rv %d' % final_rv))
    check(not missing, '%d acknowledged writes are missing after the '
          'restarts, e.g. %r' % (len(missing), missing[:5]))
    check(not wrong, '%d acknowledged objects differ, e.g. %r' %
          (len(wrong), wrong[:5]))

    half, bad_digest, ghosts, present_units, cut_stored = [], [], [], 0, 0
    for u, outcome in ledger.units:
        here = [(p, n, dg) for p, n, dg in u if n in stored[p]]
        if here and len(here) != len(u):
            half.append(u)
        if here:
            present_units += 1
            if outcome == CUT:
                cut_stored += 1
            if outcome == REFUSED:
                ghosts.append(u)
        for p, n, dg in here:
            if stored[p][n][0] != dg:
                bad_digest.append((p, n, dg, stored[p][n][0]))
    check(not half, '%d uploads are half present, e.g. %r' %
          (len(half), half[:3]))
    check(not bad_digest, '%d stored objects do not hold the content sent, '
          'e.g. %r' % (len(bad_digest), bad_digest[:3]))
    check(not ghosts, '%d uploads never sent (connection refused) are '
          'stored, e.g. %r' % (len(ghosts), ghosts[:3]))
    known = set((p, n) for u, _ in ledger.units for p, n, _ in u)
    strays = [(p, n) for p in stored for n in stored[p]
              if (p, n) not in known]
    check(not strays, 'objects nobody sent: %r' % strays[:5])

    # Content addressing survived too: a sample read back by digest.
    sample = random.Random(7).sample(sorted(ledger.acked.items()),
                                     min(50, len(ledger.acked)))
    for (plural, name), dg in sample:
        r = d.get('%s/objects/%s' % (G, dg))
        eq(r.status, 200, 'GET objects/%s (%s %s)' % (dg, plural, name))
        eq('sha256:' + hashlib.sha256(r.body).hexdigest(), dg,
           'the bytes served for %s' % dg)
    rep = d.sanitizer_report()
    check(rep is None, 'sanitizer report in the log:\n%s' % rep)
    # LMDB's map (over etcd there is none, nor its metric).
    map_bytes = 0 if kitest.etcd() else \
        metric(d, 'kernelindex_store_map_bytes')
    check(kitest.etcd() or map_bytes > 1 << 20,
          'the map never grew from 1 MiB (%d bytes)' % map_bytes)
    check(ledger.cut > 0, 'no upload was in flight at any of the %d kills'
          % CYCLES)
    print('      %d kills in %.1fs; %d uploads acknowledged (%d lone, %d '
          'bundles, %d NDJSON) holding %d objects; %d uploads cut off by a '
          'kill (%d of them stored anyway, whole), %d refused while down; '
          '%d uploads present, none in part; resourceVersion %d%s' %
          (CYCLES, load_s, sum(ledger.counts.values()), ledger.counts['lone'],
           ledger.counts['bundle'], ledger.counts['ndjson'],
           len(ledger.acked), ledger.cut, cut_stored, ledger.refused,
           present_units, final_rv, '; store etcd' if kitest.etcd() else
           '; the map grew from 1 MiB to %d MiB' % (map_bytes >> 20)))


def metric(d, name):
    for ln in d.get('/metrics').body.decode().splitlines():
        if ln.startswith(name + ' '):
            return int(float(ln.split()[1]))
    raise TestFailure('no metric %s' % name)


@test
def full_storage_answers_507_and_reads_continue():
    kitest.lmdb_only('LMDB\'s map filling up to map-max')
    data = kitest.tempdir('kitest-full-')
    d = Daemon(data_dir=data, sync=True,
               args=['--map-size', '2M', '--map-max', '4M'])
    start_checked(d, 'start')
    eq(metric(d, 'kernelindex_store_map_bytes'), 2 << 20, 'the first map')
    written = []      # the bundles answered 201, in order
    failure = None
    for i in range(4000):
        b = bundle('full-%d' % i, 'full.%d' % i)
        r = d.post(G + '/benchmarkruns', json.dumps(b))
        if r.status in (200, 201):
            written.append(b)
            continue
        failure = (b, r)
        break
    check(failure is not None, 'the 4 MiB map took 4000 bundles')
    failed, r = failure
    status_of(r, 507, 'InsufficientStorage')
    eq(metric(d, 'kernelindex_store_map_bytes'), 4 << 20,
       'the map grew to map-max before it filled')

    # Nothing of the refused bundle was stored (it is all or nothing).
    for plural, name, _ in parts(failed):
        status_of(d.get('%s/%s/%s' % (G, plural, name)), 404, 'NotFound')
    # Reads keep working: an early object by name and by digest, and lists
    # that hold exactly what was acknowledged.
    for plural, name, dg in parts(written[0]):
        g = d.get('%s/%s/%s' % (G, plural, name))
        eq(g.status, 200, 'GET %s/%s after the map filled' % (plural, name))
        eq(g.json()['status']['digest'], dg, 'its digest')
        g = d.get('%s/objects/%s' % (G, dg))
        eq(g.status, 200, 'GET objects/%s after the map filled' % dg)
        eq('sha256:' + hashlib.sha256(g.body).hexdigest(), dg, 'its bytes')
    want = {}
    for w in written:
        for plural, name, dg in parts(w):
            want.setdefault(plural, {})[name] = dg
    for plural in sorted(want):
        got, _ = list_all(d, plural)
        eq({n: v[0] for n, v in got.items()}, want[plural],
           '%s listed after the map filled' % plural)
    eq(d.get('/readyz').status, 200, 'readyz on a full map')

    # Still full after a restart with the same limit; with room to grow,
    # the refused bundle goes in whole.
    d.kill()
    start_checked(d, 'restart on the full map')
    r2 = d.post(G + '/benchmarkruns', json.dumps(failed))
    status_of(r2, 507, 'InsufficientStorage')
    d.stop()
    d.args = ['--map-size', '2M', '--map-max', '16M']
    start_checked(d, 'restart with a larger map-max')
    r3 = d.post(G + '/benchmarkruns', json.dumps(failed))
    eq(r3.status, 201, 'the refused bundle once the map may grow (%r)' %
       (r3,))
    for plural, name, dg in parts(failed):
        g = d.get('%s/%s/%s' % (G, plural, name))
        eq(g.status, 200, 'GET %s/%s after growth' % (plural, name))
        eq(g.json()['status']['digest'], dg, 'its digest')
    print('      %d bundles fit in a map grown from 2 to 4 MiB, then 507 '
          'InsufficientStorage; after a restart with map-max 16M: %d, map %d '
          'bytes' % (len(written), r3.status,
                     metric(d, 'kernelindex_store_map_bytes')))


if __name__ == '__main__':
    sys.exit(kitest.run_all())
