// @ts-check
// nestjs-durable dashboard: the app versions panel — which versions started the runs still in flight
// (so an operator sees when an old build has drained during a rolling deploy), and what this
// instance is and claims. User data is only ever inserted as text.
import { $, el, tableHead, clear, fail, fmtTime, ago } from './dom.js';
/** @typedef {import('./api.js').ApiObject} ApiObject */
import { api } from './api.js';
import { whileOpen } from './panels.js';
/** @type {{ data: ApiObject | null }} */
var state = { data: null };

function load() {
  return api('versions').then(function (data) {
    state.data = data;
    render();
  }, fail);
}

/**
 * @param {string | null} v
 */
function label(v) {
  return v === null ? '(no version)' : v;
}

function render() {
  if (!state.data) return;
  var data = state.data;
  var total = data.versions.length;
  $('versions-count').textContent = '(' + total + (total === 1 ? ' version' : ' versions') + ' in flight)';
  var box = clear($('versions-body'));
  box.appendChild(
    el(
      'div',
      { class: 'muted', id: 'versions-self' },
      'This instance: ' +
        (data.appVersion === null ? 'no appVersion' : 'version ' + data.appVersion) +
        ' · claims ' +
        (data.claims === null ? 'runs of every version' : 'runs of ' + data.claims.join(', ') + ' (and runs without a version)'),
    ),
  );
  if (!total) {
    box.appendChild(el('div', { class: 'empty muted' }, 'No run in flight.'));
    return;
  }
  box.appendChild(
    el(
      'table',
      { class: 'runs versions', id: 'versions-table' },
      tableHead(['Version', 'In flight', 'Pending', 'Running', 'Waiting', 'Workflows', 'Oldest']),
      el(
        'tbody',
        null,
        data.versions.map(function (/** @type {import('./api.js').ApiObject} */ v) {
          return el(
            'tr',
            { 'data-version': label(v.appVersion) },
            el(
              'td',
              { class: 'mono' },
              label(v.appVersion),
              v.appVersion !== null && v.appVersion === data.appVersion ? el('span', { class: 'muted', text: ' · this instance' }) : null,
            ),
            el('td', { class: 'num', text: String(v.inFlight) }),
            el('td', { class: 'num', text: String(v.pending) }),
            el('td', { class: 'num', text: String(v.running) }),
            el('td', { class: 'num', text: String(v.waiting) }),
            el(
              'td',
              null,
              v.workflows
                .map(function (/** @type {import('./api.js').ApiObject} */ w) {
                  return w.workflow + ' ' + w.inFlight;
                })
                .join(' · '),
            ),
            el('td', null, fmtTime(v.oldestCreatedAt), el('div', { class: 'muted', text: ago(v.oldestCreatedAt) })),
          );
        }),
      ),
    ),
  );
}

export function initVersions() {
  whileOpen('versions', load);
}
