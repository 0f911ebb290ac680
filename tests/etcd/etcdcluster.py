"""etcdcluster — loopback etcd members for the tests of tests/etcd: a
static cluster of n members (--initial-cluster) in a temporary
directory, each stopped and started by its PID. skip_without_etcd()
exits 77 with the reason when etcd is not installed (scripts/deps.sh
--test installs etcd-server)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def skip_without_etcd():
    if shutil.which('etcd') is None:
        print('skipped: etcd is not installed (scripts/deps.sh --test '
              'installs etcd-server)')
        sys.exit(77)


def _ports(n):
    ss = [socket.socket() for _ in range(n)]
    for s in ss:
        s.bind(('127.0.0.1', 0))
    ports = [s.getsockname()[1] for s in ss]
    for s in ss:
        s.close()
    return ports


class Cluster:
    """n etcd members on loopback, with the limits the store needs (one
    write transaction is one Txn: --max-txn-ops, --max-request-bytes) and
    a space quota of quota bytes (--quota-backend-bytes; etcd's own
    default is 2 GiB)."""

    def __init__(self, n=1, quota=8589934592):
        self.dir = tempfile.mkdtemp(prefix='ki-etcd-cluster-')
        ports = _ports(2 * n)
        self.names = ['m%d' % i for i in range(n)]
        self.client = ['http://127.0.0.1:%d' % p for p in ports[:n]]
        self.peer = ['http://127.0.0.1:%d' % p for p in ports[n:]]
        self.initial = ','.join('%s=%s' % (nm, p)
                                for nm, p in zip(self.names, self.peer))
        self.procs = [None] * n
        self.started = [False] * n
        self.quota = quota

    def endpoints(self):
        return ','.join(self.client)

    def start(self, i, timeout=30):
        """Starts member i (again: its data directory is kept)."""
        state = 'existing' if self.started[i] else 'new'
        log = open(os.path.join(self.dir, '%s.log' % self.names[i]), 'ab')
        cmd = ['etcd', '--name', self.names[i],
               '--data-dir', os.path.join(self.dir, self.names[i]),
               '--listen-client-urls', self.client[i],
               '--advertise-client-urls', self.client[i],
               '--listen-peer-urls', self.peer[i],
               '--initial-advertise-peer-urls', self.peer[i],
               '--initial-cluster', self.initial,
               '--initial-cluster-state', state,
               '--initial-cluster-token', os.path.basename(self.dir),
               '--max-txn-ops', '1000000',
               '--max-request-bytes', '67108864',
               '--quota-backend-bytes', str(self.quota),
               '--log-level', 'error']
        self.procs[i] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log)
        log.close()
        self.started[i] = True
        return self

    def start_all(self, timeout=60):
        for i in range(len(self.names)):
            self.start(i)
        self.wait_healthy(timeout)
        return self

    def healthy(self, i):
        try:
            with urllib.request.urlopen(self.client[i] + '/health',
                                        timeout=2) as r:
                return json.loads(r.read()).get('health') == 'true'
        except (OSError, ValueError):
            return False

    def wait_healthy(self, timeout=60, members=None):
        members = range(len(self.names)) if members is None else members
        deadline = time.time() + timeout
        while time.time() < deadline:
            if all(self.healthy(i) for i in members):
                return
            for i in members:
                p = self.procs[i]
                if p is not None and p.poll() is not None:
                    raise RuntimeError('etcd %s exited: %s' %
                                       (self.names[i], self.log(i)))
            time.sleep(0.1)
        raise RuntimeError('etcd not healthy after %d s: %s' %
                           (timeout, self.log(0)))

    def leader(self):
        """The index of the member that leads now (asked of each live
        member through /v3/maintenance/status), or None."""
        ids = {}
        lead = None
        for i in range(len(self.names)):
            if self.procs[i] is None:
                continue
            req = urllib.request.Request(
                self.client[i] + '/v3/maintenance/status', data=b'{}',
                headers={'Content-Type': 'application/json'})
            try:
                with urllib.request.urlopen(req, timeout=2) as r:
                    st = json.loads(r.read())
            except (OSError, ValueError):
                continue
            ids[st['header']['member_id']] = i
            lead = st.get('leader', lead)
        return ids.get(lead)

    def call(self, path, body=None, i=0, timeout=60):
        """POSTs body (a dict) to member i's JSON gateway (/v3/...):
        etcd's answer, parsed."""
        req = urllib.request.Request(
            self.client[i] + path, data=json.dumps(body or {}).encode(),
            headers={'Content-Type': 'application/json'})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())

    def db_size(self, i=0):
        """Member i's database size (dbSize of its status), in bytes."""
        return int(self.call('/v3/maintenance/status', i=i)['dbSize'])

    def alarms(self):
        """The alarms raised now: [(member id, alarm name)]."""
        got = self.call('/v3/maintenance/alarm', {'action': 'GET'})
        return [(a.get('memberID'), a.get('alarm', 'NONE'))
                for a in got.get('alarms', [])]

    def free_space(self):
        """What an operator does once the quota is reached (etcd's
        "space quota" guide): compact every revision but the newest,
        defragment each member, then disarm the alarms."""
        rev = self.call('/v3/kv/range', {'key': 'AA=='})['header']['revision']
        self.call('/v3/kv/compaction', {'revision': rev, 'physical': True})
        for i in range(len(self.names)):
            if self.procs[i] is not None:
                self.call('/v3/maintenance/defragment', i=i, timeout=300)
        for mid, name in self.alarms():
            self.call('/v3/maintenance/alarm',
                      {'action': 'DEACTIVATE', 'memberID': mid,
                       'alarm': name})

    def log(self, i):
        try:
            with open(os.path.join(self.dir, '%s.log' % self.names[i])) as f:
                return f.read()[-2000:]
        except OSError:
            return ''

    def stop(self, i, sig=signal.SIGTERM):
        """Stops member i by its PID (SIGKILL: as a crash would)."""
        p = self.procs[i]
        if p is None:
            return
        if p.poll() is None:
            os.kill(p.pid, sig)
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
        self.procs[i] = None

    def stop_all(self):
        for i in range(len(self.names)):
            self.stop(i)

    def remove(self):
        self.stop_all()
        shutil.rmtree(self.dir, ignore_errors=True)
