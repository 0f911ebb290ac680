#!/usr/bin/env python3
"""test_kubectl — a real kubectl (1.32) against the real daemon: discovery,
server-side Tables, selectors, paging, watch, OpenAPI-driven create/apply,
explain, label/patch/replace, delete and the errors kubectl prints.

Needs kubectl on PATH (it is on the machines this project builds on); the
daemon comes from KI_DAEMON and the test data from KI_DATA_DIR."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402

KUBECTL = shutil.which('kubectl')
STATE = {}


def daemon():
    if 'd' not in STATE:
        d = kitest.Daemon(sync=False).start()
        cfgdir = kitest.tempdir('kitest-kube-')
        cfg = os.path.join(cfgdir, 'config')
        with open(cfg, 'w') as f:
            f.write('apiVersion: v1\nkind: Config\nclusters:\n'
                    '- name: ki\n  cluster: {server: "http://127.0.0.1:%d"}\n'
                    'contexts:\n- name: ki\n  context: {cluster: ki, user: ki}\n'
                    'current-context: ki\nusers:\n- name: ki\n  user: {}\n'
                    % d.port)
        STATE['d'] = d
        STATE['env'] = dict(os.environ, KUBECONFIG=cfg,
                            HOME=cfgdir, KUBECACHEDIR=os.path.join(cfgdir, 'c'))
        STATE['dir'] = cfgdir
        r = d.post(G + '/benchmarkruns', kitest.seed())
        eq(r.status, 201, 'seed POST')
    return STATE['d']


def kubectl(*args, input=None, timeout=60, ok=True):
    daemon()
    p = subprocess.run([KUBECTL] + list(args), env=STATE['env'],
                       input=input, capture_output=True, text=True,
                       timeout=timeout)
    if ok and p.returncode != 0:
        raise kitest.TestFailure('kubectl %s: rc %d\n%s%s' % (
            ' '.join(args), p.returncode, p.stdout, p.stderr))
    return p


def write(name, text):
    path = os.path.join(STATE['dir'], name)
    with open(path, 'w') as f:
        f.write(text)
    return path


SEED_RUN = kitest.seed()['run']['metadata']['name']


@test
def api_resources_lists_six_kinds_with_short_names():
    out = kubectl('api-resources').stdout
    for plural, short in [('benchmarkruns', 'kbr'), ('benchmarkprotocols', 'kbp'),
                          ('executionenvironments', 'kee'), ('workloads', 'kwl'),
                          ('implementations', 'kimpl'),
                          ('verifications', 'kver')]:
        line = [l for l in out.splitlines() if l.startswith(plural + ' ')]
        check(line and short in line[0].split(), '%s with %s in:\n%s' %
              (plural, short, out))
    eq(kubectl('api-versions').stdout.split(), ['authentication.k8s.io/v1',
       'authorization.k8s.io/v1', 'kernelindex.dev/v1alpha1'], 'api-versions')


@test
def get_prints_the_server_table_with_derived_labels():
    out = kubectl('get', 'kbr').stdout
    head = out.splitlines()[0].split()
    eq(head, ['NAME', 'KERNEL', 'PASS', 'PROVIDER', 'GPU', 'DTYPE', 'MEDIAN',
              'VERDICT', 'AGE'], 'columns')
    row = out.splitlines()[1].split()
    eq(row[:8], [SEED_RUN, 'embedding', 'full', 'huggingface',
                 'a100-sxm4-80gb', 'float32', '7.489', 'ms'], 'the seed row')
    check('Plausible' in out, 'verdict shown: ' + out)
    wide = kubectl('get', 'kbr', '-o', 'wide').stdout
    check('P20-P80' in wide and '7.484 ms - 7.52 ms' in wide, wide)
    lab = kubectl('get', 'kbr', '--show-labels').stdout
    check('kernel=embedding' in lab and 'liger_version=0.2.1' in lab, lab)
    col = kubectl('get', 'kbr', '-L', 'gpu').stdout
    check(col.splitlines()[0].split()[-1] == 'GPU' and
          'a100-sxm4-80gb' in col.splitlines()[1], col)


@test
def selectors_select_and_bad_fields_are_400():
    eq(kubectl('get', 'kbr', '-l', 'kernel=embedding,gpu=a100-sxm4-80gb',
               '-o', 'name').stdout.strip(),
       'benchmarkrun.kernelindex.dev/' + SEED_RUN, '-l equality')
    p = kubectl('get', 'kbr', '-l', 'provider in (liger,torch)', ok=False)
    check('No resources found' in p.stderr + p.stdout, p.stderr + p.stdout)
    eq(kubectl('get', 'kbr', '-l', 'provider notin (liger),!nothere', '-o',
               'name').stdout.count('\n'), 1, 'notin and !key')
    eq(kubectl('get', 'kbr', '--field-selector', 'metadata.name=' + SEED_RUN,
               '-o', 'name').stdout.count('\n'), 1, 'field selector')
    p = kubectl('get', 'kbr', '--field-selector', 'spec.gpu=H100', ok=False)
    eq(p.returncode, 1, 'rc for an unsupported field')
    check('field label not supported: spec.gpu' in p.stderr, p.stderr)


@test
def yaml_output_and_not_found():
    y = kubectl('get', 'kee', 'liger-bench-nvidia-a100-sxm4-80gb', '-o',
                'json').stdout
    o = json.loads(y)
    eq(o['spec']['hardware']['product'], 'NVIDIA A100', 'spec via kubectl')
    check(o['metadata']['resourceVersion'] and o['metadata']['uid'], 'meta')
    p = kubectl('get', 'kbr', 'nope', ok=False)
    eq(p.returncode, 1, 'rc')
    check('Error from server (NotFound): benchmarkruns.kernelindex.dev '
          '"nope" not found' in p.stderr, p.stderr)
    eq(kubectl('get', 'kbr', 'nope', '--ignore-not-found').returncode, 0,
       '--ignore-not-found')


PROTO = '''apiVersion: kernelindex.dev/v1alpha1
kind: BenchmarkProtocol
metadata:
  name: %s
  labels: {team: %s}
spec:
  measurement: {timer: cuda_events, primaryStatistic: median, warmupMs: %s}
  harness:
    name: a-harness%s
'''


@test
def create_apply_label_patch_replace_delete():
    f = write('p.yaml', PROTO % ('kp', 'gpu', 25, ''))
    check('created' in kubectl('create', '-f', f).stdout, 'create')
    # The same content again is idempotent (DESIGN: 200, nothing written);
    # the same name with other content is AlreadyExists.
    eq(kubectl('create', '-f', f).returncode, 0, 'identical create')
    p = kubectl('create', '-f', write('px.yaml', PROTO % ('kp', 'gpu', 30, '')),
                ok=False)
    eq(p.returncode, 1, 'rc of a conflicting create')
    check('Error from server (AlreadyExists)' in p.stderr, p.stderr)
    f = write('p.yaml', PROTO % ('kp', 'kernels', 25, ''))
    check('configured' in kubectl('apply', '-f', f).stdout, 'apply labels')
    eq(json.loads(kubectl('get', 'kbp', 'kp', '-o', 'json').stdout)
       ['metadata']['labels']['team'], 'kernels', 'label applied')
    kubectl('label', 'kbp', 'kp', 'tier=gold')
    kubectl('annotate', 'kbp', 'kp', 'note=hello')
    kubectl('patch', 'kbp', 'kp', '--type=merge', '-p',
            '{"metadata":{"labels":{"x":"y"}}}')
    kubectl('patch', 'kbp', 'kp', '-p', '{"metadata":{"labels":{"z":"w"}}}')
    o = json.loads(kubectl('get', 'kbp', 'kp', '-o', 'json').stdout)
    eq({k: o['metadata']['labels'][k] for k in ('tier', 'x', 'z')},
       {'tier': 'gold', 'x': 'y', 'z': 'w'}, 'labels')
    eq(o['metadata']['annotations']['note'], 'hello', 'annotation')
    check('kubectl.kubernetes.io/last-applied-configuration' in
          o['metadata']['annotations'], 'last-applied kept')
    f2 = write('p2.yaml', PROTO % ('kp', 'kernels', 50, ''))
    p = kubectl('apply', '-f', f2, ok=False)
    eq(p.returncode, 1, 'a spec change is refused')
    check('immutable' in p.stderr, p.stderr)
    check('serverside-applied' in kubectl('apply', '--server-side', '-f',
                                          f).stdout, 'ssa existing')
    f3 = write('p3.yaml', PROTO % ('kp-ssa', 'a', 25, ''))
    check('serverside-applied' in kubectl('apply', '--server-side', '-f',
                                          f3).stdout, 'ssa create')
    check('replaced' in kubectl('replace', '-f', f).stdout, 'replace')
    f4 = write('p4.yaml', PROTO % ('kp-strict', 'a', 25, '\n    bogus: 1'))
    p = kubectl('create', '-f', f4, ok=False)
    check('strict decoding error: unknown field "spec.harness.bogus"' in
          p.stderr, p.stderr)
    check('deleted' in kubectl('delete', 'kbp', 'kp').stdout, 'delete')
    eq(kubectl('get', 'kbp', 'kp', '--ignore-not-found').stdout, '',
       'gone after delete')
    kubectl('delete', 'kbp', '-l', 'team=a')
    eq(kubectl('get', 'kbp', 'kp-ssa', '--ignore-not-found').stdout, '',
       'delete -l')


@test
def explain_reads_the_openapi_schema():
    out = kubectl('explain', 'kbr.spec.timing').stdout
    check('KIND:       BenchmarkRun' in out and 'latencyNs' in out and
          '-required-' in out, out)
    out = kubectl('explain', 'kbp.spec.measurement.timer').stdout
    check('ENUM:' in out and 'cuda_events' in out and 'wall_clock' in out,
          'the enum from the schema: ' + out)


@test
def paging_merges_chunks():
    d = daemon()
    for i in range(5):
        r = d.post(G + '/benchmarkprotocols', PROTO_JSON(i))
        check(r.status in (200, 201), 'proto %d: %d' % (i, r.status))
    out = kubectl('get', 'kbp', '--chunk-size=2', '-o', 'name').stdout
    names = out.split()
    eq(len(names), len(set(names)), 'no duplicates across pages')
    check(len(names) >= 6, 'all pages: %s' % names)


def PROTO_JSON(i):
    return {'apiVersion': 'kernelindex.dev/v1alpha1',
            'kind': 'BenchmarkProtocol',
            'metadata': {'name': 'page-%d' % i},
            'spec': {'measurement': {'timer': 'cuda_events',
                                     'primaryStatistic': 'median',
                                     'repetitions': 100 + i}}}


@test
def watch_shows_added_and_deleted_without_reload():
    d = daemon()
    env = STATE['env']
    p = subprocess.Popen([KUBECTL, 'get', 'kbp', '-w',
                          '--output-watch-events', '--no-headers'],
                         env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)
        r = d.post(G + '/benchmarkprotocols', PROTO_JSON(99))
        eq(r.status, 201, 'create under watch')
        r = d.delete(G + '/benchmarkprotocols/page-99')
        eq(r.status, 200, 'delete under watch')
        time.sleep(1.5)
    finally:
        p.terminate()
        out, err = p.communicate(timeout=10)
    lines = [l.split() for l in out.splitlines() if 'page-99' in l]
    eq([l[0] for l in lines], ['ADDED', 'DELETED'], 'events:\n' + out + err)


if __name__ == '__main__':
    if KUBECTL is None:
        print('kubectl is not installed: these tests need it')
        print('0 passed, 1 failed')
        sys.exit(1)
    sys.exit(kitest.run_all())
