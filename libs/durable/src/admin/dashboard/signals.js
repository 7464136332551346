// @ts-check
// nestjs-durable dashboard: the signals panel — the app's signals (defineSignal) and the runs waiting
// for one, each with a form that sends it. The form POSTs to the signal's own endpoint with this
// page's credentials, so the signal's guards decide whether this operator may send it.
// User data is only ever inserted as text.
import { $, el, tableHead, clear, fail, fmtTime, ago, toast } from './dom.js';
/** @typedef {import('./api.js').ApiObject} ApiObject */
import { answerOf, api, authHeaders, BASE_URL, errorMessage } from './api.js';
import { whileOpen } from './panels.js';
import { runLink } from './nav.js';
/** @type {{ signals: ApiObject[], waiting: ApiObject[], adminPath: string, loaded: boolean }} */
var state = { signals: [], waiting: [], adminPath: 'durable', loaded: false };

function load() {
  return api('signals')
    .then(function (res) {
      state.signals = res.signals;
      state.waiting = res.waiting;
      state.adminPath = res.adminPath;
      state.loaded = true;
    })
    .then(render, fail);
}

/** The app's root URL (its global prefix included): this page's path without the admin path. */
function appRoot() {
  var at = BASE_URL.lastIndexOf('/' + state.adminPath.replace(/^\/+|\/+$/g, '') + '/');
  return at >= 0 ? BASE_URL.slice(0, at + 1) : '/';
}

/**
 * @param {ApiObject} wait
 * @param {ApiObject} signal
 * @param {string} text the payload, as JSON
 * @param {string} key the form's idempotency key: a double click or a retried request delivers once
 */
function send(wait, signal, text, key) {
  var body;
  try {
    body = text.trim() ? JSON.parse(text) : {};
  } catch {
    toast('The payload must be JSON, e.g. {"approved": true}');
    return Promise.resolve();
  }
  var headers = authHeaders();
  headers['Content-Type'] = 'application/json';
  headers['Idempotency-Key'] = key;
  var url = appRoot() + signal.path.replace(':runId', encodeURIComponent(wait.runId));
  return fetch(url, { method: 'POST', headers: headers, credentials: 'same-origin', body: JSON.stringify(body) })
    .then(function (res) {
      return answerOf(res).then(function (data) {
        if (!res.ok) throw new Error(res.status + ' ' + errorMessage(data, res.statusText));
        toast('Sent ' + signal.name + ' to ' + wait.runId);
        return load();
      });
    })
    .catch(fail);
}

/** @param {ApiObject} w */
function sendForm(w) {
  var signal = state.signals.find(function (s) {
    return s.name === w.signal;
  });
  if (!signal) return el('span', { class: 'muted', text: 'not declared in this app: no endpoint to send it' });
  var declared = signal;
  var key = 'dashboard:' + (window.crypto && window.crypto.randomUUID ? window.crypto.randomUUID() : String(Math.random()).slice(2));
  var input = /** @type {HTMLTextAreaElement} */ (
    el('textarea', { rows: 2, cols: 30, class: 'mono', 'aria-label': 'payload of ' + w.signal, placeholder: '{"approved": true}' })
  );
  return el(
    'form',
    {
      class: 'signal-form',
      onsubmit: function (/** @type {Event} */ e) {
        e.preventDefault();
        send(w, declared, input.value, key);
      },
    },
    input,
    el('button', { type: 'submit', 'data-action': 'send-signal' }, 'Send'),
  );
}

function render() {
  $('signals-count').textContent = state.loaded ? '(' + state.waiting.length + ' waiting)' : '';
  var box = clear($('signals-body'));
  if (!state.signals.length && !state.waiting.length) {
    box.appendChild(
      el('div', { class: 'empty muted' }, 'No signals. Declare them with defineSignal() and list them in the module option signals.'),
    );
    return;
  }
  box.appendChild(
    el(
      'p',
      { class: 'muted' },
      'Signals: ' +
        state.signals
          .map(function (s) {
            return s.name + (s.description ? ' — ' + s.description : '') + (s.guarded ? ' (guarded)' : '');
          })
          .join('; '),
    ),
  );
  if (!state.waiting.length) {
    box.appendChild(el('div', { class: 'empty muted' }, 'No run waits for a signal now.'));
    return;
  }
  box.appendChild(
    el(
      'table',
      { class: 'runs signals', id: 'signals-table' },
      tableHead(['Signal', 'Run', 'Workflow', 'Waiting since', 'Payload']),
      el(
        'tbody',
        null,
        state.waiting.map(function (w) {
          return el(
            'tr',
            { 'data-run': w.runId, 'data-signal': w.signal },
            el('td', { class: 'mono', text: w.signal }),
            el('td', null, runLink(w.runId)),
            el('td', { class: 'mono', text: w.workflowName }),
            el('td', null, fmtTime(w.since), el('div', { class: 'muted', text: ago(w.since) })),
            el('td', null, sendForm(w)),
          );
        }),
      ),
    ),
  );
}

export function initSignals() {
  // Not while someone types a payload (a refresh would redraw the form).
  whileOpen('signals', load, function () {
    return !!document.activeElement && $('signals-body').contains(document.activeElement);
  });
}
