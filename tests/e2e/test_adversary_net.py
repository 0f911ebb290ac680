#!/usr/bin/env python3
"""test_adversary_net — findings of an adversarial pass over the network
and API side (HTTP framing over raw sockets, query parameters, uploads,
access reviews), each checked against the behaviour it names.

The request head is read as it was sent: a NUL in a header value (which
libmicrohttpd cut the value short at: "Content-Length: 5<NUL>0" was 5),
in the method or in the raw target, a control character in a header
value, a line ended by a bare LF, a header line folded onto the previous
one (obs-fold, which libmicrohttpd joined to the header's name) and a line
starting with ':' (which ended libmicrohttpd's header section, the rest
being read as a second request) are each a 400 Status and the connection
is closed; a space or a control character in the target is a 400; heads
that are sound (empty values, tabs, pipelining, HTTP/1.0) still work; an
Expect other than 100-continue is 417 and a Host that is no host and port
a 400 (both were passed over).

Query parameters are read, not passed over: a token in the URL
(access_token) is a 400; an object GET's resourceVersion that is no
version is a 400 and one the store has not reached a 504, as a list's; a
list's timeoutSeconds and an includeObject that are no values are 400, as
is a resourceVersion beside a continue token; a limit with a sign is 400,
and so is an empty dryRun (it was a real write); a parameter the endpoint
does not know gets a Warning naming it, a watch's answer included.

Uploads: a List's wrapper holding a member other than kind, apiVersion,
metadata and items, or an apiVersion other than v1, is a 400 (it was
passed over, even under fieldValidation=Strict); a body whose
Content-Type names a charset other than UTF-8 is 415; an integer no
double holds exactly (9007199254740993) is 422, not stored rounded.

Access reviews agree with the writes for limited tokens: a
source-limited token may not update or delete shared objects (asked with
no name, or one not stored), and a limited token's rules list no
Threshold write and are marked incomplete. The admin endpoints refuse a
query parameter (POST /admin/tokens?dryRun=All made a real token) and a
body where none is read, and a token's source or prefix that could never
match a run or a name. A prefix-limited token changes no Threshold (it
may not create one either); If-None-Match on a write is a precondition
(412 where it lists "*" or the object's ETag); a Transfer-Encoding with
spaces after "chunked", which libmicrohttpd reads as another coding, is a
400; a comparison's thresholdPercent is a decimal number.

A create carrying metadata.resourceVersion is a 400, as kube-apiserver
answers; the computed answers (leaderboard, series, facets, comparisons,
objects/<digest>) and the fixed ones (probes, metrics, version,
discovery, OpenAPI) warn of parameters they do not read, and the fixed
ones take GET and HEAD only; a Content-Type is read as RFC 9110 writes
it (a malformed or doubled parameter is 400, another charset 415); a
header read from one line (If-None-Match, Content-Type, ...) given twice
is a 400; a watch refuses resourceVersionMatch and warns of each
parameter it does not read; a Warning holds no DEL; a continue token past
2^64 is malformed; a prefix-limited token changes no Verification of a
run outside its prefix."""
import json
import os
import subprocess
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



def refused(d, raw, what):
    """raw gets exactly one answer, a 400 Status, and the connection is
    closed: nothing after the head is read as another request."""
    out, closed = exchange(d, raw)
    rs = answers(out)
    eq([s for s, _, _ in rs], [400],
       '%s: the answers (%r)' % (what, out[:300]))
    st = json.loads(rs[0][2])
    eq(st.get('kind'), 'Status', '%s: a Status' % what)
    eq(st.get('reason'), 'BadRequest', '%s: reason' % what)
    check(closed, '%s: the connection is closed after the 400' % what)
    return st


def protocol(name, reps):
    return json.dumps({
        'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'BenchmarkProtocol',
        'metadata': {'name': name},
        'spec': {'measurement': {'timer': 'cuda_events',
                                 'primaryStatistic': 'median',
                                 'repetitions': reps}}}).encode()


PROTOS = (G + '/benchmarkprotocols').encode()


def post_head(extra, body):
    return (b'POST ' + PROTOS + b' HTTP/1.1\r\nHost: x\r\n'
            b'Content-Type: application/json\r\n' + extra + b'\r\n' + body)


# ---- the request head as it was sent ----

@test
def nul_in_a_header_value_is_refused():
    d = daemon()
    get = b'GET /healthz HTTP/1.1\r\nHost: x\r\n'
    for what, raw in (
            ('a NUL inside a value', get + b'X-A: a\x00b\r\n'
             b'Connection: close\r\n\r\n'),
            ('a NUL ending a value', get + b'X-A: ab\x00\r\n'
             b'Connection: close\r\n\r\n'),
            ('a NUL in the last header', get + b'X-A: a\x00b\r\n\r\n'),
            ('a NUL in Host', b'GET /healthz HTTP/1.1\r\nHost: x\x00y\r\n'
             b'Connection: close\r\n\r\n'),
            ('a NUL in Authorization', get + b'Authorization: Bearer '
             b'a\x00b\r\nConnection: close\r\n\r\n')):
        refused(d, raw, what)
    # libmicrohttpd read "5<NUL>0" as 5: a proxy in front that reads 50
    # (or refuses) frames the body otherwise.
    body = protocol('nul-cl', 1)
    st = refused(d, post_head(b'Content-Length: %d\x000\r\n' % len(body),
                              body), 'a NUL in Content-Length')
    check('nul' in st['message'].lower(), 'the message names it: %r' % st)
    eq(d.get(G + '/benchmarkprotocols/nul-cl').status, 404, 'nothing stored')


@test
def control_characters_in_a_header_value_are_refused():
    d = daemon()
    for c in (b'\x01', b'\x1b', b'\x7f', b'\r'):
        st = refused(d, b'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a' + c +
                     b'b\r\nConnection: close\r\n\r\n', 'the byte %r' % c)
        check('control character' in st['message'], 'names it: %r' % st)


@test
def nul_in_the_method_or_the_raw_target_is_refused():
    d = daemon()
    refused(d, b'GE\x00T /healthz HTTP/1.1\r\nHost: x\r\n'
            b'Connection: close\r\n\r\n', 'a NUL in the method')
    refused(d, b'GET /healthz\x00/x HTTP/1.1\r\nHost: x\r\n'
            b'Connection: close\r\n\r\n', 'a raw NUL in the path')
    refused(d, b'GET ' + PROTOS + b'?limit=1\x00x HTTP/1.1\r\nHost: x\r\n'
            b'Connection: close\r\n\r\n', 'a raw NUL in the query')


@test
def spaces_and_controls_in_the_target_are_refused():
    d = daemon()
    for what, target in (('a space', b'/healthz x'),
                         ('a trailing space', b'/healthz '),
                         ('a tab', b'/heal\tthz'),
                         ('a control byte', b'/healthz\x01'),
                         ('DEL', b'/healthz\x7f')):
        st = refused(d, b'GET ' + target + b' HTTP/1.1\r\nHost: x\r\n'
                     b'Connection: close\r\n\r\n', what)
        check('target' in st['message'], 'names the target: %r' % st)


@test
def folded_header_lines_are_refused():
    """libmicrohttpd joined an obs-fold continuation to the header's name
    ("Authorization: Bearer\\r\\n abc" became a header named
    "Authorizationabc"): RFC 9112 5.2 says reject or unfold."""
    d = daemon()
    refused(d, b'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n'
            b'Connection: close\r\n\r\n', 'a folded X-A')
    refused(d, b'GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer\r\n'
            b' abc\r\nConnection: close\r\n\r\n', 'a folded Authorization')
    body = protocol('fold-ct', 2)
    refused(d, post_head(b'Content-Length: %d\r\nX-B: text/\r\n\tplain\r\n'
                         % len(body), body), 'a fold with a tab')
    eq(d.get(G + '/benchmarkprotocols/fold-ct').status, 404, 'nothing stored')


@test
def a_line_starting_with_a_colon_does_not_end_the_head():
    """libmicrohttpd ended the header section at a line starting with ':'
    and read what followed as a second request: here the Content-Length
    after it, and the body, would have been another request."""
    d = daemon()
    body = b'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
    refused(d, b'POST ' + PROTOS + b' HTTP/1.1\r\nHost: x\r\n: v\r\n'
            b'Content-Length: %d\r\n\r\n' % len(body) + body,
            'a line ": v"')
    refused(d, b'GET /healthz HTTP/1.1\r\nHost: x\r\n:\r\n'
            b'Connection: close\r\n\r\n', 'a line ":"')


@test
def bare_lf_line_ends_are_refused():
    """A head whose lines end in a bare LF: a proxy that does not take LF
    alone for a line end reads the next line as part of this one."""
    d = daemon()
    refused(d, b'GET /healthz HTTP/1.1\nHost: x\nConnection: close\n\n',
            'every line')
    refused(d, b'GET /healthz HTTP/1.1\r\nHost: x\nConnection: close\r\n\r\n',
            'one header')
    refused(d, b'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\n',
            'the empty line')


@test
def a_chunked_body_s_trailers_are_refused():
    """libmicrohttpd ends a chunked body's trailer section at a line
    starting with ':' (or after a bare LF) and reads the lines after it as
    another request, which a proxy in front forwards as trailers: a
    request smuggled in the trailers. Trailers are read by no one here, so
    any is a 400 and the connection is closed; a streamed NDJSON upload
    with trailers is refused too, and nothing after them runs."""
    d = daemon()
    smuggled = (b'GET /healthz HTTP/1.1\r\nHost: x\r\n'
                b'Connection: close\r\n\r\n')
    reps = {'trailer-a': 101, 'trailer-b': 102, 'trailer-c': 103,
            'trailer-d': 104, 'trailer-e': 105, 'trailer-none': 106}

    def chunked(name, trailers, ct=b'application/json', query=b''):
        body = protocol(name, reps[name])
        return (b'POST ' + PROTOS + query + b' HTTP/1.1\r\nHost: x\r\n'
                b'Content-Type: ' + ct + b'\r\n'
                b'Transfer-Encoding: chunked\r\n\r\n' +
                b'%x\r\n' % len(body) + body + b'\r\n0\r\n' + trailers)

    refused(d, chunked('trailer-a', b'X: y\r\n:z\r\n' + smuggled),
            'a trailer line ":z", then a request')
    refused(d, chunked('trailer-b', b':z\r\nA: b\r\n:q\r\n' + smuggled),
            'a first trailer line ":z", then a request')
    refused(d, chunked('trailer-c', b'X: y\n\r\n' + smuggled),
            'a trailer ended by a bare LF')
    refused(d, chunked('trailer-d', b'X-Sum: 1\r\n\r\n'), 'a trailer')
    refused(d, chunked('trailer-e', b'X-Sum: 1\r\n\r\n',
                       ct=b'application/x-ndjson'),
            'a trailer after a streamed NDJSON upload')
    for name in ('trailer-a', 'trailer-b', 'trailer-c', 'trailer-d',
                 'trailer-e'):
        eq(d.get(G + '/benchmarkprotocols/' + name).status, 404,
           '%s: not created' % name)
    out, _ = exchange(d, chunked('trailer-none', b'\r\n' + smuggled))
    eq([s for s, _, _ in answers(out)], [201, 200],
       'no trailers: the POST, then the pipelined GET')


@test
def sound_heads_still_work():
    """What the checks must let through: empty values, tabs and spaces
    around values, many headers, extra spaces after the method, HTTP/1.0
    without Host, keep-alive and pipelining, a chunked body."""
    d = daemon()
    out, _ = exchange(d, b'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Empty:\r\n'
                      b'X-Sp:   \r\nX-Tab:\ta\tb\t\r\nX-Trail: v  \r\n' +
                      b''.join(b'X-%d: %d\r\n' % (i, i) for i in range(50)) +
                      b'Connection: close\r\n\r\n')
    eq([s for s, _, _ in answers(out)], [200], 'odd but sound values')
    out, _ = exchange(d, b'GET  /healthz HTTP/1.1\r\nHost: x\r\n'
                      b'Connection: close\r\n\r\n')
    eq([s for s, _, _ in answers(out)], [200], 'two spaces after GET')
    out, _ = exchange(d, b'GET /healthz HTTP/1.0\r\n\r\n')
    eq([s for s, _, _ in answers(out)], [200], 'HTTP/1.0 without headers')
    out, _ = exchange(d, b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' * 2 +
                      b'GET ' + PROTOS + b'?limit=1 HTTP/1.1\r\nHost: x\r\n'
                      b'Connection: close\r\n\r\n')
    eq([s for s, _, _ in answers(out)], [200, 200, 200], 'pipelined')
    body = protocol('chunked-ok', 3)
    out, _ = exchange(d, post_head(b'Transfer-Encoding: chunked\r\n'
                                   b'Connection: close\r\n',
                                   b'%x\r\n' % len(body) + body +
                                   b'\r\n0\r\n\r\n'))
    eq([s for s, _, _ in answers(out)], [201], 'a chunked POST')
    r = d.get(G + '/benchmarkprotocols?limit=1',
              headers={'Authorization': '', 'X-Empty': ''})
    eq(r.status, 200, 'http.client with empty header values')


@test
def unmet_expectations_and_malformed_hosts_are_refused():
    d = daemon()
    body = protocol('expect-x', 4)
    out, _ = exchange(d, post_head(b'Content-Length: %d\r\nExpect: 200-ok\r\n'
                                   b'Connection: close\r\n' % len(body), body))
    rs = answers(out)
    eq([s for s, _, _ in rs], [417], 'Expect: 200-ok (%r)' % out[:200])
    eq(json.loads(rs[0][2]).get('reason'), 'ExpectationFailed', 'reason')
    eq(d.get(G + '/benchmarkprotocols/expect-x').status, 404, 'not stored')
    out, _ = exchange(d, post_head(b'Content-Length: %d\r\n'
                                   b'Expect: 100-Continue\r\n'
                                   b'Connection: close\r\n' % len(body), body))
    eq([s for s, _, _ in answers(out)], [100, 201], '100-continue still')
    for host in (b'x y', b'x/y', b'a@b', b'x?y'):
        refused(d, b'GET /healthz HTTP/1.1\r\nHost: ' + host +
                b'\r\nConnection: close\r\n\r\n', 'Host %r' % host)
    for host in (b'x', b'127.0.0.1:80', b'[::1]:8080', b'ki.example.org'):
        out, _ = exchange(d, b'GET /healthz HTTP/1.1\r\nHost: ' + host +
                          b'\r\nConnection: close\r\n\r\n')
        eq([s for s, _, _ in answers(out)], [200], 'Host %r' % host)


# ---- query parameters ----

def proto_doc(name, reps):
    return json.loads(protocol(name, reps))


@test
def a_token_in_the_url_is_refused():
    d = daemon()
    for path in ('/healthz?access_token=abc', G + '/benchmarkprotocols?'
                 'access_token=abc'):
        st = kitest.status_of(d.get(path), 400, 'BadRequest')
        check('Authorization' in st['message'], 'says where: %r' % st)
    r = d.post(G + '/benchmarkprotocols?access_token=abc',
               proto_doc('qs-token', 10))
    kitest.status_of(r, 400, 'BadRequest')
    eq(d.get(G + '/benchmarkprotocols/qs-token').status, 404, 'not stored')


@test
def an_object_get_reads_its_resource_version():
    d = daemon()
    eq(d.post(G + '/benchmarkprotocols', proto_doc('rv-get', 11)).status,
       201, 'create')
    path = G + '/benchmarkprotocols/rv-get'
    for bad in ('abc', '-1', '1e3', '18446744073709551616', '+1'):
        st = kitest.status_of(d.get(path + '?resourceVersion=' + bad), 400,
                              'BadRequest')
        check('resourceVersion' in st['message'], '%s: %r' % (bad, st))
    rv = int(d.get(path).json()['metadata']['resourceVersion'])
    eq(d.get(path + '?resourceVersion=%d' % rv).status, 200, 'its own rv')
    eq(d.get(path + '?resourceVersion=0').status, 200, 'rv 0: any')
    kitest.status_of(d.get(path + '?resourceVersion=%d' % (rv + 1000)), 504,
                     'Timeout')
    # The Table form of one object reads it too.
    r = d.get(path + '?resourceVersion=abc', headers={
        'Accept': 'application/json;as=Table;v=v1;g=meta.k8s.io'})
    kitest.status_of(r, 400, 'BadRequest')


@test
def list_parameters_that_are_no_values_are_refused():
    d = daemon()
    coll = G + '/benchmarkprotocols'
    for q, name in (('timeoutSeconds=abc', 'timeoutSeconds'),
                    ('timeoutSeconds=-1', 'timeoutSeconds'),
                    ('includeObject=Everything', 'includeObject'),
                    ('limit=%2B1', 'limit'), ('limit=%201', 'limit')):
        st = kitest.status_of(d.get(coll + '?' + q), 400, 'BadRequest')
        check(name in st['message'], '%s: %r' % (q, st))
    eq(d.get(coll + '?timeoutSeconds=5&limit=1').status, 200, 'sound ones')
    # A continue token with a resourceVersion: the version was passed over.
    for i in range(3):
        d.post(coll, proto_doc('lp-%d' % i, 30 + i))
    tok = d.get(coll + '?limit=1').json()['metadata'].get('continue')
    check(tok, 'a first page of one has a continue token')
    st = kitest.status_of(d.get(coll + '?limit=1&resourceVersion=1&continue=' +
                                tok), 400, 'BadRequest')
    check('continue' in st['message'], 'says why: %r' % st)
    eq(d.get(coll + '?limit=1&resourceVersion=0&continue=' + tok).status,
       200, 'resourceVersion=0 (any) with continue')
    eq(d.get(coll + '?includeObject=None', headers={
        'Accept': 'application/json;as=Table;v=v1;g=meta.k8s.io'}).status,
       200, 'includeObject=None')


@test
def an_empty_dry_run_is_refused():
    """?dryRun= (empty) was a real write: a client that meant a dry run
    and lost the value stored its object."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    st = kitest.status_of(d.post(coll + '?dryRun=', proto_doc('dry-e', 15)),
                          400, 'BadRequest')
    check('dryRun' in st['message'], 'names dryRun: %r' % st)
    eq(d.get(coll + '/dry-e').status, 404, 'nothing stored')
    eq(d.post(coll + '?dryRun=All', proto_doc('dry-e', 15)).status, 201,
       'a dry run')
    eq(d.get(coll + '/dry-e').status, 404, 'nothing stored by a dry run')


@test
def query_parameters_with_no_value_or_given_twice_are_refused():
    """?dryRun (no '=') was read as no dryRun: a real write; a parameter
    given twice was read once, the other value passed over
    (?dryRun=All&dryRun=bogus, ?limit=1&limit=500). Each is a 400 and
    nothing is stored; ?pretty alone and an empty piece (a=1&&b=2) still
    pass."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    for i, q in enumerate(('?dryRun', '?dryRun=All&dryRun=bogus',
                           '?dryRun=bogus&dryRun=All',
                           '?fieldValidation=Strict&fieldValidation=Ignore',
                           '?dryRun=All&fieldValidation')):
        name = 'qarg-%d' % i
        st = kitest.status_of(d.post(coll + q, proto_doc(name, 40 + i)),
                              400, 'BadRequest')
        check('query parameter' in st['message'], '%s: %r' % (q, st))
        eq(d.get(coll + '/' + name).status, 404, '%s: nothing stored' % q)
    for q in ('?limit=1&limit=500', '?watch=true&watch=false',
              '?labelSelector=a&labelSelector=b', '?limit'):
        kitest.status_of(d.get(coll + q), 400, 'BadRequest')
    eq(d.get(coll + '?pretty').status, 200, '?pretty alone')
    eq(d.get(coll + '?limit=1&&pretty=1').status, 200, 'an empty piece')
    eq(d.post(coll + '?dryRun=All&&fieldValidation=Strict',
              proto_doc('qarg-ok', 50)).status, 201, 'a dry run')
    eq(d.get(coll + '/qarg-ok').status, 404, 'a dry run stores nothing')


@test
def unknown_query_parameters_are_warned_about():
    d = daemon()
    coll = G + '/benchmarkprotocols'
    for method, path, body in (
            ('GET', coll + '?labelselector=a%3Db', None),
            ('GET', coll + '?format=csv&bogus=1', None),
            ('POST', coll + '?bogus=1', proto_doc('wq', 12)),
            ('GET', coll + '/wq?bogus=1', None),
            ('PATCH', coll + '/wq?bogus=1', {'metadata': {'labels': {
                'a': 'b'}}}),
            ('DELETE', coll + '/wq?dryRun=All&bogus=1', None)):
        ct = 'application/merge-patch+json' if method == 'PATCH' else None
        r = d.request(method, path, body=body, content_type=ct)
        check(r.status < 300, '%s %s: %r' % (method, path, r))
        w = r.headers.get_all('Warning') or []
        for name in ('labelselector', 'bogus', 'format'):
            if name + '=' in path:
                check(any(name in x and x.startswith('299 ') for x in w),
                      '%s %s: a Warning names %s: %r' % (method, path,
                                                          name, w))
    # So does a streamed NDJSON upload's.
    r = d.request('POST', coll + '?bogus=2', body=protocol('wq-nd', 16) +
                  b'\n', content_type='application/x-ndjson')
    eq(r.status, 201, 'NDJSON: %r' % r)
    w = r.headers.get_all('Warning') or []
    check(any('bogus' in x for x in w), 'NDJSON Warning: %r' % w)
    # A watch's answer carries the Warning too.
    r = d.get(coll + '?watch=1&timeoutSeconds=1&sendInitialEvents=true')
    eq(r.status, 200, 'the watch')
    w = r.headers.get_all('Warning') or []
    check(any('sendInitialEvents' in x for x in w), 'watch Warning: %r' % w)
    # What the endpoints read, and pretty/timeout, are not warned about.
    for path in (coll + '?limit=1&labelSelector=a%3Db&pretty=true&'
                 'timeout=30s', coll + '/wq?resourceVersion=0',
                 G + '/benchmarkruns?format=csv&versionLabel=v'):
        r = d.get(path)
        eq(r.headers.get_all('Warning'), None, 'no Warning for %s' % path)


# ---- uploads ----

@test
def a_list_wrapper_holds_only_what_a_list_holds():
    d = daemon()
    coll = G + '/benchmarkprotocols'
    item = proto_doc('lw-1', 13)
    for extra, field in (({'foo': 1}, 'foo'),
                         ({'apiVersion': 'v2'}, 'apiVersion'),
                         ({'apiVersion': 'kernelindex.dev/v1alpha1'},
                          'apiVersion')):
        lst = {'apiVersion': 'v1', 'kind': 'List', 'items': [item]}
        lst.update(extra)
        for q in ('', '?fieldValidation=Strict', '?atomic=true'):
            st = kitest.status_of(d.post(coll + q, lst), 400, 'BadRequest')
            eq(kitest.cause_fields(st), [field],
               '%r%s: the cause' % (extra, q))
    eq(d.get(coll + '/lw-1').status, 404, 'nothing stored')
    for lst in ({'apiVersion': 'v1', 'kind': 'List', 'items': [item]},
                {'kind': 'List', 'metadata': {}, 'items': [item]}):
        r = d.post(coll, lst)
        check(r.status in (200, 201), 'a sound List: %r' % r)


@test
def a_body_in_another_charset_is_refused():
    """JSON is UTF-8: a body declared ISO-8859-1 or UTF-16 was read as
    UTF-8 in silence (Latin-1 bytes that happen to be valid UTF-8 change
    meaning)."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    body = protocol('cs-1', 14)
    for ct in ('application/json; charset=iso-8859-1',
               'application/json;charset="UTF-16"',
               'application/x-ndjson; charset=latin1'):
        st = kitest.status_of(d.request('POST', coll, body=body,
                                        content_type=ct), 415,
                              'UnsupportedMediaType')
        check('UTF-8' in st['message'], '%s: %r' % (ct, st))
    st = kitest.status_of(d.request('PATCH', coll + '/cs-1', body=b'{}',
                                    content_type='application/merge-patch+'
                                    'json; charset=windows-1252'), 415,
                          'UnsupportedMediaType')
    eq(d.get(coll + '/cs-1').status, 404, 'nothing stored')
    for ct in ('application/json; charset=utf-8',
               'application/json; charset="UTF-8"', 'application/json'):
        r = d.request('POST', coll, body=body, content_type=ct)
        check(r.status in (200, 201), '%s: %r' % (ct, r))


@test
def integers_a_double_cannot_hold_are_refused():
    """RFC 8785 reads numbers as doubles: 9007199254740993 was stored,
    hashed and served as 9007199254740992, the client's figure changed in
    silence."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    for i, lit in enumerate(('9007199254740993', '-9007199254740993',
                             '123456789012345678', '18014398509481985')):
        body = protocol('big-%d' % i, 1).replace(b'"repetitions": 1',
                                                 b'"repetitions": ' +
                                                 lit.encode())
        check(lit.encode() in body, 'the literal is in the body')
        st = kitest.status_of(d.request('POST', coll, body=body,
                                        content_type='application/json'),
                              422, 'Invalid')
        eq(kitest.cause_fields(st), ['spec.measurement.repetitions'],
           '%s: the cause' % lit)
        eq(d.get(coll + '/big-%d' % i).status, 404, '%s: not stored' % lit)
    # Integers a double holds are kept as sent.
    for i, lit in enumerate(('9007199254740992', '18014398509481984')):
        body = protocol('big-ok-%d' % i, 1).replace(b'"repetitions": 1',
                                                    b'"repetitions": ' +
                                                    lit.encode())
        r = d.request('POST', coll, body=body, content_type='application/json')
        eq(r.status, 201, '%s: %r' % (lit, r))
        check(b'"repetitions":' + lit.encode() in d.get(coll + '/big-ok-%d'
                                                         % i).body,
              '%s is served as sent' % lit)



@test
def numbers_not_written_as_json_writes_them_are_refused():
    """json-c's strict mode read "00", "5." and "1.e2" (as 0, 5 and 100)
    when the faster reader gave the document to it: a body no other JSON
    parser reads was stored, and its figures hashed as numbers it did not
    write. Each is a 400 and nothing is stored, in a known field and in
    one passed over with a Warning alike."""
    d = daemon()
    coll = G + '/benchmarkruns'
    cases = [('xnum', lit) for lit in ('00', '-00', '5.', '-5.', '0.',
                                       '1.e2', '00.5', '0.5.1')]
    cases += [('value', lit) for lit in ('7484294.', '7484294.e0',
                                         '07484294')]
    for i, (where, lit) in enumerate(cases):
        s = kitest.seed()
        s['run']['metadata']['name'] = 'badnum-%d' % i
        s['run']['spec']['sourceNative']['externalId'] += '-badnum-%d' % i
        if where == 'xnum':
            s['run']['spec']['sourceNative']['xnum'] = 424242
        else:
            s['run']['spec']['measurements'][0]['value'] = 424242
        body = json.dumps(s).replace('424242', lit).encode()
        st = kitest.status_of(d.request('POST', coll, body=body,
                                        content_type='application/json'),
                              400, 'BadRequest')
        check('not valid JSON' in st.get('message', ''),
              '%s %s: %r' % (where, lit, st))
        eq(d.get(coll + '/badnum-%d' % i).status, 404,
           '%s %s: not stored' % (where, lit))
    # Numbers as JSON writes them still pass.
    s = kitest.seed()
    s['run']['metadata']['name'] = 'goodnum'
    s['run']['spec']['sourceNative']['externalId'] += '-goodnum'
    s['run']['spec']['measurements'][0]['value'] = 424242
    body = json.dumps(s).replace('424242', '7484294.0e0').encode()
    r = d.request('POST', coll, body=body, content_type='application/json')
    eq(r.status, 201, '7484294.0e0: %r' % (r,))

# ---- access reviews ----

def make_token(data_dir, *args):
    p = subprocess.run([kitest.daemon_path(), '--data-dir', data_dir, 'token']
                       + list(args), capture_output=True, text=True,
                       timeout=60)
    eq(p.returncode, 0, 'token %s: %s' % (args, p.stderr))
    return p.stdout.strip()


@test
def access_reviews_agree_with_the_writes_of_limited_tokens():
    """A source-limited token was told it may delete or update shared
    objects (with no name, or a name not stored), and the rules review
    listed every verb on every kind, Thresholds included, as complete:
    each of those writes is 403."""
    data = kitest.tempdir('kitest-advnet-')
    liger = make_token(data, 'create', '--role', 'writer', '--source',
                       'liger-kernel-bench')
    team = make_token(data, 'create', '--role', 'writer', '--prefix',
                      'team-')
    writer = make_token(data, 'create', '--role', 'writer')
    d = kitest.Daemon(data_dir=data, sync=False).start()
    eq(d.post(G + '/benchmarkprotocols', proto_doc('shared-p', 40),
              headers={'Authorization': 'Bearer ' + writer}).status, 201,
       'a shared protocol')
    authz = '/apis/authorization.k8s.io/v1/'

    def can(t, verb, res, name=None):
        ra = {'group': 'kernelindex.dev', 'resource': res, 'verb': verb}
        if name:
            ra['name'] = name
        r = d.post(authz + 'selfsubjectaccessreviews', {
            'apiVersion': 'authorization.k8s.io/v1',
            'kind': 'SelfSubjectAccessReview',
            'spec': {'resourceAttributes': ra}},
            headers={'Authorization': 'Bearer ' + t})
        eq(r.status, 201, 'review: %r' % r)
        return r.json()['status']['allowed']

    for verb in ('update', 'delete', 'patch'):
        for name in (None, 'shared-p'):
            eq(can(liger, verb, 'benchmarkprotocols', name), False,
               'liger %s protocols %s' % (verb, name))
        eq(can(liger, verb, 'benchmarkruns'), False,
           'liger %s any run' % verb)
        eq(can(team, verb, 'benchmarkprotocols'), False,
           'team %s any protocol' % verb)
        eq(can(writer, verb, 'benchmarkprotocols'), True,
           'writer %s protocols' % verb)
    for verb in ('update', 'delete'):
        eq(can(liger, verb, 'benchmarkprotocols', 'not-stored'), False,
           'liger %s a protocol not stored' % verb)
        eq(can(team, verb, 'benchmarkprotocols', 'team-x'), True,
           'team %s team-x' % verb)
    eq(can(liger, 'create', 'benchmarkprotocols'), True, 'liger creates')
    # The writes agree.
    r = d.delete(G + '/benchmarkprotocols/shared-p',
                 headers={'Authorization': 'Bearer ' + liger})
    kitest.status_of(r, 403, 'Forbidden')

    def rules(t):
        r = d.post(authz + 'selfsubjectrulesreviews', {
            'apiVersion': 'authorization.k8s.io/v1',
            'kind': 'SelfSubjectRulesReview', 'spec': {}},
            headers={'Authorization': 'Bearer ' + t})
        eq(r.status, 201, 'rules review: %r' % r)
        st = r.json()['status']
        out = {}
        for rule in st['resourceRules']:
            if rule['apiGroups'] == ['kernelindex.dev']:
                for res in rule['resources']:
                    out.setdefault(res, set()).update(rule['verbs'])
        return st, out

    st, got = rules(liger)
    eq(st.get('incomplete'), True, 'a limited token\'s rules are incomplete')
    check('thresholds' not in got, 'no Threshold write: %r' % got)
    eq(got.get('benchmarkprotocols', set()) - {'get', 'list', 'watch'},
       {'create'}, 'liger on protocols')
    eq(got.get('benchmarkruns', set()) >= {'create', 'update', 'patch',
                                           'delete'}, True, 'liger on runs')
    st, got = rules(team)
    eq(st.get('incomplete'), True, 'prefix: incomplete')
    check('thresholds' not in got, 'no Threshold write for team: %r' % got)
    st, got = rules(writer)
    eq(st.get('incomplete'), False, 'a writer\'s rules are complete')
    check('delete' in got.get('thresholds', set()), 'writer: %r' % got)


@test
def admin_endpoints_refuse_what_they_do_not_read():
    """POST /admin/tokens?dryRun=All made a real token (the parameter
    was passed over); a DELETE's body was passed over; a token limited to
    a source holding a control character, or to a prefix no name can
    start with, was made though it could never write anything."""
    data = kitest.tempdir('kitest-advnet-')
    admin = make_token(data, 'create', '--role', 'admin')
    d = kitest.Daemon(data_dir=data, sync=False).start()
    a = {'Authorization': 'Bearer ' + admin}

    def count():
        r = d.get('/admin/tokens', headers=a)
        eq(r.status, 200, 'token list: %r' % r)
        return len(r.json()['items'])

    n = count()
    reader = {'role': 'reader'}
    st = kitest.status_of(d.post('/admin/tokens?dryRun=All', reader,
                                 headers=a), 400, 'BadRequest')
    check('dryRun' in st['message'], 'names it: %r' % st)
    kitest.status_of(d.get('/admin/tokens?limit=1', headers=a), 400,
                     'BadRequest')
    kitest.status_of(d.post('/admin/backup?force=1', {}, headers=a), 400,
                     'BadRequest')
    for body, what in (({'role': 'writer', 'source': 'a\u001fb'}, 'source'),
                       ({'role': 'writer', 'source': 's' * 257}, 'source'),
                       ({'role': 'writer', 'prefix': 'Team_'}, 'prefix'),
                       ({'role': 'writer', 'prefix': '-x'}, 'prefix')):
        st = kitest.status_of(d.post('/admin/tokens', body, headers=a), 422,
                              'Invalid')
        check(st['message'].startswith(what), '%r: %r' % (body, st))
    eq(count(), n, 'no token made')
    r = d.post('/admin/tokens', reader, headers=a)
    eq(r.status, 201, 'a sound create')
    tid = r.json()['id']
    kitest.status_of(d.request('DELETE', '/admin/tokens/' + tid,
                               body={'really': True}, headers=a), 400,
                     'BadRequest')
    eq(count(), n + 1, 'not revoked by a DELETE with a body')
    eq(d.request('DELETE', '/admin/tokens/' + tid, headers=a).status, 200,
       'revoked')
    # The command line refuses them too.
    p = subprocess.run([kitest.daemon_path(), '--data-dir',
                        kitest.tempdir('kitest-advnet-'), 'token', 'create',
                        '--role', 'writer', '--prefix', 'Team_'],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode != 0 and 'prefix' in p.stderr,
          'token create --prefix Team_: %r' % (p.stderr,))



@test
def a_name_limited_token_changes_no_threshold():
    """A prefix-limited token may not create a Threshold (it judges every
    run, whatever its name) and the rules review lists none, yet a stored
    Threshold named under the prefix could be replaced, applied and
    deleted with it. Each is now 403 and changes nothing."""
    data = kitest.tempdir('kitest-advnet-')
    admin = make_token(data, 'create', '--role', 'admin')
    team = make_token(data, 'create', '--role', 'writer', '--prefix',
                      'team-')
    d = kitest.Daemon(data_dir=data, sync=False).start()
    th = {'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Threshold',
          'metadata': {'name': 'team-t'},
          'spec': {'test': 'percentage', 'limit': 5}}
    coll = G + '/thresholds'
    eq(d.post(coll, th, headers={'Authorization': 'Bearer ' + admin})
       .status, 201, 'the admin\'s Threshold')
    rv = d.get(coll + '/team-t').json()['metadata']['resourceVersion']
    t = {'Authorization': 'Bearer ' + team}
    labelled = kitest.deepcopy(th)
    labelled['metadata']['labels'] = {'a': 'b'}
    for method, ct, body in (
            ('PUT', 'application/json', json.dumps(labelled)),
            ('PATCH', 'application/apply-patch+yaml', json.dumps(labelled)),
            ('PATCH', 'application/merge-patch+json',
             '{"metadata":{"labels":{"a":"b"}}}'),
            ('DELETE', None, None)):
        kitest.status_of(d.request(method, coll + '/team-t', body=body,
                                   content_type=ct, headers=t), 403,
                         'Forbidden')
        r = d.get(coll + '/team-t')
        eq(r.status, 200, '%s %s: still stored' % (method, ct))
        eq(r.json()['metadata']['resourceVersion'], rv,
           '%s %s: unchanged' % (method, ct))


@test
def if_none_match_on_a_write_is_a_precondition():
    """If-None-Match was passed over on writes: a PUT, PATCH or DELETE
    sent with "If-None-Match: *" (only if no such object exists) or with
    the object's own ETag replaced or deleted it. RFC 9110 13.1.2: the
    method is not performed and the answer is 412; a tag that does not
    match lets the write go, and a POST to a collection, which exists, is
    412 under "*"."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    eq(d.post(coll, proto_doc('inm-p', 61)).status, 201, 'a protocol')
    item = coll + '/inm-p'
    etag = d.get(item).headers.get('ETag')
    rv = d.get(item).json()['metadata']['resourceVersion']
    for inm in ('*', etag, 'W/' + etag, '"0", ' + etag):
        for method, ct, body in (
                ('PUT', 'application/json', protocol('inm-p', 61)),
                ('PATCH', 'application/merge-patch+json',
                 b'{"metadata":{"labels":{"a":"b"}}}'),
                ('DELETE', None, None)):
            kitest.status_of(d.request(method, item, body=body,
                                       content_type=ct,
                                       headers={'If-None-Match': inm}),
                             412, 'PreconditionFailed')
            r = d.get(item)
            eq(r.status, 200, '%s If-None-Match %s: still stored'
               % (method, inm))
            eq(r.json()['metadata']['resourceVersion'], rv,
               '%s If-None-Match %s: unchanged' % (method, inm))
    kitest.status_of(d.request('POST', coll, body=protocol('inm-q', 62),
                               content_type='application/json',
                               headers={'If-None-Match': '*'}),
                     412, 'PreconditionFailed')
    eq(d.get(coll + '/inm-q').status, 404, 'POST under *: nothing stored')
    kitest.status_of(d.request('DELETE', item,
                               headers={'If-None-Match': 'bogus'}),
                     400, 'BadRequest')
    # A tag that is not the object's lets the write go.
    r = d.request('PATCH', item, body=b'{"metadata":{"labels":{"a":"b"}}}',
                  content_type='application/merge-patch+json',
                  headers={'If-None-Match': '"0"'})
    eq(r.status, 200, 'another tag: %r' % (r,))
    eq(d.request('DELETE', item, headers={'If-None-Match': '"0"'}).status,
       200, 'deleted under another tag')



@test
def a_transfer_coding_with_trailing_whitespace_is_refused():
    """libmicrohttpd trims the spaces before a header's value, not those
    after it: "Transfer-Encoding: chunked " was to it an unknown coding,
    whose body it read until the connection closed (the request never
    answered, and every request pipelined after the last chunk swallowed
    into it), while the daemon's check trimmed it to chunked and let it
    through, as a proxy in front reads it. Now a 400 and the connection
    is closed, as for any coding other than chunked."""
    d = daemon()
    for i, te in enumerate((b'chunked ', b'chunked\t', b'chunked \t')):
        name = 'te-ws-%d' % i
        body = protocol(name, 80 + i)
        raw = (b'POST ' + PROTOS + b' HTTP/1.1\r\nHost: x\r\n'
               b'Content-Type: application/json\r\nTransfer-Encoding: ' +
               te + b'\r\n\r\n' + b'%x\r\n' % len(body) + body +
               b'\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
        st = refused(d, raw, 'Transfer-Encoding %r' % te)
        check('transfer coding' in st['message'], '%r: %r' % (te, st))
        eq(d.get(G + '/benchmarkprotocols/' + name).status, 404,
           '%r: nothing stored' % te)
    # Spaces before the value are trimmed by both, and still work.
    body = protocol('te-ws-lead', 90)
    out, _ = exchange(d, b'POST ' + PROTOS + b' HTTP/1.1\r\nHost: x\r\n'
                      b'Content-Type: application/json\r\nTransfer-Encoding:'
                      b'  chunked\r\n\r\n' + b'%x\r\n' % len(body) + body +
                      b'\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n'
                      b'Connection: close\r\n\r\n')
    eq([c for c, _, _ in answers(out)], [201, 200], 'leading spaces')



@test
def a_comparison_threshold_is_a_decimal_number():
    """thresholdPercent=0x10 was read as 16 (strtod takes hexadecimal),
    and " 5" as 5: each is a 400 naming it; decimal forms still work."""
    d = daemon()
    base = G + '/comparisons?baseline=a%3Db&candidate=a%3Dc&thresholdPercent='
    for v in ('0x10', '0X1p3', '%205', '5%20', '0x0'):
        st = kitest.status_of(d.get(base + v), 400, 'BadRequest')
        check('thresholdPercent' in st['message'], '%s: %r' % (v, st))
    for v, want in (('16', 16), ('2.5', 2.5), ('1e1', 10)):
        r = d.get(base + v)
        eq(r.status, 200, '%s: %r' % (v, r))
        eq(r.json()['spec']['thresholdPercent'], want, v)


@test
def a_create_carrying_a_resource_version_is_refused():
    """A metadata.resourceVersion in a create was dropped in silence: the
    client meant to write at that version (an object read back and
    posted again). kube-apiserver answers 400 "resourceVersion should
    not be set on objects to be created", as now does every create path
    (POST of one object, a List item, an NDJSON line, a bundle's part,
    an apply that creates, a dry run); nothing is stored. An empty one
    is no version and still passes."""
    d = daemon()
    coll = G + '/benchmarkprotocols'

    def with_rv(name, reps, rv):
        doc = proto_doc(name, reps)
        doc['metadata']['resourceVersion'] = rv
        return doc

    def refused_400(r, field, what):
        st = kitest.status_of(r, 400, 'BadRequest')
        check('resourceVersion should not be set' in st['message'],
              '%s: %r' % (what, st))
        eq(kitest.cause_fields(st), [field], '%s: the cause' % what)

    for i, (rv, q) in enumerate((('5', ''), (5, ''), ('0', ''),
                                 ('5', '?dryRun=All'))):
        name = 'crv-%d' % i
        refused_400(d.post(coll + q, with_rv(name, 70 + i, rv)),
                    'metadata.resourceVersion', 'POST %r%s' % (rv, q))
        eq(d.get(coll + '/' + name).status, 404, '%r: not stored' % rv)
    r = d.post(coll, {'kind': 'List', 'apiVersion': 'v1', 'items': [
        proto_doc('crv-l0', 75), with_rv('crv-l1', 76, '9')]})
    eq(r.status, 201, 'a List: %r' % r)
    res = r.json()['items']
    eq([x['result'] for x in res], ['created', 'failed'], 'the List')
    eq(kitest.cause_fields(res[1]['status']),
       ['items[1].metadata.resourceVersion'], 'the List item\'s cause')
    eq(d.get(coll + '/crv-l1').status, 404, 'the List item: not stored')
    r = d.request('POST', coll, body=json.dumps(with_rv('crv-n', 77, '3'))
                  .encode() + b'\n', content_type='application/x-ndjson')
    eq(r.json()['summary']['failed'], 1, 'NDJSON: %r' % r)
    eq(d.get(coll + '/crv-n').status, 404, 'NDJSON: not stored')
    s = kitest.seed()
    s['run']['metadata']['name'] = 'crv-run'
    s['run']['spec']['sourceNative']['externalId'] += '-crv'
    s['protocol']['metadata']['name'] = 'crv-bp'
    s['protocol']['metadata']['resourceVersion'] = '2'
    refused_400(d.post(G + '/benchmarkruns', s),
                'protocol.metadata.resourceVersion', 'a bundle\'s part')
    eq(d.get(G + '/benchmarkruns/crv-run').status, 404, 'bundle: no run')
    eq(d.get(coll + '/crv-bp').status, 404, 'bundle: no protocol')
    refused_400(d.request('PATCH', coll + '/crv-a', body=json.dumps(
        with_rv('crv-a', 78, '4')).encode(),
        content_type='application/apply-patch+yaml'),
        'metadata.resourceVersion', 'an apply that creates')
    eq(d.get(coll + '/crv-a').status, 404, 'apply: not stored')
    r = d.post(coll, with_rv('crv-e', 79, ''))
    eq(r.status, 201, 'an empty resourceVersion: %r' % r)


@test
def reads_of_computed_answers_warn_of_unknown_parameters():
    """leaderboard, series, facets, comparisons and objects/<digest>
    passed over a parameter they do not read in silence (lists and
    writes warn), and objects/<digest>?resourceVersion=abc was passed
    over: each now warns, and the digest read takes resourceVersion as
    an object GET does (400 for no version, 504 for one not reached)."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    eq(d.post(coll, proto_doc('warn-d', 91)).status, 201, 'a protocol')
    dig = d.get(coll + '/warn-d').json()['status']['digest']
    cmp = 'comparisons?baseline=a%3Db&candidate=a%3Dc&'
    for path in ('leaderboard?bogus=1', 'series?bogus=1',
                 'series?format=csv&bogus=1', 'facets?bogus=1',
                 cmp + 'bogus=1', 'objects/' + dig + '?bogus=1',
                 'benchmarkprotocols/warn-d/status?bogus=1'):
        r = d.get(G + '/' + path)
        eq(r.status, 200, '%s: %r' % (path, r))
        w = r.headers.get_all('Warning') or []
        check(any('"bogus"' in x.replace('\\', '') and x.startswith('299 ')
                  for x in w), '%s: a Warning names bogus: %r' % (path, w))
    for path in ('leaderboard?gpu=x&labelSelector=a%3Db&versionLabel=v&'
                 'includeImplausible=true', 'facets?labelSelector=a%3Db',
                 cmp + 'thresholdPercent=5', 'objects/' + dig +
                 '?resourceVersion=0'):
        eq(d.get(G + '/' + path).headers.get_all('Warning'), None,
           'no Warning for %s' % path)
    st = kitest.status_of(d.get(G + '/objects/' + dig +
                                '?resourceVersion=abc'), 400, 'BadRequest')
    check('resourceVersion' in st['message'], 'names it: %r' % st)
    kitest.status_of(d.get(G + '/objects/' + dig +
                           '?resourceVersion=999999999'), 504, 'Timeout')


@test
def content_type_parameters_are_read_as_rfc_9110_writes_them():
    """"charset =utf-16" (a space before "=") and a second charset after
    "charset=utf-8" were not seen, the body read as UTF-8: a parameter
    that is no name=value is a 400 naming the Content-Type, a parameter
    given twice is a 400 (which one counts?), and a charset other than
    UTF-8 is 415 wherever it stands; a quoted ";" is part of a value."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    for i, (ct, code) in enumerate((
            ('application/json; charset =utf-16', 400),
            ('application/json; charset= utf-16', 400),
            ('application/json; charset=utf-8; charset=utf-16', 400),
            ('application/json;charset=utf-8 ;CHARSET=latin1', 400),
            ('application/json; charset=utf-8; charset=utf-8', 400),
            ('application/json x', 400),
            ('application/json; charset="utf-8', 400),
            ('application/x-ndjson; charset=utf-8; charset=utf-16', 400),
            ('application/json ; charset=utf-16', 415),
            ('application/json; q=1; charset="utf-16"', 415))):
        name = 'ctp-%d' % i
        r = d.request('POST', coll, body=protocol(name, 110 + i),
                      content_type=ct)
        st = kitest.status_of(r, code, 'BadRequest' if code == 400 else
                              'UnsupportedMediaType')
        check(('Content-Type' if code == 400 else 'UTF-8') in st['message'],
              '%s: %r' % (ct, st))
        eq(d.get(coll + '/' + name).status, 404, '%s: not stored' % ct)
    eq(d.post(coll, proto_doc('ctp-p', 130)).status, 201, 'a protocol')
    kitest.status_of(d.request('PATCH', coll + '/ctp-p', body=b'{}',
                               content_type='application/merge-patch+json;'
                               ' charset=utf-8; charset=utf-16'),
                     400, 'BadRequest')
    for i, ct in enumerate(('application/json; x=";charset=utf-16"',
                            'application/json; x="a;b"; charset=utf-8',
                            'application/json;;charset="utf\\-8"',
                            'Application/JSON; Charset=UTF-8',
                            'application/json; charset=utf-8;')):
        r = d.request('POST', coll, body=protocol('ctp-ok-%d' % i, 140 + i),
                      content_type=ct)
        eq(r.status, 201, '%s: %r' % (ct, r))


@test
def a_name_limited_token_changes_no_verification_of_another_run():
    """A prefix-limited token may not create a Verification of a run
    outside its prefix (its outcome is written onto that run), yet one an
    admin made, named under the prefix, could be relabelled, replaced,
    applied and deleted with it, and the access review said yes. Each is
    now 403 and changes nothing; its own runs' Verifications it still
    changes."""
    data = kitest.tempdir('kitest-advnet-')
    admin = make_token(data, 'create', '--role', 'admin')
    team = make_token(data, 'create', '--role', 'writer', '--prefix',
                      'team-')
    d = kitest.Daemon(data_dir=data, sync=False).start()
    a = {'Authorization': 'Bearer ' + admin}
    t = {'Authorization': 'Bearer ' + team}
    s = kitest.seed()
    eq(d.post(G + '/benchmarkruns', s, headers=a).status, 201, 'a run')
    run = s['run']['metadata']['name']
    check(not run.startswith('team-'), 'the run is outside the prefix')
    s2 = kitest.seed()
    s2['run']['metadata']['name'] = 'team-run'
    s2['run']['spec']['sourceNative']['externalId'] += '-team'
    eq(d.post(G + '/benchmarkruns', s2, headers=a).status, 201, 'team-run')
    coll = G + '/verifications'

    def ver(name, run_name, labels=None):
        v = {'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Verification',
             'metadata': {'name': name}, 'spec': {'runName': run_name}}
        if labels:
            v['metadata']['labels'] = labels
        return v

    eq(d.post(coll, ver('team-v', run), headers=a).status, 201,
       'the admin\'s Verification of another run')
    for method, ct, body in (
            ('PATCH', 'application/merge-patch+json',
             '{"metadata":{"labels":{"a":"b"}}}'),
            ('PUT', 'application/json', json.dumps(ver('team-v', run,
                                                       {'a': 'b'}))),
            ('PATCH', 'application/apply-patch+yaml',
             json.dumps(ver('team-v', run, {'a': 'b'}))),
            ('DELETE', None, None)):
        st = kitest.status_of(d.request(method, coll + '/team-v', body=body,
                                         content_type=ct, headers=t), 403,
                              'Forbidden')
        check(run in st['message'], '%s: names the run: %r' % (method, st))
        r = d.get(coll + '/team-v')
        eq(r.status, 200, '%s %s: still stored' % (method, ct))
        eq(r.json()['metadata'].get('labels', {}).get('a'), None,
           '%s %s: not relabelled' % (method, ct))
    r = d.post('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
        'apiVersion': 'authorization.k8s.io/v1',
        'kind': 'SelfSubjectAccessReview', 'spec': {'resourceAttributes': {
            'group': 'kernelindex.dev', 'resource': 'verifications',
            'verb': 'delete', 'name': 'team-v'}}}, headers=t)
    eq(r.json()['status']['allowed'], False, 'the review agrees')
    # Its own run's Verification it changes and removes.
    eq(d.post(coll, ver('team-w', 'team-run'), headers=t).status, 201,
       'a Verification of its run')
    eq(d.request('PATCH', coll + '/team-w',
                 body='{"metadata":{"labels":{"a":"b"}}}',
                 content_type='application/merge-patch+json',
                 headers=t).status, 200, 'relabelled')
    eq(d.request('DELETE', coll + '/team-w', headers=t).status, 200,
       'deleted')


@test
def a_header_read_once_is_not_given_twice():
    """libmicrohttpd answers a header with its first field line: a second
    If-None-Match naming the object's ETag (or "*") was passed over, and
    the PATCH or DELETE it forbade went ahead; a second Content-Type,
    Content-Encoding, Expect or Authorization was passed over too. Each
    is now a 400 naming the header, the connection closed, and nothing
    changes."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    eq(d.post(coll, proto_doc('twice-p', 150)).status, 201, 'a protocol')
    etag = d.get(coll + '/twice-p').headers.get('ETag').encode()
    rv = d.get(coll + '/twice-p').json()['metadata']['resourceVersion']
    item = PROTOS + b'/twice-p'
    patch = b'{"metadata":{"labels":{"z":"1"}}}'

    def req(method, path, hdrs, body=b''):
        return (method + b' ' + path + b' HTTP/1.1\r\nHost: x\r\n' +
                b''.join(h + b'\r\n' for h in hdrs) +
                (b'Content-Length: %d\r\n' % len(body) if body else b'') +
                b'\r\n' + body + b'GET /healthz HTTP/1.1\r\nHost: x\r\n'
                b'Connection: close\r\n\r\n')

    mp = b'Content-Type: application/merge-patch+json'
    for what, raw, name in (
            ('If-None-Match "0", then the ETag: PATCH',
             req(b'PATCH', item, [mp, b'If-None-Match: "0"',
                                  b'If-None-Match: ' + etag], patch),
             'If-None-Match'),
            ('If-None-Match "0", then *: DELETE',
             req(b'DELETE', item, [b'If-None-Match: "0"',
                                   b'If-None-Match: *']), 'If-None-Match'),
            ('If-Match twice', req(b'PATCH', item, [mp, b'If-Match: ' + etag,
                                                    b'If-Match: "1"'],
                                   patch), 'If-Match'),
            ('Content-Type twice',
             req(b'POST', PROTOS, [b'Content-Type: application/json',
                                   b'Content-Type: application/json; '
                                   b'charset=utf-16'],
                 protocol('twice-q', 151)), 'Content-Type'),
            ('Content-Encoding twice',
             req(b'POST', PROTOS, [b'Content-Type: application/json',
                                   b'Content-Encoding: identity',
                                   b'Content-Encoding: gzip'],
                 protocol('twice-r', 152)), 'Content-Encoding'),
            ('Expect twice',
             req(b'POST', PROTOS, [b'Content-Type: application/json',
                                   b'Expect: 100-continue',
                                   b'Expect: x-other'],
                 protocol('twice-s', 153)), 'Expect'),
            ('Authorization twice',
             req(b'GET', b'/healthz', [b'Authorization: Bearer a',
                                       b'Authorization: Bearer b']),
             'Authorization')):
        st = refused(d, raw, what)
        check(name in st['message'], '%s: names it: %r' % (what, st))
    r = d.get(coll + '/twice-p')
    eq(r.status, 200, 'still stored')
    eq(r.json()['metadata']['resourceVersion'], rv, 'unchanged')
    for name in ('twice-q', 'twice-r', 'twice-s'):
        eq(d.get(coll + '/' + name).status, 404, '%s: not stored' % name)
    # One line with a list of tags still works.
    r = d.request('PATCH', coll + '/twice-p', body=patch,
                  content_type='application/merge-patch+json',
                  headers={'If-None-Match': '"x0", "x1"'})
    eq(r.status, 200, 'a list in one line: %r' % (r,))


@test
def a_watch_reads_only_what_a_watch_reads():
    """A watch passed over resourceVersionMatch (kube-apiserver: 400,
    forbidden for watch), and limit, continue and the runs' format=csv
    with no Warning: the first is now a 400, the others are warned
    about."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    st = kitest.status_of(d.get(coll + '?watch=1&resourceVersionMatch=Exact&'
                                'resourceVersion=1&timeoutSeconds=1'), 400,
                          'BadRequest')
    check('resourceVersionMatch' in st['message'], 'names it: %r' % st)
    for path, name in ((coll + '?watch=1&limit=1', 'limit'),
                       (coll + '?watch=1&continue=abc', 'continue'),
                       (G + '/benchmarkruns?watch=1&format=csv', 'format')):
        r = d.get(path + '&timeoutSeconds=1')
        eq(r.status, 200, '%s: %r' % (path, r))
        w = r.headers.get_all('Warning') or []
        check(any('"%s"' % name in x.replace('\\', '') for x in w),
              '%s: a Warning names %s: %r' % (path, name, w))
    r = d.get(coll + '?watch=1&labelSelector=a%3Db&fieldSelector=metadata.'
              'name%3Dx&allowWatchBookmarks=true&timeoutSeconds=1&'
              'resourceVersion=0')
    eq((r.status, r.headers.get_all('Warning')), (200, None),
       'what a watch reads: no Warning')


@test
def warnings_hold_no_del_and_a_watch_warns_of_each_parameter():
    """A DEL (%7F) in an unknown query parameter's name, or in an unknown
    field's, was echoed raw in the Warning header (no quoted-string holds
    it); a watch warned of its first unknown parameter only, the others
    passed over in silence. The byte is now left out as the other
    controls are, and a watch warns of each."""
    d = daemon()
    coll = G + '/benchmarkprotocols'
    for target in ((G + '/leaderboard?a%7Fb=1').encode(),
                   (coll + '?limit=1&c%7Fd=1').encode()):
        out, _ = exchange(d, b'GET ' + target + b' HTTP/1.1\r\nHost: x\r\n'
                          b'Connection: close\r\n\r\n')
        head = out.split(b'\r\n\r\n')[0]
        w = [ln for ln in head.split(b'\r\n')
             if ln.lower().startswith(b'warning:')]
        eq(len(w), 1, '%r: one Warning (%r)' % (target, head))
        check(b'\x7f' not in head, '%r: no DEL in the head: %r' % (target, w))
    doc = proto_doc('del-f', 160)
    doc['spec']['x\u007fy'] = 1
    r = d.post(coll, doc)
    eq(r.status, 201, 'an unknown field: %r' % (r,))
    w = r.headers.get_all('Warning') or []
    check(w and all('\x7f' not in x for x in w), 'no DEL: %r' % w)
    r = d.get(coll + '?watch=1&timeoutSeconds=1&limit=1&continue=x&bogus=1')
    w = ' '.join(r.headers.get_all('Warning') or [])
    for name in ('limit', 'continue', 'bogus'):
        check('\\"%s\\"' % name in w, 'the watch warns of %s: %r' % (name, w))


@test
def fixed_answers_take_only_reads_and_warn_of_parameters():
    """The probes, /metrics, /version, discovery and the OpenAPI documents
    answered any method as a GET (DELETE /version, PUT /metrics with a
    body: 200) and passed over every query parameter: another method is
    now 405 with Allow, and a parameter they do not read is warned of
    (the OpenAPI group's hash, pretty and timeout are read)."""
    d = daemon()
    paths = ('/healthz', '/livez', '/readyz', '/metrics', '/version',
             '/openapi/v3', '/openapi/v3/apis/kernelindex.dev/v1alpha1',
             '/api', '/apis', '/apis/kernelindex.dev')
    for p in paths:
        for method in ('POST', 'PUT', 'DELETE', 'PATCH'):
            r = d.request(method, p, body=b'{}',
                          content_type='application/json')
            kitest.status_of(r, 405, 'MethodNotAllowed')
            eq(r.headers.get('Allow'), 'GET, HEAD', '%s %s: Allow' %
               (method, p))
        r = d.get(p + '?bogus=1')
        eq(r.status, 200, '%s: %r' % (p, r))
        w = r.headers.get_all('Warning') or []
        check(any('bogus' in x for x in w), '%s: a Warning: %r' % (p, w))
        r = d.get(p + '?timeout=30s&pretty=true')
        eq((r.status, r.headers.get_all('Warning')), (200, None),
           '%s: timeout and pretty are read' % p)
    eq(d.request('HEAD', '/healthz').status, 200, 'HEAD /healthz')
    idx = d.get('/openapi/v3').json()
    url = idx['paths']['apis/kernelindex.dev/v1alpha1']['serverRelativeURL']
    r = d.get(url)
    eq((r.status, r.headers.get_all('Warning')), (200, None),
       'the index\'s own URL (with its hash)')


@test
def a_continue_token_past_2_to_the_64_is_refused():
    """A continue token holds the id a page starts after, in decimal: 20
    digits past 2^64 wrapped, and a token the server never issued was
    taken for another. Now a 400, as any malformed token."""
    import base64
    d = daemon()
    coll = G + '/benchmarkprotocols'
    for i in range(3):
        d.post(coll, proto_doc('ct-%d' % i, 170 + i))
    tok = d.get(coll + '?limit=1').json()['metadata']['continue']
    raw = base64.urlsafe_b64decode(tok + '=' * (-len(tok) % 4)).decode()
    check(raw.startswith('i:'), 'the token: %r' % raw)
    wrapped = 'i:%d' % (int(raw[2:]) + 2 ** 64)
    check(len(wrapped) <= 22, 'it fits the token\'s length: %r' % wrapped)
    forged = base64.urlsafe_b64encode(wrapped.encode()).decode().rstrip('=')
    st = kitest.status_of(d.get(coll + '?limit=1&continue=' + forged), 400,
                          'BadRequest')
    check('continue' in st['message'], 'says why: %r' % st)
    eq(d.get(coll + '?limit=1&continue=' + tok).status, 200, 'the real one')


if __name__ == '__main__':
    sys.exit(kitest.run_all())
