// @ts-check
// nestjs-durable dashboard: bulk actions on the runs list: a selection of rows, or every run the
// filter matches. Always a dry run first (POST runs/bulk/preview: how many runs, a token), then the
// confirmed batches (POST runs/bulk/execute) with their progress.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { $, button, dialog, input, el, clear, nf, toast, fail } from './dom.js';
import { api } from './api.js';
import { ACTIVE, STATUSES } from './constants.js';
import { state, filterParams } from './state.js';
import { nav } from './nav.js';

/** Runs per execute request: small enough that each answers quickly, so the progress moves. */
var BATCH = 100;
/** Each action with the statuses it acts on (the server skips the others): offered only when the scope has such runs. */
var ACTIONS = [
  { action: 'cancel', label: 'Cancel', title: 'Cancel the unfinished ones', danger: true, acts: ACTIVE },
  {
    action: 'resume',
    label: 'Resume',
    title: 'Resume the FAILED and CANCELLED ones from their last checkpoint',
    acts: ['FAILED', 'CANCELLED'],
  },
  { action: 'retry', label: 'Retry failed', title: 'Resume the FAILED ones from their failed step', acts: ['FAILED'] },
  {
    action: 'delete',
    label: 'Delete finished',
    title: 'Delete the finished ones with their steps, messages, events and history',
    danger: true,
    acts: ['SUCCEEDED', 'FAILED', 'CANCELLED'],
  },
];
/** @type {Record<string, string>} */
var VERB = { cancel: 'Cancel', resume: 'Resume', retry: 'Retry', delete: 'Delete' };

/** ids ticked on the current page, or `all`: every run the filter matches (on any page). */
/** @type {{ ids: Record<string, boolean>, all: boolean }} */
var sel = { ids: {}, all: false };

function selectedIds() {
  return Object.keys(sel.ids);
}
export function clearSelection() {
  sel.ids = {};
  sel.all = false;
}

/**
 * The checkbox cell of a row of the runs list.
 * @param {import('./api.js').ApiObject} r a row of the runs list
 */
export function selectCell(r) {
  var box = /** @type {HTMLInputElement} */ (
    el('input', {
      type: 'checkbox',
      class: 'sel',
      'data-select': r.id,
      'aria-label': 'Select run ' + r.id,
      checked: sel.all || !!sel.ids[r.id],
      disabled: sel.all,
    })
  );
  box.addEventListener('change', function () {
    if (box.checked) sel.ids[r.id] = true;
    else delete sel.ids[r.id];
    renderBulkBar();
  });
  return el(
    'td',
    {
      class: 'c-sel',
      onclick: function (/** @type {Event} */ e) {
        e.stopPropagation();
      },
    },
    box,
  );
}

/** The bar above the list: what is selected, "all N matching", and the actions. */
export function renderBulkBar() {
  var bar = $('bulk-bar');
  var n = selectedIds().length;
  var total = state.list ? state.list.total : 0;
  var capped = state.list && state.list.countsCapped.length ? '+' : '';
  input('select-page').checked = sel.all || (n > 0 && n === document.querySelectorAll('#runs-body input.sel').length);
  clear(bar);
  bar.hidden = !sel.all && n === 0;
  if (bar.hidden) return;
  bar.appendChild(
    el(
      'span',
      { id: 'bulk-scope', class: 'bulk-scope' },
      sel.all
        ? 'All ' + (state.list && state.list.countsEstimated ? '≈' : '') + nf(total) + capped + ' runs matching this filter are selected. '
        : n + ' selected on this page. ',
    ),
  );
  if (!sel.all && total > n) {
    bar.appendChild(
      el(
        'a',
        {
          id: 'select-all-matching',
          onclick: function () {
            sel.all = true;
            sel.ids = {};
            rerenderBoxes();
          },
        },
        'Select all ' + nf(total) + capped + ' matching this filter',
      ),
    );
  }
  bar.appendChild(
    el(
      'a',
      {
        class: 'muted',
        onclick: function () {
          clearSelection();
          rerenderBoxes();
        },
      },
      ' Clear',
    ),
  );
  var actions = el('span', { class: 'bulk-actions' });
  var present = scopeStatuses();
  ACTIONS.forEach(function (a) {
    var useful = a.acts.some(function (s) {
      return present.indexOf(s) >= 0;
    });
    actions.appendChild(
      el(
        'button',
        {
          type: 'button',
          class: a.danger ? 'danger' : 'ghost',
          'data-bulk': a.action,
          disabled: !useful,
          title: useful ? a.title : 'No ' + a.acts.join(' or ') + ' run is selected: nothing to ' + a.action,
          onclick: function () {
            start(a.action);
          },
        },
        a.label,
      ),
    );
  });
  bar.appendChild(actions);
}

/**
 * The statuses of the runs selected: of the ticked rows, or (all matching) those the filter's counts show.
 * @returns {string[]}
 */
function scopeStatuses() {
  var list = state.list;
  if (!list) return [];
  if (sel.all) {
    var counts = list.counts;
    return STATUSES.filter(function (s) {
      return (!state.statuses.length || state.statuses.indexOf(s) >= 0) && counts[s] > 0;
    });
  }
  return list.items
    .filter(function (/** @type {import('./api.js').ApiObject} */ r) {
      return sel.ids[r.id];
    })
    .map(function (/** @type {import('./api.js').ApiObject} */ r) {
      return r.status;
    });
}

function rerenderBoxes() {
  document.querySelectorAll('#runs-body input.sel').forEach(function (node) {
    var b = /** @type {HTMLInputElement} */ (node);
    b.checked = sel.all || !!sel.ids[String(b.getAttribute('data-select'))];
    b.disabled = sel.all;
  });
  renderBulkBar();
}

/** The filter the action applies to: the list's filter, or exactly the ticked runs. */
function scopeFilter() {
  if (sel.all) return filterParams();
  return { id: selectedIds() };
}

/**
 * @param {Record<string, any>} filter
 */
function describe(filter) {
  if (filter.id) return filter.id.length + ' selected run(s)';
  /** @type {string[]} */
  var parts = [];
  Object.keys(filter).forEach(function (k) {
    if (filter[k] !== null && filter[k] !== '' && filter[k] !== undefined) parts.push(k + '=' + filter[k]);
  });
  return parts.length ? 'runs matching ' + parts.join(', ') : 'all runs';
}

/**
 * Dry run, then the confirmation dialog with the count; confirmed, the batches with progress.
 * @param {string} action cancel, resume, retry or delete
 */
function start(action) {
  var filter = scopeFilter();
  var body = { action: action, filter: stripEmpty(filter) };
  api('runs/bulk/preview', 'POST', body).then(function (p) {
    var dlg = dialog('bulk-confirm');
    $('bulk-title').textContent = VERB[action] + ' ' + nf(p.matched) + (p.capped ? '+' : '') + ' run(s)?';
    $('bulk-text').textContent =
      p.matched === 0
        ? 'No run among the ' +
          describe(filter) +
          ' can be ' +
          (action === 'delete'
            ? 'deleted (only finished runs can)'
            : action === 'cancel'
              ? 'cancelled (only unfinished runs can)'
              : 'resumed') +
          '.'
        : VERB[action] +
          ' ' +
          describe(filter) +
          ' (' +
          Object.keys(p.byStatus)
            .map(function (s) {
              return nf(p.byStatus[s]) + ' ' + s;
            })
            .join(', ') +
          '). Runs created from now on are not affected. ' +
          (action === 'delete' ? 'This cannot be undone.' : '');
    $('bulk-compensate-label').hidden = action !== 'cancel';
    input('bulk-compensate').checked = false;
    $('bulk-progress').hidden = true;
    button('bulk-yes').disabled = p.matched === 0;
    $('bulk-yes').textContent = VERB[action] + ' ' + nf(p.matched);
    $('bulk-yes').className = action === 'cancel' || action === 'delete' ? 'danger' : '';
    $('bulk-yes').onclick = function (e) {
      e.preventDefault();
      var compensate = action === 'cancel' && input('bulk-compensate').checked;
      // The compensate choice is part of the dry run's token: preview again with it.
      var confirmed = compensate
        ? api('runs/bulk/preview', 'POST', { action: action, filter: body.filter, compensate: true })
        : Promise.resolve(p);
      button('bulk-yes').disabled = true;
      confirmed
        .then(function (q) {
          return run(q.token, q.matched);
        })
        .then(
          function (last) {
            dlg.close();
            toast(
              VERB[action] +
                ': ' +
                nf(last.done) +
                ' run(s) done' +
                (last.skipped ? ', ' + nf(last.skipped) + ' skipped (their status changed meanwhile)' : ''),
            );
            clearSelection();
            nav.refreshAll();
          },
          function (err) {
            dlg.close();
            fail(err);
            nav.refreshAll();
          },
        );
    };
    dlg.showModal();
  }, fail);
}

/**
 * Executes batch after batch until the token runs out, showing the progress.
 * @param {string} token the dry run's token
 * @param {number} matched
 */
function run(token, matched) {
  $('bulk-progress').hidden = false;
  /**
   * @param {string | null} t the token of the next batch (null: done)
   * @param {import('./api.js').ApiObject} last the latest batch's answer
   * @returns {Promise<import('./api.js').ApiObject>}
   */
  function step(t, last) {
    if (!t) return Promise.resolve(last);
    return api('runs/bulk/execute', 'POST', { token: t, batchSize: BATCH }).then(function (res) {
      var frac = matched ? Math.min(1, (res.done + res.skipped) / matched) : 1;
      $('bulk-progress-bar').style.width = (frac * 100).toFixed(1) + '%';
      $('bulk-progress-text').textContent =
        nf(res.done) + ' done' + (res.skipped ? ', ' + nf(res.skipped) + ' skipped' : '') + ' of ' + nf(matched);
      return step(res.token, res);
    });
  }
  return step(token, { done: 0, skipped: 0 });
}

/**
 * @param {Record<string, any>} o
 */
function stripEmpty(o) {
  /** @type {Record<string, any>} */
  var out = {};
  Object.keys(o).forEach(function (k) {
    if (o[k] !== null && o[k] !== '' && o[k] !== undefined) out[k] = o[k];
  });
  return out;
}

/** Wires the page checkbox; a new filter clears the selection. */
export function initBulk() {
  $('select-page').addEventListener('change', function () {
    var on = input('select-page').checked;
    sel.all = false;
    document.querySelectorAll('#runs-body input.sel').forEach(function (b) {
      var id = String(b.getAttribute('data-select'));
      if (on) sel.ids[id] = true;
      else delete sel.ids[id];
    });
    rerenderBoxes();
  });
}
