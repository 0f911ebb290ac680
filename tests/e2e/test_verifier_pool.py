#!/usr/bin/env python3
"""test_verifier_pool — the Verification controller's pool of devices,
tested without a GPU: kernelindex-ref presents N simulated devices
(KI_REF_SIMULATED_DEVICES) and appends each measurement's start and end,
with the device it was pinned to (CUDA_VISIBLE_DEVICES), to a log this test
reads. Checks: N measurements at once and never two on one device, the
pinning, fairness between two sources, a failing device taken out of the
pool, a restart mid-queue, and spec.gpu.

Environment: KI_DAEMON, KI_DATA_DIR (see kitest) and KI_REF (the
kernelindex-ref binary)."""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402

BUILD = os.path.dirname(kitest.daemon_path())
REF = os.environ.get('KI_REF') or os.path.join(BUILD, 'kernelindex-ref')
H100 = 'NVIDIA H100 80GB HBM3'
A100 = 'NVIDIA A100-SXM4-80GB'


def uuid(i):
    return 'GPU-5111a7ed-0000-4000-8000-%012d' % i


def daemon(n, delay_ms, models=None, fault=None, data_dir=None,
           option=False):
    """A daemon whose reference program presents n simulated devices (with
    option, asked by the daemon's verifier-simulated-devices, else by the
    environment it inherits); returns (daemon, log path)."""
    log = os.path.join(kitest.tempdir('kitest-pool-'), 'ref.log')
    env = {'KI_REF_SIMULATED_LOG': log,
           'KI_REF_SIMULATED_DELAY_MS': str(delay_ms)}
    args = ['--ref-program', REF, '--ref-timeout', '60']
    if option:
        args += ['--verifier-simulated-devices', str(n)]
    else:
        env['KI_REF_SIMULATED_DEVICES'] = str(n)
    if models:
        env['KI_REF_SIMULATED_MODELS'] = ','.join(models)
    if fault:
        env['KI_REF_SIMULATED_FAULT'] = fault
    d = kitest.Daemon(data_dir=data_dir, sync=data_dir is not None,
                      args=args, env=env)
    return d.start(), log


def run_bundle(name, source):
    """The seed bundle with its run renamed and its source set (the natural
    key (source, externalId) differs by source)."""
    b = kitest.seed()
    r = b['run']
    r['metadata']['name'] = name
    r['spec']['sourceNative']['source'] = source
    return b


def verification(name, run, gpu=None):
    spec = {'runName': run}
    if gpu is not None:
        spec['gpu'] = gpu
    return {'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Verification',
            'metadata': {'name': name}, 'spec': spec}


def wait_all(d, names, timeout=120):
    end = time.time() + timeout
    out = {}
    while time.time() < end:
        for n in names:
            if n not in out:
                st = d.get(G + '/verifications/' + n).json().get('status', {})
                if st.get('phase') in ('Succeeded', 'Failed'):
                    out[n] = st
        if len(out) == len(names):
            return out
        time.sleep(0.2)
    raise kitest.TestFailure('not finished: %s' %
                             sorted(set(names) - set(out)))


def read_log(path):
    """[(what, device, verification, time, pid)] in the order written."""
    rows = []
    with open(path) as f:
        for line in f:
            what, dev, ver, t, pid = line.split()
            rows.append((what, dev, ver, float(t), int(pid)))
    return rows


def intervals(rows):
    """{pid: (device, verification, start, end or None)}."""
    iv = {}
    for what, dev, ver, t, pid in rows:
        if what == 'start':
            iv[pid] = [dev, ver, t, None]
        elif what == 'end':
            iv[pid][3] = t
    return iv


def metric(d, name, **labels):
    text = d.get('/metrics').body.decode()
    want = ''.join(',%s="%s"' % kv for kv in sorted(labels.items()))
    total = None
    for line in text.splitlines():
        m = re.match(r'%s\{([^}]*)\} (\S+)$' % name, line)
        if m and all('%s="%s"' % kv in m.group(1) for kv in labels.items()):
            total = (total or 0) + float(m.group(2))
    check(total is not None, 'metric %s{%s} in /metrics' % (name, want))
    return total


@test
def three_devices_measure_three_at_once_never_two_on_one_and_pinned():
    d, log = daemon(3, 1200, option=True)
    eq(d.post(G + '/benchmarkruns', run_bundle('r-one', 'alpha')).status, 201,
       'run')
    names = ['v%d' % i for i in range(9)]
    for n in names:
        eq(d.post(G + '/verifications', verification(n, 'r-one')).status, 201,
           'create ' + n)
    sts = wait_all(d, names)
    for n, st in sts.items():
        eq(st['phase'], 'Succeeded', '%s: %s' % (n, st.get('message')))
    iv = intervals(read_log(log))
    eq(len(iv), 9, 'one measurement each')
    check(all(e is not None for _, _, _, e in iv.values()), 'all ended')
    # Concurrency: count the measurements running at each start.
    most = 0
    for _, _, s, _ in iv.values():
        most = max(most, sum(1 for _, _, s2, e2 in iv.values()
                             if s2 <= s < e2))
    eq(most, 3, 'three at once at the most, and three reached')
    for dev in (uuid(0), uuid(1), uuid(2)):
        mine = sorted((s, e) for dv, _, s, e in iv.values() if dv == dev)
        check(len(mine) >= 1, 'device %s measured' % dev)
        for (s1, e1), (s2, e2) in zip(mine, mine[1:]):
            check(e1 <= s2, 'two at once on %s' % dev)
    # Pinning: the child saw CUDA_VISIBLE_DEVICES = the UUID the status names.
    for dev, ver, _, _ in iv.values():
        eq(sts[ver]['device']['uuid'], dev, 'pinned: ' + ver)
        eq(sts[ver]['device']['name'], H100, 'model named: ' + ver)
    eq(metric(d, 'kernelindex_verifier_device_in_pool'), 3, 'three in pool')
    eq(metric(d, 'kernelindex_verifier_measurements_total', outcome='ok'), 9,
       'nine measured')
    d.stop()


@test
def two_sources_take_turns():
    d, log = daemon(1, 400)
    eq(d.post(G + '/benchmarkruns', run_bundle('r-a', 'alpha')).status, 201,
       'run a')
    eq(d.post(G + '/benchmarkruns', run_bundle('r-b', 'beta')).status, 201,
       'run b')
    a = ['a%d' % i for i in range(6)]
    b = ['b%d' % i for i in range(3)]
    for n in a:
        eq(d.post(G + '/verifications', verification(n, 'r-a')).status, 201,
           n)
    for n in b:
        eq(d.post(G + '/verifications', verification(n, 'r-b')).status, 201,
           n)
    wait_all(d, a + b)
    order = [ver for what, _, ver, _, _ in read_log(log) if what == 'start']
    eq(sorted(order), sorted(a + b), 'each once')
    # First come, first served would start beta's at 7, 8 and 9; in turns,
    # each source's oldest goes next.
    eq(order, ['a0', 'b0', 'a1', 'b1', 'a2', 'b2', 'a3', 'a4', 'a5'],
       'sources take turns')
    d.stop()


@test
def a_failing_device_leaves_the_pool_and_the_rest_go_on():
    d, log = daemon(3, 500, fault=uuid(1))
    eq(d.post(G + '/benchmarkruns', run_bundle('r-one', 'alpha')).status, 201,
       'run')
    names = ['f%d' % i for i in range(8)]
    for n in names:
        eq(d.post(G + '/verifications', verification(n, 'r-one')).status, 201,
           n)
    sts = wait_all(d, names)
    failed = [n for n, st in sts.items() if st['phase'] == 'Failed']
    eq(len(failed), 1, 'one measured on the failing device: %s' % failed)
    check('signal' in sts[failed[0]]['message'], sts[failed[0]]['message'])
    eq(sts[failed[0]]['device']['uuid'], uuid(1), 'named the device')
    rows = read_log(log)
    eq(sum(1 for r in rows if r[0] == 'start' and r[1] == uuid(1)), 1,
       'nothing more on the failed device')
    eq(metric(d, 'kernelindex_verifier_device_in_pool', uuid=uuid(1)), 0,
       'out of the pool')
    eq(metric(d, 'kernelindex_verifier_device_in_pool'), 2, 'two left')
    eq(metric(d, 'kernelindex_verifier_measurements_total', uuid=uuid(1),
              outcome='failed'), 1, 'its failure counted')
    check('leaves the pool' in d.stderr(), 'logged')
    d.stop()


@test
def a_restart_mid_queue_finishes_each_exactly_once():
    data = kitest.tempdir('kitest-pool-data-')
    d, log = daemon(2, 1500, data_dir=data)
    eq(d.post(G + '/benchmarkruns', run_bundle('r-one', 'alpha')).status, 201,
       'run')
    names = ['q%d' % i for i in range(6)]
    for n in names:
        eq(d.post(G + '/verifications', verification(n, 'r-one')).status, 201,
           n)
    end = time.time() + 30
    while sum(1 for r in read_log(log) if r[0] == 'start') < 3 \
            if os.path.exists(log) else True:
        check(time.time() < end, 'never got going')
        time.sleep(0.1)
    d.kill()
    d.start()
    sts = wait_all(d, names)
    for n, st in sts.items():
        eq(st['phase'], 'Succeeded', '%s: %s' % (n, st.get('message')))
        eq([c['type'] for c in st['conditions']].count('Complete'), 1,
           'one outcome: ' + n)
    ends = [r[2] for r in read_log(log) if r[0] == 'end']
    eq(sorted(ends), sorted(names), 'each measured to the end exactly once')
    d.stop()


@test
def spec_gpu_picks_the_model_or_ends_unverifiable():
    d, log = daemon(2, 100, models=[H100, A100])
    # The seed run is from an A100.
    eq(d.post(G + '/benchmarkruns', run_bundle('r-one', 'alpha')).status, 201,
       'run')
    for n, gpu in [('g-own', 'run'), ('g-h100', 'H100'), ('g-any', None),
                   ('g-mi300', 'MI300X')]:
        eq(d.post(G + '/verifications', verification(n, 'r-one', gpu)).status,
           201, n)
    r = d.post(G + '/verifications', verification('g-empty', 'r-one', ''))
    eq(r.status, 422, 'an empty spec.gpu')
    check('spec.gpu' in r.body.decode(), r.body[:300])
    sts = wait_all(d, ['g-own', 'g-h100', 'g-any', 'g-mi300'])
    eq(sts['g-own']['device']['name'], A100, 'the run\'s own model')
    eq(sts['g-h100']['device']['name'], H100, 'the model asked for')
    eq(sts['g-any']['phase'], 'Succeeded', 'any')
    st = sts['g-mi300']
    eq((st['phase'], st['verdict'], st['reason']),
       ('Failed', 'Unverifiable', 'NoMatchingGPU'), 'no such model')
    check(H100 in st['message'] and 'MI300X' in st['message'], st['message'])
    check('device' not in st, 'nothing measured it')
    d.stop()
    d, log = daemon(1, 100, models=[H100])
    eq(d.post(G + '/benchmarkruns', run_bundle('r-one', 'alpha')).status, 201,
       'run')
    eq(d.post(G + '/verifications', verification('own', 'r-one', 'run'))
       .status, 201, 'own')
    st = wait_all(d, ['own'])['own']
    eq((st['verdict'], st['reason']), ('Unverifiable', 'NoMatchingGPU'),
       'the host has no A100: %s' % st.get('message'))
    d.stop()


if __name__ == '__main__':
    sys.exit(kitest.run_all())
