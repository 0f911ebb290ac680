"""clientdata — what the client conformance tests share: the number of runs
they list (more than the 1,000 a list used to be cut at) and the objects
they write."""
import copy
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'e2e'))
import kitest  # noqa: E402

GROUP, VERSION = 'kernelindex.dev', 'v1alpha1'
NRUNS = 1500


def many_runs(n, prefix='many'):
    """NDJSON of n bundles: the seed's, each run with its own name and
    externalId."""
    base = kitest.seed()
    lines = []
    for i in range(n):
        b = copy.deepcopy(base)
        b['run']['metadata']['name'] = '%s-%05d' % (prefix, i)
        b['run']['spec']['sourceNative']['externalId'] = '%s/%d' % (prefix, i)
        lines.append(json.dumps(b))
    return ('\n'.join(lines) + '\n').encode()


def protocol(name, reps=100):
    """A BenchmarkProtocol; objects are their content, so each name needs
    its own reps."""
    return {'apiVersion': GROUP + '/' + VERSION, 'kind': 'BenchmarkProtocol',
            'metadata': {'name': name},
            'spec': {'measurement': {'timer': 'cuda_events',
                                     'primaryStatistic': 'median',
                                     'repetitions': reps}}}


def make_ca(dirpath):
    """A CA and a server certificate for 127.0.0.1, made with OpenSSL:
    client-go sends a bearer token over https only."""
    import subprocess

    def run(*args):
        p = subprocess.run(['openssl'] + list(args), cwd=dirpath,
                           capture_output=True, text=True, timeout=60)
        kitest.eq(p.returncode, 0, 'openssl %s: %s' % (args[0], p.stderr))
    run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key',
        '-out', 'ca.crt', '-days', '2', '-subj', '/CN=kitest-ca')
    run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'srv.key', '-out',
        'srv.csr', '-subj', '/CN=127.0.0.1')
    with open(os.path.join(dirpath, 'ext'), 'w') as f:
        f.write('subjectAltName=IP:127.0.0.1,DNS:localhost\n')
    run('x509', '-req', '-in', 'srv.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key',
        '-CAcreateserial', '-out', 'srv.crt', '-days', '2', '-extfile', 'ext')
    return [os.path.join(dirpath, n) for n in ('ca.crt', 'srv.crt', 'srv.key')]
