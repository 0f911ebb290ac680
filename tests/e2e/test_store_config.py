#!/usr/bin/env python3
"""test_store_config — the store options: --store picks lmdb or etcd, and
the etcd options are checked together (kernelindexd --check exits 2 with
the option named); a daemon whose etcd does not answer exits 1 naming it.
Needs no etcd."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import check, eq, test  # noqa: E402


def run(*args, timeout=30):
    p = subprocess.run([kitest.daemon_path()] + list(args),
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


@test
def store_options_are_checked_together():
    cases = [
        (['--store', 'etcd'], 'etcd-endpoints: store etcd needs'),
        (['--store', 'zz'], 'store: "zz" is not a store backend'),
        (['--etcd-endpoints', 'http://127.0.0.1:2379'],
         'etcd-endpoints: only with store etcd'),
        (['--store', 'etcd', '--etcd-endpoints', 'ftp://x'],
         'is not an http:// or https:// URL'),
        (['--store', 'etcd', '--etcd-endpoints', 'http://a:1,'],
         'is not an http:// or https:// URL'),
        (['--store', 'etcd', '--etcd-endpoints', 'http://a:1',
          '--etcd-cert', '/c.pem'], 'etcd-cert and etcd-key go together'),
        (['--store', 'etcd', '--etcd-endpoints', 'http://a:1',
          '--etcd-user', 'u'], 'etcd-user and etcd-password-file go together'),
        (['--store', 'etcd', '--etcd-endpoints', 'http://a:1',
          '--etcd-prefix', ''], 'etcd-prefix: must not be empty'),
    ]
    for args, want in cases:
        rc, out = run(*(args + ['--check']))
        eq(rc, 2, 'exit status of %r' % args)
        check(want in out, '%r: %r does not say %r' % (args, out, want))
    rc, out = run('--store', 'etcd', '--etcd-endpoints',
                  'http://127.0.0.1:2379,https://10.0.0.2:2379', '--check')
    eq((rc, out.strip()), (0, 'configuration ok'), 'a good etcd configuration')
    rc, out = run('--store', 'lmdb', '--check')
    eq(rc, 0, 'lmdb')


@test
def a_daemon_whose_etcd_does_not_answer_exits_naming_it():
    port = kitest.free_port()
    rc, out = run('--listen', '127.0.0.1:%d' % kitest.free_port(),
                  '--data-dir', kitest.tempdir('kitest-cfg-'),
                  '--store', 'etcd', '--etcd-endpoints',
                  'http://127.0.0.1:%d' % port)
    eq(rc, 1, 'exit status')
    check('cannot open the store in http://127.0.0.1:%d' % port in out, out)


if __name__ == '__main__':
    sys.exit(kitest.run_all())
