#!/usr/bin/env python3
"""test_verify_linear — the families over linear layers (the gated MLPs and
the losses over a language-model head) get a verdict from a CPU measurement:
every speed row of theirs in Liger's data converts, as `kernelindex import
liger` converts it, to a workload `kernelindex-ref --plan` takes, GRPO's
backward rows included (Liger's forward makes a loss's gradients; the
script's backward hands them over, and the reference measures that); every
GRPO backward workload of the data is measured and checked on the CPU; one
imported run of each family, and GRPO's backward runs, are verified end to
end, the shape halved to the CPU's budget, the outputs checked in float64,
and a prediction for the run's GPU given, never a CPU/GPU ratio.

Environment: KI_DAEMON, KI_CLI and KI_REF (see kitest); KI_SRCDIR for the
test data (tests/data/verify/liger-rows.csv)."""
import collections
import json
import os
import subprocess
import sys
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
CSV = os.path.join(SRC, 'tests', 'data', 'liger', 'all_benchmark_data.csv')
PREDICTED = ('WithinPrediction', 'SlowerThanPrediction', 'FasterThanPrediction',
             'FasterThanFloor')

MLPS = ['swiglu', 'geglu', 'tiled_swiglu', 'tiled_geglu']
GRPO = ['fused_linear_grpo_loss_token', 'fused_linear_grpo_loss_sequence']
LOSSES = ['fused_linear_cross_entropy', 'fused_linear_jsd',
          'fused_linear_orpo_loss', 'fused_linear_cpo_loss',
          'fused_linear_simpo_loss', 'kto_loss',
          'fused_linear_grpo_loss_token', 'fused_linear_grpo_loss_sequence',
          'distill_jsd_loss', 'distill_cosine_loss']


# The speed rows of each family in the data.
SPEED_ROWS = {'swiglu': 8, 'geglu': 24, 'tiled_swiglu': 60, 'tiled_geglu': 60,
              'fused_linear_cross_entropy': 16, 'fused_linear_jsd': 16,
              'fused_linear_orpo_loss': 32, 'fused_linear_cpo_loss': 16,
              'fused_linear_simpo_loss': 16, 'kto_loss': 20,
              'fused_linear_grpo_loss_token': 24,
              'fused_linear_grpo_loss_sequence': 24, 'distill_jsd_loss': 16,
              'distill_cosine_loss': 16}


def plan(spec):
    p = subprocess.run([REF, '--plan'], input=json.dumps({'workload': spec}),
                       capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout


def data_specs():
    """The speed rows per family and the distinct workloads of the data's
    rows of these families, as `kernelindex import liger` converts them."""
    p = subprocess.run([CLI, 'import', 'liger', CSV, '--dry-run', '-o',
                        'ndjson'], capture_output=True, text=True,
                       timeout=300)
    eq(p.returncode, 0, 'import --dry-run: ' + p.stderr)
    rows, specs = collections.Counter(), {}
    for line in p.stdout.splitlines():
        b = json.loads(line)
        spec = b['workload']['spec']
        if spec['kernel'] not in SPEED_ROWS or \
                'latencyNs' not in b['run']['spec'].get('timing', {}):
            continue
        rows[spec['kernel']] += 1
        specs[json.dumps(spec, sort_keys=True)] = spec
    return rows, specs


@test
def every_linear_speed_row_converts_to_a_workload_the_reference_takes():
    rows, specs = data_specs()
    eq(dict(rows), SPEED_ROWS, 'speed rows per family')
    cov = json.loads(subprocess.run([REF, '--coverage'], capture_output=True,
                                    text=True, timeout=30).stdout)
    grpo_bwd = 0
    for spec in specs.values():
        what = json.dumps(spec, sort_keys=True)
        rc, out = plan(spec)
        if spec['pass'] == 'backward':
            check(spec['kernel'] in MLPS + GRPO,
                  'the data\'s backward rows are the MLPs\' and GRPO\'s: ' +
                  what)
            grpo_bwd += spec['kernel'] in GRPO
        check(spec['pass'] in cov.get(spec['kernel'], []), 'covered: ' + what)
        eq(rc, 0, 'planned: %s: %s' % (what, out))
        got = json.loads(out)
        eq((got['kernel'], got['pass'], got['dtype']),
           (spec['kernel'], spec['pass'], spec['dtype']), what)
        # The data's H 4096 (1024 for KTO) and V 128256 or I 11008/4096
        # are past the CPU's budgets: always halved.
        check(got['scaled'] is True and got['parameters'], 'halved: ' + out)
    # B 2, 4, 8, 16 at each importance-sampling level.
    eq(grpo_bwd, 8, 'GRPO\'s distinct backward workloads')


@test
def every_grpo_backward_workload_of_the_data_is_measured_and_checked():
    _, specs = data_specs()
    done = 0
    for spec in specs.values():
        if spec['kernel'] not in GRPO or spec['pass'] != 'backward':
            continue
        what = json.dumps(spec, sort_keys=True)
        req = {'workload': spec, 'backend': 'cpu', 'maxSeconds': 60,
               'protocol': {'measurement': {'warmupMs': 5, 'repMs': 20}}}
        p = subprocess.run([REF], input=json.dumps(req), capture_output=True,
                           text=True, timeout=120)
        eq(p.returncode, 0, '%s: %s %s' % (what, p.stdout, p.stderr))
        res = json.loads(p.stdout)
        check(res['correct'] is True and res['checkedOutputs'] > 0 and
              res['maxRelError'] <= res['tolerance'],
              'checked in float64: %s: %s' % (what, p.stdout))
        check(res['scaled'] is True and res['latencyNs']['median'] > 0,
              'measured, halved: ' + p.stdout)
        # The hand-over's bytes: x's gradient read and written, the head's
        # read twice (stored and accumulated) and written; no FLOPs.
        par = res['ran']['parameters']
        s = 4 if spec['dtype'] == 'float32' else 2
        eq(res['floor']['bytes'],
           (2 * par['batch'] * par['seq'] * par['hidden'] +
            3 * par['vocab'] * par['hidden']) * s, 'floor bytes: ' + what)
        done += 1
    eq(done, 8, 'GRPO backward workloads measured')


def imported(d):
    p = subprocess.run([CLI, '--server', 'http://127.0.0.1:%d' % d.port,
                        'import', 'liger', ROWS], capture_output=True,
                       text=True, timeout=300)
    eq(p.returncode, 0, 'import: ' + p.stdout + p.stderr)


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


def runs_of(d, kernel):
    return d.get(G + '/benchmarkruns?labelSelector=kernel%3D' + kernel +
                 ',metric%3Dlatency').json()['items']


@test
def one_run_of_each_linear_family_gets_a_verdict_from_a_measurement():
    d = kitest.Daemon(sync=False, args=['--ref-program', REF]).start()
    imported(d)
    for i, kernel in enumerate(MLPS + LOSSES):
        runs = runs_of(d, kernel)
        check(runs, 'a %s run was imported' % kernel)
        # The full pass where the data has one (the most work), else the
        # forward (swiglu's data has forward rows only).
        by_pass = {r['metadata']['labels']['pass']: r for r in runs}
        pas = 'full' if 'full' in by_pass else 'forward'
        run = by_pass[pas]
        st = verify(d, 'lin-%d' % i, run['metadata']['name'], timeout=240)
        what = '%s %s: %s' % (kernel, pas, st.get('message'))
        eq(st['phase'], 'Succeeded', what)
        res = st['result']
        eq(res['backend'], 'cpu', what)
        check(res['correct'] is True and res['checkedOutputs'] > 0,
              'float64 check: %s %s' % (what, res))
        check(res['scaled'] is True, 'the data\'s shape is halved to fit '
              'the CPU: %s' % res)
        check(st['verdict'] in ('Consistent', 'Implausible') and
              st['reason'] in PREDICTED, 'a verdict: ' + what)
        check('ratio' not in st and 'prediction' in st,
              'a prediction, no CPU/GPU ratio: ' + what)
        check(st['prediction']['floorNs'] > 0, 'a floor: %s' % what)
        eq(conditions(st)['Complete'], ('True', 'Measured'), what)
    # GRPO's backward: the stored gradients handed over, measured.
    for i, kernel in enumerate(GRPO):
        runs = [r for r in runs_of(d, kernel)
                if r['metadata']['labels']['pass'] == 'backward']
        check(runs, 'a %s backward run was imported' % kernel)
        st = verify(d, 'lin-bwd-%d' % i, runs[0]['metadata']['name'],
                    timeout=240)
        what = '%s backward: %s' % (kernel, st.get('message'))
        eq(st['phase'], 'Succeeded', what)
        check(st.get('reason') != 'NoReference' and 'result' in st,
              'measured, not NoReference: %s %s' % (what, st.get('reason')))
        res = st['result']
        check(res['backend'] == 'cpu' and res['correct'] is True and
              res['checkedOutputs'] > 0, 'float64 check: %s %s' % (what, res))
        check(st['verdict'] in ('Consistent', 'Implausible') and
              st['reason'] in PREDICTED, 'a verdict: ' + what)
        check('ratio' not in st and st['prediction']['floorNs'] > 0,
              'a prediction, no CPU/GPU ratio: ' + what)
        eq(conditions(st)['Complete'], ('True', 'Measured'), what)


if __name__ == '__main__':
    sys.exit(kitest.run_all())
