#!/usr/bin/env python3
"""End-to-end tests of series, comparisons, thresholds, the leaderboard
and CSV export: a made-up Liger release, 25% slower at the larger sizes of
each Liger sweep and 10% faster at the smaller ones (other providers
unchanged), is imported beside the real Liger data and must be found by
`kernelindex compare` (exit 1, exactly the slowed rows) and by a Threshold
as its runs arrive."""
import collections
import csv
import http.client
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402

BUILD = os.path.dirname(kitest.daemon_path())
CLI = os.environ.get('KI_CLI') or os.path.join(BUILD, 'kernelindex')
SRCDIR = os.environ.get('KI_SRCDIR') or kitest.REPO
CSV = os.path.join(SRCDIR, 'tests', 'data', 'liger', 'all_benchmark_data.csv')
BASE = '0.2.1'       # the real release the made-up one is made from
FAKE = '9.9.0'       # the made-up release
SLOWER, FASTER = 1.25, 0.9
ANN = 'liger.kernelindex.dev/'


def q(s):
    return urllib.parse.quote(s, safe='')


def made_up_release(path):
    """Writes the made-up release (the BASE rows, re-versioned, re-timed and
    scaled) to path; returns {row key: factor}."""
    with open(CSV, newline='') as f:
        rows = [r for r in csv.DictReader(f) if r['liger_version'] == BASE]
    fields = list(rows[0].keys())

    def sweep(r):
        return (r['kernel_name'], r['kernel_provider'],
                r['kernel_operation_mode'], r['metric_name'], r['gpu_name'],
                r['extra_benchmark_config_str'])
    xs = collections.defaultdict(list)
    for r in rows:
        xs[sweep(r)].append(float(r['x_value']))
    factors = {}
    with open(path, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            r = dict(r)
            s = sorted(xs[sweep(r)])
            k = 1.0
            if r['kernel_provider'] == 'liger':
                k = SLOWER if float(r['x_value']) >= s[len(s) // 2] else FASTER
            for c in ('y_value_50', 'y_value_20', 'y_value_80'):
                r[c] = repr(float(r[c]) * k)
            r['liger_version'] = FAKE
            # A new time: the run's natural key (source, externalId) is new.
            r['timestamp'] = '1999-12-31 00:00:00'
            w.writerow(r)
            factors[sweep(r) + (r['x_value'],)] = k
    return factors


def run_key(item):
    """The made_up_release key of a stored run."""
    md = item['metadata']
    a = md['annotations']
    kernel, mode = item['spec']['sourceNative']['benchmark'].split('/')
    metric = 'speed' if md['labels']['metric'] == 'latency' else 'memory'
    provider = item['spec']['sourceNative']['externalId'].split('/')[
        3 if metric == 'memory' else 2]
    return (kernel, provider, mode, metric, a[ANN + 'gpu-name'],
            a[ANN + 'extra-benchmark-config'], a[ANN + 'x-value'])


def cli(d, *args, timeout=300):
    return subprocess.run([CLI, '--server', 'http://127.0.0.1:%d' % d.port] +
                          list(args), capture_output=True, text=True,
                          timeout=timeout)


def runs(d, sel):
    r = d.get(G + '/benchmarkruns?labelSelector=' + q(sel))
    eq(r.status, 200, 'list ' + sel)
    return r.json()['items']


THRESHOLDS = [
    # Judges Liger's runs against the median of their series' history.
    {'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Threshold',
     'metadata': {'name': 'liger-5pct'},
     'spec': {'selector': 'provider=liger', 'test': 'percentage', 'limit': 5}},
    # Covers every run, but needs five earlier runs: a series of one run
    # must not alert under it.
    {'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Threshold',
     'metadata': {'name': 'all-z3'}, 'spec': {'test': 'zscore', 'limit': 3}},
]

_world = {}


class Watch:
    """A watch of runs under a label selector, read on a thread."""

    def __init__(self, d, sel):
        self.events = []
        self.conn = http.client.HTTPConnection('127.0.0.1', d.port,
                                               timeout=120)
        self.conn.request('GET', G + '/benchmarkruns?watch=true&'
                          'labelSelector=' + q(sel))
        self.resp = self.conn.getresponse()
        eq(self.resp.status, 200, 'watch')
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

    def wait(self, n, timeout=30):
        end = time.time() + timeout
        while len(self.events) < n and time.time() < end:
            time.sleep(0.05)
        time.sleep(0.2)   # and nothing more comes
        return list(self.events)

    def close(self):
        try:
            self.conn.sock.shutdown(2)
        except OSError:
            pass
        self.conn.close()


def world():
    """One daemon with the real Liger data, the two thresholds, then the
    made-up release; shared by the tests below."""
    if _world:
        return _world
    d = kitest.Daemon(sync=False).start()
    p = cli(d, 'import', 'liger', CSV)
    eq(p.returncode, 0, 'real import: ' + p.stderr[-2000:])
    for t in THRESHOLDS:
        eq(d.post(G + '/thresholds', t).status, 201, 'threshold')
    fake = os.path.join(kitest.tempdir(), 'made-up.csv')
    factors = made_up_release(fake)
    watch = Watch(d, 'regression=true')
    p = cli(d, 'import', 'liger', fake)
    # The importer cuts long run names inside the timestamp, so a few rows
    # of a second import share a name with a stored run and are refused as
    # AlreadyExists; everything else must arrive.
    for line in p.stderr.splitlines():
        check('AlreadyExists' in line or 'already indexed' in line or
              'imported' in line, 'import failure: ' + line)
    cand = runs(d, 'liger_version=' + FAKE)
    check(len(cand) >= 0.9 * len(factors), 'made-up runs stored: %d of %d' %
          (len(cand), len(factors)))
    slowed = sum(1 for i in cand if factors[run_key(i)] == SLOWER)
    _world['watched'] = sorted(
        e['object']['metadata']['name'] for e in watch.wait(slowed)
        if e['type'] == 'ADDED')
    watch.close()
    _world.update(d=d, factors=factors, cand=cand,
                  by_factor={k: sorted(i['metadata']['name'] for i in cand
                                       if factors[run_key(i)] == k)
                             for k in (SLOWER, FASTER, 1.0)})
    check(_world['by_factor'][SLOWER] and _world['by_factor'][FASTER],
          'the release has slowed and sped-up runs')
    return _world


def pairs_of(status, verdict):
    return sorted(n for p in status['pairs'] if p['verdict'] == verdict
                  for n in p['candidate']['runs'])


@test
def compare_finds_exactly_the_slowed_rows_and_exits_1():
    w = world()
    d = w['d']
    p = cli(d, 'compare', '--baseline', 'liger_version=' + BASE,
            '--candidate', 'liger_version=' + FAKE, '--threshold', '5%',
            '--include-implausible', '-o', 'json')
    eq(p.returncode, 1, 'exit status on a regression: ' + p.stderr)
    st = json.loads(p.stdout)['status']
    eq(pairs_of(st, 'Regression'), w['by_factor'][SLOWER], 'regressions')
    eq(pairs_of(st, 'Improvement'), w['by_factor'][FASTER], 'improvements')
    eq(pairs_of(st, 'Unchanged'), w['by_factor'][1.0], 'unchanged')
    s = st['summary']
    eq(s['regressions'], len(w['by_factor'][SLOWER]), 'summary regressions')
    eq(s['pairs'], len(w['cand']), 'every made-up run is paired')
    eq(s['candidateOnly'], 0, 'candidate only')
    eq(st['conditions'][0]['status'], 'True', 'Regressed condition')
    for pr in st['pairs']:
        want = {'Regression': 25.0, 'Improvement': -10.0,
                'Unchanged': 0.0}[pr['verdict']]
        check(abs(pr['changePercent'] - want) < 0.01, 'change %r' % pr)
        eq(len(pr['baseline']['runs']), 1, 'one baseline run')
        eq(pr['baseline']['version'], BASE, 'baseline version')
        lo, hi = pr['interval']['low'], pr['interval']['high']
        check(lo <= pr['ratio'] <= hi, 'ratio inside its interval: %r' % pr)
        # The interval comes from p20/p80: candidate p20 / baseline p80.
        check(abs(lo - pr['candidate']['low'] / pr['baseline']['high']) <
              1e-6 * lo, 'interval low')
    # The table and the PR comment exit 1 too; the comment has one red row
    # per regression.
    p = cli(d, 'compare', '--baseline', 'liger_version=' + BASE,
            '--candidate', 'liger_version=' + FAKE, '--include-implausible',
            '-o', 'markdown')
    eq(p.returncode, 1, 'markdown exit')
    eq(p.stdout.count('| 🔴 |'), len(w['by_factor'][SLOWER]), 'red rows')
    check(p.stdout.startswith('### 🔴 Regressions:'), p.stdout[:200])
    p = cli(d, 'compare', '--baseline', 'liger_version=' + BASE,
            '--candidate', 'liger_version=' + FAKE)
    eq(p.returncode, 1, 'table exit')
    eq(sum(1 for ln in p.stdout.splitlines() if ln.startswith('Regression ')),
       s['regressions'] - sum(
           1 for pr in st['pairs'] if pr['verdict'] == 'Regression' and
           implausible_pair(d, pr)), 'table regression rows')


_verdicts = {}


def implausible_pair(d, pr):
    if not _verdicts:
        for i in runs(d, 'verdict=implausible'):
            _verdicts[i['metadata']['name']] = 1
    return any(n in _verdicts for n in pr['baseline']['runs'] +
               pr['candidate']['runs'])


@test
def compare_without_regression_exits_0_and_leaves_implausible_out():
    w = world()
    d = w['d']
    # Only the sped-up sizes: improvements and nothing worse.
    p = cli(d, 'compare', '--baseline', 'liger_version=' + BASE,
            '--candidate', 'liger_version=' + FAKE, '-l', 'provider!=liger',
            '-o', 'json')
    eq(p.returncode, 0, 'no regression: exit 0; ' + p.stderr)
    s = json.loads(p.stdout)['status']['summary']
    eq((s['regressions'], s['improvements']), (0, 0), 'unchanged providers')
    # By default runs flagged Implausible take no part, and are counted.
    r = d.post(G + '/comparisons', {
        'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Comparison',
        'metadata': {'name': 'pr-1'},
        'spec': {'baseline': {'labelSelector': 'liger_version=' + BASE},
                 'candidate': {'labelSelector': 'liger_version=' + FAKE}}})
    eq(r.status, 201, 'comparison answered')
    body = r.json()
    eq(body['kind'], 'Comparison', 'kind')
    eq(body['metadata']['name'], 'pr-1', 'metadata echoed')
    implausible = len(runs(d, 'verdict=implausible,liger_version in (%s,%s)' %
                           (BASE, FAKE)))
    eq(body['status']['summary']['excludedImplausible'], implausible,
       'implausible runs left out')
    # Answered, not stored.
    eq(d.get(G + '/comparisons/pr-1').status, 404, 'not stored')


@test
def comparison_bad_input_is_refused_with_its_field():
    d = world()['d']
    r = d.post(G + '/comparisons', {
        'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Comparison',
        'spec': {'baseline': {'labelSelector': 'a in ('},
                 'thresholdPercent': -1, 'extra': 1}})
    eq(r.status, 422, 'invalid')
    fields = kitest.cause_fields(r.json())
    for f in ('spec.baseline.labelSelector', 'spec.candidate',
              'spec.thresholdPercent', 'spec.extra'):
        check(f in fields, '%s in %r' % (f, fields))
    r = d.post(G + '/comparisons', {'apiVersion': 'v1', 'kind': 'Pod'})
    eq(r.status, 400, 'not a Comparison')
    eq(d.get(G + '/comparisons?baseline=a%3Db').status, 400, 'no candidate')
    eq(d.get(G + '/comparisons?baseline=a%3Db&candidate=a%3Dc&format=xml')
       .status, 400, 'unknown format')
    p = cli(d, 'compare', '--baseline', 'x=1')
    eq(p.returncode, 2, 'usage')


@test
def thresholds_judge_the_release_as_it_arrives():
    w = world()
    d = w['d']
    flagged = sorted(i['metadata']['name'] for i in runs(d, 'regression=true'))
    eq(flagged, w['by_factor'][SLOWER], 'regression=true on exactly the '
       'slowed runs')
    # A watch on the label, opened before the release arrived, saw each of
    # them arrive.
    eq(w['watched'], w['by_factor'][SLOWER], 'watched as they arrived')
    by_name = {i['metadata']['name']: i for i in w['cand']}
    for n in w['by_factor'][SLOWER][:20]:
        c = [x for x in by_name[n]['status']['conditions']
             if x['type'] == 'Regressed'][0]
        eq((c['status'], c['reason']), ('True', 'ThresholdExceeded'), n)
        th = [t for t in by_name[n]['status']['thresholds']
              if t['threshold'] == 'liger-5pct'][0]
        check(abs(th['changePercent'] - 25) < 0.01, 'figures %r' % th)
        base = th['baseline']['runs']
        eq([b['version'] for b in base], [BASE], 'the baseline it names')
        check(base[0]['name'] in c['message'], 'message names the baseline: '
              + c['message'])
    for n in w['by_factor'][FASTER][:20]:
        c = [x for x in by_name[n]['status']['conditions']
             if x['type'] == 'Regressed'][0]
        eq((c['status'], c['reason']), ('False', 'WithinThreshold'), n)
        check('regression' not in by_name[n]['metadata']['labels'], n)
    # A series with one earlier run is too small a sample for the z-score
    # test: no alert, and the run says why.
    for n in w['by_factor'][1.0][:20]:
        c = [x for x in by_name[n]['status']['conditions']
             if x['type'] == 'Regressed'][0]
        eq((c['status'], c['reason']), ('Unknown', 'InsufficientHistory'), n)
        check('needs 5' in c['message'], c['message'])
    # The real data arrived before any Threshold: nothing judged there.
    for i in runs(d, 'liger_version=' + BASE)[:50]:
        check(all(x['type'] != 'Regressed' for x in i['status']['conditions']),
              'judged before any threshold')
    m = d.get('/metrics').body.decode()
    vals = {ln.split()[0]: float(ln.split()[1]) for ln in m.splitlines()
            if ln and not ln.startswith('#')}
    eq(vals['kernelindex_regressions_total'], len(w['by_factor'][SLOWER]),
       'regressions counter')
    eq(vals['kernelindex_threshold_runs_judged_total'], len(w['cand']),
       'judged counter')
    eq(vals['kernelindex_threshold_insufficient_history_total'],
       len(w['by_factor'][1.0]), 'insufficient counter')


def seed_run(name, version, median_ns, stamp):
    """The seed bundle as another run of its series."""
    b = kitest.seed()
    run = b['run']
    run['metadata']['name'] = name
    run['metadata']['labels'] = {'version': version}
    sn = run['spec']['sourceNative']
    sn['externalId'] = sn['externalId'].rsplit('/', 1)[0] + '/' + stamp
    k = median_ns / run['spec']['timing']['latencyNs']['median']
    run['spec']['timing']['latencyNs']['median'] = round(median_ns)
    for m in run['spec']['measurements']:
        m['value'] = round(m['value'] * k)
    for key in sn['metrics']:
        sn['metrics'][key] *= k
    sn['metrics']['ms_50'] = median_ns / 1e6
    return b


@test
def zscore_and_iqr_thresholds_judge_a_longer_series():
    # A reference program that fails at once: a Verification still writes
    # its outcome onto the run, which must keep its judgement.
    crash = os.path.join(kitest.tempdir(), 'crash.sh')
    with open(crash, 'w') as f:
        f.write('#!/bin/sh\ncat >/dev/null\nexit 3\n')
    os.chmod(crash, 0o755)
    d = kitest.Daemon(sync=False, args=['--ref-program', crash]).start()
    for t in ({'name': 'z', 'spec': {'test': 'zscore', 'limit': 3,
                                     'versionLabel': 'version'}},
              {'name': 'iqr', 'spec': {'test': 'iqr', 'limit': 1.5,
                                       'minSample': 5,
                                       'versionLabel': 'version'}}):
        eq(d.post(G + '/thresholds', {
            'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Threshold',
            'metadata': {'name': t['name']}, 'spec': t['spec']}).status, 201,
           t['name'])
    base = 7.5e6
    noise = [1.00, 1.01, 0.99, 1.02, 0.98, 1.00]
    for i, f in enumerate(noise):
        r = d.post(G + '/benchmarkruns', seed_run(
            'r%d' % i, '1.%d' % i, base * f, '2024-09-0%d-00-00-00' % (i + 1)))
        eq(r.status, 201, 'run %d: %r' % (i, r))
    early = d.get(G + '/benchmarkruns/r2').json()
    c = [x for x in early['status']['conditions'] if x['type'] == 'Regressed']
    eq((c[0]['status'], c[0]['reason']), ('Unknown', 'InsufficientHistory'),
       'two earlier runs are too few')
    eq(d.post(G + '/benchmarkruns', seed_run(
        'slow', '2.0', base * 1.25, '2024-10-01-00-00-00')).status, 201, 'slow')
    eq(d.post(G + '/benchmarkruns', seed_run(
        'noisy', '2.1', base * 1.015, '2024-10-02-00-00-00')).status, 201,
        'noisy')
    slow = d.get(G + '/benchmarkruns/slow').json()
    c = [x for x in slow['status']['conditions'] if x['type'] == 'Regressed'][0]
    eq(c['status'], 'True', 'a 25% jump is regressed')
    ths = {t['threshold']: t for t in slow['status']['thresholds']}
    check(ths['z']['zScore'] > 3 and ths['z']['regressed'], 'z %r' % ths['z'])
    check(ths['iqr']['regressed'] and ths['iqr']['value'] >
          ths['iqr']['fence'], 'iqr %r' % ths['iqr'])
    eq(ths['z']['sample'], 6, 'window of six earlier runs')
    eq(slow['metadata']['labels'].get('regression'), 'true', 'label')
    noisy = d.get(G + '/benchmarkruns/noisy').json()
    c = [x for x in noisy['status']['conditions']
         if x['type'] == 'Regressed'][0]
    # 1.5% above a history that spreads 4%: within both tests.
    eq(c['status'], 'False', 'noise is not a regression: %r' %
       noisy['status']['thresholds'])
    check('regression' not in noisy['metadata']['labels'], 'no label')
    # A label change re-renders the run: the judgement stays.
    r = d.request('PATCH', G + '/benchmarkruns/slow',
                  body={'metadata': {'labels': {'team': 'kernels'}}},
                  content_type='application/merge-patch+json')
    eq(r.status, 200, 'patch: %r' % r)
    slow = d.get(G + '/benchmarkruns/slow').json()
    check(any(x['type'] == 'Regressed' and x['status'] == 'True'
              for x in slow['status']['conditions']), 'kept after a patch')
    eq(slow['metadata']['labels'].get('regression'), 'true', 'label kept')
    eq(d.post(G + '/verifications', {
        'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Verification',
        'metadata': {'name': 'v-slow'}, 'spec': {'runName': 'slow'}}).status,
       201, 'verification')
    end = time.time() + 60
    while 'verification' not in slow['status'] and time.time() < end:
        time.sleep(0.2)
        slow = d.get(G + '/benchmarkruns/slow').json()
    check('verification' in slow['status'], 'the outcome reached the run')
    check(any(x['type'] == 'Regressed' and x['status'] == 'True'
              for x in slow['status']['conditions']), 'kept after a '
          'verification: %r' % slow['status'])
    eq(len(slow['status']['thresholds']), 2, 'judgements kept')
    eq(slow['metadata']['labels'].get('regression'), 'true', 'label kept')
    # A client's regression label on a run a Threshold judges is the
    # server's to set.
    b = seed_run('claims', '2.2', base * 1.0, '2024-10-03-00-00-00')
    b['run']['metadata']['labels']['regression'] = 'true'
    eq(d.post(G + '/benchmarkruns', b).status, 201, 'claims')
    claims = d.get(G + '/benchmarkruns/claims').json()
    check('regression' not in claims['metadata']['labels'],
          'judged not regressed: %r' % claims['metadata']['labels'])
    d.stop()


@test
def threshold_bad_specs_are_refused_with_their_field():
    d = world()['d']
    for spec, field in (({'test': 'median'}, 'spec.test'),
                        ({'test': 'zscore', 'window': 3, 'minSample': 4},
                         'spec.minSample'),
                        ({'test': 'iqr', 'window': 0}, 'spec.window'),
                        ({'test': 'percentage', 'selector': 'a in ('},
                         'spec.selector'),
                        ({'test': 'percentage', 'direction': 'up'},
                         'spec.direction')):
        r = d.post(G + '/thresholds', {
            'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Threshold',
            'metadata': {'name': 'bad'}, 'spec': spec})
        eq(r.status, 422, '%r' % spec)
        check(field in kitest.cause_fields(r.json()), '%s in %r' % (
            field, r.json()))
    eq(d.get(G + '/thresholds/bad').status, 404, 'nothing stored')


@test
def a_source_limited_token_may_not_create_thresholds():
    data = kitest.tempdir('kitest-scope-')

    def token(*args):
        p = subprocess.run(kitest.command(data, 'token', 'create', *args), capture_output=True,
                           text=True, timeout=60)
        eq(p.returncode, 0, 'token: ' + p.stderr)
        return {'Authorization': 'Bearer ' + p.stdout.strip()}
    W = token('--role', 'writer')
    L = token('--role', 'writer', '--source', 'liger-kernel-bench')
    R = token('--role', 'reader')
    d = kitest.Daemon(data_dir=data, sync=False).start()
    t = {'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Threshold',
         'metadata': {'name': 'mine'}, 'spec': {'test': 'percentage'}}
    # It would label every source's arriving runs.
    r = d.post(G + '/thresholds', t, headers=L)
    kitest.status_of(r, 403, 'Forbidden')
    eq(d.post(G + '/thresholds', t, headers=R).status, 403, 'reader')
    eq(d.post(G + '/thresholds', t, headers=W).status, 201, 'writer')
    # A comparison only reads: a reader may ask for one.
    eq(d.post(G + '/comparisons', {
        'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Comparison',
        'spec': {'baseline': {'labelSelector': 'a=b'},
                 'candidate': {'labelSelector': 'a=c'}}}, headers=R).status,
       201, 'reader comparison')
    d.stop()


@test
def leaderboard_ranks_providers_per_gpu():
    d = world()['d']
    r = d.get(G + '/leaderboard?gpu=h100-sxm5-80gb')
    eq(r.status, 200, 'leaderboard')
    lb = r.json()
    eq(lb['kind'], 'Leaderboard', 'kind')
    check(len(lb['items']) > 100, 'items: %d' % len(lb['items']))
    for it in lb['items']:
        es = it['entries']
        eq(it['series']['gpu'], 'h100-sxm5-80gb', 'gpu')
        eq(len({e['provider'] for e in es}), len(es), 'a provider once')
        eq(it['winner'], es[0], 'winner first')
        lower = it['series']['metric'] in ('latency', 'peak_memory')
        meds = [e['median'] for e in es]
        eq(meds, sorted(meds, reverse=not lower), 'ranked')
        if len(es) > 1:
            want = (es[1]['median'] / es[0]['median'] - 1) * 100
            check(abs(it['marginPercent'] - want) <= 1e-8 * max(1, want),
                  'margin %r' % it)
        check(not any(e['implausible'] for e in es), 'implausible left out')
    all_ = d.get(G + '/leaderboard?gpu=h100-sxm5-80gb&includeImplausible=true')
    n_impl = len(runs(d, 'gpu=h100-sxm5-80gb,verdict=implausible'))
    eq(lb['excludedImplausible'], n_impl, 'excluded count')
    check(sum(len(i['entries']) for i in all_.json()['items']) >=
          sum(len(i['entries']) for i in lb['items']), 'more with them')
    c = d.get(G + '/leaderboard?gpu=h100-sxm5-80gb&format=csv')
    eq(c.headers.get('Content-Type').split(';')[0], 'text/csv', 'csv type')
    rows = list(csv.DictReader(c.body.decode().splitlines()))
    eq(len(rows), sum(len(i['entries']) for i in lb['items']), 'csv rows')
    eq(sum(1 for x in rows if x['rank'] == '1'), len(lb['items']), 'winners')
    eq(d.get(G + '/leaderboard?gpu=Not%20A%20Slug').status, 400, 'bad gpu')


@test
def series_lists_each_series_in_version_order():
    w = world()
    d = w['d']
    sel = 'provider=liger,gpu=a100-sxm4-80gb,kernel=cross_entropy'
    r = d.get(G + '/series?labelSelector=' + q(sel))
    eq(r.status, 200, 'series')
    items = r.json()['items']
    check(items, 'some series')
    by_name = {i['metadata']['name']: i for i in w['cand']}
    slowed = set(w['by_factor'][SLOWER])
    for it in items:
        eq((it['series']['provider'], it['series']['gpu']),
           ('liger', 'a100-sxm4-80gb'), 'selected')
        vs = [p['version'] for p in it['points']]
        eq(vs, sorted(vs, key=lambda v: [int(x) for x in v.split('.')]),
           'version order')
        if vs == [BASE, FAKE]:
            a, b = it['points']
            check(b['run'] in by_name, 'the made-up run')
            k = SLOWER if b['run'] in slowed else FASTER
            check(abs(b['median'] / a['median'] - k) < 1e-3, 'scaled %r' % it)
    eq(d.get(G + '/series?labelSelector=' + q('a in (')).status, 400,
       'bad selector')


@test
def kubectl_creates_comparisons_and_lists_thresholds():
    kubectl = shutil.which('kubectl')
    if kubectl is None:
        print('kubectl not installed: skipped')
        return
    w = world()
    d = w['d']
    cfgdir = kitest.tempdir('kitest-kube-')
    cfg = os.path.join(cfgdir, 'config')
    with open(cfg, 'w') as f:
        f.write('apiVersion: v1\nkind: Config\nclusters:\n'
                '- name: ki\n  cluster: {server: "http://127.0.0.1:%d"}\n'
                'contexts:\n- name: ki\n  context: {cluster: ki, user: ki}\n'
                'current-context: ki\nusers:\n- name: ki\n  user: {}\n'
                % d.port)
    env = dict(os.environ, KUBECONFIG=cfg, HOME=cfgdir,
               KUBECACHEDIR=os.path.join(cfgdir, 'c'))

    def k(*args, input=None):
        p = subprocess.run([kubectl] + list(args), env=env, input=input,
                           capture_output=True, text=True, timeout=60)
        eq(p.returncode, 0, 'kubectl %s: %s' % (' '.join(args), p.stderr))
        return p.stdout
    out = k('get', 'kth')
    check('liger-5pct' in out and 'percentage' in out, out)
    # kubectl validates a create against a resource's PATCH operation,
    # which a Comparison has none of: --validate=false sends it as it is.
    cmp = json.dumps({
        'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Comparison',
        'metadata': {'name': 'ci'},
        'spec': {'baseline': {'labelSelector': 'liger_version=' + BASE},
                 'candidate': {'labelSelector': 'liger_version=' + FAKE},
                 'includeImplausible': True}})
    out = k('create', '--validate=false', '-f', '-', '-o',
            'jsonpath={.status.summary.regressions}', input=cmp)
    eq(int(out), len(w['by_factor'][SLOWER]), 'regressions through kubectl')
    check('thresholdPercent' in k('explain', 'comparison.spec'), 'explain')


@test
def csv_export_of_runs_and_comparisons():
    w = world()
    d = w['d']
    r = d.get(G + '/benchmarkruns?labelSelector=' + q('liger_version=' + FAKE),
              headers={'Accept': 'text/csv'})
    eq(r.status, 200, 'runs csv')
    rows = list(csv.DictReader(r.body.decode().splitlines()))
    eq(sorted(x['name'] for x in rows),
       sorted(i['metadata']['name'] for i in w['cand']), 'one row a run')
    eq({x['version'] for x in rows}, {FAKE}, 'versions')
    r = d.get(G + '/comparisons?baseline=' + q('liger_version=' + BASE) +
              '&candidate=' + q('liger_version=' + FAKE) +
              '&includeImplausible=true&format=csv')
    eq(r.status, 200, 'comparison csv')
    rows = list(csv.DictReader(r.body.decode().splitlines()))
    eq(sorted(x['candidate_runs'] for x in rows if x['verdict'] ==
              'Regression'), w['by_factor'][SLOWER], 'csv regressions')
    p = cli(d, 'compare', '--baseline', 'liger_version=' + BASE,
            '--candidate', 'liger_version=' + FAKE, '--include-implausible',
            '-o', 'csv')
    eq(p.returncode, 1, 'csv exit')
    check(p.stdout.splitlines() == r.body.decode().splitlines(),
          'the CLI prints the server CSV')


if __name__ == '__main__':
    sys.exit(kitest.run_all())
