#!/usr/bin/env python3
"""test_docs — the README's examples against the real daemon: the seed
POSTed from tests/data as the README's curl line does, read back by digest,
and docs/examples/post_result.py (the harness example) creating its five
documents, then finding them unchanged, with digests the server agrees
with."""
import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402

EXAMPLE = os.path.join(kitest.REPO, 'docs', 'examples', 'post_result.py')
STATE = {}


def daemon():
    if 'd' not in STATE:
        STATE['d'] = kitest.Daemon(sync=False).start()
    return STATE['d']


def example():
    d = daemon()
    p = subprocess.run([sys.executable, EXAMPLE,
                        'http://127.0.0.1:%d%s' % (d.port, G)],
                       capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, 'post_result.py exit status\n' + p.stderr)
    return p.stdout.strip()


@test
def readme_seed_upload_and_digest():
    d = daemon()
    with open(kitest.SEED_PATH, 'rb') as f:
        body = f.read()
    r = d.post(G + '/benchmarkruns', body, content_type='application/json')
    eq(r.status, 201, 'the seed POST: %r' % r)
    dg = 'sha256:5b02ee9a2140fbc6fcc1c89800f6c177ba22718c8897cb532bf0ba91867c1e58'
    got = d.get(G + '/objects/' + dg)
    eq(got.status, 200, 'the protocol by digest')
    eq('sha256:' + hashlib.sha256(got.body).hexdigest(), dg,
       'sha256sum of the body by digest')


@test
def harness_example_creates_then_is_unchanged():
    eq(example(), "201 {'created': 5, 'unchanged': 0, 'failed': 0}",
       'first run of post_result.py')
    eq(example(), "200 {'created': 0, 'unchanged': 5, 'failed': 0}",
       'second run of post_result.py')
    d = daemon()
    run = d.get(G + '/benchmarkruns/my-rmsnorm-h100-rows4096-hidden8192-run1')
    eq(run.status, 200, 'the example run')
    st = run.json()['status']
    refs = st['references']
    check(all(refs[k]['resolved'] for k in refs),
          'every reference resolved: %r' % refs)
    eq(run.json()['metadata']['labels'].get('gpu'), 'h100-sxm5-80gb',
       'derived gpu label')


if __name__ == '__main__':
    sys.exit(kitest.run_all())
