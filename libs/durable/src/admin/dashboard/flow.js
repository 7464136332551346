// @ts-check
// nestjs-durable dashboard: the flow-control panel (cluster-wide limits per queue with what each
// queue is doing, its busiest concurrency keys; set or reset a limit) and, in a run's detail, why
// the run has not started. User data is only ever inserted as text, never as HTML.
import { $, dialog, el, tableHead, clear, qs, toast, fail, fmtClock } from './dom.js';
/** @typedef {import('./api.js').ApiObject} ApiObject */
import { api } from './api.js';
import { whileOpen } from './panels.js';
import { ask } from './actions.js';
import { runExtras } from './run-detail.js';
import { keyedRuns, blockers } from './flow-runs.js';
/** @type {{ queues: ApiObject[], debounced: ApiObject[], singletons: ApiObject[], open: string | null, keys: ApiObject[] | null, loaded: boolean, adding: boolean }} */
var state = { queues: [], debounced: [], singletons: [], open: null, keys: null, loaded: false, adding: false };

/**
 * @param {string} name a queue
 */
function q(name) {
  return 'flow/queues/' + encodeURIComponent(name);
}
/**
 * @param {number | null | undefined} n
 */
function limitText(n) {
  return n === null || n === undefined ? '—' : String(n);
}

function load() {
  return api('flow')
    .then(function (res) {
      state.queues = res.queues;
      state.debounced = res.debounced || [];
      state.singletons = res.singletons || [];
      state.loaded = true;
      if (state.open) return loadKeys(state.open);
    })
    .then(render, fail);
}

/**
 * @param {string} queue
 */
function loadKeys(queue) {
  return api(q(queue) + '/keys' + qs({ limit: 20 })).then(function (res) {
    state.keys = res.keys;
  });
}

/**
 * "12/100 per 10 s", and until when a full window holds starts back.
 * @param {number} used
 * @param {import('./api.js').ApiObject | null} r the rate limit
 * @param {string | null} until
 */
function rateText(used, r, until) {
  if (!r) return '—';
  var text = used + '/' + r.limit + ' per ' + (r.periodMs % 1000 ? r.periodMs + ' ms' : r.periodMs / 1000 + ' s');
  return until ? text + ' · until ' + fmtClock(until) : text;
}

/**
 * Limits from the form: an empty field is no limit (null); a rate is a limit and a period in seconds.
 * @param {string} queue
 * @param {HTMLFormElement} form
 */
function save(queue, form) {
  var num = function (/** @type {string} */ name) {
    var v = /** @type {HTMLInputElement} */ (form.elements.namedItem(name)).value.trim();
    return v === '' ? null : Number(v);
  };
  var rate = function (/** @type {string} */ name) {
    var n = num(name),
      s = num(name + 'Period');
    return n === null ? null : { limit: n, periodMs: s === null ? NaN : Math.round(s * 1000) };
  };
  var limits = {
    globalConcurrency: num('globalConcurrency'),
    keyConcurrency: num('keyConcurrency'),
    rateLimit: rate('rateLimit'),
    keyRateLimit: rate('keyRateLimit'),
  };
  /** @param {boolean} force */
  var send = function (force) {
    return api(q(queue) + '/limits' + (force ? '?force=true' : ''), 'POST', limits);
  };
  return send(false)
    .catch(function (/** @type {{ status?: number, message?: string }} */ err) {
      // A queue no workflow of this instance uses (a typo, or another app's queue): say so, and set it only if asked.
      if (!(err && err.status === 400 && /no workflow of this instance uses queue/.test(err.message || ''))) throw err;
      return ask({ title: 'Set limits of an unknown queue?', text: err.message || '', yes: 'Set anyway' }).then(function (ok) {
        return ok ? send(true) : null;
      });
    })
    .then(function (res) {
      if (res === null) return;
      toast('Limits of ' + queue + ' saved; every instance follows at once');
      return load();
    }, fail);
}

/**
 * @param {string} queue
 */
function reset(queue) {
  return api(q(queue) + '/reset', 'POST').then(function (res) {
    toast(res.limits ? 'Limits of ' + queue + ' back to the declared ones' : queue + ' has no limits now');
    return load();
  }, fail);
}

/**
 * @param {string} name
 * @param {number | null | undefined} v
 * @param {string} [placeholder]
 */
function field(name, v, placeholder) {
  return el('input', {
    name: name,
    type: 'number',
    min: '0',
    step: 'any',
    placeholder: placeholder || 'none',
    value: v === null || v === undefined ? '' : String(v),
  });
}

/**
 * A form of the limits of `l` (null: none yet); `queue` names the queue when it is submitted (a function: the add form reads an input).
 * @param {() => string} queue
 * @param {import('./api.js').ApiObject | null} l
 */
function limitForm(queue, l) {
  l = l || {};
  var r = l.rateLimit || {},
    kr = l.keyRateLimit || {};
  var sec = function (/** @type {number | undefined} */ ms) {
    return ms === undefined ? null : ms / 1000;
  };
  var form = /** @type {HTMLFormElement} */ (
    el(
      'form',
      {
        class: 'flow-form',
        onsubmit: function (/** @type {Event} */ e) {
          e.preventDefault();
          var name = queue();
          if (name) save(name, form);
        },
      },
      el('label', null, 'Queue-wide ', field('globalConcurrency', l.globalConcurrency)),
      el('label', null, ' Per key ', field('keyConcurrency', l.keyConcurrency)),
      el(
        'label',
        { title: 'At most this many starts of the queue in any window of the period' },
        ' Rate ',
        field('rateLimit', r.limit),
        ' per ',
        field('rateLimitPeriod', sec(r.periodMs), 's'),
      ),
      el(
        'label',
        { title: 'At most this many starts of one concurrency key in any window of the period' },
        ' Per-key rate ',
        field('keyRateLimit', kr.limit),
        ' per ',
        field('keyRateLimitPeriod', sec(kr.periodMs), 's'),
      ),
      el('button', { type: 'submit', 'data-action': 'save-limits' }, 'Save'),
    )
  );
  return form;
}

function render() {
  $('flow-count').textContent = state.loaded ? '(' + state.queues.length + ')' : '';
  var box = clear($('flow-body'));
  if (!state.queues.length) {
    box.appendChild(
      el(
        'div',
        { class: 'empty muted' },
        'No queue has cluster-wide limits. Declare them in the queues option ({ globalConcurrency, keyConcurrency }) or set one here.',
      ),
    );
  } else {
    /** @type {HTMLElement[]} */
    var rows = [];
    state.queues.forEach(function (l) {
      var full = l.globalConcurrency !== null && l.running >= l.globalConcurrency;
      rows.push(
        el(
          'tr',
          {
            class: 'flow-row' + (l.queue === state.open ? ' selected' : ''),
            'data-queue': l.queue,
            onclick: function () {
              toggle(l.queue);
            },
          },
          el(
            'td',
            { class: 'mono' },
            l.queue,
            l.source === 'declared'
              ? el('span', { class: 'muted', title: 'Declared in the queues option' }, ' · options')
              : el('span', { class: 'muted', title: 'Set at runtime; kept until reset' }, ' · runtime'),
          ),
          el('td', { class: full ? 'flow-full' : null, text: l.running + ' / ' + limitText(l.globalConcurrency) }),
          el('td', { text: limitText(l.keyConcurrency) }),
          el('td', {
            class: l.rateLimitedUntil ? 'flow-full' : null,
            'data-rate': l.queue,
            text: rateText(l.rateUsed, l.rateLimit, l.rateLimitedUntil),
          }),
          el('td', { text: String(l.due) }),
          el(
            'td',
            {
              class: 'actions',
              onclick: function (/** @type {Event} */ e) {
                e.stopPropagation();
              },
            },
            el(
              'button',
              {
                type: 'button',
                class: 'ghost',
                'data-action': 'reset',
                // A declared limit has no runtime override to drop: Reset would change nothing.
                disabled: l.source === 'declared',
                title:
                  l.source === 'declared'
                    ? 'These are the declared limits: nothing set at runtime to reset'
                    : 'Drop a runtime limit: back to the declared ones',
                onclick: function () {
                  reset(l.queue);
                },
              },
              'Reset',
            ),
          ),
        ),
      );
      if (l.queue === state.open) rows.push(detailRow(l));
    });
    box.appendChild(
      el(
        'table',
        { class: 'runs flow', id: 'flow-table' },
        tableHead(['Queue', 'Running / limit', 'Per key', 'Starts / rate', 'Due, waiting', '']),
        el('tbody', null, rows),
      ),
    );
  }
  keyedRuns(box, state.debounced, state.singletons);
  var add = /** @type {HTMLDetailsElement} */ (el('details', { class: 'flow-add' }, el('summary', null, 'Set limits of a queue')));
  add.open = state.adding;
  add.addEventListener('toggle', function () {
    state.adding = add.open;
  });
  var name = /** @type {HTMLInputElement} */ (el('input', { placeholder: 'queue', spellcheck: 'false', id: 'flow-new-queue' }));
  var form = limitForm(function () {
    return name.value.trim();
  }, null);
  form.insertBefore(name, form.firstChild);
  add.appendChild(form);
  box.appendChild(add);
}

/**
 * @param {import('./api.js').ApiObject} l a queue's limits
 */
function detailRow(l) {
  var keys =
    state.keys && state.keys.length
      ? el(
          'table',
          { class: 'flow-keys' },
          tableHead(['Concurrency key', 'Running', 'Starts / rate', 'Due, waiting']),
          el(
            'tbody',
            null,
            state.keys.map(function (k) {
              var full = l.keyConcurrency !== null && k.running >= l.keyConcurrency;
              return el(
                'tr',
                null,
                el('td', { class: 'mono', text: k.key }),
                el('td', { class: full ? 'flow-full' : null, text: k.running + ' / ' + limitText(l.keyConcurrency) }),
                el('td', {
                  class: k.rateLimitedUntil ? 'flow-full' : null,
                  text: rateText(k.rateUsed, l.keyRateLimit, k.rateLimitedUntil),
                }),
                el('td', { text: String(k.due) }),
              );
            }),
          ),
        )
      : el('div', { class: 'muted', text: 'No run of this queue has a concurrency key now.' });
  return el(
    'tr',
    { class: 'flow-detail', 'data-detail': l.queue },
    el(
      'td',
      { colspan: 6 },
      limitForm(function () {
        return l.queue;
      }, l),
      el('div', null, el('b', null, 'Busiest keys')),
      keys,
    ),
  );
}

/**
 * @param {string} queue
 */
function toggle(queue) {
  if (state.open === queue) {
    state.open = null;
    state.keys = null;
    render();
    return;
  }
  state.open = queue;
  loadKeys(queue).then(render, fail);
}

export function initFlow() {
  if (!$('flow')) return;
  runExtras.push(blockers);
  // Not while someone types a limit (a refresh would redraw the form), nor under a confirmation.
  whileOpen('flow', load, function () {
    var typing = document.activeElement && $('flow-body').contains(document.activeElement);
    return typing || ($('confirm') && dialog('confirm').open);
  });
}
