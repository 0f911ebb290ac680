#!/usr/bin/env python3
"""test_verify — the Verification controller's verdicts: a run whose kernel
family has no reference is answered at once without running anything; a
reference measured on another device gives a prediction for the run's GPU,
never a ratio of the two times; every Liger speed row of a family the
reference covers gets a verdict from a CPU measurement checked in float64.

Environment: KI_DAEMON, KI_CLI and KI_REF (see kitest); KI_SRCDIR for the
test data (tests/data/verify/liger-rows.csv: one Liger speed row per kernel
and pass)."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.dirname(kitest.daemon_path())
CLI = os.environ.get('KI_CLI') or os.path.join(BUILD, 'kernelindex')
REF = os.environ.get('KI_REF') or os.path.join(BUILD, 'kernelindex-ref')
SRC = os.environ.get('KI_SRCDIR') or os.path.dirname(os.path.dirname(HERE))
ROWS = os.path.join(SRC, 'tests', 'data', 'verify', 'liger-rows.csv')

# What the reference covers (physics/refcover.c), and the passes it does
# not measure: a loss's backward, whose gradient Liger makes in forward
# (GRPO's excepted: its backward rows are in the data, and measured).
# The families over linear layers are verified one run each by
# test_verify_linear.py (their CPU measurements take longest).
LINEAR = {'swiglu', 'geglu', 'tiled_swiglu', 'tiled_geglu',
          'fused_linear_cross_entropy', 'fused_linear_jsd',
          'fused_linear_orpo_loss', 'fused_linear_cpo_loss',
          'fused_linear_simpo_loss', 'kto_loss',
          'fused_linear_grpo_loss_token', 'fused_linear_grpo_loss_sequence',
          'distill_jsd_loss', 'distill_cosine_loss'}
COVERED = {'embedding', 'rms_norm', 'megatron_rms_norm', 'fused_add_rms_norm',
           'layer_norm', 'group_norm', 'softmax', 'sparsemax', 'relu_squared',
           'megatron_swiglu', 'megatron_cross_entropy', 'cross_entropy',
           'kl_div', 'jsd', 'tvd', 'rope', 'llama4_rope',
           'multi_token_attention', 'sparse_multi_token_attention',
           'fused_neighborhood_attention', 'fused_moe'} | LINEAR
NO_BACKWARD = {'cross_entropy', 'kl_div'} | (
    LINEAR - {'swiglu', 'geglu', 'tiled_swiglu', 'tiled_geglu',
              'fused_linear_grpo_loss_token',
              'fused_linear_grpo_loss_sequence'})
PREDICTED = ('WithinPrediction', 'SlowerThanPrediction', 'FasterThanPrediction',
             'FasterThanFloor')


def imported(d):
    p = subprocess.run([CLI, '--server', 'http://127.0.0.1:%d' % d.port,
                        'import', 'liger', ROWS], capture_output=True,
                       text=True, timeout=300)
    eq(p.returncode, 0, 'import: ' + p.stdout + p.stderr)


def run_of(d, kernel, pas):
    items = d.get(G + '/benchmarkruns?labelSelector=kernel%3D' + kernel +
                  ',pass%3D' + pas + ',metric%3Dlatency').json()['items']
    check(items, 'a %s %s run was imported' % (kernel, pas))
    return items[0]


def verify(d, name, run, timeout=120):
    r = d.post(G + '/verifications', {
        'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Verification',
        'metadata': {'name': name}, 'spec': {'runName': run}})
    eq(r.status, 201, 'create %s: %s' % (name, r.json()))
    end = time.time() + timeout
    while time.time() < end:
        st = d.get(G + '/verifications/' + name).json().get('status', {})
        if st.get('phase') in ('Succeeded', 'Failed'):
            return st
        time.sleep(0.1)
    raise kitest.TestFailure('verification %s did not finish' % name)


def conditions(st):
    return {c['type']: (c['status'], c['reason']) for c in st['conditions']}


@test
def the_page_and_the_tests_know_what_the_reference_covers():
    p = subprocess.run([REF, '--coverage'], capture_output=True, text=True,
                       timeout=30)
    eq(p.returncode, 0, 'kernelindex-ref --coverage')
    table = json.loads(p.stdout)
    eq(set(table), COVERED, 'the families this test expects')
    eq({k for k, v in table.items() if 'backward' not in v}, NO_BACKWARD,
       'the passes not measured')
    with open(os.path.join(SRC, 'static', 'js', 'run.js')) as f:
        js = f.read()
    block = re.search(r'const REFERENCE_COVERAGE = \{(.*?)\n\};', js, re.S)
    check(block, 'run.js has REFERENCE_COVERAGE')
    page = {m.group(1): re.findall(r"'(\w+)'", m.group(2)) for m in
            re.finditer(r"(\w+): \[([^\]]*)\]", block.group(1))}
    eq(page, table, 'the page offers a measurement exactly where one exists')


@test
def a_run_without_a_reference_is_answered_without_a_measurement():
    # The program path does not exist: were it started, the verification
    # would fail with "cannot start". Every speed row of Liger's data has a
    # reference now, so the run is a row in the data's form for a pass
    # that has none (a loss's backward), imported from a file of its own.
    d = kitest.Daemon(sync=False, args=['--ref-program',
                                        '/nonexistent/kernelindex-ref']).start()
    with open(ROWS) as f:
        header = f.readline()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'rows.csv')
        with open(path, 'w') as f:
            f.write(header)
            f.write('kl_div,liger,backward,speed,ms,V,vocab size,4096,'
                    '1.5,1.4,1.6,"{""B"": 8, ""T"": 2048}",'
                    'NVIDIA A100-SXM4-80GB,2024-09-03 15:31:39,0.2.1\n')
        p = subprocess.run([CLI, '--server', 'http://127.0.0.1:%d' % d.port,
                            'import', 'liger', path], capture_output=True,
                           text=True, timeout=300)
    eq(p.returncode, 0, 'import: ' + p.stdout + p.stderr)
    for i, (kernel, pas) in enumerate([('kl_div', 'backward')]):
        run = run_of(d, kernel, pas)
        st = verify(d, 'noref-%d' % i, run['metadata']['name'])
        eq((st['phase'], st['verdict'], st['reason']),
           ('Succeeded', 'Unverifiable', 'NoReference'), kernel + ' ' + pas)
        eq(conditions(st), {'Complete': ('True', 'NoReference'),
                            'Verified': ('Unknown', 'NoReference')},
           'no Measured condition')
        check('result' not in st and 'ratio' not in st, 'nothing measured')
        check('no reference measurement of ' + kernel in st['message'],
              st['message'])
        got = d.get(G + '/benchmarkruns/' + run['metadata']['name']).json()
        eq(got['status']['verification']['reason'], 'NoReference',
           'mirrored on the run')


def fake_program(tmp, gpu, median_ns, fraction):
    """A reference program that answers as the CUDA backend would on gpu."""
    path = os.path.join(tmp, 'ref-%s.sh' % abs(hash((gpu, median_ns,
                                                     fraction))))
    result = ('{"backend":"cuda","gpu":{"name":"%s"},"latencyNs":{"median":%g,'
              '"p20":%g,"p80":%g},"floor":{"fractionOfFloor":%g},'
              '"maxRelError":1e-7,"tolerance":1e-5,"correct":true,'
              '"scaled":false}' % (gpu, median_ns, median_ns, median_ns,
                                   fraction))
    with open(path, 'w') as f:
        f.write("#!/bin/sh\ncat >/dev/null\necho '%s'\n" % result)
    os.chmod(path, 0o755)
    return path


@test
def a_reference_on_another_gpu_gives_a_prediction_not_a_ratio():
    tmp = kitest.tempdir('kitest-fake-')
    cases = [
        # (reference GPU, its median, its fraction of floor, run kernel,
        #  want ratio?, want verdict, want reason)
        ('NVIDIA H100 80GB HBM3', 5e6, 0.8, 'embedding', False,
         'Consistent', None),
        ('NVIDIA H100 80GB HBM3', 5e6, 0.002, 'embedding', False,
         'Implausible', 'FasterThanPrediction'),
        ('NVIDIA A100-SXM4-80GB', 2e6, 0.8, 'embedding', True, None, None),
    ]
    for i, (gpu, med, frac, kernel, want_ratio, verdict, reason) in \
            enumerate(cases):
        d = kitest.Daemon(sync=False, args=['--ref-program', fake_program(
            tmp, gpu, med, frac)]).start()
        imported(d)
        run = run_of(d, kernel, 'full')
        eq(run['spec']['sourceNative']['externalId'].split('/')[3],
           'nvidia-a100-sxm4-80gb', 'an A100 run')
        st = verify(d, 'x%d' % i, run['metadata']['name'])
        eq(st['phase'], 'Succeeded', 'phase')
        mirror = d.get(G + '/benchmarkruns/' +
                       run['metadata']['name']).json()['status']['verification']
        if want_ratio:
            check('ratio' in st and 'ratio' in mirror and
                  'prediction' not in st, 'same GPU: a ratio %s' % st)
            check(st['reason'].endswith('Reference'), st['reason'])
        else:
            check('ratio' not in st and 'ratio' not in mirror and
                  'referenceNs' not in mirror,
                  'no ratio across GPUs: %s / %s' % (st, mirror))
            p = st['prediction']
            eq(p['gpu'], 'a100-sxm4-80gb', 'predicted for the run\'s GPU')
            check(abs(p['medianNs'] - p['floorNs'] / frac) <= 1e-6 *
                  p['medianNs'], 'prediction = floor / fraction: %s' % p)
            check(p['lowNs'] < p['medianNs'] < p['highNs'], 'a band %s' % p)
            check(abs(mirror['predictedNs'] - p['medianNs']) < 1,
                  'mirrored: %s' % mirror)
            eq(st['verdict'], verdict, 'verdict: %s' % st['message'])
            check(st['reason'] in PREDICTED, st['reason'])
            if reason:
                eq(st['reason'], reason, 'reason')
            check('predicted' in st['message'], st['message'])
        eq(conditions(st)['Complete'], ('True', 'Measured'), 'measured')
        d.stop()


@test
def every_covered_liger_row_gets_a_verdict_from_a_cpu_measurement():
    d = kitest.Daemon(sync=False, args=['--ref-program', REF]).start()
    imported(d)
    seen = set()
    runs = d.get(G + '/benchmarkruns?labelSelector=metric%3Dlatency'
                 '&limit=1000').json()['items']
    for i, run in enumerate(runs):
        lab = run['metadata']['labels']
        kernel, pas = lab['kernel'], lab['pass']
        if kernel not in COVERED or kernel in LINEAR:
            continue
        st = verify(d, 'row-%d' % i, run['metadata']['name'])
        what = '%s %s: %s' % (kernel, pas, st.get('message'))
        if pas == 'backward' and kernel in NO_BACKWARD:
            eq(st['reason'], 'NoReference', what)
            continue
        eq(st['phase'], 'Succeeded', what)
        res = st['result']
        eq(res['backend'], 'cpu', what)
        check(res['correct'] is True and res['checkedOutputs'] > 0,
              'float64 check: %s %s' % (what, res))
        check(st['verdict'] in ('Consistent', 'Implausible') and
              st['reason'] in PREDICTED, 'a verdict: ' + what)
        check('ratio' not in st, 'no CPU/GPU ratio: ' + what)
        eq(conditions(st)['Complete'], ('True', 'Measured'), what)
        seen.add(kernel)
        if pas == 'backward':
            seen.add(kernel + ' backward')
    eq(seen & (COVERED - LINEAR), COVERED - LINEAR,
       'every covered family has a row')
    check({'jsd backward', 'tvd backward'} <= seen,
          'the backward of jsd and tvd measured: %s' % sorted(seen))


if __name__ == '__main__':
    sys.exit(kitest.run_all())
