#!/usr/bin/env python3
"""post_result.py — posts one benchmark result to kernelindexd, as a harness would.

Usage: docs/examples/post_result.py [API]   (default: the quick start's daemon,
http://127.0.0.1:8080/apis/kernelindex.dev/v1alpha1). Once the daemon has
tokens, set KERNELINDEX_TOKEN to a writer token (one made with --source
my-harness will do: the run says it comes from there).

It builds the five documents of a bundle — the run and the protocol,
environment, workload and implementation it names by digest — computes each
digest as the server does (SHA-256 of the RFC 8785 canonical JSON of
apiVersion, kind and spec), POSTs the bundle and prints the status and the
upload's summary: 201 the first time, 200 with every part unchanged after.
"""
import hashlib
import json
import os
import sys
import urllib.request

API = sys.argv[1] if len(sys.argv) > 1 else \
    'http://127.0.0.1:8080/apis/kernelindex.dev/v1alpha1'
V = 'kernelindex.dev/v1alpha1'


def digest(doc):
    """The digest of doc. For ASCII keys, strings and integers, RFC 8785 is
    json.dumps with sorted keys and no spaces; a document with other numbers
    needs a full JCS (tests/e2e/smoke.py has one in Python)."""
    core = {k: doc[k] for k in ('apiVersion', 'kind', 'spec')}
    text = json.dumps(core, sort_keys=True, separators=(',', ':'),
                      ensure_ascii=False)
    return 'sha256:' + hashlib.sha256(text.encode()).hexdigest()


def doc(kind, name, spec):
    return {'apiVersion': V, 'kind': kind, 'metadata': {'name': name},
            'spec': spec}

def main():
    protocol = doc('BenchmarkProtocol', 'my-harness-cuda-events', {
        'harness': {'name': 'my-harness'},
        'measurement': {'timer': 'cuda_events', 'primaryStatistic': 'median'}})
    environment = doc('ExecutionEnvironment', 'lab-h100-sxm', {
        'hardware': {'vendor': 'nvidia', 'product': 'NVIDIA H100', 'formFactor': 'SXM5-80GB',
                     'architecture': 'sm_90'}, 'software': {'cuda': '12.4'}})
    workload = doc('Workload', 'rms-norm-forward-rows4096-hidden8192-bf16', {
        'kernel': 'rms_norm', 'pass': 'forward', 'dtype': 'bfloat16',
        'parameters': {'rows': 4096, 'hidden': 8192}})
    implementation = doc('Implementation', 'my-rmsnorm-0-1', {
        'provider': 'my-kernels', 'framework': 'torch', 'version': '0.1'})
    run = doc('BenchmarkRun', 'my-rmsnorm-h100-rows4096-hidden8192-run1', {
        'status': 'passed', 'observedAt': '2026-01-15T10:00:00Z',
        'timing': {'primaryStatistic': 'median', 'latencyNs': {'median': 61250}},
        'measurements': [{'metric': 'latency', 'statistic': 'p20', 'unit': 'ns', 'value': 60900},
                         {'metric': 'latency', 'statistic': 'p80', 'unit': 'ns', 'value': 61800}],
        'sourceNative': {'source': 'my-harness',
                         'externalId': 'rmsnorm/h100/rows4096-hidden8192/run1'},
        'protocolDigest': digest(protocol), 'environmentDigest': digest(environment),
        'workloadDigest': digest(workload), 'implementationDigest': digest(implementation)})

    bundle = {'run': run, 'protocol': protocol, 'environment': environment,
              'workload': workload, 'implementation': implementation}
    headers = {'Content-Type': 'application/json'}
    if os.environ.get('KERNELINDEX_TOKEN'):
        headers['Authorization'] = 'Bearer ' + os.environ['KERNELINDEX_TOKEN']
    req = urllib.request.Request(API + '/benchmarkruns', data=json.dumps(bundle).encode(),
                                 headers=headers)
    with urllib.request.urlopen(req) as r:
        print(r.status, json.load(r)['summary'])


if __name__ == '__main__':
    main()
