#!/usr/bin/env python3
"""test_kubectl_client — kubectl (1.32, on PATH) through the same matrix as
the Python and JavaScript clients: discovery, lists over more than 1,000
runs (whole, chunked, sorted), get, create, replace with a stale
resourceVersion, merge, JSON and server-side apply patches, delete with a
server dry run (and --all), watch with resume and 410, and `auth can-i` /
`auth whoami` with tokens of each role."""
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402
from clientdata import NRUNS, make_ca, many_runs, protocol  # noqa: E402

KUBECTL = shutil.which('kubectl')
STATE = {}
SEED_RUN = kitest.seed()['run']['metadata']['name']


def kubeconfig(d, token=None, ca=None):
    """The kubeconfig of docs/clients.md for d, with token when given (over
    https, with the CA's file ca)."""
    cfgdir = kitest.tempdir('kitest-kube-')
    cfg = os.path.join(cfgdir, 'config')
    with open(cfg, 'w') as f:
        f.write('apiVersion: v1\nkind: Config\n'
                'clusters: [{name: ki, cluster: {server: "%s://127.0.0.1:%d",'
                ' %s}}]\n'
                'contexts: [{name: ki, context: {cluster: ki, user: ki}}]\n'
                'users: [{name: ki, user: {%s}}]\ncurrent-context: ki\n'
                % ('https' if ca else 'http', d.port,
                   'certificate-authority: "%s"' % ca if ca else
                   'insecure-skip-tls-verify: true',
                   'token: "%s"' % token if token else ''))
    return dict(os.environ, KUBECONFIG=cfg, HOME=cfgdir,
                KUBECACHEDIR=os.path.join(cfgdir, 'c')), cfgdir


def daemon():
    if 'd' not in STATE:
        d = kitest.Daemon(sync=False, args=['--history', '100']).start()
        eq(d.post(G + '/benchmarkruns', kitest.seed()).status, 201, 'seed')
        r = d.post(G + '/benchmarkruns', many_runs(NRUNS),
                   content_type='application/x-ndjson', timeout=600)
        eq((r.status, r.json()['summary']['failed']), (201, 0), 'upload')
        STATE['d'] = d
        STATE['env'], STATE['dir'] = kubeconfig(d)
    return STATE['d']


def kubectl(*args, input=None, ok=True, env=None, timeout=120):
    daemon()
    p = subprocess.run([KUBECTL] + list(args), env=env or STATE['env'],
                       input=input, capture_output=True, text=True,
                       timeout=timeout)
    if ok and p.returncode != 0:
        raise kitest.TestFailure('kubectl %s: rc %d\n%s%s' % (
            ' '.join(args), p.returncode, p.stdout, p.stderr))
    return p


def names(out):
    return [ln for ln in out.splitlines() if ln.strip()]


@test
def discovery_lists_the_kinds_and_the_review_groups():
    out = kubectl('api-resources').stdout
    for res in ('benchmarkruns', 'selfsubjectaccessreviews',
                'selfsubjectreviews'):
        check(any(ln.startswith(res + ' ') for ln in out.splitlines()),
              '%s in api-resources:\n%s' % (res, out))
    eq(sorted(kubectl('api-versions').stdout.split()),
       ['authentication.k8s.io/v1', 'authorization.k8s.io/v1',
        'kernelindex.dev/v1alpha1'], 'api-versions')


@test
def lists_over_a_thousand_runs_whole_chunked_and_sorted():
    total = NRUNS + 1
    eq(len(names(kubectl('get', 'kbr', '--chunk-size=0', '-o',
                         'name').stdout)), total, 'a list without limit')
    eq(len(names(kubectl('get', 'kbr', '-o', 'name').stdout)), total,
       'a list in chunks of 500')
    rows = names(kubectl('get', 'kbr', '--sort-by=.metadata.name',
                         '--no-headers').stdout)
    eq(len(rows), total, 'a sorted list (a Table without limit)')
    first = [r.split()[0] for r in rows]
    eq(first, sorted(first), 'sorted by name')
    out = kubectl('delete', 'kbr', '--all', '--dry-run=server').stdout
    eq(len(names(out)), total, 'delete --all (a dry run) sees every run')
    eq(len(names(kubectl('get', 'kbr', '-o', 'name').stdout)), total,
       'the dry run deleted nothing')


@test
def get_create_and_a_stale_replace():
    out = json.loads(kubectl('get', 'kbr', SEED_RUN, '-o', 'json').stdout)
    eq(out['metadata']['name'], SEED_RUN, 'get')
    p = protocol('kc-create', reps=61)
    kubectl('create', '-f', '-', input=json.dumps(p))
    live = json.loads(kubectl('get', 'kbp', 'kc-create', '-o',
                              'json').stdout)
    stale = dict(live, metadata=dict(live['metadata'], labels={'a': 'b'}))
    kubectl('label', 'kbp', 'kc-create', 'team=one')
    r = kubectl('replace', '-f', '-', input=json.dumps(stale), ok=False)
    check(r.returncode != 0 and ('Conflict' in r.stderr or
                                 'modified' in r.stderr),
          'a stale replace is a conflict: %r' % r.stderr)
    got = json.loads(kubectl('get', 'kbp', 'kc-create', '-o', 'json').stdout)
    eq(got['metadata']['labels'].get('team'), 'one', 'nothing replaced')


@test
def merge_json_and_server_side_apply_patches():
    kubectl('patch', 'kbr', SEED_RUN, '--type=merge', '-p',
            '{"metadata":{"labels":{"team":"merge"}}}')
    kubectl('patch', 'kbr', SEED_RUN, '--type=json', '-p',
            '[{"op":"test","path":"/metadata/labels/team","value":"merge"},'
            '{"op":"replace","path":"/metadata/labels/team","value":"json"}]')
    got = json.loads(kubectl('get', 'kbr', SEED_RUN, '-o', 'json').stdout)
    eq(got['metadata']['labels']['team'], 'json', 'JSON patch')
    r = kubectl('patch', 'kbr', SEED_RUN, '--type=json', '-p',
                '[{"op":"test","path":"/metadata/labels/team",'
                '"value":"merge"}]', ok=False)
    check(r.returncode != 0 and 'test' in r.stderr, 'a failed test: %r' %
          r.stderr)
    p = protocol('kc-apply', reps=62)
    kubectl('apply', '--server-side', '-f', '-', input=json.dumps(p))
    p['metadata']['labels'] = {'stage': 'b'}
    kubectl('apply', '--server-side', '-f', '-', input=json.dumps(p))
    got = json.loads(kubectl('get', 'kbp', 'kc-apply', '-o', 'json').stdout)
    eq(got['metadata']['labels'].get('stage'), 'b', 'server-side apply')


@test
def apply_prune_needs_the_allowlist_of_docs_clients():
    daemon()
    d = os.path.join(STATE['dir'], 'prune')
    os.makedirs(d, exist_ok=True)
    for i in (1, 2):
        p = protocol('kc-prune-%d' % i, reps=70 + i)
        p['metadata']['labels'] = {'app': 'prune'}
        with open(os.path.join(d, 'p%d.json' % i), 'w') as f:
            json.dump(p, f)
    kubectl('apply', '-f', d)
    os.unlink(os.path.join(d, 'p2.json'))
    r = kubectl('apply', '--prune', '-l', 'app=prune', '-f', d, ok=False)
    check(r.returncode != 0 and 'ConfigMap' in r.stderr,
          'without the allowlist kubectl looks for built-in kinds: %r' %
          r.stderr)
    out = kubectl('apply', '--prune', '-l', 'app=prune', '--prune-allowlist='
                  'kernelindex.dev/v1alpha1/BenchmarkProtocol', '-f',
                  d).stdout
    check('kc-prune-2 pruned' in out, 'pruned: %r' % out)
    eq(names(kubectl('get', 'kbp', '-l', 'app=prune', '-o', 'name').stdout),
       ['benchmarkprotocol.kernelindex.dev/kc-prune-1'], 'left after prune')


@test
def delete_dry_run_keeps_the_object():
    p = protocol('kc-delete', reps=63)
    kubectl('create', '-f', '-', input=json.dumps(p))
    out = kubectl('delete', 'kbp', 'kc-delete', '--dry-run=server').stdout
    check('server dry run' in out, 'a dry run: %r' % out)
    kubectl('get', 'kbp', 'kc-delete')
    kubectl('delete', 'kbp', 'kc-delete')
    r = kubectl('get', 'kbp', 'kc-delete', ok=False)
    check(r.returncode != 0 and 'NotFound' in r.stderr, 'deleted: %r' %
          r.stderr)


@test
def watch_resumes_and_a_version_too_old_is_gone():
    d = daemon()
    rv = d.list_rv('benchmarkprotocols')
    kubectl('create', '-f', '-', input=json.dumps(protocol('kc-watch',
                                                           reps=64)))
    path = G + '/benchmarkprotocols?watch=true&timeoutSeconds=1' \
        '&resourceVersion=' + rv
    ev = [json.loads(ln) for ln in names(kubectl('get', '--raw',
                                                 path).stdout)]
    eq([(e['type'], e['object']['metadata']['name']) for e in ev],
       [('ADDED', 'kc-watch')], 'events after the list')
    last = ev[-1]['object']['metadata']['resourceVersion']
    ev = names(kubectl('get', '--raw', G + '/benchmarkprotocols?watch=true'
                       '&timeoutSeconds=1&resourceVersion=' + last).stdout)
    eq(ev, [], 'nothing after the last event')
    ev = [json.loads(ln) for ln in names(kubectl(
        'get', '--raw', G + '/benchmarkruns?watch=true&timeoutSeconds=1'
        '&resourceVersion=2').stdout)]
    eq([(e['type'], e['object'].get('code')) for e in ev], [('ERROR', 410)],
       'a version older than the history')


def token(data_dir, role):
    p = subprocess.run(kitest.command(data_dir, 'token', 'create',
                                      '--role', role), capture_output=True,
                       text=True, timeout=60)
    eq(p.returncode, 0, 'token %s: %s' % (role, p.stderr))
    return p.stdout.strip()


@test
def auth_can_i_and_whoami_for_each_role():
    # kubectl sends a bearer token over https only: this daemon has TLS.
    data = kitest.tempdir('kitest-auth-')
    ca, crt, key = make_ca(kitest.tempdir('kitest-ca-'))
    tok = {role: token(data, role) for role in ('admin', 'writer', 'reader')}
    d = kitest.Daemon(data_dir=data, sync=False,
                      args=['--tls-cert', crt, '--tls-key', key])
    # kitest polls /healthz over http: kubectl waits for the TLS daemon.
    d.get = lambda *a, **kw: kitest.Response(200, None, b'')
    d.start()
    want = {'admin': ('yes', 'yes', 'yes'), 'writer': ('yes', 'yes', 'no'),
            'reader': ('yes', 'no', 'no')}
    for role, w in want.items():
        env, cfgdir = kubeconfig(d, tok[role], ca=ca)
        for _ in range(100):    # until the daemon answers over TLS
            if kubectl('version', env=env, ok=False).returncode == 0:
                break
            time.sleep(0.1)
        got = tuple(kubectl('auth', 'can-i', *a, env=env, ok=False)
                    .stdout.split(' ')[0].strip() for a in (('list', 'kbr'),
                                              ('create', 'kbr'),
                                              ('create', '/admin/tokens')))
        eq(got, w, '%s: can-i list, create, /admin/tokens' % role)
        out = kubectl('auth', 'whoami', '-o', 'json', env=env).stdout
        groups = json.loads(out)['status']['userInfo']['groups']
        check('kernelindex:%ss' % role in groups, '%s: groups %r' %
              (role, groups))
    d.stop()


if __name__ == '__main__':
    if KUBECTL is None:
        print('kubectl is not on PATH')
        sys.exit(1)
    sys.exit(kitest.run_all())
