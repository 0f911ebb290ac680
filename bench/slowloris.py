#!/usr/bin/env python3
"""bench/slowloris.py — does a crowd of idle or trickling connections stop
service to a well-behaved client? Runs kernelindexd (KI_DAEMON), measures
GET throughput with wrk from 127.0.0.1 alone, then while N connections from
127.0.0.2 trickle one header line every few seconds (slowloris), with the
default per-address limit and without it. Loopback only; bounded in time.

Usage: bench/slowloris.py [N] (default 1000). Prints a table of medians of
three alternating runs."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DAEMON = os.environ.get('KI_DAEMON') or os.path.join(
    HERE, '..', 'build', 'release', 'kernelindexd')
SEED = os.path.join(os.environ.get('KI_DATA_DIR') or
                    os.path.join(HERE, '..', 'tests', 'data'),
                    'seed', 'embedding-full-huggingface-a100.json')
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
WRK_S = 8


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(args):
    port = free_port()
    data = tempfile.mkdtemp(prefix='ki-slow-')
    p = subprocess.Popen([DAEMON, '--listen', '127.0.0.1:%d' % port,
                          '--data-dir', data, '--log-level', 'warn'] + args,
                         stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(('127.0.0.1', port), 0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    with open(SEED, 'rb') as f:
        body = f.read()
    subprocess.run(['curl', '-s', '-o', '/dev/null', '--data-binary', '@' + SEED,
                    'http://127.0.0.1:%d/apis/kernelindex.dev/v1alpha1/'
                    'benchmarkruns' % port], check=True)
    del body
    return p, port, data


def wrk(port):
    url = ('http://127.0.0.1:%d/apis/kernelindex.dev/v1alpha1/'
           'benchmarkprotocols/liger-bench-do-bench-full' % port)
    out = subprocess.run(['wrk', '-t2', '-c32', '-d%ds' % WRK_S, url],
                         capture_output=True, text=True).stdout
    m = re.search(r'Requests/sec:\s+([\d.]+)', out)
    errs = re.search(r'Socket errors: (.*)', out)
    return float(m.group(1)) if m else 0.0, (errs.group(1) if errs else '')


class Crowd:
    """N connections from 127.0.0.2, each sending a header line now and
    then and never finishing its request."""

    def __init__(self, port, n):
        self.socks, self.refused, self.stop = [], 0, False
        for _ in range(n):
            s = socket.socket()
            try:
                s.bind(('127.0.0.2', 0))
                s.settimeout(2)
                s.connect(('127.0.0.1', port))
                s.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n')
                self.socks.append(s)
            except OSError:
                self.refused += 1
                s.close()
        self.t = threading.Thread(target=self.trickle, daemon=True)
        self.t.start()

    def trickle(self):
        while not self.stop:
            for s in list(self.socks):
                try:
                    s.send(b'X-Slow: 1\r\n')
                except OSError:
                    self.socks.remove(s)
            time.sleep(3)

    def alive(self):
        n = 0
        for s in self.socks:
            try:
                s.send(b'X-Slow: 1\r\n')
                n += 1
            except OSError:
                pass
        return n

    def close(self):
        self.stop = True
        for s in self.socks:
            s.close()


def main():
    if shutil.which('wrk') is None:
        sys.exit('wrk is needed (apt-get install wrk)')
    rows = []
    for label, args in [('default limits (256 per address, 1024 in all)', []),
                        ('no per-address limit', ['--max-per-ip', '0'])]:
        p, port, data = start(args)
        try:
            alone, crowded = [], []
            # Alternate, three of each: the machine is noisy; medians.
            for _ in range(3):
                alone.append(wrk(port)[0])
                crowd = Crowd(port, N)
                time.sleep(1)
                got, errs = wrk(port)
                crowded.append(got)
                held = crowd.alive()
                crowd.close()
                time.sleep(1)
            rows.append((label, sorted(alone)[1], sorted(crowded)[1], held,
                         crowd.refused, errs))
        finally:
            p.terminate()
            p.wait(20)
            shutil.rmtree(data, ignore_errors=True)
    print('| limits | GET/s alone | GET/s with %d slow connections | ratio | '
          'slow connections held | refused | wrk socket errors |' % N)
    print('|---|---:|---:|---:|---:|---:|---|')
    for label, base, wc, held, refused, errs in rows:
        print('| %s | %.0f | %.0f | %.2f | %d | %d | %s |' % (
            label, base, wc, wc / base if base else 0, held, refused,
            errs or 'none'))


if __name__ == '__main__':
    main()
