#!/usr/bin/env python3
"""End-to-end tests of kernelindexd: the real daemon over HTTP.

python3 tests/e2e/test_api.py [TEST_NAME...]

KI_DAEMON names the binary, KI_DATA_DIR the test data (see kitest.py).
"""
import copy
import hashlib
import json
import os
import random
import sys
import threading
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kitest  # noqa: E402
from kitest import (G, Daemon, TestFailure, check, eq, status_of,  # noqa: E402
                    cause_fields, status_text, test)
from apidocs import (canonical_bytes, digest, SEED, RUN_NAME,  # noqa: E402
                     PROTO_NAME, mut, raw_with, replace_once, DELETE, put,
                     chain, protocol, workload, lone_run, named_objects,
                     snapshot, list_all, get_name, SENTINEL_ENV,
                     malformed_daemon, small_daemon, SEED_NAMES, fresh,
                     bundle)

# ---------------------------------------------------------------- cases


class Case:
    """One malformed request: what is sent, and the Status expected back
    (code, reason, the fields its details.causes must name, words its
    message or causes must contain). names lists the (plural, name) of the
    objects the body names, when they cannot be read from it."""

    def __init__(self, name, body=None, code=400, reason='BadRequest',
                 fields=(), words=(), method='POST', path='/benchmarkruns',
                 ctype='application/json', where='malformed', names=None,
                 chunked=False, raw_socket=False, all_codes_have_fields=False,
                 headers=None):
        self.name = name
        self.headers = headers or {}
        # code and reason may be tuples of acceptable pairs; then fields
        # are required of a 422 only, unless all_codes_have_fields
        self.all_codes_have_fields = all_codes_have_fields
        self.body = body
        self.code = code
        self.reason = reason
        self.fields = list(fields)   # each a field, or a tuple of choices
        self.words = list(words)
        self.method = method
        # paths under the group version are written without its prefix
        self.path = path if path.startswith(('/apis/', '/no/')) else G + path
        self.ctype = ctype
        self.where = where
        self.names = names
        self.chunked = chunked
        self.raw_socket = raw_socket

    def payload(self):
        if self.body is None:
            return None
        if isinstance(self.body, (bytes, bytearray)):
            return bytes(self.body)
        return json.dumps(self.body).encode()

    def objects(self):
        if self.names is not None:
            return self.names
        if isinstance(self.body, (dict, list)):
            return named_objects(self.body)
        return []


SEED_TEXT = json.dumps(SEED)
PAD_ANNOTATION = put('run.metadata.annotations', {'pad': 'x' * 3000})


def tampered(part, field, value):
    t = mut(put(field, value))
    return t, digest(t[part]), SEED['run']['spec'][part + 'Digest']


def cases():
    C = []
    add = C.append

    # -- not JSON, or not a document --
    add(Case('truncated_json', SEED_TEXT[:len(SEED_TEXT) // 2].encode(),
             words=['not valid json', 'end of input'], names=SEED_NAMES))
    add(Case('not_json', b'this is not JSON', words=['not valid json']))
    add(Case('empty_body', b'', words=['empty']))
    add(Case('whitespace_body', b'  \n\t ', words=['json']))
    add(Case('top_level_array', json.dumps([SEED]).encode(),
             words=['object'], names=SEED_NAMES))
    add(Case('top_level_string', b'"BenchmarkRun"', words=['object']))
    add(Case('trailing_garbage', (SEED_TEXT + ' garbage').encode(),
             words=['json'], names=SEED_NAMES))
    add(Case('two_documents', (SEED_TEXT + '\n' + SEED_TEXT).encode(),
             words=['json'], names=SEED_NAMES))
    add(Case('single_quotes', b"{'run': {}}", words=['not valid json']))
    add(Case('trailing_comma', replace_once(
        SEED_TEXT,
        '"median": 7489376}', '"median": 7489376,}')
        .encode(), words=['not valid json'], names=SEED_NAMES))

    # -- duplicate keys --
    add(Case('duplicate_key_top_level', ('{"run": %s, "run": %s}' % (
        json.dumps(SEED['run']), json.dumps(SEED['run']))).encode(),
        fields=['run'], words=['duplicate'],
        names=[('benchmarkruns', RUN_NAME)]))
    add(Case('duplicate_key_nested', replace_once(
        SEED_TEXT,
        '"median": 7489376', '"median": 7489376, "median": 7489377')
        .encode(), fields=['run.spec.timing.latencyNs.median'],
        words=['duplicate'], names=SEED_NAMES))
    add(Case('duplicate_key_in_measurements', replace_once(
        SEED_TEXT,
        '"metric": "latency", "statistic": "p80"',
        '"metric": "latency", "statistic": "p80", "metric": "latency"')
        .encode(), fields=['run.spec.measurements[1].metric'],
        words=['duplicate'], names=SEED_NAMES))
    p = protocol('dup-key-protocol')
    add(Case('duplicate_key_lone_protocol', replace_once(
        json.dumps(p),
        '"timer": "cuda_events"', '"timer": "cuda_events", "timer": "cupti"')
        .encode(), path='/benchmarkprotocols',
        fields=['spec.measurement.timer'], words=['duplicate'],
        names=[('benchmarkprotocols', 'dup-key-protocol')]))

    # -- bytes and numbers json-c would not keep --
    add(Case('invalid_utf8', replace_once(
        SEED_TEXT.encode(),
        b'Embedding lookup', b'Embedding \xff\xfe lookup'),
        words=['utf-8'], names=SEED_NAMES))
    add(Case('invalid_utf8_overlong', replace_once(
        SEED_TEXT.encode(),
        b'huggingface \\u00b7', b'huggingface \xc0\xaf'),
        words=['utf-8'], names=SEED_NAMES))
    for name, bad in [('invalid_utf8_overlong_3_bytes', b'\xe0\x80\xaf'),
                      ('invalid_utf8_encoded_surrogate', b'\xed\xa0\x80'),
                      ('invalid_utf8_above_u10ffff', b'\xf4\x90\x80\x80'),
                      ('invalid_utf8_f5_lead_byte', b'\xf5\x80\x80\x80'),
                      ('invalid_utf8_truncated_sequence', b'\xe2\x82')]:
        add(Case(name, replace_once(SEED_TEXT.encode(), b'Embedding lookup',
                                    b'Embedding ' + bad + b' lookup'),
                 words=['utf-8'], names=SEED_NAMES))
    add(Case('unescaped_control_character', replace_once(
        SEED_TEXT.encode(), b'Embedding lookup', b'Embedding\x01lookup'),
        words=['json'], names=SEED_NAMES))
    add(Case('lone_surrogate', replace_once(
        SEED_TEXT,
        'Embedding lookup', 'Embedding \\ud800 lookup').encode(),
        fields=['run.metadata.title'], words=['surrogate'],
        names=SEED_NAMES))
    median_raw = mut(put('run.spec.timing.latencyNs.median', '@RAW@'))
    add(Case('nesting_deeper_than_limit',
             raw_with(mut(put('run.metadata.annotations', {'x': '@RAW@'})),
                      '[' * 40 + ']' * 40),
             words=['deeper', '32'], names=SEED_NAMES))
    # NaN and Infinity are not JSON: a 400 for the syntax, or a 422 naming
    # the field that must be finite, are both precise answers.
    add(Case('nan_figure', raw_with(median_raw, 'NaN'), code=(400, 422),
             reason=('BadRequest', 'Invalid'),
             fields=['run.spec.timing.latencyNs.median'], names=SEED_NAMES))
    add(Case('infinity_figure', raw_with(median_raw, 'Infinity'), code=(400, 422),
             reason=('BadRequest', 'Invalid'),
             fields=['run.spec.timing.latencyNs.median'], names=SEED_NAMES))
    add(Case('negative_infinity_figure', raw_with(median_raw, '-Infinity'),
             code=(400, 422), reason=('BadRequest', 'Invalid'),
             fields=['run.spec.timing.latencyNs.median'], names=SEED_NAMES))
    add(Case('huge_integer_clamped',
             raw_with(median_raw, '123456789012345678901234567890'),
             fields=['run.spec.timing.latencyNs.median'], names=SEED_NAMES))
    add(Case('number_overflowing_double', raw_with(median_raw, '1e400'),
             code=422, reason='Invalid', words=['finite'],
             fields=['run.spec.timing.latencyNs.median'], names=SEED_NAMES))

    # -- limits and media types --
    big = mut(PAD_ANNOTATION)
    add(Case('body_over_max_body', big, code=413,
             reason='RequestEntityTooLarge', words=['4096'], where='small'))
    add(Case('body_over_max_body_chunked', big, code=413,
             reason='RequestEntityTooLarge', words=['4096'], where='small',
             chunked=True))
    add(Case('body_over_default_8mib',
             raw_with(mut(put('run.metadata.annotations', {'x': '@RAW@'})),
                      '"' + 'x' * (8 * 1024 * 1024) + '"'),
             code=413, reason='RequestEntityTooLarge', words=['8388608'],
             names=SEED_NAMES, raw_socket=True))
    add(Case('content_type_csv', SEED_TEXT.encode(), ctype='text/csv',
             code=415, reason='UnsupportedMediaType', words=['text/csv'],
             names=SEED_NAMES))
    add(Case('content_type_xml', SEED_TEXT.encode(), ctype='application/xml',
             code=415, reason='UnsupportedMediaType',
             words=['application/xml'], names=SEED_NAMES))
    add(Case('content_type_yaml_on_protocols',
             json.dumps(protocol('ct-yaml')).encode(),
             path='/benchmarkprotocols', ctype='text/plain', code=415,
             reason='UnsupportedMediaType', words=['text/plain'],
             names=[('benchmarkprotocols', 'ct-yaml')]))

    # -- kinds and versions --
    add(Case('unknown_kind', mut(put('kind', 'BenchmarkThing'),
                                 SEED['protocol']),
             path='/benchmarkprotocols', words=['benchmarkthing']))
    add(Case('unknown_kind_in_bundle', mut(put('run.kind', 'BenchmarkRuns')),
             words=['benchmarkruns'], names=SEED_NAMES[1:]))
    add(Case('wrong_api_version', mut(put('apiVersion', 'kernelindex.dev/v1'),
                                      SEED['protocol']),
             path='/benchmarkprotocols', words=['kernelindex.dev/v1']))
    add(Case('core_api_version', mut(put('apiVersion', 'v1'),
                                     SEED['protocol']),
             path='/benchmarkprotocols', words=['"v1"']))
    add(Case('missing_kind', mut(put('kind', DELETE), SEED['protocol']),
             path='/benchmarkprotocols', words=['kind'],
             names=[('benchmarkprotocols', PROTO_NAME)]))
    add(Case('bundle_to_protocols', SEED, path='/benchmarkprotocols',
             words=['bundle', 'benchmarkruns']))
    add(Case('protocol_to_environments', SEED['protocol'],
             path='/executionenvironments',
             words=['benchmarkprotocol', 'benchmarkprotocols']))
    add(Case('protocol_to_runs', SEED['protocol'],
             words=['benchmarkprotocol', 'benchmarkprotocols']))
    add(Case('bundle_part_of_wrong_kind',
             mut(put('protocol', SEED['environment'])),
             code=(400, 422), reason=('BadRequest', 'Invalid'),
             fields=['protocol.kind'], all_codes_have_fields=True,
             words=['executionenvironment', 'benchmarkprotocol']))
    add(Case('bundle_unknown_part', mut(put('extra', {'a': 1})),
             code=422, reason='Invalid', fields=['extra']))

    # -- metadata --
    def run_meta(field, value):
        return mut(put('run.metadata.' + field, value))
    add(Case('name_uppercase', run_meta('name', 'Liger-Embedding'),
             code=422, reason='Invalid', fields=['run.metadata.name'],
             words=['liger-embedding', 'lower case']))
    add(Case('name_too_long', mut(put('metadata.name', 'a' * 254),
                                  SEED['protocol']),
             path='/benchmarkprotocols', code=422, reason='Invalid',
             fields=['metadata.name'], words=['253']))
    add(Case('name_leading_dash', run_meta('name', '-liger'), code=422,
             reason='Invalid', fields=['run.metadata.name']))
    add(Case('name_underscore', run_meta('name', 'liger_embedding'),
             code=422, reason='Invalid', fields=['run.metadata.name']))
    add(Case('name_with_slash', mut(put('metadata.name', 'a/b'),
                                    SEED['protocol']),
             path='/benchmarkprotocols', code=422, reason='Invalid',
             fields=['metadata.name']))
    add(Case('name_missing', mut(put('run.metadata.name', DELETE)),
             code=422, reason='Invalid', fields=['run.metadata.name'],
             words=['required']))
    add(Case('name_not_a_string', run_meta('name', 42), code=422,
             reason='Invalid', fields=['run.metadata.name'],
             words=['string']))
    add(Case('metadata_missing', mut(put('metadata', DELETE),
                                     SEED['protocol']),
             path='/benchmarkprotocols', code=422, reason='Invalid',
             fields=['metadata'], words=['required']))
    add(Case('label_key_bad', run_meta('labels', {'bad key!': 'x'}),
             code=422, reason='Invalid',
             fields=[('run.metadata.labels', 'run.metadata.labels.bad key!')],
             words=['bad key!']))
    add(Case('label_key_bad_prefix', run_meta('labels', {'Example.COM/a': 'x'}),
             code=422, reason='Invalid',
             fields=[('run.metadata.labels',
                      'run.metadata.labels.Example.COM/a')]))
    add(Case('label_value_bad', run_meta('labels', {'liger_version': '-0.2-'}),
             code=422, reason='Invalid',
             fields=['run.metadata.labels.liger_version'], words=['-0.2-']))
    add(Case('label_value_too_long', run_meta('labels', {'v': 'a' * 64}),
             code=422, reason='Invalid', fields=['run.metadata.labels.v'],
             words=['63']))
    add(Case('label_value_not_string', run_meta('labels', {'v': 1}),
             code=422, reason='Invalid', fields=['run.metadata.labels.v'],
             words=['string']))
    add(Case('too_many_labels', run_meta('labels', {
        'l%d' % i: 'v' for i in range(65)}), code=422, reason='Invalid',
        fields=['run.metadata.labels'], words=['64']))
    add(Case('title_not_string', run_meta('title', ['a']), code=422,
             reason='Invalid', fields=['run.metadata.title']))

    # -- wrong types --
    add(Case('string_for_number',
             mut(put('run.spec.timing.latencyNs.median', '7489376')),
             code=422, reason='Invalid',
             fields=['run.spec.timing.latencyNs.median'], words=['number']))
    add(Case('number_for_string', mut(put('run.spec.status', 1)), code=422,
             reason='Invalid', fields=['run.spec.status'], words=['string']))
    add(Case('object_for_array', mut(put('run.spec.measurements', {})),
             code=422, reason='Invalid', fields=['run.spec.measurements'],
             words=['array']))
    add(Case('null_for_required', mut(put('run.spec.observedAt', None)),
             code=422, reason='Invalid', fields=['run.spec.observedAt'],
             words=['null']))
    add(Case('spec_not_object', mut(put('spec', []), SEED['protocol']),
             path='/benchmarkprotocols', code=422, reason='Invalid',
             fields=['spec'], words=['object']))
    add(Case('fraction_for_integer', protocol(
        'frac-reps', measurement={'timer': 'cuda_events',
                                  'primaryStatistic': 'median',
                                  'repetitions': 2.5}),
        path='/benchmarkprotocols', code=422, reason='Invalid',
        fields=['spec.measurement.repetitions'], words=['integer']))
    add(Case('string_for_boolean', protocol(
        'str-bool', measurement={'timer': 'cuda_events',
                                 'primaryStatistic': 'median',
                                 'l2Flush': 'yes'}),
        path='/benchmarkprotocols', code=422, reason='Invalid',
        fields=['spec.measurement.l2Flush'], words=['boolean']))

    # -- required fields --
    add(Case('missing_spec', mut(put('run.spec', DELETE)), code=422,
             reason='Invalid', fields=['run.spec'], words=['required']))
    add(Case('missing_observed_at', mut(put('run.spec.observedAt', DELETE)),
             code=422, reason='Invalid', fields=['run.spec.observedAt'],
             words=['required']))
    # A bundle's run may leave out the digest of a part it carries (the
    # server fills it in), not of one it does not: the seed has no workload.
    add(Case('missing_digest_of_a_part_not_bundled',
             mut(put('run.spec.workloadDigest', DELETE)), code=422,
             reason='Invalid', fields=['run.spec.workloadDigest'],
             words=['required']))
    add(Case('missing_timer', mut(put('protocol.spec.measurement.timer',
                                      DELETE)),
             code=422, reason='Invalid',
             fields=['protocol.spec.measurement.timer'], words=['required']))
    add(Case('missing_hardware_product',
             mut(put('spec.hardware.product', DELETE), SEED['environment']),
             path='/executionenvironments', code=422, reason='Invalid',
             fields=['spec.hardware.product'], words=['required']))
    add(Case('missing_workload_kernel', mut(put('spec.kernel', DELETE),
                                            workload('wl-no-kernel')),
             path='/workloads', code=422, reason='Invalid',
             fields=['spec.kernel'], words=['required']))

    # -- enumerations --
    add(Case('unsupported_status', mut(put('run.spec.status', 'ok')),
             code=422, reason='Invalid', fields=['run.spec.status'],
             words=['"ok"', 'passed']))
    add(Case('unsupported_timer',
             mut(put('protocol.spec.measurement.timer', 'stopwatch')),
             code=422, reason='Invalid',
             fields=['protocol.spec.measurement.timer'],
             words=['stopwatch', 'cuda_events']))
    add(Case('unsupported_unit',
             mut(put('run.spec.measurements[0].unit', 'parsecs')),
             code=422, reason='Invalid',
             fields=['run.spec.measurements[0].unit'], words=['parsecs']))
    add(Case('unsupported_statistic',
             mut(put('run.spec.measurements[0].statistic', 'p42')),
             code=422, reason='Invalid',
             fields=['run.spec.measurements[0].statistic'], words=['p42']))
    add(Case('unsupported_primary_statistic',
             mut(put('run.spec.timing.primaryStatistic', 'average')),
             code=422, reason='Invalid',
             fields=['run.spec.timing.primaryStatistic'], words=['average']))
    add(Case('unsupported_metric',
             mut(put('run.spec.measurements[1].metric', 'speed')),
             code=422, reason='Invalid',
             fields=['run.spec.measurements[1].metric'], words=['speed']))
    add(Case('unsupported_vendor',
             mut(put('environment.spec.hardware.vendor', 'acme')),
             code=422, reason='Invalid',
             fields=['environment.spec.hardware.vendor'], words=['acme']))
    add(Case('unsupported_pass', workload('wl-bad-pass', **{'pass': 'sideways'}),
             path='/workloads', code=422, reason='Invalid',
             fields=['spec.pass'], words=['sideways', 'forward']))
    add(Case('unsupported_dtype', workload('wl-bad-dtype', dtype='float7'),
             path='/workloads', code=422, reason='Invalid',
             fields=['spec.dtype'], words=['float7']))

    # -- figures --
    add(Case('negative_median',
             mut(chain(put('run.spec.timing.latencyNs.median', -7489376),
                       put('run.spec.sourceNative.metrics.ms_50',
                           -7.489376068115234))),
             code=422, reason='Invalid',
             fields=['run.spec.timing.latencyNs.median'], words=['0']))
    add(Case('negative_measurement',
             mut(chain(put('run.spec.measurements[0].value', -1),
                       put('run.spec.sourceNative.metrics', {}))),
             code=422, reason='Invalid',
             fields=['run.spec.measurements[0].value'], words=['0']))
    add(Case('negative_protocol_warmup', protocol(
        'neg-warmup', measurement={'timer': 'cuda_events',
                                   'primaryStatistic': 'median',
                                   'warmupMs': -25}),
        path='/benchmarkprotocols', code=422, reason='Invalid',
        fields=['spec.measurement.warmupMs'], words=['0']))
    add(Case('quantiles_p20_above_median',
             mut(chain(put('run.spec.measurements[0].value', 7500000),
                       put('run.spec.sourceNative.metrics.ms_20', 7.5))),
             code=422, reason='Invalid',
             fields=[('run.spec.measurements[0].value',
                      'run.spec.timing.latencyNs.median')],
             words=['ordered']))
    add(Case('quantiles_median_above_p80',
             mut(chain(put('run.spec.measurements[1].value', 7400000),
                       put('run.spec.sourceNative.metrics.ms_80', 7.4))),
             code=422, reason='Invalid',
             fields=[('run.spec.timing.latencyNs.median',
                      'run.spec.measurements[1].value')],
             words=['ordered']))
    add(Case('quantiles_unordered_in_latency_ns',
             mut(chain(put('run.spec.timing.latencyNs',
                           {'median': 7489376, 'p20': 7600000,
                            'p80': 7520378}),
                       put('run.spec.measurements', []),
                       put('run.spec.sourceNative.metrics', {}))),
             code=422, reason='Invalid',
             fields=[('run.spec.timing.latencyNs.p20',
                      'run.spec.timing.latencyNs.median')],
             words=['ordered']))
    add(Case('unit_not_of_metric',
             mut(put('run.spec.measurements[0].unit', 'bytes')),
             code=422, reason='Invalid',
             fields=['run.spec.measurements[0].unit'],
             words=['bytes', 'latency']))
    add(Case('source_native_inconsistent',
             mut(put('run.spec.sourceNative.metrics.ms_50', 8.0)),
             code=422, reason='Invalid',
             fields=['run.spec.sourceNative.metrics.ms_50'],
             words=['ms_50']))
    add(Case('source_native_inconsistent_quantile',
             mut(put('run.spec.sourceNative.metrics.ms_80', 8.0)),
             code=422, reason='Invalid',
             fields=['run.spec.sourceNative.metrics.ms_80'],
             words=['ms_80', 'measurements[1].value']))
    add(Case('primary_statistic_absent',
             mut(put('run.spec.timing.primaryStatistic', 'mean')),
             code=422, reason='Invalid',
             fields=['run.spec.timing.primaryStatistic'], words=['mean']))

    # -- digests --
    dg = SEED['run']['spec']['workloadDigest']
    add(Case('digest_uppercase_hex',
             mut(put('run.spec.workloadDigest', 'sha256:' + dg[7:].upper())),
             code=422, reason='Invalid', fields=['run.spec.workloadDigest'],
             words=['lowercase']))
    add(Case('digest_wrong_length',
             mut(put('run.spec.implementationDigest', dg[:-2])),
             code=422, reason='Invalid',
             fields=['run.spec.implementationDigest'], words=['64']))
    add(Case('digest_without_prefix',
             mut(put('run.spec.workloadDigest', dg[7:])),
             code=422, reason='Invalid', fields=['run.spec.workloadDigest'],
             words=['sha256:']))
    add(Case('digest_other_algorithm',
             mut(put('run.spec.workloadDigest', 'md5:' + dg[7:39])),
             code=422, reason='Invalid', fields=['run.spec.workloadDigest']))
    t, got, want = tampered('protocol', 'protocol.spec.measurement.timer',
                            'wall_clock')
    add(Case('tampered_protocol', t, code=422, reason='Invalid',
             fields=['run.spec.protocolDigest'], words=[got, want]))
    t, got, want = tampered('environment',
                            'environment.spec.hardware.product',
                            'NVIDIA H100')
    add(Case('tampered_environment', t, code=422, reason='Invalid',
             fields=['run.spec.environmentDigest'], words=[got, want]))
    t = mut(chain(put('protocol.spec.measurement.timer', 'wall_clock'),
                  put('environment.spec.hardware.product', 'NVIDIA H100')))
    add(Case('tampered_protocol_and_environment', t, code=422,
             reason='Invalid', fields=['run.spec.protocolDigest',
                                       'run.spec.environmentDigest'],
             words=[digest(t['protocol']), digest(t['environment'])]))
    env_dg = digest(SENTINEL_ENV)
    add(Case('reference_names_other_kind',
             lone_run(**{'spec.protocolDigest': env_dg,
                         'metadata.name': 'run-naming-an-environment'}),
             code=422, reason='Invalid', fields=['spec.protocolDigest'],
             words=['executionenvironment', 'benchmarkprotocol']))

    # -- timestamps --
    for name, ts in [('observed_at_with_space', '2024-09-03 15:33:28'),
                     ('observed_at_february_30', '2024-02-30T00:00:00Z'),
                     ('observed_at_without_zone', '2024-09-03T15:33:28'),
                     ('observed_at_hour_25', '2024-09-03T25:00:00Z'),
                     ('observed_at_epoch_number', 1725377608)]:
        add(Case(name, mut(put('run.spec.observedAt', ts)), code=422,
                 reason='Invalid', fields=['run.spec.observedAt'],
                 words=['rfc 3339'] if isinstance(ts, str) else ['string']))

    # -- query parameters --
    add(Case('strict_unknown_field',
             mut(put('spec.measurement.stopwatch', True), SEED['protocol']),
             path='/benchmarkprotocols?fieldValidation=Strict',
             fields=['spec.measurement.stopwatch'],
             words=['unknown field', 'spec.measurement.stopwatch']))
    add(Case('strict_unknown_field_in_bundle',
             mut(put('run.spec.gpuCount', 8)),
             path='/benchmarkruns?fieldValidation=Strict',
             fields=['run.spec.gpuCount'],
             words=['unknown field', 'run.spec.gpuCount']))
    add(Case('invalid_field_validation', SEED['protocol'],
             path='/benchmarkprotocols?fieldValidation=Loose',
             words=['fieldvalidation', 'loose']))
    add(Case('invalid_dry_run', SEED['protocol'],
             path='/benchmarkprotocols?dryRun=true', words=['dryrun']))
    add(Case('invalid_atomic', SEED, path='/benchmarkruns?atomic=maybe',
             words=['atomic']))
    add(Case('invalid_limit', None, method='GET',
             path='/benchmarkprotocols?limit=ten', words=['limit']))
    add(Case('negative_limit', None, method='GET',
             path='/benchmarkprotocols?limit=-1', words=['limit']))
    add(Case('malformed_continue', None, method='GET',
             path='/benchmarkprotocols?continue=%21%21%21',
             words=['continue']))
    # "i:1" then a byte outside base64url: the whole token must decode.
    add(Case('partial_continue', None, method='GET',
             path='/benchmarkprotocols?continue=aTox%21', words=['continue']))
    # "i:172": an id that is not a protocol's (the kind is its top byte).
    add(Case('foreign_continue', None, method='GET',
             path='/benchmarkprotocols?continue=aToxNzI', words=['continue']))
    # "n:foo": a name-ordered token of the earlier store format.
    add(Case('old_format_continue', None, method='GET',
             path='/benchmarkprotocols?continue=bjpmb28', code=410,
             reason='Expired', words=['older version']))

    # -- paths and methods --
    add(Case('unknown_path', None, method='GET', path='/no/such/path',
             code=404, reason='NotFound'))
    add(Case('unknown_resource', None, method='GET', path='/benchmarkrunz',
             code=404, reason='NotFound'))
    add(Case('unknown_group', None, method='GET',
             path='/apis/example.com/v1/benchmarkruns', code=404,
             reason='NotFound'))
    add(Case('unknown_version', None, method='GET',
             path='/apis/kernelindex.dev/v1/benchmarkruns', code=404,
             reason='NotFound'))
    add(Case('post_to_unknown_resource', SEED, path='/benchmarkrunz',
             code=404, reason='NotFound', names=SEED_NAMES))
    add(Case('item_subpath', None, method='GET',
             path='/benchmarkprotocols/a/b', code=404, reason='NotFound'))
    add(Case('get_missing_object', None, method='GET',
             path='/benchmarkprotocols/no-such-protocol', code=404,
             reason='NotFound', words=['no-such-protocol']))
    add(Case('delete_missing_object', None, method='DELETE',
             path='/benchmarkprotocols/no-such-protocol', code=404,
             reason='NotFound', words=['no-such-protocol']))
    add(Case('get_missing_digest', None, method='GET',
             path='/objects/sha256:' + '0' * 64, code=404,
             reason='NotFound'))
    add(Case('get_missing_digest_if_none_match', None, method='GET',
             path='/objects/sha256:' + '1' * 64, code=404,
             reason='NotFound', headers={
                 'If-None-Match': '"sha256:%s"' % ('1' * 64)}))
    add(Case('get_missing_digest_if_none_match_star', None, method='GET',
             path='/objects/sha256:' + '2' * 64, code=404,
             reason='NotFound', headers={'If-None-Match': '*'}))
    add(Case('get_malformed_digest', None, method='GET',
             path='/objects/sha256:' + 'A' * 64, words=['digest']))
    add(Case('put_on_collection', SEED['protocol'], method='PUT',
             path='/benchmarkprotocols', code=405,
             reason='MethodNotAllowed', words=['put']))
    add(Case('patch_on_collection', SEED['protocol'], method='PATCH',
             path='/benchmarkprotocols', code=405,
             reason='MethodNotAllowed', words=['patch']))
    add(Case('post_on_item', SEED['protocol'], method='POST',
             path='/benchmarkprotocols/' + PROTO_NAME, code=405,
             reason='MethodNotAllowed', words=['post']))
    add(Case('post_on_objects', SEED['protocol'], method='POST',
             path='/objects/' + SEED['run']['spec']['protocolDigest'],
             code=405, reason='MethodNotAllowed'))

    # -- several problems in one document: all reported at once --
    add(Case('run_with_five_problems', mut(chain(
        put('run.metadata.name', 'Bad_Name'),
        put('run.spec.status', 'finished'),
        put('run.spec.observedAt', 'yesterday'),
        put('run.spec.workloadDigest', 'sha256:xyz'),
        put('run.metadata.labels', {'liger_version': '0.2.1!'}))),
        code=422, reason='Invalid',
        fields=['run.metadata.name', 'run.spec.status',
                'run.spec.observedAt', 'run.spec.workloadDigest',
                'run.metadata.labels.liger_version']))
    add(Case('problems_in_every_bundle_part', mut(chain(
        put('run.spec.measurements[0].unit', 'bytes'),
        put('protocol.spec.measurement.timer', 'sundial'),
        put('environment.spec.hardware.vendor', 'acme'),
        put('environment.metadata.name', 'ENV'))),
        code=422, reason='Invalid',
        fields=['run.spec.measurements[0].unit',
                'protocol.spec.measurement.timer',
                'environment.spec.hardware.vendor',
                'environment.metadata.name']))
    add(Case('protocol_with_three_problems', protocol(
        'three-problems', harness='', measurement={
            'timer': 'hourglass', 'primaryStatistic': 'mode',
            'repetitions': -3}),
        path='/benchmarkprotocols', code=422, reason='Invalid',
        fields=['spec.harness.name', 'spec.measurement.timer',
                'spec.measurement.primaryStatistic',
                'spec.measurement.repetitions']))
    add(Case('list_without_items', {'apiVersion': 'v1', 'kind': 'List'},
             code=422, reason='Invalid', fields=['items']))
    add(Case('atomic_list_with_one_bad_item', {
        'apiVersion': 'v1', 'kind': 'List', 'items': [
            protocol('atomic-good-1', harness='g1'),
            protocol('atomic-bad', timer='sundial'),
            protocol('atomic-good-2', harness='g2')]},
        path='/benchmarkruns?atomic=true', code=422, reason='Invalid',
        fields=['items[1].spec.measurement.timer']))
    return C


def send_case(d, c):
    body = c.payload()
    if c.raw_socket:
        h = dict(c.headers, **{'Content-Type': c.ctype})
        r = d.raw_request(c.method, c.path, body or b'', headers=h)
        check(r is not None, 'no answer at all (the connection was closed)')
        return r
    if c.chunked:
        chunks = [body[i:i + 1000] for i in range(0, len(body), 1000)]
        return d.request(c.method, c.path, body=iter(chunks),
                         content_type=c.ctype, headers=c.headers)
    return d.request(c.method, c.path, body=body, headers=c.headers,
                     content_type=c.ctype if body is not None else None)


def check_case(d, c):
    before = snapshot(d)
    r = send_case(d, c)
    want_fields = c.fields
    if isinstance(c.code, tuple):
        st = status_of(r)
        pairs = list(zip(c.code, c.reason))
        check((r.status, st.get('reason')) in pairs,
              'status %d %s, want one of %s (body %r)' % (
                  r.status, st.get('reason'), pairs, r.body[:600]))
        if r.status != 422 and not c.all_codes_have_fields:
            want_fields = []
    else:
        st = status_of(r, c.code, c.reason)
    fields = cause_fields(st)
    for f in want_fields:
        choices = f if isinstance(f, tuple) else (f,)
        check(any(x in fields for x in choices),
              'details.causes has no field %s; causes: %s; message: %s' %
              (' or '.join(choices), json.dumps(kitest.causes(st)),
               st.get('message')))
    text = status_text(st)
    for w in c.words:
        check(w.lower() in text, 'the Status does not mention %r: %s' %
              (w, json.dumps(st)[:1500]))
    # Nothing changed: same resourceVersion, same objects, and nothing the
    # rejected body named exists.
    after = snapshot(d)
    for plural in before:
        eq(after[plural], before[plural],
           'the %s list after a rejected request' % plural)
    for plural, name in c.objects():
        if (plural, name) == ('executionenvironments',
                              SENTINEL_ENV['metadata']['name']):
            continue
        g = get_name(d, plural, name)
        eq(g.status, 404, '%s/%s after the rejected request' % (plural, name))


@test
def malformed_inputs_rejected_and_store_unchanged():
    cs = cases()
    names = [c.name for c in cs]
    eq(len(names), len(set(names)), 'case names are distinct')
    check(len(cs) >= 45, 'at least 45 cases, got %d' % len(cs))
    failures = []
    for c in cs:
        d = small_daemon() if c.where == 'small' else malformed_daemon()
        try:
            check_case(d, c)
        except (TestFailure, OSError) as e:
            failures.append('%s: %s' % (c.name, e))
            # a case that changed the store must not spoil the next ones
            d.stop()
    print('      %d malformed cases, %d failed' % (len(cs), len(failures)))
    if failures:
        raise TestFailure('\n'.join(failures))


# ---------------------------------------------------------------- good paths


@test
def seed_created_then_unchanged_and_read_back():
    d = fresh()
    r = d.post(G + '/benchmarkruns', SEED)
    eq(r.status, 201, 'first seed POST (%r)' % r)
    j = r.json()
    eq(j.get('kind'), 'UploadResult', 'the answer to a bundle')
    eq(j['summary'], {'created': 3, 'unchanged': 0, 'failed': 0}, 'summary')
    rv1 = d.list_rv('benchmarkruns')
    r = d.post(G + '/benchmarkruns', SEED)
    eq(r.status, 200, 'identical seed POST (%r)' % r)
    eq(r.json()['summary'], {'created': 0, 'unchanged': 3, 'failed': 0},
       'summary of the identical POST')
    eq(d.list_rv('benchmarkruns'), rv1, 'resourceVersion after a no-op')
    # A third time: whichever request threads took the three, one of them
    # took two, and took the protocol and environment from memory.
    eq(d.post(G + '/benchmarkruns', SEED).status, 200, 'a third seed POST')
    check(metric(d, 'kernelindex_bundle_parts_remembered_total') >= 2,
          'bundle parts remembered (/metrics)')
    for part, plural in [('run', 'benchmarkruns'),
                         ('protocol', 'benchmarkprotocols'),
                         ('environment', 'executionenvironments')]:
        obj = SEED[part]
        name = obj['metadata']['name']
        lst = d.get('%s/%s' % (G, plural)).json()
        eq(lst['kind'], obj['kind'] + 'List', 'list kind')
        eq([i['metadata']['name'] for i in lst['items']], [name],
           '%s list after two identical POSTs' % plural)
        r = get_name(d, plural, name)
        eq(r.status, 200, 'GET %s/%s' % (plural, name))
        got = r.json()
        eq(got['spec'], obj['spec'], '%s spec read back by name' % part)
        eq(got['kind'], obj['kind'], 'kind')
        eq(got['apiVersion'], obj['apiVersion'], 'apiVersion')
        eq(got['metadata']['name'], name, 'name')
        if 'title' in obj['metadata']:
            eq(got['metadata']['title'], obj['metadata']['title'], 'title')
        for k in ('uid', 'creationTimestamp', 'resourceVersion'):
            check(got['metadata'].get(k), 'metadata.%s is set' % k)
        dg = digest(obj)
        eq(got.get('status', {}).get('digest'), dg, 'status.digest')
        r = d.get('%s/objects/%s' % (G, dg))
        eq(r.status, 200, 'GET objects/%s' % dg)
        eq('sha256:' + hashlib.sha256(r.body).hexdigest(), dg,
           'SHA-256 of the body served by digest')
        eq(r.body, canonical_bytes(obj), 'the canonical JCS bytes')
        eq(r.json()['spec'], obj['spec'], 'spec read back by digest')
        etag = r.headers.get('ETag') or ''
        check(dg[7:] in etag, 'ETag %r contains the digest' % etag)
        cc = r.headers.get('Cache-Control') or ''
        check('immutable' in cc, 'Cache-Control %r is immutable' % cc)
        r = d.get('%s/objects/%s' % (G, dg), headers={'If-None-Match': etag})
        eq(r.status, 304, 'If-None-Match with the ETag')
        eq(r.body, b'', 'a 304 has no body')
    run = get_name(d, 'benchmarkruns', RUN_NAME).json()
    refs = run['status']['references']
    eq(refs['protocol']['resolved'], True, 'protocol reference resolved')
    eq(refs['environment']['resolved'], True, 'environment resolved')
    eq(refs['workload']['resolved'], False, 'workload unresolved')
    d.stop()


@test
def lone_protocol_location_identity_and_conflicts():
    d = fresh()
    p = protocol('lone-protocol', harness='lone')
    r = d.post(G + '/benchmarkprotocols', p)
    eq(r.status, 201, 'first POST (%r)' % r)
    loc = r.headers.get('Location') or ''
    eq(loc, G + '/benchmarkprotocols/lone-protocol', 'Location header')
    path = urllib.parse.urlparse(loc).path if '://' in loc else loc
    g = d.get(path)
    eq(g.status, 200, 'GET the Location')
    eq(g.json()['spec'], p['spec'], 'spec at the Location')
    eq(r.json()['spec'], p['spec'], 'the answer is the object')
    rv = d.list_rv('benchmarkprotocols')
    r = d.post(G + '/benchmarkprotocols', p)
    eq(r.status, 200, 'identical POST')
    eq(r.headers.get('Location'), None, 'Location when nothing was created')
    dry = protocol('dry-protocol', harness='dry')
    r = d.post(G + '/benchmarkprotocols?dryRun=All', dry)
    eq(r.status, 201, 'dry-run POST')
    eq(r.headers.get('Location'), G + '/benchmarkprotocols/dry-protocol',
       'Location of a dry run')
    eq(d.list_rv('benchmarkprotocols'), rv, 'rv after an identical POST')
    # the same content under another name is the same object
    q = mut(put('metadata.name', 'lone-protocol-alias'), p)
    r = d.post(G + '/benchmarkprotocols', q)
    eq(r.status, 200, 'same content, other name')
    eq(r.json()['metadata']['name'], 'lone-protocol',
       'the answer names the existing object')
    items = d.get(G + '/benchmarkprotocols').json()['items']
    eq([i['metadata']['name'] for i in items], ['lone-protocol'],
       'one protocol after the alias POST')
    eq(get_name(d, 'benchmarkprotocols', 'lone-protocol-alias').status, 404,
       'no second name for the same content')
    # the same name with other content
    o = mut(put('spec.measurement.timer', 'cupti'), p)
    r = d.post(G + '/benchmarkprotocols', o)
    st = status_of(r, 409, 'AlreadyExists')
    eq(r.headers.get('Location'), None, 'Location of a 409')
    check('lone-protocol' in st['message'], 'the 409 names the object: %s' %
          st['message'])
    eq(d.list_rv('benchmarkprotocols'), rv, 'rv after the 409')
    eq(get_name(d, 'benchmarkprotocols', 'lone-protocol').json()['spec'],
       p['spec'], 'the stored spec is unchanged after the 409')
    # a bundle whose run conflicts leaves none of its new parts behind
    r = d.post(G + '/benchmarkruns', SEED)
    eq(r.status, 201, 'seed POST')
    rv = d.list_rv('benchmarkruns')
    b = mut(chain(put('run.spec.status', 'failed'),
                  put('protocol', protocol('fresh-part', harness='fresh')),
                  put('run.spec.protocolDigest',
                      digest(protocol('fresh-part', harness='fresh')))))
    r = d.post(G + '/benchmarkruns', b)
    status_of(r, 409, 'AlreadyExists')
    eq(d.list_rv('benchmarkruns'), rv, 'rv after a conflicting bundle')
    eq(get_name(d, 'benchmarkprotocols', 'fresh-part').status, 404,
       'the new protocol of a conflicting bundle')
    # natural key: same source row, other name and content
    n = mut(chain(put('run.metadata.name', 'another-name-same-row'),
                  put('run.spec.status', 'failed')))
    r = d.post(G + '/benchmarkruns', n)
    st = status_of(r, 409)
    check(st.get('reason') in ('AlreadyExists', 'Conflict'),
          'natural-key reason %r' % st.get('reason'))
    check(RUN_NAME in st['message'] or 'externalid' in st['message'].lower()
          or SEED['run']['spec']['sourceNative']['externalId']
          in st['message'], 'the 409 says which row: %s' % st['message'])
    eq(get_name(d, 'benchmarkruns', 'another-name-same-row').status, 404,
       'the natural-key conflict stored nothing')
    eq(d.list_rv('benchmarkruns'), rv, 'rv after the natural-key 409')
    # natural key, identical content under another name: unchanged
    n = mut(put('run.metadata.name', 'another-name-same-content'))
    r = d.post(G + '/benchmarkruns', n)
    eq(r.status, 200, 'same source row and content, other name (%r)' % r)
    eq(d.list_rv('benchmarkruns'), rv, 'rv after the identical row')
    d.stop()


@test
def list_upload_reports_each_item():
    d = fresh()
    # a List of protocols to their collection
    lst = {'apiVersion': 'v1', 'kind': 'List', 'items': [
        protocol('list-p1', harness='l1'),
        protocol('list-p2', harness='l2'),
        protocol('list-bad', timer='sundial'),
        protocol('list-p3', harness='l3'),
    ]}
    r = d.post(G + '/benchmarkprotocols', lst)
    eq(r.status, 201, 'List POST (%r)' % r)
    j = r.json()
    eq(j['kind'], 'UploadResult', 'kind')
    eq(j['summary'], {'created': 3, 'unchanged': 0, 'failed': 1}, 'summary')
    eq([(i['index'], i['result']) for i in j['items']],
       [(0, 'created'), (1, 'created'), (2, 'failed'), (3, 'created')],
       'per-item results')
    for i in (0, 1, 3):
        eq(j['items'][i]['name'], lst['items'][i]['metadata']['name'],
           'item %d name' % i)
        eq(j['items'][i]['digest'], digest(lst['items'][i]),
           'item %d digest' % i)
        eq(get_name(d, 'benchmarkprotocols', j['items'][i]['name']).status,
           200, 'item %d stored' % i)
    st = j['items'][2]['status']
    eq(st.get('code'), 422, 'code of the bad item')
    eq(st.get('reason'), 'Invalid', 'reason of the bad item')
    check('items[2].spec.measurement.timer' in cause_fields(st),
          'cause of the bad item: %r' % st)
    eq(get_name(d, 'benchmarkprotocols', 'list-bad').status, 404,
       'the bad item is not stored')
    # the same List again: every good item unchanged
    r = d.post(G + '/benchmarkprotocols', lst)
    eq(r.status, 200, 'the same List again (%r)' % r)
    eq(r.json()['summary'], {'created': 0, 'unchanged': 3, 'failed': 1},
       'summary of the same List again')
    # a List of bundles and runs to benchmarkruns: parts reported per item
    bad = mut(put('run.spec.status', 'exploded'), bundle(9))
    lst = {'apiVersion': 'v1', 'kind': 'List',
           'items': [bundle(1), SEED, bad]}
    r = d.post(G + '/benchmarkruns', lst)
    eq(r.status, 201, 'List of bundles (%r)' % r)
    j = r.json()
    eq(j['summary'], {'created': 6, 'unchanged': 0, 'failed': 1}, 'summary')
    by_index = {}
    for it in j['items']:
        by_index.setdefault(it['index'], []).append(it)
    eq(sorted(by_index), [0, 1, 2], 'indexes of the items')
    for i in (0, 1):
        eq(sorted(x['part'] for x in by_index[i]),
           ['environment', 'protocol', 'run'], 'item %d has its parts' % i)
        eq(set(x['result'] for x in by_index[i]), {'created'},
           'item %d created' % i)
        for x in by_index[i]:
            eq(x['digest'], digest(lst['items'][i][x['part']]),
               'item %d %s digest' % (i, x['part']))
    eq([x['result'] for x in by_index[2]], ['failed'], 'item 2 failed')
    check('items[2].run.spec.status' in cause_fields(by_index[2][0]['status']),
          'cause of item 2: %r' % by_index[2][0]['status'])
    for plural, name in [('benchmarkruns', 'nd-run-1'),
                         ('benchmarkprotocols', 'nd-proto-1'),
                         ('executionenvironments', 'nd-env-1')] + SEED_NAMES:
        eq(get_name(d, plural, name).status, 200, '%s/%s stored' %
           (plural, name))
    for plural, name in [('benchmarkruns', 'nd-run-9'),
                         ('benchmarkprotocols', 'nd-proto-9'),
                         ('executionenvironments', 'nd-env-9')]:
        eq(get_name(d, plural, name).status, 404,
           '%s/%s of the failed item' % (plural, name))
    d.stop()


@test
def concurrent_creates_of_one_name():
    d = fresh()
    results = []
    lock = threading.Lock()

    def one(i):
        r = d.post(G + '/benchmarkprotocols',
                   protocol('contested', harness='writer %d' % i))
        with lock:
            results.append((r.status, i, r))
    ts = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    codes = sorted(s for s, _, _ in results)
    eq(codes, [201] + [409] * 7, 'one create wins, the others conflict')
    for s, _, r in results:
        if s == 409:
            status_of(r, 409, 'AlreadyExists')
    winner = [i for s, i, _ in results if s == 201][0]
    got = get_name(d, 'benchmarkprotocols', 'contested').json()
    eq(got['spec']['harness']['name'], 'writer %d' % winner,
       'the stored content is the winner\'s')
    d.stop()


def metric(d, name):
    for line in d.get('/metrics').body.decode().splitlines():
        if line.startswith(name + ' '):
            return float(line.split()[1])
    raise TestFailure('no %s in /metrics' % name)


@test
def bundle_failing_after_its_first_write_among_concurrent_writes():
    """A bundle whose run names its own protocol part as its environment
    passes every check before the first write, and fails after the protocol
    is written. With other writes in the same batches, it must leave
    nothing behind, and they must all land."""
    d = Daemon().start()
    eq(d.post(G + '/benchmarkruns', SEED).status, 201, 'the seed')
    p2 = copy.deepcopy(SEED['protocol'])
    p2['metadata']['name'] = 'proto-own-env'
    p2['spec']['comparability']['notes'] += ' Another.'
    r = d.post(G + '/benchmarkprotocols?dryRun=All', p2)
    eq(r.status, 201, 'dry run of the protocol')
    d2 = r.json()['status']['digest']
    eq(d2, digest(p2), 'its digest')
    bad = copy.deepcopy(SEED)
    del bad['environment']
    bad['protocol'] = p2
    bad['run']['metadata']['name'] = 'run-own-env'
    bad['run']['spec']['sourceNative']['externalId'] += '/own-env'
    bad['run']['spec']['protocolDigest'] = d2
    bad['run']['spec']['environmentDigest'] = d2
    redone0 = metric(d, 'kernelindex_commit_redone_total')
    results, lock = [], threading.Lock()

    def good(i):
        g = copy.deepcopy(SEED)
        g['run']['metadata']['name'] = 'run-good-%d' % i
        g['run']['spec']['sourceNative']['externalId'] += '/good-%d' % i
        r = d.post(G + '/benchmarkruns', g)
        with lock:
            results.append(('good', r))

    def failing(i):
        r = d.post(G + '/benchmarkruns', bad)
        with lock:
            results.append(('bad', r))
    ts = [threading.Thread(target=good, args=(i,)) for i in range(40)]
    ts += [threading.Thread(target=failing, args=(i,)) for i in range(4)]
    random.Random(7).shuffle(ts)
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    eq(sorted(r.status for k, r in results if k == 'good'), [201] * 40,
       'every other write landed')
    for k, r in results:
        if k == 'bad':
            status_of(r, 422, 'Invalid')
            check('environmentDigest' in r.json()['message'],
                  'the Status names the field: %r' % r.json()['message'])
    eq(get_name(d, 'benchmarkprotocols', 'proto-own-env').status, 404,
       'the failing bundle\'s protocol is not stored')
    eq(get_name(d, 'benchmarkruns', 'run-own-env').status, 404,
       'nor its run')
    items, _ = list_all(d, 'benchmarkruns')
    names = [o['metadata']['name'] for o in items]
    eq(len(names), 41, 'the seed\'s run and the 40 others')
    # A batch holding a failing bundle runs again once, every request in a
    # transaction of its own; a second failing bundle in it fails there.
    check(metric(d, 'kernelindex_commit_redone_total') - redone0 >= 1,
          'a batch with a failing bundle ran again')
    check(metric(d, 'kernelindex_commit_requests_total') >=
          metric(d, 'kernelindex_commit_batches_total') > 0,
          'the commit counters add up')
    d.stop()


@test
def unknown_fields_warn_or_ignore_and_status_is_the_servers():
    d = fresh()
    p = protocol('warned')
    p['spec']['measurement']['stopwatch'] = 'yes'
    p['status'] = {'digest': 'sha256:' + '0' * 64, 'verified': True}
    r = d.post(G + '/benchmarkprotocols', p)
    eq(r.status, 201, 'POST with an unknown field, default validation')
    warnings = r.headers.get_all('Warning') or []
    check(any('spec.measurement.stopwatch' in w and w.startswith('299 ')
              for w in warnings),
          'a 299 Warning names the unknown field: %r' % warnings)
    got = get_name(d, 'benchmarkprotocols', 'warned').json()
    check('stopwatch' not in got['spec']['measurement'],
          'the unknown field is pruned: %r' % got['spec'])
    clean = protocol('warned')
    eq(got['status'].get('digest'), digest(clean),
       'status is the server\'s: the digest of the pruned spec')
    check('verified' not in got['status'], 'client status dropped')
    q = protocol('ignored', harness='ign')
    q['spec']['stopwatch'] = 1
    r = d.post(G + '/benchmarkprotocols?fieldValidation=Ignore', q)
    eq(r.status, 201, 'POST with fieldValidation=Ignore')
    eq(r.headers.get_all('Warning'), None, 'no Warning with Ignore')
    d.stop()


@test
def head_answers_like_get():
    d = fresh()
    eq(d.post(G + '/benchmarkprotocols', SEED['protocol']).status, 201,
       'POST')
    dg = SEED['run']['spec']['protocolDigest']
    bad = []
    for path in [G, G + '/benchmarkprotocols',
                 G + '/benchmarkprotocols/' + PROTO_NAME,
                 G + '/objects/' + dg, '/version', '/healthz']:
        g = d.get(path)
        h = d.request('HEAD', path)
        try:
            eq(h.status, g.status, 'HEAD %s status (GET gave %d)' %
               (path, g.status))
            eq(h.body, b'', 'HEAD %s has no body' % path)
            eq(h.headers.get('Content-Type'), g.headers.get('Content-Type'),
               'HEAD %s Content-Type' % path)
        except TestFailure as e:
            bad.append(str(e))
    d.stop()
    check(not bad, '\n'.join(bad))


if __name__ == '__main__':
    sys.exit(kitest.run_all())
