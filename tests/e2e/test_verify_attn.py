#!/usr/bin/env python3
"""test_verify_attn — every speed row of Liger's data for the attention and
mixture-of-experts families (multi_token_attention,
sparse_multi_token_attention, fused_neighborhood_attention, fused_moe)
converts, as `kernelindex import liger` converts it, to a workload the
reference program takes: `kernelindex-ref --plan` reads each distinct
workload and names the shape its CPU backend would run, the data's shape
or that shape halved to the CPU's budgets (and then says so). One run of
each family is verified end to end by test_verify.py.

Environment: KI_CLI and KI_REF (see kitest); KI_SRCDIR for the data
(tests/data/liger/all_benchmark_data.csv)."""
import collections
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import check, eq, test  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.dirname(kitest.daemon_path())
CLI = os.environ.get('KI_CLI') or os.path.join(BUILD, 'kernelindex')
REF = os.environ.get('KI_REF') or os.path.join(BUILD, 'kernelindex-ref')
SRC = os.environ.get('KI_SRCDIR') or os.path.dirname(os.path.dirname(HERE))
CSV = os.path.join(SRC, 'tests', 'data', 'liger', 'all_benchmark_data.csv')

# The speed rows of each family in the data.
ROWS = {'fused_neighborhood_attention': 336, 'multi_token_attention': 36,
        'sparse_multi_token_attention': 36, 'fused_moe': 84}


def speed_workloads():
    """(kernel → number of speed rows, distinct workload specs)."""
    p = subprocess.run([CLI, 'import', 'liger', CSV, '--dry-run', '-o',
                        'ndjson'], capture_output=True, text=True,
                       timeout=300)
    eq(p.returncode, 0, 'import --dry-run: ' + p.stderr)
    rows, specs = collections.Counter(), {}
    for line in p.stdout.splitlines():
        b = json.loads(line)
        spec = b['workload']['spec']
        if spec['kernel'] not in ROWS:
            continue
        if 'latencyNs' not in b['run']['spec'].get('timing', {}):
            continue   # a memory row
        rows[spec['kernel']] += 1
        specs[json.dumps(spec, sort_keys=True)] = spec
    return rows, list(specs.values())


def plan(spec):
    p = subprocess.run([REF, '--plan'], input=json.dumps({'workload': spec}),
                       capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout


@test
def every_attention_and_moe_speed_row_has_a_reference():
    rows, specs = speed_workloads()
    eq(dict(rows), ROWS, 'speed rows per family')
    cov = json.loads(subprocess.run([REF, '--coverage'], capture_output=True,
                                    text=True, timeout=30).stdout)
    scaled = collections.Counter()
    for spec in specs:
        what = json.dumps(spec, sort_keys=True)
        check(spec['pass'] in cov.get(spec['kernel'], []),
              'covered: ' + what)
        rc, out = plan(spec)
        eq(rc, 0, 'planned: %s: %s' % (what, out))
        got = json.loads(out)
        eq((got['kernel'], got['pass'], got['dtype']),
           (spec['kernel'], spec['pass'], spec['dtype']), what)
        check(got['parameters'], 'a shape: ' + what)
        scaled[spec['kernel']] += got['scaled']
    # At the data's sizes the MoE's experts and the neighbourhood
    # attention's projections are past the CPU's budgets: always halved.
    check(scaled['fused_moe'] == sum(s['kernel'] == 'fused_moe'
                                     for s in specs), 'fused_moe halved')
    check(scaled['fused_neighborhood_attention'] > 0, 'attention halved')


@test
def a_plan_is_not_a_measurement_and_refuses_what_it_cannot_plan():
    spec = {'kernel': 'fused_moe', 'pass': 'full', 'dtype': 'bfloat16',
            'parameters': {'tokens': 32, 'experts': 4, 'hidden': 64,
                           'intermediate': 32, 'topk': 2}}
    rc, out = plan(spec)
    eq(rc, 0, out)
    got = json.loads(out)
    check('latencyNs' not in got, 'nothing measured: ' + out)
    eq((got['scaled'], got['parameters']), (False, spec['parameters']),
       'a shape within budget runs as asked')
    spec['parameters']['topk'] = 8
    rc, out = plan(spec)
    eq(rc, 2, out)
    check('topk' in json.loads(out)['error'], out)


if __name__ == '__main__':
    sys.exit(kitest.run_all())
