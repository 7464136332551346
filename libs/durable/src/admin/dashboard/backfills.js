// @ts-check
// nestjs-durable dashboard: the backfills panel (runs whose workflow calls Durable.backfill: rows
// done of the estimate, rate, time left; pause and resume). User data is only ever inserted as text.
import { $, el, tableHead, clear, fail, fmtTime, ago, toast } from './dom.js';
/** @typedef {import('./api.js').ApiObject} ApiObject */
import { api } from './api.js';
import { whileOpen } from './panels.js';
import { runLink } from './nav.js';
/** @type {{ backfills: ApiObject[], loaded: boolean }} */
var state = { backfills: [], loaded: false };

function load() {
  return api('backfills')
    .then(function (res) {
      state.backfills = res.backfills;
      state.loaded = true;
    })
    .then(render, fail);
}

/**
 * @param {string} id
 * @param {'pause' | 'resume'} action
 */
function act(id, action) {
  return api('backfills/' + encodeURIComponent(id) + '/' + action, 'POST').then(function () {
    toast(action === 'pause' ? 'Pausing ' + id + ' after its current batch' : 'Resumed ' + id);
    return load();
  }, fail);
}

/** @param {number | null} s */
function fmtSeconds(s) {
  if (s === null) return '—';
  if (s < 90) return s + ' s';
  if (s < 5400) return Math.round(s / 60) + ' min';
  return (s / 3600).toFixed(1) + ' h';
}

/** @param {ApiObject} b */
function rowsText(b) {
  var text = b.done.toLocaleString('en');
  if (b.estimated !== null) text += ' / ' + b.estimated.toLocaleString('en');
  if (b.estimated) text += ' (' + Math.min(100, Math.floor((100 * b.done) / b.estimated)) + ' %)';
  return text;
}

/** @param {ApiObject} b */
function button(b) {
  var active = b.status === 'PENDING' || b.status === 'RUNNING' || b.status === 'WAITING';
  if (!active) return el('span', { class: 'muted' }, '');
  /** @type {'pause' | 'resume'} */
  var action = b.paused ? 'resume' : 'pause';
  return el(
    'button',
    {
      type: 'button',
      class: 'ghost',
      'data-action': action,
      onclick: function () {
        act(b.runId, action);
      },
    },
    b.paused ? 'Resume' : 'Pause',
  );
}

function render() {
  var running = state.backfills.filter(function (b) {
    return b.status === 'RUNNING' || b.status === 'PENDING' || (b.status === 'WAITING' && !b.paused);
  }).length;
  $('backfills-count').textContent = state.loaded ? '(' + state.backfills.length + (running ? ', ' + running + ' running' : '') + ')' : '';
  var box = clear($('backfills-body'));
  if (!state.backfills.length) {
    box.appendChild(
      el('div', { class: 'empty muted' }, 'No backfills. A workflow that calls Durable.backfill() over a table shows here once started.'),
    );
    return;
  }
  box.appendChild(
    el(
      'table',
      { class: 'runs backfills', id: 'backfills-table' },
      tableHead(['Run', 'Workflow', 'Status', 'Rows', 'Rate', 'Left', 'Reported', '']),
      el(
        'tbody',
        null,
        state.backfills.map(function (b) {
          return el(
            'tr',
            { 'data-run': b.runId },
            el('td', null, runLink(b.runId)),
            el('td', { class: 'mono', text: b.workflowName }),
            el('td', {
              'data-status': b.paused ? 'PAUSED' : b.status,
              text: (b.paused ? 'PAUSED' : b.status) + (b.dryRun ? ' (dry run)' : ''),
            }),
            el('td', { 'data-done': String(b.done), text: rowsText(b) }),
            el('td', { text: b.rowsPerSecond === null ? '—' : b.rowsPerSecond.toLocaleString('en') + '/s' }),
            el('td', { text: fmtSeconds(b.etaSeconds) }),
            el('td', null, fmtTime(b.reportedAt), el('div', { class: 'muted', text: ago(b.reportedAt) })),
            el('td', null, button(b)),
          );
        }),
      ),
    ),
  );
}

export function initBackfills() {
  whileOpen('backfills', load);
}
