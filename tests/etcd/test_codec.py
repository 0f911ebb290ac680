#!/usr/bin/env python3
"""test_codec — the etcd store keeps records and watch events compressed
(store/etcd_codec.c: a 0xff "KZ1" marker, the length, a zlib stream) when
that pays, and reads what an older daemon stored uncompressed:
  - after the Liger import, the runs' records under o/ are compressed and
    hold, inflated, what the daemon serves;
  - a record rewritten in etcd uncompressed (as a daemon before the codec
    stored it) is served as before, byte for byte;
  - a compressed value that does not inflate is damaged data: 500, never
    served.
Skipped (77) when etcd is not installed."""
import base64
import os
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
sys.path.insert(0, HERE)
os.environ.pop('KI_ETCD_ENDPOINTS', None)  # the test chooses the store
import etcdcluster  # noqa: E402
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402

ETCD = None
DAEMON = None
PREFIX = b'/codec/'
MARK = b'\xffKZ1'
CSV = os.path.join(kitest.DATA, 'liger', 'all_benchmark_data.csv')


def b64(b):
    return base64.b64encode(b).decode()


def records(limit=200):
    """[(key, stored value)] of the first records under o/."""
    k = PREFIX + b'o/'
    got = ETCD.call('/v3/kv/range', {'key': b64(k), 'range_end':
                                     b64(PREFIX + b'o0'), 'limit': limit})
    return [(base64.b64decode(kv['key']), base64.b64decode(kv['value']))
            for kv in got.get('kvs', [])]


def inflate(v):
    eq(v[:4], MARK, 'the marker')
    n = int.from_bytes(v[4:8], 'big')
    raw = zlib.decompress(v[8:])
    eq(len(raw), n, 'the inflated length is the one the value gives')
    return raw


def run_name(raw):
    """The object name a record holds (store/etcd_txn.c: a 96-byte
    header, the name's length at bytes 6-7, the name after it)."""
    n = raw[6] << 8 | raw[7]
    return raw[96:96 + n].decode()


def cache_revision():
    for line in DAEMON.get('/metrics').body.decode().splitlines():
        if line.startswith('kernelindex_etcd_cache_revision '):
            return int(line.split()[1])
    check(False, 'no kernelindex_etcd_cache_revision in /metrics')
    return 0


def put(key, value):
    """Put straight into etcd, then wait until the daemon's watch cache
    (which serves its reads) has applied the put's revision."""
    got = ETCD.call('/v3/kv/put', {'key': b64(key), 'value': b64(value)})
    rev = int(got['header']['revision'])
    deadline = time.monotonic() + 30
    while cache_revision() < rev:
        check(time.monotonic() < deadline,
              'the watch cache reached revision %d within 30 s' % rev)
        time.sleep(0.02)


def big_run():
    """A stored run's key, stored value and name."""
    for k, v in records():
        if v[:4] == MARK:
            return k, v, inflate(v)
    check(False, 'no compressed record among the first 200')
    return None


@test
def records_are_stored_compressed():
    recs = records()
    packed = [v for _, v in recs if v[:4] == MARK]
    check(len(packed) > len(recs) // 2,
          '%d of %d records compressed' % (len(packed), len(recs)))
    raw = sum(len(inflate(v)) for v in packed)
    stored = sum(len(v) for v in packed)
    check(stored * 10 < raw * 7,
          'compressed records take %d of %d bytes' % (stored, raw))
    print('      %d records: %d bytes stored for %d (%.2fx)' %
          (len(packed), stored, raw, raw / stored))


def served(name):
    for plural in ('benchmarkruns', 'benchmarkprotocols',
                   'executionenvironments', 'workloads', 'implementations'):
        r = DAEMON.get(G + '/%s/%s' % (plural, name))
        if r.status == 200:
            return plural, r.body
    return None, None


@test
def a_record_stored_uncompressed_is_served_as_before():
    key, v, raw = big_run()
    plural, before = served(run_name(raw))
    check(before is not None, 'the object %s is served' % run_name(raw))
    put(key, raw)                   # as a daemon before the codec stored it
    r = DAEMON.get(G + '/%s/%s' % (plural, run_name(raw)))
    eq(r.status, 200, 'served from the uncompressed record')
    eq(r.body, before, 'the same bytes')
    put(key, v)


@test
def a_compressed_value_that_does_not_inflate_is_never_served():
    key, v, raw = big_run()
    plural, before = served(run_name(raw))
    put(key, v[:8] + b'\x78\x01' + b'\x00' * 40)
    r = DAEMON.get(G + '/%s/%s' % (plural, run_name(raw)))
    eq(r.status, 500, 'a damaged record: %r' % r.body[:200])
    check(b'damaged' in r.body, 'the message says so: %r' % r.body[:300])
    put(key, v)
    eq(DAEMON.get(G + '/%s/%s' % (plural, run_name(raw))).body, before,
       'served again once repaired')


@test
def a_record_failing_its_checksum_is_never_served():
    """The watch cache checks a record's CRC-32 once, when it takes the
    record from etcd, and lends it to reads without checking again: a
    record damaged in etcd must still be refused by a GET and a list."""
    key, v, raw = big_run()
    plural, before = served(run_name(raw))
    bad = bytearray(raw)
    bad[-10] ^= 0x20                # a byte of its JSON, not its CRC
    put(key, bytes(bad))
    r = DAEMON.get(G + '/%s/%s' % (plural, run_name(raw)))
    eq(r.status, 500, 'a record failing its checksum: %r' % r.body[:200])
    check(b'damaged' in r.body, 'the message says so: %r' % r.body[:300])
    r = DAEMON.get(G + '/%s?limit=500' % plural)
    eq(r.status, 500, 'a list holding it: %r' % r.body[:200])
    put(key, v)
    eq(DAEMON.get(G + '/%s/%s' % (plural, run_name(raw))).body, before,
       'served again once repaired')


def main():
    global ETCD, DAEMON
    etcdcluster.skip_without_etcd()
    ETCD = etcdcluster.Cluster(1).start_all()
    try:
        DAEMON = kitest.Daemon(args=[
            '--store', 'etcd', '--etcd-endpoints', ETCD.endpoints(),
            '--etcd-prefix', PREFIX.decode()]).start()
        cli = os.environ.get('KI_CLI') or os.path.join(
            os.path.dirname(kitest.daemon_path()), 'kernelindex')
        r = subprocess.run([cli, '--server', 'http://127.0.0.1:%d' %
                            DAEMON.port, 'import', 'liger', CSV],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            print('kernelindex import liger: %s' % r.stderr[-500:])
            return 1
        rc = kitest.run_all()
    finally:
        kitest.stop_all()
        ETCD.remove()
    return rc


if __name__ == '__main__':
    sys.exit(main())
