"""kernelindex_client — post a GPU-kernel benchmark result to a kernelindex
server from any benchmark script.

One file, Python's standard library only: copy it next to the script.

    import triton, torch
    from kernelindex_client import Client, result

    q = triton.testing.do_bench(fn, quantiles=[0.5, 0.2, 0.8])
    bundle = result(kernel="rms_norm", pass_="forward", provider="liger",
                    version="0.6.3", gpu=torch.cuda.get_device_name(),
                    dtype=torch.bfloat16, parameters={"rows": 8192,
                    "hidden": 4096}, sweep="hidden", quantiles_ms=q)
    Client("http://127.0.0.1:8080").post(bundle)

A result is a bundle of five documents (run, protocol, environment,
workload, implementation) with no digests: the server computes them
(docs/harness.md describes the shape, for curl users too). Instead of
posting, a script run under `kernelindex run -- python bench.py` may print
each bundle as one line (emit()), and the CLI uploads them.
"""
import datetime
import hashlib
import json
import re
import sys
import urllib.error
import urllib.request

API = 'kernelindex.dev/v1alpha1'
PREFIX = '/apis/kernelindex.dev/v1alpha1'
DEFAULT_SOURCE = 'kernelindex-client'
PASSES = ('forward', 'backward', 'full')
# The schema's dtypes, and the spellings torch and others use for them.
DTYPES = ('float64', 'float32', 'tfloat32', 'float16', 'bfloat16',
          'float8_e4m3fn', 'float8_e5m2', 'int64', 'int32', 'int16', 'int8',
          'uint8', 'bool', 'mixed')
DTYPE_ALIASES = {'float': 'float32', 'fp32': 'float32', 'half': 'float16',
                 'fp16': 'float16', 'bf16': 'bfloat16', 'double': 'float64',
                 'fp64': 'float64', 'tf32': 'tfloat32', 'long': 'int64',
                 'int': 'int32'}
_IDENT = re.compile(r'^[a-z0-9]([a-z0-9_.-]*[a-z0-9])?$')
_LABEL_VALUE = re.compile(r'^([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$')


class KernelIndexError(Exception):
    """The server refused something, or could not be reached. status is the
    HTTP status (0: unreachable); body the server's answer (a Kubernetes
    Status), when there was one."""

    def __init__(self, message, status=0, body=None):
        super().__init__(message)
        self.status = status
        self.body = body


def _sha8(text):
    return hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]


def _dns(text):
    """text as a DNS-1123 fragment: lower case, [a-z0-9.-], no '.' beside a
    '-', a '.' or an end."""
    out = []
    for b in text.encode('utf-8'):
        c = chr(b).lower() if b < 128 else '-'
        out.append(c if (c.isascii() and (c.isalnum() or c in '.-')) else '-')
    for i, c in enumerate(out):
        if c == '.' and (i == 0 or i == len(out) - 1 or out[i - 1] in '.-'
                         or out[i + 1] in '.-'):
            out[i] = '-'
    return ''.join(out)


def name_of(raw, limit=253):
    """A name no other raw text gives: raw itself when it is a DNS name of at
    most limit characters, else its DNS form cut to limit - 9 and '-' with 8
    hex digits of SHA-256(raw)."""
    clean = _dns(raw)
    if clean == raw and len(clean) <= limit and clean and \
            clean[0].isalnum() and clean[-1].isalnum():
        return clean
    return clean[:limit - 9].strip('-.') + '-' + _sha8(raw)


def _value_text(v):
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, float):
        return repr(v)
    return str(v)


def workload_slug(parameters, dtype):
    """The parameters sorted by name, each as name and value, joined by '-',
    then the dtype: batch8-hidden4096-bfloat16."""
    parts = ['%s%s' % (k, _value_text(parameters[k])) for k in
             sorted(parameters)]
    return '-'.join(parts + [dtype])


def normalize_dtype(dtype):
    """A dtype's schema name from torch.bfloat16, 'torch.float16', 'bf16',
    'half', …"""
    s = str(dtype)
    if s.startswith('torch.'):
        s = s[6:]
    s = DTYPE_ALIASES.get(s, s)
    if s not in DTYPES:
        raise ValueError('dtype %r: use one of %s' % (dtype, ', '.join(DTYPES)))
    return s


def gpu_name():
    """torch.cuda.get_device_name() when torch and a GPU are there, else
    None."""
    try:
        import torch  # noqa: F401 (optional)
        if torch.cuda.is_available():
            return torch.cuda.get_device_name()
    except Exception:  # no torch, no driver: the caller names the GPU
        pass
    return None


def _vendor(gpu):
    g = gpu.lower()
    if g.startswith('nvidia'):
        return 'nvidia'
    if g.startswith('amd'):
        return 'amd'
    if g.startswith('intel'):
        return 'intel'
    return 'other'


def _quantiles(q):
    """(median, p20, p80) from do_bench's answer: a list or tuple in the
    order quantiles=[0.5, 0.2, 0.8] asks for, a dict {0.5: …, 0.2: …, 0.8:
    …}, or one number (the median alone)."""
    if isinstance(q, (int, float)):
        return float(q), None, None
    if isinstance(q, dict):
        return (float(q[0.5]), float(q[0.2]) if 0.2 in q else None,
                float(q[0.8]) if 0.8 in q else None)
    q = list(q)
    if len(q) == 1:
        return float(q[0]), None, None
    if len(q) != 3:
        raise ValueError('quantiles: give [median, p20, p80] '
                         '(do_bench(..., quantiles=[0.5, 0.2, 0.8]))')
    return float(q[0]), float(q[1]), float(q[2])


def _obj(kind, name, title, spec):
    return {'apiVersion': API, 'kind': kind,
            'metadata': {'name': name, 'title': title}, 'spec': spec}


def result(kernel, pass_, provider, gpu, dtype, parameters,
           quantiles_ms=None, memory_mb=None, sweep=None, version=None,
           framework='torch', observed_at=None, source=DEFAULT_SOURCE,
           external_id=None, labels=None, harness='triton.testing.do_bench',
           software=None):
    """A bundle for one measurement.

    kernel: the kernel family ('rms_norm'); pass_: forward, backward or
    full; provider: whose code ('liger', 'torch_compile'); gpu: the device
    name (torch.cuda.get_device_name()); dtype: torch.bfloat16 or a name;
    parameters: the shape ({'rows': 8192, 'hidden': 4096}); quantiles_ms:
    triton.testing.do_bench(fn, quantiles=[0.5, 0.2, 0.8]), in ms; or
    memory_mb: peak memory [median, p20, p80] in MiB; sweep: the parameter
    swept; version: the provider's version; observed_at: a datetime or RFC
    3339 text (default now); source and external_id: the run's natural key
    (default: one id per kernel, pass, provider, GPU, workload and time);
    labels: extra labels of the run; software: {'torch': '2.4', …}."""
    if not _IDENT.match(str(kernel)):
        raise ValueError('kernel %r: lower-case letters, digits, _ . -' %
                         (kernel,))
    if not _IDENT.match(str(provider)):
        raise ValueError('provider %r: lower-case letters, digits, _ . -' %
                         (provider,))
    if pass_ not in PASSES:
        raise ValueError('pass_ %r: one of %s' % (pass_, ', '.join(PASSES)))
    if not gpu:
        raise ValueError('gpu: name the GPU (torch.cuda.get_device_name())')
    if (quantiles_ms is None) == (memory_mb is None):
        raise ValueError('give quantiles_ms (latency) or memory_mb (peak '
                         'memory), one of them')
    if sweep is not None and sweep not in parameters:
        raise ValueError('sweep %r is not one of the parameters' % (sweep,))
    dtype = normalize_dtype(dtype)
    params = {}
    for k, v in parameters.items():
        if not isinstance(v, (int, float, str, bool)):
            raise ValueError('parameter %s: a number, string or boolean' % k)
        params[str(k)] = v
    if observed_at is None:
        observed_at = datetime.datetime.now(datetime.timezone.utc)
    if isinstance(observed_at, datetime.datetime):
        if observed_at.tzinfo is None:
            observed_at = observed_at.replace(tzinfo=datetime.timezone.utc)
        observed_at = observed_at.astimezone(datetime.timezone.utc).strftime(
            '%Y-%m-%dT%H:%M:%S.') + '%03dZ' % (observed_at.microsecond // 1000)

    slug = workload_slug(params, dtype)
    memory = memory_mb is not None
    if memory:
        med, p20, p80 = _quantiles(memory_mb)
        protocol = _obj('BenchmarkProtocol', 'torch-max-memory-allocated',
                        'Peak memory · torch.cuda.max_memory_allocated', {
                            'measurement': {
                                'method': 'torch.cuda.max_memory_allocated',
                                'primaryStatistic': 'median'},
                            'harness': {'name': harness}})
    else:
        med, p20, p80 = _quantiles(quantiles_ms)
        spec = {'measurement': {'timer': 'cuda_events',
                                'primaryStatistic': 'median',
                                'quantiles': [0.5, 0.2, 0.8]},
                'harness': {'name': harness}}
        protocol = _obj('BenchmarkProtocol', name_of(harness + '-latency'),
                        '%s · latency' % harness, spec)
    env_spec = {'hardware': {'vendor': _vendor(gpu), 'product': gpu},
                'software': {str(k): str(v) for k, v in
                             (software or {}).items()}}
    environment = _obj('ExecutionEnvironment', name_of('gpu-' + gpu),
                       gpu, env_spec)
    wl_spec = {'kernel': kernel, 'pass': pass_, 'dtype': dtype,
               'parameters': params}
    if sweep is not None:
        wl_spec['sweep'] = sweep
    workload = _obj('Workload', name_of('%s-%s-%s%s' % (
        kernel, pass_, slug, '-sweep-%s' % sweep if sweep is not None else
        '')),
                    '%s · %s · %s' % (kernel, pass_, slug), wl_spec)
    impl_spec = {'provider': provider}
    if framework:
        impl_spec['framework'] = framework
    if version:
        impl_spec['version'] = str(version)
    implementation = _obj('Implementation', name_of(
        '-'.join([provider] + ([str(version)] if version else []))),
        ' '.join([provider] + ([str(version)] if version else [])),
        impl_spec)

    if external_id is None:
        external_id = '/'.join(s.replace('%', '%25').replace('/', '%2F')
                               for s in [kernel, pass_] +
                               (['memory'] if memory else []) +
                               [provider, _dns(gpu), slug, observed_at])
    native = {'source': source, 'externalId': external_id,
              'benchmark': '%s/%s' % (kernel, pass_)}
    run_spec = {'status': 'passed', 'observedAt': observed_at,
                'sourceNative': native}
    if memory:
        mib = 1048576.0
        figs = [('median', med), ('p20', p20), ('p80', p80)]
        run_spec['measurements'] = [
            {'metric': 'peak_memory', 'statistic': s, 'unit': 'bytes',
             'value': int(round(v * mib))} for s, v in figs if v is not None]
        keys = {'median': 'mb_50', 'p20': 'mb_20', 'p80': 'mb_80'}
        native['metrics'] = {keys[s]: v for s, v in figs if v is not None}
    else:
        lat = {'median': int(round(med * 1e6))}
        metrics = {'ms_50': med}
        if p20 is not None:
            lat['p20'] = int(round(p20 * 1e6))
            metrics['ms_20'] = p20
        if p80 is not None:
            lat['p80'] = int(round(p80 * 1e6))
            metrics['ms_80'] = p80
        run_spec['timing'] = {'latencyNs': lat, 'primaryStatistic': 'median'}
        native['metrics'] = metrics
    run_labels = dict(labels or {})
    if version and _LABEL_VALUE.match(str(version)):
        run_labels.setdefault('version', str(version))
    annotations = {}
    if sweep is not None:
        annotations['kernelindex.dev/swept'] = '%s=%s' % (
            sweep, _value_text(params[sweep]))
    # The run's name: readable, and unique per natural key.
    readable = _dns('%s-%s-%s%s-%s' % (kernel, pass_, 'memory-' if memory
                                        else '', provider, slug))
    run_meta = {'name': readable[:91].strip('-.') + '-' +
                _sha8(source + '\x1f' + external_id),
                'title': '%s · %s · %s%s' % (kernel, provider, pass_,
                                             ' · peak memory' if memory
                                             else '')}
    if run_labels:
        run_meta['labels'] = run_labels
    if annotations:
        run_meta['annotations'] = annotations
    run = {'apiVersion': API, 'kind': 'BenchmarkRun', 'metadata': run_meta,
           'spec': run_spec}
    return {'run': run, 'protocol': protocol, 'environment': environment,
            'workload': workload, 'implementation': implementation}


def emit(bundle, file=None):
    """Writes bundle as one JSON line (what `kernelindex run` reads from a
    benchmark's output)."""
    f = file or sys.stdout
    f.write(json.dumps(bundle, separators=(',', ':')) + '\n')
    f.flush()


class Client:
    """A connection to a kernelindex server: server is its URL, token a
    writer's bearer token (None: a loopback server without tokens)."""

    def __init__(self, server='http://127.0.0.1:8080', token=None,
                 timeout=60):
        self.server = server.rstrip('/')
        self.token = token
        self.timeout = timeout

    def _request(self, method, path, body=None, ctype=None):
        headers = {'Accept': 'application/json'}
        if ctype:
            headers['Content-Type'] = ctype
        if self.token:
            headers['Authorization'] = 'Bearer ' + self.token
        req = urllib.request.Request(self.server + path, data=body,
                                     headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return r.status, json.loads(r.read() or b'null')
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                st = json.loads(raw)
            except ValueError:
                st = None
            msg = st.get('message') if isinstance(st, dict) else None
            raise KernelIndexError('%s %s: HTTP %d: %s' % (
                method, path, e.code, msg or raw[:200].decode('utf-8',
                                                              'replace')),
                e.code, st)
        except urllib.error.URLError as e:
            raise KernelIndexError('cannot reach %s: %s' % (self.server,
                                                            e.reason))

    def post(self, bundles):
        """Posts one bundle or a list of them (as NDJSON). Returns the
        server's UploadResult; raises KernelIndexError when the request is
        refused, or when any document of it failed (the exception's body is
        then the UploadResult)."""
        if isinstance(bundles, dict):
            body = json.dumps(bundles).encode('utf-8')
            status, res = self._request('POST', PREFIX + '/benchmarkruns',
                                        body, 'application/json')
        else:
            body = ''.join(json.dumps(b) + '\n' for b in bundles)
            status, res = self._request('POST', PREFIX + '/benchmarkruns',
                                        body.encode('utf-8'),
                                        'application/x-ndjson')
        failed = [i for i in (res or {}).get('items', [])
                  if i.get('result') == 'failed']
        if failed:
            raise KernelIndexError('%d document(s) failed: %s' % (
                len(failed), failed[0].get('status', {}).get('message', '')),
                status, res)
        return res

    def get(self, kind_plural, name):
        """One stored object, e.g. get('benchmarkruns', name)."""
        return self._request('GET', '%s/%s/%s' % (
            PREFIX, kind_plural, urllib.request.quote(name)))[1]


def main(argv=None):
    """python3 kernelindex_client.py [--server URL] [--token T] FILE.json…:
    posts bundles written by result() (one JSON bundle a file, or NDJSON)."""
    import argparse
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument('--server', default='http://127.0.0.1:8080')
    ap.add_argument('--token')
    ap.add_argument('files', nargs='+')
    a = ap.parse_args(argv)
    c = Client(a.server, a.token)
    bundles = []
    for path in a.files:
        with open(path, encoding='utf-8') as f:
            text = f.read()
        try:
            bundles.append(json.loads(text))
        except ValueError:
            bundles.extend(json.loads(l) for l in text.splitlines()
                           if l.strip())
    try:
        res = c.post(bundles)
    except KernelIndexError as e:
        print('kernelindex_client: %s' % e, file=sys.stderr)
        return 1
    s = res.get('summary', {})
    print('created %d, unchanged %d, failed %d' % (
        s.get('created', 0), s.get('unchanged', 0), s.get('failed', 0)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
