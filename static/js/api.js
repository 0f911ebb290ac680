// api.js — the page's only door to the daemon: the public REST API.

export const GROUP_VERSION = 'kernelindex.dev/v1alpha1';
export const BASE = `/apis/${GROUP_VERSION}`;
export const PAGE_MAX = 1000;

export class ApiError extends Error {
  constructor(status, body, url) {
    const msg = body && typeof body.message === 'string' ? body.message : `HTTP ${status}`;
    super(msg);
    this.status = status;
    this.body = body;
    this.url = url;
    this.reason = body && body.reason;
  }
}

async function getJSON(url, signal) {
  let r;
  try {
    r = await fetch(url, { headers: { Accept: 'application/json' }, signal });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, { message: `the server did not answer (${e.message})` }, url);
  }
  let body = null;
  try {
    body = await r.json();
  } catch {
    body = null;
  }
  if (!r.ok) throw new ApiError(r.status, body, url);
  if (body === null) throw new ApiError(r.status, { message: 'the answer was not JSON' }, url);
  return body;
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

export function listURL(plural, { limit, cont, labelSelector, fieldSelector } = {}) {
  return `${BASE}/${plural}${query({ limit, continue: cont, labelSelector, fieldSelector })}`;
}

export const itemURL = (plural, name) => `${BASE}/${plural}/${encodeURIComponent(name)}`;
export const objectURL = (digest) => `${BASE}/objects/${digest}`;
export const facetsURL = (labelSelector) => `${BASE}/facets${query({ labelSelector })}`;

/* One page of a collection. */
export function list(plural, opts = {}, signal) {
  return getJSON(listURL(plural, opts), signal);
}

/* Pages of a collection, one at a time, until `max` items or the end. */
export async function* pages(plural, opts, max, signal) {
  let cont = opts.cont;
  let n = 0;
  do {
    const limit = Math.min(PAGE_MAX, opts.limit || PAGE_MAX, max - n);
    const page = await list(plural, { ...opts, limit, cont }, signal);
    n += page.items.length;
    cont = page.metadata && page.metadata.continue;
    yield page;
  } while (cont && n < max);
}

export const get = (plural, name, signal) => getJSON(itemURL(plural, name), signal);

export const facets = (labelSelector, signal) => getJSON(facetsURL(labelSelector), signal);

export const DIGEST_RE = /^sha256:[0-9a-f]{64}$/;

/* Objects by digest are immutable: each is fetched once per page load, at
 * most six at a time, and kept. */
const objects = new Map();
const waiting = [];
let inFlight = 0;

function pump() {
  while (inFlight < 6 && waiting.length) {
    const job = waiting.shift();
    inFlight += 1;
    getJSON(objectURL(job.digest))
      .then(job.ok, job.fail)
      .finally(() => {
        inFlight -= 1;
        pump();
      });
  }
}

export function object(digest) {
  if (!DIGEST_RE.test(String(digest))) return Promise.reject(new ApiError(400, { message: `not a digest: ${digest}` }, ''));
  let p = objects.get(digest);
  if (!p) {
    p = new Promise((ok, fail) => {
      waiting.push({ digest, ok, fail });
      pump();
    });
    objects.set(digest, p);
    p.catch(() => objects.delete(digest));
  }
  return p;
}

/* The object if it was already fetched, else undefined (no request). */
export function objectCached(digest) {
  return objects.get(digest);
}

/*
 * Follows a watch stream: newline-delimited JSON events read from fetch()'s
 * body. Reconnects from the last resourceVersion seen, with a growing delay;
 * an ERROR event with code 410 (the version is too old) calls onGone so the
 * view lists again and resumes from the new list's version.
 * on: {event(ev), state(s, detail), gone()}; states: connecting, live,
 * retrying, unsupported, stopped. Returns {stop(), resourceVersion()}.
 */
export function watch(plural, { labelSelector, resourceVersion }, on) {
  let rv = resourceVersion;
  let stopped = false;
  let ctl = null;
  let delay = 500;
  let timer = null;

  const state = (s, d) => on.state && on.state(s, d);

  async function connect() {
    if (stopped) return;
    ctl = new AbortController();
    state('connecting');
    const url = `${BASE}/${plural}${query({ watch: 'true', resourceVersion: rv, labelSelector, allowWatchBookmarks: 'true' })}`;
    let unsupported = false;
    try {
      const r = await fetch(url, { headers: { Accept: 'application/json' }, signal: ctl.signal });
      if (!r.ok || !r.body) {
        let body = null;
        try {
          body = await r.json();
        } catch { /* not JSON */ }
        if (r.status === 410) {
          on.gone && on.gone();
          return;
        }
        if (r.status >= 400 && r.status < 500 && r.status !== 429) {
          stopped = true;
          state('unsupported', body && body.message);
          return;
        }
        throw new ApiError(r.status, body, url);
      }
      state('live');
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        // A server without watch answers with the plain list, which starts
        // with its kind; events start with their type.
        if (/^\s*\{\s*"(kind|apiVersion|items|metadata)"/.test(buf)) {
          unsupported = true;
          break;
        }
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line) continue;
          let ev;
          try {
            ev = JSON.parse(line);
          } catch {
            continue;
          }
          delay = 500;
          if (ev.type === 'ERROR') {
            if (ev.object && ev.object.code === 410) {
              ctl.abort();
              on.gone && on.gone();
              return;
            }
            continue;
          }
          const orv = ev.object && ev.object.metadata && ev.object.metadata.resourceVersion;
          if (orv) rv = orv;
          if (ev.type === 'BOOKMARK') continue;
          on.event(ev);
        }
      }
      if (unsupported) {
        ctl.abort();
        stopped = true;
        state('unsupported');
        return;
      }
    } catch (e) {
      if (stopped || (e && e.name === 'AbortError')) return;
      state('retrying', e.message);
    }
    if (stopped) return;
    state('retrying');
    timer = setTimeout(connect, delay);
    delay = Math.min(delay * 2, 15000);
  }

  connect();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      if (ctl) ctl.abort();
      state('stopped');
    },
    resourceVersion: () => rv,
  };
}
