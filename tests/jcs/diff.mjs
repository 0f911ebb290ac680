// tests/jcs/diff.mjs — differential test of the daemon's RFC 8785
// canonicalization against the canonicalize package (an independent
// implementation): thousands of generated documents — characters above
// U+FFFF as escapes and as UTF-8, keys that order differently by UTF-16
// code units than by code points, huge, tiny and 19-digit numbers, deep
// nesting — go through tests/jcs/jcs_digest (the daemon's parser and
// canonicalizer) and, as Workload parameters, through a running daemon
// (dry run); every digest must be the one Node computes, and every
// document the daemon must refuse (lone surrogates, duplicate keys, nesting
// past the limit, numbers it cannot keep exactly) must be refused.
//
// Usage: node diff.mjs JCS_DIGEST_BINARY [DAEMON_URL]
// Prints "N passed, M failed" last; exits 1 on any difference.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

const [bin, url] = process.argv.slice(2);
const DOCS = Number(process.env.KI_JCS_DOCS || 6000);
const POSTS = Number(process.env.KI_JCS_POSTS || 600);
const DEPTH = 32;

// A small deterministic generator (mulberry32), so a failure repeats.
let seed = Number(process.env.KI_JCS_SEED || 8785);
function rnd() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rnd() * a.length)];
const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));

// Code points: ASCII, controls, Latin, BMP above the surrogates (which sort
// after astral characters by UTF-16 units), and astral ones, among them
// those whose low 16 bits fall in D800-DFFF.
const ASTRAL = [0x10000, 0x1d800, 0x1dbff, 0x1dc00, 0x1dfff, 0x2d800,
  0x1f600, 0x10d800, 0x10dc00, 0x10ffff, 0x1f4a9, 0x20000];
function codePoint() {
  switch (int(0, 7)) {
    case 0: return int(0x20, 0x7e);
    case 1: return int(0, 0x1f);
    case 2: return pick([0x22, 0x5c, 0x2f, 0x7f]);
    case 3: return int(0xa0, 0x7ff);
    case 4: return int(0xe000, 0xfffd);
    case 5: return pick([0xfeff, 0xfffd, 0xffff, 0x2028, 0x2029, 0xd7ff]);
    case 6: return pick(ASTRAL);
    default: return int(0x10000, 0x10ffff);
  }
}

const hex4 = (u) => {
  const h = u.toString(16).padStart(4, '0');
  return rnd() < 0.5 ? h : h.toUpperCase();
};

// The JSON text of one code point: raw UTF-8, or an escape.
function charText(cp) {
  if (cp === 0x22) return '\\"';
  if (cp === 0x5c) return '\\\\';
  if (cp < 0x20) {
    const short = { 8: '\\b', 9: '\\t', 10: '\\n', 12: '\\f', 13: '\\r' };
    return short[cp] && rnd() < 0.5 ? short[cp] : '\\u' + hex4(cp);
  }
  if (rnd() < 0.5) return String.fromCodePoint(cp);
  if (cp === 0x2f && rnd() < 0.5) return '\\/';
  if (cp < 0x10000) return '\\u' + hex4(cp);
  const c = cp - 0x10000;
  return '\\u' + hex4(0xd800 + (c >> 10)) + '\\u' + hex4(0xdc00 + (c & 0x3ff));
}

// A string: its JSON text and its value.
function str(maxLen) {
  let text = '"', value = '';
  for (let n = int(0, maxLen); n > 0; n--) {
    const cp = codePoint();
    text += charText(cp);
    value += String.fromCodePoint(cp);
  }
  return { text: text + '"', value };
}

// Number literals: integers (some of 19 digits, which take json-c's path),
// doubles in several spellings, huge, tiny and subnormal ones.
function numberText() {
  switch (int(0, 9)) {
    case 0: return String(int(-1000, 1000));
    case 1: return String(int(0, 2 ** 31) * 2 ** int(0, 22));
    case 2: { // 19 digits, below 2^63
      let s = String(int(1, 9));
      for (let i = 0; i < 18; i++) s += String(int(0, 9));
      if (BigInt(s) >= 2n ** 63n) s = '9' + s.slice(1, 18);
      return (rnd() < 0.3 ? '-' : '') + s;
    }
    case 3: { // a double from random bits
      const b = new DataView(new ArrayBuffer(8));
      b.setUint32(0, Math.floor(rnd() * 2 ** 32));
      b.setUint32(4, Math.floor(rnd() * 2 ** 32));
      let v = b.getFloat64(0);
      if (!Number.isFinite(v)) v = 1.5;
      const a = Math.abs(v);
      if (a >= 2 ** 63 && a < 1e21) v /= 1e10;
      return pick([String(v), v.toExponential(), v.toExponential()
        .replace('e', 'E'), v.toPrecision(17)]);
    }
    case 4: return pick(['5e-324', '-5e-324', '2.2250738585072014e-308',
      '2.225073858507201e-308', '1e-320', '4.9406564584124654e-324',
      '1.7976931348623157e308', '-1.7976931348623157E+308', '1e300',
      '123e-20', '1e21', '1e+21', '9.999999999999999e20', '1e-7',
      '0.000001', '1e-6']);
    case 5: return pick(['0', '-0', '0.0', '-0.0', '0e10', '1.0', '100e-2',
      '1.50', '0.1', '0.2', '0.30000000000000004', '333333333.33333329',
      '1E400'.replace('400', '4'), '9007199254740993', '9007199254740992',
      '-9007199254740993', '295147905179352830000']);
    case 6: return (rnd() * 10 ** int(-30, 30)).toString();
    case 7: return String(int(1, 99)) + '.' + String(int(0, 999999)) +
      'e' + String(int(-300, 300));
    case 8: return String(Number.MAX_SAFE_INTEGER - int(0, 5));
    default: return (int(-1e6, 1e6) / 1000).toString();
  }
}

// A value, as {text, value}. depth counts the levels above it.
function value(depth, maxDepth) {
  const r = rnd();
  if (depth < maxDepth && r < 0.25) return object(depth + 1, maxDepth);
  if (depth < maxDepth && r < 0.4) {
    const items = [];
    for (let n = int(0, 4); n > 0; n--) items.push(value(depth + 1, maxDepth));
    return { text: '[' + items.map((i) => i.text).join(',') + ']',
      value: items.map((i) => i.value) };
  }
  if (r < 0.65) return str(8);
  if (r < 0.9) {
    const t = numberText();
    docRefused = docRefused || refusedNumber(t);
    return { text: t, value: JSON.parse(t) };
  }
  const lit = pick(['true', 'false', 'null']);
  return { text: lit, value: JSON.parse(lit) };
}

function object(depth, maxDepth, nKeys) {
  const o = {};
  const parts = [];
  for (let n = nKeys ?? int(0, 6); n > 0; n--) {
    const k = str(4);
    if (Object.prototype.hasOwnProperty.call(o, k.value) ||
        k.value.includes('\0'))
      continue; // duplicates and U+0000 keys are refusal cases of their own
    const v = value(depth, maxDepth);
    o[k.value] = v.value;
    parts.push(k.text + (rnd() < 0.2 ? ' : ' : ':') + v.text);
  }
  return { text: '{' + parts.join(rnd() < 0.2 ? ' ,\r\t' : ',') + '}', value: o };
}

// A chain of nested containers n levels deep around a value.
function nested(n) {
  let text = '1', val = 1;
  for (let i = 0; i < n; i++) {
    if (i % 2) {
      text = '[' + text + ']';
      val = [val];
    } else {
      text = '{"d":' + text + '}';
      val = { d: val };
    }
  }
  return { text: '{"top":' + text + '}', value: { top: val } };
}

// Whether a number literal is one the daemon refuses: a double of
// magnitude [2^63, 10^21), which RFC 8785 writes as an integer json-c
// cannot read back exactly, or an integer literal beyond json-c's int64 and
// uint64 (which it clamps).
function refusedNumber(t) {
  if (/^-?[0-9]+$/.test(t)) {
    const b = BigInt(t);
    return b > 2n ** 64n - 1n || b < -(2n ** 63n);
  }
  const a = Math.abs(Number(t));
  return a >= 2 ** 63 && a < 1e21;
}

// Whether the daemon's schema refuses a number literal as a field's value:
// an integer literal no double holds exactly (above 2^53 most are not),
// which RFC 8785 would change (422; tests/e2e/test_adversary_net.py checks
// the answer).
function inexactInteger(t) {
  if (!/^-?[0-9]+$/.test(t)) return false;
  const b = BigInt(t);
  return BigInt(Number(t)) !== b;
}

// Set when the document being generated holds such a number.
let docRefused = false;

function digestOf(v) {
  return createHash('sha256').update(canonicalize(v), 'utf8').digest('hex');
}

// Documents the daemon must refuse, each with why.
function refusals() {
  const out = [];
  const wrap = (t) => '{"a":1,"x":' + t + '}';
  for (const s of ['"\\ud800"', '"\\udc00"', '"a\\ud83d"', '"\\ude00\\ud83d"',
    '"\\ud83d\\u0041"', '"\\uDBFF"', '"x\\udfffy"'])
    out.push({ text: wrap(s), why: 'a lone surrogate ' + s });
  out.push({ text: '{"\\ud800":1}', why: 'a lone surrogate in a key' });
  for (const s of ['{"a":1,"a":2}', '{"a":1,"\\u0061":2}',
    '{"\\ud83d\\ude00":1,"\ud83d\ude00":2}', '{"k":{"b":[],"b":{}}}'])
    out.push({ text: s, why: 'a duplicate key' });
  out.push({ text: nested(DEPTH + 8).text, why: 'nesting past the limit' });
  for (const s of ['1e400', '-1e400', '9.3e18', '1e20',
    '99999999999999999999999', '-99999999999999999999'])
    out.push({ text: wrap(s), why: 'a number not kept exactly: ' + s });
  out.push({ text: '{"a\\u0000b":1}', why: 'a key holding U+0000' });
  return out;
}

function main() {
  let passed = 0, failed = 0;
  const fail = (msg) => {
    failed++;
    if (failed <= 20) console.log('FAIL  ' + msg);
  };

  // 1. The canonicalizer, through the parser the daemon uses.
  const cases = [];
  for (let i = 0; i < DOCS; i++) {
    docRefused = false;
    const d = i % 50 === 0 ? nested(int(1, DEPTH - 4)) :
      object(1, int(1, 6), int(0, 8));
    cases.push({ text: d.text, want: docRefused ? 'refused' :
      digestOf(d.value) });
  }
  // Keys that order differently by UTF-16 units than by code points.
  const keyed = { '\ue000': 1, '\u{1f600}': 2, '\u{10000}': 3, '\uffff': 4,
    'a': 5, '\u00e9': 6, '\u{1d800}': 7, '': 8 };
  cases.push({ text: JSON.stringify(keyed), want: digestOf(keyed) });
  cases.push({ text: JSON.stringify(keyed).replace(/}$/,
    ',"n":1234567890123456789}'),
  want: digestOf({ ...keyed, n: 1234567890123456789 }) });
  const refused = refusals();
  const input = cases.map((c) => c.text).concat(refused.map((c) => c.text))
    .join('\n') + '\n';
  const run = spawnSync(bin, [String(DEPTH)], { input, maxBuffer: 1 << 30 });
  if (run.status !== 0) {
    console.log('FAIL  ' + bin + ' exited ' + run.status + ': ' + run.stderr);
    console.log('0 passed, 1 failed');
    process.exit(1);
  }
  const lines = run.stdout.toString().split('\n');
  cases.forEach((c, i) => {
    const got = lines[i] || '';
    const [state, digest, b64] = got.split(' ');
    if ((state === 'ok' && digest === c.want) ||
        (state === 'refused' && c.want === 'refused')) {
      passed++;
      return;
    }
    fail('document ' + i + ': got ' + (state === 'ok' ? digest : got) +
      ', want ' + c.want + '\n      text: ' + c.text.slice(0, 400) +
      (b64 ? '\n      C JCS: ' + Buffer.from(b64, 'base64').toString()
        .slice(0, 400) : ''));
  });
  refused.forEach((c, j) => {
    const got = lines[cases.length + j] || '';
    if (got.startsWith('refused')) passed++;
    else fail('not refused (' + c.why + '): ' + c.text.slice(0, 200));
  });
  console.log('# canonicalizer: ' + (cases.length + refused.length) +
    ' documents');
  return { passed, failed };
}

// 2. The daemon: Workload parameters (free keys, scalar values) posted as
// dry runs; status.digest must be Node's digest of {apiVersion, kind, spec}.
async function daemon(tally) {
  const post = async (text) => {
    const r = await fetch(url + '/apis/kernelindex.dev/v1alpha1/workloads' +
      '?dryRun=All', { method: 'POST', body: text,
      headers: { 'Content-Type': 'application/json' } });
    return { status: r.status, body: await r.json() };
  };
  let n = 0;
  for (let i = 0; i < POSTS; i++) {
    const params = [];
    const pv = {};
    for (let k = int(1, 6); k > 0; k--) {
      const key = str(5);
      if (key.value === '' || key.value.includes('\0') ||
          Object.prototype.hasOwnProperty.call(pv, key.value))
        continue;
      let v;
      if (rnd() < 0.5) {
        v = str(10);
        if (v.value.includes('\0')) continue;
      } else {
        const t = numberText();
        v = { text: t, value: JSON.parse(t) };
        if (!Number.isFinite(v.value) || refusedNumber(t) ||
            inexactInteger(t)) continue;
      }
      pv[key.value] = v.value;
      params.push(key.text + ':' + v.text);
    }
    const spec = { kernel: 'k' + i, pass: 'full', dtype: 'float32',
      parameters: pv };
    const text = '{"apiVersion":"kernelindex.dev/v1alpha1","kind":"Workload",' +
      '"metadata":{"name":"w-' + i + '"},"spec":{"kernel":"k' + i +
      '","pass":"full","dtype":"float32","parameters":{' + params.join(',') +
      '}}' + (i % 3 === 0 ? ',"x-big":1234567890123456789' : '') + '}';
    const want = 'sha256:' + digestOf({ apiVersion: 'kernelindex.dev/v1alpha1',
      kind: 'Workload', spec });
    let r;
    try {
      r = await post(text);
    } catch (e) {
      tally.failed++;
      console.log('FAIL  POST ' + i + ': ' + e);
      continue;
    }
    n++;
    const got = r.body && r.body.status && r.body.status.digest;
    if ((r.status === 200 || r.status === 201) && got === want) {
      tally.passed++;
    } else {
      tally.failed++;
      if (tally.failed <= 20)
        console.log('FAIL  POST ' + i + ': ' + r.status + ' ' + got +
          ', want ' + want + '\n      text: ' + text.slice(0, 400) +
          '\n      answer: ' + JSON.stringify(r.body).slice(0, 400));
    }
  }
  // A lone surrogate is refused with 400 on both parse paths.
  for (const tail of ['', ',"x-big":1234567890123456789']) {
    const r = await post('{"apiVersion":"kernelindex.dev/v1alpha1",' +
      '"kind":"Workload","metadata":{"name":"lone"},"spec":{"kernel":"k",' +
      '"pass":"full","dtype":"float32","parameters":{"a":"\\ud800"}}' +
      tail + '}');
    if (r.status === 400) tally.passed++;
    else {
      tally.failed++;
      console.log('FAIL  a lone surrogate answered ' + r.status);
    }
  }
  console.log('# daemon: ' + n + ' dry-run uploads');
}

const tally = main();
if (url) await daemon(tally);
console.log(tally.passed + ' passed, ' + tally.failed + ' failed');
process.exit(tally.failed ? 1 : 0);
