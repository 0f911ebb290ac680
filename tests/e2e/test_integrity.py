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



# ---- create races ----------------------------------------------------------

@test
def same_name_and_same_natural_key_create_races_have_one_winner():
    d = kitest.Daemon(sync=True, args=['--threads', '8']).start()
    # Same name, different content: one 201, the others 409.
    res = parallel([(lambda i=i: d.post(G + '/benchmarkprotocols',
                                         proto('race', 100 + i)))
                    for i in range(8)])
    codes = sorted(r.status for r in res)
    eq(codes.count(201), 1, 'one creation (%r)' % codes)
    eq(codes.count(409), 7, 'the others conflict (%r)' % codes)
    # Same name, same content: one 201, the others 200 unchanged.
    res = parallel([(lambda: d.post(G + '/benchmarkprotocols',
                                    proto('same', 7))) for i in range(8)])
    codes = sorted(r.status for r in res)
    eq(codes, [200] * 7 + [201], 'one creation, the rest unchanged')
    # Same natural key (source, externalId) under eight names: one run.
    def run_named(i):
        b = kitest.deepcopy(SEED)
        b['run']['metadata']['name'] = 'nk-%d' % i
        # Other content (the time it was observed), the same source row.
        b['run']['spec']['observedAt'] = '2024-09-03T15:33:%02d.000Z' % i
        return b
    res = parallel([(lambda i=i: d.post(G + '/benchmarkruns', run_named(i)))
                    for i in range(8)])
    codes = sorted(r.status for r in res)
    eq(codes.count(201), 1, 'one run created (%r)' % [
        (r.status, r.body[:200]) for r in res])
    eq(codes.count(409), 7, 'the others conflict (%r)' % codes)
    items = d.get(G + '/benchmarkruns').json()['items']
    eq(len(items), 1, 'one run stored')


@test
def delete_racing_a_bundle_that_references_the_deleted_object():
    """A bundle carrying its protocol races a delete of that protocol. The
    resourceVersions order them: a delete after the bundle leaves the run
    with its protocol unresolved; a bundle after the delete stores the
    protocol again and its run resolves it. Anything else has lost an
    acknowledged write."""
    d = kitest.Daemon(sync=True, args=['--threads', '8']).start()
    pname = SEED['protocol']['metadata']['name']
    orders = set()
    for i in range(16):
        b = kitest.deepcopy(SEED)
        b['run']['metadata']['name'] = 'dr-%d' % i
        b['run']['spec']['sourceNative']['externalId'] = 'dr-%d' % i
        if i == 0:
            eq(d.post(G + '/benchmarkruns', b).status, 201, 'first')
            continue
        post, dele = parallel([
            lambda b=b: d.post(G + '/benchmarkruns', b),
            lambda: d.delete(G + '/benchmarkprotocols/' + pname)])
        eq(post.status, 201, 'bundle (%r)' % post)
        check(dele.status in (200, 404), 'delete: %r' % dele)
        run = d.get(G + '/benchmarkruns/dr-%d' % i)
        eq(run.status, 200, 'the acknowledged run is stored')
        have = d.get(G + '/benchmarkprotocols/' + pname)
        unresolved = ' '.join(c.get('message', '') for c in run.json()[
            'status'].get('conditions', []) if c.get('type') ==
            'DigestsVerified' and c.get('status') == 'False')
        if dele.status == 404:
            orders.add('none')
            eq(have.status, 200, 'nothing deleted: protocol stored')
            continue
        brv = int(post.json()['metadata']['resourceVersion'])
        drv = int(dele.json()['metadata']['resourceVersion'])
        if drv > brv:
            orders.add('delete last')
            eq(have.status, 404, 'deleted after the bundle: gone')
            check('protocol' in unresolved, 'the run says its protocol is '
                  'unresolved: %r' % run.json()['status'])
        else:
            orders.add('bundle last')
            eq(have.status, 200, 'the bundle after the delete stored it '
               '(rv %d, delete %d)' % (brv, drv))
            check('protocol' not in unresolved, 'the run resolves its '
                  'protocol: %r' % unresolved)
    check(len(orders) >= 1, 'some order seen: %r' % orders)


# ---- refusals: what would be lost -----------------------------------------

@test
def bundle_without_a_run_is_refused():
    d = daemon()
    r = d.post(G + '/benchmarkruns', {'protocol': SEED['protocol']})
    st = kitest.status_of(r, 422, 'Invalid')
    check('run' in kitest.cause_fields(st), 'cause names run: %r' % st)
    eq(d.get(G + '/benchmarkprotocols').json()['items'], [],
       'nothing stored')
    # The same inside a List: that item fails.
    lst = {'apiVersion': 'v1', 'kind': 'List',
           'items': [{'environment': SEED['environment']}]}
    r = d.post(G + '/benchmarkruns', lst)
    check(r.status in (200, 207, 422), 'List answer %r' % r)
    eq(d.get(G + '/executionenvironments').json()['items'], [],
       'nothing stored from the List')


@test
def run_with_a_native_latency_but_no_timing_is_refused():
    d = daemon()
    b = kitest.deepcopy(SEED)
    del b['run']['spec']['timing']
    r = d.post(G + '/benchmarkruns', b)
    st = kitest.status_of(r, 422, 'Invalid')
    check('run.spec.sourceNative.metrics.ms_50' in kitest.cause_fields(st),
          'cause names ms_50: %r' % st)
    eq(d.get(G + '/benchmarkruns').json()['items'], [], 'nothing stored')
    eq(d.post(G + '/benchmarkruns', SEED).status, 201, 'the seed as it is')


@test
def list_resource_version_must_be_a_number():
    d = daemon()
    for plural in ('benchmarkruns', 'benchmarkprotocols'):
        r = d.get(G + '/%s?resourceVersion=abc' % plural)
        st = kitest.status_of(r, 400, 'BadRequest')
        check('resourceVersion' in json.dumps(st), st)
        eq(d.get(G + '/%s?resourceVersion=0' % plural).status, 200, 'rv 0')


# ---- a token limited to one source ----------------------------------------

def token(data_dir, *args):
    p = subprocess.run(kitest.command(data_dir, 'token', *args), capture_output=True, text=True,
                       timeout=60)
    eq(p.returncode, 0, 'token %s: %s' % (args, p.stderr))
    return p.stdout.strip()


def bearer(t):
    return {'Authorization': 'Bearer ' + t}


def scoped():
    """A daemon holding the seed (a liger-kernel-bench run) and another
    source's run sharing its protocol and environment: (daemon, writer
    headers, source-token headers)."""
    data = kitest.tempdir('kitest-scope-')
    writer = token(data, 'create', '--role', 'writer')
    src = SEED['run']['spec']['sourceNative']['source']
    liger = token(data, 'create', '--role', 'writer', '--source', src)
    d = kitest.Daemon(data_dir=data, sync=False).start()
    W, L = bearer(writer), bearer(liger)
    eq(d.post(G + '/benchmarkruns', SEED, headers=W).status, 201, 'seed')
    other = kitest.deepcopy(SEED)
    other['run']['metadata']['name'] = 'other-run'
    other['run']['spec']['sourceNative']['source'] = 'someone-else'
    eq(d.post(G + '/benchmarkruns', other, headers=W).status, 201, 'other')
    return d, W, L


def forbidden(r):
    kitest.status_of(r, 403, 'Forbidden')


def other_run():
    o = kitest.deepcopy(SEED)
    o['run']['metadata']['name'] = 'other-run'
    o['run']['spec']['sourceNative']['source'] = 'someone-else'
    return o


@test
def a_source_token_may_create_but_not_change_shared_objects():
    d, W, L = scoped()
    for plural, obj in (('benchmarkprotocols', SEED['protocol']),
                        ('executionenvironments', SEED['environment'])):
        path = G + '/%s/%s' % (plural, obj['metadata']['name'])
        before = d.get(path).json()
        forbidden(d.delete(path, headers=L))
        forbidden(d.request('PATCH', path, body=json.dumps(
            {'metadata': {'labels': {'x': 'y'}}}), content_type=MERGE,
            headers=L))
        ap = kitest.deepcopy(obj)
        ap['metadata']['labels'] = {'x': 'y'}
        forbidden(d.request('PATCH', path, body=json.dumps(ap),
                            content_type=APPLY, headers=L))
        forbidden(d.request('PUT', path, body=json.dumps(ap),
                            content_type='application/json', headers=L))
        eq(d.get(path).json(), before, plural + ' unchanged')
        # Creating the same content again is no change: 200.
        eq(d.post(G + '/' + plural, obj, headers=L).status, 200,
           'unchanged create of ' + plural)
    eq(d.post(G + '/benchmarkprotocols', proto('liger-new', 9),
              headers=L).status, 201, 'it may create a new protocol')
    # The writer token is not limited: it may.
    eq(d.request('PATCH', G + '/benchmarkprotocols/liger-new',
                 body=json.dumps({'metadata': {'labels': {'x': 'y'}}}),
                 content_type=MERGE, headers=W).status, 200, 'writer patch')


@test
def a_source_token_changes_only_its_own_runs_on_every_write_path():
    d, W, L = scoped()
    other = other_run()
    opath = G + '/benchmarkruns/other-run'
    before = d.get(opath).json()
    forbidden(d.request('PATCH', opath, body=json.dumps(
        {'metadata': {'labels': {'x': 'y'}}}), content_type=MERGE,
        headers=L))
    forbidden(d.request('PATCH', opath, body=json.dumps(other['run']),
                        content_type=APPLY, headers=L))
    forbidden(d.request('PUT', opath, body=json.dumps(other['run']),
                        content_type='application/json', headers=L))
    forbidden(d.delete(opath, headers=L))
    eq(d.get(opath).json(), before, 'other run unchanged')
    # Nor create one in a bundle, a List or a stream.
    o2 = kitest.deepcopy(other)
    o2['run']['metadata']['name'] = 'other-2'
    o2['run']['spec']['sourceNative']['externalId'] = 'other-2'
    forbidden(d.post(G + '/benchmarkruns', o2, headers=L))
    r = d.post(G + '/benchmarkruns', {'apiVersion': 'v1', 'kind': 'List',
                                      'items': [o2]}, headers=L)
    check(r.status in (403, 200, 207), 'List: %r' % r)
    r = d.post(G + '/benchmarkruns', json.dumps(o2) + '\n',
               content_type='application/x-ndjson', headers=L)
    check(r.status in (403, 200, 207), 'NDJSON: %r' % r)
    eq(d.get(G + '/benchmarkruns/other-2').status, 404, 'other-2 not stored')
    # Its own run: label patch, then delete.
    rpath = G + '/benchmarkruns/' + SEED['run']['metadata']['name']
    eq(d.request('PATCH', rpath, body=json.dumps(
        {'metadata': {'labels': {'checked': 'yes'}}}), content_type=MERGE,
        headers=L).status, 200, 'patch own run')
    eq(d.delete(rpath, headers=L).status, 200, 'delete own run')


@test
def a_source_token_verifies_only_its_own_runs():
    d, W, L = scoped()

    def ver(name, run):
        return {'apiVersion': AV, 'kind': 'Verification',
                'metadata': {'name': name}, 'spec': {'runName': run}}
    forbidden(d.post(G + '/verifications', ver('v-other', 'other-run'),
                     headers=L))
    d.post(G + '/verifications', json.dumps(ver('v-other', 'other-run')) +
           '\n', content_type='application/x-ndjson', headers=L)
    eq(d.get(G + '/verifications/v-other').status, 404, 'not stored')
    own = SEED['run']['metadata']['name']
    eq(d.post(G + '/verifications', ver('v-own', own), headers=L).status,
       201, 'verify its own run')
    forbidden(d.delete(G + '/verifications/v-own', headers=L))
    eq(d.delete(G + '/verifications/v-own', headers=W).status, 200,
       'the writer deletes it')


@test
def natural_key_halves_may_not_hold_control_characters():
    """The natural key is source, U+001F, externalId: a source holding
    U+001F made two (source, externalId) pairs one key, and one beginning
    with a token's source and U+001F was taken for that source."""
    d, W, L = scoped()
    src = SEED['run']['spec']['sourceNative']['source']
    for s_, x in ((src + '\x1fevil', 'e1'), ('a', 'b\x1fc'),
                  ('a\x1fb', 'c'), (src + '\x01', 'e2')):
        ev = kitest.deepcopy(SEED)
        ev['run']['metadata']['name'] = 'us-run'
        ev['run']['spec']['sourceNative']['source'] = s_
        ev['run']['spec']['sourceNative']['externalId'] = x
        r = d.post(G + '/benchmarkruns', ev, headers=W)
        st = kitest.status_of(r, 422, 'Invalid')
        check(any(f.startswith('run.spec.sourceNative.')
                  for f in kitest.cause_fields(st)), st)
    eq(d.get(G + '/benchmarkruns/us-run').status, 404, 'nothing stored')

if __name__ == '__main__':
    sys.exit(kitest.run_all())
