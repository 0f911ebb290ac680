#!/usr/bin/env python3
"""test_adversary — findings of an adversarial pass over scopes, HTTP
framing and JSON Patch, each checked against the behaviour it names:
a prefix-limited token verifies only runs under its prefix; a
prefix-limited token may not create a Threshold (it judges every run),
and an access review says no to a source- or prefix-limited token's
Threshold, as the write does;
a header name holding a space ("Transfer-Encoding : chunked"), or a
framing header continued by obs-fold, is refused, not read as another
framing; a JSON patch's resourceVersion is a
precondition, its pointers may not hold U+0000, its copies are bounded
(in values and depth: each copy of the document into itself doubled it),
a move onto itself
changes nothing and a patch that leaves null is 422; a watch from a
resourceVersion the store has not reached is 504, not a stream that
passes over the events up to it, and a list's resourceVersionMatch
(NotOlderThan, Exact) is honoured, not ignored; a token's or a backup's
body with an unknown member, a member that is not a string, or an empty
source or prefix (an unlimited token) is refused, as is an empty or
missing --source or --prefix of kernelindexd token create;
an HTTP/1.1 request without a Host header, or with two, is 400; an
Accept header that admits nothing an endpoint produces is 406; the
series CSV honours includeImplausible; an access review answers for
comparisons by the rule the endpoint applies."""
import csv
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402

JSONPATCH = 'application/json-patch+json'


def token(data_dir, *args):
    p = subprocess.run(kitest.command(data_dir, 'token', *args), capture_output=True, text=True,
                       timeout=60)
    eq(p.returncode, 0, 'token %s: %s' % (args, p.stderr))
    return p.stdout.strip()


def bearer(t):
    return {'Authorization': 'Bearer ' + t}


def seeded(data=None):
    d = kitest.Daemon(data_dir=data, sync=False).start()
    s = kitest.seed()
    return d, s


def jpatch(d, path, ops, headers=None):
    body = ops if isinstance(ops, (bytes, str)) else json.dumps(ops)
    return d.request('PATCH', path, body=body, content_type=JSONPATCH,
                     headers=headers)


@test
def prefix_token_verifies_only_runs_under_its_prefix():
    data = kitest.tempdir('kitest-adv-')
    admin = token(data, 'create', '--role', 'admin')
    team = token(data, 'create', '--role', 'writer', '--prefix', 'team-')
    d, s = seeded(data)
    eq(d.post(G + '/benchmarkruns', s, headers=bearer(admin)).status, 201,
       'seed')
    run = s['run']['metadata']['name']
    check(not run.startswith('team-'), 'the seed run is outside the prefix')
    v = {'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Verification',
         'metadata': {'name': 'team-v1'}, 'spec': {'runName': run}}
    r = d.post(G + '/verifications', v, headers=bearer(team))
    st = kitest.status_of(r, 403, 'Forbidden')
    check('runName' in st['message'], 'names spec.runName: %r' % st)
    eq(d.get(G + '/verifications/team-v1').status, 404, 'nothing stored')
    # The admin may; the prefix token still may verify its own runs.
    s2 = kitest.seed()
    s2['run']['metadata']['name'] = 'team-run'
    s2['run']['spec']['sourceNative']['externalId'] += '-team'
    eq(d.post(G + '/benchmarkruns', s2, headers=bearer(admin)).status, 201,
       'team run')
    v['spec']['runName'] = 'team-run'
    eq(d.post(G + '/verifications', v, headers=bearer(team)).status, 201,
       'a Verification of a run under the prefix')
    check(d.sanitizer_report() is None, d.sanitizer_report())


@test
def limited_tokens_may_not_write_thresholds():
    data = kitest.tempdir('kitest-adv-')
    liger = token(data, 'create', '--role', 'writer', '--source',
                  'liger-kernel-bench')
    team = token(data, 'create', '--role', 'writer', '--prefix', 'team-')
    writer = token(data, 'create', '--role', 'writer')
    d = kitest.Daemon(data_dir=data, sync=False).start()
    th = {'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Threshold',
          'metadata': {'name': 't1'},
          'spec': {'test': 'percentage', 'limit': 5}}
    kitest.status_of(d.post(G + '/thresholds', th, headers=bearer(liger)),
                     403, 'Forbidden')
    # A prefix-limited token's Threshold, named under its prefix, would
    # still label runs of every name.
    th_team = kitest.deepcopy(th)
    th_team['metadata']['name'] = 'team-t'
    kitest.status_of(d.post(G + '/thresholds', th_team,
                            headers=bearer(team)), 403, 'Forbidden')

    def review(t, verb, name=None):
        ra = {'group': 'kernelindex.dev', 'resource': 'thresholds',
              'verb': verb}
        if name:
            ra['name'] = name
        r = d.post('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
                   {'apiVersion': 'authorization.k8s.io/v1',
                    'kind': 'SelfSubjectAccessReview',
                    'spec': {'resourceAttributes': ra}}, headers=bearer(t))
        eq(r.status, 201, 'review: %r' % r.body[:300])
        return r.json()['status']

    for t in (liger, team):
        for verb in ('create', 'update', 'patch', 'delete'):
            st = review(t, verb, None if verb == 'create' else 'team-x')
            eq(st.get('allowed'), False, '%s by a limited token: %r' %
               (verb, st))
            check('threshold' in st.get('reason', '').lower(),
                  'why: %r' % st)
    eq(review(writer, 'create').get('allowed'), True, 'a writer may')
    eq(d.post(G + '/thresholds', th, headers=bearer(writer)).status, 201,
       'and does')


@test
def admin_bodies_are_read_whole():
    d = kitest.Daemon(sync=False).start()
    # Loopback without tokens acts as admin until the first token exists:
    # every refused body below must create none.
    for body, member in (({'role': 'writer', 'source': ''}, 'source'),
                         ({'role': 'writer', 'source': None}, 'source'),
                         ({'role': 'writer', 'prefix': ''}, 'prefix'),
                         ({'role': 'writer', 'source': {'a': 1}}, 'source'),
                         ({'role': 'writer', 'source': 5}, 'source'),
                         ({'role': 'reader', 'expires': '2020-01-01'},
                          'expires'),
                         (['role', 'admin'], 'object')):
        r = d.post('/admin/tokens', body)
        check(r.status in (400, 422), '%r: %r' % (body, r.body[:300]))
        st = kitest.status_of(r, r.status)
        check(member in st['message'], 'names %s: %r' % (member, st))
    eq(d.get('/admin/tokens').json().get('items', []), [], 'no token made')
    out = os.path.join(kitest.tempdir('kitest-adv-bk-'), 'b.mdb')
    r = d.post('/admin/backup', {'path': out, 'compact': False})
    kitest.status_of(r, 422, 'Invalid')
    check(not os.path.exists(out), 'no backup written')
    eq(d.post('/admin/backup', {'path': out}).status, 201, 'a backup')
    r = d.post('/admin/tokens', {'role': 'writer', 'source': 'x',
                                 'prefix': 'p-', 'description': 'd'})
    eq(r.status, 201, 'a sound token: %r' % r.body[:200])
    check(d.sanitizer_report() is None, d.sanitizer_report())


@test
def token_command_refuses_an_empty_or_missing_limit():
    data = kitest.tempdir('kitest-adv-')
    for args in (['--source', ''], ['--prefix', ''], ['--source']):
        p = subprocess.run(kitest.command(data, 'token', 'create',
                                          '--role', 'writer', *args),
                           capture_output=True, text=True, timeout=60)
        eq(p.returncode, 2, '%r: %s' % (args, p.stderr))
        eq(p.stdout, '', 'no secret printed for %r' % args)
        check(args[0] in p.stderr, 'names %s: %r' % (args[0], p.stderr))
    listed = json.loads(token(data, 'list'))
    eq(listed.get('items'), [], 'no token made')


def raw(d, data):
    s = socket.create_connection(('127.0.0.1', d.port), timeout=10)
    try:
        s.sendall(data)
        out = b''
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
        return out
    finally:
        s.close()


@test
def header_names_with_spaces_are_refused():
    d = kitest.Daemon(sync=False).start()
    p = (G + '/benchmarkprotocols').encode()
    # A proxy that trims the name reads a chunked body (an empty one, then
    # a request of its own); read by Content-Length it is something else.
    out = raw(d, b'POST ' + p + b' HTTP/1.1\r\nHost: x\r\n'
              b'Transfer-Encoding : chunked\r\nContent-Length: 3\r\n'
              b'Connection: close\r\n\r\n0\r\n\r\n')
    check(out.startswith(b'HTTP/1.1 400 '), 'TE with a space: %r' % out[:300])
    check(b'name' in out, 'the answer says why: %r' % out[-300:])
    # An obs-fold line after an empty framing header's value: a proxy that
    # unfolds reads Content-Length: 2 ({} the body) or chunked; read here
    # as no framing header at all, the body would be the next request.
    for fold in (b'Content-Length:\r\n 2\r\n',
                 b'Transfer-Encoding:\r\n chunked\r\nContent-Length: 3\r\n'):
        out = raw(d, b'POST ' + p + b' HTTP/1.1\r\nHost: x\r\n' + fold +
                  b'Connection: close\r\n\r\n0\r\n\r\n')
        check(out.startswith(b'HTTP/1.1 400 ') and b'obs-fold' in out,
              'folded %r: %r' % (fold, out[-300:]))
    out = raw(d, b'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n'
              b'Connection: close\r\n\r\n')
    check(out.startswith(b'HTTP/1.1 400 '), 'bare CR: %r' % out[:300])
    out = raw(d, b'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close'
              b'\r\n\r\n')
    check(out.startswith(b'HTTP/1.1 200 '), 'a sound request: %r' % out[:200])
    check(d.sanitizer_report() is None, d.sanitizer_report())


@test
def json_patch_resource_version_is_a_precondition():
    d, s = seeded()
    eq(d.post(G + '/benchmarkruns', s).status, 201, 'seed')
    path = G + '/benchmarkruns/' + s['run']['metadata']['name']
    rv = d.get(path).json()['metadata']['resourceVersion']
    r = jpatch(d, path, [
        {'op': 'replace', 'path': '/metadata/resourceVersion', 'value': '1'},
        {'op': 'add', 'path': '/metadata/labels/stale', 'value': 'yes'}])
    kitest.status_of(r, 409, 'Conflict')
    o = d.get(path).json()
    check('stale' not in o['metadata']['labels'], 'nothing written: %r' %
          o['metadata']['labels'])
    eq(o['metadata']['resourceVersion'], rv, 'the version is unchanged')
    # The current version holds, and so does a patch that leaves it alone.
    r = jpatch(d, path, [
        {'op': 'replace', 'path': '/metadata/resourceVersion', 'value': rv},
        {'op': 'add', 'path': '/metadata/labels/fresh', 'value': 'yes'}])
    eq(r.status, 200, 'current version: %r' % r.body[:300])
    r = jpatch(d, path, [
        {'op': 'add', 'path': '/metadata/labels/plain', 'value': 'yes'}])
    eq(r.status, 200, 'no version named: %r' % r.body[:300])
    check(d.sanitizer_report() is None, d.sanitizer_report())


@test
def json_patch_edge_cases():
    d, s = seeded()
    eq(d.post(G + '/benchmarkruns', s).status, 201, 'seed')
    path = G + '/benchmarkruns/' + s['run']['metadata']['name']
    before = d.get(path).json()
    # "/metadata/labels/a\u0000b" must not be read as ".../a".
    r = jpatch(d, path, '[{"op":"add","path":"/metadata/labels/a\\u0000b",'
               '"value":"x"}]')
    st = kitest.status_of(r, 400, 'BadRequest')
    check('u+0000' in kitest.status_text(st), 'says why: %r' % st)
    check('a' not in d.get(path).json()['metadata']['labels'],
          'no label "a" written')
    # A move onto itself leaves an array as it was (no second copy).
    r = jpatch(d, path, [{'op': 'move', 'from': '/spec/measurements/0',
                          'path': '/spec/measurements/0'}])
    eq(r.status, 200, 'move onto itself: %r' % r.body[:300])
    eq(r.json()['spec'], before['spec'], 'the spec is unchanged')
    rv = r.json()['metadata']['resourceVersion']
    # Replacing the whole object by null is the client's error, not 503.
    r = jpatch(d, path, [{'op': 'replace', 'path': '', 'value': None}])
    kitest.status_of(r, 422, 'Invalid')
    eq(d.get(path).json()['metadata']['resourceVersion'], rv,
       'nothing written')
    check(d.sanitizer_report() is None, d.sanitizer_report())


@test
def json_patch_copies_are_bounded():
    d, s = seeded()
    eq(d.post(G + '/benchmarkruns', s).status, 201, 'seed')
    path = G + '/benchmarkruns/' + s['run']['metadata']['name']
    rv = d.get(path).json()['metadata']['resourceVersion']
    # Each copy of the spec into itself doubles it: 40 of them would need
    # 2^40 copies of the spec, exhausting memory inside the write.
    ops = [{'op': 'copy', 'from': '/spec', 'path': '/spec/x%d' % i}
           for i in range(40)]
    t = time.time()
    r = jpatch(d, path, ops)
    st = kitest.status_of(r, 422, 'Invalid')
    check('copies more than' in st['message'], 'says why: %r' % st)
    check(time.time() - t < 30, 'refused in %.1f s' % (time.time() - t))
    # Copies nested into their own children: bounded in depth.
    ops = [{'op': 'copy', 'from': '/metadata/labels',
            'path': '/metadata/labels' + '/z' * (i + 1)} for i in range(80)]
    st = kitest.status_of(jpatch(d, path, ops), 422, 'Invalid')
    check('deeper than' in st['message'], 'says why: %r' % st)
    eq(d.get(path).json()['metadata']['resourceVersion'], rv,
       'nothing written')
    # A few copies stay allowed.
    r = jpatch(d, path, [{'op': 'copy', 'from': '/metadata/labels/gpu',
                          'path': '/metadata/labels/gpu2'}])
    eq(r.status, 200, 'one copy: %r' % r.body[:300])
    eq(r.json()['metadata']['labels'].get('gpu2'),
       r.json()['metadata']['labels'].get('gpu'), 'copied')
    check(d.sanitizer_report() is None, d.sanitizer_report())


@test
def watch_from_a_future_resource_version_is_refused():
    d, s = seeded()
    eq(d.post(G + '/benchmarkruns', s).status, 201, 'seed')
    rv = int(d.list_rv('benchmarkruns'))
    # Started past the store's version, the watch would pass over every
    # event up to it: a change made now would never reach the client.
    r = d.get(G + '/benchmarkruns?watch=true&timeoutSeconds=2&'
              'resourceVersion=%d' % (rv + 1000), timeout=10)
    st = kitest.status_of(r, 504, 'Timeout')
    check('too large resource version' in st['message'].lower(),
          'says why: %r' % st)
    # From the current version (or an older one kept) it starts.
    r = d.get(G + '/benchmarkruns?watch=true&timeoutSeconds=1&'
              'resourceVersion=%d' % rv, timeout=10)
    eq(r.status, 200, 'from the current version: %r' % r.body[:200])
    check(d.sanitizer_report() is None, d.sanitizer_report())


@test
def list_resource_version_match_is_honoured():
    d, s = seeded()
    eq(d.post(G + '/benchmarkruns', s).status, 201, 'seed')
    rv = int(d.list_rv('benchmarkruns'))
    lst = G + '/benchmarkruns?resourceVersion=%d'
    # Not older than a version the store has not reached: 504, not a list
    # older than the one asked for.
    st = kitest.status_of(d.get(lst % (rv + 1000)), 504, 'Timeout')
    check('too large' in st['message'].lower(), 'says why: %r' % st)
    kitest.status_of(d.get(lst % (rv + 1000) +
                           '&resourceVersionMatch=NotOlderThan'), 504,
                     'Timeout')
    # Exact asks for that version: an older one is no longer kept.
    kitest.status_of(d.get(lst % 1 + '&resourceVersionMatch=Exact'), 410,
                     'Expired')
    r = d.get(lst % rv + '&resourceVersionMatch=Exact')
    eq(r.status, 200, 'Exact at the current version: %r' % r.body[:200])
    eq(r.json()['metadata']['resourceVersion'], str(rv), 'at that version')
    for q in ('resourceVersionMatch=Exact', 'resourceVersionMatch=Newest',
              'resourceVersion=0&resourceVersionMatch=Exact'):
        kitest.status_of(d.get(G + '/benchmarkruns?' + q), 400, 'BadRequest')
    eq(d.get(lst % 1).status, 200, 'an older version is satisfied')
    eq(d.get(lst % 0 + '&resourceVersionMatch=NotOlderThan').status, 200,
       'any version')
    check(d.sanitizer_report() is None, d.sanitizer_report())


@test
def http11_needs_exactly_one_host():
    d = kitest.Daemon(sync=False).start()
    out = raw(d, b'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n')
    check(out.startswith(b'HTTP/1.1 400 ') and b'Host' in out,
          'no Host: %r' % out[:300])
    out = raw(d, b'GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n'
              b'Connection: close\r\n\r\n')
    check(out.startswith(b'HTTP/1.1 400 ') and b'Host' in out,
          'two Hosts: %r' % out[:300])
    out = raw(d, b'GET /healthz HTTP/1.0\r\n\r\n')
    check(b' 200 ' in out.split(b'\r\n')[0], 'HTTP/1.0 without Host: %r'
          % out[:300])
    out = raw(d, b'GET /healthz HTTP/1.1\r\nHost: a\r\n'
              b'Connection: close\r\n\r\n')
    check(out.startswith(b'HTTP/1.1 200 '), 'one Host: %r' % out[:300])
    check(d.sanitizer_report() is None, d.sanitizer_report())


@test
def unacceptable_accept_is_406():
    d, s = seeded()
    eq(d.post(G + '/benchmarkruns', s).status, 201, 'seed')
    kitest.status_of(d.get(G + '/benchmarkruns?watch=true&timeoutSeconds=1',
                           headers={'Accept': 'application/yaml'}),
                     406, 'NotAcceptable')
    for ep in ('series', 'leaderboard', 'comparisons?baseline=a%3Db'
               '&candidate=a%3Dc'):
        kitest.status_of(d.get(G + '/' + ep,
                               headers={'Accept': 'application/xml'}),
                         406, 'NotAcceptable')
        for a in ('application/json, */*', 'application/json',
                  'application/json;as=Table;v=v1;g=meta.k8s.io,'
                  'application/json', 'text/html,application/xhtml+xml,'
                  'application/xml;q=0.9,*/*;q=0.8', 'text/csv',
                  'application/yaml'):
            r = d.get(G + '/' + ep, headers={'Accept': a})
            check(r.status != 406, '%s with %r: %r' % (ep, a, r.body[:200]))
    r = d.get(G + '/benchmarkruns?watch=true&timeoutSeconds=1',
              headers={'Accept': 'application/json, */*'})
    eq(r.status, 200, 'a JSON watch')
    check(d.sanitizer_report() is None, d.sanitizer_report())


@test
def series_csv_honours_include_implausible():
    d, s = seeded()
    eq(d.post(G + '/benchmarkruns', s).status, 201, 'seed')
    b = kitest.deepcopy(s)
    b['run']['metadata']['name'] = 'too-fast'
    r = b['run']['spec']
    r['sourceNative']['externalId'] += '-fast'
    r['timing']['latencyNs']['median'] = 100000
    r['measurements'] = [m for m in r['measurements']
                         if m['statistic'] != 'p80']
    r['measurements'][0]['value'] = 90000
    r['sourceNative']['metrics'] = {'ms_50': 0.1, 'ms_20': 0.09}
    eq(d.post(G + '/benchmarkruns', b).status, 201, 'too-fast')
    eq(d.get(G + '/benchmarkruns/too-fast').json()['status']['plausibility']
       ['verdict'], 'Implausible', 'planted')

    def names(q):
        r = d.get(G + '/series?format=csv' + q)
        eq(r.status, 200, 'series csv %s: %r' % (q, r.body[:200]))
        return sorted(x['name'] for x in
                      csv.DictReader(r.body.decode().splitlines()))
    without = names('')
    check('too-fast' not in without and without, 'left out: %r' % without)
    check('too-fast' in names('&includeImplausible=true'), 'included')
    check(d.sanitizer_report() is None, d.sanitizer_report())


@test
def access_review_answers_for_comparisons():
    data = kitest.tempdir('kitest-adv-')
    reader = token(data, 'create', '--role', 'reader')
    d = kitest.Daemon(data_dir=data, sync=False).start()

    def review(res, verb, t=None):
        r = d.post('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
                   {'apiVersion': 'authorization.k8s.io/v1',
                    'kind': 'SelfSubjectAccessReview',
                    'spec': {'resourceAttributes': {
                        'group': 'kernelindex.dev', 'resource': res,
                        'verb': verb}}},
                   headers=bearer(t) if t else None)
        eq(r.status, 201, 'review: %r' % r.body[:300])
        return r.json()['status']
    cmp_ = {'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Comparison',
            'spec': {'baseline': {'labelSelector': 'a=b'},
                     'candidate': {'labelSelector': 'a=c'}}}
    eq(d.post(G + '/comparisons', cmp_, headers=bearer(reader)).status, 201,
       'a reader posts a Comparison')
    st = review('comparisons', 'create', reader)
    eq(st.get('allowed'), True, 'review says so: %r' % st)
    for res in ('comparisons', 'leaderboard', 'series'):
        eq(review(res, 'get', reader).get('allowed'), True, 'get ' + res)
    st = review('series', 'delete', reader)
    eq(st.get('allowed'), False, 'delete series: %r' % st)
    check('no resource' not in st.get('reason', ''), 'why: %r' % st)
    check(d.sanitizer_report() is None, d.sanitizer_report())


if __name__ == '__main__':
    sys.exit(kitest.run_all())
