#!/usr/bin/env python3
"""End-to-end tests of kernelindexd as a server: connections, streamed
NDJSON uploads, dry runs, pages, deletes, discovery and probes, threads,
and what survives SIGKILL and SIGTERM. The document cases are in
test_api.py.

python3 tests/e2e/test_api_server.py [TEST_NAME...]

KI_DAEMON names the binary (see kitest.py).
"""
import http.client
import json
import os
import random
import re
import signal
import sys
import threading
import time
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kitest  # noqa: E402
from kitest import (G, Daemon, TestFailure, check, eq, status_of,  # noqa: E402
                    cause_fields, test)
from apidocs import (canonical_bytes, digest, PLURAL, SHORT, SEED,  # noqa: E402
                     RUN_NAME, PROTO_NAME, mut, put, protocol, list_all,
                     get_name, SEED_NAMES, fresh, bundle)


@test
def connections_from_one_address_are_limited_and_keep_alive():
    """The daemon accepts connections itself and hands them to its worker
    threads: many keep-alive connections all answer, and one beyond
    --max-per-ip is closed without an answer while the others go on."""
    import socket
    d = Daemon(sync=False, args=['--max-per-ip', '6']).start()

    def ask(s):
        s.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
        got = b''
        while b'\r\n\r\n' not in got:
            chunk = s.recv(4096)
            if not chunk:
                return None
            got += chunk
        head, _, body = got.partition(b'\r\n\r\n')
        n = int(re.search(rb'Content-Length: *(\d+)', head, re.I).group(1))
        while len(body) < n:
            chunk = s.recv(4096)
            if not chunk:
                return None
            body += chunk
        return int(head.split()[1])

    def connect_answered():
        # The start-up probe's connection may not be gone yet: retry.
        deadline = time.time() + 5
        while True:
            s = socket.create_connection(('127.0.0.1', d.port), timeout=5)
            try:
                if ask(s) == 200:
                    return s
            except (ConnectionResetError, BrokenPipeError):
                pass
            s.close()
            check(time.time() < deadline, 'a connection within the limit '
                  'is not answered')
            time.sleep(0.05)

    conns = [connect_answered() for _ in range(6)]
    for rnd in range(3):
        for i, s in enumerate(conns):
            eq(ask(s), 200, 'keep-alive connection %d, request %d' %
               (i, rnd + 1))
    extra = socket.create_connection(('127.0.0.1', d.port), timeout=5)
    try:
        answer = ask(extra)
    except (ConnectionResetError, BrokenPipeError):
        answer = None
    eq(answer, None, 'a 7th connection from the address is closed')
    extra.close()
    for i, s in enumerate(conns):
        eq(ask(s), 200, 'connection %d after the refused one' % i)
    conns.pop().close()
    connect_answered().close()   # one of the six closed: room again
    for s in conns:
        s.close()
    d.stop()


def ndjson(docs, bad_line=None, bad_at=None):
    lines = [json.dumps(x) for x in docs]
    if bad_line is not None:
        lines.insert(bad_at, bad_line)
    return ('\n'.join(lines) + '\n').encode()


@test
def ndjson_partial_and_atomic():
    d = fresh()
    docs = [bundle(i) for i in range(4)]
    bad = json.dumps(mut(put('run.spec.status', 'exploded'), bundle(99)))
    body = ndjson(docs, bad_line=bad, bad_at=2)
    # atomic first: nothing may be stored
    rv = d.list_rv('benchmarkruns')
    r = d.post(G + '/benchmarkruns?atomic=true', body,
               content_type='application/x-ndjson')
    check(400 <= r.status < 500, 'an atomic upload with a bad line is a 4xx, '
          'got %r' % r)
    status_of(r)
    eq(d.list_rv('benchmarkruns'), rv, 'rv after the atomic failure')
    for i in range(4):
        for plural, prefix in [('benchmarkruns', 'nd-run-'),
                               ('benchmarkprotocols', 'nd-proto-'),
                               ('executionenvironments', 'nd-env-')]:
            eq(get_name(d, plural, '%s%d' % (prefix, i)).status, 404,
               '%s%d after the atomic failure' % (prefix, i))
    # not atomic: the good lines are stored, the bad one reported
    r = d.post(G + '/benchmarkruns', body,
               content_type='application/x-ndjson')
    eq(r.status, 201, 'NDJSON with one bad line (%r)' % r)
    j = r.json()
    eq(j['kind'], 'UploadResult', 'kind')
    eq(j['summary']['failed'], 1, 'failed count')
    eq(j['summary']['created'], 12, 'created count')
    failed = [i for i in j['items'] if i['result'] == 'failed']
    eq(len(failed), 1, 'one failed item')
    eq(failed[0]['index'], 3, 'the failed item is line 3')
    check(any('spec.status' in f for f in cause_fields(failed[0]['status'])),
          'the failed line says why: %r' % failed[0])
    for i in range(4):
        eq(get_name(d, 'benchmarkruns', 'nd-run-%d' % i).status, 200,
           'nd-run-%d stored' % i)
    eq(get_name(d, 'benchmarkruns', 'nd-run-99').status, 404,
       'the bad line stored nothing')
    eq(get_name(d, 'benchmarkprotocols', 'nd-proto-99').status, 404,
       'the bad line left no protocol')
    # an unparsable line is reported too, with its line number
    body = ndjson([bundle(5)], bad_line='{"run": ', bad_at=0)
    r = d.post(G + '/benchmarkruns', body,
               content_type='application/x-ndjson')
    check(r.status in (200, 201), 'NDJSON with a truncated line (%r)' % r)
    failed = [i for i in r.json()['items'] if i['result'] == 'failed']
    eq([f['index'] for f in failed], [1], 'the truncated line failed')
    check('line 1' in failed[0]['status']['message'],
          'the message names the line: %r' % failed[0]['status']['message'])
    eq(get_name(d, 'benchmarkruns', 'nd-run-5').status, 200,
       'the good line after the truncated one')
    d.stop()


def rss_anon_kb(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('RssAnon:'):
                return int(line.split()[1])
    return 0


@test
def ndjson_of_100k_lines_is_read_as_it_arrives():
    """100,000 lines, chunked, to a daemon whose whole-body limits are far
    below the upload (max-bulk-body 1M, max-items 1000): it can only
    succeed if the body is read and written as it arrives. Every line is
    accounted for, in order; an overlong line fails alone; the daemon's
    private memory stays below half the body's size."""
    # Freed memory kept in ASan's quarantine would read as the daemon's.
    asan = os.environ.get('ASAN_OPTIONS', 'detect_leaks=1')
    d = kitest.Daemon(sync=False, args=['--max-bulk-body', '1M',
                                        '--max-items', '1000',
                                        '--max-body', '64K'],
                      env={'ASAN_OPTIONS': asan + ':quarantine_size_mb=0'})
    d.start()
    # Under valgrind (the memory-error pass) a smaller upload does; over
    # etcd (tests/etcd/e2e.sh) 10,000 lines (20,000 took 54 s there with
    # ASan on a loaded 2-core machine; LMDB's 100,000 about as long).
    # KI_NDJSON_LINES sets another number of lines.
    slow = 'valgrind' in d.binary
    n = 3000 if slow else int(os.environ.get('KI_NDJSON_LINES') or
                              (10000 if kitest.etcd() else 100000))
    base = kitest.deepcopy(SEED)
    name = base['run']['metadata']['name']
    xid = base['run']['spec']['sourceNative']['externalId']
    text = json.dumps(base, separators=(',', ':'))
    text = text.replace('"%s"' % name, '"st-@ID@"').replace(
        '"%s"' % xid, '"st/@ID@"')
    long_line = n // 2
    peak = [0]
    done = []

    def sample():
        while not done:
            peak[0] = max(peak[0], rss_anon_kb(d.proc.pid))
            time.sleep(0.05)

    def body():
        for i in range(1, n + 1):
            if i == long_line:
                yield b'{"pad":"' + b'x' * (70 * 1024) + b'"}\n'
            else:
                yield (text.replace('@ID@', str(i)) + '\n').encode()

    base_kb = rss_anon_kb(d.proc.pid)
    th = threading.Thread(target=sample)
    th.start()
    size = 0
    c = http.client.HTTPConnection('127.0.0.1', d.port, timeout=1200)
    try:
        c.putrequest('POST', G + '/benchmarkruns')
        c.putheader('Content-Type', 'application/x-ndjson')
        c.putheader('Transfer-Encoding', 'chunked')
        c.endheaders()
        buf = []
        for line in body():
            buf.append(line)
            if len(buf) == 200:
                chunk = b''.join(buf)
                size += len(chunk)
                c.send(b'%x\r\n%s\r\n' % (len(chunk), chunk))
                buf = []
        chunk = b''.join(buf)
        size += len(chunk)
        c.send(b'%x\r\n%s\r\n0\r\n\r\n' % (len(chunk), chunk))
        resp = c.getresponse()
        data = resp.read()
    finally:
        done.append(1)
        th.join()
        c.close()
    eq(resp.status, 201, 'the streamed upload: %r' % data[:300])
    j = json.loads(data)
    eq(j['summary'], {'created': n - 1 + 2, 'unchanged': 2 * (n - 2),
                      'failed': 1}, 'summary')
    runs = [i['index'] for i in j['items'] if i.get('kind') == 'BenchmarkRun']
    eq(runs, [i for i in range(1, n + 1) if i != long_line],
       'every run line reported once, in order')
    failed = [i for i in j['items'] if i['result'] == 'failed']
    eq([f['index'] for f in failed], [long_line], 'the overlong line failed')
    eq(failed[0]['status']['code'], 413, 'overlong line code')
    for i in (1, long_line - 1, long_line + 1, n):
        eq(get_name(d, 'benchmarkruns', 'st-%d' % i).status, 200,
           'st-%d stored' % i)
    grew = (peak[0] - base_kb) * 1024
    # A buffered body alone would be size bytes (ASan's shadow adds ~1/8).
    # Not over etcd: its watch cache keeps every stored object in memory
    # (docs/etcd.md), so the daemon grows with what it stored (225 MB for
    # 20,000 lines, a body of 42 MB), whatever it buffers.
    check(slow or kitest.etcd() or grew < size / 2, 'private memory grew '
          'by %d bytes for a body of %d bytes' % (grew, size))
    print('      %d lines, %d bytes; private memory +%.1f MB (peak)' %
          (n, size, grew / 1e6))
    d.stop()


@test
def dry_run_stores_nothing():
    d = fresh()
    rv = d.list_rv('benchmarkruns')
    r = d.post(G + '/benchmarkruns?dryRun=All', SEED)
    eq(r.status, 201, 'dry-run seed POST (%r)' % r)
    j = r.json()
    eq(j['summary']['created'], 3, 'dry run answers as if created')
    eq(j.get('dryRun'), True, 'the answer says dryRun')
    p = protocol('dry-protocol')
    r = d.post(G + '/benchmarkprotocols?dryRun=All', p)
    eq(r.status, 201, 'dry-run protocol POST')
    eq(r.json()['spec'], p['spec'], 'dry-run answers with the object')
    eq(d.list_rv('benchmarkruns'), rv, 'rv after dry runs')
    for plural, name in SEED_NAMES + [('benchmarkprotocols', 'dry-protocol')]:
        eq(get_name(d, plural, name).status, 404, '%s/%s after a dry run' %
           (plural, name))
    eq(d.get('%s/objects/%s' % (G, digest(p))).status, 404,
       'the digest after a dry run')
    # a dry-run delete deletes nothing
    eq(d.post(G + '/benchmarkprotocols', p).status, 201, 'real POST')
    rv = d.list_rv('benchmarkprotocols')
    r = d.delete(G + '/benchmarkprotocols/dry-protocol?dryRun=All')
    eq(r.status, 200, 'dry-run DELETE')
    eq(get_name(d, 'benchmarkprotocols', 'dry-protocol').status, 200,
       'still there after a dry-run DELETE')
    eq(d.list_rv('benchmarkprotocols'), rv, 'rv after a dry-run DELETE')
    d.stop()


@test
def list_pages_with_limit_and_continue():
    d = fresh()
    names = ['page-%02d' % i for i in range(7)]
    random.Random(7).shuffle(names)
    for n in names:
        eq(d.post(G + '/benchmarkprotocols', protocol(n, harness=n)).status,
           201, 'POST %s' % n)
    seen, token, pages = [], None, 0
    while True:
        q = '?limit=2' + ('&continue=' + urllib.parse.quote(token)
                          if token else '')
        r = d.get(G + '/benchmarkprotocols' + q)
        eq(r.status, 200, 'page %d' % pages)
        j = r.json()
        check(len(j['items']) <= 2, 'page %d has %d items' %
              (pages, len(j['items'])))
        seen += [i['metadata']['name'] for i in j['items']]
        pages += 1
        check(pages <= 10, 'too many pages')
        token = j['metadata'].get('continue')
        if not token:
            break
    eq(sorted(seen), sorted(names), 'every object listed')
    eq(len(seen), len(set(seen)), 'each object listed once')
    eq(pages, 4, 'pages of 2 for 7 objects')
    full = d.get(G + '/benchmarkprotocols').json()
    eq(len(full['items']), 7, 'the unpaged list')
    check('continue' not in full['metadata'] or
          not full['metadata']['continue'], 'no continue on a full list')
    d.stop()


@test
def delete_then_not_found_and_unresolved():
    d = fresh()
    eq(d.post(G + '/benchmarkruns', SEED).status, 201, 'seed POST')
    rv = int(d.list_rv('benchmarkruns'))
    r = d.delete('%s/benchmarkprotocols/%s' % (G, PROTO_NAME))
    eq(r.status, 200, 'DELETE the protocol (%r)' % r)
    eq(r.json()['metadata']['name'], PROTO_NAME, 'the DELETE answer')
    check(int(d.list_rv('benchmarkruns')) > rv, 'a delete advances the rv')
    st = status_of(get_name(d, 'benchmarkprotocols', PROTO_NAME), 404,
                   'NotFound')
    check(PROTO_NAME in st['message'], 'the 404 names the object')
    eq(d.get(G + '/benchmarkprotocols').json()['items'], [],
       'the protocol list after the delete')
    run = get_name(d, 'benchmarkruns', RUN_NAME).json()
    refs = run['status']['references']
    eq(refs['protocol']['resolved'], False,
       'the run shows its deleted protocol unresolved')
    eq(refs['environment']['resolved'], True, 'the environment still is')
    conds = {c['type']: c for c in run['status'].get('conditions', [])}
    eq(conds.get('DigestsVerified', {}).get('status'), 'False',
       'DigestsVerified after the delete')
    eq(d.get('%s/objects/%s' % (G, SEED['run']['spec']['protocolDigest']))
       .status, 404, 'the deleted protocol by digest')
    status_of(d.delete('%s/benchmarkprotocols/%s' % (G, PROTO_NAME)), 404,
              'NotFound')
    # uploading it again resolves the run again
    eq(d.post(G + '/benchmarkprotocols', SEED['protocol']).status, 201,
       're-POST the protocol')
    run = get_name(d, 'benchmarkruns', RUN_NAME).json()
    eq(run['status']['references']['protocol']['resolved'], True,
       'resolved again after the protocol came back')
    d.stop()


@test
def discovery_version_probes_metrics_page():
    d = fresh()
    r = d.get('/api')
    eq(r.status, 200, '/api')
    eq(r.json().get('kind'), 'APIVersions', '/api kind')
    r = d.get('/apis')
    eq(r.status, 200, '/apis')
    groups = r.json().get('groups', [])
    check(any(g.get('name') == 'kernelindex.dev' and
              any(v.get('groupVersion') == 'kernelindex.dev/v1alpha1'
                  for v in g.get('versions', [])) for g in groups),
          '/apis lists kernelindex.dev/v1alpha1: %r' % groups)
    r = d.get('/apis/kernelindex.dev')
    eq(r.status, 200, '/apis/kernelindex.dev')
    eq(r.json().get('name'), 'kernelindex.dev', 'group name')
    r = d.get(G)
    eq(r.status, 200, G)
    j = r.json()
    eq(j.get('kind'), 'APIResourceList', 'kind')
    eq(j.get('groupVersion'), 'kernelindex.dev/v1alpha1', 'groupVersion')
    res = {x['name']: x for x in j.get('resources', [])}
    eq(sorted(res), sorted(list(SHORT) + ['comparisons']),
       'the seven kinds and comparisons')
    # Answered and not stored: create is its only verb.
    eq(res.pop('comparisons').get('verbs'), ['create'], 'comparisons verbs')
    for plural, short in SHORT.items():
        eq(res[plural].get('shortNames'), [short], '%s shortNames' % plural)
        eq(res[plural].get('namespaced'), False, '%s namespaced' % plural)
        eq(PLURAL[res[plural]['kind']], plural, '%s kind' % plural)
        for verb in ('create', 'get', 'list', 'delete'):
            check(verb in res[plural].get('verbs', []), '%s verbs has %s' %
                  (plural, verb))
    r = d.get('/version')
    eq(r.status, 200, '/version')
    eq(r.json().get('major'), '1', 'major')
    eq(r.json().get('minor'), '32', 'minor')
    for p in ('/healthz', '/livez', '/readyz'):
        eq(d.get(p).status, 200, p)
    d.post(G + '/benchmarkprotocols', protocol('metrics-p'))
    r = d.get('/metrics')
    eq(r.status, 200, '/metrics')
    ct = r.headers.get('Content-Type') or ''
    check(ct.startswith('text/plain'), '/metrics Content-Type %r' % ct)
    text = r.body.decode()
    sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? '
                        r'[-+0-9.eE]+(Inf)?( \d+)?$')
    typed = set()
    for ln in text.splitlines():
        if ln.startswith('# TYPE '):
            parts = ln.split()
            check(len(parts) == 4 and parts[3] in (
                'counter', 'gauge', 'histogram', 'summary', 'untyped'),
                'bad TYPE line %r' % ln)
            typed.add(parts[2])
        elif ln.startswith('#') or not ln:
            continue
        else:
            check(sample.match(ln), 'not a Prometheus sample line: %r' % ln)
            check(re.split(r'[{ ]', ln)[0] in typed,
                  'sample %r before its TYPE' % ln)
    check(len(typed) >= 2, 'metrics has samples: %r' % text[:300])
    r = d.get('/')
    eq(r.status, 200, '/')
    check((r.headers.get('Content-Type') or '').startswith('text/html'),
          '/ is HTML: %r' % r.headers.get('Content-Type'))
    check(b'<html' in r.body.lower(), '/ has an html element')
    csp = r.headers.get('Content-Security-Policy') or ''
    check('default-src' in csp, '/ has a Content-Security-Policy: %r' % csp)
    d.stop()


# ---------------------------------------------------------------- durability

def post_protocols(d, docs, threads=8, on_ack=None):
    """POSTs docs from several threads (started, not joined). Returns the
    threads and {name: (status, body)} of every answer received: requests
    that got no answer are missing. on_ack runs after each 2xx."""
    answers = {}
    lock = threading.Lock()
    it = iter(docs)

    def worker():
        while True:
            with lock:
                try:
                    doc = next(it)
                except StopIteration:
                    return
            name = doc['metadata']['name']
            try:
                r = d.post(G + '/benchmarkprotocols', doc, timeout=30)
            except (OSError, http.client.HTTPException):
                continue
            with lock:
                answers[name] = (r.status, r.body)
                if on_ack is not None and 200 <= r.status < 300:
                    on_ack()
    ts = [threading.Thread(target=worker, daemon=True)
          for _ in range(threads)]
    for t in ts:
        t.start()
    return ts, answers


@test
def threads_are_named_for_what_they_do():
    """top -H, ps -L and perf tell the daemon's threads apart by name."""
    d = Daemon().start()
    task = '/proc/%d/task' % d.proc.pid
    names = []
    main = None   # the main thread's: the program's name (or valgrind's)
    for tid in os.listdir(task):
        try:
            with open(os.path.join(task, tid, 'comm')) as f:
                name = f.read().strip()
        except OSError:
            continue   # a thread that ended meanwhile
        if int(tid) == d.proc.pid:
            main = name
        else:
            names.append(name)
    # The store's own: LMDB's checkpoint, or the etcd store's watch cache
    # (fed by etcd's watch: the writes of every daemon).
    own = 'ki-etcd-cache' if kitest.etcd() else 'ki-checkpoint'
    for want in ('ki-committer', own, 'ki-accept', 'ki-watch',
                 'ki-verifier'):
        eq(names.count(want), 1, 'threads named %s among %r' % (want, names))
    eq(names.count(main), 0, 'threads other than the main one left '
       'unnamed (with its name, %r) in %r' % (main, names))
    eq(names.count('MHD-worker'), 2, 'HTTP threads (--threads 2) in %r' %
       names)
    d.stop()


@test
def acknowledged_writes_survive_sigkill():
    d = Daemon(sync=True)
    d.start()
    acked = {}   # name -> doc
    rng = random.Random(2)
    rounds = 5
    max_rv = 0
    for rnd in range(rounds):
        docs = [protocol('dur-%d-%03d' % (rnd, i), harness='dur %d %d' %
                         (rnd, i)) for i in range(200)]
        count = [0]
        cv = threading.Condition()

        def on_ack():
            with cv:
                count[0] += 1
                cv.notify_all()
        threshold = rng.randint(40, 120)
        ts, answers = post_protocols(d, docs, on_ack=on_ack)
        with cv:
            cv.wait_for(lambda: count[0] >= threshold, timeout=60)
        d.kill()
        for t in ts:
            t.join(60)
            check(not t.is_alive(), 'a client thread hung after the kill')
        byname = {x['metadata']['name']: x for x in docs}
        ok = [n for n, (s, _) in answers.items() if 200 <= s < 300]
        check(len(ok) >= threshold, 'round %d: %d acknowledged before the '
              'kill, wanted %d' % (rnd, len(ok), threshold))
        check(len(answers) < len(docs), 'round %d: the kill came after every '
              'request was answered' % rnd)
        for n in ok:
            eq(answers[n][0], 201, 'round %d: status of %s' % (rnd, n))
            acked[n] = byname[n]
            rv = int(json.loads(answers[n][1])['metadata']['resourceVersion'])
            max_rv = max(max_rv, rv)
        mark = len(d.stderr())
        d.start()
        log = d.stderr()[mark:]
        for ln in log.splitlines():
            check(' error ' not in ln and ' warn ' not in ln,
                  'round %d: the restarted store logged %r' % (rnd, ln))
        eq(d.get('/readyz').status, 200, 'round %d: /readyz' % rnd)
        items, rv = list_all(d, 'benchmarkprotocols')
        check(int(rv) >= max_rv, 'round %d: resourceVersion %s went back '
              'below %d' % (rnd, rv, max_rv))
        stored = {i['metadata']['name']: i for i in items}
        missing = [n for n in acked if n not in stored]
        check(not missing, 'round %d: %d acknowledged writes lost: %s' %
              (rnd, len(missing), missing[:5]))
        for n, doc in acked.items():
            eq(stored[n]['spec'], doc['spec'], 'round %d: %s spec' % (rnd, n))
            r = d.get('%s/objects/%s' % (G, digest(doc)))
            eq(r.status, 200, 'round %d: %s by digest' % (rnd, n))
            eq(r.body, canonical_bytes(doc), 'round %d: %s canonical bytes' %
               (rnd, n))
        for n, i in stored.items():
            check(n.startswith('dur-'), 'unexpected object %s' % n)
            src = byname.get(n) or acked.get(n)
            if src is None:
                # written in an earlier round without an answer
                rr, ii = n.split('-')[1:]
                src = protocol(n, harness='dur %s %d' % (rr, int(ii)))
            eq(i['spec'], src['spec'], 'round %d: unacknowledged %s is whole'
               % (rnd, n))
    print('      %d acknowledged writes over %d kills, all present' %
          (len(acked), rounds))
    eq(d.stop(), 0, 'exit status after SIGTERM')


def sigterm_variant(variant, n=1500):
    """One SIGTERM during an NDJSON upload of n protocols; raises
    TestFailure for what went wrong."""
    docs = [protocol('gs-%04d' % i, harness='graceful %d' % i)
            for i in range(n)]
    body = ('\n'.join(json.dumps(x) for x in docs) + '\n').encode()
    names = [x['metadata']['name'] for x in docs]
    d = Daemon(sync=True).start()
    result = {}
    sent = threading.Event()

    def client():
        kw = dict(chunks=60, pause=0.02) if variant == 'while_uploading' \
            else {}
        result['r'] = d.raw_request(
            'POST', G + '/benchmarkruns', body,
            headers={'Content-Type': 'application/x-ndjson'},
            on_sent=sent.set, timeout=60, **kw)
    t = threading.Thread(target=client, daemon=True)
    t.start()
    if variant == 'while_uploading':
        time.sleep(0.5)
        check(not sent.is_set(), 'the upload ended before the signal')
    else:
        sent.wait(30)
        time.sleep(0.05)
    d.signal(signal.SIGTERM)
    rc = d.wait(30)
    if rc is None:
        d.kill()
        raise TestFailure('the daemon did not stop within 30 s of SIGTERM')
    t.join(60)
    eq(rc, 0, 'exit status after SIGTERM')
    check('stopped cleanly' in d.stderr(), '"stopped cleanly" in the log')
    d.start()
    stored = set(i['metadata']['name'] for i in
                 list_all(d, 'benchmarkprotocols')[0])
    present = [x for x in names if x in stored]
    r = result.get('r')
    print('      %s: answer %s, %d of %d stored' % (
        variant, r.status if r is not None else 'none', len(present), n))
    check(len(present) in (0, n), '%d of %d documents of one upload after '
          'the restart' % (len(present), n))
    if variant == 'after_upload':
        # the whole body was sent before the signal: the request was in
        # flight, and in-flight requests finish, answer included
        check(r is not None, 'no answer to the upload (%d of %d documents '
              'stored): the daemon closed the connection instead of '
              'finishing the request' % (len(present), n))
    if r is not None and 200 <= r.status < 300:
        eq(len(present), n, 'the upload was acknowledged (%d) but is not '
           'all there' % r.status)
    if r is not None and r.status >= 300:
        eq(len(present), 0, 'the upload failed with %d yet left documents' %
           r.status)
    eq(d.stop(), 0, 'exit status of the restarted daemon')


@test
def sigterm_during_large_ndjson_upload():
    bad = []
    for variant in ('while_uploading', 'after_upload'):
        try:
            sigterm_variant(variant)
        except TestFailure as e:
            bad.append('%s: %s' % (variant, e))
    check(not bad, '\n'.join(bad))


if __name__ == '__main__':
    sys.exit(kitest.run_all())
