// @ts-check
// nestjs-durable dashboard: Small tables (messages, events, history, children) and the JSON viewer.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { el, tableHead, fmtTime, badge, nf } from './dom.js';
import { runLink } from './nav.js';

/**
 * @param {import('./api.js').ApiObject[]} rows
 * @param {string[]} cols
 * @param {number} total
 */
export function simpleTable(rows, cols, total) {
  if (!rows.length) return el('p', { class: 'muted', text: 'None.' });
  var table = el('table', { class: 'list-table' }, tableHead(cols));
  var tb = el('tbody');
  rows.forEach(function (row) {
    tb.appendChild(
      el(
        'tr',
        null,
        cols.map(function (c) {
          var v = row[c];
          if (v !== null && typeof v === 'object') return el('td', null, jsonView(v, 1));
          return el('td', { class: /At$/.test(c) ? '' : 'mono', text: /At$|^at$/.test(c) ? fmtTime(v) : v == null ? '—' : v });
        }),
      ),
    );
  });
  table.appendChild(tb);
  return el(
    'div',
    null,
    table,
    total > rows.length ? el('p', { class: 'muted', text: rows.length + ' of ' + nf(total) + ' shown.' }) : null,
  );
}

/**
 * @param {import('./api.js').ApiObject[]} rows
 * @param {number} total
 */
export function childrenTable(rows, total) {
  if (!rows.length) return el('p', { class: 'muted', text: 'No child runs.' });
  var tb = el('tbody');
  rows.forEach(function (c) {
    tb.appendChild(
      el(
        'tr',
        null,
        el('td', null, runLink(c.id)),
        el('td', { text: c.workflowName }),
        el('td', null, badge(c.status)),
        el('td', { text: fmtTime(c.createdAt) }),
      ),
    );
  });
  return el(
    'div',
    null,
    el('table', { class: 'list-table' }, tableHead(['Run', 'Workflow', 'Status', 'Created']), tb),
    total > rows.length ? el('p', { class: 'muted', text: rows.length + ' of ' + nf(total) + ' shown.' }) : null,
  );
}

/**
 * Groups of children a run started (Durable.startChildren): one row each, with its counters.
 * @param {Array<any>} groups
 */
export function groupsTable(groups) {
  if (!groups || !groups.length) return null;
  var tb = el('tbody');
  groups.forEach(function (g) {
    tb.appendChild(
      el(
        'tr',
        { 'data-group': String(g.seq) },
        el('td', { text: 'step ' + g.seq }),
        el('td', { text: g.workflow }),
        el('td', { text: nf(g.created) + ' of ' + nf(g.total) }),
        el('td', { text: nf(g.ended) + ' (' + (g.total ? Math.floor((100 * g.ended) / g.total) : 100) + ' %)' }),
        el('td', { text: nf(g.succeeded) }),
        el('td', { text: nf(g.failed) }),
        el('td', { text: nf(g.cancelled) }),
        el('td', { text: g.waitingFor > g.ended ? 'until ' + nf(g.waitingFor) + ' ended' : '—' }),
      ),
    );
  });
  return el(
    'div',
    { class: 'groups' },
    el('h3', { text: 'Groups of children' }),
    el(
      'table',
      { class: 'list-table' },
      tableHead(['Group', 'Workflow', 'Created', 'Ended', 'Succeeded', 'Failed', 'Cancelled', 'Parent waits']),
      tb,
    ),
  );
}

/**
 * An error as its name and message, and its stack (if any) as preformatted lines; `id` names the box.
 * @param {any} error
 * @param {string | null} [id]
 */
export function errorBox(error, id) {
  var msg =
    error && typeof error === 'object' ? (error.name ? error.name + ': ' : '') + (error.message || JSON.stringify(error)) : String(error);
  return el(
    'div',
    { class: 'error-box', id: id === undefined ? 'run-error' : id },
    el('strong', { text: msg }),
    error && error.stack ? el('pre', { class: 'mono', text: error.stack }) : null,
  );
}

// ---------------------------------------------------------------- JSON viewer
/**
 * @param {unknown} value
 * @param {number} [openDepth] levels shown unfolded (2)
 */
export function jsonView(value, openDepth) {
  var box = el('div', { class: 'json' });
  box.appendChild(jsonNode(value, openDepth == null ? 2 : openDepth, 0));
  return box;
}
/**
 * @param {any} v
 * @param {number} openDepth
 * @param {number} depth
 * @returns {HTMLElement}
 */
export function jsonNode(v, openDepth, depth) {
  if (v === null || v === undefined) return el('span', { class: 'z', text: 'null' });
  if (typeof v === 'string') return el('span', { class: 's', text: JSON.stringify(v) });
  if (typeof v === 'number') return el('span', { class: 'n', text: String(v) });
  if (typeof v === 'boolean') return el('span', { class: 'b', text: String(v) });
  var isArr = Array.isArray(v);
  var keys = isArr
    ? v.map(function (/** @type {unknown} */ _, /** @type {number} */ i) {
        return i;
      })
    : Object.keys(v);
  if (!isArr && typeof v.$durable === 'string' && keys.length <= 2) {
    // A value the codec tagged (Date, BigInt, undefined, Map, Set, …): show it as what it is.
    return el('span', null, el('span', { class: 'tag', text: v.$durable + ' ' }), 'v' in v ? jsonNode(v.v, openDepth, depth + 1) : '');
  }
  if (!keys.length) return el('span', { text: isArr ? '[]' : '{}' });
  var d = el('details', depth < openDepth ? { open: true } : null);
  d.appendChild(
    el('summary', { text: (isArr ? '[' : '{') + (depth < openDepth ? '' : ' … ' + keys.length + (isArr ? ' items ]' : ' keys }')) }),
  );
  var kids = el('div', { class: 'kids' });
  keys.slice(0, 1000).forEach(function (/** @type {string | number} */ k, /** @type {number} */ i) {
    kids.appendChild(
      el(
        'div',
        null,
        isArr ? null : el('span', { class: 'k', text: JSON.stringify(String(k)) }),
        isArr ? null : ': ',
        jsonNode(v[k], openDepth, depth + 1),
        i < keys.length - 1 ? ',' : '',
      ),
    );
  });
  if (keys.length > 1000) kids.appendChild(el('div', { class: 'z', text: '… ' + (keys.length - 1000) + ' more' }));
  d.appendChild(kids);
  d.appendChild(el('span', { text: isArr ? ']' : '}' }));
  return d;
}
