// @ts-check
// nestjs-durable dashboard: The stats header: counters, the per-minute sparkline, the workflows-and-queues table.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { $, el, tableHead, append, clear, fmtDuration, nf, fail } from './dom.js';
import { api } from './api.js';
import { STATUSES } from './constants.js';
import { nav } from './nav.js';
import { refreshCharts } from './charts.js';

// ---------------------------------------------------------------- stats header
export function loadStats() {
  return api('stats').then(renderStats, fail);
}
/**
 * @param {import('./api.js').ApiObject} s GET stats, or a stats event
 */
export function renderStats(s) {
  refreshCharts();
  var t = s.totals;
  var box = clear($('stats'));
  /**
   * @param {string} label
   * @param {string} value
   * @param {string | null} status the colour of its dot (a status), or none
   * @param {boolean} [warn] shown in red
   * @param {string} [title]
   */
  function stat(label, value, status, warn, title) {
    box.appendChild(
      el(
        'div',
        { class: 'stat' + (warn ? ' warn' : ''), title: title || null, 'data-stat': label },
        el('b', null, status ? el('span', { class: 'dot', style: null, 'data-color': status }) : null, value),
        el('span', { text: label }),
      ),
    );
  }
  stat('Pending', nf(t.counts.PENDING), 'PENDING');
  stat('Running', nf(t.counts.RUNNING), 'RUNNING');
  stat('Waiting', nf(t.counts.WAITING), 'WAITING');
  stat(
    'Succeeded · ' + s.windowMinutes + ' min',
    nf(t.counts.SUCCEEDED),
    'SUCCEEDED',
    false,
    'Succeeded in the last ' + s.windowMinutes + ' minutes',
  );
  stat(
    'Failed · ' + s.windowMinutes + ' min',
    nf(t.counts.FAILED),
    'FAILED',
    t.counts.FAILED > 0,
    'Failed in the last ' + s.windowMinutes + ' minutes',
  );
  stat(
    'Oldest due',
    t.oldestClaimableAgeMs == null ? '—' : fmtDuration(t.oldestClaimableAgeMs),
    null,
    t.oldestClaimableAgeMs > 60000,
    'Age of the oldest run waiting for a worker',
  );
  stat('Lost leases', nf(t.expiredLeases), null, t.expiredLeases > 0, 'RUNNING runs whose worker stopped heartbeating');
  if (s.database && s.database.wakeUps === 'polling') {
    stat(
      'Wake-ups',
      'poll · ' + fmtDuration(s.database.pollIntervalMs),
      null,
      false,
      'MariaDB has no LISTEN/NOTIFY: a run started or woken by another instance waits for the next poll of a worker ' +
        '(pollIntervalMs); what an instance starts or wakes itself is told to its workers at once',
    );
  }
  if (s.readReplica) {
    var lag = s.readReplica.lagMs;
    stat(
      'Replica lag',
      lag == null ? (s.readReplica.standby ? '—' : 'not a standby') : fmtDuration(lag),
      null,
      lag > 5000,
      'The list, its counts, these figures and the charts are read from a read replica; this is how far it is behind the primary',
    );
  }
  box.querySelectorAll('.dot[data-color]').forEach(function (node) {
    var d = /** @type {HTMLElement} */ (node);
    d.style.background = 'var(--' + d.getAttribute('data-color') + ')';
  });
  renderSpark(t.perMinute);
  renderGroups(s.groups, s.windowMinutes);
}

var SVG = 'http://www.w3.org/2000/svg';
/**
 * @param {string} tag
 * @param {Record<string, string | number>} attrs
 */
export function svg(tag, attrs) {
  var n = document.createElementNS(SVG, tag);
  for (var k in attrs) n.setAttribute(k, String(attrs[k]));
  return n;
}
/**
 * @param {import('./api.js').ApiObject[]} series per minute
 */
export function renderSpark(series) {
  var w = 180,
    h = 34,
    box = clear($('spark'));
  var started = series.map(function (m) {
    return m.started;
  });
  var done = series.map(function (m) {
    return m.succeeded + m.failed + m.cancelled;
  });
  var max = Math.max.apply(null, started.concat(done).concat([1]));
  function line(/** @type {number[]} */ values, /** @type {string} */ color) {
    var pts = values
      .map(function (/** @type {number} */ v, /** @type {number} */ i) {
        return ((i * (w - 4)) / (values.length - 1) + 2).toFixed(1) + ',' + (h - 3 - (v / max) * (h - 6)).toFixed(1);
      })
      .join(' ');
    return svg('polyline', { points: pts, fill: 'none', stroke: color, 'stroke-width': 1.6, 'stroke-linejoin': 'round' });
  }
  var s = svg('svg', { width: w, height: h, viewBox: '0 0 ' + w + ' ' + h, role: 'img', 'aria-label': 'runs per minute' });
  s.appendChild(line(started, '#5b8cff'));
  s.appendChild(line(done, '#33c28a'));
  var last = series[series.length - 1] || { started: 0, succeeded: 0, failed: 0, cancelled: 0 };
  append(box, [
    s,
    el(
      'div',
      null,
      el('div', { text: 'started ' + last.started + '/min' }),
      el('div', { text: 'finished ' + (last.succeeded + last.failed + last.cancelled) + '/min' }),
    ),
  ]);
}
/**
 * @param {import('./api.js').ApiObject[]} groups
 * @param {number} windowMinutes
 */
export function renderGroups(groups, windowMinutes) {
  var body = clear($('groups-body'));
  var heads = ['Workflow', 'Queue', 'Pending', 'Running', 'Waiting'];
  ['Succeeded', 'Failed', 'Cancelled'].forEach(function (h) {
    heads.push(h + ' (' + windowMinutes + ' min)');
  });
  var table = el(
    'table',
    { class: 'list-table' },
    tableHead(heads.concat(['Oldest due', 'Lost leases', 'Started (1 h)', 'Finished (1 h)'])),
  );
  var tb = el('tbody');
  groups.forEach(function (g) {
    var st = 0,
      fin = 0;
    g.perMinute.forEach(function (/** @type {import('./api.js').ApiObject} */ m) {
      st += m.started;
      fin += m.succeeded + m.failed + m.cancelled;
    });
    tb.appendChild(
      el(
        'tr',
        null,
        el(
          'td',
          null,
          el(
            'a',
            {
              onclick: function () {
                nav.setFilter({ workflow: g.workflow });
              },
            },
            g.workflow,
          ),
        ),
        el('td', { text: g.queue }),
        STATUSES.map(function (s) {
          return el('td', { class: 'num', text: nf(g.counts[s]) });
        }),
        el('td', { class: 'num', text: g.oldestClaimableAgeMs == null ? '—' : fmtDuration(g.oldestClaimableAgeMs) }),
        el('td', { class: 'num', text: nf(g.expiredLeases) }),
        el('td', { class: 'num', text: nf(st) }),
        el('td', { class: 'num', text: nf(fin) }),
      ),
    );
  });
  table.appendChild(tb);
  body.appendChild(groups.length ? table : el('p', { class: 'muted', text: 'No runs yet.' }));
}
