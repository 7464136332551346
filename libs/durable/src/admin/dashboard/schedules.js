// nestjs-durable dashboard: the schedules panel (next and last fire, policies, paused state, latest
// runs; pause, resume, trigger). Plain browser JavaScript on the helpers dashboard.js exposes.
// User data is only ever inserted as text, never as HTML.
(function () {
  'use strict';

  var PAGE = 50;
  var state = { items: [], nextCursor: null, open: null, detail: null, loaded: false };

  function d() {
    return window.DurableDashboard;
  }
  function $(id) {
    return document.getElementById(id);
  }

  function load(append) {
    var D = d();
    var after = append ? state.nextCursor : null;
    return D.api('schedules' + D.qs({ limit: append ? PAGE : Math.max(PAGE, state.items.length), after: after }))
      .then(function (page) {
        state.items = append ? state.items.concat(page.items) : page.items;
        state.nextCursor = page.nextCursor;
        state.loaded = true;
        if (state.open) return loadDetail(state.open);
      })
      .then(render, D.fail);
  }

  function loadDetail(id) {
    return d()
      .api('schedules/' + encodeURIComponent(id))
      .then(
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

  function act(id, action) {
    var D = d();
    return D.api('schedules/' + encodeURIComponent(id) + '/' + action, 'POST').then(function (res) {
      if (action === 'trigger')
        D.toast(res.outcome === 'started' ? 'Started ' + res.runId : 'Not started: ' + res.outcome + ' (overlap policy)');
      else D.toast((action === 'pause' ? 'Paused ' : 'Resumed ') + id);
      return load(false);
    }, D.fail);
  }

  function policy(s) {
    var p =
      'missed: ' +
      s.catchUp +
      (s.catchUp === 'all' ? ' (' + Math.round(s.catchUpWindowMs / 60000) + ' min)' : '') +
      ' · overlap: ' +
      s.overlap;
    return s.jitterMs ? p + ' · jitter ' + s.jitterMs + ' ms' : p;
  }

  function render() {
    var D = d();
    var el = D.el;
    $('schedules-count').textContent = state.loaded ? '(' + state.items.length + (state.nextCursor ? '+' : '') + ')' : '';
    var box = D.clear($('schedules-body'));
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
              : [D.fmtTime(s.nextFireAt), el('div', { class: 'muted', text: D.ago(s.nextFireAt) })],
          ),
          el(
            'td',
            null,
            s.lastFiredAt
              ? [
                  D.fmtTime(s.lastSlotAt),
                  el('div', null, s.lastRunStatus ? D.badge(s.lastRunStatus) : el('span', { class: 'muted', text: 'run deleted' })),
                ]
              : el('span', { class: 'muted', text: 'never' }),
          ),
          el('td', { class: 'muted', text: policy(s) }),
          el(
            'td',
            {
              class: 'actions',
              onclick: function (e) {
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
                  act(s.id, 'trigger');
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
        el(
          'thead',
          null,
          el(
            'tr',
            null,
            ['Schedule', 'Workflow', 'Cron', 'Next fire', 'Last fire', 'Policy', ''].map(function (h) {
              return el('th', { text: h });
            }),
          ),
        ),
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

  function detailRow(s) {
    var D = d();
    var el = D.el;
    var runs = s.runs.length
      ? el(
          'ul',
          null,
          s.runs.map(function (r) {
            return el(
              'li',
              null,
              el(
                'a',
                {
                  class: 'mono',
                  onclick: function () {
                    D.openRun(r.id);
                  },
                },
                r.id,
              ),
              ' ',
              D.badge(r.status),
              r.manual ? el('span', { class: 'muted', text: ' manual' }) : null,
            );
          }),
        )
      : el('div', { class: 'muted', text: 'No runs yet.' });
    return el(
      'tr',
      { class: 'sched-detail', 'data-detail': s.id },
      el(
        'td',
        { colspan: 7 },
        el('div', null, el('b', null, 'Next slots: '), s.upcoming.length ? s.upcoming.map(D.fmtTime).join(' · ') : '— (paused)'),
        s.bufferedSlot
          ? el('div', null, el('b', null, 'Buffered: '), D.fmtTime(s.bufferedSlot), ' (starts when the active run ends)')
          : null,
        s.input !== undefined && s.input !== null
          ? el('div', null, el('b', null, 'Input: '), el('span', { class: 'mono', text: JSON.stringify(s.input) }))
          : null,
        el('div', null, el('b', null, 'Latest runs')),
        runs,
      ),
    );
  }

  function toggle(id) {
    if (state.open === id) {
      state.open = null;
      state.detail = null;
      render();
      return;
    }
    state.open = id;
    loadDetail(id).then(render, d().fail);
  }

  function init() {
    if (!d()) return;
    d().whileOpen('schedules', function () { load(false); }, function () { return $('confirm') && $('confirm').open; });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
