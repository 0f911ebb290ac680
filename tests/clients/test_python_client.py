#!/usr/bin/env python3
"""test_python_client — the official Python Kubernetes client (Debian's
python3-kubernetes, installed by scripts/deps.sh --test) against the real
daemon: discovery, lists over more than 1,000 objects without and with
paging, get, create, replace with a stale resourceVersion, merge, JSON and
server-side apply patches, delete with DeleteOptions (dry run,
preconditions), watch with resume and 410, and the auth reviews with tokens
of each role.

The client lives in the system's Python (/usr/lib/python3/dist-packages):
when the interpreter running this file lacks it, the file runs itself again
under /usr/bin/python3."""
import json
import os
import sys

try:
    import kubernetes  # noqa: F401
except ImportError:
    if os.path.exists('/usr/bin/python3') and \
            os.path.realpath(sys.executable) != '/usr/bin/python3' and \
            not os.environ.get('KI_REEXEC'):
        os.environ['KI_REEXEC'] = '1'
        os.execv('/usr/bin/python3', ['/usr/bin/python3'] + sys.argv)
    print('the Python Kubernetes client is missing: run scripts/deps.sh '
          '--test (Debian package python3-kubernetes)')
    sys.exit(1)

from kubernetes import client, dynamic, watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
import kitest  # noqa: E402
from kitest import G, check, eq, test  # noqa: E402
from clientdata import (GROUP, NRUNS, VERSION, many_runs,  # noqa: E402
                        protocol)

STATE = {}


def api_client(d, token=None):
    cfg = client.Configuration()
    cfg.host = 'http://127.0.0.1:%d' % d.port
    if token:
        cfg.api_key['authorization'] = token
        cfg.api_key_prefix['authorization'] = 'Bearer'
    return client.ApiClient(cfg)


def daemon():
    """One daemon with NRUNS + 1 runs; a short event history, so that an old
    resourceVersion is gone (410)."""
    if 'd' not in STATE:
        d = kitest.Daemon(sync=False, args=['--history', '100']).start()
        eq(d.post(G + '/benchmarkruns', kitest.seed()).status, 201, 'seed')
        r = d.post(G + '/benchmarkruns', many_runs(NRUNS),
                   content_type='application/x-ndjson', timeout=600)
        eq(r.status, 201, 'NDJSON upload (%r)' % r)
        eq(r.json()['summary']['failed'], 0, 'failed lines')
        STATE['d'] = d
        STATE['api'] = api_client(d)
        STATE['dyn'] = dynamic.DynamicClient(STATE['api'])
    return STATE['d']


def kind(k='BenchmarkRun'):
    daemon()
    return STATE['dyn'].resources.get(api_version=GROUP + '/' + VERSION,
                                      kind=k)


def custom():
    daemon()
    return client.CustomObjectsApi(STATE['api'])


SEED_RUN = kitest.seed()['run']['metadata']['name']


def api_error(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except ApiException as e:
        return e
    raise kitest.TestFailure('%s did not fail' % getattr(fn, '__name__', fn))


@test
def discovery_finds_the_kinds_and_the_review_groups():
    kbr = kind()
    eq(kbr.name, 'benchmarkruns', 'plural')
    eq(kbr.namespaced, False, 'namespaced')
    check('kbr' in kbr.short_names, 'short name kbr: %r' % kbr.short_names)
    groups = [g.name for g in client.ApisApi(STATE['api']).get_api_versions()
              .groups]
    for g in ('kernelindex.dev', 'authorization.k8s.io',
              'authentication.k8s.io'):
        check(g in groups, '%s in /apis: %r' % (g, groups))


@test
def list_without_limit_is_the_whole_collection():
    got = kind().get()
    names = [i.metadata.name for i in got.items]
    eq(len(names), NRUNS + 1, 'items of a list without limit')
    eq(len(set(names)), len(names), 'distinct names')
    check(not got.metadata['continue'], 'no continue token: %r' %
          got.metadata['continue'])
    check(got.metadata.resourceVersion, 'a resourceVersion')
    # The CustomObjectsApi too (what an informer lists with).
    items = custom().list_cluster_custom_object(GROUP, VERSION,
                                                'benchmarkruns')['items']
    eq(len(items), NRUNS + 1, 'CustomObjectsApi list')


@test
def list_with_paging_returns_each_object_once():
    names, cont, pages = [], None, 0
    while True:
        kw = {'limit': 400}
        if cont:
            kw['_continue'] = cont
        got = custom().list_cluster_custom_object(GROUP, VERSION,
                                                  'benchmarkruns', **kw)
        pages += 1
        check(len(got['items']) <= 400, 'a page holds at most limit items')
        names += [i['metadata']['name'] for i in got['items']]
        cont = got['metadata'].get('continue')
        if not cont:
            break
    eq(pages, 4, 'pages of 400 over %d runs' % (NRUNS + 1))
    eq(len(names), NRUNS + 1, 'items over all pages')
    eq(len(set(names)), NRUNS + 1, 'distinct items over all pages')


@test
def get_create_and_replace_with_a_stale_resource_version():
    run = kind().get(name=SEED_RUN)
    eq(run.metadata.name, SEED_RUN, 'get')
    kbp = kind('BenchmarkProtocol')
    made = kbp.create(body=protocol('py-create'))
    eq(made.metadata.name, 'py-create', 'created')
    old_rv = made.metadata.resourceVersion
    body = made.to_dict()
    body['metadata']['labels'] = {'team': 'one'}
    now = kbp.replace(body=body)
    eq(now.metadata.labels.team, 'one', 'replaced label')
    body['metadata']['labels'] = {'team': 'two'}
    body['metadata']['resourceVersion'] = old_rv
    e = api_error(kbp.replace, body=body)
    eq(e.status, 409, 'replace with a stale resourceVersion')
    eq(kbp.get(name='py-create').metadata.labels.team, 'one',
       'the stale replace changed nothing')


@test
def merge_json_and_apply_patches():
    kbr = kind()
    r = kbr.patch(name=SEED_RUN, body={'metadata': {'labels': {'team': 'py'}}},
                  content_type='application/merge-patch+json')
    eq(r.metadata.labels.team, 'py', 'merge patch')
    r = kbr.patch(name=SEED_RUN, content_type='application/json-patch+json',
                  body=[{'op': 'test', 'path': '/metadata/labels/team',
                         'value': 'py'},
                        {'op': 'replace', 'path': '/metadata/labels/team',
                         'value': 'json'},
                        {'op': 'add', 'path': '/metadata/annotations',
                         'value': {'note': 'x'}}])
    eq(r.metadata.labels.team, 'json', 'JSON patch replace')
    eq(r.metadata.annotations.note, 'x', 'JSON patch add')
    rv = r.metadata.resourceVersion
    e = api_error(kbr.patch, name=SEED_RUN,
                  content_type='application/json-patch+json',
                  body=[{'op': 'test', 'path': '/metadata/labels/team',
                         'value': 'py'},
                        {'op': 'remove', 'path': '/metadata/labels/team'}])
    eq(e.status, 422, 'a failed test operation')
    eq(kbr.get(name=SEED_RUN).metadata.resourceVersion, rv,
       'a failed test changed nothing')
    e = api_error(kbr.patch, name=SEED_RUN,
                  content_type='application/json-patch+json',
                  body=[{'op': 'replace', 'path': '/spec/timing/'
                         'primaryStatistic', 'value': 'mean'}])
    eq(e.status, 422, 'a JSON patch of the immutable spec')
    # Server-side apply: creates, then changes the labels. (The client's
    # server_side_apply() cannot serialize a dict for its YAML content type
    # in this version: the body goes as JSON text, which is YAML.)
    kbp = kind('BenchmarkProtocol')
    p = protocol('py-apply', reps=21)

    def apply():
        return STATE['dyn'].request(
            'patch', kbp.path(name='py-apply'), body=json.dumps(p),
            content_type='application/apply-patch+yaml', field_manager='py')
    eq(apply().metadata.name, 'py-apply', 'apply creates')
    p['metadata']['labels'] = {'stage': 'b'}
    eq(apply().metadata.labels.stage, 'b', 'apply updates')


@test
def delete_honours_dry_run_and_preconditions_in_the_body():
    kbp = kind('BenchmarkProtocol')
    made = kbp.create(body=protocol('py-delete', reps=7))
    co = custom()
    got = co.delete_cluster_custom_object(
        GROUP, VERSION, 'benchmarkprotocols', 'py-delete',
        body=client.V1DeleteOptions(dry_run=['All']))
    eq(got['metadata']['resourceVersion'], made.metadata.resourceVersion,
       'a dry run shows the resourceVersion the object has')
    eq(kbp.get(name='py-delete').metadata.uid, made.metadata.uid,
       'a dry-run delete leaves the object')
    e = api_error(co.delete_cluster_custom_object, GROUP, VERSION,
                  'benchmarkprotocols', 'py-delete',
                  body=client.V1DeleteOptions(preconditions=client.
                                              V1Preconditions(uid='other')))
    eq(e.status, 409, 'a uid precondition that fails')
    e = api_error(co.delete_cluster_custom_object, GROUP, VERSION,
                  'benchmarkprotocols', 'py-delete',
                  body=client.V1DeleteOptions(preconditions=client.
                                              V1Preconditions(
                                                  resource_version='1')))
    eq(e.status, 409, 'a resourceVersion precondition that fails')
    e = api_error(co.delete_cluster_custom_object, GROUP, VERSION,
                  'benchmarkprotocols', 'py-delete',
                  body=client.V1DeleteOptions(propagation_policy='Sideways'))
    eq(e.status, 400, 'an unknown propagationPolicy')
    kbp.get(name='py-delete')
    co.delete_cluster_custom_object(
        GROUP, VERSION, 'benchmarkprotocols', 'py-delete',
        body=client.V1DeleteOptions(
            propagation_policy='Background',
            preconditions=client.V1Preconditions(
                uid=made.metadata.uid,
                resource_version=made.metadata.resourceVersion)))
    e = api_error(kbp.get, name='py-delete')
    eq(e.status, 404, 'deleted once the preconditions hold')


@test
def watch_resumes_and_an_old_version_is_gone():
    d = daemon()
    co = custom()
    rv0 = d.list_rv('benchmarkprotocols')
    kind('BenchmarkProtocol').create(body=protocol('py-watch-a', reps=11))
    w = watch.Watch()
    seen = []
    for ev in w.stream(co.list_cluster_custom_object, GROUP, VERSION,
                       'benchmarkprotocols', resource_version=rv0,
                       timeout_seconds=2):
        seen.append((ev['type'], ev['object']['metadata']['name'],
                     ev['object']['metadata']['resourceVersion']))
    eq([s[:2] for s in seen], [('ADDED', 'py-watch-a')], 'events after rv0')
    last = seen[-1][2]
    kind('BenchmarkProtocol').create(body=protocol('py-watch-b', reps=12))
    seen = [(ev['type'], ev['object']['metadata']['name'])
            for ev in watch.Watch().stream(
                co.list_cluster_custom_object, GROUP, VERSION,
                'benchmarkprotocols', resource_version=last,
                timeout_seconds=2)]
    eq(seen, [('ADDED', 'py-watch-b')], 'resumed from the last event')
    e = api_error(lambda: list(watch.Watch().stream(
        co.list_cluster_custom_object, GROUP, VERSION, 'benchmarkruns',
        resource_version='2', timeout_seconds=2)))
    eq(e.status, 410, 'a watch from a version older than the history')


def tokens(d):
    out = {}
    for name, spec in [('admin', {'role': 'admin'}),
                       ('writer', {'role': 'writer'}),
                       ('reader', {'role': 'reader'}),
                       ('scoped', {'role': 'writer', 'source': 'elsewhere'})]:
        r = d.post('/admin/tokens', spec,
                   headers={'Authorization': 'Bearer ' + out['admin']}
                   if 'admin' in out else None)
        eq(r.status, 201, 'token %s (%r)' % (name, r))
        out[name] = r.json()['token']
    return out


def access(api, verb, resource='benchmarkruns', name=None, path=None):
    if path is not None:
        spec = client.V1SelfSubjectAccessReviewSpec(
            non_resource_attributes=client.V1NonResourceAttributes(
                path=path, verb=verb))
    else:
        spec = client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(
                group=GROUP, resource=resource, verb=verb, name=name))
    r = client.AuthorizationV1Api(api).create_self_subject_access_review(
        client.V1SelfSubjectAccessReview(spec=spec))
    return r.status.allowed


@test
def access_reviews_answer_for_each_role():
    d = kitest.Daemon(sync=False).start()
    eq(d.post(G + '/benchmarkruns', kitest.seed()).status, 201, 'seed')
    tok = tokens(d)
    apis = {k: api_client(d, v) for k, v in tok.items()}
    apis['anonymous'] = api_client(d)
    want = {   # role: (get, create, delete the seed run, /admin/tokens)
        'admin': (True, True, True, True),
        'writer': (True, True, True, False),
        'reader': (True, False, False, False),
        'scoped': (True, True, False, False),
        'anonymous': (True, False, False, False),
    }
    for role, (g, c, dl, adm) in want.items():
        api = apis[role]
        got = (access(api, 'get'), access(api, 'create'),
               access(api, 'delete', name=SEED_RUN),
               access(api, 'post', path='/admin/tokens'))
        eq(got, (g, c, dl, adm), 'reviews of %s (get, create, delete, '
           'admin)' % role)
    # What the reviews say is what the server does.
    body = json.dumps(protocol('review-check')).encode()
    for role, (_, c, _, _) in want.items():
        h = {'Authorization': 'Bearer ' + tok[role]} if role in tok else {}
        r = d.post(G + '/benchmarkprotocols?dryRun=All', body, headers=h)
        eq(r.status == 201, c, 'a %s may create (%r)' % (role, r))
    # A source-limited token changes only its source's runs: not the
    # protocol every run shares. The review says what a DELETE would meet.
    proto = kitest.seed()['protocol']['metadata']['name']
    for role, want_del in [('scoped', False), ('writer', True)]:
        eq(access(apis[role], 'delete', 'benchmarkprotocols', name=proto),
           want_del, 'may %s delete the shared protocol' % role)
    r = d.delete(G + '/benchmarkprotocols/' + proto + '?dryRun=All',
                 headers={'Authorization': 'Bearer ' + tok['scoped']})
    eq(r.status, 403, 'the server agrees (%r)' % r)
    rules = client.AuthorizationV1Api(apis['reader']) \
        .create_self_subject_rules_review(client.V1SelfSubjectRulesReview(
            spec=client.V1SelfSubjectRulesReviewSpec(namespace='default')))
    verbs = sorted(v for rr in rules.status.resource_rules
                   if GROUP in rr.api_groups for v in rr.verbs)
    eq(verbs, ['get', 'list', 'watch'], "a reader's rules")


if __name__ == '__main__':
    sys.exit(kitest.run_all())
