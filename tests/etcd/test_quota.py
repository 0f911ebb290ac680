#!/usr/bin/env python3
"""test_quota — a daemon over an etcd whose space quota is small
(--quota-backend-bytes 8 MiB; etcd's default is 2 GiB), filled with the
Liger runs until etcd raises its NOSPACE alarm:
  - every write is then answered 507 InsufficientStorage whose message
    says that etcd's space quota is exhausted and what the operator does
    (compact, defrag, alarm disarm, or a larger quota);
  - the daemon logs it once at error level, not once per refused write;
  - reads (an object by name, a list page) are still served;
  - once the operator compacts, defragments and disarms the alarm, writes
    are taken again (and the daemon says so), and a second exhaustion is
    logged again.
Skipped (77) when etcd is not installed."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
sys.path.insert(0, HERE)
os.environ.pop('KI_ETCD_ENDPOINTS', None)  # the test chooses the store
import etcdcluster  # noqa: E402
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402

QUOTA = 8 << 20
ETCD = None
DAEMON = None
CSV = os.path.join(kitest.DATA, 'liger', 'all_benchmark_data.csv')
BUNDLES = []           # the Liger CSV as NDJSON bundles, one a line
_next = [0]


def proto(name, reps):
    return {'apiVersion': 'kernelindex.dev/v1alpha1',
            'kind': 'BenchmarkProtocol', 'metadata': {'name': name},
            'spec': {'measurement': {'timer': 'cuda_events',
                                     'primaryStatistic': 'median',
                                     'repetitions': reps}}}


def bundles(n, tag):
    """n Liger bundles whose runs are new: renamed NAME-TAG, externalId
    ID/TAG."""
    out = []
    for _ in range(n):
        i = _next[0]
        _next[0] += 1
        line = BUNDLES[i % len(BUNDLES)]
        d = json.loads(line)
        name = d['run']['metadata']['name']
        xid = d['run']['spec']['sourceNative']['externalId']
        k = '%s%d' % (tag, i // len(BUNDLES))
        out.append(line.replace('"%s"' % name, '"%s-%s"' % (name, k))
                   .replace('"%s"' % xid, '"%s/%s"' % (xid, k)))
    return ('\n'.join(out) + '\n').encode()


def fill(tag):
    """Uploads bundles 100 at a time until a write is refused: that
    answer. Fails when 8,000 bundles fit."""
    for _ in range(80):
        r = DAEMON.post(G + '/benchmarkruns', bundles(100, tag),
                        content_type='application/x-ndjson', timeout=120)
        if r.status != 201 and r.status != 200:
            return r
    check(False, 'the quota (%d bytes) was not reached: db %d bytes' %
          (QUOTA, ETCD.db_size()))
    return None


def error_lines():
    with open(DAEMON.log_path, encoding='utf-8', errors='replace') as f:
        return [ln for ln in f if ' error ' in ln]


def check_507(r, what):
    eq(r.status, 507, '%s: status (%r)' % (what, r.body[:300]))
    st = json.loads(r.body)
    eq(st.get('kind'), 'Status', what + ': a Status')
    eq(st.get('reason'), 'InsufficientStorage', what + ': reason')
    eq(st.get('code'), 507, what + ': code')
    msg = st.get('message', '')
    for said in ("etcd's space quota", 'exhausted', 'nothing was written',
                 'etcdctl compact', 'etcdctl defrag',
                 'etcdctl alarm disarm', '--quota-backend-bytes'):
        check(said in msg, '%s: the message says %r: %r' % (what, said, msg))


@test
def writes_past_the_quota_are_507_with_the_reason_logged_once():
    r = DAEMON.post(G + '/benchmarkprotocols', proto('before', 3))
    eq(r.status, 201, 'a write before the quota is reached')
    check_507(fill('a'), 'the upload that reached the quota')
    check(('m0', 'NOSPACE') in [('m0', a) for _, a in ETCD.alarms()],
          'etcd raised its NOSPACE alarm: %r' % ETCD.alarms())
    check_507(DAEMON.post(G + '/benchmarkprotocols', proto('p1', 4)),
              'a single create')
    check_507(DAEMON.post(G + '/benchmarkruns', bundles(1, 'b'),
                          content_type='application/x-ndjson'),
              'a one-bundle upload')
    lines = error_lines()
    eq(len(lines), 1, 'error lines after three refused writes: %r' % lines)
    check('space quota' in lines[0] and 'alarm disarm' in lines[0],
          'the error line names the quota and the remedy: %r' % lines[0])


@test
def reads_are_served_while_etcd_refuses_writes():
    r = DAEMON.get(G + '/benchmarkprotocols/before')
    eq(r.status, 200, 'an object by name')
    eq(json.loads(r.body)['spec']['measurement']['repetitions'], 3, 'spec')
    r = DAEMON.get(G + '/benchmarkruns?limit=5')
    eq(r.status, 200, 'a list page')
    eq(len(json.loads(r.body)['items']), 5, 'the page holds runs')
    eq(DAEMON.get('/readyz').status, 200, 'ready: reads are served')


@test
def writes_resume_once_the_operator_frees_space():
    ETCD.free_space()
    eq(ETCD.alarms(), [], 'the alarm is disarmed')
    check(ETCD.db_size() < QUOTA, 'defrag left room: %d' % ETCD.db_size())
    r = DAEMON.post(G + '/benchmarkprotocols', proto('after', 5))
    eq(r.status, 201, 'a write after the operator freed space (%r)' %
       r.body[:300])
    with open(DAEMON.log_path, encoding='utf-8', errors='replace') as f:
        check('etcd takes writes again' in f.read(),
              'the daemon says writes resume')
    eq(DAEMON.get(G + '/benchmarkprotocols/after').status, 200, 'read back')
    # A second exhaustion is reported again.
    check_507(fill('c'), 'the upload that reached the quota again')
    eq(len(error_lines()), 2, 'one more error line for the second time')


def cli_path():
    return os.environ.get('KI_CLI') or os.path.join(
        os.path.dirname(kitest.daemon_path()), 'kernelindex')


def main():
    global ETCD, DAEMON
    etcdcluster.skip_without_etcd()
    r = subprocess.run([cli_path(), 'import', 'liger', CSV, '--dry-run',
                        '-o', 'ndjson'], capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        print('kernelindex import liger --dry-run: %s' % r.stderr[-500:])
        return 1
    BUNDLES[:] = [ln for ln in r.stdout.splitlines() if ln.strip()]
    ETCD = etcdcluster.Cluster(1, quota=QUOTA).start_all()
    try:
        DAEMON = kitest.Daemon(args=[
            '--store', 'etcd', '--etcd-endpoints', ETCD.endpoints(),
            '--etcd-prefix', '/quota/', '--history', '100']).start()
        rc = kitest.run_all()
    finally:
        kitest.stop_all()
        ETCD.remove()
    return rc


if __name__ == '__main__':
    sys.exit(main())
