// @ts-check
// nestjs-durable dashboard: The page state and its copy in the URL hash.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { $, input, el, qs } from './dom.js';
import { STATUSES } from './constants.js';

/**
 * @typedef {object} PageState
 * @property {string[]} statuses The status chips that are on (none: every status).
 * @property {string} workflow
 * @property {string} queue
 * @property {string} idPrefix
 * @property {string} parentId
 * @property {string} tag
 * @property {string} input
 * @property {string} from
 * @property {string} to
 * @property {string} sort
 * @property {string} order
 * @property {number} limit
 * @property {string | null} cursor The page of the list shown (null: the first).
 * @property {(string | null)[]} cursors The pages before it, for "Previous".
 * @property {string | null} nextCursor
 * @property {string | null} runId The open run.
 * @property {import('./api.js').ApiObject | null} run The open run's detail, as loaded.
 * @property {string} tab
 * @property {Record<number, boolean>} openSteps Steps unfolded in the open run's timeline.
 * @property {import('./api.js').ApiObject | null} list The runs list's page, as loaded.
 */

/** The list's filter when nothing is chosen (the page's start, and Reset). */
export function defaultFilter() {
  return {
    /** @type {string[]} */
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
  };
}

/** @type {PageState} */
export var state = {
  ...defaultFilter(),
  cursor: null,
  cursors: [],
  nextCursor: null,
  runId: null,
  run: null,
  tab: 'steps',
  openSteps: {},
  list: null,
};

/**
 * The filters that are text, kept in the hash under their own names.
 * @type {('workflow' | 'queue' | 'idPrefix' | 'parentId' | 'tag' | 'input' | 'from' | 'to')[]}
 */
var TEXT_FILTERS = ['workflow', 'queue', 'idPrefix', 'parentId', 'tag', 'input', 'from', 'to'];

// ---------------------------------------------------------------- URL state
export function saveHash() {
  /** @type {Record<string, string | number>} */
  var p = {};
  if (state.statuses.length) p.status = state.statuses.join(',');
  TEXT_FILTERS.forEach(function (k) {
    if (state[k]) p[k] = state[k];
  });
  if (state.sort !== 'created') p.sort = state.sort;
  if (state.order !== 'desc') p.order = state.order;
  if (state.limit !== 50) p.limit = state.limit;
  if (state.runId) p.run = state.runId;
  var h = qs(p).slice(1);
  history.replaceState(null, '', h ? '#' + h : location.pathname + location.search);
}
export function loadHash() {
  var h = location.hash.replace(/^#/, '');
  /** @type {Record<string, string>} */
  var p = {};
  h.split('&').forEach(function (kv) {
    if (!kv) return;
    var i = kv.indexOf('=');
    try {
      p[decodeURIComponent(i < 0 ? kv : kv.slice(0, i))] = i < 0 ? '' : decodeURIComponent(kv.slice(i + 1));
    } catch {
      /* ignore bad pair */
    }
  });
  state.statuses = (p.status || '').split(',').filter(function (/** @type {string} */ s) {
    return STATUSES.indexOf(s) >= 0;
  });
  TEXT_FILTERS.forEach(function (k) {
    state[k] = p[k] || '';
  });
  state.sort = p.sort === 'updated' ? 'updated' : 'created';
  state.order = p.order === 'asc' ? 'asc' : 'desc';
  state.limit = [25, 50, 100, 200].indexOf(Number(p.limit)) >= 0 ? Number(p.limit) : 50;
  state.runId = p.run || null;
}
export function syncForm() {
  input('f-workflow').value = state.workflow;
  if (input('f-workflow').value !== state.workflow && state.workflow) {
    $('f-workflow').appendChild(el('option', { value: state.workflow, text: state.workflow }));
    input('f-workflow').value = state.workflow;
  }
  input('f-queue').value = state.queue;
  input('f-id').value = state.idPrefix;
  input('f-parent').value = state.parentId;
  input('f-tag').value = state.tag;
  input('f-input').value = state.input;
  input('f-from').value = state.from;
  input('f-to').value = state.to;
  input('f-sort').value = state.sort;
  input('f-order').value = state.order;
  input('f-limit').value = String(state.limit);
}

/** The list's filter without paging (the list, bulk actions and live updates use it). */
export function filterParams() {
  return {
    status: state.statuses.length ? state.statuses.join(',') : null,
    workflow: state.workflow,
    queue: state.queue,
    idPrefix: state.idPrefix,
    parentId: state.parentId,
    tag: state.tag,
    input: state.input,
    createdFrom: state.from ? new Date(state.from).toISOString() : null,
    createdTo: state.to ? new Date(state.to).toISOString() : null,
  };
}
