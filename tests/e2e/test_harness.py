"""End-to-end tests of pushing results from any harness: a hand-written
bundle without digests posted with curl, the Python client posting a
do_bench measurement, every row of Liger's data files of every version
imported, kernelindex run wrapping a benchmark command (with a baseline),
and the CLI's list, delete, push, get, export and --help.

Environment: KI_DAEMON, KI_DATA_DIR (see kitest), KI_CLI (the kernelindex
binary), KI_SRCDIR (the source tree).
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get('KI_SRCDIR') or os.path.normpath(
    os.path.join(HERE, '..', '..'))
BUILD = os.path.dirname(kitest.daemon_path())
CLI = os.environ.get('KI_CLI') or os.path.join(BUILD, 'kernelindex')
CLIENT_DIR = os.path.join(SRC, 'client')
EXAMPLE = os.path.join(CLIENT_DIR, 'example-bundle.json')
VARIANTS = os.path.join(kitest.DATA, 'liger-variants')
CSV = os.path.join(kitest.DATA, 'liger', 'all_benchmark_data.csv')
HEADER = ('kernel_name,kernel_provider,kernel_operation_mode,metric_name,'
          'metric_unit,x_name,x_label,x_value,y_value_50,y_value_20,'
          'y_value_80,extra_benchmark_config_str,gpu_name,timestamp,'
          'liger_version\r\n')

sys.path.insert(0, CLIENT_DIR)
import kernelindex_client as kc  # noqa: E402


def cli(d, *args, cwd=None, timeout=300):
    return subprocess.run([CLI, '--server', 'http://127.0.0.1:%d' % d.port]
                          + list(args), capture_output=True, text=True,
                          timeout=timeout, cwd=cwd,
                          stdin=subprocess.DEVNULL)


def curl(d, path, data_file, ctype='application/json'):
    p = subprocess.run(['curl', '-s', '-w', '\n%{http_code}', '-H',
                        'Content-Type: ' + ctype, '--data-binary',
                        '@' + data_file,
                        'http://127.0.0.1:%d%s' % (d.port, path)],
                       capture_output=True, text=True, timeout=60)
    body, _, code = p.stdout.rpartition('\n')
    return int(code), json.loads(body)


def digests(items):
    return {i['kind']: i['digest'] for i in items}


@test
def curl_posts_a_hand_written_bundle_without_digests():
    d = kitest.Daemon(sync=False).start()
    with open(EXAMPLE) as f:
        bundle = json.load(f)
    check(not [k for k in bundle['run']['spec'] if k.endswith('Digest')],
          'the example names no digest')
    code, res = curl(d, G + '/benchmarkruns', EXAMPLE)
    eq(code, 201, 'created: %r' % res)
    eq(res['summary'], {'created': 5, 'unchanged': 0, 'failed': 0}, 'summary')
    dg = digests(res['items'])
    run = d.get(G + '/benchmarkruns/' + bundle['run']['metadata']['name'])
    eq(run.status, 200, 'stored')
    spec = run.json()['spec']
    for kind, field in [('BenchmarkProtocol', 'protocolDigest'),
                        ('ExecutionEnvironment', 'environmentDigest'),
                        ('Workload', 'workloadDigest'),
                        ('Implementation', 'implementationDigest')]:
        eq(spec[field], dg[kind], 'the stored run names its ' + kind)
    eq(run.json()['status']['plausibility']['verdict'], 'Plausible',
       'the parts resolve and the run is judged')
    # The same again: unchanged, as if the digests had been sent.
    code, res = curl(d, G + '/benchmarkruns', EXAMPLE)
    eq(code, 200, 'unchanged')
    eq(res['summary']['unchanged'], 5, 'unchanged')
    # With the digests the server computed: the same run.
    full = kitest.deepcopy(bundle)
    full['run']['spec'].update({k: v for k, v in spec.items()
                                if k.endswith('Digest')})
    eq(d.post(G + '/benchmarkruns', full).status, 200, 'sent digests')
    # A digest that is sent is still checked.
    bad = kitest.deepcopy(bundle)
    bad['run']['metadata']['name'] = 'bad'
    bad['run']['spec']['sourceNative']['externalId'] += '-bad'
    bad['run']['spec']['workloadDigest'] = 'sha256:' + '0' * 64
    r = d.post(G + '/benchmarkruns', bad)
    eq(r.status, 422, 'a wrong digest')
    check('run.spec.workloadDigest' in kitest.cause_fields(r.json()),
          r.json())
    # NDJSON and a List: each run's missing digests filled the same way.
    tmp = kitest.tempdir('kitest-harness-')
    lines = []
    for i in range(3):
        b = kitest.deepcopy(bundle)
        b['run']['metadata']['name'] = 'nd-%d' % i
        b['run']['spec']['sourceNative']['externalId'] += '-nd%d' % i
        lines.append(json.dumps(b))
    nd = os.path.join(tmp, 'b.ndjson')
    with open(nd, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    code, res = curl(d, G + '/benchmarkruns', nd, 'application/x-ndjson')
    eq(code, 201, 'NDJSON: %r' % res)
    eq(res['summary']['failed'], 0, 'NDJSON failures')
    lst = os.path.join(tmp, 'list.json')
    b = kitest.deepcopy(bundle)
    b['run']['metadata']['name'] = 'in-a-list'
    b['run']['spec']['sourceNative']['externalId'] += '-list'
    with open(lst, 'w') as f:
        json.dump({'apiVersion': 'v1', 'kind': 'List', 'items': [b]}, f)
    code, res = curl(d, G + '/benchmarkruns', lst)
    eq(code, 201, 'List: %r' % res)
    eq(d.get(G + '/benchmarkruns/in-a-list').json()['spec']['workloadDigest'],
       dg['Workload'], 'the List item names its workload')
    # A lone run still needs its digests: nothing is there to compute from.
    r = d.post(G + '/benchmarkruns', kitest.deepcopy(bundle['run']))
    eq(r.status, 422, 'a run without its parts')
    # The seed's form works unchanged.
    eq(d.post(G + '/benchmarkruns', kitest.seed()).status, 201, 'seed')


@test
def the_python_client_posts_a_do_bench_measurement():
    d = kitest.Daemon(sync=False).start()
    c = kc.Client('http://127.0.0.1:%d' % d.port)

    def do_bench(fn, quantiles=None):
        fn()
        return [0.1021, 0.1001, 0.1050]

    q = do_bench(lambda: None, quantiles=[0.5, 0.2, 0.8])
    b = kc.result(kernel='rms_norm', pass_='forward', provider='liger',
                  version='0.6.3', gpu='NVIDIA H100 80GB HBM3',
                  dtype='torch.bfloat16',
                  parameters={'rows': 8192, 'hidden': 4096}, sweep='hidden',
                  quantiles_ms=q, labels={'commit': 'abc123'})
    res = c.post(b)
    eq(res['summary'], {'created': 5, 'unchanged': 0, 'failed': 0}, 'posted')
    run = c.get('benchmarkruns', b['run']['metadata']['name'])
    eq(run['spec']['timing']['latencyNs']['median'], 102100, 'median')
    check(run['spec']['workloadDigest'].startswith('sha256:'), 'digests')
    labels = run['metadata']['labels']
    eq((labels['kernel'], labels['pass'], labels['provider'], labels['dtype'],
        labels['gpu'], labels['version'], labels['commit']),
       ('rms_norm', 'forward', 'liger', 'bfloat16', 'h100-80gb-hbm3',
        '0.6.3', 'abc123'), 'labels')
    eq(run['status']['plausibility']['verdict'], 'Plausible', 'verdict')
    eq(c.post([b])['summary']['unchanged'], 5, 'posted again: unchanged')
    m = kc.result(kernel='rms_norm', pass_='forward', provider='liger',
                  gpu='NVIDIA H100 80GB HBM3', dtype='bf16',
                  parameters={'rows': 8192, 'hidden': 4096},
                  memory_mb=[64.0, 63.5, 64.5])
    eq(c.post(m)['summary']['failed'], 0, 'a memory result')
    # A refusal is an exception carrying the server's Status.
    bad = kitest.deepcopy(b)
    bad['run']['spec']['timing']['latencyNs']['median'] = -1
    try:
        c.post(bad)
        check(False, 'a negative median was accepted')
    except kc.KernelIndexError as e:
        check(e.status in (200, 201, 422), 'status %r' % e.status)
    # The module's command line posts files of bundles.
    tmp = kitest.tempdir('kitest-client-')
    path = os.path.join(tmp, 'r.json')
    with open(path, 'w') as f:
        json.dump(b, f)
    p = subprocess.run([sys.executable, os.path.join(CLIENT_DIR,
                        'kernelindex_client.py'), '--server',
                        'http://127.0.0.1:%d' % d.port, path],
                       capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, p.stderr)
    check('unchanged 5' in p.stdout, p.stdout)


@test
def every_row_of_every_liger_data_file_imports():
    d = kitest.Daemon(sync=False).start()
    tmp = kitest.tempdir('kitest-variants-')
    hist = os.path.join(tmp, 'history.csv')
    with gzip.open(os.path.join(VARIANTS, 'history-rows.csv.gz')) as g, \
            open(hist, 'wb') as f:
        shutil.copyfileobj(g, f)
    p = cli(d, 'import', 'liger', hist, timeout=600)
    eq(p.returncode, 0, 'history: ' + p.stderr[-2000:])
    check('7151 rows: 7151 created, 0 unchanged, 0 failed' in p.stdout,
          p.stdout)
    p = cli(d, 'import', 'liger', CSV, timeout=600)
    eq(p.returncode, 0, 'main file: ' + p.stderr[-2000:])
    check('2448 rows: 2448 created' in p.stdout, p.stdout)
    p = cli(d, 'import', 'liger', os.path.join(
        VARIANTS, 'all_benchmark_data_cutedsl-ead96b6.csv'))
    eq(p.returncode, 0, 'cutedsl: ' + p.stderr[-2000:])
    check('165 rows: ' in p.stdout and ', 0 failed' in p.stdout, p.stdout)
    # The version with conflict markers: exactly those three lines fail.
    p = cli(d, 'import', 'liger', os.path.join(
        VARIANTS, 'all_benchmark_data-26f24e07-lines400-500.csv'))
    eq(p.returncode, 1, 'conflicted')
    check('87 rows: 0 created, 84 unchanged, 3 failed' in p.stdout, p.stdout)
    for line in (14, 51, 88):
        check('line %d: the row has 1 field, the header 15' % line in p.stderr,
              p.stderr)
    eq(d.get(G + '/facets').json()['total'], 9599, 'every distinct row')
    # Again: nothing new, nothing refused.
    p = cli(d, 'import', 'liger', hist, timeout=600)
    check('7151 rows: 0 created, 7151 unchanged, 0 failed' in p.stdout,
          p.stdout)
    # What the importer does not know is stored as written, judged Unknown.
    odd = os.path.join(tmp, 'odd.csv')
    write_rows(odd, ['rms_norm,liger,sideways,speed,ms,H,h,1024,0.5,0.4,0.6,'
                     '"{""M"": 2048, ""dtype"": ""torch.int4""}",NVIDIA Z9,'
                     '2026-01-01 00:00:00,0.8+local'])
    p = cli(d, 'import', 'liger', odd)
    eq(p.returncode, 0, p.stderr)
    r = d.get(G + '/benchmarkruns?labelSelector=pass%3Dunknown').json()
    eq(len(r['items']), 1, 'the row with a mode the index does not know')
    run = r['items'][0]
    eq((run['metadata']['labels']['dtype'], run['metadata']['labels']['gpu'],
        run['status']['plausibility']['verdict']),
       ('unknown', 'z9', 'Unknown'), 'labels and verdict')
    eq(run['metadata']['annotations']['liger.kernelindex.dev/unknown'],
       "operation mode 'sideways'; GPU 'NVIDIA Z9'; dtype 'torch.int4'",
       'what was not known')
    p = cli(d, 'export', 'liger', '-l', 'pass=unknown')
    eq(p.stdout, HEADER.replace('\r\n', '\n') + open(odd).read().split(
        '\n', 1)[1], 'exported back as written')


def write_rows(path, rows, header=True):
    with open(path, 'a', newline='') as f:
        if header:
            f.write(HEADER)
        for r in rows:
            f.write(r + '\r\n')


def liger_row(x, ms, ts='2026-12-01 10:00:00'):
    """A row as Liger's rms_norm script writes it; ms 'MS' writes the
    figures as MS (all three: the script replaces them)."""
    figs = (ms, ms, ms) if ms == 'MS' else (ms, ms * 0.98, ms * 1.02)
    return ('rms_norm,liger,forward,speed,ms,H,hidden size,%d,%s,%s,%s,'
            '"{""M"": 2048, ""dtype"": ""torch.bfloat16"", ""eps"": 1e-06}",'
            'NVIDIA H100 80GB HBM3,%s,0.6.3' % ((x,) + figs + (ts,)))


BENCH = textwrap.dedent('''\
    import os, sys
    sys.path.insert(0, %(client)r)
    import kernelindex_client as kc
    scale = float(os.environ.get('BENCH_SCALE', '1'))
    # Liger's harness rewrites its data file: one row changed, one added.
    path = os.path.join('benchmark', 'data', 'all_benchmark_data.csv')
    with open(path, newline='') as f:
        lines = f.read().split('\\r\\n')
    ts = os.environ['BENCH_TIME'].replace('T', ' ').rstrip('Z')
    lines[2] = %(row2)r.replace('MS', repr(0.05 * scale)).replace('TS', ts)
    lines.insert(-1, %(row3)r.replace('MS', repr(0.2 * scale)).replace(
        'TS', ts))
    with open(path, 'w', newline='') as f:
        f.write('\\r\\n'.join(lines))
    print('benchmarking rms_norm…')
    kc.emit(kc.result(kernel='my_norm', pass_='forward', provider='mine',
                      gpu='NVIDIA H100 80GB HBM3', dtype='bfloat16',
                      parameters={'rows': 4096, 'hidden': 1024},
                      quantiles_ms=[0.04 * scale, 0.039 * scale,
                                    0.041 * scale],
                      observed_at=os.environ['BENCH_TIME']))
    print('done')
''')


@test
def kernelindex_run_wraps_a_benchmark_command():
    d = kitest.Daemon(sync=False).start()
    work = kitest.tempdir('kitest-run-')
    os.makedirs(os.path.join(work, 'benchmark', 'data'))
    data = os.path.join(work, 'benchmark', 'data', 'all_benchmark_data.csv')
    write_rows(data, [liger_row(1024, 0.01), liger_row(2048, 0.02)])
    bench = os.path.join(work, 'bench.py')
    with open(bench, 'w') as f:
        f.write(BENCH % {
            'client': CLIENT_DIR,
            'row2': liger_row(2048, 'MS', 'TS'),
            'row3': liger_row(4096, 'MS', 'TS')})
    env = dict(os.environ, BENCH_TIME='2026-12-02T10:00:00Z')

    def run(*args, scale='1', when='2026-12-02T10:00:00Z'):
        env['BENCH_SCALE'] = scale
        env['BENCH_TIME'] = when
        return subprocess.run([CLI, '--server', 'http://127.0.0.1:%d' % d.port,
                               'run'] + list(args) + ['--', sys.executable,
                                                      'bench.py'],
                              capture_output=True, text=True, timeout=300,
                              cwd=work, env=env, stdin=subprocess.DEVNULL)

    p = run('--label', 'build=base')
    eq(p.returncode, 0, p.stdout + p.stderr)
    check('benchmarking rms_norm' in p.stdout and 'done' in p.stdout,
          'the command\'s output is passed on: ' + p.stdout)
    check('uploaded 3 results: 3 created, 0 unchanged, 0 refused' in p.stdout,
          p.stdout)
    check(p.stdout.count(' created') >= 3, 'each created run is named: ' +
          p.stdout)
    runs = d.get(G + '/benchmarkruns?labelSelector=build%3Dbase').json()
    eq(len(runs['items']), 3, 'two new Liger rows and one result line')
    eq(sorted(r['metadata']['labels']['kernel'] for r in runs['items']),
       ['my_norm', 'rms_norm', 'rms_norm'], 'kernels')
    # The unchanged row (x 1024) was not uploaded.
    eq(len(d.get(G + '/benchmarkruns').json()['items']), 3, 'only new rows')
    # The same results again: unchanged.
    with open(data, 'w', newline='') as f:
        f.write(HEADER + liger_row(1024, 0.01) + '\r\n' +
                liger_row(2048, 0.02) + '\r\n')
    p = run()
    eq(p.returncode, 0, p.stdout + p.stderr)
    check('3 results: 0 created, 3 unchanged' in p.stdout, p.stdout)
    # A slower build against the baseline: a regression, exit 4.
    with open(data, 'w', newline='') as f:
        f.write(HEADER + liger_row(1024, 0.01) + '\r\n' +
                liger_row(2048, 0.02) + '\r\n')
    p = run('--baseline', 'build=base', '--threshold', '10', '--label',
            'build=slow', scale='1.5', when='2026-12-03T10:00:00Z')
    eq(p.returncode, 4, 'a regression: ' + p.stdout + p.stderr)
    if os.environ.get('KI_SHOW'):
        print(p.stdout + p.stderr)
    check('REGRESSION' in p.stdout and '1.5000x' in p.stdout, p.stdout)
    check('3 regressions' in p.stdout, p.stdout)
    # Within the threshold: exit 0.
    with open(data, 'w', newline='') as f:
        f.write(HEADER + liger_row(1024, 0.01) + '\r\n' +
                liger_row(2048, 0.02) + '\r\n')
    p = run('--baseline', 'build=base', '--threshold', '10', scale='1.05',
            when='2026-12-04T10:00:00Z')
    eq(p.returncode, 0, p.stdout + p.stderr)
    check('0 regressions' in p.stdout and '3 within 10%' in p.stdout,
          p.stdout)
    # --dry-run: the bundles, nothing sent; a failing command: exit 1.
    p = subprocess.run([CLI, 'run', '--dry-run', '--', sys.executable, '-c',
                        'import sys; sys.exit(3)'], capture_output=True,
                       text=True, timeout=60, cwd=work)
    eq(p.returncode, 1, 'the command failed')
    check('exited with status 3' in p.stderr, p.stderr)
    p = subprocess.run([CLI, 'run'], capture_output=True, text=True,
                       timeout=60)
    eq(p.returncode, 2, 'no command')
    # Run from benchmark/scripts, as Liger's scripts are: ../data is read.
    scripts = os.path.join(work, 'benchmark', 'scripts')
    os.makedirs(scripts)
    p = subprocess.run([CLI, 'run', '--dry-run', '--', sys.executable, '-c',
                        'open("../data/all_benchmark_data.csv", "a", '
                        'newline="").write(%r)' % (liger_row(
                            8192, 0.5, '2026-12-05 10:00:00') + '\r\n')],
                       capture_output=True, text=True, timeout=60,
                       cwd=scripts)
    eq(p.returncode, 0, p.stderr)
    check('collected 1 results' in p.stdout and '"x-value":"8192"' in
          p.stdout.replace('liger.kernelindex.dev/', ''), p.stdout[-500:])


@test
def the_cli_lists_deletes_pushes_and_exports_as_users_expect():
    d = kitest.Daemon(sync=False).start()
    # The seed first: its row is then already indexed (found by its natural
    # key under the seed's name), and counted unchanged.
    eq(d.post(G + '/benchmarkruns', kitest.seed()).status, 201, 'seed')
    p = cli(d, 'import', 'liger', CSV, '--quiet')
    eq(p.returncode, 0, p.stderr)
    check('2448 rows: 2447 created, 1 unchanged, 0 failed' in p.stdout,
          p.stdout)
    check('already indexed as %s; differs in workloadDigest, '
          'implementationDigest' % kitest.seed()['run']['metadata']['name']
          in p.stderr, p.stderr)
    # list: the columns, and --limit as a total.
    p = cli(d, 'list', 'kbr', '--limit', '5')
    eq(p.returncode, 0, p.stderr)
    lines = p.stdout.splitlines()
    eq(lines[0].split(), ['NAME', 'KERNEL', 'PASS', 'PROVIDER', 'GPU', 'DTYPE',
                          'SWEPT', 'MEDIAN', 'VERDICT', 'VERSION'], 'columns')
    eq(len(lines), 6, '--limit 5: five rows')
    check('V=4096' in p.stdout and 'Plausible' in p.stdout and
          '0.2.1' in p.stdout, p.stdout)
    p = cli(d, 'list', 'kbr', '--limit', '700', '-o', 'name')
    eq(len(p.stdout.splitlines()), 700, '--limit over a page')
    check(p.stdout.startswith('benchmarkrun.kernelindex.dev/liger-'),
          p.stdout[:200])
    p = cli(d, 'list', 'kbp')
    eq(p.stdout.splitlines()[0].split()[:4],
       ['NAME', 'TIMER', 'STATISTIC', 'HARNESS'], 'the server Table columns')
    # get -o name.
    name = p.stdout.splitlines()[1].split()[0]
    p = cli(d, 'get', 'kbp', name, '-o', 'name')
    eq(p.stdout.strip(), 'benchmarkprotocol.kernelindex.dev/' + name, 'name')
    # delete.
    run = cli(d, 'list', 'kbr', '-l', 'kernel=rope', '--limit', '1', '-o',
              'name').stdout.strip().split('/')[1]
    p = cli(d, 'delete', 'kbr', run)
    eq(p.returncode, 0, p.stderr)
    eq(p.stdout.strip(), 'benchmarkrun.kernelindex.dev "%s" deleted' % run,
       'deleted')
    eq(d.get(G + '/benchmarkruns/' + run).status, 404, 'gone')
    eq(cli(d, 'delete', 'kbr', run).returncode, 1, 'twice')
    # push: a missing file sends nothing; a summary, not a line an object.
    p = cli(d, 'push', '/nonexistent/x.json', EXAMPLE)
    eq(p.returncode, 1, 'a missing file')
    check('no such file' in p.stderr and 'nothing was pushed' in p.stderr,
          p.stderr)
    eq(d.get(G + '/benchmarkruns/' + json.load(open(EXAMPLE))['run']
             ['metadata']['name']).status, 404, 'nothing pushed')
    p = cli(d, 'push', EXAMPLE)
    eq(p.returncode, 0, p.stderr)
    eq(p.stdout, 'pushed 1 file, 1 document: 1 created, 0 unchanged, '
       '0 failed\n', 'one summary (a bundle is one document)')
    p = cli(d, 'push', '--quiet', '--verbose', EXAMPLE)
    check('benchmarkrun.kernelindex.dev/' in p.stdout and 'unchanged'
          in p.stdout, '--verbose names each: ' + p.stdout)
    # --help after any command.
    for cmd in ('push', 'list', 'run', 'export', 'delete', 'import'):
        p = subprocess.run([CLI, cmd, '--help'], capture_output=True,
                           text=True, timeout=30)
        eq(p.returncode, 0, cmd + ' --help')
        check(p.stdout.startswith('usage: kernelindex ' + cmd), p.stdout)
    # export: a selector, Liger's format and plain CSV.
    p = cli(d, 'export', 'liger', '-l', 'kernel=embedding')
    eq(p.returncode, 0, p.stderr)
    eq(len(p.stdout.splitlines()), 145, 'the 144 embedding rows and a header')
    p = cli(d, 'export', 'csv', '-l', 'kernel=embedding,pass=full')
    eq(p.returncode, 0, p.stderr)
    rows = p.stdout.splitlines()
    eq(rows[0], 'name,kernel,pass,provider,gpu,dtype,metric,swept,median,p20,'
       'p80,unit,verdict,version,source,external_id,observed_at', 'header')
    eq(len(rows) - 1, 96, 'the full-pass embedding rows (speed, memory)')
    check(all(',embedding,full,' in r for r in rows[1:]), rows[1])


if __name__ == '__main__':
    sys.exit(kitest.run_all())
