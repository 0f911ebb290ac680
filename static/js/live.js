// live.js — one watch stream at a time, for the view on screen, and the
// header's word on whether the page is live.

import { watch } from './api.js';

let current = null;
let key = '';
const subscribers = new Set();
let lastState = 'off';

const TEXT = {
  off: 'Live updates off',
  connecting: 'Connecting to live updates…',
  live: 'Live: new results appear as they arrive',
  retrying: 'Live updates interrupted, reconnecting…',
  unsupported: 'Live updates unavailable: this server does not stream watch events',
  stopped: 'Live updates off',
};

function show(state) {
  lastState = state;
  const box = document.getElementById('live');
  const text = document.getElementById('live-text');
  if (!box || !text) return;
  box.dataset.state = state;
  text.textContent = TEXT[state] || state;
}

export const state = () => lastState;

/*
 * Follows benchmarkruns matching `labelSelector` from resourceVersion `rv`.
 * A call with the same selector keeps the running stream. onGone is called
 * when the server says the version is too old, so the view lists anew.
 */
export function follow(labelSelector, rv, onGone) {
  const k = labelSelector || '';
  if (current && key === k) return;
  stop();
  key = k;
  current = watch('benchmarkruns', { labelSelector: k || undefined, resourceVersion: rv }, {
    event(ev) {
      for (const fn of subscribers) fn(ev);
    },
    state: show,
    gone() {
      current = null;
      key = '';
      if (onGone) onGone();
    },
  });
}

export function stop() {
  if (current) current.stop();
  current = null;
  key = '';
}

/* fn(event) for every event of the stream; returns the unsubscriber. */
export function subscribe(fn) {
  subscribers.add(fn);
  return () => subscribers.delete(fn);
}

/* Says something to screen readers without moving focus. */
export function announce(msg) {
  const el = document.getElementById('announce');
  if (el) el.textContent = msg;
}
