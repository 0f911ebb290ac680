#!/usr/bin/env python3
"""test_auth — bearer tokens and roles: created by the admin command and
the admin API, stored as hashes, limited to a source or a name prefix,
revoked; 401 and 403 as Status objects; kubectl with --token; loopback-only
writes while no token exists; anonymous reads switched off."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402

SEED = kitest.seed()


def token(data_dir, *args):
    p = subprocess.run(kitest.command(data_dir, 'token', *args), capture_output=True, text=True,
                       timeout=60)
    eq(p.returncode, 0, 'token %s: %s' % (args, p.stderr))
    return p.stdout.strip()


def bearer(t):
    return {'Authorization': 'Bearer ' + t}


def proto(name, reps):
    return {'apiVersion': 'kernelindex.dev/v1alpha1',
            'kind': 'BenchmarkProtocol', 'metadata': {'name': name},
            'spec': {'measurement': {'timer': 'cuda_events',
                                     'primaryStatistic': 'median',
                                     'repetitions': reps}}}


@test
def roles_sources_prefixes_and_revocation():
    data = kitest.tempdir('kitest-auth-')
    writer = token(data, 'create', '--role', 'writer')
    reader = token(data, 'create', '--role', 'reader')
    liger = token(data, 'create', '--role', 'writer', '--source',
                  'liger-kernel-bench')
    team = token(data, 'create', '--role', 'writer', '--prefix', 'team-')
    admin = token(data, 'create', '--role', 'admin')
    for t in (writer, reader, liger, team, admin):
        check(t.startswith('kix_') and len(t) > 30, 'a secret: %r' % t)
    # Only hashes are stored: no secret appears in the store's files (or,
    # over etcd, in any key or value under the store's prefix).
    blobs = [(f, open(os.path.join(data, f), 'rb').read())
             for f in os.listdir(data)]
    if kitest.etcd():
        blobs.append(('etcd', kitest.etcd_dump(data)))
        check(len(blobs[-1][1]) > 0, 'the tokens are in etcd')
    for f, blob in blobs:
        for t in (writer, admin):
            check(t.encode() not in blob, 'secret found in %s' % f)
    d = kitest.Daemon(data_dir=data, sync=False).start()
    # With tokens configured, a write without one is 401, even on loopback.
    r = d.post(G + '/benchmarkprotocols', proto('p1', 1))
    kitest.status_of(r, 401, 'Unauthorized')
    r = d.post(G + '/benchmarkprotocols', proto('p1', 1),
               headers=bearer('kix_not-a-token'))
    kitest.status_of(r, 401, 'Unauthorized')
    r = d.post(G + '/benchmarkprotocols', proto('p1', 1), headers=bearer(reader))
    kitest.status_of(r, 403, 'Forbidden')
    eq(d.get(G + '/benchmarkprotocols').status, 200, 'anonymous reads')
    eq(d.post(G + '/benchmarkprotocols', proto('p1', 1),
              headers=bearer(writer)).status, 201, 'writer writes')
    # A source-limited token writes runs of its source only.
    eq(d.post(G + '/benchmarkruns', SEED, headers=bearer(liger)).status, 201,
       'liger source')
    other = kitest.deepcopy(SEED)
    other['run']['metadata']['name'] = 'other-source'
    other['run']['spec']['sourceNative']['source'] = 'someone-else'
    r = d.post(G + '/benchmarkruns', other, headers=bearer(liger))
    kitest.status_of(r, 403, 'Forbidden')
    check('liger-kernel-bench' in r.json()['message'], r.json()['message'])
    eq(d.get(G + '/benchmarkruns/other-source').status, 404, 'nothing stored')
    # A prefix-limited token writes and deletes its names only.
    r = d.post(G + '/benchmarkprotocols', proto('p2', 2), headers=bearer(team))
    kitest.status_of(r, 403, 'Forbidden')
    eq(d.post(G + '/benchmarkprotocols', proto('team-p', 3),
              headers=bearer(team)).status, 201, 'team- prefix')
    r = d.delete(G + '/benchmarkprotocols/p1', headers=bearer(team))
    kitest.status_of(r, 403, 'Forbidden')
    # Admin API: list without secrets, create, revoke.
    r = d.get('/admin/tokens', headers=bearer(writer))
    kitest.status_of(r, 403, 'Forbidden')
    r = d.get('/admin/tokens', headers=bearer(admin))
    eq(r.status, 200, 'admin list')
    eq(len(r.json()['items']), 5, 'five tokens')
    check(writer.encode() not in r.body, 'no secret in the list')
    r = d.post('/admin/tokens', {'role': 'writer', 'description': 'ci'},
               headers=bearer(admin))
    eq(r.status, 201, 'admin create')
    new, nid = r.json()['token'], r.json()['id']
    eq(d.post(G + '/benchmarkprotocols', proto('p3', 4),
              headers=bearer(new)).status, 201, 'new token writes')
    eq(d.delete('/admin/tokens/' + nid, headers=bearer(admin)).status, 200,
       'revoke')
    r = d.post(G + '/benchmarkprotocols', proto('p4', 5), headers=bearer(new))
    kitest.status_of(r, 401, 'Unauthorized')
    # Tokens never appear in the log.
    log = d.stderr()
    for t in (writer, reader, liger, team, admin, new):
        check(t not in log, 'a token in the log')
    d.stop()
    # Revocation by the admin command; the daemon sees it at once.
    listing = token(data, 'list')
    check('"role":"reader"' in listing, listing)
    d.start()
    import json
    rid = [i['id'] for i in json.loads(listing)['items']
           if i['spec']['role'] == 'reader'][0]
    token(data, 'revoke', rid)
    r = d.get(G + '/benchmarkprotocols', headers=bearer(reader))
    kitest.status_of(r, 401, 'Unauthorized')


@test
def anonymous_reads_can_be_switched_off():
    data = kitest.tempdir('kitest-auth-')
    reader = token(data, 'create', '--role', 'reader')
    d = kitest.Daemon(data_dir=data, sync=False,
                      args=['--anonymous-reads', 'false']).start()
    kitest.status_of(d.get(G + '/benchmarkruns'), 401, 'Unauthorized')
    eq(d.get(G + '/benchmarkruns', headers=bearer(reader)).status, 200, 'reader')
    eq(d.get('/healthz').status, 200, 'probes stay open')


def make_ca(dirpath):
    """A CA and a server certificate for 127.0.0.1, made with OpenSSL."""
    def run(*args):
        p = subprocess.run(['openssl'] + list(args), cwd=dirpath,
                           capture_output=True, text=True, timeout=60)
        eq(p.returncode, 0, 'openssl %s: %s' % (args[0], p.stderr))
    run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key',
        '-out', 'ca.crt', '-days', '2', '-subj', '/CN=kitest-ca')
    run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'srv.key', '-out',
        'srv.csr', '-subj', '/CN=127.0.0.1')
    with open(os.path.join(dirpath, 'ext'), 'w') as f:
        f.write('subjectAltName=IP:127.0.0.1,DNS:localhost\n')
    run('x509', '-req', '-in', 'srv.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key',
        '-CAcreateserial', '-out', 'srv.crt', '-days', '2', '-extfile', 'ext')
    return [os.path.join(dirpath, n) for n in ('ca.crt', 'srv.crt', 'srv.key')]


@test
def tls_with_keep_alive_and_kubectl_with_a_token():
    import http.client
    import ssl
    kubectl = shutil.which('kubectl')
    check(kubectl is not None, 'kubectl is needed')
    data = kitest.tempdir('kitest-auth-')
    ca, crt, key = make_ca(kitest.tempdir('kitest-ca-'))
    writer = token(data, 'create', '--role', 'writer')
    port = kitest.free_port()
    proc = subprocess.Popen([kitest.daemon_path(), '--listen',
                             '127.0.0.1:%d' % port, '--data-dir', data,
                             '--sync', 'false', '--tls-cert', crt,
                             '--tls-key', key] + kitest.store_args(data),
                            stderr=open(os.path.join(data, 'log'), 'w'))
    try:
        ctx = ssl.create_default_context(cafile=ca)
        for _ in range(100):
            try:
                c = http.client.HTTPSConnection('127.0.0.1', port, context=ctx,
                                                timeout=10)
                c.request('GET', '/healthz')
                c.getresponse().read()
                break
            except OSError:
                import time
                time.sleep(0.1)
        # Keep-alive over TLS: several requests on one connection.
        for _ in range(3):
            c.request('GET', G + '/benchmarkprotocols')
            r = c.getresponse()
            r.read()
            eq(r.status, 200, 'GET over TLS')
        sock = c.sock
        c.request('GET', '/version')
        r = c.getresponse()
        r.read()
        check(c.sock is sock, 'the same TLS connection was reused')
        c.close()
        cfgdir = kitest.tempdir('kitest-kube-')
        cfg = os.path.join(cfgdir, 'config')
        with open(cfg, 'w') as f:
            f.write('apiVersion: v1\nkind: Config\nclusters:\n- name: ki\n'
                    '  cluster: {server: "https://127.0.0.1:%d", '
                    'certificate-authority: "%s"}\ncontexts:\n'
                    '- name: ki\n  context: {cluster: ki, user: ki}\n'
                    'current-context: ki\nusers:\n- name: ki\n  user: {}\n'
                    % (port, ca))
        man = os.path.join(cfgdir, 'p.yaml')
        with open(man, 'w') as f:
            f.write('apiVersion: kernelindex.dev/v1alpha1\n'
                    'kind: BenchmarkProtocol\nmetadata: {name: kt}\nspec:\n'
                    '  measurement: {timer: cupti, primaryStatistic: median}\n')
        env = dict(os.environ, KUBECONFIG=cfg, HOME=cfgdir)
        p = subprocess.run([kubectl, '--token', 'kix_wrong', 'create', '-f',
                            man], env=env, capture_output=True, text=True,
                           timeout=60, stdin=subprocess.DEVNULL)
        eq(p.returncode, 1, 'a wrong token is refused')
        check('provide credentials' in p.stderr or
              'You must be logged in' in p.stderr, p.stderr)
        p = subprocess.run([kubectl, '--token', writer, 'create', '-f', man],
                           env=env, capture_output=True, text=True,
                           timeout=60, stdin=subprocess.DEVNULL)
        eq(p.returncode, 0, 'with a token: ' + p.stderr)
        p = subprocess.run([kubectl, '--token', writer, 'get', 'kbp', 'kt',
                            '-o', 'name'], env=env, capture_output=True,
                           text=True, timeout=60, stdin=subprocess.DEVNULL)
        eq(p.stdout.strip(), 'benchmarkprotocol.kernelindex.dev/kt', 'read back')
    finally:
        proc.terminate()
        proc.wait(20)
    with open(os.path.join(data, 'log')) as f:
        check(writer not in f.read(), 'the token is not logged')


if __name__ == '__main__':
    sys.exit(kitest.run_all())
