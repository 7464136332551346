// @ts-check
// nestjs-durable dashboard: the entry point: wiring, timers, and the navigation the other modules call.
// Plain browser ES modules, no build step. User data is only ever inserted as text, never as HTML.
import { $, dialog, input, toast, debounce } from './dom.js';
import { token, setToken, hideAuth } from './api.js';
import { ACTIVE, REFRESH_MS, RUN_REFRESH_MS } from './constants.js';
import { state, loadHash, syncForm, defaultFilter } from './state.js';
import { registerNavigation } from './nav.js';
import { loadStats } from './stats.js';
import { loadWorkflows, loadList, renderChips, setFilter } from './list.js';
import { openRun, closeRun, loadRun, renderRun } from './run-detail.js';
import { initBulk } from './bulk.js';
import { initCharts } from './charts.js';
import { liveFollow, liveMode, liveRetry } from './live.js';
import { initSchedules } from './schedules.js';
import { initVersions } from './versions.js';
import { initFlow } from './flow.js';
import { initHooks } from './hooks.js';
import { initBackfills } from './backfills.js';
import { initSignals } from './signals.js';

// ---------------------------------------------------------------- wiring
var busy = false;
/** Stats, list and open run; a timer tick is skipped while one is in flight, a user action never. */
/** @param {boolean} [fromTimer] */
function refreshAll(fromTimer) {
  if (busy && fromTimer === true) return Promise.resolve();
  busy = true;
  return Promise.all([loadStats(), loadList(), loadRun(false)]).then(
    function () {
      busy = false;
    },
    function () {
      busy = false;
    },
  );
}

/** The header wraps on narrow screens: the sticky detail pane sits below its real height (--header-h). */
function trackHeaderHeight() {
  var header = /** @type {HTMLElement} */ (document.querySelector('header.top'));
  var set = function () {
    document.documentElement.style.setProperty('--header-h', header.getBoundingClientRect().height + 'px');
  };
  set();
  if (typeof window.ResizeObserver === 'function') new window.ResizeObserver(set).observe(header);
  else window.addEventListener('resize', set);
}

function init() {
  registerNavigation({
    refreshAll: refreshAll,
    openRun: openRun,
    loadRun: loadRun,
    rerenderRun: function () {
      if (state.run) renderRun(state.run);
    },
    loadList: loadList,
    setFilter: setFilter,
  });
  trackHeaderHeight();
  initBulk();
  initCharts();
  loadHash();
  syncForm();
  renderChips(null, null);
  /** @type {[string, string, (v: string) => unknown][]} */
  var selects = [
    ['f-workflow', 'workflow', String],
    ['f-sort', 'sort', String],
    ['f-order', 'order', String],
    ['f-limit', 'limit', Number],
    ['f-from', 'from', String],
    ['f-to', 'to', String],
  ];
  selects.forEach(function (s) {
    $(s[0]).addEventListener('change', function () {
      setFilter({ [s[1]]: s[2](input(s[0]).value) });
    });
  });
  var typed = debounce(function () {
    setFilter({});
  }, 350);
  ['f-queue', 'f-id', 'f-parent', 'f-tag', 'f-input'].forEach(function (id) {
    $(id).addEventListener('input', typed);
  });
  $('filters').addEventListener('submit', function (e) {
    e.preventDefault();
  });
  $('f-reset').addEventListener('click', function () {
    setFilter(defaultFilter());
  });
  $('next').addEventListener('click', function () {
    if (!state.nextCursor) return;
    state.cursors.push(state.cursor);
    state.cursor = state.nextCursor;
    loadList();
  });
  $('prev').addEventListener('click', function () {
    if (!state.cursors.length) return;
    state.cursor = state.cursors.pop() || null;
    loadList();
  });
  $('refresh').addEventListener('click', function () {
    refreshAll();
  });
  $('token-btn').addEventListener('click', function () {
    $('auth-banner').hidden = !$('auth-banner').hidden;
    $('auth-title').textContent = token() ? 'A token is set for this tab.' : 'No token set.';
    $('token-input').focus();
  });
  $('token-form').addEventListener('submit', function (e) {
    e.preventDefault();
    setToken(
      input('token-input')
        .value.trim()
        .replace(/^Bearer\s+/i, ''),
    );
    input('token-input').value = '';
    hideAuth();
    loadWorkflows();
    refreshAll();
    liveRetry();
  });
  $('token-clear').addEventListener('click', function () {
    setToken('');
    toast('Token forgotten');
  });
  window.addEventListener('hashchange', function () {
    var before = state.runId;
    loadHash();
    syncForm();
    state.cursor = null;
    state.cursors = [];
    loadList();
    if (state.runId && state.runId !== before) openRun(state.runId);
    else if (!state.runId && before) closeRun();
  });
  setInterval(function () {
    // While the event stream runs, it says when to reload; these timers are the fallback.
    if (input('live').checked && liveMode() !== 'sse' && !document.hidden && !dialog('confirm').open) refreshAll(true);
  }, REFRESH_MS);
  var runBusy = false;
  setInterval(function () {
    if (runBusy || busy || !input('live').checked || liveMode() === 'sse' || document.hidden || dialog('confirm').open) return;
    if (!state.run || ACTIVE.indexOf(state.run.status) < 0) return;
    runBusy = true;
    loadRun(false).then(
      function () {
        runBusy = false;
      },
      function () {
        runBusy = false;
      },
    );
  }, RUN_REFRESH_MS);
  $('live').addEventListener('change', function () {
    liveRetry();
    liveFollow();
  });
  initSchedules();
  initVersions();
  initFlow();
  initHooks();
  initBackfills();
  initSignals();
  loadWorkflows();
  refreshAll();
  liveFollow();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
else init();
