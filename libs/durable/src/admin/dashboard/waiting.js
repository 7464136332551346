// @ts-check
// nestjs-durable dashboard: what a PENDING or WAITING run waits for — a message (topic), a child
// run, a timer — from its latest `suspended` history row and its recorded waits; and when it is due.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { el, fmtTime, ago } from './dom.js';
import { nav } from './nav.js';

/**
 * The latest `suspended` row of the history (the detail lists the latest rows, oldest first).
 * @param {import('./api.js').ApiObject} r
 */
function lastSuspension(r) {
  for (var i = r.history.length - 1; i >= 0; i--) {
    var h = r.history[i];
    if (h.kind === 'suspended') return h;
    if (h.kind === 'claimed' || h.kind === 'resumed') return null; // ran since: the suspension is over
  }
  return null;
}

/**
 * @param {import('./api.js').ApiObject} r
 * @param {import('./api.js').ApiObject} w
 * @param {string} until
 */
function waitItem(r, w, until) {
  // A recv with a timeout records its deadline as a WAITING step at its position; one without records nothing.
  var timeout = r.steps.some(function (/** @type {import('./api.js').ApiObject} */ s) {
    return s.seq === w.seq && s.status === 'WAITING' && !!(s.wait && s.wait.until);
  });
  if (w.kind === 'recv')
    return el(
      'li',
      { 'data-wait': 'recv' },
      'a message on topic ',
      el('b', { class: 'mono', text: w.key }),
      timeout ? ' (or its timeout)' : ' (no timeout)',
    );
  if (w.kind === 'group')
    return el('li', { 'data-wait': 'group' }, 'the children of the group started at step ' + w.key + ' (the Children tab counts them)');
  if (w.kind === 'child')
    return el(
      'li',
      { 'data-wait': 'child' },
      'child run ',
      el(
        'a',
        {
          class: 'mono',
          onclick: function () {
            nav.openRun(w.key);
          },
        },
        w.key,
      ),
      ' to finish',
    );
  if (w.kind === 'sleep')
    return el('li', { 'data-wait': 'sleep' }, 'a timer (Durable.sleep) until ', fmtTime(until), ' (', ago(until), ')');
  return el('li', { text: w.kind + (w.key ? ' ' + w.key : '') });
}

/**
 * The "Waiting for" box of a PENDING or WAITING run, or null. A WAITING run's available_at is the
 * time it is looked at again: its timer, or (waiting for a message or a child without timeout) a
 * safety re-check; a message or a child finishing wakes it at once.
 * @param {import('./api.js').ApiObject} r
 */
export function waitingBox(r) {
  if (r.status === 'PENDING') {
    var due = new Date(r.availableAt).getTime() <= Date.now();
    return el(
      'div',
      { class: 'waiting-box', id: 'run-waiting', 'data-waiting': due ? 'worker' : 'delay' },
      due
        ? [
            'Due since ',
            fmtTime(r.availableAt),
            ': waiting for a free worker slot on queue ',
            el('b', { class: 'mono', text: r.queue }),
            '.',
          ]
        : ['Not before ', fmtTime(r.availableAt), ' (', ago(r.availableAt), '): a start delay or a retry back-off.'],
    );
  }
  if (r.status !== 'WAITING') return null;
  var s = lastSuspension(r);
  var waits = s && s.detail && Array.isArray(s.detail.waits) ? s.detail.waits : [];
  var timed = waits.some(function (/** @type {import('./api.js').ApiObject} */ w) {
    return w.kind === 'sleep';
  });
  return el(
    'div',
    {
      class: 'waiting-box',
      id: 'run-waiting',
      'data-waiting':
        waits
          .map(function (/** @type {import('./api.js').ApiObject} */ w) {
            return w.kind;
          })
          .join(',') || 'unknown',
    },
    el('strong', {
      text: 'Waiting for ' + (waits.length > 1 ? 'the first of:' : waits.length ? '' : 'something (history is off or trimmed)'),
    }),
    waits.length
      ? el(
          'ul',
          null,
          waits.map(function (/** @type {import('./api.js').ApiObject} */ w) {
            return waitItem(r, w, s.detail.until);
          }),
        )
      : null,
    el('div', {
      class: 'muted',
      text: timed
        ? 'Wakes at ' + fmtTime(r.availableAt) + '.'
        : 'Woken at once when it arrives; looked at again by ' +
          fmtTime(r.availableAt) +
          ' in any case (a safety re-check, not a deadline).',
    }),
  );
}
