// @ts-check
// nestjs-durable dashboard: the schedules panel (next and last fire, policies, paused state, latest
// runs; pause, resume, trigger). User data is only ever inserted as text, never as HTML.
import { $, dialog, el, tableHead, clear, qs, badge, toast, fail, fmtTime, ago } from './dom.js';
/** @typedef {import('./api.js').ApiObject} ApiObject */
import { api } from './api.js';
import { runLink } from './nav.js';
import { whileOpen } from './panels.js';
import { ask } from './actions.js';
import { deleteSchedule, editSchedule } from './schedule-editor.js';
var PAGE = 50;
/** @type {{ items: ApiObject[], nextCursor: string | null, open: string | null, detail: ApiObject | null, loaded: boolean }} */
var state = { items: [], nextCursor: null, open: null, detail: null, loaded: false };

/**
 * @param {boolean} append the next page after the loaded ones
 */
function load(append) {
  var after = append ? state.nextCursor : null;
  return api('schedules' + qs({ limit: append ? PAGE : Math.max(PAGE, state.items.length), after: after }))
    .then(function (page) {
      state.items = append ? state.items.concat(page.items) : page.items;
      state.nextCursor = page.nextCursor;
      state.loaded = true;
      if (state.open) return loadDetail(state.open);
    })
    .then(render, fail);
}

/**
 * @param {string} id
 */
function loadDetail(id) {
  return api('schedules/' + encodeURIComponent(id)).then(
    function (s) {
      state.detail = s;
    },
    function (err) {
      state.detail = null;
      if (err && err.status === 404) state.open = null;
      else throw err;
    },
  );
}

/**
 * @param {string} id
 * @param {string} action pause, resume or trigger
 */
function act(id, action) {
  return api('schedules/' + encodeURIComponent(id) + '/' + action, 'POST').then(function (res) {
    if (action === 'trigger')
      toast(res.outcome === 'started' ? 'Started ' + res.runId : 'Not started: ' + res.outcome + ' (overlap policy)');
    else toast((action === 'pause' ? 'Paused ' : 'Resumed ') + id);
    return load(false);
  }, fail);
}

/**
 * "Run now" starts a real run (it may cancel orders, send emails): ask first, as Cancel and Fork do.
 * @param {ApiObject} s
 */
function runNow(s) {
  return ask({
    title: 'Start a run of this schedule now?',
    text:
      'Schedule ' +
      s.id +
      ' starts a run of ' +
      s.workflowName +
      ' now' +
      (s.input !== undefined && s.input !== null ? ' with its input' : '') +
      ', besides its next slot (' +
      (s.paused ? 'paused' : fmtTime(s.nextFireAt)) +
      '), under its overlap policy (' +
      s.overlap +
      ').',
    yes: 'Run now',
  }).then(function (ok) {
    if (ok) return act(s.id, 'trigger');
  });
}

/**
 * @param {import('./api.js').ApiObject} s
 */
function policy(s) {
  var p =
    'missed: ' +
    s.catchUp +
    (s.catchUp === 'all' ? ' (' + Math.round(s.catchUpWindowMs / 60000) + ' min)' : '') +
    ' · overlap: ' +
    s.overlap;
  return s.jitterMs ? p + ' · jitter ' + s.jitterMs + ' ms' : p;
}

/**
 * Creates a runtime schedule, or changes one, in the form of schedule-editor.js.
 * @param {ApiObject | null} existing
 */
function edit(existing) {
  return api('workflows')
    .then(function (w) {
      return editSchedule(
        existing,
        w.workflows.map(function (/** @type {ApiObject} */ wf) {
          return wf.name;
        }),
      );
    })
    .then(function (saved) {
      if (!saved) return;
      toast((existing ? 'Changed ' : 'Created ') + saved.id);
      state.open = saved.id;
      return load(false);
    }, fail);
}

/**
 * @param {ApiObject} s
 */
function remove(s) {
  return deleteSchedule(s).then(function (deleted) {
    if (!deleted) return;
    if (state.open === s.id) state.open = null;
    return load(false);
  }, fail);
}

function render() {
  $('schedules-count').textContent = state.loaded ? '(' + state.items.length + (state.nextCursor ? '+' : '') + ')' : '';
  var box = clear($('schedules-body'));
  box.appendChild(
    el(
      'div',
      { class: 'more' },
      el(
        'button',
        {
          type: 'button',
          class: 'ghost',
          'data-action': 'new-schedule',
          onclick: function () {
            edit(null);
          },
        },
        'New schedule',
      ),
    ),
  );
  if (!state.items.length) {
    box.appendChild(
      el(
        'div',
        { class: 'empty muted' },
        'No schedules. Declare one with @DurableCron() or @Workflow({ schedule }), or create one with WorkflowClient.schedules.create().',
      ),
    );
    return;
  }
  /** @type {HTMLElement[]} */
  var rows = [];
  state.items.forEach(function (s) {
    rows.push(
      el(
        'tr',
        {
          class: 'sched-row' + (s.id === state.open ? ' selected' : ''),
          'data-schedule': s.id,
          onclick: function () {
            toggle(s.id);
          },
        },
        el(
          'td',
          { class: 'mono' },
          s.id,
          s.source === 'declared' ? el('span', { class: 'muted', title: 'Declared on the workflow in code' }, ' · code') : null,
        ),
        el(
          'td',
          null,
          s.workflowName,
          s.registered ? null : el('span', { class: 'muted', title: 'Not registered in this instance' }, ' (not here)'),
        ),
        el('td', { class: 'mono' }, s.cron, el('div', { class: 'muted', text: s.timeZone })),
        el(
          'td',
          null,
          s.paused
            ? el('span', { class: 'paused-tag', 'data-paused': 'true' }, 'paused')
            : [fmtTime(s.nextFireAt), el('div', { class: 'muted', text: ago(s.nextFireAt) })],
        ),
        el(
          'td',
          null,
          s.lastFiredAt
            ? [
                fmtTime(s.lastSlotAt),
                el('div', null, s.lastRunStatus ? badge(s.lastRunStatus) : el('span', { class: 'muted', text: 'run deleted' })),
              ]
            : el('span', { class: 'muted', text: 'never' }),
        ),
        el('td', { class: 'muted', text: policy(s) }),
        el(
          'td',
          {
            class: 'actions',
            onclick: function (/** @type {Event} */ e) {
              e.stopPropagation();
            },
          },
          s.paused
            ? el(
                'button',
                {
                  type: 'button',
                  class: 'ghost',
                  'data-action': 'resume',
                  onclick: function () {
                    act(s.id, 'resume');
                  },
                },
                'Resume',
              )
            : el(
                'button',
                {
                  type: 'button',
                  class: 'ghost',
                  'data-action': 'pause',
                  onclick: function () {
                    act(s.id, 'pause');
                  },
                },
                'Pause',
              ),
          el(
            'button',
            {
              type: 'button',
              'data-action': 'trigger',
              title: 'Start a run now (under the overlap policy)',
              onclick: function () {
                runNow(s);
              },
            },
            'Run now',
          ),
        ),
      ),
    );
    if (s.id === state.open && state.detail) rows.push(detailRow(state.detail));
  });
  box.appendChild(
    el(
      'table',
      { class: 'runs schedules', id: 'schedules-table' },
      tableHead(['Schedule', 'Workflow', 'Cron', 'Next fire', 'Last fire', 'Policy', '']),
      el('tbody', null, rows),
    ),
  );
  if (state.nextCursor)
    box.appendChild(
      el(
        'div',
        { class: 'more' },
        el(
          'button',
          {
            type: 'button',
            class: 'ghost',
            onclick: function () {
              load(true);
            },
          },
          'More schedules',
        ),
      ),
    );
}

/**
 * @param {import('./api.js').ApiObject} s
 */
function detailRow(s) {
  var runs = s.runs.length
    ? el(
        'ul',
        null,
        s.runs.map(function (/** @type {import('./api.js').ApiObject} */ r) {
          return el('li', null, runLink(r.id), ' ', badge(r.status), r.manual ? el('span', { class: 'muted', text: ' manual' }) : null);
        }),
      )
    : el('div', { class: 'muted', text: 'No runs yet.' });
  return el(
    'tr',
    { class: 'sched-detail', 'data-detail': s.id },
    el(
      'td',
      { colspan: 7 },
      el('div', null, el('b', null, 'Next slots: '), s.upcoming.length ? s.upcoming.map(fmtTime).join(' · ') : '— (paused)'),
      s.bufferedSlot ? el('div', null, el('b', null, 'Buffered: '), fmtTime(s.bufferedSlot), ' (starts when the active run ends)') : null,
      s.input !== undefined && s.input !== null
        ? el('div', null, el('b', null, 'Input: '), el('span', { class: 'mono', text: JSON.stringify(s.input) }))
        : null,
      el('div', null, el('b', null, 'Latest runs')),
      runs,
      s.source === 'runtime'
        ? el(
            'div',
            { class: 'more' },
            el(
              'button',
              {
                type: 'button',
                class: 'ghost',
                'data-action': 'edit-schedule',
                onclick: function () {
                  edit(s);
                },
              },
              'Change',
            ),
            el(
              'button',
              {
                type: 'button',
                class: 'ghost danger',
                'data-action': 'delete-schedule',
                onclick: function () {
                  remove(s);
                },
              },
              'Delete',
            ),
          )
        : el('div', { class: 'muted', text: 'Declared in code: change or remove it in the code.' }),
    ),
  );
}

/**
 * @param {string} id
 */
function toggle(id) {
  if (state.open === id) {
    state.open = null;
    state.detail = null;
    render();
    return;
  }
  state.open = id;
  loadDetail(id).then(render, fail);
}

export function initSchedules() {
  whileOpen(
    'schedules',
    function () {
      load(false);
    },
    function () {
      return ($('confirm') && dialog('confirm').open) || ($('schedule-editor') && dialog('schedule-editor').open);
    },
  );
}
