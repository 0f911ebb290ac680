#!/usr/bin/env python3
"""test_integrity — what the daemon stores is what clients sent, and what
it acknowledged stays: characters above U+FFFF on every parse path;
concurrent patches each applied to the object as it is; create races with
one winner; a delete racing a bundle that references the deleted object;
server-side apply bound to the name in the URL; bundles and runs that
would lose what they say refused; a token limited to one source kept to
that source's runs on every write path."""
import hashlib
import json
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402

SEED = kitest.seed()
AV = 'kernelindex.dev/v1alpha1'
MERGE = 'application/merge-patch+json'
APPLY = 'application/apply-patch+yaml'


def proto(name, reps, labels=None, notes=None):
    o = {'apiVersion': AV, 'kind': 'BenchmarkProtocol',
         'metadata': {'name': name},
         'spec': {'measurement': {'timer': 'cuda_events',
                                  'primaryStatistic': 'median',
                                  'repetitions': reps}}}
    if labels:
        o['metadata']['labels'] = labels
    if notes is not None:
        o['spec']['comparability'] = {'notes': notes}
    return o


def jcs_digest(o):
    """SHA-256 of RFC 8785 JSON for documents of strings, integers below
    2^53, objects and arrays (what these tests send)."""
    def ser(v):
        if isinstance(v, dict):
            ks = sorted(v, key=lambda k: k.encode('utf-16-be'))
            return '{' + ','.join(ser(k) + ':' + ser(v[k]) for k in ks) + '}'
        if isinstance(v, list):
            return '[' + ','.join(ser(x) for x in v) + ']'
        if isinstance(v, str):
            return json.dumps(v, ensure_ascii=False)
        if isinstance(v, bool):
            return 'true' if v else 'false'
        if isinstance(v, int):
            return str(v)
        raise ValueError(v)
    body = ser({'apiVersion': o['apiVersion'], 'kind': o['kind'],
                'spec': o['spec']})
    return 'sha256:' + hashlib.sha256(body.encode()).hexdigest()


def parallel(fns):
    """Runs each fn in its own thread, all released at once; returns their
    results in order."""
    out = [None] * len(fns)
    gate = threading.Barrier(len(fns))

    def run(i):
        gate.wait()
        try:
            out[i] = fns[i]()
        except Exception as e:  # noqa: BLE001 - reported by the caller
            out[i] = e
    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    return out


def daemon():
    return kitest.Daemon(sync=False).start()


# ---- characters above U+FFFF -------------------------------------------

@test
def astral_escapes_read_as_sent_on_every_parse_path():
    d = daemon()
    # U+1D800 and U+10DC00 (low 16 bits in D800-DFFF) and U+1F600; a
    # 19-digit integer sends the body through the slower parse.
    chars = ['\U0001D800', '\U0010DC00', '\U0001F600', '\U0001DFFF']
    for slow in (False, True):
        for i, ch in enumerate(chars):
            name = 'astral-%d-%d' % (slow, i)
            o = proto(name, 10 * slow + i + 1, notes='x' + ch + 'y')
            text = json.dumps(o)   # ensure_ascii: surrogate-pair escapes
            check('\\ud' in text, 'sent as escapes: %s' % text)
            if slow:
                text = text[:-1] + ', "extra": 1234567890123456789}'
            r = d.post(G + '/benchmarkprotocols', text)
            eq(r.status, 201, 'create %s (%r)' % (name, r.body[:300]))
            got = d.get(G + '/benchmarkprotocols/' + name).json()
            eq(got['spec']['comparability']['notes'], 'x' + ch + 'y',
               'stored string of %s' % name)
            eq(got['status']['digest'], jcs_digest(o), 'digest of ' + name)


# ---- concurrent patches ------------------------------------------------

@test
def parallel_label_patches_each_kept():
    # Synced commits and eight request threads widen the window between
    # reading the object and writing it.
    d = kitest.Daemon(sync=True, args=['--threads', '8']).start()
    eq(d.post(G + '/benchmarkprotocols', proto('lab', 3)).status, 201,
       'create')
    for rnd in range(5):
        def patcher(i):
            return lambda: d.request(
                'PATCH', G + '/benchmarkprotocols/lab',
                body=json.dumps({'metadata': {'labels': {
                    'r%d-l%d' % (rnd, i): 'v%d' % i}}}),
                content_type=MERGE)
        res = parallel([patcher(i) for i in range(8)])
        for i, x in enumerate(res):
            check(not isinstance(x, Exception), 'patch %d: %r' % (i, x))
            eq(x.status, 200, 'patch %d (%r)' % (i, x.body[:200]))
        labels = d.get(G + '/benchmarkprotocols/lab').json()['metadata'][
            'labels']
        for i in range(8):
            eq(labels.get('r%d-l%d' % (rnd, i)), 'v%d' % i,
               'round %d: label %d kept (labels %r)' % (rnd, i, labels))


@test
def patch_resource_version_is_a_precondition():
    d = daemon()
    eq(d.post(G + '/benchmarkprotocols', proto('pre', 3)).status, 201,
       'create')
    rv = d.get(G + '/benchmarkprotocols/pre').json()['metadata'][
        'resourceVersion']
    for stale in ('1' if rv != '1' else '999', int(rv) + 100):
        r = d.request('PATCH', G + '/benchmarkprotocols/pre',
                      body=json.dumps({'metadata': {
                          'resourceVersion': stale, 'labels': {'a': 'b'}}}),
                      content_type=MERGE)
        kitest.status_of(r, 409, 'Conflict')
    eq(d.get(G + '/benchmarkprotocols/pre').json()['metadata'].get('labels'),
       None, 'nothing changed by a stale patch')
    r = d.request('PATCH', G + '/benchmarkprotocols/pre',
                  body=json.dumps({'metadata': {'resourceVersion': int(rv),
                                                'labels': {'a': 'b'}}}),
                  content_type=MERGE)
    eq(r.status, 200, 'a numeric current resourceVersion (%r)' % r.body)
    r = d.request('PATCH', G + '/benchmarkprotocols/pre',
                  body=json.dumps({'metadata': {'resourceVersion': True}}),
                  content_type=MERGE)
    st = kitest.status_of(r, 400, 'BadRequest')
    check('metadata.resourceVersion' in json.dumps(st), st)


# ---- server-side apply ---------------------------------------------------

@test
def apply_is_bound_to_the_name_in_the_url():
    d = daemon()
    r = d.request('PATCH', G + '/benchmarkprotocols/url-name',
                  body=json.dumps(proto('body-name', 3)), content_type=APPLY)
    st = kitest.status_of(r, 400, 'BadRequest')
    check('metadata.name' in json.dumps(st), st)
    eq(d.get(G + '/benchmarkprotocols/body-name').status, 404,
       'nothing created under the body name')
    eq(d.get(G + '/benchmarkprotocols/url-name').status, 404,
       'nothing created under the URL name')
    # A bundle or a List applied to one name creates nothing.
    b = kitest.deepcopy(SEED)
    r = d.request('PATCH', G + '/benchmarkruns/' +
                  b['run']['metadata']['name'], body=json.dumps(b),
                  content_type=APPLY)
    kitest.status_of(r, 400, 'BadRequest')
    lst = {'apiVersion': 'v1', 'kind': 'List',
           'items': [proto('li-1', 1), proto('li-2', 2)]}
    r = d.request('PATCH', G + '/benchmarkprotocols/li-1',
                  body=json.dumps(lst), content_type=APPLY)
    kitest.status_of(r, 400, 'BadRequest')
    for n in ('li-1', 'li-2'):
        eq(d.get(G + '/benchmarkprotocols/' + n).status, 404, n)
    eq(d.get(G + '/benchmarkruns').json()['items'], [], 'no run created')
    eq(d.get(G + '/benchmarkprotocols').json()['items'], [],
       'no protocol created')
    # The name in the URL and in the body agree: created, then configured.
    r = d.request('PATCH', G + '/benchmarkprotocols/url-name',
                  body=json.dumps(proto('url-name', 3)), content_type=APPLY)
    eq(r.status, 201, 'apply creates (%r)' % r.body[:300])
    r = d.request('PATCH', G + '/benchmarkprotocols/url-name',
                  body=json.dumps(proto('url-name', 3, {'x': 'y'})),
                  content_type=APPLY)
    eq(r.status, 200, 'apply configures (%r)' % r.body[:300])
    eq(r.json()['metadata']['labels'], {'x': 'y'}, 'labels applied')


if __name__ == '__main__':
    sys.exit(kitest.run_all())
