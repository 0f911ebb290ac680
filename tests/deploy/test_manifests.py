#!/usr/bin/env python3
"""test_manifests — deploy/kubernetes/*.yaml: kubectl accepts every object
(`kubectl apply --dry-run=client --validate=false`, against a small
discovery server the test runs, since kubectl maps kinds through an API
server even for a client-side dry run); the one-replica StatefulSet keeps
the embedded store on a volume; the etcd mode is a Deployment of several
replicas behind a Service; every pod runs as non-root with readiness
probes; every daemon option the manifests pass is one of kernelindexd's,
and their configurations pass `kernelindexd --check`."""
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'e2e'))
import kitest  # noqa: E402
from kitest import check, eq, test  # noqa: E402

SRC = os.path.abspath(os.environ.get('KI_SRCDIR') or kitest.REPO)
K8S = os.path.join(SRC, 'deploy', 'kubernetes')

# What the discovery server knows: (group/version, resource, kind,
# namespaced).
RESOURCES = [
    ('v1', 'configmaps', 'ConfigMap', True),
    ('v1', 'services', 'Service', True),
    ('v1', 'persistentvolumeclaims', 'PersistentVolumeClaim', True),
    ('v1', 'namespaces', 'Namespace', False),
    ('apps/v1', 'statefulsets', 'StatefulSet', True),
    ('apps/v1', 'deployments', 'Deployment', True),
    ('policy/v1', 'poddisruptionbudgets', 'PodDisruptionBudget', True),
]


class Discovery(http.server.BaseHTTPRequestHandler):
    """Answers kubectl's discovery requests; every object is absent."""

    def answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = self.path.split('?')[0]
        gvs = sorted({gv for gv, _, _, _ in RESOURCES if '/' in gv})
        if path == '/version':
            return self.answer(200, {'major': '1', 'minor': '32',
                                     'gitVersion': 'v1.32.0'})
        if path == '/api':
            return self.answer(200, {'kind': 'APIVersions',
                                     'versions': ['v1'],
                                     'serverAddressByClientCIDRs': []})
        if path == '/apis':
            groups = [{'name': gv.split('/')[0],
                       'versions': [{'groupVersion': gv,
                                     'version': gv.split('/')[1]}],
                       'preferredVersion': {'groupVersion': gv,
                                            'version': gv.split('/')[1]}}
                      for gv in gvs]
            return self.answer(200, {'kind': 'APIGroupList',
                                     'apiVersion': 'v1', 'groups': groups})
        for gv in {r[0] for r in RESOURCES}:
            if path == ('/api/' if gv == 'v1' else '/apis/') + gv:
                return self.answer(200, {
                    'kind': 'APIResourceList', 'groupVersion': gv,
                    'resources': [{'name': n, 'singularName': '',
                                   'namespaced': ns, 'kind': k,
                                   'verbs': ['create', 'get', 'list',
                                             'patch', 'delete']}
                                  for g, n, k, ns in RESOURCES if g == gv]})
        self.answer(404, {'kind': 'Status', 'apiVersion': 'v1',
                          'status': 'Failure', 'reason': 'NotFound',
                          'code': 404, 'message': path + ' not found'})

    def log_message(self, *args):
        pass


def kubectl_apply(path):
    """`kubectl apply --dry-run=client --validate=false -o name` of path:
    the names it would create."""
    kubectl = shutil.which('kubectl')
    check(kubectl is not None, 'kubectl is missing: scripts/deps.sh --test '
          'installs it')
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Discovery)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    home = kitest.tempdir('kitest-kube-')
    try:
        r = subprocess.run(
            [kubectl, '--server', 'http://127.0.0.1:%d' % srv.server_port,
             '--namespace', 'default', 'apply', '--dry-run=client',
             '--validate=false', '-o', 'name', '-f', path],
            capture_output=True, text=True, timeout=60,
            env=dict(os.environ, HOME=home, KUBECONFIG=os.path.join(
                home, 'none')))
    finally:
        srv.shutdown()
        srv.server_close()
    eq(r.returncode, 0, 'kubectl apply --dry-run=client of %s: %s' %
       (os.path.basename(path), r.stderr[-2000:]))
    return r.stdout.split()


def documents(path):
    import yaml
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def kinds(docs):
    return {(d['kind'], d['metadata']['name']): d for d in docs}


def daemon_options():
    """The option names of `kernelindexd --help`."""
    out = subprocess.run([kitest.daemon_path(), '--help'],
                         capture_output=True, text=True, check=True).stdout
    return set(re.findall(r'^  --([a-z][a-z-]*) ', out, re.M))


def flags(args):
    return [a[2:].split('=')[0] for a in args if a.startswith('--')]


def check_pod(spec, what):
    """Non-root, no privilege escalation, probes on the daemon's paths."""
    sc = spec.get('securityContext') or {}
    eq(sc.get('runAsNonRoot'), True, what + ': runAsNonRoot')
    check(isinstance(sc.get('runAsUser'), int) and sc['runAsUser'] > 0,
          what + ': a numeric non-root runAsUser')
    eq(len(spec['containers']), 1, what + ': one container')
    c = spec['containers'][0]
    csc = c.get('securityContext') or {}
    eq(csc.get('allowPrivilegeEscalation'), False,
       what + ': allowPrivilegeEscalation')
    eq(csc.get('readOnlyRootFilesystem'), True, what + ': read-only root')
    eq(csc.get('capabilities'), {'drop': ['ALL']}, what + ': capabilities')
    eq(c['readinessProbe']['httpGet']['path'], '/readyz',
       what + ': readiness probe')
    eq(c['livenessProbe']['httpGet']['path'], '/livez',
       what + ': liveness probe')
    ports = {p['name']: p['containerPort'] for p in c['ports']}
    eq(ports, {'http': 8080}, what + ': ports')
    unknown = set(flags(c.get('args', []))) - daemon_options() - {'config'}
    eq(unknown, set(), what + ': options kernelindexd does not have')
    return c


def selects(service, pod_labels):
    sel = service['spec']['selector']
    return all(pod_labels.get(k) == v for k, v in sel.items())


def check_config(text, extra=()):
    """`kernelindexd --config FILE --check` of text: (exit status, output)."""
    d = kitest.tempdir('kitest-conf-')
    path = os.path.join(d, 'kernelindexd.conf')
    with open(path, 'w') as f:
        f.write(text)
    r = subprocess.run([kitest.daemon_path(), '--config', path, '--check'] +
                       list(extra), capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


@test
def lmdb_statefulset():
    path = os.path.join(K8S, 'lmdb.yaml')
    names = kubectl_apply(path)
    eq(sorted(names), sorted(['configmap/kernelindex-config',
                              'service/kernelindex',
                              'service/kernelindex-pods',
                              'statefulset.apps/kernelindex']),
       'objects kubectl would create')
    objs = kinds(documents(path))
    ss = objs[('StatefulSet', 'kernelindex')]
    eq(ss['spec']['replicas'], 1, 'one replica: the store is embedded')
    eq(ss['spec']['serviceName'], 'kernelindex-pods', 'governing Service')
    check(objs[('Service', 'kernelindex-pods')]['spec'].get('clusterIP') ==
          'None', 'the governing Service is headless')
    claims = {t['metadata']['name']: t for t in
              ss['spec']['volumeClaimTemplates']}
    eq(list(claims), ['data'], 'one volume claim')
    eq(claims['data']['spec']['accessModes'], ['ReadWriteOnce'],
       'the store volume is one node\'s')
    pod = ss['spec']['template']
    c = check_pod(pod['spec'], 'StatefulSet')
    mounts = {m['name']: m['mountPath'] for m in c['volumeMounts']}
    eq(mounts.get('data'), '/var/lib/kernelindex', 'the store volume mount')
    # The configuration the pod reads is valid, and its data-dir is the
    # volume.
    eq(c['args'], ['--config', '/etc/kernelindex/kernelindexd.conf'],
       'args')
    eq(mounts.get('config'), '/etc/kernelindex', 'the config mount')
    conf = objs[('ConfigMap', 'kernelindex-config')]['data'][
        'kernelindexd.conf']
    rc, out = check_config(conf)
    eq((rc, out.strip()), (0, 'configuration ok'), 'the ConfigMap --check')
    check(re.search(r'^data-dir = /var/lib/kernelindex$', conf, re.M),
          'the ConfigMap puts the store on the volume')
    check(selects(objs[('Service', 'kernelindex')], pod['metadata']['labels']),
          'the Service selects the pod')


@test
def etcd_deployment():
    path = os.path.join(K8S, 'etcd.yaml')
    names = kubectl_apply(path)
    eq(sorted(names), sorted(['service/kernelindex',
                              'deployment.apps/kernelindex',
                              'poddisruptionbudget.policy/kernelindex']),
       'objects kubectl would create')
    objs = kinds(documents(path))
    dep = objs[('Deployment', 'kernelindex')]
    check(dep['spec']['replicas'] >= 2, 'several stateless replicas')
    eq(dep['spec']['strategy']['rollingUpdate']['maxUnavailable'], 0,
       'an update keeps every replica serving')
    pod = dep['spec']['template']
    check('volumeClaimTemplates' not in dep['spec'], 'no store volume')
    c = check_pod(pod['spec'], 'Deployment')
    for v in pod['spec']['volumes']:
        check('persistentVolumeClaim' not in v, 'stateless: %r' % v)
    args = c['args']
    eq(args[args.index('--store') + 1], 'etcd', '--store')
    eps = args[args.index('--etcd-endpoints') + 1].split(',')
    check(len(eps) >= 3 and all(e.startswith('http') for e in eps),
          '--etcd-endpoints lists the members: %r' % eps)
    check(selects(objs[('Service', 'kernelindex')], pod['metadata']['labels']),
          'the Service selects the pods')
    pdb = objs[('PodDisruptionBudget', 'kernelindex')]
    check(pdb['spec']['minAvailable'] < dep['spec']['replicas'],
          'the disruption budget lets a node drain')
    # The arguments pass --check in a build with the etcd backend; one
    # without knows every option and misses only the backend.
    r = subprocess.run([kitest.daemon_path()] + args + ['--check'],
                       capture_output=True, text=True)
    if "this build's store backends: lmdb" in r.stderr:
        eq(r.returncode, 2, '--check of the etcd args without etcd')
        eq(r.stderr.count('\n'), 1, 'one error: %r' % r.stderr)
    else:
        eq((r.returncode, r.stdout.strip()), (0, 'configuration ok'),
           '--check of the etcd args: %r' % r.stderr)


if __name__ == '__main__':
    sys.exit(kitest.run_all())
