// @ts-check
// nestjs-durable dashboard: The runs list: filters, status chips, paging.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import {
  $,
  button,
  input,
  el,
  clear,
  qs,
  fmtDuration,
  fmtTime,
  ago,
  runDuration,
  badge,
  cancelling,
  cancellingTag,
  nf,
  fail,
} from './dom.js';
import { api } from './api.js';
import { STATUSES } from './constants.js';
import { state, saveHash, syncForm, filterParams } from './state.js';
import { openRun } from './run-detail.js';
import { selectCell, renderBulkBar, clearSelection } from './bulk.js';

/** Workflows whose runs are deleted when they succeed (@Workflow({ deleteOnSuccess })), by name. */
/** @type {Record<string, boolean>} */
var notKept = {};

export function loadWorkflows() {
  return api('workflows').then(function (w) {
    var sel = /** @type {HTMLSelectElement} */ ($('f-workflow'));
    /** @type {Record<string, boolean>} */
    var have = {};
    Array.prototype.forEach.call(sel.options, function (o) {
      have[o.value] = true;
    });
    w.workflows.forEach(function (/** @type {import('./api.js').ApiObject} */ wf) {
      if (wf.options && wf.options.deleteOnSuccess) notKept[wf.name] = true;
      if (!have[wf.name])
        sel.appendChild(el('option', { value: wf.name, text: wf.name + (notKept[wf.name] ? ' (succeeded runs not kept)' : '') }));
    });
    sel.value = state.workflow;
    var dl = clear($('queue-list'));
    w.queues.forEach(function (/** @type {import('./api.js').ApiObject} */ q) {
      dl.appendChild(el('option', { value: q.name }));
    });
  }, fail);
}

// ---------------------------------------------------------------- runs list
export function listParams() {
  /** @type {Record<string, any>} */
  var p = filterParams();
  p.sort = state.sort;
  p.order = state.order;
  p.limit = state.limit;
  p.cursor = state.cursor;
  return p;
}
var listSeq = 0;
export function loadList() {
  var seq = ++listSeq;
  return api('runs' + qs(listParams())).then(function (data) {
    if (seq !== listSeq) return;
    state.list = data;
    state.nextCursor = data.nextCursor;
    renderList(data);
  }, fail);
}
/**
 * @param {Record<string, number> | null} counts
 * @param {string[] | null} capped
 */
export function renderChips(counts, capped) {
  var box = clear($('status-chips'));
  var allOn = state.statuses.length === 0;
  box.appendChild(
    el(
      'button',
      {
        type: 'button',
        class: 'chip',
        'aria-pressed': String(allOn),
        'data-chip': 'ALL',
        onclick: function () {
          setFilter({ statuses: [] });
        },
      },
      'All',
    ),
  );
  STATUSES.forEach(function (s) {
    var on = state.statuses.indexOf(s) >= 0;
    var n = counts
      ? (state.list && state.list.countsEstimated ? '≈' : '') + nf(counts[s]) + (capped && capped.indexOf(s) >= 0 ? '+' : '')
      : '';
    var dot = el('span', { class: 'dot' });
    dot.style.background = 'var(--' + s + ')';
    box.appendChild(
      el(
        'button',
        {
          type: 'button',
          class: 'chip',
          'aria-pressed': String(on),
          'data-chip': s,
          title: 'Click: only ' + s + '. Shift/Ctrl-click: add or remove.',
          onclick: function (/** @type {MouseEvent} */ ev) {
            var next;
            if (ev.shiftKey || ev.ctrlKey || ev.metaKey)
              next = on
                ? state.statuses.filter(function (x) {
                    return x !== s;
                  })
                : state.statuses.concat([s]);
            else next = on && state.statuses.length === 1 ? [] : [s];
            setFilter({ statuses: next });
          },
        },
        dot,
        s.charAt(0) + s.slice(1).toLowerCase(),
        el('span', { class: 'n', text: n }),
      ),
    );
  });
}
/**
 * @param {import('./api.js').ApiObject} data GET runs
 */
export function renderList(data) {
  renderChips(data.counts, data.countsCapped);
  var tb = clear($('runs-body'));
  data.items.forEach(function (/** @type {import('./api.js').ApiObject} */ r) {
    var tr = el(
      'tr',
      {
        'data-run': r.id,
        class: r.id === state.runId ? 'selected' : null,
        onclick: function () {
          openRun(r.id);
        },
      },
      selectCell(r),
      el('td', { class: 'id mono', title: r.id, text: r.id }),
      el('td', { class: 'c-wf', title: r.workflowName, text: r.workflowName }),
      el('td', { class: 'c-queue', text: r.queue }),
      el('td', null, badge(r.status), cancelling(r) ? cancellingTag() : null),
      el('td', { class: 'num c-steps', text: r.stepCount }),
      el('td', { title: fmtTime(r.createdAt), text: ago(r.createdAt) }),
      el('td', { class: 'num', text: fmtDuration(runDuration(r)) }),
      r.errorMessage
        ? el('td', { class: 'c-error', title: r.errorMessage, text: r.errorMessage })
        : r.waits && r.waits.length
          ? el('td', { class: 'c-error c-waits', 'data-waits': '', text: waitsText(r.waits) })
          : el('td', { class: 'c-error c-output', title: r.outputSummary || '', 'data-output': '', text: r.outputSummary || '' }),
    );
    tb.appendChild(tr);
  });
  $('runs-empty').hidden = data.items.length > 0;
  var gone = $('runs-not-kept');
  gone.hidden = !notKept[state.workflow];
  gone.textContent = gone.hidden
    ? ''
    : 'Runs of ' +
      state.workflow +
      ' that succeed are deleted at their end (deleteOnSuccess): only its active, failed and cancelled runs are here.';
  var page = state.cursors.length + 1;
  var more = data.countsCapped.some(function (/** @type {string} */ s) {
    return !state.statuses.length || state.statuses.indexOf(s) >= 0;
  })
    ? '+'
    : '';
  var about = data.countsEstimated ? '≈' : '';
  $('page-info').textContent = 'Page ' + page + ' · ' + about + nf(data.total) + more + (data.total === 1 && !more ? ' run' : ' runs');
  $('page-info').title = about ? "Counting exactly took over a second: these are the database planner's estimates" : '';
  button('prev').disabled = state.cursors.length === 0;
  button('next').disabled = !data.nextCursor;
  renderBulkBar();
}
/** Text typed into the filter inputs counts even if its debounce has not fired yet. */
export function readTyped() {
  state.queue = input('f-queue').value.trim();
  state.idPrefix = input('f-id').value.trim();
  state.parentId = input('f-parent').value.trim();
  state.tag = input('f-tag').value.trim();
  state.input = input('f-input').value.trim();
}
/**
 * @param {Record<string, any>} patch fields of the page state
 */
export function setFilter(patch) {
  readTyped();
  clearSelection();
  Object.assign(state, patch);
  state.cursor = null;
  state.cursors = [];
  syncForm();
  saveHash();
  renderChips(state.list && state.list.counts, state.list && state.list.countsCapped);
  loadList();
}

/**
 * What a WAITING run waits for, in a few words: "waits for message shipment, timer".
 * @param {import('./api.js').ApiObject[]} waits
 */
export function waitsText(waits) {
  return (
    'waits for ' +
    waits
      .map(function (w) {
        return w.kind === 'recv'
          ? 'message ' + w.key
          : w.kind === 'child'
            ? 'child ' + w.key
            : w.kind === 'group'
              ? 'group of children (step ' + w.key + ')'
              : w.kind === 'sleep'
                ? 'timer'
                : w.kind;
      })
      .join(' or ')
  );
}
