// nestjs-durable dashboard: the entry point: wiring, timers, and the helpers other panels (schedules.js) use.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { $, el, clear, qs, fmtTime, fmtDuration, ago, badge, nf, toast, fail, debounce } from './dom.js';
import { token, setToken, api, hideAuth } from './api.js';
import { ACTIVE, REFRESH_MS, RUN_REFRESH_MS, state, loadHash, syncForm } from './state.js';
import { loadStats } from './stats.js';
import { loadWorkflows, loadList, renderChips, setFilter } from './list.js';
import { openRun, closeRun, loadRun, runExtras } from './run-detail.js';
import { initBulk } from './bulk.js';
import { initCharts } from './charts.js';
import { liveFollow, liveMode } from './live.js';

// ---------------------------------------------------------------- wiring
var busy = false;
/** Stats, list and open run; a timer tick is skipped while one is in flight, a user action never. */
export function refreshAll(fromTimer) {
  if (busy && fromTimer === true) return Promise.resolve();
  busy = true;
  return Promise.all([loadStats(), loadList(), loadRun(false)]).then(function () { busy = false; }, function () { busy = false; });
}

/** The header wraps on narrow screens: the sticky detail pane sits below its real height (--header-h). */
function trackHeaderHeight() {
  var header = document.querySelector('header.top');
  var set = function () { document.documentElement.style.setProperty('--header-h', header.getBoundingClientRect().height + 'px'); };
  set();
  if (typeof window.ResizeObserver === 'function') new window.ResizeObserver(set).observe(header);
  else window.addEventListener('resize', set);
}

export function init() {
  trackHeaderHeight();
  initBulk();
  initCharts();
  loadHash();
  syncForm();
  renderChips(null, null);
  $('f-workflow').addEventListener('change', function () { setFilter({ workflow: this.value }); });
  $('f-sort').addEventListener('change', function () { setFilter({ sort: this.value }); });
  $('f-order').addEventListener('change', function () { setFilter({ order: this.value }); });
  $('f-limit').addEventListener('change', function () { setFilter({ limit: Number(this.value) }); });
  $('f-from').addEventListener('change', function () { setFilter({ from: this.value }); });
  $('f-to').addEventListener('change', function () { setFilter({ to: this.value }); });
  var typed = debounce(function () { setFilter({}); }, 350);
  ['f-queue', 'f-id', 'f-parent', 'f-tag', 'f-input'].forEach(function (id) { $(id).addEventListener('input', typed); });
  $('filters').addEventListener('submit', function (e) { e.preventDefault(); });
  $('f-reset').addEventListener('click', function () {
    setFilter({ statuses: [], workflow: '', queue: '', idPrefix: '', parentId: '', tag: '', input: '', from: '', to: '', sort: 'created', order: 'desc', limit: 50 });
  });
  $('next').addEventListener('click', function () {
    if (!state.nextCursor) return;
    state.cursors.push(state.cursor);
    state.cursor = state.nextCursor;
    loadList();
  });
  $('prev').addEventListener('click', function () {
    if (!state.cursors.length) return;
    state.cursor = state.cursors.pop();
    loadList();
  });
  $('refresh').addEventListener('click', function () { refreshAll(); });
  $('token-btn').addEventListener('click', function () {
    $('auth-banner').hidden = !$('auth-banner').hidden;
    $('auth-title').textContent = token() ? 'A token is set for this tab.' : 'No token set.';
    $('token-input').focus();
  });
  $('token-form').addEventListener('submit', function (e) {
    e.preventDefault();
    setToken($('token-input').value.trim().replace(/^Bearer\s+/i, ''));
    $('token-input').value = '';
    hideAuth();
    loadWorkflows();
    refreshAll();
  });
  $('token-clear').addEventListener('click', function () { setToken(''); toast('Token forgotten'); });
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
    if ($('live').checked && liveMode() !== 'sse' && !document.hidden && !$('confirm').open) refreshAll(true);
  }, REFRESH_MS);
  var runBusy = false;
  setInterval(function () {
    if (runBusy || busy || !$('live').checked || liveMode() === 'sse' || document.hidden || $('confirm').open) return;
    if (!state.run || ACTIVE.indexOf(state.run.status) < 0) return;
    runBusy = true;
    loadRun(false).then(function () { runBusy = false; }, function () { runBusy = false; });
  }, RUN_REFRESH_MS);
  $('live').addEventListener('change', liveFollow);
  loadWorkflows();
  refreshAll();
  liveFollow();
}

/**
 * A folding panel (<details id=panelId>) that loads when opened and, while open, every REFRESH_MS
 * as long as live refresh is on, the tab is visible and `busy()` (if given) says nothing is in the way.
 */
function whileOpen(panelId, load, busy) {
  var panel = $(panelId);
  if (!panel) return;
  panel.addEventListener('toggle', function () { if (panel.open) load(); });
  setInterval(function () {
    var live = $('live');
    if (panel.open && (!live || live.checked) && !document.hidden && !(busy && busy())) load();
  }, REFRESH_MS);
}

// The helpers other panels of the page build on: classic scripts (schedules.js) through this global,
// modules by importing dom.js, api.js, state.js directly.
window.DurableDashboard = {
  api: api, el: el, clear: clear, qs: qs, badge: badge, toast: toast, fail: fail, fmtTime: fmtTime, ago: ago, fmtDuration: fmtDuration, nf: nf,
  openRun: openRun, setFilter: setFilter, refreshAll: refreshAll, state: state, runExtras: runExtras, whileOpen: whileOpen,
};

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
else init();
