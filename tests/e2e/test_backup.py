#!/usr/bin/env python3
"""test_backup — hot backups (the admin command and POST /admin/backup)
while writes continue, and restore: the restored store holds the same
objects with the same digests and bytes. Over etcd (tests/etcd/e2e.sh) a
backup is etcd's snapshot, restored with etcdctl into a new etcd; the
map's growth and limit are LMDB's only."""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402


def proto(i):
    return {'apiVersion': 'kernelindex.dev/v1alpha1',
            'kind': 'BenchmarkProtocol', 'metadata': {'name': 'b-%d' % i},
            'spec': {'measurement': {'timer': 'cuda_events',
                                     'primaryStatistic': 'median',
                                     'repetitions': i}}}


def snapshot(d):
    """name -> (digest, canonical bytes) of every protocol."""
    out, cont = {}, ''
    while True:
        r = d.get(G + '/benchmarkprotocols?limit=500' +
                  ('&continue=' + cont if cont else '')).json()
        for o in r['items']:
            dg = o['status']['digest']
            body = d.get(G + '/objects/' + dg).body
            out[o['metadata']['name']] = (dg, body)
        cont = r['metadata'].get('continue')
        if not cont:
            return out


def restore(backup, of):
    """A daemon on the store restored from backup, a backup of daemon of's
    store, and a function that stops what the restore started. LMDB: the
    file is data.mdb of a new data directory. etcd: it is etcd's snapshot,
    restored into a new etcd (tests/etcd/start.sh SNAPSHOT); the daemon
    reads the keys of of's prefix there."""
    data = kitest.tempdir('kitest-restored-')
    if not kitest.etcd():
        shutil.copyfile(backup, os.path.join(data, 'data.mdb'))
        d = kitest.Daemon(data_dir=data, sync=False).start()
        return d, d.stop
    p = subprocess.run(['/bin/sh', os.path.join(kitest.REPO, 'tests', 'etcd',
                                                'start.sh'), backup],
                       capture_output=True, text=True, timeout=120)
    eq(p.returncode, 0, 'etcd on the restored snapshot: ' + p.stderr)
    endpoint, pid, etcd_dir = p.stdout.split()

    def stop():
        d.stop()
        os.kill(int(pid), signal.SIGTERM)
        shutil.rmtree(etcd_dir, ignore_errors=True)
    d = kitest.Daemon(data_dir=data, sync=False, args=[
        '--etcd-endpoints', endpoint,
        '--etcd-prefix', kitest.store_args(of.data_dir)[-1]])
    try:
        d.start()
    except Exception:
        stop()
        raise
    return d, stop


@test
def hot_backup_then_restore_gives_the_same_objects():
    d = kitest.Daemon().start()
    eq(d.post(G + '/benchmarkruns', kitest.seed()).status, 201, 'seed')
    for i in range(100):
        eq(d.post(G + '/benchmarkprotocols', proto(i)).status, 201, 'b-%d' % i)
    before = snapshot(d)
    stop = threading.Event()
    acked = []

    def writer():
        i = 1000
        while not stop.is_set():
            r = d.post(G + '/benchmarkprotocols', proto(i))
            if r.status == 201:
                acked.append('b-%d' % i)
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        tmp = kitest.tempdir('kitest-backup-')
        via_api = os.path.join(tmp, 'api.mdb')
        r = d.post('/admin/backup', {'path': via_api})
        eq(r.status, 201, 'POST /admin/backup: %r' % r.body[:300])
        check(r.json()['bytes'] > 0, 'bytes')
        r = d.post('/admin/backup', {'path': via_api})
        kitest.status_of(r, 409, 'AlreadyExists')
        via_cmd = os.path.join(tmp, 'cmd.mdb')
        p = subprocess.run(kitest.command(d.data_dir, 'backup', via_cmd),
                           capture_output=True, text=True, timeout=120)
        eq(p.returncode, 0, 'backup command: ' + p.stderr)
    finally:
        stop.set()
        t.join()
    check(len(acked) > 0, 'writes continued during the backups')
    for path in (via_api, via_cmd):
        r, stop_restored = restore(path, d)
        got = snapshot(r)
        for name, (dg, body) in before.items():
            check(name in got, '%s missing from %s' % (name, path))
            eq(got[name], (dg, body), 'digest and bytes of ' + name)
        # A write acknowledged before the copy began is in it; later ones may
        # or may not be, but each is whole.
        for name, (dg, body) in got.items():
            check(json.loads(body)["kind"] == "BenchmarkProtocol", name)
        run = r.get(G + '/benchmarkruns/' +
                    kitest.seed()['run']['metadata']['name'])
        eq(run.status, 200, 'the seed run restored')
        stop_restored()


@test
def full_storage_is_507_reads_go_on_and_growth_resumes_writes():
    kitest.lmdb_only('the map filling up to map-max and growing after a '
                     'restart')
    data = kitest.tempdir('kitest-full-')
    d = kitest.Daemon(data_dir=data, sync=False,
                      args=['--map-size', '1M', '--map-max', '2M']).start()
    stored, full = [], None
    for i in range(20000):
        r = d.post(G + '/benchmarkprotocols', proto(i))
        if r.status == 201:
            stored.append('b-%d' % i)
            continue
        full = r
        break
    check(full is not None, 'the map filled')
    st = kitest.status_of(full, 507, 'InsufficientStorage')
    check('nothing was written' in st['message'], st['message'])
    check(len(stored) > 100, 'the map grew from 1M before filling at 2M: '
          '%d stored' % len(stored))
    eq(d.get(G + '/benchmarkprotocols/' + stored[0]).status, 200, 'reads go on')
    eq(d.get(G + '/benchmarkprotocols/b-%d' % len(stored)).status, 404,
       'the refused write left nothing')
    d.stop()
    d.args = ['--map-size', '1M', '--map-max', '64M']
    d.start()
    eq(d.post(G + '/benchmarkprotocols', proto(len(stored))).status, 201,
       'with room to grow, writes resume')
    for name in stored[::97]:
        eq(d.get(G + '/benchmarkprotocols/' + name).status, 200, name)


if __name__ == '__main__':
    sys.exit(kitest.run_all())
