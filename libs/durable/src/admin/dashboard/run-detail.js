// @ts-check
// nestjs-durable dashboard: One run: header, actions, facts, error, tabs.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { $, el, append, clear, fmtDuration, fmtTime, runDuration, badge, cancelling, cancellingTag, nf, toast, fail, copy } from './dom.js';
import { api } from './api.js';
import { ACTIVE } from './constants.js';
import { state, saveHash } from './state.js';
import { downloadRun } from './run-export.js';
import { timeline } from './timeline.js';
import { simpleTable, childrenTable, groupsTable, jsonView, errorBox } from './tables.js';
import { confirmAction } from './actions.js';
import { liveFollow } from './live.js';
import { waitingBox } from './waiting.js';
import { streamsTab } from './streams.js';

// ---------------------------------------------------------------- run detail
/**
 * @param {string} id
 */
export function openRun(id) {
  state.runId = id;
  state.openSteps = {};
  state.tab = 'steps';
  saveHash();
  document.querySelectorAll('#runs-body tr').forEach(function (tr) {
    tr.classList.toggle('selected', tr.getAttribute('data-run') === id);
  });
  liveFollow();
  return loadRun(true);
}
/**
 * A run cancelled with compensation whose every declared undo has run: resuming it would only end it
 * CANCELLED again (fork it to run the workflow again). False when not all its steps are loaded.
 * @param {import('./api.js').ApiObject} r
 */
export function compensated(r) {
  if (r.status !== 'CANCELLED' || !r.cancelRequestedAt || r.totals.steps > r.steps.length) return false;
  /** @type {Record<number, boolean>} */
  var undone = {};
  r.steps.forEach(function (/** @type {import('./api.js').ApiObject} */ s) {
    if (s.compensates != null && s.status === 'SUCCEEDED') undone[s.compensates] = true;
  });
  return r.steps.every(function (/** @type {import('./api.js').ApiObject} */ s) {
    return !s.compensation || s.status !== 'SUCCEEDED' || undone[s.seq];
  });
}

export function closeRun() {
  state.runId = null;
  state.run = null;
  $('detail-view').hidden = true;
  $('main').classList.remove('with-detail');
  document.querySelectorAll('#runs-body tr.selected').forEach(function (tr) {
    tr.classList.remove('selected');
  });
  liveFollow();
  saveHash();
}
/**
 * @param {boolean} first its first render (scrolls to it)
 */
export function loadRun(first) {
  var id = state.runId;
  if (!id) return Promise.resolve();
  return api('runs/' + encodeURIComponent(id)).then(
    function (run) {
      if (state.runId !== id) return;
      state.run = run;
      renderRun(run, first);
    },
    function (err) {
      if (err && err.status === 404 && state.runId === id) {
        closeRun();
        toast('Run ' + id + ' does not exist (any more).', true);
      } else fail(err);
    },
  );
}

/**
 * @param {import('./api.js').ApiObject} r
 * @param {boolean} [first]
 */
export function renderRun(r, first) {
  var pane = $('detail-view');
  var scroll = pane.scrollTop;
  clear(pane);
  pane.hidden = false;
  $('main').classList.add('with-detail');
  var canCancel = ACTIVE.indexOf(r.status) >= 0;
  var canResume = (r.status === 'FAILED' || r.status === 'CANCELLED') && !compensated(r);
  append(pane, [
    el(
      'div',
      { class: 'detail-head' },
      el('button', { type: 'button', class: 'ghost', onclick: closeRun, title: 'Close' }, '✕'),
      el('h2', { id: 'run-id', text: r.id }),
      el('span', { id: 'run-status' }, badge(r.status), cancelling(r) ? cancellingTag() : null),
    ),
    el(
      'div',
      { class: 'detail-actions' },
      el(
        'button',
        {
          type: 'button',
          id: 'btn-cancel',
          class: 'danger',
          disabled: !canCancel,
          title: canCancel ? null : 'The run has ended: nothing to cancel',
          onclick: function () {
            confirmAction('cancel', r);
          },
        },
        'Cancel run',
      ),
      el(
        'button',
        {
          type: 'button',
          id: 'btn-resume',
          disabled: !canResume,
          title: canResume
            ? 'Continue from its last checkpoint'
            : compensated(r)
              ? 'Its compensations are done: resuming would change nothing (fork it to run the workflow again)'
              : 'Only a FAILED or CANCELLED run can be resumed',
          onclick: function () {
            confirmAction('resume', r);
          },
        },
        'Resume',
      ),
      el(
        'button',
        {
          type: 'button',
          id: 'btn-fork',
          class: 'ghost',
          onclick: function () {
            confirmAction('fork', r);
          },
        },
        'Fork…',
      ),
      el(
        'button',
        {
          type: 'button',
          id: 'btn-export',
          class: 'ghost',
          title: 'Download the run and its checkpoints, to replay in a test',
          onclick: function () {
            downloadRun(r.id);
          },
        },
        'Export JSON',
      ),
      el(
        'button',
        {
          type: 'button',
          class: 'ghost',
          onclick: function () {
            copy(r.id);
          },
        },
        'Copy id',
      ),
    ),
    facts(r),
    runExtras.map(function (render) {
      return render(r);
    }),
    waitingBox(r),
    r.error ? errorBox(r.error) : null,
    tabs(r),
  ]);
  if (!first) pane.scrollTop = scroll;
  else if (window.matchMedia && window.matchMedia('(max-width: 1100px)').matches)
    pane.scrollIntoView({ behavior: 'smooth', block: 'start' });
}

/** Renderers other panels add to a run's detail (flow.js: why it has not started). */
/** @type {((r: import('./api.js').ApiObject) => HTMLElement | null)[]} */
export var runExtras = [];

/**
 * @param {import('./api.js').ApiObject} r
 */
export function facts(r) {
  var dl = el('dl', { class: 'facts' });
  /**
   * @param {string} label
   * @param {any} value text or a node
   * @param {string | null} [title] the whole value, on hover
   */
  function f(label, value, title) {
    dl.appendChild(
      el('div', null, el('dt', { text: label }), el('dd', { title: title || (typeof value === 'string' ? value : null) }, value)),
    );
  }
  f('Workflow', r.workflowName);
  f('Queue', r.queue);
  f('Created', fmtTime(r.createdAt), r.createdAt);
  f('Started', fmtTime(r.startedAt), r.startedAt);
  f('Finished', fmtTime(r.finishedAt), r.finishedAt);
  f('Duration', fmtDuration(runDuration(r)));
  f('Attempt / epoch', r.attempt + ' / ' + r.leaseEpoch);
  f('Priority', String(r.priority));
  if (r.leaseOwner) f('Lease owner', r.leaseOwner);
  if (r.leaseExpiresAt) f('Lease expires', fmtTime(r.leaseExpiresAt), r.leaseExpiresAt);
  if (r.deadlineAt) f('Deadline', fmtTime(r.deadlineAt), r.deadlineAt);
  if (r.cancelRequestedAt) f('Cancelled with compensation', fmtTime(r.cancelRequestedAt), r.cancelRequestedAt);
  if (r.status === 'PENDING') f('Due at', fmtTime(r.availableAt), r.availableAt);
  if (r.status === 'WAITING')
    f('Next look', fmtTime(r.availableAt), 'Its timer, or a safety re-check: a message or a child finishing wakes it at once');
  if (r.tags && r.tags.length) f('Tags', r.tags.join(', '));
  if (r.context !== null && r.context !== undefined) {
    // The app's context the run was started with (engine option `context`: tenant, user…).
    var context = JSON.stringify(r.context);
    f(
      'Context',
      el('span', { id: 'run-context', class: 'mono', text: context.length > 200 ? context.slice(0, 199) + '…' : context }),
      context,
    );
  }
  if (r.parentId)
    f(
      'Parent',
      el(
        'a',
        {
          class: 'mono',
          onclick: function () {
            openRun(r.parentId);
          },
        },
        r.parentId,
      ),
      r.parentId,
    );
  if (r.appVersion) f('App version', r.appVersion);
  if (r.traceId) {
    // 32 hex digits: shown whole (it wraps) with a copy button, to paste into the tracing backend.
    f('Trace id', el('span', { id: 'run-trace', class: 'mono', text: r.traceId }), r.traceparent);
    var traced = /** @type {HTMLElement} */ (dl.lastElementChild);
    traced.classList.add('fact-trace');
    traced.appendChild(
      el(
        'button',
        {
          type: 'button',
          id: 'copy-trace',
          class: 'ghost small',
          title: 'Copy the trace id',
          onclick: function () {
            copy(r.traceId);
          },
        },
        'Copy',
      ),
    );
  }
  return dl;
}

/**
 * @param {import('./api.js').ApiObject} r
 */
export function tabs(r) {
  var defs = [
    ['steps', 'Steps', r.totals.steps],
    ['input', 'Input', null],
    ['output', 'Output', null],
    ['messages', 'Messages', r.totals.messages],
    ['events', 'Events', r.totals.events],
    ['streams', 'Streams', null],
    ['history', 'History', r.totals.history],
    ['children', 'Children', r.totals.children],
  ];
  var bar = el('div', { class: 'tabs', role: 'tablist' });
  var body = el('div', { class: 'section', id: 'tab-body' });
  defs.forEach(function (d) {
    bar.appendChild(
      el(
        'button',
        {
          type: 'button',
          class: 'tab',
          role: 'tab',
          'data-tab': d[0],
          'aria-selected': String(state.tab === d[0]),
          onclick: function () {
            state.tab = d[0];
            if (state.run) renderRun(state.run);
          },
        },
        d[1] + (d[2] != null ? ' (' + nf(d[2]) + ')' : ''),
      ),
    );
  });
  var t = state.tab;
  if (t === 'steps') body.appendChild(timeline(r));
  else if (t === 'input') body.appendChild(jsonView(r.input));
  else if (t === 'output') body.appendChild(jsonView(r.output));
  else if (t === 'messages')
    body.appendChild(simpleTable(r.messages, ['id', 'topic', 'payload', 'createdAt', 'consumedSeq'], r.totals.messages));
  else if (t === 'events') body.appendChild(simpleTable(r.events, ['key', 'value', 'updatedAt'], r.totals.events));
  else if (t === 'streams') body.appendChild(streamsTab(r));
  else if (t === 'history') body.appendChild(simpleTable(r.history, ['at', 'kind', 'detail'], r.totals.history));
  else if (t === 'children') body.appendChild(el('div', null, groupsTable(r.groups), childrenTable(r.children, r.totals.children)));
  return el('div', null, bar, body);
}

/** Steps as a Gantt-like timeline: where each step sat in the run, and how long it took. */
