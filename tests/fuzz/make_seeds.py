#!/usr/bin/env python3
"""make_seeds.py — writes the hand-made seed inputs of the fuzz targets.

    tests/fuzz/make_seeds.py OUTDIR [LIGER_NDJSON]

OUTDIR receives fuzz_document/, fuzz_selector/ and fuzz_router/, each a
set of files named seed-NNN-what. The documents come from the seed
(KI_DATA_DIR, default tests/data in the repository) and, when
LIGER_NDJSON is given, from Liger bundles as the importer writes them
(kernelindex import liger CSV --dry-run -o ndjson); the rest are malformed
variants and the requests kubectl sends (KUBECTL.md). The committed corpus
under tests/fuzz/corpus/ started from these and was grown by fuzzing and
minimized with libFuzzer's -merge=1.
"""
import base64
import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, '..', '..'))
DATA = os.path.abspath(os.environ.get('KI_DATA_DIR') or
                       os.path.join(REPO, 'tests', 'data'))
G = '/apis/kernelindex.dev/v1alpha1'
C = G + '/benchmarkruns'
GV = 'kernelindex.dev/v1alpha1'
TABLE_ACCEPT = ('application/json;as=Table;v=v1;g=meta.k8s.io,'
                'application/json;as=Table;v=v1beta1;g=meta.k8s.io,'
                'application/json')
DISCOVERY_ACCEPT = ('application/json;g=apidiscovery.k8s.io;v=v2;'
                    'as=APIGroupDiscoveryList,application/json;'
                    'g=apidiscovery.k8s.io;v=v2beta1;'
                    'as=APIGroupDiscoveryList,application/json')
KUBECTL_HEADERS = [
    ('User-Agent', 'kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07'),
    ('Kubectl-Session', '0b9c2f64-3d8e-4a57-9d1c-6f3f0c2f1a7e'),
]


def compact(o):
    return json.dumps(o, separators=(',', ':'), ensure_ascii=False)


class Out:
    def __init__(self, root, target):
        self.dir = os.path.join(root, target)
        os.makedirs(self.dir, exist_ok=True)
        self.n = 0

    def add(self, what, data):
        if isinstance(data, str):
            data = data.encode('utf-8', 'surrogatepass')
        self.n += 1
        name = 'seed-%03d-%s' % (self.n, what)
        with open(os.path.join(self.dir, name), 'wb') as f:
            f.write(data)


def documents(out, seed, liger):
    run, proto, env = seed['run'], seed['protocol'], seed['environment']
    out.add('seed-bundle-pretty', json.dumps(seed, indent=2))
    out.add('seed-bundle', compact(seed))
    out.add('seed-run', compact(run))
    out.add('seed-protocol', compact(proto))
    out.add('seed-environment', compact(env))
    for i, b in enumerate(liger[:8]):
        out.add('liger-bundle-%d' % i, compact(b))
    if liger:
        b = liger[0]
        out.add('liger-workload', compact(b['workload']))
        out.add('liger-implementation', compact(b['implementation']))
        out.add('liger-list', compact({'apiVersion': 'v1', 'kind': 'List',
                                       'items': liger[:2]}))
        out.add('liger-ndjson', ''.join(compact(x) + '\n'
                                        for x in liger[:3]))
    out.add('verification', compact({
        'apiVersion': GV, 'kind': 'Verification',
        'metadata': {'name': 'verify-1'},
        'spec': {'runName': run['metadata']['name']}}))

    # Malformed and edge-case variants of the seed's parts.
    out.add('truncated', compact(seed)[:700])
    out.add('empty', '')
    out.add('null', 'null')
    out.add('array', '[1,2,3]')
    out.add('trailing-data', compact(proto) + ' {}')
    out.add('duplicate-key', compact(proto)[:-1] + ',"kind":"Workload"}')
    out.add('duplicate-nested',
            '{"apiVersion":"%s","kind":"BenchmarkProtocol","metadata":'
            '{"name":"a","name":"b"},"spec":{}}' % GV)
    out.add('lone-surrogate', compact(proto).replace(
        'Liger benchmark harness', 'Liger \\ud800 harness'))
    out.add('surrogate-pair-key',
            '{"apiVersion":"%s","kind":"ExecutionEnvironment","metadata":'
            '{"name":"e"},"spec":{"hardware":{"vendor":"nvidia","product":'
            '"x"},"software":{"\\ud83d\\ude00":"1","\\uffff":"2","\\u00e9":'
            '"3","a":"4"}}}' % GV)
    out.add('nul-key', '{"a\\u0000b":1}')
    out.add('big-int', '{"a":18446744073709551616,"b":-9223372036854775809}')
    out.add('huge-double', '{"a":1e400}')
    out.add('numbers', '{"a":[-0,0.1,1e21,1e-7,123456789012345678,'
            '5e-324,1.7976931348623157e308,100,1.0,-1.5e-10]}')
    out.add('nan', '{"a":NaN}')
    out.add('single-quote', "{'a':1}")
    out.add('comment', '{"a":1 /* x */}')
    out.add('deep', '[' * 40 + ']' * 40)
    out.add('deep-object', '{"a":' * 33 + '1' + '}' * 33)
    out.add('invalid-utf8', b'{"a":"\xff\xfe"}')
    out.add('overlong-utf8', b'{"a":"\xc0\xaf"}')
    out.add('utf8-surrogate', b'{"a":"\xed\xa0\x80"}')
    out.add('bom', b'\xef\xbb\xbf' + compact(proto).encode())
    out.add('raw-control', '{"a":"x\ty"}')
    out.add('escapes', '{"a":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f'
            '\\u2028"}')
    bad = copy.deepcopy(proto)
    bad['kind'] = 'Nope'
    out.add('unknown-kind', compact(bad))
    bad = copy.deepcopy(proto)
    bad['apiVersion'] = 'v1'
    out.add('wrong-apiversion', compact(bad))
    bad = copy.deepcopy(proto)
    del bad['metadata']
    out.add('no-metadata', compact(bad))
    bad = copy.deepcopy(proto)
    bad['metadata']['name'] = 'Bad_Name'
    bad['metadata']['labels'] = {'x': 'not valid!', 'a' * 70: 'b',
                                 'example.com/ok': 'v'}
    bad['metadata']['uid'] = 'client-uid'
    bad['metadata']['resourceVersion'] = '5'
    bad['status'] = {'digest': 'sha256:' + '0' * 64}
    bad['extra'] = 1
    out.add('bad-metadata', compact(bad))
    bad = copy.deepcopy(run)
    bad['spec']['protocolDigest'] = 'sha256:' + 'A' * 64
    bad['spec']['timing']['latencyNs']['median'] = -1
    bad['spec']['observedAt'] = '2024-13-45T99:00:00Z'
    bad['spec']['bogus'] = {'x': [1, 2]}
    out.add('bad-run', compact(bad))
    bad = copy.deepcopy(run)
    bad['spec']['workloadDigest'] = run['spec']['protocolDigest']
    out.add('run-wrong-kind-ref', compact(bad))
    bad = copy.deepcopy(seed)
    bad['protocol']['spec']['measurement']['timer'] = 'wall_clock'
    out.add('bundle-digest-mismatch', compact(bad))
    bad = copy.deepcopy(seed)
    bad['run']['kind'] = 'BenchmarkProtocol'
    out.add('bundle-wrong-part', compact(bad))
    bad = copy.deepcopy(seed)
    bad['extra'] = {}
    out.add('bundle-extra-part', compact(bad))
    out.add('list-mixed', compact({'kind': 'List', 'items': [
        proto, {'kind': 'Nope'}, 3, env]}))
    out.add('list-no-items', '{"kind":"List"}')
    out.add('ndjson-mixed', compact(proto) + '\n\n  \r\n{bad\n' +
            compact(env) + '\n' + '[]\n')
    many = copy.deepcopy(proto)
    many['metadata']['labels'] = {'k%d' % i: 'v' for i in range(70)}
    out.add('too-many-labels', compact(many))
    long = copy.deepcopy(proto)
    long['metadata']['name'] = 'a' * 254
    long['metadata']['title'] = 't' * 300
    out.add('long-name', compact(long))


def selectors(out):
    for i, s in enumerate([
            'kernel=embedding,gpu=a100-sxm4-80gb,metric=latency',
            'provider in (liger,torch),verdict=plausible',
            'provider=liger',
            'provider in (liger,triton),gpu!=a100',
            'provider=liger,!gpu',
            'provider notin (liger, torch)',
            'tier',
            '!tier',
            'tier==gold',
            'n>3,n<100',
            'neg<0',
            'example.com/key=value',
            'liger_version=0.2.1',
            '',
            '   ',
            'metadata.name=liger-embedding-full',
            'metadata.name==x,metadata.name!=y',
            'metadata.name=has spaces , next=1',
            'spec.gpu=H100',
            'kernel=embedding\nmetadata.name=x',
            'a in (b',
            'a in b)',
            '=x',
            'a==',
            'a!=b!=c',
            'in (x)',
            'a notin ()',
            'a in (,)',
            'a>x',
            'a>99999999999999999999',
            '-a=b',
            'a/b/c=d',
            'A' * 64 + '=x',
            'k=' + 'v' * 64,
            ','.join('k%d=v' % i for i in range(40)),
            'k in (' + ','.join('v%d' % i for i in range(70)) + ')',
            'k\t=\tv',
            'k = v ,',
            'k=v,,j=w',
            'k=\xe9',
            ]):
        out.add('sel-%d' % i, s)


def request(method, target, headers=(), body=b''):
    lines = ['%s %s' % (method, target)]
    lines += ['%s: %s' % h for h in headers]
    if isinstance(body, (dict, list)):
        body = compact(body)
    if isinstance(body, str):
        body = body.encode('utf-8')
    return '\n'.join(lines).encode() + b'\n\n' + body


def requests(out, seed, liger):
    run, proto, env = seed['run'], seed['protocol'], seed['environment']
    name = run['metadata']['name']
    pname = proto['metadata']['name']
    k = KUBECTL_HEADERS
    js = [('Content-Type', 'application/json'),
          ('Accept', 'application/json')]
    tok = base64.urlsafe_b64encode(('n:' + name).encode()).decode().rstrip(
        '=')
    out.add('version', request('GET', '/version?timeout=5s', k))
    out.add('api', request('GET', '/api?timeout=32s',
                           k + [('Accept', DISCOVERY_ACCEPT)]))
    out.add('apis', request('GET', '/apis?timeout=32s',
                            k + [('Accept', DISCOVERY_ACCEPT)]))
    out.add('apis-legacy', request('GET', '/apis', k))
    out.add('group', request('GET', '/apis/kernelindex.dev', k))
    out.add('resources', request('GET', G + '?timeout=32s', k))
    out.add('openapi', request('GET', '/openapi/v3?timeout=32s',
                               k + [('Accept', 'application/json, */*')]))
    out.add('openapi-gv', request(
        'GET', '/openapi/v3/apis/kernelindex.dev/v1alpha1?hash=AD9E74B1B9'
        'EDEEA184B3B5C7C1434E94&timeout=32s', k))
    out.add('list-table', request('GET', C + '?limit=500',
                                  k + [('Accept', TABLE_ACCEPT)]))
    out.add('list-plain', request('GET', C + '?limit=500', k))
    out.add('list-selector', request(
        'GET', C + '?labelSelector=provider+in+%28liger%2Ctriton%29%2Cgpu'
        '%21%3Da100&limit=500', k + [('Accept', TABLE_ACCEPT)]))
    out.add('list-field', request(
        'GET', C + '?fieldSelector=metadata.name%3D' + name + '&limit=500',
        k))
    out.add('list-field-bad', request(
        'GET', C + '?fieldSelector=spec.gpu%3DH100&limit=500', k))
    out.add('list-page', request('GET', C + '?limit=1', k))
    out.add('list-continue', request(
        'GET', C + '?continue=' + tok + '&limit=1', k))
    out.add('list-continue-bad', request('GET', C + '?continue=%%%&limit=2',
                                         k))
    out.add('list-sort', request('GET', C + '?includeObject=Object',
                                 k + [('Accept', TABLE_ACCEPT)]))
    out.add('list-none', request('GET', C + '?includeObject=None',
                                 k + [('Accept', TABLE_ACCEPT)]))
    out.add('list-limit-bad', request('GET', C + '?limit=-1', k))
    out.add('get-table', request('GET', C + '/' + name,
                                 k + [('Accept', TABLE_ACCEPT)]))
    out.add('get', request('GET', C + '/' + name, k))
    out.add('get-missing', request('GET', C + '/nope', k))
    out.add('get-status', request('GET', C + '/' + name + '/status', k))
    out.add('get-protocol', request('GET', G + '/benchmarkprotocols/' +
                                    pname, k))
    out.add('head', request('HEAD', C + '/' + name, k))
    digest = run['spec']['protocolDigest']
    out.add('by-digest', request('GET', G + '/objects/' + digest, k))
    out.add('by-digest-inm', request('GET', G + '/objects/' + digest,
                                     k + [('If-None-Match', '"%s"' % digest)]))
    out.add('by-digest-bad', request('GET', G + '/objects/sha256:xyz', k))
    out.add('facets', request('GET', G + '/facets', k))
    out.add('facets-sel', request(
        'GET', G + '/facets?labelSelector=kernel%3Dembedding', k))
    out.add('post-run', request(
        'POST', C + '?fieldManager=kubectl-create&fieldValidation=Strict',
        k + js, run))
    out.add('post-bundle', request('POST', C, [('Content-Type',
                                   'application/x-www-form-urlencoded')],
                                   seed))
    out.add('post-dry-run', request(
        'POST', C + '?dryRun=All&fieldManager=kubectl-create', k + js, run))
    out.add('post-protocol', request('POST', G + '/benchmarkprotocols', js,
                                     proto))
    out.add('post-env-wrong-coll', request('POST', C, js, env))
    # Series, comparisons, thresholds, the leaderboard and CSV.
    out.add('post-threshold', request('POST', G + '/thresholds', js, {
        'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Threshold',
        'metadata': {'name': 'fuzz-pct'},
        'spec': {'selector': 'provider in (liger,huggingface)',
                 'test': 'percentage', 'limit': 5, 'window': 3}}))
    out.add('post-threshold-iqr', request('POST', G + '/thresholds', js, {
        'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Threshold',
        'metadata': {'name': 'fuzz-iqr'},
        'spec': {'test': 'iqr', 'minSample': 2, 'window': 4,
                 'direction': 'decrease', 'versionLabel': 'liger_version'}}))
    out.add('post-comparison', request('POST', G + '/comparisons', js, {
        'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Comparison',
        'metadata': {'name': 'fuzz'},
        'spec': {'baseline': {'labelSelector': 'liger_version=0.2.1'},
                 'candidate': {'labelSelector': 'liger_version!=0.2.1'},
                 'labelSelector': 'gpu=a100-sxm4-80gb',
                 'thresholdPercent': 2.5, 'includeImplausible': True}}))
    out.add('get-comparison-csv', request(
        'GET', G + '/comparisons?baseline=provider%3Dliger&candidate='
        'provider%3Dhuggingface&thresholdPercent=1&format=csv', k))
    out.add('get-leaderboard', request(
        'GET', G + '/leaderboard?gpu=a100-sxm4-80gb&includeImplausible=true',
        k))
    out.add('get-series', request(
        'GET', G + '/series?labelSelector=kernel%3Dembedding', k))
    out.add('list-csv', request('GET', C + '?labelSelector=pass%3Dfull',
                                [('Accept', 'text/csv')]))
    if liger:
        out.add('post-ndjson', request(
            'POST', C, [('Content-Type', 'application/x-ndjson')],
            ''.join(compact(x) + '\n' for x in liger[:2])))
        out.add('post-ndjson-atomic', request(
            'POST', C + '?atomic=true',
            [('Content-Type', 'application/x-ndjson')],
            compact(liger[2]) + '\n{"kind":"Nope"}\n'))
        out.add('post-list', request('POST', C, js, {
            'kind': 'List', 'items': liger[3:5]}))
    out.add('post-bad-ct', request('POST', C, [('Content-Type',
                                   'text/plain')], run))
    out.add('post-bad-dryrun', request('POST', C + '?dryRun=Yes', js, run))
    out.add('post-bad-fv', request('POST', C + '?fieldValidation=Lax', js,
                                   run))
    out.add('post-bad-atomic', request('POST', C + '?atomic=maybe', js, run))
    out.add('post-remote', request('POST', C, js + [('X-Fuzz-Remote', '1')],
                                   run))
    out.add('post-empty', request('POST', C, js))
    last = compact(proto) + '\n'
    out.add('csa-patch', request(
        'PATCH', G + '/benchmarkprotocols/' + pname +
        '?fieldManager=kubectl-client-side-apply&fieldValidation=Strict',
        k + [('Content-Type', 'application/merge-patch+json')],
        {'metadata': {'annotations': {
            'kubectl.kubernetes.io/last-applied-configuration': last}},
         'spec': {'comparability': {'notes': None}}}))
    out.add('label', request(
        'PATCH', C + '/' + name + '?fieldManager=kubectl-label',
        k + [('Content-Type', 'application/merge-patch+json')],
        {'metadata': {'labels': {'tier': 'gold'}}}))
    out.add('label-rv', request(
        'PATCH', C + '/' + name + '?fieldManager=kubectl-label',
        k + [('Content-Type', 'application/merge-patch+json')],
        {'metadata': {'labels': {'tier': None}, 'resourceVersion': '1'}}))
    out.add('ssa', request(
        'PATCH', G + '/benchmarkprotocols/' + pname +
        '?fieldManager=kubectl&fieldValidation=Strict&force=false',
        k + [('Content-Type', 'application/apply-patch+yaml')], proto))
    newp = copy.deepcopy(proto)
    newp['metadata']['name'] = 'ssa-created'
    newp['spec']['measurement']['timer'] = 'wall_clock'
    out.add('ssa-create', request(
        'PATCH', G + '/benchmarkprotocols/ssa-created?fieldManager=kubectl',
        k + [('Content-Type', 'application/apply-patch+yaml')], newp))
    out.add('ssa-partial', request(
        'PATCH', G + '/benchmarkprotocols/' + pname +
        '?fieldManager=kubectl-last-applied&fieldValidation=Strict',
        k + [('Content-Type', 'application/apply-patch+yaml')],
        {'apiVersion': GV, 'kind': 'BenchmarkProtocol', 'metadata': {
            'annotations': {'kubectl.kubernetes.io/last-applied-'
                            'configuration': last}, 'name': pname}}))
    out.add('strategic', request(
        'PATCH', C + '/' + name + '?fieldManager=kubectl-patch',
        k + [('Content-Type', 'application/strategic-merge-patch+json')],
        {'metadata': {'annotations': {'a': 'b'}}}))
    out.add('json-patch', request(
        'PATCH', C + '/' + name,
        k + [('Content-Type', 'application/json-patch+json')],
        [{'op': 'add', 'path': '/metadata/labels/x', 'value': 'y'}]))
    out.add('spec-change', request(
        'PATCH', C + '/' + name,
        [('Content-Type', 'application/merge-patch+json')],
        {'spec': {'status': 'failed'}}))
    out.add('patch-status', request(
        'PATCH', C + '/' + name + '/status?fieldManager=kubectl-patch',
        k + [('Content-Type', 'application/merge-patch+json')],
        {'status': {'x': 1}}))
    put = copy.deepcopy(proto)
    put['metadata']['resourceVersion'] = '1'
    put['metadata']['labels'] = {'replaced': 'yes'}
    out.add('replace', request(
        'PUT', G + '/benchmarkprotocols/' + pname +
        '?fieldManager=kubectl-replace&fieldValidation=Strict', k + js, put))
    out.add('diff', request(
        'PATCH', G + '/benchmarkprotocols/' + pname +
        '?dryRun=All&fieldManager=kubectl-client-side-apply',
        k + [('Content-Type', 'application/merge-patch+json')],
        {'metadata': {'resourceVersion': '111', 'labels': {'d': 'x'}}}))
    out.add('delete', request(
        'DELETE', G + '/benchmarkprotocols/ssa-created', k + js,
        {'propagationPolicy': 'Background'}))
    out.add('delete-missing', request('DELETE', C + '/nope', k + js))
    out.add('delete-dry', request('DELETE', C + '/' + name + '?dryRun=All',
                                  k))
    out.add('watch', request('GET', C + '?resourceVersion=1&watch=true',
                             k + [('Accept', TABLE_ACCEPT)]))
    out.add('watch-wait', request(
        'GET', C + '?allowWatchBookmarks=true&fieldSelector=metadata.name'
        '%3D' + name + '&resourceVersion=3&timeoutSeconds=381&watch=true',
        k))
    out.add('watch-bad-rv', request('GET', C + '?watch=true&'
                                    'resourceVersion=abc', k))
    out.add('watch-bad-timeout', request('GET', C + '?watch=1&'
                                         'timeoutSeconds=-5', k))
    out.add('post-collection-put', request('PUT', C, js, run))
    out.add('other-kinds', request('GET', G + '/workloads?limit=5', k))
    out.add('verifications', request('GET', G + '/verifications', k))
    out.add('unknown-plural', request('GET', G + '/pods', k))
    out.add('wrong-group', request('GET', '/apis/apps/v1/deployments', k))
    out.add('sub-unknown', request('GET', C + '/' + name + '/scale', k))
    out.add('healthz', request('GET', '/healthz'))
    out.add('readyz', request('GET', '/readyz'))
    out.add('livez', request('HEAD', '/livez'))
    out.add('metrics', request('GET', '/metrics'))
    out.add('index', request('GET', '/'))
    out.add('static-js', request('GET', '/app.js',
                                 [('If-None-Match', '"0-0"')]))
    out.add('traversal', request('GET', '/../../etc/passwd'))
    out.add('traversal-enc', request('GET', '/%2e%2e/%2e%2e/etc/passwd'))
    out.add('static-post', request('POST', '/index.html', [], 'x'))
    out.add('long-name', request('GET', C + '/' + 'a' * 300 + '/status'))
    out.add('nul-in-path', request('GET', C + '/a%00b'))
    out.add('utf8-arg', request('POST', C + '?dryRun=%C3%A9%C3%A9%C3%A9'
                                '%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9'
                                '%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9'
                                '%C3%A9%C3%A9', js, run))


def main():
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    root = sys.argv[1]
    with open(os.path.join(DATA, 'seed',
                           'embedding-full-huggingface-a100.json')) as f:
        seed = json.load(f)
    liger = []
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            lines = [ln for ln in f if ln.strip()]
        # A spread of kernels: every 37th bundle.
        liger = [json.loads(ln) for ln in lines[::37]][:12]
    documents(Out(root, 'fuzz_document'), seed, liger)
    selectors(Out(root, 'fuzz_selector'))
    requests(Out(root, 'fuzz_router'), seed, liger)
    return 0


if __name__ == '__main__':
    sys.exit(main())
