#!/usr/bin/env python3
"""smoke.py — the seed contract, end to end, against a built kernelindexd.

Usage: tests/e2e/smoke.py [path/to/kernelindexd]   (default: $KI_DAEMON)
Starts the daemon with --listen 127.0.0.1:<free port> --data-dir <temp dir> (and --store etcd over
$KI_ETCD_ENDPOINTS when that is set), then checks what the API
promises for the seed: POST 201, read back by name and by digest (digests recomputed here, independently,
with RFC 8785 JCS + SHA-256), ETag, identical re-POST 200 with one run listed, same name with other
content 409 AlreadyExists, a tampered bundle 422 that stores nothing. Exits non-zero on the first failure.
"""
import copy, hashlib, json, math, os, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.error, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = os.path.join(os.environ.get('KI_DATA_DIR') or os.path.join(HERE, '..', 'data'),
                    'seed', 'embedding-full-huggingface-a100.json')
G = '/apis/kernelindex.dev/v1alpha1'

def es_number(v):
    if isinstance(v, int) and abs(v) < 2**53: return str(v)
    v = float(v)
    if v == 0: return '0'
    sign = '-' if v < 0 else ''
    r = repr(abs(v))
    mant, exp = (r.split('e') + ['0'])[:2] if 'e' in r else (r, '0')
    exp = int(exp)
    ip, fp = (mant.split('.') + [''])[:2]
    fp = '' if fp == '0' else fp
    allds = ip + fp
    lead = len(allds) - len(allds.lstrip('0'))
    n = len(ip) + exp - lead
    d = allds.lstrip('0').rstrip('0') or '0'
    k = len(d)
    if k <= n <= 21: s = d + '0' * (n - k)
    elif 0 < n <= 21: s = d[:n] + '.' + d[n:]
    elif -6 < n <= 0: s = '0.' + '0' * (-n) + d
    else:
        e = n - 1
        s = d[0] + ('.' + d[1:] if k > 1 else '') + 'e' + ('+' if e >= 0 else '-') + str(abs(e))
    return sign + s

def canon(o):
    if o is None: return 'null'
    if o is True: return 'true'
    if o is False: return 'false'
    if isinstance(o, (int, float)): return es_number(o)
    if isinstance(o, str): return json.dumps(o, ensure_ascii=False)
    if isinstance(o, list): return '[' + ','.join(canon(x) for x in o) + ']'
    keys = sorted(o, key=lambda k: k.encode('utf-16-be'))
    return '{' + ','.join(json.dumps(k, ensure_ascii=False) + ':' + canon(o[k]) for k in keys) + '}'

def digest(obj):
    core = {'apiVersion': obj['apiVersion'], 'kind': obj['kind'], 'spec': obj['spec']}
    return 'sha256:' + hashlib.sha256(canon(core).encode()).hexdigest()

def req(url, method='GET', body=None):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(url, data=data, method=method, headers={'Content-Type': 'application/json'} if data else {})
    try:
        with urllib.request.urlopen(r, timeout=30) as resp: return resp.status, resp.read(), resp.headers
    except urllib.error.HTTPError as e: return e.code, e.read(), e.headers

def fail(msg): print('FAIL:', msg); sys.exit(1)

def main():
    daemon = sys.argv[1] if len(sys.argv) == 2 else os.environ.get('KI_DAEMON')
    if len(sys.argv) > 2 or not daemon: print(__doc__); sys.exit(2)
    s = socket.socket(); s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]; s.close()
    data = tempfile.mkdtemp(prefix='kix-smoke-')
    # Over etcd when KI_ETCD_ENDPOINTS is set (tests/etcd/e2e.sh), as kitest.py does.
    ep = os.environ.get('KI_ETCD_ENDPOINTS')
    store = ['--store', 'etcd', '--etcd-endpoints', ep, '--etcd-prefix', f'/kitest{data}/'] if ep else []
    d = subprocess.Popen([daemon, '--listen', f'127.0.0.1:{port}', '--data-dir', data] + store)
    u = f'http://127.0.0.1:{port}'
    try:
        for _ in range(100):
            try:
                if req(u + '/healthz')[0] == 200: break
            except OSError: pass
            if d.poll() is not None: fail('the daemon exited at start')
            time.sleep(0.1)
        else: fail('/healthz not 200 after 10 s')
        seed = json.load(open(SEED))
        st, b, _ = req(u + G + '/benchmarkruns', 'POST', seed)
        if st != 201: fail(f'seed POST gave {st}: {b[:300]!r}')
        for part, plural in [('run', 'benchmarkruns'), ('protocol', 'benchmarkprotocols'), ('environment', 'executionenvironments')]:
            obj = seed[part]; name = obj['metadata']['name']; dg = digest(obj)
            st, b, _ = req(f'{u}{G}/{plural}/{name}')
            if st != 200 or json.loads(b).get('spec') != obj['spec']: fail(f'GET {plural}/{name}: {st} or spec changed')
            if dg.encode() not in b: fail(f'{plural}/{name} does not show its digest {dg}')
            st, b, h = req(f'{u}{G}/objects/{dg}')
            if st != 200 or json.loads(b).get('spec') != obj['spec']: fail(f'GET objects/{dg} gave {st}')
            if dg.split(':')[1] not in (h.get('ETag') or ''): fail(f'objects/{dg}: ETag {h.get("ETag")!r}')
            print(f'ok  {plural}/{name}  {dg}')
        st, b, _ = req(u + G + '/benchmarkruns', 'POST', seed)
        if st != 200: fail(f'identical re-POST gave {st}, want 200')
        st, b, _ = req(u + G + '/benchmarkruns')
        if st != 200 or len(json.loads(b).get('items', [])) != 1: fail('list after two identical POSTs is not one run')
        t = copy.deepcopy(seed); t['run']['spec']['timing']['latencyNs']['median'] = 7489377
        t['run']['spec']['sourceNative']['metrics']['ms_50'] = 7.489377
        st, b, _ = req(u + G + '/benchmarkruns', 'POST', t)
        if st != 409 or json.loads(b).get('reason') != 'AlreadyExists': fail(f'same name, other content gave {st}')
        t = copy.deepcopy(seed); t['protocol']['spec']['measurement']['timer'] = 'wall_clock'
        t['run']['metadata']['name'] = 'tampered'; t['protocol']['metadata']['name'] = 'tampered-protocol'
        st, b, _ = req(u + G + '/benchmarkruns', 'POST', t)
        if st != 422 or json.loads(b).get('kind') != 'Status': fail(f'tampered bundle gave {st}, want a 422 Status')
        if req(u + G + '/benchmarkprotocols/tampered-protocol')[0] != 404: fail('a rejected bundle left its protocol behind')
        print('ok  re-POST 200, conflict 409, tampered bundle 422 with nothing stored')
        print('1 passed, 0 failed')
    finally:
        d.send_signal(signal.SIGTERM)
        try: d.wait(10)
        except subprocess.TimeoutExpired: d.kill(); d.wait()
        shutil.rmtree(data, ignore_errors=True)

if __name__ == '__main__':
    main()
