#!/usr/bin/env python3
"""test_conventions — status and answers as controllers and kubectl expect
them: a condition's lastTransitionTime moves only when its status does; a
failed Verification has a Failed condition `kubectl wait` waits for; a label
the server derives warns the client that sent another value; a 422 names
the object's kind and name; `kubectl explain KIND.status` lists the status
fields; a dry run answers no invented resourceVersion."""
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402
from clientdata import protocol  # noqa: E402

KUBECTL = shutil.which('kubectl')
SEED = kitest.seed()
RUN = SEED['run']['metadata']['name']
STATE = {}


def daemon():
    if 'd' not in STATE:
        d = kitest.Daemon(sync=False, args=[
            '--ref-program', '/nonexistent/kernelindex-ref']).start()
        eq(d.post(G + '/benchmarkruns', SEED).status, 201, 'seed')
        cfgdir = kitest.tempdir('kitest-kube-')
        cfg = os.path.join(cfgdir, 'config')
        with open(cfg, 'w') as f:
            f.write('apiVersion: v1\nkind: Config\nclusters: [{name: ki, '
                    'cluster: {server: "http://127.0.0.1:%d", '
                    'insecure-skip-tls-verify: true}}]\ncontexts: [{name: ki, '
                    'context: {cluster: ki, user: ki}}]\nusers: [{name: ki, '
                    'user: {}}]\ncurrent-context: ki\n' % d.port)
        STATE['env'] = dict(os.environ, KUBECONFIG=cfg, HOME=cfgdir,
                            KUBECACHEDIR=os.path.join(cfgdir, 'c'))
        STATE['d'] = d
    return STATE['d']


def kubectl(*args, ok=True, timeout=90):
    daemon()
    p = subprocess.run([KUBECTL] + list(args), env=STATE['env'],
                       capture_output=True, text=True, timeout=timeout)
    if ok and p.returncode != 0:
        raise kitest.TestFailure('kubectl %s: rc %d\n%s%s' % (
            ' '.join(args), p.returncode, p.stdout, p.stderr))
    return p


def conditions(obj):
    return {c['type']: (c['status'], c['lastTransitionTime'])
            for c in obj['status'].get('conditions', [])}


@test
def a_condition_keeps_its_time_until_its_status_changes():
    d = daemon()
    before = conditions(d.get(G + '/benchmarkruns/' + RUN).json())
    check(before, 'the run has conditions')
    time.sleep(1.1)     # times have a resolution of one second
    r = d.request('PATCH', G + '/benchmarkruns/' + RUN,
                  body={'metadata': {'labels': {'team': 'a'}}},
                  content_type='application/merge-patch+json')
    eq(r.status, 200, 'label patch (%r)' % r)
    eq(conditions(r.json()), before, 'conditions after a label change')
    # A change of status does move it: the run's environment deleted, its
    # plausibility is Unknown (no GPU to judge by); DigestsVerified, False
    # before and after (the seed's workload is not stored), keeps its time.
    env = SEED['environment']['metadata']['name']
    eq(d.delete(G + '/executionenvironments/' + env).status, 200, 'delete')
    after = conditions(d.get(G + '/benchmarkruns/' + RUN).json())
    check(after['Plausible'][0] != before['Plausible'][0] and
          after['Plausible'][1] > before['Plausible'][1],
          'Plausible changed, and its time: %r -> %r' % (before, after))
    eq(after['DigestsVerified'], before['DigestsVerified'],
       'an unchanged condition kept its time')
    eq(d.post(G + '/benchmarkruns', SEED).status, 201, 'the seed again')


@test
def kubectl_waits_for_a_failed_verification():
    daemon()
    v = {'apiVersion': 'kernelindex.dev/v1alpha1', 'kind': 'Verification',
         'metadata': {'name': 'fails'}, 'spec': {'runName': RUN}}
    eq(STATE['d'].post(G + '/verifications', v).status, 201, 'create')
    p = kubectl('wait', '--for=condition=Failed', 'kver/fails',
                '--timeout=60s')
    check('condition met' in p.stdout, p.stdout)
    st = STATE['d'].get(G + '/verifications/fails').json()['status']
    eq(st['phase'], 'Failed', 'phase')


@test
def a_derived_label_set_otherwise_is_a_warning():
    p = kubectl('label', 'kbr', RUN, 'kernel=something-else', '--overwrite')
    check('Warning:' in p.stderr and 'kernel' in p.stderr and
          'derives' in p.stderr, 'kubectl shows the warning: %r' % p.stderr)
    got = json.loads(kubectl('get', 'kbr', RUN, '-o', 'json').stdout)
    eq(got['metadata']['labels']['kernel'], 'embedding', 'derived label')
    b = kitest.deepcopy(SEED)
    b['run']['metadata']['name'] = 'warned'
    b['run']['spec']['sourceNative']['externalId'] += '/warned'
    b['run']['metadata']['labels']['gpu'] = 'not-this'
    r = STATE['d'].post(G + '/benchmarkruns', b)
    eq(r.status, 201, 'create')
    check('gpu' in (r.headers.get('Warning') or ''),
          'a create warns: %r' % r.headers.get('Warning'))


@test
def a_422_names_the_kind_and_the_name():
    d = daemon()
    for ctype, body in [
            ('application/merge-patch+json',
             {'spec': {'timing': {'primaryStatistic': 'mean'}}}),
            ('application/json-patch+json',
             [{'op': 'replace', 'path': '/spec/status', 'value': 'failed'}])]:
        r = d.request('PATCH', G + '/benchmarkruns/' + RUN, body=body,
                      content_type=ctype)
        st = kitest.status_of(r, 422, 'Invalid')
        eq((st['details'].get('kind'), st['details'].get('name')),
           ('BenchmarkRun', RUN), 'details of a %s 422' % ctype)
        check(kitest.causes(st), 'causes of a %s 422' % ctype)


@test
def explain_lists_the_status_fields():
    out = kubectl('explain', 'kbr.status').stdout
    for f in ('conditions', 'digest', 'references', 'plausibility',
              'verification'):
        check(f in out, '%s in kubectl explain kbr.status:\n%s' % (f, out))
    out = kubectl('explain', 'kver.status.conditions').stdout
    check('lastTransitionTime' in out and 'Failed' in out, out)


@test
def a_dry_run_invents_no_resource_version():
    d = daemon()
    r = d.post(G + '/benchmarkprotocols?dryRun=All',
               protocol('dry-create', reps=91))
    eq(r.status, 201, 'dry-run create')
    check('resourceVersion' not in r.json()['metadata'],
          'a dry-run create has no resourceVersion: %r' % r.json()['metadata'])
    live = d.get(G + '/benchmarkruns/' + RUN).json()
    r = d.request('PATCH', G + '/benchmarkruns/' + RUN + '?dryRun=All',
                  body={'metadata': {'labels': {'team': 'dry'}}},
                  content_type='application/merge-patch+json')
    eq(r.status, 200, 'dry-run patch')
    eq(r.json()['metadata']['resourceVersion'],
       live['metadata']['resourceVersion'], 'a dry-run patch keeps the rv')
    eq(r.json()['metadata']['labels']['team'], 'dry', 'what it would be')
    r = d.delete(G + '/benchmarkruns/' + RUN + '?dryRun=All')
    eq(r.json()['metadata']['resourceVersion'],
       live['metadata']['resourceVersion'], 'a dry-run delete keeps the rv')
    eq(d.get(G + '/benchmarkruns/' + RUN).json()['metadata'],
       live['metadata'], 'nothing changed')


@test
def a_uid_that_is_not_the_objects_is_a_conflict():
    d = daemon()
    live = d.get(G + '/benchmarkruns/' + RUN).json()
    r = d.request('PATCH', G + '/benchmarkruns/' + RUN,
                  body={'metadata': {'uid': 'someone-else',
                                     'labels': {'team': 'uid'}}},
                  content_type='application/merge-patch+json')
    kitest.status_of(r, 409, 'Conflict')
    body = dict(live, metadata=dict(live['metadata'], uid='x'))
    kitest.status_of(d.request('PUT', G + '/benchmarkruns/' + RUN, body=body),
                     409, 'Conflict')
    eq(d.get(G + '/benchmarkruns/' + RUN).json()['metadata'],
       live['metadata'], 'nothing changed')
    r = d.request('PUT', G + '/benchmarkruns/' + RUN, body=live)
    eq(r.status, 200, 'a PUT of the object as read (%r)' % r)


@test
def delete_options_in_the_query_are_checked():
    d = daemon()
    u = G + '/benchmarkruns/' + RUN + '?dryRun=All&'
    for q, code in [('orphanDependents=maybe', 400),
                    ('gracePeriodSeconds=soon', 400),
                    ('propagationPolicy=Sideways', 400),
                    ('orphanDependents=t&gracePeriodSeconds=0&'
                     'propagationPolicy=Orphan', 200)]:
        r = d.delete(u + q)
        eq(r.status, code, 'DELETE ?%s (%r)' % (q, r))
    r = d.request('DELETE', G + '/benchmarkruns/' + RUN,
                  body={'kind': 'DeleteOptions', 'apiVersion': 'v1',
                        'dryRun': ['All'], 'ignoreStoreReadError': True})
    st = kitest.status_of(r, 400, 'BadRequest')
    check('ignoreStoreReadError' in st['message'], st['message'])
    eq(d.get(G + '/benchmarkruns/' + RUN).status, 200, 'still there')


def pb_field(num, data):
    """A length-delimited protobuf field (lengths under 128)."""
    return bytes([num << 3 | 2, len(data)]) + data


@test
def reviews_refuse_what_they_cannot_read():
    d = daemon()
    path = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews'
    pb = 'application/vnd.kubernetes.protobuf'

    def review(verb):
        attrs = pb_field(2, verb) + pb_field(3, b'kernelindex.dev') + \
            pb_field(5, b'benchmarkruns')
        raw = pb_field(2, pb_field(1, attrs))
        tm = pb_field(1, b'authorization.k8s.io/v1') + \
            pb_field(2, b'SelfSubjectAccessReview')
        return b'k8s\x00' + pb_field(1, tm) + pb_field(2, raw)
    r = d.post(path, review(b'get'), content_type=pb)
    eq((r.status, r.json()['status']['allowed']), (201, True),
       'a protobuf review as kubectl sends it')
    kitest.status_of(d.post(path, review(b'g\xffet'), content_type=pb), 400,
                     'BadRequest')
    kitest.status_of(d.post(path, review(b'get\x00x'), content_type=pb),
                     400, 'BadRequest')
    kitest.status_of(d.post(path, b'k8s\x00\x0a\xff', content_type=pb), 400,
                     'BadRequest')
    kitest.status_of(d.post(path, {'kind': 'SelfSubjectAccessReview',
                                   'spec': {}}), 422, 'Invalid')
    kitest.status_of(d.post(path, 'x', content_type='text/plain'), 415,
                     'UnsupportedMediaType')
    kitest.status_of(d.get(path), 405, 'MethodNotAllowed')


if __name__ == '__main__':
    if KUBECTL is None:
        print('kubectl is not on PATH')
        sys.exit(1)
    sys.exit(kitest.run_all())
