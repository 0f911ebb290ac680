#!/usr/bin/env python3
"""test_notify — systemd readiness (a Type=notify unit): with NOTIFY_SOCKET
set, kernelindexd sends READY=1 only once it answers HTTP, and STOPPING=1
when SIGTERM makes it stop. The test plays the service manager: it listens
on a unix datagram socket of its own.

Exits 77 (skipped) only for a build configured without libsystemd, which
says so in its log."""
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'e2e'))
import kitest  # noqa: E402
from kitest import check, eq, test  # noqa: E402

NO_SUPPORT = 'this build cannot notify the service manager'


class Manager:
    """A unix datagram socket the daemon notifies, as systemd's is."""

    def __init__(self):
        self.path = os.path.join(kitest.tempdir('kitest-notify-'), 'notify')
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)

    def receive(self, timeout):
        """The next message's assignments as a dict, or None on timeout."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(4096)
        except socket.timeout:
            return None
        return dict(line.split('=', 1) for line in
                    data.decode().splitlines() if '=' in line)

    def close(self):
        self.sock.close()


def start(manager):
    """The daemon started with NOTIFY_SOCKET, as systemd starts it; its
    Popen, port and log path."""
    port = kitest.free_port()
    log = os.path.join(kitest.tempdir('kitest-log-'), 'stderr.log')
    env = dict(os.environ, NOTIFY_SOCKET=manager.path)
    env.setdefault('ASAN_OPTIONS', 'abort_on_error=0:detect_leaks=1')
    with open(log, 'wb') as out:
        proc = subprocess.Popen(
            [kitest.daemon_path(), '--listen', '127.0.0.1:%d' % port,
             '--data-dir', kitest.tempdir('kitest-data-'),
             '--static-dir', kitest.STATIC_DIR, '--threads', '2'],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env)
    return proc, port, log


def read(path):
    with open(path, 'rb') as f:
        return f.read().decode('utf-8', 'replace')


def get(port, path):
    import http.client
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=5)
    try:
        c.request('GET', path)
        return c.getresponse().status
    finally:
        c.close()


@test
def ready_after_serving_and_stopping_on_sigterm():
    m = Manager()
    proc, port, log = start(m)
    try:
        msg = m.receive(30)
        if msg is None and NO_SUPPORT in read(log):
            print('SKIP: this kernelindexd was configured without libsystemd '
                  '(--with-systemd=no or libsystemd-dev missing)')
            proc.send_signal(signal.SIGTERM)
            proc.wait(20)
            sys.exit(77)
        check(msg is not None, 'no notification within 30 s; log:\n' +
              read(log)[-2000:])
        eq(msg.get('READY'), '1', 'the first notification is READY=1: %r'
           % msg)
        # READY=1 comes only once the listening socket answers: the request
        # made right after it must succeed, not be refused.
        eq(get(port, '/readyz'), 200, 'GET /readyz right after READY=1')
        eq(get(port, '/healthz'), 200, 'GET /healthz right after READY=1')
        check(m.receive(0.5) is None, 'nothing more before a signal')
        proc.send_signal(signal.SIGTERM)
        msg = m.receive(20)
        check(msg is not None, 'no notification after SIGTERM')
        eq(msg.get('STOPPING'), '1', 'after SIGTERM: STOPPING=1 (%r)' % msg)
        eq(proc.wait(20), 0, 'exit status after SIGTERM')
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        m.close()
    text = read(log)
    for mark in kitest.SANITIZER_MARKS:
        check(mark not in text, 'sanitizer report:\n' + text[-3000:])
    check('cannot notify' not in text, 'a failed notification:\n' + text)


@test
def no_socket_no_notification():
    # Without NOTIFY_SOCKET (started by hand, or by a Type=simple unit) the
    # daemon runs as before and says nothing of notification.
    d = kitest.Daemon().start()
    eq(d.get('/readyz').status, 200, '/readyz')
    eq(d.stop(), 0, 'exit status')
    check('notify' not in d.stderr(), 'no notification warning:\n' +
          d.stderr())


if __name__ == '__main__':
    sys.exit(kitest.run_all())
