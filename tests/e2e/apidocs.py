"""What the API's end-to-end tests share (tests/e2e/test_api.py,
tests/e2e/test_api_server.py): canonical JSON and digests computed
independently of the server, the seed documents and ways to change them,
reads of a daemon's store, and daemons shared by tests."""
import hashlib
import json
import re
import urllib.parse

import kitest
from kitest import G, Daemon, TestFailure, check, eq, seed

# ---------------------------------------------------------------- digests
# RFC 8785 (JCS) computed here, independently of the server.


def es_number(v):
    if isinstance(v, bool):
        raise TypeError('bool')
    if isinstance(v, int) and abs(v) < 2 ** 53:
        return str(v)
    v = float(v)
    if v == 0:
        return '0'
    sign = '-' if v < 0 else ''
    r = repr(abs(v))
    mant, exp = (r.split('e') + ['0'])[:2] if 'e' in r else (r, '0')
    exp = int(exp)
    ip, fp = (mant.split('.') + [''])[:2]
    fp = '' if fp == '0' else fp
    allds = ip + fp
    lead = len(allds) - len(allds.lstrip('0'))
    n = len(ip) + exp - lead
    d = allds.lstrip('0').rstrip('0') or '0'
    k = len(d)
    if k <= n <= 21:
        s = d + '0' * (n - k)
    elif 0 < n <= 21:
        s = d[:n] + '.' + d[n:]
    elif -6 < n <= 0:
        s = '0.' + '0' * (-n) + d
    else:
        e = n - 1
        s = d[0] + ('.' + d[1:] if k > 1 else '') + 'e' + \
            ('+' if e >= 0 else '-') + str(abs(e))
    return sign + s


def canon(o):
    if o is None:
        return 'null'
    if o is True:
        return 'true'
    if o is False:
        return 'false'
    if isinstance(o, (int, float)):
        return es_number(o)
    if isinstance(o, str):
        return json.dumps(o, ensure_ascii=False)
    if isinstance(o, list):
        return '[' + ','.join(canon(x) for x in o) + ']'
    keys = sorted(o, key=lambda k: k.encode('utf-16-be'))
    return '{' + ','.join(json.dumps(k, ensure_ascii=False) + ':' +
                          canon(o[k]) for k in keys) + '}'


def canonical_bytes(obj):
    core = {'apiVersion': obj['apiVersion'], 'kind': obj['kind'],
            'spec': obj['spec']}
    return canon(core).encode('utf-8')


def digest(obj):
    return 'sha256:' + hashlib.sha256(canonical_bytes(obj)).hexdigest()


# ---------------------------------------------------------------- helpers

PLURAL = {
    'BenchmarkRun': 'benchmarkruns',
    'BenchmarkProtocol': 'benchmarkprotocols',
    'ExecutionEnvironment': 'executionenvironments',
    'Workload': 'workloads',
    'Implementation': 'implementations',
    'Verification': 'verifications',
    'Threshold': 'thresholds',
}
SHORT = {
    'benchmarkruns': 'kbr', 'benchmarkprotocols': 'kbp',
    'executionenvironments': 'kee', 'workloads': 'kwl',
    'implementations': 'kimpl', 'verifications': 'kver',
    'thresholds': 'kth',
}
PARTS = ('run', 'protocol', 'environment', 'workload', 'implementation')

SEED = seed()
RUN_NAME = SEED['run']['metadata']['name']
PROTO_NAME = SEED['protocol']['metadata']['name']
ENV_NAME = SEED['environment']['metadata']['name']
RAW = '"@RAW@"'


def mut(fn, base=None):
    """A deep copy of the seed (or base), changed by fn(doc)."""
    d = kitest.deepcopy(SEED if base is None else base)
    fn(d)
    return d


def raw_with(doc, text):
    """doc as JSON text with the string "@RAW@" replaced by text."""
    s = json.dumps(doc)
    check(RAW in s, 'the placeholder is missing')
    return replace_once(s, RAW, text).encode()


def replace_once(text, old, new):
    """text with its one occurrence of old replaced by new."""
    eq(text.count(old), 1, 'occurrences of %r in the case body' % (old,))
    return text.replace(old, new)


DELETE = object()   # put(path, DELETE) removes the member


def put(path, value):
    """Returns fn(doc) that sets doc[path...] = value (path: a.b[0].c)."""
    keys = []
    for part in path.split('.'):
        m = re.match(r'^([^\[]*)((?:\[\d+\])*)$', part)
        if m.group(1):
            keys.append(m.group(1))
        keys += [int(i) for i in re.findall(r'\[(\d+)\]', m.group(2))]

    def fn(doc):
        o = doc
        for k in keys[:-1]:
            o = o[k]
        if value is DELETE:
            del o[keys[-1]]
        else:
            o[keys[-1]] = kitest.deepcopy(value)
    return fn


def chain(*fns):
    def fn(doc):
        for f in fns:
            f(doc)
    return fn


def protocol(name, harness='h', timer='cuda_events', **extra):
    spec = {'measurement': {'timer': timer, 'primaryStatistic': 'median'},
            'harness': {'name': harness}}
    spec.update(extra)
    return {'apiVersion': 'kernelindex.dev/v1alpha1',
            'kind': 'BenchmarkProtocol', 'metadata': {'name': name},
            'spec': spec}


def environment(name, vendor='amd', product='AMD Instinct MI300X'):
    return {'apiVersion': 'kernelindex.dev/v1alpha1',
            'kind': 'ExecutionEnvironment', 'metadata': {'name': name},
            'spec': {'hardware': {'vendor': vendor, 'product': product},
                     'software': {}}}


def workload(name, **kw):
    spec = {'kernel': 'embedding', 'pass': 'full', 'dtype': 'float32',
            'parameters': {'batch': 8, 'seq': 2048, 'hidden': 4096,
                           'vocab': 131072}, 'sweep': 'vocab'}
    spec.update(kw)
    return {'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Workload',
            'metadata': {'name': name}, 'spec': spec}


def lone_run(**changes):
    r = kitest.deepcopy(SEED['run'])
    for k, v in changes.items():
        put(k, v)(r)
    return r


def named_objects(body):
    """(plural, name) of every document a request body names."""
    out = []

    def doc(d):
        if not isinstance(d, dict):
            return
        kind = d.get('kind')
        meta = d.get('metadata')
        name = meta.get('name') if isinstance(meta, dict) else None
        if kind in PLURAL and isinstance(name, str) and name:
            out.append((PLURAL[kind], name))

    def element(v):
        if not isinstance(v, dict):
            return
        if 'kind' in v:
            if v.get('kind') == 'List' and isinstance(v.get('items'), list):
                for it in v['items']:
                    element(it)
            else:
                doc(v)
            return
        for p in PARTS:
            doc(v.get(p))
    element(body)
    return out


def snapshot(d):
    """The store as the API shows it: every list's resourceVersion and
    names, for the kinds that uploads create."""
    snap = {}
    for plural in ('benchmarkruns', 'benchmarkprotocols',
                   'executionenvironments', 'workloads', 'implementations'):
        items, rv = list_all(d, plural)
        snap[plural] = (rv, sorted(i['metadata']['name'] for i in items))
    return snap


def list_all(d, plural, page=500):
    """Every item of a list, following metadata.continue; returns
    (items, resourceVersion of the first page)."""
    items, token, rv = [], None, None
    for _ in range(100000):
        q = '?limit=%d' % page
        if token:
            q += '&continue=' + urllib.parse.quote(token)
        r = d.get('%s/%s%s' % (G, plural, q))
        eq(r.status, 200, 'GET %s%s' % (plural, q))
        j = r.json()
        if rv is None:
            rv = j['metadata']['resourceVersion']
        items += j['items']
        token = j['metadata'].get('continue')
        if not token:
            return items, rv
    raise TestFailure('the %s list does not end' % plural)


def get_name(d, plural, name):
    return d.get('%s/%s/%s' % (G, plural, urllib.parse.quote(name, safe='')))


# ---------------------------------------------------------------- daemons

_daemons = {}


def daemon(key, **kw):
    """A daemon shared by the tests that name the same key."""
    d = _daemons.get(key)
    if d is None or not d.running():
        d = Daemon(**kw).start()
        _daemons[key] = d
    return d


SENTINEL_ENV = environment('sentinel-environment', vendor='amd',
                           product='AMD Instinct MI300X')


def malformed_daemon():
    d = _daemons.get('malformed')
    if d is None or not d.running():
        d = daemon('malformed', sync=False)
        r = d.post(G + '/executionenvironments', SENTINEL_ENV)
        eq(r.status, 201, 'storing the sentinel environment (%r)' % r)
    return d


def small_daemon():
    return daemon('small', sync=False, args=['--max-body', '4096'])


# ---------------------------------------------------------------- cases


SEED_NAMES = [('benchmarkruns', RUN_NAME), ('benchmarkprotocols', PROTO_NAME),
              ('executionenvironments', ENV_NAME)]


def fresh():
    return Daemon(sync=False).start()


def bundle(i):
    """A valid bundle distinct from the seed: its own run, protocol and
    environment."""
    b = kitest.deepcopy(SEED)
    b['protocol'] = protocol('nd-proto-%d' % i, harness='nd %d' % i)
    b['environment'] = environment('nd-env-%d' % i, product='GPU %d' % i)
    b['run']['metadata']['name'] = 'nd-run-%d' % i
    b['run']['spec']['sourceNative']['externalId'] = 'nd/%d' % i
    b['run']['spec']['protocolDigest'] = digest(b['protocol'])
    b['run']['spec']['environmentDigest'] = digest(b['environment'])
    return b
