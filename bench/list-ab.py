#!/usr/bin/env python3
"""bench/list-ab.py — a list page (limit=100) at 10,000 runs through
kernelindexd over its embedded LMDB store and through one or more
kernelindexd binaries over one etcd, taken in turn round after round, so
that a change to the etcd list path is judged side by side on a noisy
machine.

usage: bench/list-ab.py ROUNDS SECONDS LMDB_DAEMON LABEL=DAEMON [...]
  ('LABEL=DAEMON --threads 16': options after the binary go to it)

The first etcd daemon loads the runs (the Liger bundles renamed, as
bench/etcd.py does); every etcd daemon then serves the same keys (one
prefix). Each figure: wrk -t1 -c4 (as bench/etcd.py) on the first page
and on the page at 90% of the runs; per request, the daemon's and etcd's
CPU time and etcd's Range requests (its grpc_server_started_total).
KI_BENCH_MEMBERS: etcd members (default 1); KI_BENCH_CONNS: wrk's
connections (default 4); KI_CLI: the CLI (default the one beside
LMDB_DAEMON)."""
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location('kibench',
                                              os.path.join(HERE, 'etcd.py'))
B = importlib.util.module_from_spec(spec)
spec.loader.exec_module(B)


def ranges(url):
    with urllib.request.urlopen(url + '/metrics', timeout=10) as r:
        m = re.search(r'^grpc_server_started_total\{grpc_method="Range",'
                      r'grpc_service="etcdserverpb.KV",grpc_type="unary"\} '
                      r'(\d+)', r.read().decode(), re.M)
    return int(m.group(1)) if m else 0


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    rounds, secs, lmdb = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    specs = [a.split('=', 1) for a in sys.argv[4:]]
    conns = int(os.environ.get('KI_BENCH_CONNS', '4'))
    cli = os.environ.get('KI_CLI') or os.path.join(
        os.path.dirname(lmdb), 'kernelindex')
    bundles = subprocess.run([cli, 'import', 'liger', B.CSV, '--dry-run',
                              '-o', 'ndjson'], capture_output=True, text=True,
                             check=True).stdout.splitlines()
    cl = B.etcdcluster.Cluster(int(os.environ.get('KI_BENCH_MEMBERS', '1')))
    B.CLUSTERS.append(cl)
    cl.start_all()
    epids = [p.pid for p in cl.procs]
    eps = cl.client
    B.DAEMON = lmdb
    ds = {'lmdb': B.Daemon('lmdb', '--map-size', '4G')}
    for label, binary in specs:
        binary, *extra = binary.split()
        B.DAEMON = binary
        ds[label] = B.Daemon(label, '--store', 'etcd', '--etcd-endpoints',
                             ','.join(eps), '--etcd-prefix', '/bench/',
                             *extra)
        if len(ds) == 2:
            for d in (ds['lmdb'], ds[label]):
                st, _ = B.post(d.url, B.API + '/benchmarkruns',
                               open(B.SEED, 'rb').read())
                if st != 201:
                    sys.exit('POST of the seed: %d' % st)
                B.load(d, bundles, 0, B.SMALL - 1)
    B.say('%d runs in each' % B.total(ds['lmdb']))
    pages = {k: {'first': '', 'deep': '&continue=' +
                 B.walk(d, B.SMALL * 9 // 10 // 1000 * 1000)}
             for k, d in ds.items()}
    got = {}
    for _ in range(rounds):
        for where in ('first', 'deep'):
            for k, d in ds.items():
                pids = {'daemon': [d.p.pid]}
                if k != 'lmdb':
                    pids['etcd'] = epids
                r0 = ranges(eps[0])
                rps, n = B.wrk('%s_%s' % (where, k), pids, d.url + B.API +
                               '/benchmarkruns?limit=100' + pages[k][where],
                               1, conns, 'stats.lua', dur=secs)
                B.rec('%s_%s_ranges' % (where, k),
                      (ranges(eps[0]) - r0) / max(n, 1))
                got.setdefault((where, k), []).append(rps)
    print('| page | %s |' % ' | '.join(ds))
    print('|---|%s' % ('---|' * len(ds)))
    for where in ('first', 'deep'):
        cells = []
        base = statistics.median(got[(where, 'lmdb')])
        for k in ds:
            m = statistics.median(got[(where, k)])
            cpu = B.med('%s_%s_cpu_daemon_us' % (where, k))
            cell = '%.0f/s (%.2fx), daemon %.0f µs' % (m, m / base, cpu)
            if k != 'lmdb':
                cell += ', etcd %.0f µs, %.2f Range' % (
                    B.med('%s_%s_cpu_etcd_us' % (where, k)),
                    B.med('%s_%s_ranges' % (where, k)))
            cells.append(cell)
        print('| %s | %s |' % (where, ' | '.join(cells)))
    print('(medians of %d rounds of %d s, wrk -t1 -c%d; CPU and Range '
          'requests per page)' % (rounds, secs, conns))


if __name__ == '__main__':
    try:
        main()
    finally:
        for p in B.PROCS:
            if p.poll() is None:
                p.kill()
                p.wait()
        for c in B.CLUSTERS:
            c.remove()
        B.shutil.rmtree(B.T, ignore_errors=True)
