#!/usr/bin/env python3
"""bench/etcd.py — the embedded LMDB store against kernelindexd over a
three-member loopback etcd cluster, side by side in one run on this
machine: GET by name and by digest, a list page at 10,000 runs (and at a
large LMDB store), durable POSTs against etcd's own put rate on the same
cluster, watch fan-out, one replica against two, and what a run costs in
etcd's database (its 2 GiB default quota) with and without compressing
stored documents. Prints a table (medians of 3) and, with --out, writes it
with the machine and the command to a Markdown file.

usage: bench/etcd.py [--out FILE] [--quick]

Needs wrk, etcd (Debian's etcd-server), curl, a C compiler (scripts/deps.sh
--test and bench/run.sh install them) and the release daemon, CLI and
kernelindex-gen (KI_DAEMON, KI_CLI, KI_GEN; default build/release). Every
server listens on a free loopback port with its data under one temporary
directory, and is stopped by its PID at the end.

Environment: KI_BENCH_RUNS (runs in the large LMDB store, default
1,000,000), KI_BENCH_D (seconds of each wrk run, default 5)."""
import base64
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, 'tests', 'etcd'))
import etcdcluster  # noqa: E402

API = '/apis/kernelindex.dev/v1alpha1'
QUICK = '--quick' in sys.argv
REPS = 1 if QUICK else 3
D = int(os.environ.get('KI_BENCH_D', '2' if QUICK else '5'))
SMALL = 10000
LARGE = int(os.environ.get('KI_BENCH_RUNS', '20000' if QUICK else '1000000'))
QUOTA = 2 << 30               # etcd's default --quota-backend-bytes
HISTORY = 100000              # kernelindexd's default history
BUILD = os.path.join(TOP, 'build', 'release')
DAEMON = os.environ.get('KI_DAEMON') or os.path.join(BUILD, 'kernelindexd')
CLI = os.environ.get('KI_CLI') or os.path.join(os.path.dirname(DAEMON),
                                               'kernelindex')
GEN = os.environ.get('KI_GEN') or os.path.join(os.path.dirname(DAEMON),
                                               'bench', 'kernelindex-gen')
DATA = os.environ.get('KI_DATA_DIR') or os.path.join(TOP, 'tests', 'data')
SEED = os.path.join(DATA, 'seed', 'embedding-full-huggingface-a100.json')
CSV = os.path.join(DATA, 'liger', 'all_benchmark_data.csv')
TCK = os.sysconf('SC_CLK_TCK')

T = tempfile.mkdtemp(prefix='kibench-etcd-')
LOAD_START = open('/proc/loadavg').read().split()[0]
PROCS = []
CLUSTERS = []
R = {}                        # key -> [figures]
NOTES = []


def say(*a):
    print(*a, file=sys.stderr, flush=True)


def rec(key, v):
    R.setdefault(key, []).append(v)


def med(key):
    v = R.get(key)
    return statistics.median(v) if v else None


def freeport():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    p = s.getsockname()[1]
    s.close()
    return p


def ticks(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            st = f.read().rsplit(')', 1)[1].split()
        return int(st[11]) + int(st[12])
    except OSError:
        return 0


class Daemon:
    def __init__(self, name, *args, data_dir=None):
        self.port = freeport()
        self.dir = data_dir or os.path.join(T, name)
        os.makedirs(self.dir, exist_ok=True)
        self.url = 'http://127.0.0.1:%d' % self.port
        log = open(os.path.join(T, name + '.log'), 'ab')
        self.p = subprocess.Popen(
            [DAEMON, '--listen', '127.0.0.1:%d' % self.port, '--data-dir',
             self.dir, '--log-level', 'warn'] + list(args),
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        PROCS.append(self.p)
        for _ in range(600):
            try:
                with urllib.request.urlopen(self.url + '/readyz', timeout=2):
                    return
            except OSError:
                if self.p.poll() is not None:
                    sys.exit('%s exited: see %s.log' % (name, name))
                time.sleep(0.1)
        sys.exit('%s not ready' % name)

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(60)

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=120) as r:
            return json.loads(r.read())


def post(url, path, body, ctype='application/json'):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    c.request('POST', path, body, {'Content-Type': ctype})
    r = c.getresponse()
    return r.status, r.read()


def load(d, bundles, start, n, per=1000):
    """Uploads n Liger bundles with new runs (bundle i is Liger bundle
    i mod T renamed NAME-rK, externalId ID/rK, K = i div T), per a
    request. Returns the seconds it took."""
    t0 = time.time()
    i = start
    while i < start + n:
        j = min(start + n, i + per)
        out = []
        for k in range(i, j):
            line = bundles[k % len(bundles)]
            o = json.loads(line)
            name = o['run']['metadata']['name']
            xid = o['run']['spec']['sourceNative']['externalId']
            r = 'r%d' % (k // len(bundles))
            out.append(line.replace('"%s"' % name, '"%s-%s"' % (name, r))
                       .replace('"%s"' % xid, '"%s/%s"' % (xid, r)))
        st, body = post(d.url, API + '/benchmarkruns',
                        ('\n'.join(out) + '\n').encode(),
                        'application/x-ndjson')
        if st != 201:
            sys.exit('load at %d: %d %r' % (i, st, body[:300]))
        i = j
    return time.time() - t0


def total(d):
    return d.get(API + '/facets')['total']


def wrk(key, pids, url, threads, conns, script, *args, dur=None):
    """One wrk run; records KEY_rps, KEY_p50_us and the CPU time per
    request of each process group in pids ({label: [pid]})."""
    t0 = {k: sum(ticks(p) for p in v) for k, v in pids.items()}
    cmd = ['wrk', '-t%d' % threads, '-c%d' % conns, '-d%ds' % (dur or D),
           '-s', os.path.join(HERE, script), url]
    if args:
        cmd += ['--'] + list(args)
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    m = re.search(r'^KIRESULT (.*)$', out, re.M)
    if m is None:
        sys.exit('wrk printed no result: %s' % out)
    f = dict(kv.split('=') for kv in m.group(1).split())
    n = int(f['requests'])
    rec(key + '_rps', float(f['rps']))
    rec(key + '_p50_us', int(f['p50_us']))
    for k, v in pids.items():
        rec('%s_cpu_%s_us' % (key, k),
            (sum(ticks(p) for p in v) - t0[k]) / TCK * 1e6 / max(n, 1))
    if int(f['errors']) or int(f['status_errors']):
        NOTES.append('%s: %s socket errors, %s answers >= 400 in %d' %
                     (key, f['errors'], f['status_errors'], n))
    say('  %-28s %9.0f req/s  p50 %6s us' % (key, float(f['rps']),
                                              f['p50_us']))
    return float(f['rps']), n


def wrk_pair(key, urls, threads, conns, script, argsets):
    """wrk on each URL at once: the sum of their rates."""
    procs = []
    for u, a in zip(urls, argsets):
        cmd = ['wrk', '-t%d' % threads, '-c%d' % conns, '-d%ds' % D, '-s',
               os.path.join(HERE, script), u] + (['--'] + a if a else [])
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                      text=True))
    s = 0.0
    for p in procs:
        out = p.communicate()[0]
        m = re.search(r'rps=([0-9.]+)', out)
        if m is None:
            sys.exit('wrk printed no result: %s' % out)
        s += float(m.group(1))
    rec(key + '_rps', s)
    say('  %-28s %9.0f req/s (sum)' % (key, s))


def walk(d, offset):
    """The continue token of the list page at offset (pages of 1000)."""
    tok, done = '', 0
    while done < offset:
        q = 'limit=1000' + ('&continue=' + urllib.parse.quote(tok)
                            if tok else '')
        tok = d.get(API + '/benchmarkruns?' + q)['metadata']['continue']
        done += 1000
    return urllib.parse.quote(tok, safe='')


def deep_token(d, seq):
    """A continue token ("i:<id>", base64) that starts a page after the
    object id of sequence number seq: ids grow with each object stored,
    and runs are most of them, so the page is deep in the list and full."""
    tok = d.get(API + '/benchmarkruns?limit=1')['metadata']['continue']
    raw = base64.b64decode(tok + '=' * (-len(tok) % 4)).decode()
    first = int(raw[2:])
    t = base64.b64encode(('i:%d' % ((first >> 56 << 56) | seq)).encode())
    return urllib.parse.quote(t.decode().rstrip('='), safe='')


def db_settled(cl):
    """The members' database size after compacting every revision but the
    newest and defragmenting (as an operator would): member 0's bytes,
    and before that, the size it had grown to."""
    before = cl.db_size()
    rev = cl.call('/v3/kv/range', {'key': 'AA=='})['header']['revision']
    cl.call('/v3/kv/compaction', {'revision': rev, 'physical': True})
    for i in range(len(cl.names)):
        cl.call('/v3/maintenance/defragment', i=i, timeout=600)
    return cl.db_size(), before


def etcd_values(cl, prefix, n):
    """Up to n values under prefix (the store's keys), as bytes."""
    k = prefix.encode()
    end = k[:-1] + bytes([k[-1] + 1])
    got = cl.call('/v3/kv/range', {
        'key': base64.b64encode(k).decode(),
        'range_end': base64.b64encode(end).decode(), 'limit': n})
    return [base64.b64decode(kv['value']) for kv in got.get('kvs', [])]


def codec(stored, what):
    """zlib on stored values: mean bytes as etcd holds them, raw (values
    the store compressed, store/etcd_codec.c, inflated) and compressed,
    and the CPU time per value to compress and decompress (zlib's C code;
    Python's call overhead included)."""
    rec('z_%s_stored' % what, sum(len(v) for v in stored) / len(stored))
    vals = [zlib.decompress(v[8:]) if v[:4] == b'\xffKZ1' else v
            for v in stored]
    raw = sum(len(v) for v in vals) / len(vals)
    rec('z_%s_raw' % what, raw)
    zd = vals[0]
    for lvl, name, dic in ((1, 'z1', None), (6, 'z6', None),
                           (6, 'z6dict', zd)):
        t0 = time.process_time()
        outs = []
        for v in vals:
            c = zlib.compressobj(lvl, zdict=dic) if dic else \
                zlib.compressobj(lvl)
            outs.append(c.compress(v) + c.flush())
        t1 = time.process_time()
        for o in outs:
            dd = zlib.decompressobj(zdict=dic) if dic else \
                zlib.decompressobj()
            dd.decompress(o)
        t2 = time.process_time()
        rec('z_%s_%s' % (what, name), sum(map(len, outs)) / len(outs))
        rec('z_%s_%s_cus' % (what, name), (t1 - t0) / len(vals) * 1e6)
        rec('z_%s_%s_dus' % (what, name), (t2 - t1) / len(vals) * 1e6)


def fanout(fan, d, key, n, tpl):
    out = subprocess.run(
        [fan, '127.0.0.1', str(d.port), str(n), API + '/benchmarkruns', tpl,
         'w%s%d' % (key[6], n), '500', '16', str(max(2, D - 2)), str(REPS)],
        capture_output=True, text=True, timeout=600).stdout
    for line in out.splitlines():
        if not line.startswith('KIWATCH '):
            continue
        f = dict(kv.split('=') for kv in line.split()[1:])
        rec('%s_w%d_rps' % (key, n), float(f['rps']))
        rec('%s_w%d_p50_us' % (key, n), float(f['p50_us']))
        rec('%s_w%d_complete' % (key, n), int(f['complete']))
        rec('%s_w%d_drain_ms' % (key, n), float(f['drain_ms']))
        if int(f['failed']):
            NOTES.append('%s watch %d: %s writes failed' %
                         (key, n, f['failed']))
    say('  %s %d watchers: %s writes/s' % (key, n,
                                           med('%s_w%d_rps' % (key, n))))


def main():
    for tool in ('wrk', 'etcd', 'cc'):
        if shutil.which(tool) is None:
            sys.exit('%s is not installed (scripts/deps.sh --test)' % tool)
    for f in (DAEMON, CLI, GEN):
        if not os.access(f, os.X_OK):
            sys.exit('no %s (make kernelindexd kernelindex '
                     'bench/kernelindex-gen in build/release)' % f)
    fan = os.path.join(T, 'fanout')
    subprocess.run(['cc', '-O2', '-o', fan, os.path.join(HERE, 'fanout.c')],
                   check=True)
    t_start = time.time()
    bundles = subprocess.run([CLI, 'import', 'liger', CSV, '--dry-run', '-o',
                              'ndjson'], capture_output=True, text=True,
                             check=True).stdout.splitlines()
    seed = json.load(open(SEED))
    seed_name = seed['run']['metadata']['name']
    tpl = os.path.join(T, 'bundle.tpl')
    subprocess.run([sys.executable, os.path.join(HERE, 'bench.py'),
                    'template', SEED, tpl], check=True)

    say('== stores: LMDB, and a three-member etcd (quota 2 GiB)')
    cl = etcdcluster.Cluster(3, quota=QUOTA)
    CLUSTERS.append(cl)
    cl.start_all()
    epids = [p.pid for p in cl.procs]
    eps = cl.client
    lm = Daemon('lmdb', '--map-size', '16G')
    e1 = Daemon('etcd1', '--store', 'etcd', '--etcd-endpoints',
                ','.join(eps), '--etcd-prefix', '/bench/')
    size = {}
    for d in (lm, e1):
        st, body = post(d.url, API + '/benchmarkruns', open(SEED, 'rb').read())
        if st != 201:
            sys.exit('POST of the seed: %d %r' % (st, body[:300]))
        digest = [i['digest'] for i in json.loads(body)['items']
                  if i['kind'] == 'BenchmarkRun'][0]
        subprocess.run([CLI, '--server', d.url, 'import', 'liger', CSV],
                       check=True, stdout=subprocess.DEVNULL)
    r0 = total(e1)
    size['liger'], _ = db_settled(cl)
    load(lm, bundles, 0, SMALL - r0)
    secs = load(e1, bundles, 0, SMALL - r0)
    rec('etcd_load_runs_per_s', (SMALL - r0) / secs)
    size['small'], size['small_grown'] = db_settled(cl)
    r1 = total(e1)
    say('  %d runs in each; etcd took %.1f s for %d (%.0f runs/s)' %
        (r1, secs, SMALL - r0, (SMALL - r0) / secs))

    dpid = {'lmdb': {'daemon': [lm.p.pid]},
            'etcd': {'daemon': [e1.p.pid], 'etcd': epids}}
    say('== GET one run by name and by digest (wrk -t2 -c32)')
    for _ in range(REPS):
        for what, path in (('name', '/benchmarkruns/' + seed_name),
                           ('digest', '/objects/' + digest)):
            for k, d in (('lmdb', lm), ('etcd', e1)):
                wrk('get_%s_%s' % (what, k), dpid[k], d.url + API + path, 2,
                    32, 'stats.lua')

    say('== a list page (limit=100) at %d runs (wrk -t1 -c4)' % SMALL)
    pages = {}
    for k, d in (('lmdb', lm), ('etcd', e1)):
        pages[k] = {'first': '', 'deep': '&continue=' +
                    walk(d, SMALL * 9 // 10 // 1000 * 1000)}
    for _ in range(REPS):
        for where in ('first', 'deep'):
            for k, d in (('lmdb', lm), ('etcd', e1)):
                wrk('list10k_%s_%s' % (where, k), dpid[k], d.url + API +
                    '/benchmarkruns?limit=100' + pages[k][where], 1, 4,
                    'stats.lua')

    say('== durable POST of the seed bundle (wrk -t2 -c64), etcd put')
    before = {k: total(d) for k, d in (('lmdb', lm), ('etcd', e1))}
    put_val = os.path.join(T, 'put.b64')
    with open(put_val, 'w') as f:
        f.write(base64.b64encode(open(SEED, 'rb').read()).decode())
    for i in range(REPS):
        for k, d in (('lmdb', lm), ('etcd', e1)):
            wrk('post_%s' % k, dpid[k], d.url + API + '/benchmarkruns', 2, 64,
                'post.lua', 'p%s%d' % (k, i), tpl)
        wrk('put_etcd', {'etcd': epids}, eps[0] + '/v3/kv/put', 2, 64,
            'etcd_put.lua', 'put%d' % i, put_val)
    for k, d in (('lmdb', lm), ('etcd', e1)):
        rec('post_%s_created' % k, total(d) - before[k])
    r2 = total(e1)
    # etcd's own puts stay in the same database: delete them before the
    # size is measured.
    k = base64.b64encode(b'/kernelindex/benchmarkruns/put').decode()
    e = base64.b64encode(b'/kernelindex/benchmarkruns/puu').decode()
    cl.call('/v3/kv/deleterange', {'key': k, 'range_end': e})
    size['seed'], size['seed_grown'] = db_settled(cl)

    say('== watch fan-out (fanout.c: 500 writes/s offered, 16 connections)')
    for n in (0, 100):
        for k, d in (('lmdb', lm), ('etcd', e1)):
            fanout(fan, d, 'watch_' + k, n, tpl)

    say('== one replica against two (the second lists the members from m1)')
    e2 = Daemon('etcd2', '--store', 'etcd', '--etcd-endpoints',
                ','.join(eps[1:] + eps[:1]), '--etcd-prefix', '/bench/')
    for i in range(REPS):
        wrk_pair('rep1_get', [e1.url + API + '/benchmarkruns/' + seed_name],
                 2, 32, 'stats.lua', [None])
        wrk_pair('rep2_get', [d.url + API + '/benchmarkruns/' + seed_name
                              for d in (e1, e2)], 1, 16, 'stats.lua',
                 [None, None])
        wrk_pair('rep1_post', [e1.url + API + '/benchmarkruns'], 2, 64,
                 'post.lua', [['a%d' % i, tpl]])
        wrk_pair('rep2_post', [d.url + API + '/benchmarkruns'
                               for d in (e1, e2)], 1, 32, 'post.lua',
                 [['b%d' % i, tpl], ['c%d' % i, tpl]])
    e2.stop()

    say('== stored documents: zlib on etcd\'s values')
    codec(etcd_values(cl, '/bench/o/', 3000), 'rec')
    codec(etcd_values(cl, '/bench/e/', 3000), 'ev')

    say('== a large LMDB store: %d runs (kernelindex-gen)' % LARGE)
    lm.stop()
    big = os.path.join(T, 'big')
    shutil.copytree(lm.dir, big)
    out = subprocess.run([GEN, big, str(LARGE)], capture_output=True,
                         text=True, check=True).stdout
    say('  ' + out.strip())
    subprocess.run(['sync'])
    lb = Daemon('big', '--map-size', '64G', data_dir=big)
    tok = deep_token(lb, LARGE * 9 // 10)
    for _ in range(REPS):
        for where, q in (('first', ''), ('deep', '&continue=' + tok)):
            wrk('list1m_%s_lmdb' % where, {'daemon': [lb.p.pid]},
                lb.url + API + '/benchmarkruns?limit=100' + q, 1, 4,
                'stats.lua')
    rec('large_runs', total(lb))
    lb.stop()

    say('== etcd\'s database per run without events (--history 100)')
    c1 = etcdcluster.Cluster(1, quota=QUOTA)
    CLUSTERS.append(c1)
    c1.start_all()
    e3 = Daemon('etcd3', '--store', 'etcd', '--etcd-endpoints',
                c1.endpoints(), '--etcd-prefix', '/bench/', '--history',
                '100')
    subprocess.run([CLI, '--server', e3.url, 'import', 'liger', CSV],
                   check=True, stdout=subprocess.DEVNULL)
    h0 = total(e3)
    s_h0, _ = db_settled(c1)
    load(e3, bundles, 0, SMALL - h0)
    s_h1, _ = db_settled(c1)
    e3.stop()
    c1.stop_all()

    liger_ev = (size['small'] - size['liger']) / (r1 - r0)
    liger_noev = (s_h1 - s_h0) / (SMALL - h0)
    seed_ev = (size['seed'] - size['small']) / max(1, r2 - r1)
    ev = liger_ev - liger_noev
    room = QUOTA - size['liger']
    runs_q = room / liger_ev if room <= HISTORY * liger_ev else \
        HISTORY + (room - HISTORY * liger_ev) / liger_noev
    Q = {'liger_ev': liger_ev, 'liger_noev': liger_noev, 'seed_ev': seed_ev,
         'ev': ev, 'runs_q': runs_q, 'size': size, 'r0': r0, 'r1': r1,
         'r2': r2, 'h': (s_h0, s_h1, h0)}
    e1.stop()
    cl.stop_all()
    report(Q, time.time() - t_start)


def f0(x):
    return '—' if x is None else '{:,.0f}'.format(x)


def ratio(a, b):
    if not a or not b:
        return '—'
    return '%.2fx' % (a / b) if a / b >= 0.1 else '%.3fx' % (a / b)


def report(Q, took):
    rows = []

    def row(what, lk, ek, note=''):
        a, b = med(lk) if lk else None, med(ek) if ek else None
        rows.append('| %s | %s | %s | %s | %s |' % (
            what, f0(a), f0(b), ratio(b, a) if a and b else '', note))
    row('GET run by name, req/s', 'get_name_lmdb_rps', 'get_name_etcd_rps')
    row('GET run by name, p50 µs', 'get_name_lmdb_p50_us',
        'get_name_etcd_p50_us')
    row('GET object by digest, req/s', 'get_digest_lmdb_rps',
        'get_digest_etcd_rps')
    row('GET object by digest, p50 µs', 'get_digest_lmdb_p50_us',
        'get_digest_etcd_p50_us')
    row('GET by name, daemon CPU µs/req', 'get_name_lmdb_cpu_daemon_us',
        'get_name_etcd_cpu_daemon_us',
        'etcd members: %s µs' % f0(med('get_name_etcd_cpu_etcd_us')))
    row('list page 1 (limit=100) at 10k runs, req/s',
        'list10k_first_lmdb_rps', 'list10k_first_etcd_rps')
    row('list page at 90% of 10k runs, req/s', 'list10k_deep_lmdb_rps',
        'list10k_deep_etcd_rps')
    row('list page 1 at %s runs (LMDB only), req/s' %
        f0(med('large_runs')), 'list1m_first_lmdb_rps', None)
    row('list page deep in %s runs (LMDB only), req/s' %
        f0(med('large_runs')), 'list1m_deep_lmdb_rps', None)
    row('durable POST (seed bundle, 64 conns), req/s', 'post_lmdb_rps',
        'post_etcd_rps', 'runs created: %s / %s' % (
            f0(sum(R.get('post_lmdb_created', [0]))),
            f0(sum(R.get('post_etcd_created', [0])))))
    row('durable POST, p50 µs', 'post_lmdb_p50_us', 'post_etcd_p50_us')
    row('watch: writes/s with 0 watchers', 'watch_lmdb_w0_rps',
        'watch_etcd_w0_rps', '500/s offered')
    row('watch: writes/s with 100 watchers', 'watch_lmdb_w100_rps',
        'watch_etcd_w100_rps', 'watchers complete: %s / %s' % (
            f0(med('watch_lmdb_w100_complete')),
            f0(med('watch_etcd_w100_complete'))))
    row('watch: write p50 µs with 100 watchers', 'watch_lmdb_w100_p50_us',
        'watch_etcd_w100_p50_us')
    row('watch: drain ms with 100 watchers', 'watch_lmdb_w100_drain_ms',
        'watch_etcd_w100_drain_ms')
    t = ['| measure | LMDB | etcd (1 replica) | etcd/LMDB | note |',
         '|---|---|---|---|---|'] + rows
    put = med('put_etcd_rps')
    t += ['', '| etcd | req/s | ratio | note |', '|---|---|---|---|',
          '| etcd\'s own put (POST /v3/kv/put, 64 conns) | %s | | same '
          'cluster, member 0 |' % f0(put),
          '| durable POST through one replica | %s | %s of etcd\'s put | |'
          % (f0(med('post_etcd_rps')), ratio(med('post_etcd_rps'), put)),
          '| GET by name, 1 replica (wrk -t2 -c32) | %s | | |' %
          f0(med('rep1_get_rps')),
          '| GET by name, 2 replicas (2 × wrk -t1 -c16, summed) | %s | %s '
          '| |' % (f0(med('rep2_get_rps')),
                   ratio(med('rep2_get_rps'), med('rep1_get_rps'))),
          '| durable POST, 1 replica (wrk -t2 -c64) | %s | | |' %
          f0(med('rep1_post_rps')),
          '| durable POST, 2 replicas (2 × wrk -t1 -c32, summed) | %s | %s '
          '| |' % (f0(med('rep2_post_rps')),
                   ratio(med('rep2_post_rps'), med('rep1_post_rps')))]
    s = Q['size']
    t += ['', '| etcd\'s database | figure |', '|---|---|',
          '| after the seed and %s Liger runs (compacted, defragmented) | '
          '%s bytes |' % (f0(Q['r0']), f0(s['liger'])),
          '| after %s runs: grown / compacted+defragmented | %s / %s bytes |'
          % (f0(Q['r1']), f0(s['small_grown']), f0(s['small'])),
          '| per Liger run, with its watch event (history 100,000) | %s '
          'bytes |' % f0(Q['liger_ev']),
          '| per Liger run, events trimmed (--history 100) | %s bytes |' %
          f0(Q['liger_noev']),
          '| per seed-bundle run (durable POSTs), with its event | %s bytes '
          '|' % f0(Q['seed_ev']),
          '| runs at which 2 GiB bites (Liger mix, default history, '
          'compacted+defragmented) | %s |' % f0(Q['runs_q']),
          '| Liger bulk load through one replica | %s runs/s |' %
          f0(med('etcd_load_runs_per_s'))]
    t += ['', '| zlib on stored values | as stored B | raw B | level 1 B | '
          'level 6 B | level 6 + dictionary B | µs to compress (1 / 6 / '
          'dict) | µs to decompress (6) |', '|---|---|---|---|---|---|---|---|']
    for w, name in (('rec', 'object records (o/)'),
                    ('ev', 'watch events (e/)')):
        t.append('| %s | %s | %s | %s | %s | %s | %.1f / %.1f / %.1f | %.1f |'
                 % (name, f0(med('z_%s_stored' % w)),
            f0(med('z_%s_raw' % w)), f0(med('z_%s_z1' % w)),
            f0(med('z_%s_z6' % w)), f0(med('z_%s_z6dict' % w)),
            med('z_%s_z1_cus' % w), med('z_%s_z6_cus' % w),
            med('z_%s_z6dict_cus' % w), med('z_%s_z6_dus' % w)))
    text = '\n'.join(t)
    print(text)
    if NOTES:
        print('\nnotes:\n' + '\n'.join('- ' + n for n in NOTES))
    print('\nall figures (each run):')
    raw = json.dumps({k: [round(x, 1) for x in v] for k, v in R.items()},
                     sort_keys=True)
    print(raw)
    if '--out' in sys.argv:
        out = sys.argv[sys.argv.index('--out') + 1]
        model = subprocess.run(['lscpu'], capture_output=True, text=True)
        m = re.search(r'Model name:\s*(.*)', model.stdout)
        src = subprocess.run(['git', '-C', TOP, 'rev-parse', '--short',
                              'HEAD'], capture_output=True,
                             text=True).stdout.strip()
        with open(out, 'a') as f:
            f.write('\n## Run of %s (source %s)\n\n' % (
                time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()), src))
            f.write('- machine: %d CPUs, %s; load average at the start: %s, '
                    'at the end: %s\n' % (
                        os.cpu_count(), m.group(1) if m else '?', LOAD_START,
                        open('/proc/loadavg').read().split()[0]))
            f.write('- command: `bench/etcd.py --out %s` (%d s; medians of '
                    '%d runs of %d s)\n\n' % (os.path.relpath(out, TOP),
                                             took, REPS, D))
            f.write(text + '\n')
            if NOTES:
                f.write('\nNotes:\n\n' + '\n'.join('- ' + n for n in NOTES)
                        + '\n')
            f.write('\n<details><summary>every figure</summary>\n\n    %s\n'
                    '\n</details>\n' % raw)


if __name__ == '__main__':
    try:
        main()
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.kill()
                p.wait()
        for c in CLUSTERS:
            c.remove()
        shutil.rmtree(T, ignore_errors=True)
