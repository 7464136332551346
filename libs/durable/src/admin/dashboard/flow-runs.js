// @ts-check
// nestjs-durable dashboard: runs that flow control holds or joins: in the flow panel, runs waiting
// out a debounce and singleton runs holding their dedupe key; in a run's detail, what holds it back.
// User data is only ever inserted as text, never as HTML.
import { el, tableHead, fmtTime } from './dom.js';
import { runLink } from './nav.js';

/**
 * Runs waiting out a debounce, and active runs holding a dedupe key (starts with those keys join them).
 * @param {HTMLElement} box
 * @param {import('./api.js').ApiObject[]} debounced GET flow's debounced runs
 * @param {import('./api.js').ApiObject[]} singletons GET flow's singleton runs
 */
export function keyedRuns(box, debounced, singletons) {
  var table = function (
    /** @type {string} */ id,
    /** @type {string} */ title,
    /** @type {string[]} */ heads,
    /** @type {HTMLElement[]} */ rows,
  ) {
    if (!rows.length) return;
    box.appendChild(
      el('div', { id: id }, el('b', null, title), el('table', { class: 'flow-keys' }, tableHead(heads), el('tbody', null, rows))),
    );
  };
  table(
    'flow-debounced',
    'Debounced runs (later starts with the key join them)',
    ['Workflow', 'Debounce key', 'Run', 'Starts at', 'At the latest'],
    debounced.map(function (r) {
      return el(
        'tr',
        null,
        el('td', { text: r.workflow }),
        el('td', { class: 'mono', text: r.key }),
        el('td', null, runLink(r.runId)),
        el('td', { text: fmtTime(r.startsAt) }),
        el('td', { text: r.latestStart ? fmtTime(r.latestStart) : '—' }),
      );
    }),
  );
  table(
    'flow-singletons',
    'Singleton runs (starts with the dedupe key return them)',
    ['Workflow', 'Dedupe key', 'Run', 'Status'],
    singletons.map(function (r) {
      return el(
        'tr',
        null,
        el('td', { text: r.workflow }),
        el('td', { class: 'mono', text: r.key }),
        el('td', null, runLink(r.runId)),
        el('td', { text: r.status }),
      );
    }),
  );
}

/**
 * In a run's detail: its concurrency key and, while it waits, what holds it back.
 * @param {import('./api.js').ApiObject} r the open run
 */
export function blockers(r) {
  var b = r.startBlockers;
  if (!b && !r.concurrencyKey) return null;
  var lines = [];
  if (r.concurrencyKey)
    lines.push(el('div', null, el('b', null, 'Concurrency key: '), el('span', { class: 'mono', text: r.concurrencyKey })));
  // Its time (a delay, a timer, a safety re-check) is told by the Waiting box: here only the limits that hold it back.
  var notDue = b && b.availableAt && new Date(b.availableAt).getTime() > new Date(r.now || Date.now()).getTime();
  var limits = b ? (notDue ? b.reasons.slice(1) : b.reasons) : [];
  if (limits.length) lines.push(el('div', null, el('b', null, 'Held back by flow control: '), limits.join(' · ')));
  if (!lines.length) return null;
  return el('div', { class: 'flow-why', id: 'run-blockers' }, lines);
}
