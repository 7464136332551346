// nestjs-durable dashboard: The page state and its copy in the URL hash.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { $, el, qs } from './dom.js';

export var BASE = location.pathname.replace(/\/+$/, '') + '/';
export var STATUSES = ['PENDING', 'RUNNING', 'WAITING', 'SUCCEEDED', 'FAILED', 'CANCELLED'];
export var ACTIVE = ['PENDING', 'RUNNING', 'WAITING'];
export var TOKEN_KEY = 'nestjs-durable.token';
export var REFRESH_MS = 5000;
/** An open run that is still going is refreshed this often (live progress, compensation). */
export var RUN_REFRESH_MS = 1500;

export var state = {
  statuses: [],
  workflow: '',
  queue: '',
  idPrefix: '',
  parentId: '',
  tag: '',
  input: '',
  from: '',
  to: '',
  sort: 'created',
  order: 'desc',
  limit: 50,
  cursor: null,
  cursors: [],
  nextCursor: null,
  runId: null,
  run: null,
  tab: 'steps',
  openSteps: {},
  list: null,
};

// ---------------------------------------------------------------- URL state
export function saveHash() {
  var p = {};
  if (state.statuses.length) p.status = state.statuses.join(',');
  ['workflow', 'queue', 'idPrefix', 'parentId', 'tag', 'input', 'from', 'to'].forEach(function (k) { if (state[k]) p[k] = state[k]; });
  if (state.sort !== 'created') p.sort = state.sort;
  if (state.order !== 'desc') p.order = state.order;
  if (state.limit !== 50) p.limit = state.limit;
  if (state.runId) p.run = state.runId;
  var h = qs(p).slice(1);
  history.replaceState(null, '', h ? '#' + h : location.pathname + location.search);
}
export function loadHash() {
  var h = location.hash.replace(/^#/, '');
  var p = {};
  h.split('&').forEach(function (kv) {
    if (!kv) return;
    var i = kv.indexOf('=');
    try { p[decodeURIComponent(i < 0 ? kv : kv.slice(0, i))] = i < 0 ? '' : decodeURIComponent(kv.slice(i + 1)); } catch { /* ignore bad pair */ }
  });
  state.statuses = (p.status || '').split(',').filter(function (s) { return STATUSES.indexOf(s) >= 0; });
  ['workflow', 'queue', 'idPrefix', 'parentId', 'tag', 'input', 'from', 'to'].forEach(function (k) { state[k] = p[k] || ''; });
  state.sort = p.sort === 'updated' ? 'updated' : 'created';
  state.order = p.order === 'asc' ? 'asc' : 'desc';
  state.limit = [25, 50, 100, 200].indexOf(Number(p.limit)) >= 0 ? Number(p.limit) : 50;
  state.runId = p.run || null;
}
export function syncForm() {
  $('f-workflow').value = state.workflow;
  if ($('f-workflow').value !== state.workflow && state.workflow) {
    $('f-workflow').appendChild(el('option', { value: state.workflow, text: state.workflow }));
    $('f-workflow').value = state.workflow;
  }
  $('f-queue').value = state.queue;
  $('f-id').value = state.idPrefix;
  $('f-parent').value = state.parentId;
  $('f-tag').value = state.tag;
  $('f-input').value = state.input;
  $('f-from').value = state.from;
  $('f-to').value = state.to;
  $('f-sort').value = state.sort;
  $('f-order').value = state.order;
  $('f-limit').value = String(state.limit);
}
