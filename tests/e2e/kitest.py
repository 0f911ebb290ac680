"""kitest — a small harness for the end-to-end tests of kernelindexd.

It starts the real daemon on a free port with a temporary data directory,
talks HTTP to it, stops it by PID, and runs named test functions.

Environment:
  KI_DAEMON      the kernelindexd binary (default: build/asan/kernelindexd
                 under the repository, if it exists)
  KI_DATA_DIR    the test data, with seed/ and liger/ (default: tests/data
                 in the repository)
  KI_KEEP        when set, temporary data directories are kept
  KI_ETCD_ENDPOINTS  when set, every daemon runs with --store etcd over
                 this cluster, its keys under a prefix named after its data
                 directory (tests/etcd/e2e.sh starts a cluster)
"""
import atexit
import copy
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, '..', '..'))
DATA = os.path.abspath(os.environ.get('KI_DATA_DIR') or
                       os.path.join(REPO, 'tests', 'data'))
SEED_PATH = os.path.join(DATA, 'seed', 'embedding-full-huggingface-a100.json')
STATIC_DIR = os.path.join(REPO, 'static')
G = '/apis/kernelindex.dev/v1alpha1'

SANITIZER_MARKS = ('ERROR: AddressSanitizer', 'runtime error:',
                   'ERROR: LeakSanitizer',
                   # valgrind (tests/e2e/valgrind-daemon.sh)
                   'Invalid read of', 'Invalid write of', 'Invalid free',
                   'uninitialised value', 'are definitely lost',
                   'points to uninitialised', 'Mismatched free')


def daemon_path():
    p = os.environ.get('KI_DAEMON')
    if not p:
        p = os.path.join(REPO, 'build', 'asan', 'kernelindexd')
    return os.path.abspath(p)


def etcd():
    """True when the daemons run over etcd (KI_ETCD_ENDPOINTS is set)."""
    return bool(os.environ.get('KI_ETCD_ENDPOINTS'))


def store_args(data_dir):
    """The daemon's store options: none (LMDB in data_dir), or etcd's when
    KI_ETCD_ENDPOINTS is set, with a key prefix per data directory so that
    a restart over the same directory finds the same store."""
    ep = os.environ.get('KI_ETCD_ENDPOINTS')
    if not ep:
        return []
    return ['--store', 'etcd', '--etcd-endpoints', ep,
            '--etcd-prefix', '/kitest%s/' % os.path.abspath(data_dir)]


def etcd_dump(data_dir):
    """Every key and value under the etcd prefix of data_dir's store, as
    bytes (one range request to the first endpoint's JSON gateway)."""
    import base64
    import urllib.request
    prefix = store_args(data_dir)[-1].encode()
    end = prefix[:-1] + bytes([prefix[-1] + 1])
    req = json.dumps({'key': base64.b64encode(prefix).decode(),
                      'range_end': base64.b64encode(end).decode()}).encode()
    url = os.environ['KI_ETCD_ENDPOINTS'].split(',')[0] + '/v3/kv/range'
    with urllib.request.urlopen(url, data=req, timeout=30) as r:
        kvs = json.loads(r.read()).get('kvs') or []
    return b''.join(base64.b64decode(kv['key']) + b'\0' +
                    base64.b64decode(kv.get('value', '')) + b'\0'
                    for kv in kvs)


def command(data_dir, *args):
    """The argv of a daemon command (token, backup, fsck) on the store of
    data_dir: the store options a Daemon over data_dir runs with, then
    args."""
    return [daemon_path(), '--data-dir', data_dir] + store_args(data_dir) + \
        list(args)


def seed():
    """A fresh deep copy of the seed bundle."""
    with open(SEED_PATH, 'rb') as f:
        return json.load(f)


class TestFailure(AssertionError):
    pass


class Skipped(Exception):
    """Raised by skip(): the test does not apply here (run_all prints the
    reason and counts it apart)."""


def skip(reason):
    raise Skipped(reason)


def lmdb_only(reason):
    """Skips the calling test when the daemons run over etcd: for a test
    of LMDB's own files (data.mdb, its map, its data directory's disk),
    which an etcd store does not have. reason says what it tests."""
    if etcd():
        raise Skipped('LMDB only (%s)' % reason)


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


def eq(got, want, what):
    if got != want:
        raise TestFailure('%s: got %r, want %r' % (what, got, want))


def free_port():
    s = socket.socket()
    try:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]
    finally:
        s.close()


_tmpdirs = []


def tempdir(prefix='kitest-'):
    d = tempfile.mkdtemp(prefix=prefix)
    _tmpdirs.append(d)
    return d


@atexit.register
def _remove_tmpdirs():
    if os.environ.get('KI_KEEP'):
        return
    for d in _tmpdirs:
        shutil.rmtree(d, ignore_errors=True)


class Response:
    """status, headers (an http.client.HTTPMessage: case-insensitive get),
    body (bytes). Unpacks as (status, headers, body)."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def __iter__(self):
        return iter((self.status, self.headers, self.body))

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError as e:
            raise TestFailure('the body is not JSON (%s): %r' %
                              (e, self.body[:300]))

    def __repr__(self):
        return '<%d %r>' % (self.status, self.body[:300])


class Daemon:
    """One kernelindexd process. Every started daemon is stopped at exit."""

    all = []

    def __init__(self, data_dir=None, sync=True, args=(), env=None):
        self.binary = daemon_path()
        self.env = dict(env or {})
        self.data_dir = data_dir or tempdir('kitest-data-')
        self.sync = sync
        self.args = list(args)
        self.port = None
        self.proc = None
        self.log_path = os.path.join(tempdir('kitest-log-'), 'stderr.log')
        self.log = None
        self.runs = 0
        self.exit_codes = []
        Daemon.all.append(self)

    # -- life cycle --

    def start(self, timeout=30):
        if not os.access(self.binary, os.X_OK):
            raise TestFailure('no daemon binary at %s (set KI_DAEMON)' %
                              self.binary)
        self.port = free_port()
        cmd = [self.binary, '--listen', '127.0.0.1:%d' % self.port,
               '--data-dir', self.data_dir, '--static-dir', STATIC_DIR,
               '--threads', '2'] + store_args(self.data_dir)
        if not self.sync:
            cmd += ['--sync', 'false']
        cmd += self.args
        self.log = open(self.log_path, 'ab')
        self.log.write(('--- start %d: %s\n' % (self.runs, ' '.join(cmd)))
                       .encode())
        self.log.flush()
        env = dict(os.environ)
        env.setdefault('ASAN_OPTIONS', 'abort_on_error=0:detect_leaks=1')
        env.setdefault('UBSAN_OPTIONS', 'print_stacktrace=1')
        env.update(self.env)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log,
                                     env=env)
        self.runs += 1
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise TestFailure('the daemon exited at start with %d:\n%s' %
                                  (self.proc.returncode, self.tail()))
            try:
                if self.get('/healthz', timeout=2).status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise TestFailure('/healthz not 200 after %d s:\n%s' %
                          (timeout, self.tail()))

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=20):
        """SIGTERM, then SIGKILL after timeout. Returns the exit status."""
        if self.proc is None:
            return None
        p = self.proc
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
        return self._reap()

    def kill(self):
        """SIGKILL, as a crash would."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        return self._reap()

    def signal(self, sig):
        """Sends sig to the daemon, by its PID."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def wait(self, timeout):
        """Waits for the daemon to exit: its status, or None (still
        running) after timeout seconds."""
        if self.proc is None:
            return None
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return self._reap()

    def _reap(self):
        rc = self.proc.returncode
        self.exit_codes.append(rc)
        self.proc = None
        if self.log is not None:
            self.log.close()
            self.log = None
        return rc

    def restart(self):
        self.stop()
        return self.start()

    # -- its log --

    def stderr(self):
        if self.log is not None:
            self.log.flush()
        try:
            with open(self.log_path, 'rb') as f:
                return f.read().decode('utf-8', 'replace')
        except OSError:
            return ''

    def tail(self, n=40):
        lines = self.stderr().splitlines()
        return '\n'.join('    | ' + ln for ln in lines[-n:])

    def sanitizer_report(self):
        text = self.stderr()
        for mark in SANITIZER_MARKS:
            i = text.find(mark)
            if i >= 0:
                return text[max(0, i - 200):i + 3000]
        return None

    # -- HTTP --

    def request(self, method, path, body=None, content_type=None,
                headers=None, timeout=60):
        """One request on a fresh connection: a Response."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            if content_type is None:
                content_type = 'application/json'
        elif isinstance(body, str):
            body = body.encode()
        h = dict(headers or {})
        if content_type is not None:
            h['Content-Type'] = content_type
        c = http.client.HTTPConnection('127.0.0.1', self.port,
                                       timeout=timeout)
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            return Response(r.status, r.headers, data)
        finally:
            c.close()

    def raw_request(self, method, path, body=b'', headers=None, chunks=None,
                    pause=0.0, timeout=60, on_sent=None):
        """A request over a plain socket, for bodies that the server may
        refuse before reading them whole: send errors are ignored and the
        answer is read if one comes. With chunks, the body is sent in that
        many pieces, pause seconds apart. Returns a Response, or None when
        no answer came (connection closed)."""
        h = {'Host': '127.0.0.1:%d' % self.port, 'Connection': 'close',
             'Content-Length': str(len(body))}
        h.update(headers or {})
        head = '%s %s HTTP/1.1\r\n' % (method, path)
        head += ''.join('%s: %s\r\n' % kv for kv in h.items()) + '\r\n'
        s = socket.create_connection(('127.0.0.1', self.port),
                                     timeout=timeout)
        try:
            try:
                s.sendall(head.encode())
                if chunks:
                    step = max(1, -(-len(body) // chunks))
                    for i in range(0, len(body), step):
                        s.sendall(body[i:i + step])
                        if pause:
                            time.sleep(pause)
                else:
                    s.sendall(body)
            except OSError:
                pass
            if on_sent is not None:
                on_sent()
            data = b''
            try:
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    data += b
            except OSError:
                pass
        finally:
            s.close()
        if not data or b'\r\n\r\n' not in data:
            return None
        head, _, rest = data.partition(b'\r\n\r\n')
        lines = head.decode('latin-1').split('\r\n')
        status = int(lines[0].split()[1])
        msg = http.client.HTTPMessage()
        for ln in lines[1:]:
            k, _, v = ln.partition(':')
            msg[k.strip()] = v.strip()
        if msg.get('Transfer-Encoding', '').lower() == 'chunked':
            out, buf = b'', rest
            while buf:
                size_line, _, buf = buf.partition(b'\r\n')
                n = int(size_line.split(b';')[0] or b'0', 16)
                if n == 0:
                    break
                out += buf[:n]
                buf = buf[n + 2:]
            rest = out
        return Response(status, msg, rest)

    def get(self, path, **kw):
        return self.request('GET', path, **kw)

    def post(self, path, body, content_type=None, **kw):
        if content_type is None and isinstance(body, (bytes, str)):
            content_type = 'application/json'
        return self.request('POST', path, body=body,
                            content_type=content_type, **kw)

    def delete(self, path, **kw):
        return self.request('DELETE', path, **kw)

    def list_rv(self, plural):
        r = self.get('%s/%s' % (G, plural))
        eq(r.status, 200, 'GET %s status' % plural)
        return r.json()['metadata']['resourceVersion']


def exchange(d, data, timeout=5.0, pause_after=0.0):
    """Sends raw bytes to daemon d on a fresh connection (a send the server
    refuses by closing is not an error) and reads until the server closes
    it or timeout passes, pausing pause_after seconds first. Returns
    (bytes, closed)."""
    s = socket.create_connection(('127.0.0.1', d.port), timeout=timeout)
    out, closed = b'', False
    deadline = time.time() + timeout
    try:
        try:
            s.sendall(data)
        except OSError:
            pass
        if pause_after:
            time.sleep(pause_after)
        while time.time() < deadline:
            s.settimeout(max(0.05, deadline - time.time()))
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            except OSError:
                closed = True
                break
            if not b:
                closed = True
                break
            out += b
    finally:
        s.close()
    return out, closed


def answers(data):
    """The answers in raw bytes: [(status, headers lower-cased, body)],
    bodies read by Content-Length."""
    out = []
    while data.startswith(b'HTTP/'):
        head, sep, rest = data.partition(b'\r\n\r\n')
        if not sep:
            break
        lines = head.decode('latin-1').split('\r\n')
        h = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(':')
            h[k.strip().lower()] = v.strip()
        n = int(h.get('content-length', '0'))
        out.append((int(lines[0].split()[1]), h, rest[:n]))
        data = rest[n:]
    return out


def stop_all():
    for d in Daemon.all:
        try:
            d.stop(timeout=10)
        except Exception:
            pass


atexit.register(stop_all)


# ---- Status helpers ----

def status_of(resp, code=None, reason=None):
    """Checks that resp is a Kubernetes Status (optionally with this code
    and reason) and returns it parsed."""
    if code is not None:
        eq(resp.status, code, 'HTTP status (body %r)' % resp.body[:600])
    ctype = resp.headers.get('Content-Type') or ''
    check(ctype.startswith('application/json'),
          'a Status must be application/json, got %r' % ctype)
    st = resp.json()
    check(isinstance(st, dict), 'the Status is not an object: %r' % st)
    eq(st.get('kind'), 'Status', 'Status kind')
    eq(st.get('apiVersion'), 'v1', 'Status apiVersion')
    eq(st.get('status'), 'Failure', 'Status status')
    eq(st.get('code'), resp.status, 'Status code equals the HTTP status')
    check(isinstance(st.get('message'), str) and st['message'],
          'the Status has no message: %r' % st)
    if reason is not None:
        eq(st.get('reason'), reason, 'Status reason (message %r)' %
           st.get('message'))
    return st


def causes(st):
    return (st.get('details') or {}).get('causes') or []


def cause_fields(st):
    return [c.get('field') for c in causes(st)]


def status_text(st):
    """The message and every cause, lower-cased, for substring checks."""
    parts = [st.get('message') or '']
    for c in causes(st):
        parts.append('%s %s %s' % (c.get('field'), c.get('reason'),
                                   c.get('message')))
    return '\n'.join(parts).lower()


# ---- the registry ----

_tests = []


def test(fn):
    """Registers fn as a test named after it."""
    _tests.append(fn)
    return fn


def run_all(argv=None):
    """Runs the registered tests (or those named in argv), prints one line
    per test and ends with 'N passed, M failed'. Exits 1 on any failure."""
    argv = sys.argv[1:] if argv is None else argv
    chosen = [t for t in _tests if not argv or t.__name__ in argv]
    passed = failed = skipped = 0
    checked = {}   # daemon -> how much of its log the tests have checked
    t0 = time.time()
    for fn in chosen:
        start = time.time()
        before = {id(d): len(d.stderr()) for d in Daemon.all}
        err = why = None
        try:
            fn()
        except Skipped as e:
            why = str(e)
        except TestFailure as e:
            err = str(e)
        except Exception:
            err = traceback.format_exc()
        # A sanitizer report anywhere fails the test that caused it.
        for d in Daemon.all:
            text = d.stderr()
            new = text[before.get(id(d), 0):]
            checked[id(d)] = len(text)
            for mark in SANITIZER_MARKS:
                if mark in new:
                    i = new.find(mark)
                    err = (err + '\n' if err else '') + \
                        'sanitizer report in the daemon log:\n' + \
                        new[max(0, i - 200):i + 3000]
                    break
        dt = time.time() - start
        if err is None and why is not None:
            skipped += 1
            print('skip  %-40s %6.2fs  %s' % (fn.__name__, dt, why))
        elif err is None:
            passed += 1
            print('ok    %-40s %6.2fs' % (fn.__name__, dt))
        else:
            failed += 1
            print('FAIL  %-40s %6.2fs' % (fn.__name__, dt))
            for ln in err.rstrip().splitlines():
                print('      ' + ln)
            used = [d for d in Daemon.all
                    if len(d.stderr()) != before.get(id(d), 0)]
            for d in used[-2:]:
                print('      daemon log (%s), last lines:' % d.log_path)
                print(d.tail(20))
        sys.stdout.flush()
    stop_all()
    # Leaks and errors at shutdown show only once the daemons have stopped:
    # they count as one more test.
    reports = []
    for d in Daemon.all:
        text = d.stderr()[checked.get(id(d), 0):]
        for mark in SANITIZER_MARKS:
            if mark in text:
                i = text.find(mark)
                reports.append('%s:\n%s' % (d.log_path,
                                             text[max(0, i - 200):i + 3000]))
                break
    if reports:
        failed += 1
        print('FAIL  %-40s' % 'daemon_logs_free_of_sanitizer_reports')
        for rep in reports[:2]:
            for ln in rep.rstrip().splitlines():
                print('      ' + ln)
    else:
        passed += 1
        print('ok    %-40s' % 'daemon_logs_free_of_sanitizer_reports')
    print('# %d tests in %.1fs' % (len(chosen), time.time() - t0))
    print('%d passed, %d failed%s' % (passed, failed, ', %d skipped' %
                                      skipped if skipped else ''))
    sys.stdout.flush()
    return 1 if failed else 0


def deepcopy(o):
    return copy.deepcopy(o)
