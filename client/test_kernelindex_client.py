"""Tests of kernelindex_client.py that need no server: the bundle a
measurement becomes (no digests, names a server accepts, figures in the
index's units), and the checks on what a caller passes. The posting itself
is tested against a real daemon in tests/e2e/test_harness.py.

Run: python3 client/test_kernelindex_client.py
"""
import datetime
import io
import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernelindex_client as kc  # noqa: E402

DNS = re.compile(r'^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$')


def do_bench_like(quantiles):
    """What triton.testing.do_bench(fn, quantiles=[0.5, 0.2, 0.8]) gives:
    the median, p20 and p80 in milliseconds, in the order asked."""
    return [0.1021, 0.1001, 0.1050][:len(quantiles)]


def measure(**kw):
    args = dict(kernel='rms_norm', pass_='forward', provider='liger',
                version='0.6.3', gpu='NVIDIA H100 80GB HBM3',
                dtype='torch.bfloat16', parameters={'rows': 8192,
                                                    'hidden': 4096},
                sweep='hidden', quantiles_ms=do_bench_like([0.5, 0.2, 0.8]),
                observed_at='2026-12-01T10:00:00.000Z')
    args.update(kw)
    return kc.result(**args)


class BundleTest(unittest.TestCase):

    def test_five_documents_and_no_digest(self):
        b = measure()
        self.assertEqual(sorted(b), ['environment', 'implementation',
                                     'protocol', 'run', 'workload'])
        for part in b.values():
            self.assertEqual(part['apiVersion'], 'kernelindex.dev/v1alpha1')
            self.assertTrue(DNS.match(part['metadata']['name']),
                            part['metadata']['name'])
            self.assertLessEqual(len(part['metadata']['name']), 253)
        spec = b['run']['spec']
        self.assertFalse([k for k in spec if k.endswith('Digest')],
                         'the server computes the digests')

    def test_figures_in_the_index_units(self):
        spec = measure()['run']['spec']
        self.assertEqual(spec['timing'], {
            'latencyNs': {'median': 102100, 'p20': 100100, 'p80': 105000},
            'primaryStatistic': 'median'})
        self.assertEqual(spec['sourceNative']['metrics'],
                         {'ms_50': 0.1021, 'ms_20': 0.1001, 'ms_80': 0.105})
        self.assertEqual(spec['observedAt'], '2026-12-01T10:00:00.000Z')
        self.assertEqual(spec['status'], 'passed')

    def test_workload_implementation_environment(self):
        b = measure()
        self.assertEqual(b['workload']['spec'], {
            'kernel': 'rms_norm', 'pass': 'forward', 'dtype': 'bfloat16',
            'parameters': {'rows': 8192, 'hidden': 4096}, 'sweep': 'hidden'})
        self.assertEqual(b['implementation']['spec'], {
            'provider': 'liger', 'framework': 'torch', 'version': '0.6.3'})
        self.assertEqual(b['environment']['spec']['hardware'], {
            'vendor': 'nvidia', 'product': 'NVIDIA H100 80GB HBM3'})
        self.assertEqual(b['run']['metadata']['labels'], {'version': '0.6.3'})
        self.assertEqual(b['run']['metadata']['annotations'],
                         {'kernelindex.dev/swept': 'hidden=4096'})

    def test_natural_key_and_name_follow_the_measurement(self):
        a, b = measure(), measure()
        self.assertEqual(a, b, 'the same measurement, the same bundle')
        c = measure(observed_at='2026-12-01T10:00:01.000Z')
        self.assertNotEqual(a['run']['metadata']['name'],
                            c['run']['metadata']['name'])
        self.assertEqual(a['workload'], c['workload'])
        self.assertEqual(a['run']['spec']['sourceNative']['externalId'],
                         'rms_norm/forward/liger/nvidia-h100-80gb-hbm3/'
                         'hidden4096-rows8192-bfloat16/'
                         '2026-12-01T10:00:00.000Z')

    def test_memory(self):
        b = measure(quantiles_ms=None, memory_mb=[64.0, 63.5, 64.5])
        spec = b['run']['spec']
        self.assertNotIn('timing', spec)
        self.assertEqual(spec['measurements'][0], {
            'metric': 'peak_memory', 'statistic': 'median', 'unit': 'bytes',
            'value': 64 * 1048576})
        self.assertEqual(spec['sourceNative']['metrics']['mb_50'], 64.0)
        self.assertIn('/memory/', spec['sourceNative']['externalId'])
        self.assertEqual(b['protocol']['spec']['measurement']['method'],
                         'torch.cuda.max_memory_allocated')
        self.assertNotEqual(b['run']['metadata']['name'],
                            measure()['run']['metadata']['name'])

    def test_quantile_forms(self):
        self.assertEqual(kc._quantiles(0.5), (0.5, None, None))
        self.assertEqual(kc._quantiles({0.5: 1.0, 0.2: 0.5, 0.8: 2.0}),
                         (1.0, 0.5, 2.0))
        self.assertEqual(kc._quantiles((1, 0.5, 2)), (1.0, 0.5, 2.0))
        b = measure(quantiles_ms=0.25)
        self.assertEqual(b['run']['spec']['timing']['latencyNs'],
                         {'median': 250000})
        with self.assertRaises(ValueError):
            kc._quantiles([1, 2])

    def test_dtypes(self):
        for given, want in [('torch.float16', 'float16'), ('bf16', 'bfloat16'),
                            ('half', 'float16'), ('float32', 'float32'),
                            ('torch.float', 'float32')]:
            self.assertEqual(kc.normalize_dtype(given), want)
        with self.assertRaises(ValueError):
            kc.normalize_dtype('torch.complex64')

    def test_bad_input_is_refused_before_posting(self):
        for kw in [dict(kernel='RMS Norm'), dict(pass_='sideways'),
                   dict(gpu=''), dict(sweep='nope'),
                   dict(quantiles_ms=None),
                   dict(memory_mb=[1.0, 1.0, 1.0]),
                   dict(parameters={'rows': [1, 2]})]:
            with self.assertRaises(ValueError, msg=repr(kw)):
                measure(**kw)

    def test_names(self):
        self.assertEqual(kc.name_of('liger-0.6.3'), 'liger-0.6.3')
        n = kc.name_of('liger_tiled-0.6.3')
        self.assertTrue(n.startswith('liger-tiled-0.6.3-') and DNS.match(n), n)
        self.assertNotEqual(kc.name_of('a_b'), kc.name_of('a-b-'))
        long = kc.name_of('x' * 400)
        self.assertEqual(len(long), 253)
        self.assertEqual(kc._dns('NVIDIA H100.'), 'nvidia-h100-')

    def test_observed_at_from_a_datetime(self):
        t = datetime.datetime(2026, 12, 1, 10, 0, 0, 123456,
                              tzinfo=datetime.timezone.utc)
        self.assertEqual(measure(observed_at=t)['run']['spec']['observedAt'],
                         '2026-12-01T10:00:00.123Z')

    def test_emit_writes_one_line(self):
        out = io.StringIO()
        kc.emit(measure(), out)
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), 1)
        self.assertEqual(json.loads(lines[0]), measure())


if __name__ == '__main__':
    unittest.main()
