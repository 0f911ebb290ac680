#!/usr/bin/env python3
"""test_adversary_net2 — later findings of the adversarial passes over the
network and API side (test_adversary_net.py holds the earlier ones), each
checked against the behaviour it names.

Nothing a client sends is passed over in silence: status and the metadata
the server sets (managedFields, generation, creationTimestamp, ...) given
otherwise than stored in a PUT, a patch or an apply are dropped with a
Warning naming the field; an access review warns of members it does not
read and of query parameters; a DELETE's body in a media type other than
JSON (or none) is 415, not read as DeleteOptions all the same; a static
file, the group version's resource list and HEAD of a watch warn of
query parameters; Accept and Accept-Encoding given twice are a 400, as
the other headers read from one line are; the same content sent under
another name (the stored object keeps its first name) is told in a
Warning; a Comparison's metadata holding a member no object metadata
holds is 422, as an unknown member of its spec is; a fieldManager
kube-apiserver would refuse (over 128 bytes, a control character) and
force on a patch other than an apply are 422, and a PUT warns of force;
a versionLabel that is no label key is 400, and the runs' JSON list
(which does not read it) warns of it; an Accept that admits nothing
the API produces is 406 under /api and /apis before anything is done
(a write, a streamed upload); a label selector's empty value set
("a in ()") and a list's allowWatchBookmarks that is no boolean are
refused.

An operator whose front proxy passes chunked bodies on as they came sets
accept-chunked-bodies to false: a chunked request body is then a 411
Status, nothing is read or written, and the connection is closed; a
body with Content-Length still works."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import G, answers, check, eq, exchange, test  # noqa: E402

_daemon = None


def daemon():
    global _daemon
    if _daemon is None:
        _daemon = kitest.Daemon(sync=False).start()
    return _daemon



def proto_doc(name, reps):
    return {'apiVersion': 'kernelindex.dev/v1alpha1',
            'kind': 'BenchmarkProtocol', 'metadata': {'name': name},
            'spec': {'measurement': {'timer': 'cuda_events',
                                     'primaryStatistic': 'median',
                                     'repetitions': reps}}}


def warnings(r):
    return r.headers.get_all('Warning') or []


def warned(r, name):
    """Does a Warning of r name the field (quoted, as the header escapes
    it)?"""
    return any('\\"%s\\"' % name in w for w in warnings(r))


GET_HEALTHZ = b'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'


# ---- what a client sends is not passed over ----

@test
def server_owned_fields_in_a_write_are_warned_of():
    """status and the metadata the server sets were dropped from a PUT, a
    patch and an apply without a word: each given otherwise than stored
    is now named in a Warning (and still not applied); an object sent
    back as it was read gets none."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    eq(d.post(coll, proto_doc('own-a', 200)).status, 201, 'a protocol')
    obj = d.get(coll + '/own-a').json()
    r = d.request('PUT', coll + '/own-a', body=obj)
    eq((r.status, warnings(r)), (200, []), 'sent back as read: no Warning')
    obj = d.get(coll + '/own-a').json()
    obj['status'] = {'phase': 'Done'}
    obj['metadata']['managedFields'] = [{'manager': 'me',
                                         'operation': 'Update'}]
    obj['metadata']['generation'] = 7
    r = d.request('PUT', coll + '/own-a', body=obj)
    eq(r.status, 200, 'PUT: %r' % (r,))
    for f in ('status', 'metadata.managedFields', 'metadata.generation'):
        check(warned(r, f), 'PUT: a Warning names %s: %r' % (f, warnings(r)))
    for ctype, body, f in (
            ('application/merge-patch+json',
             {'metadata': {'managedFields': [{'manager': 'x'}]}},
             'metadata.managedFields'),
            ('application/merge-patch+json', {'status': {'a': 'b'}},
             'status'),
            ('application/strategic-merge-patch+json',
             {'metadata': {'creationTimestamp': '2000-01-01T00:00:00Z'}},
             'metadata.creationTimestamp'),
            ('application/json-patch+json',
             [{'op': 'add', 'path': '/status', 'value': {'x': 1}}],
             'status'),
            ('application/merge-patch+json',
             {'metadata': {'creationTimestamp': None}},
             'metadata.creationTimestamp')):
        r = d.request('PATCH', coll + '/own-a', body=json.dumps(body),
                      content_type=ctype)
        eq(r.status, 200, '%s %r: %r' % (ctype, body, r))
        check(warned(r, f), '%s %r: a Warning names %s: %r' %
              (ctype, body, f, warnings(r)))
    apply = proto_doc('own-a', 200)
    apply['status'] = {'x': 1}
    r = d.request('PATCH', coll + '/own-a?fieldManager=t', body=apply,
                  content_type='application/apply-patch+yaml')
    eq(r.status, 200, 'apply: %r' % (r,))
    check(warned(r, 'status'), 'apply: names status: %r' % warnings(r))
    apply = proto_doc('own-b', 201)
    apply['status'] = {'x': 1}
    apply['metadata']['managedFields'] = []
    r = d.request('PATCH', coll + '/own-b?fieldManager=t', body=apply,
                  content_type='application/apply-patch+yaml')
    eq(r.status, 201, 'apply that creates: %r' % (r,))
    for f in ('status', 'metadata.managedFields'):
        check(warned(r, f), 'apply that creates: names %s: %r' %
              (f, warnings(r)))
    for name in ('own-a', 'own-b'):
        got = d.get(coll + '/' + name).json()
        eq(list(got.get('status', {})), ['digest'],
           '%s: status is the server\'s: %r' % (name, got))
        check('managedFields' not in got['metadata'],
              '%s: no managedFields stored' % name)
    got = d.get(coll + '/own-a').json()['metadata']
    check(got.get('generation') != 7, 'generation is the server\'s: %r' %
          got)
    check(got.get('creationTimestamp'), 'creationTimestamp kept')
    r = d.request('PATCH', coll + '/own-a', body='{"metadata":{"labels":'
                  '{"a":"b"}}}', content_type='application/merge-patch+json')
    eq((r.status, warnings(r)), (200, []), 'a plain patch: no Warning')


@test
def access_reviews_warn_of_what_they_do_not_read():
    """A SelfSubjectAccessReview passed over unknown members of its body,
    spec and attributes, selectors (which change no answer here) and query
    parameters; each is now named in a Warning. A review of what it reads
    gets none."""
    d = daemon()
    path = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews'

    def review(ra=None, na=None, **extra):
        body = {'apiVersion': 'authorization.k8s.io/v1',
                'kind': 'SelfSubjectAccessReview', 'spec': {}}
        if ra is not None:
            body['spec']['resourceAttributes'] = ra
        if na is not None:
            body['spec']['nonResourceAttributes'] = na
        for k, v in extra.items():
            if k.startswith('spec_'):
                body['spec'][k[5:]] = v
            else:
                body[k] = v
        return body

    ra = {'verb': 'get', 'group': 'kernelindex.dev',
          'resource': 'benchmarkruns'}
    r = d.post(path, review(ra))
    eq((r.status, warnings(r)), (201, []), 'what it reads: no Warning')
    for what, body, q, name in (
            ('an attribute', review(dict(ra, verbs='delete')), '',
             'spec.resourceAttributes.verbs'),
            ('a spec member', review(ra, spec_user='admin'), '', 'spec.user'),
            ('a top member', review(ra, extra={'a': 1}), '', 'extra'),
            ('a path attribute', review(na={'path': '/healthz',
                                            'verb': 'get', 'x': 1}), '',
             'spec.nonResourceAttributes.x'),
            ('a query parameter', review(ra), '?dryRun=All', 'dryRun')):
        r = d.post(path + q, body)
        eq(r.status, 201, '%s: %r' % (what, r))
        check(warned(r, name), '%s: a Warning names %s: %r' %
              (what, name, warnings(r)))
    r = d.post(path, review(dict(ra, labelSelector={'rawSelector': 'a=b'})))
    eq(r.status, 201, 'a selector: %r' % (r,))
    check(any('selectors' in w for w in warnings(r)),
          'a selector: a Warning: %r' % warnings(r))
    r = d.post('/apis/authorization.k8s.io/v1/selfsubjectrulesreviews',
               {'apiVersion': 'authorization.k8s.io/v1',
                'kind': 'SelfSubjectRulesReview',
                'spec': {'namespace': '', 'verb': 'get'}})
    eq(r.status, 201, 'a rules review: %r' % (r,))
    check(warned(r, 'spec.verb'), 'a rules review: %r' % warnings(r))


@test
def a_delete_body_is_read_as_json_only():
    """A DELETE's body was read as DeleteOptions whatever its Content-Type
    (text/plain, NDJSON, none); kube-apiserver answers 415. Now 415 and
    nothing is deleted; the same body as application/json is read."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    eq(d.post(coll, proto_doc('del-ct', 210)).status, 201, 'a protocol')
    body = b'{"preconditions":{"resourceVersion":"1"}}'
    for ct in ('text/plain', 'application/x-ndjson',
               'application/merge-patch+json', None):
        r = d.request('DELETE', coll + '/del-ct', body=body, content_type=ct)
        st = kitest.status_of(r, 415, 'UnsupportedMediaType')
        check('DeleteOptions' in st['message'], '%s: says why: %r' % (ct, st))
        eq(d.get(coll + '/del-ct').status, 200, '%s: not deleted' % ct)
    r = d.request('DELETE', coll + '/del-ct', body=body,
                  content_type='application/json')
    kitest.status_of(r, 409, 'Conflict')
    r = d.request('DELETE', coll + '/del-ct', body=b'{"dryRun":["All"]}',
                  content_type='application/json; charset=utf-8')
    eq(r.status, 200, 'JSON DeleteOptions: %r' % (r,))
    eq(d.get(coll + '/del-ct').status, 200, 'a dry run deletes nothing')
    r = d.request('DELETE', coll + '/del-ct', content_type='text/plain')
    eq(r.status, 200, 'no body, whatever the Content-Type: %r' % (r,))


@test
def static_files_warn_of_query_parameters():
    """A file of the page was served whatever its query, in silence: a
    parameter is now named in a Warning (the file is still served)."""
    d = daemon()
    r = d.get('/index.html')
    eq((r.status, warnings(r)), (200, []), 'no query: no Warning')
    r = d.get('/index.html?v=12')
    eq(r.status, 200, 'served: %r' % (r,))
    check(any('"v"' in w.replace('\\', '') for w in warnings(r)),
          'a Warning names v: %r' % warnings(r))


@test
def accept_given_twice_is_refused():
    """libmicrohttpd answers Accept and Accept-Encoding with their first
    line: a second Accept asking for a Table (or another media type) was
    passed over. Given twice, each is now a 400 naming it, as the other
    headers read from one line are, and the connection is closed."""
    d = daemon()
    for name, v1, v2 in (
            (b'Accept', b'application/json',
             b'application/json;as=Table;v=v1;g=meta.k8s.io'),
            (b'Accept-Encoding', b'identity', b'gzip')):
        raw = (b'GET ' + (G + '/benchmarkprotocols').encode() +
               b' HTTP/1.1\r\nHost: x\r\n' + name + b': ' + v1 + b'\r\n' +
               name + b': ' + v2 + b'\r\n\r\n' + GET_HEALTHZ)
        out, closed = exchange(d, raw)
        rs = answers(out)
        eq([s for s, _, _ in rs], [400], '%s twice: %r' % (name, out[:300]))
        st = json.loads(rs[0][2])
        check(name.decode() in st['message'], 'names it: %r' % st)
        check(closed, '%s twice: the connection is closed' % name)
    r = d.get(G + '/benchmarkprotocols',
              headers={'Accept': 'application/json, */*'})
    eq(r.status, 200, 'a list in one line: %r' % (r,))


@test
def the_same_content_under_another_name_is_told():
    """The same content sent under another name is the stored object (it
    keeps its first name, docs/api.md): a POST or an apply of it was 200
    with the stored object and no word that the name sent was not taken
    (a GET of that name is 404). A Warning now names both."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    eq(d.post(coll, proto_doc('first-n', 230)).status, 201, 'stored')
    for what, r in (
            ('POST', d.post(coll, proto_doc('second-n', 230))),
            ('apply', d.request('PATCH', coll + '/third-n?fieldManager=t',
                                body=proto_doc('third-n', 230),
                                content_type='application/apply-patch+yaml'))):
        eq(r.status, 200, '%s: %r' % (what, r))
        eq(r.json()['metadata']['name'], 'first-n', '%s: the stored one' %
           what)
        check(any('first-n' in w and ('second-n' in w or 'third-n' in w)
                  for w in warnings(r)), '%s: a Warning names both: %r' %
              (what, warnings(r)))
    r = d.post(coll, proto_doc('first-n', 230))
    eq((r.status, warnings(r)), (200, []), 'the same name: no Warning')


@test
def discovery_and_head_of_a_watch_warn_of_parameters():
    """The group version's resource list passed over every query
    parameter, and HEAD of a watch dropped the Warnings its GET sends: both
    now warn of a parameter they do not read."""
    d = daemon()
    r = d.get(G + '?bogus=1')
    eq(r.status, 200, 'discovery: %r' % (r,))
    check(warned(r, 'bogus'), 'discovery warns: %r' % warnings(r))
    r = d.request('HEAD', G + '/benchmarkprotocols?watch=1&timeoutSeconds=1&'
                  'limit=1')
    eq(r.status, 200, 'HEAD watch: %r' % (r,))
    check(warned(r, 'limit'), 'HEAD of a watch warns: %r' % warnings(r))


@test
def a_comparison_s_metadata_holds_only_object_metadata():
    """A Comparison's answer echoes its metadata: an unknown member there
    (or a metadata that is no object, answered as {}) was handed back as if
    it were read, where an unknown spec member is 422. Now 422 naming it;
    ObjectMeta's members are still taken."""
    d = daemon()

    def cmp(meta):
        return d.post(G + '/comparisons', {
            'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Comparison',
            'metadata': meta, 'spec': {'baseline': {'labelSelector': 'a=b'},
                                       'candidate': {'labelSelector': 'a=c'}}})

    st = kitest.status_of(cmp({'name': 'c', 'zz': 1}), 422, 'Invalid')
    check('metadata.zz' in json.dumps(st), 'names it: %r' % st)
    kitest.status_of(cmp(['x']), 422, 'Invalid')
    r = cmp({'name': 'c', 'labels': {'a': 'b'}, 'generateName': 'c-'})
    eq(r.status, 201, 'ObjectMeta\'s members: %r' % (r,))


@test
def write_options_are_validated_as_kube_apiserver_does():
    """A fieldManager of more than 128 bytes or with a control character,
    and force on a patch other than an apply, were taken in silence
    (kube-apiserver: 422, ValidatePatchOptions and ValidateFieldManager);
    a PUT's force was passed over with no Warning. Now 422 naming the
    option, nothing written, and a PUT warns of force."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    eq(d.post(coll, proto_doc('opt-a', 240)).status, 201, 'a protocol')
    rv = d.get(coll + '/opt-a').json()['metadata']['resourceVersion']
    for what, r, field in (
            ('a long fieldManager', d.post(coll + '?fieldManager=' + 'm' * 129,
                                           proto_doc('opt-b', 241)),
             'fieldManager'),
            ('a fieldManager with LF', d.post(coll + '?fieldManager=a%0Ab',
                                              proto_doc('opt-c', 242)),
             'fieldManager'),
            ('force on a merge patch',
             d.request('PATCH', coll + '/opt-a?force=true',
                       body='{"metadata":{"labels":{"f":"1"}}}',
                       content_type='application/merge-patch+json'), 'force'),
            ('force on a JSON patch',
             d.request('PATCH', coll + '/opt-a?force=false',
                       body='[{"op":"add","path":"/metadata/labels",'
                       '"value":{"f":"2"}}]',
                       content_type='application/json-patch+json'), 'force')):
        st = kitest.status_of(r, 422, 'Invalid')
        check(field in st['message'], '%s: names %s: %r' % (what, field, st))
    for name in ('opt-b', 'opt-c'):
        eq(d.get(coll + '/' + name).status, 404, '%s: not stored' % name)
    eq(d.get(coll + '/opt-a').json()['metadata']['resourceVersion'], rv,
       'opt-a unchanged')
    r = d.request('PUT', coll + '/opt-a?force=true',
                  body=d.get(coll + '/opt-a').json())
    eq(r.status, 200, 'PUT: %r' % (r,))
    check(any('force' in w for w in warnings(r)), 'PUT warns of force: %r' %
          warnings(r))
    r = d.post(coll + '?fieldManager=' + 'm' * 128, proto_doc('opt-d', 243))
    eq(r.status, 201, '128 bytes: %r' % (r,))


@test
def a_version_label_is_a_label_key_and_read_where_it_is_given():
    """versionLabel that is no label key (it can name no label) was read
    as one no run carries, and the runs' JSON list passed it over in
    silence (it names the CSV's version column). Now 400 naming it, and
    a Warning on the JSON list."""
    d = daemon()
    for p in ('leaderboard', 'series', 'benchmarkruns',
              'comparisons?baseline=a%3Db&candidate=a%3Dc'):
        sep = '&' if '?' in p else '?'
        st = kitest.status_of(d.get(G + '/' + p + sep + 'versionLabel=bad%20'
                                    'key!'), 400, 'BadRequest')
        check('versionLabel' in st['message'], '%s: names it: %r' % (p, st))
    r = d.get(G + '/benchmarkruns?versionLabel=version')
    eq(r.status, 200, 'the JSON list: %r' % (r,))
    check(any('versionLabel' in w for w in warnings(r)),
          'the JSON list warns: %r' % warnings(r))
    r = d.get(G + '/benchmarkruns?format=csv&versionLabel=version')
    eq((r.status, warnings(r)), (200, []), 'the CSV reads it')


@test
def an_accept_the_api_cannot_meet_is_406_before_anything_is_done():
    """docs/api.md: an Accept header that admits nothing an endpoint
    produces is 406. Only watches and the computed answers said so: a
    list, an object, discovery and every write answered JSON the client
    had not asked for (a POST or a streamed upload stored its objects
    first). Now 406 under /api and /apis, and nothing is written."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    eq(d.post(coll, proto_doc('acc-a', 250)).status, 201, 'a protocol')
    for a in ('image/png', 'text/html', 'application/json;q=0',
              'application/xml'):
        for m, p in (('GET', coll), ('GET', coll + '/acc-a'), ('GET', G),
                     ('GET', '/apis'), ('HEAD', coll)):
            r = d.request(m, p, headers={'Accept': a})
            eq(r.status, 406, '%s %s Accept %s: %r' % (m, p, a, r))
        r = d.request('POST', coll, body=proto_doc('acc-b', 251),
                      headers={'Accept': a})
        kitest.status_of(r, 406, 'NotAcceptable')
        r = d.request('POST', coll, body=json.dumps(proto_doc('acc-c', 252)) +
                      '\n', content_type='application/x-ndjson',
                      headers={'Accept': a})
        kitest.status_of(r, 406, 'NotAcceptable')
        r = d.request('DELETE', coll + '/acc-a', headers={'Accept': a})
        kitest.status_of(r, 406, 'NotAcceptable')
    for name in ('acc-b', 'acc-c'):
        eq(d.get(coll + '/' + name).status, 404, '%s: not stored' % name)
    eq(d.get(coll + '/acc-a').status, 200, 'acc-a not deleted')
    for a in ('application/json', 'application/yaml', '*/*',
              'application/json;as=Table;v=v1;g=meta.k8s.io,'
              'application/json', 'application/vnd.kubernetes.protobuf, */*'):
        eq(d.get(coll, headers={'Accept': a}).status, 200, 'Accept %s' % a)
    eq(d.get('/healthz', headers={'Accept': 'image/png'}).status, 200,
       'a probe answers whatever the Accept')


@test
def an_empty_set_selector_and_a_list_s_bookmarks_are_checked():
    """labelSelector "a in ()" selected nothing ("a notin ()" everything)
    where kube-apiserver answers 400 (a values set cannot be empty), and a
    list passed over allowWatchBookmarks whatever its value. Both are now
    refused (the selector as any malformed selector is, 400 or 422),
    saying why."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    for sel in ('a%20in%20()', 'a%20notin%20(%20)', 'b%3Dc,a%20in%20()'):
        for p in (coll + '?labelSelector=' + sel,
                  G + '/leaderboard?labelSelector=' + sel,
                  coll + '?watch=1&timeoutSeconds=1&labelSelector=' + sel):
            r = d.get(p)
            check(r.status in (400, 422), '%s: refused: %r' % (p, r))
            st = kitest.status_of(r)
            check('empty' in st['message'], '%s: says why: %r' % (p, st))
    st = kitest.status_of(d.get(coll + '?allowWatchBookmarks=maybe'), 400,
                          'BadRequest')
    check('allowWatchBookmarks' in st['message'], 'names it: %r' % st)
    eq(d.get(coll + '?allowWatchBookmarks=true&labelSelector=a%20in%20(x)')
       .status, 200, 'sound forms')


# ---- chunked request bodies, refused where the operator says ----

def chunked_post(name, reps):
    body = json.dumps(proto_doc(name, reps)).encode()
    return (b'POST ' + (G + '/benchmarkprotocols').encode() +
            b' HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'
            b'Transfer-Encoding: chunked\r\n\r\n' +
            b'%x\r\n' % len(body) + body + b'\r\n0\r\n\r\n')


@test
def chunked_bodies_are_refused_where_the_operator_says():
    """libmicrohttpd 0.9.75 decodes chunk framing itself (bare LFs and
    chunk-extension bytes included), out of the daemon's sight. With
    accept-chunked-bodies false, a chunked request body is a 411 Status
    naming the option, nothing is stored, the connection is closed and no
    request after it runs; Content-Length still works. The default still
    takes chunked bodies."""
    d = daemon()
    out, _ = exchange(d, chunked_post('chunk-on', 220) + GET_HEALTHZ)
    eq([s for s, _, _ in answers(out)], [201, 200], 'default: taken')
    strict = kitest.Daemon(sync=False, args=['--accept-chunked-bodies',
                                             'false']).start()
    try:
        out, closed = exchange(strict, chunked_post('chunk-off', 221) +
                               GET_HEALTHZ)
        rs = answers(out)
        eq([s for s, _, _ in rs], [411], 'refused: %r' % out[:300])
        st = json.loads(rs[0][2])
        eq((st.get('kind'), st.get('code'), st.get('reason')),
           ('Status', 411, 'LengthRequired'), 'a Status: %r' % st)
        check('accept-chunked-bodies' in st['message'], 'names it: %r' % st)
        check(closed, 'the connection is closed')
        eq(strict.get(G + '/benchmarkprotocols/chunk-off').status, 404,
           'nothing stored')
        eq(strict.post(G + '/benchmarkprotocols',
                       proto_doc('chunk-cl', 222)).status, 201,
           'Content-Length still works')
        body = b'{"apiVersion":"kernelindex.dev/v1alpha1"}\n'
        out, closed = exchange(strict, (
            b'POST ' + (G + '/benchmarkprotocols').encode() +
            b' HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\n'
            b'Transfer-Encoding: chunked\r\n\r\n' + b'%x\r\n' % len(body) +
            body + b'\r\n0\r\n\r\n'))
        eq([s for s, _, _ in answers(out)], [411], 'a streamed NDJSON upload')
    finally:
        strict.stop()


if __name__ == '__main__':
    sys.exit(kitest.run_all())
