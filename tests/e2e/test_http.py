#!/usr/bin/env python3
"""test_http — HTTP framing and semantics over raw sockets: ambiguous
lengths refused, the request target logged as received, encoded NULs
refused, a total deadline for reading a request, boolean query parameters
as Go reads them, conditional requests (If-None-Match, If-Match), HEAD,
Allow, Vary, gzip both ways and YAML answers."""
import gzip
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import G, check, eq, exchange, test  # noqa: E402

try:
    import yaml  # python3-yaml (scripts/deps.sh --test)
except ImportError:  # pragma: no cover
    yaml = None

_daemon = None


def daemon():
    global _daemon
    if _daemon is None:
        _daemon = kitest.Daemon(sync=False).start()
    return _daemon


_serial = [0]


def protocol(name, reps=None, labels=None, annotations=None):
    """A protocol whose spec is its own: protocols are content-addressed,
    and the same spec would name the object stored first."""
    if reps is None:
        _serial[0] += 1
        reps = _serial[0]
    meta = {'name': name}
    if labels:
        meta['labels'] = labels
    if annotations:
        meta['annotations'] = annotations
    return {'apiVersion': 'kernelindex.dev/v1alpha1',
            'kind': 'BenchmarkProtocol', 'metadata': meta,
            'spec': {'measurement': {'timer': 'cuda_events',
                                     'primaryStatistic': 'median',
                                     'repetitions': reps}}}


def create(d, name, **kw):
    r = d.post(G + '/benchmarkprotocols', protocol(name, **kw))
    check(r.status in (200, 201), 'create %s: %r' % (name, r))
    return r


def responses(data):
    """Splits raw bytes into (status, headers dict lower-cased, body)
    answers, reading bodies by Content-Length or chunked coding.
    head_only: a HEAD answer carries no body whatever its headers say."""
    out = []
    while data.startswith(b'HTTP/'):
        head, sep, rest = data.partition(b'\r\n\r\n')
        if not sep:
            break
        lines = head.decode('latin-1').split('\r\n')
        status = int(lines[0].split()[1])
        h = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(':')
            h.setdefault(k.strip().lower(), []).append(v.strip())
        body = b''
        if 'content-length' in h:
            n = int(h['content-length'][0])
            body, rest = rest[:n], rest[n:]
        elif h.get('transfer-encoding', [''])[0].lower() == 'chunked':
            while True:
                line, _, rest = rest.partition(b'\r\n')
                n = int(line.split(b';')[0] or b'0', 16)
                if n == 0:
                    rest = rest.partition(b'\r\n')[2]
                    break
                body += rest[:n]
                rest = rest[n + 2:]
        out.append((status, h, body))
        data = rest
    return out


def raw_status(resp_bytes):
    rs = responses(resp_bytes)
    check(rs, 'no answer at all: %r' % resp_bytes[:200])
    return rs


HOST = b'Host: x\r\n'


# ---- framing (request smuggling) ----

@test
def transfer_encoding_with_content_length_is_400_and_closes():
    d = daemon()
    smuggled = b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
    body = b'0\r\n\r\n' + smuggled
    req = (b'POST ' + G.encode() + b'/benchmarkprotocols HTTP/1.1\r\n' +
           HOST + b'Content-Type: application/json\r\n'
           b'Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n'
           % len(body) + body)
    data, closed = exchange(d, req)
    rs = raw_status(data)
    eq([r[0] for r in rs], [400], 'answers to a TE+CL request (the '
       'smuggled GET must not be answered)')
    check(b'Transfer-Encoding' in rs[0][2], 'the Status names the header: '
          '%r' % rs[0][2])
    check(closed, 'the connection is closed after the 400')


@test
def differing_content_lengths_are_400():
    d = daemon()
    body = json.dumps(protocol('two-lengths')).encode()
    smuggled = b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
    for first, second in ((len(body), len(body) + len(smuggled)),
                          (len(body) + len(smuggled), len(body))):
        req = (b'POST ' + G.encode() + b'/benchmarkprotocols HTTP/1.1\r\n' +
               HOST + b'Content-Type: application/json\r\n' +
               b'Content-Length: %d\r\nContent-Length: %d\r\n\r\n' %
               (first, second) + body + smuggled)
        data, closed = exchange(d, req)
        eq([r[0] for r in raw_status(data)], [400],
           'answers to Content-Length %d and %d' % (first, second))
        check(closed, 'the connection is closed after the 400')
    eq(d.get(G + '/benchmarkprotocols/two-lengths').status, 404,
       'nothing was created')
    for cl in (b'Content-Length: 2, 40', b'Content-Length: 2x'):
        req = (b'POST ' + G.encode() + b'/benchmarkprotocols HTTP/1.1\r\n' +
               HOST + b'Content-Type: application/json\r\n' + cl +
               b'\r\n\r\n{}' + b'x' * 38)
        rs = raw_status(exchange(d, req)[0])
        eq([r[0] for r in rs], [400], 'answers to %r' % cl)
    # Equal duplicates are one length (RFC 9110 8.6): not refused.
    req = (b'GET /healthz HTTP/1.1\r\n' + HOST +
           b'Content-Length: 0\r\nContent-Length: 0\r\n'
           b'Connection: close\r\n\r\n')
    eq(raw_status(exchange(d, req, timeout=2)[0])[0][0], 200,
       'equal duplicate Content-Length')


@test
def unknown_transfer_coding_is_400_at_once():
    d = daemon()
    for te in (b'gzip', b'gzip, chunked', b'chunked, chunked', b'identity'):
        req = (b'POST ' + G.encode() + b'/benchmarkprotocols HTTP/1.1\r\n' +
               HOST + b'Content-Type: application/json\r\n'
               b'Transfer-Encoding: ' + te + b'\r\n\r\nabc')
        t0 = time.time()
        data, closed = exchange(d, req, timeout=5)
        check(data, 'no answer within 5 s to Transfer-Encoding: %r' % te)
        eq(raw_status(data)[0][0], 400, 'status for Transfer-Encoding %r' %
           te)
        check(time.time() - t0 < 4, 'answered at once')
    # Transfer-Encoding in an HTTP/1.0 request cannot be trusted.
    req = (b'POST ' + G.encode() + b'/benchmarkprotocols HTTP/1.0\r\n' +
           b'Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n')
    eq(raw_status(exchange(d, req)[0])[0][0], 400, 'TE in HTTP/1.0')


@test
def chunked_body_alone_still_works():
    d = daemon()
    body = json.dumps(protocol('chunked-ok')).encode()
    chunked = b'%x\r\n%s\r\n0\r\n\r\n' % (len(body), body)
    req = (b'POST ' + G.encode() + b'/benchmarkprotocols HTTP/1.1\r\n' +
           HOST + b'Content-Type: application/json\r\n'
           b'Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n' +
           chunked)
    eq(raw_status(exchange(d, req)[0])[0][0], 201, 'a chunked upload')


# ---- the target: logged as received, NUL refused ----

@test
def encoded_newline_in_the_path_cannot_forge_a_log_line():
    d = daemon()
    before = len(d.stderr())
    req = (b'GET /healthz%0A%0D127.0.0.1 GET /admin/forged 200 HTTP/1.1\r\n'
           + HOST + b'Connection: close\r\n\r\n')
    exchange(d, req, timeout=2)
    time.sleep(0.3)
    log = d.stderr()[before:]
    for ln in log.splitlines():
        check(not ln.startswith('\r127.0.0.1') and
              not ln.startswith('127.0.0.1 GET /admin'),
              'a forged log line: %r' % ln)
    check('%0A' in log, 'the target is logged as received: %r' % log[-500:])


@test
def encoded_nul_is_refused():
    d = daemon()
    create(d, 'nul-target')
    for target in (G + '/benchmarkprotocols/nul-target%00junk',
                   G + '/benchmarkprotocols?labelSelector=a%3Db%00c',
                   '/healthz%00'):
        r = d.get(target)
        st = kitest.status_of(r, 400, 'BadRequest')
        check('nul' in st['message'].lower(), 'the message says NUL: %r' %
              st['message'])


# ---- the read deadline ----

@test
def a_trickling_request_is_cut_at_the_timeout():
    d = kitest.Daemon(sync=False, args=['--connection-timeout', '2']).start()
    s = socket.create_connection(('127.0.0.1', d.port), timeout=1)
    req = b'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ' + b'a' * 400
    t0 = time.time()
    cut = None
    try:
        for i in range(len(req)):
            try:
                s.sendall(req[i:i + 1])
                s.settimeout(0.0)
                try:
                    if s.recv(1) == b'':
                        cut = time.time() - t0
                        break
                except BlockingIOError:
                    pass
                s.settimeout(1)
            except OSError:
                cut = time.time() - t0
                break
            if time.time() - t0 > 9:
                break
            time.sleep(0.25)
    finally:
        s.close()
    check(cut is not None, 'a request trickling a byte each 0.25 s was '
          'still being read after %.1f s (connection-timeout 2)' %
          (time.time() - t0))
    check(cut < 6, 'cut after %.1f s' % cut)
    # Idle time between requests does not count: a keep-alive connection
    # idle for 1.5 s then sending a request slowly over 1.5 s is served.
    s = socket.create_connection(('127.0.0.1', d.port), timeout=5)
    try:
        s.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
        check(s.recv(4096).startswith(b'HTTP/1.1 200'), 'first answer')
        time.sleep(1.5)
        req = b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
        for i in range(0, len(req), 6):
            s.sendall(req[i:i + 6])
            time.sleep(0.2)
        check(s.recv(4096).startswith(b'HTTP/1.1 200'), 'second answer')
    finally:
        s.close()
    d.stop()


# ---- query parameters ----

@test
def booleans_parse_as_go_parsebool():
    d = daemon()
    create(d, 'bool-one')
    for v in ('1', 't', 'T', 'TRUE', 'true', 'True'):
        r = d.get(G + '/benchmarkprotocols?watch=%s&timeoutSeconds=1' % v,
                  timeout=10)
        eq(r.status, 200, 'watch=%s' % v)
        lines = [json.loads(x) for x in r.body.splitlines() if x.strip()]
        check(lines and lines[0].get('type') == 'ADDED',
              'watch=%s streams events: %r' % (v, r.body[:200]))
    for v in ('0', 'f', 'F', 'FALSE', 'false', 'False'):
        r = d.get(G + '/benchmarkprotocols?watch=%s' % v)
        eq(r.status, 200, 'watch=%s' % v)
        eq(r.json().get('kind'), 'BenchmarkProtocolList', 'watch=%s lists' % v)
    for name, q in (('watch', 'watch=yes'), ('watch', 'watch=tRUE'),
                    ('allowWatchBookmarks',
                     'watch=true&allowWatchBookmarks=on'),
                    ('atomic', None)):
        if q is None:
            r = d.post(G + '/benchmarkprotocols?atomic=maybe',
                       protocol('bool-two'))
        else:
            r = d.get(G + '/benchmarkprotocols?' + q, timeout=10)
        st = kitest.status_of(r, 400, 'BadRequest')
        check(name in kitest.cause_fields(st) and name in st['message'],
              'the Status names %s: %r' % (name, st))
    r = d.post(G + '/benchmarkprotocols?atomic=T', protocol('bool-three'))
    check(r.status in (200, 201), 'atomic=T: %r' % r)
    apply = G + '/benchmarkprotocols/bool-three?fieldManager=t&force='
    for v, code in (('True', 200), ('F', 200), ('yes', 400)):
        r = d.request('PATCH', apply + v, body=json.dumps(
            protocol('bool-three', reps=_serial[0])),
            content_type='application/apply-patch+yaml')
        eq(r.status, code, 'force=%s: %r' % (v, r))
    check('force' in r.json()['message'], 'the Status names force')


@test
def watch_resource_version_beyond_2_64_is_400():
    d = daemon()
    for rv in ('18446744073709551616', '99999999999999999999999', '+5',
               ' 5'):
        r = d.get(G + '/benchmarkprotocols?watch=true&timeoutSeconds=1&'
                  'resourceVersion=' + rv.replace(' ', '%20')
                  .replace('+', '%2B'), timeout=10)
        st = kitest.status_of(r, 400, 'BadRequest')
        check('resourceVersion' in kitest.cause_fields(st),
              'the cause names resourceVersion: %r' % st)


@test
def json_seq_is_415():
    d = daemon()
    body = b'\x1e' + json.dumps(protocol('seq-one')).encode() + b'\n'
    r = d.post(G + '/benchmarkprotocols', body,
               content_type='application/json-seq')
    kitest.status_of(r, 415, 'UnsupportedMediaType')
    eq(d.get(G + '/benchmarkprotocols/seq-one').status, 404,
       'nothing was created')


# ---- conditional requests, HEAD, Allow, Vary ----

@test
def if_none_match_gives_304():
    d = daemon()
    create(d, 'etag-one')
    r = d.get(G + '/benchmarkprotocols/etag-one')
    eq(r.status, 200, 'GET')
    etag = r.headers.get('ETag')
    check(etag, 'an ETag is sent')
    r2 = d.get(G + '/benchmarkprotocols/etag-one',
               headers={'If-None-Match': etag})
    eq(r2.status, 304, 'If-None-Match with the ETag')
    eq(r2.body, b'', '304 has no body')
    eq(r2.headers.get('ETag'), etag, '304 repeats the ETag')
    r3 = d.get(G + '/benchmarkprotocols/etag-one',
               headers={'If-None-Match': '"1", W/%s' % etag})
    eq(r3.status, 304, 'weak comparison in a list')
    r4 = d.get(G + '/benchmarkprotocols/etag-one',
               headers={'If-None-Match': '"nope"'})
    eq(r4.status, 200, 'another ETag')
    eq(r4.body, r.body, 'the same body')


@test
def if_match_is_honoured_on_writes():
    d = daemon()
    create(d, 'ifm-one', labels={'a': '1'})
    etag = d.get(G + '/benchmarkprotocols/ifm-one').headers.get('ETag')
    patch = json.dumps({'metadata': {'labels': {'a': '2'}}})
    path = G + '/benchmarkprotocols/ifm-one'
    r = d.request('PATCH', path, body=patch,
                  content_type='application/merge-patch+json',
                  headers={'If-Match': '"999999"'})
    kitest.status_of(r, 412, 'PreconditionFailed')
    eq(d.get(path).json()['metadata']['labels'], {'a': '1'},
       'a failed precondition changes nothing')
    r = d.request('DELETE', path, headers={'If-Match': '"999999"'})
    kitest.status_of(r, 412, 'PreconditionFailed')
    r = d.request('PATCH', path, body=patch,
                  content_type='application/merge-patch+json',
                  headers={'If-Match': etag})
    eq(r.status, 200, 'PATCH with the current ETag: %r' % r)
    new = r.headers.get('ETag') or d.get(path).headers.get('ETag')
    r = d.request('PUT', path, body=d.get(path).body,
                  content_type='application/json',
                  headers={'If-Match': etag})
    kitest.status_of(r, 412, 'PreconditionFailed')
    r = d.request('DELETE', path, headers={'If-Match': '"1", ' + new})
    eq(r.status, 200, 'DELETE with the current ETag in a list: %r' % r)
    # A collection has no ETag: only "*" holds for a POST.
    r = d.post(G + '/benchmarkprotocols', protocol('ifm-two'),
               headers={'If-Match': etag})
    kitest.status_of(r, 412, 'PreconditionFailed')
    r = d.post(G + '/benchmarkprotocols', json.dumps(protocol('ifm-two')),
               content_type='application/x-ndjson',
               headers={'If-Match': etag})
    kitest.status_of(r, 412, 'PreconditionFailed')
    eq(d.get(G + '/benchmarkprotocols/ifm-two').status, 404, 'not created')
    r = d.post(G + '/benchmarkprotocols', protocol('ifm-two'),
               headers={'If-Match': '*'})
    eq(r.status, 201, 'If-Match: * on a POST: %r' % r)
    # Gone: a 404 comes before any precondition (RFC 9110 13.2.1).
    r = d.request('DELETE', path, headers={'If-Match': '*'})
    kitest.status_of(r, 404, 'NotFound')


@test
def head_gives_the_get_length_without_a_body():
    d = daemon()
    create(d, 'head-one')
    path = G + '/benchmarkprotocols/head-one'
    get = d.get(path)
    req = (b'HEAD ' + path.encode() + b' HTTP/1.1\r\n' + HOST + b'\r\n'
           b'GET /healthz HTTP/1.1\r\n' + HOST + b'Connection: close\r\n\r\n')
    data, _ = exchange(d, req)
    head, _, rest = data.partition(b'\r\n\r\n')
    check(head.startswith(b'HTTP/1.1 200'), 'HEAD status: %r' % head[:40])
    check(b'Content-Length: %d' % len(get.body) in head,
          'HEAD Content-Length is the GET\'s %d: %r' % (len(get.body), head))
    check(rest.startswith(b'HTTP/1.1 200'), 'no body after the HEAD answer: '
          '%r' % rest[:80])


@test
def head_of_a_watch_sends_no_stream():
    d = daemon()
    create(d, 'head-watch')
    req = (b'HEAD ' + G.encode() + b'/benchmarkprotocols?watch=true HTTP/1.1'
           b'\r\n' + HOST + b'\r\n'
           b'GET /healthz HTTP/1.1\r\n' + HOST + b'Connection: close\r\n\r\n')
    data, closed = exchange(d, req, timeout=5)
    head, _, rest = data.partition(b'\r\n\r\n')
    check(head.startswith(b'HTTP/1.1 200'), 'HEAD status: %r' % data[:200])
    check(b'application/json' in head, 'the watch\'s Content-Type: %r' % head)
    check(rest.startswith(b'HTTP/1.1 200'), 'the next answer follows the '
          'headers at once, no stream: %r' % rest[:120])
    check(rest.rstrip().endswith(b'ok'), 'healthz answered: %r' % rest[-40:])
    r = d.request('HEAD', G + '/benchmarkprotocols?watch=true&'
                  'labelSelector=a%3D%3D%3Db')
    eq(r.status, 400, 'a bad selector in a HEAD watch')


@test
def method_not_allowed_carries_allow():
    d = daemon()
    for method, path, want in (
            ('DELETE', G + '/benchmarkprotocols', {'GET', 'HEAD', 'POST'}),
            ('POST', G + '/benchmarkprotocols/x',
             {'GET', 'HEAD', 'PUT', 'PATCH', 'DELETE'}),
            ('PUT', G + '/objects/sha256:' + '0' * 64, {'GET', 'HEAD'}),
            ('POST', '/index.html', {'GET', 'HEAD'}),
            ('PUT', G + '/facets', {'GET', 'HEAD'})):
        r = d.request(method, path, body=b'{}' if method != 'DELETE' else
                      None, content_type='application/json')
        kitest.status_of(r, 405, 'MethodNotAllowed')
        allow = r.headers.get('Allow') or ''
        eq({m.strip() for m in allow.split(',') if m.strip()}, want,
           'Allow of %s %s' % (method, path))


@test
def negotiated_answers_vary_on_accept():
    d = daemon()
    create(d, 'vary-one')
    for path in (G + '/benchmarkprotocols/vary-one',
                 G + '/benchmarkprotocols'):
        v = d.get(path).headers.get('Vary') or ''
        check('accept' in [x.strip().lower() for x in v.split(',')],
              'Vary names Accept on %s: %r' % (path, v))


# ---- gzip ----

def big_list(d):
    for i in range(40):
        create(d, 'gz-%02d' % i, annotations={'note': 'n%d ' % i * 80})


@test
def large_answers_are_gzipped_when_asked():
    d = daemon()
    big_list(d)
    path = G + '/benchmarkprotocols?labelSelector='
    plain = d.get(path)
    eq(plain.status, 200, 'list')
    check(len(plain.body) > 16384, 'the list is large: %d' % len(plain.body))
    check(plain.headers.get('Content-Encoding') is None,
          'not compressed unless asked')
    check('accept-encoding' in (plain.headers.get('Vary') or '').lower(),
          'Vary names Accept-Encoding: %r' % plain.headers.get('Vary'))
    z = d.get(path, headers={'Accept-Encoding': 'br;q=1, gzip;q=0.5'})
    eq(z.headers.get('Content-Encoding'), 'gzip', 'Content-Encoding')
    check(len(z.body) < len(plain.body) // 3, 'compressed: %d of %d' %
          (len(z.body), len(plain.body)))
    eq(json.loads(gzip.decompress(z.body)), plain.json(),
       'the same content once decompressed')
    # gzip;q=0 refuses it; a small answer is never compressed.
    n = d.get(path, headers={'Accept-Encoding': 'gzip;q=0, identity'})
    check(n.headers.get('Content-Encoding') is None, 'gzip;q=0')
    s = d.get(G + '/benchmarkprotocols/gz-01',
              headers={'Accept-Encoding': 'gzip'})
    eq(s.status, 200, 'small GET')
    check(s.headers.get('Content-Encoding') is None,
          'a small answer is sent as it is')
    h = d.request('HEAD', path, headers={'Accept-Encoding': 'gzip'})
    eq(h.headers.get('Content-Length'), str(len(z.body)),
       'HEAD gives the gzip GET\'s length')


@test
def gzip_request_bodies_are_decoded():
    d = daemon()
    body = gzip.compress(json.dumps(protocol('gz-body')).encode())
    r = d.post(G + '/benchmarkprotocols', body,
               headers={'Content-Encoding': 'gzip'})
    eq(r.status, 201, 'a gzip body: %r' % r)
    eq(d.get(G + '/benchmarkprotocols/gz-body').status, 200, 'created')
    lines = b''.join(json.dumps(protocol('gz-nd-%d' % i)).encode() + b'\n'
                     for i in range(3))
    r = d.post(G + '/benchmarkprotocols', gzip.compress(lines),
               content_type='application/x-ndjson',
               headers={'Content-Encoding': 'gzip'})
    check(r.status in (200, 201), 'gzip NDJSON: %r' % r)
    eq(d.get(G + '/benchmarkprotocols/gz-nd-2').status, 200, 'created')
    r = d.post(G + '/benchmarkprotocols', body[:-9],
               headers={'Content-Encoding': 'gzip'})
    st = kitest.status_of(r, 400, 'BadRequest')
    check('gzip' in st['message'], 'a cut gzip body: %r' % st['message'])
    r = d.post(G + '/benchmarkprotocols', body,
               headers={'Content-Encoding': 'br'})
    kitest.status_of(r, 415, 'UnsupportedMediaType')
    # The limit is on the decompressed size (max-body 8M by default).
    bomb = gzip.compress(b'{"a":"' + b'x' * (9 << 20) + b'"}')
    r = d.post(G + '/benchmarkprotocols', bomb,
               headers={'Content-Encoding': 'gzip'})
    kitest.status_of(r, 413, 'RequestEntityTooLarge')


# ---- YAML ----

TRICKY = {'yes': 'yes', 'num': '0123', 'colon': 'a: b', 'hash': '#c',
          'nl': 'line1\nline2', 'null': 'null', 'tilde': '~',
          'uni': 'caf\u00e9 \u2028 \u0085 \U0001f600', 'dash': '- x',
          'quote': 'say "hi" \\ there', 'empty': '', 'space': ' lead',
          'float': '1e5', 'bool': 'True', 'at': '@x', 'star': '*ref',
          'ctl': '\x01\x7f\t', 'date': '2001-12-14', 'bang': '!tag',
          'on': 'off'}


@test
def yaml_is_served_when_accepted():
    if yaml is None:
        raise kitest.TestFailure('python3-yaml is missing (scripts/deps.sh '
                                 '--test installs it)')
    d = daemon()
    create(d, 'yaml-one', reps=100003, annotations=TRICKY,
           labels={'team': 'a-b', 'n': '1'})
    path = G + '/benchmarkprotocols/yaml-one'
    j = d.get(path).json()
    y = d.get(path, headers={'Accept': 'application/yaml'})
    eq(y.status, 200, 'yaml GET')
    check((y.headers.get('Content-Type') or '').startswith(
        'application/yaml'), 'Content-Type: %r' % y.headers.get(
        'Content-Type'))
    eq(yaml.safe_load(y.body.decode('utf-8')), j, 'YAML content')
    check(y.body.startswith(b'apiVersion: kernelindex.dev/v1alpha1\n'),
          'block style: %r' % y.body[:80])
    lst = d.get(G + '/benchmarkprotocols', headers={
        'Accept': 'application/yaml, application/json;q=0.9'})
    eq(yaml.safe_load(lst.body.decode('utf-8')),
       d.get(G + '/benchmarkprotocols').json(), 'a List in YAML')
    tj = d.get(G + '/benchmarkprotocols', headers={
        'Accept': 'application/json;as=Table;v=v1;g=meta.k8s.io'})
    ty = d.get(G + '/benchmarkprotocols', headers={
        'Accept': 'application/yaml;as=Table;v=v1;g=meta.k8s.io'})
    eq(tj.json().get('kind'), 'Table', 'a Table')
    # Age is counted when each answer is made: a second may pass between
    # the two requests, so it is left out of the comparison.
    def ageless(t):
        cols = [c['name'] for c in t['columnDefinitions']]
        if 'Age' in cols:
            i = cols.index('Age')
            for row in t['rows']:
                row['cells'][i] = None
        return t
    eq(ageless(yaml.safe_load(ty.body.decode('utf-8'))), ageless(tj.json()),
       'a Table in YAML')
    nf = d.get(G + '/benchmarkprotocols/nope',
               headers={'Accept': 'application/yaml'})
    eq(nf.status, 404, 'status')
    eq(yaml.safe_load(nf.body.decode())['reason'], 'NotFound', 'a Status')
    # JSON stays the default and wins ties it is listed first in.
    for acc in (None, '*/*', 'application/json, application/yaml',
                'application/yaml;q=0, */*'):
        r = d.get(path, headers={'Accept': acc} if acc else {})
        eq(r.headers.get('Content-Type'), 'application/json', 'Accept %r' %
           acc)


if __name__ == '__main__':
    sys.exit(kitest.run_all())
