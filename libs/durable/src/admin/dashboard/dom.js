// @ts-check
// nestjs-durable dashboard: DOM building (text only, never HTML), formatting, toasts.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { ACTIVE } from './constants.js';

// ---------------------------------------------------------------- helpers
/**
 * The element with this id (the page's markup has it).
 * @param {string} id
 * @returns {HTMLElement}
 */
export function $(id) {
  return /** @type {HTMLElement} */ (document.getElementById(id));
}
/**
 * The form control (input, select) with this id: its `value` and `checked`.
 * @param {string} id
 * @returns {HTMLInputElement}
 */
export function input(id) {
  return /** @type {HTMLInputElement} */ (document.getElementById(id));
}
/**
 * @param {string} id
 * @returns {HTMLButtonElement}
 */
export function button(id) {
  return /** @type {HTMLButtonElement} */ (document.getElementById(id));
}
/**
 * @param {string} id
 * @returns {HTMLDialogElement}
 */
export function dialog(id) {
  return /** @type {HTMLDialogElement} */ (document.getElementById(id));
}
/**
 * A folding panel (<details>) of the page.
 * @param {string} id
 * @returns {HTMLDetailsElement}
 */
export function details(id) {
  return /** @type {HTMLDetailsElement} */ (document.getElementById(id));
}
/**
 * @param {string} tag
 * @param {Record<string, any> | null} [attrs] text, class, on<event> handlers, other attributes (null/false: left out)
 */
export function el(tag, attrs) {
  var node = document.createElement(tag);
  if (attrs) {
    for (var k in attrs) {
      if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] == null || attrs[k] === false) continue;
      if (k === 'text') node.textContent = String(attrs[k]);
      else if (k === 'class') node.className = attrs[k];
      else if (k.slice(0, 2) === 'on') node.addEventListener(k.slice(2), attrs[k]);
      else node.setAttribute(k, attrs[k] === true ? '' : String(attrs[k]));
    }
  }
  for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
  return node;
}
/**
 * The head of a table: one row of header cells with these texts.
 * @param {string[]} headers
 */
export function tableHead(headers) {
  return el(
    'thead',
    null,
    el(
      'tr',
      null,
      headers.map(function (h) {
        return el('th', { text: h });
      }),
    ),
  );
}
/**
 * @param {Node} node
 * @param {any} child a node, text, or an array of them (null/false: nothing)
 */
export function append(node, child) {
  if (child == null || child === false) return;
  if (Array.isArray(child))
    child.forEach(function (c) {
      append(node, c);
    });
  else node.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
}
/**
 * @param {HTMLElement} node
 */
export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}
/**
 * @param {Record<string, any>} params empty values are left out; arrays repeat the key
 */
export function qs(params) {
  /** @type {string[]} */
  var parts = [];
  Object.keys(params).forEach(function (k) {
    var v = params[k];
    if (v === null || v === undefined || v === '') return;
    (Array.isArray(v) ? v : [v]).forEach(function (x) {
      parts.push(encodeURIComponent(k) + '=' + encodeURIComponent(x));
    });
  });
  return parts.length ? '?' + parts.join('&') : '';
}

/**
 * @param {number | null | undefined} ms
 */
export function fmtDuration(ms) {
  if (ms == null || !isFinite(ms)) return '—';
  if (ms < 1) return ms.toFixed(2) + ' ms';
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
  var s = Math.round(ms / 1000);
  if (s < 3600) return Math.floor(s / 60) + 'm ' + pad(s % 60) + 's';
  if (s < 86400) return Math.floor(s / 3600) + 'h ' + pad(Math.floor(s / 60) % 60) + 'm';
  return Math.floor(s / 86400) + 'd ' + (Math.floor(s / 3600) % 24) + 'h';
}
/**
 * @param {number} n
 */
export function pad(n) {
  return (n < 10 ? '0' : '') + n;
}
/**
 * The time of day of `iso`, 24-hour (HH:MM:SS, local time): for times of the next minutes.
 * @param {string | number | null | undefined} iso
 */
export function fmtClock(iso) {
  if (iso == null || iso === '') return '—';
  var d = new Date(iso);
  return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
}
/**
 * Date and time of `iso`, 24-hour (YYYY-MM-DD HH:MM:SS, local time): the one format the page writes times in.
 * @param {string | number | null | undefined} iso
 */
export function fmtTime(iso) {
  if (!iso) return '—';
  var d = new Date(iso);
  return (
    d.getFullYear() +
    '-' +
    pad(d.getMonth() + 1) +
    '-' +
    pad(d.getDate()) +
    ' ' +
    pad(d.getHours()) +
    ':' +
    pad(d.getMinutes()) +
    ':' +
    pad(d.getSeconds())
  );
}
/**
 * @param {string | null | undefined} iso
 */
export function ago(iso) {
  if (!iso) return '—';
  var ms = Date.now() - new Date(iso).getTime();
  if (ms < 0) return 'in ' + fmtDuration(-ms);
  if (ms < 5000) return 'just now';
  return fmtDuration(ms).replace(/\.\d+ s$/, ' s') + ' ago';
}
/**
 * @param {import('./api.js').ApiObject} r
 */
export function runDuration(r) {
  if (!r.startedAt) return null;
  var end = r.finishedAt ? new Date(r.finishedAt).getTime() : Date.now();
  return end - new Date(r.startedAt).getTime();
}
/**
 * @param {string} status
 */
export function badge(status) {
  return el('span', { class: 'badge ' + status, 'data-status': status }, el('span', { class: 'dot' }), status);
}
/**
 * A run asked to cancel with compensation that has not ended yet: it is undoing its steps.
 * @param {import('./api.js').ApiObject} r
 */
export function cancelling(r) {
  return !!r.cancelRequestedAt && ACTIVE.indexOf(r.status) >= 0;
}
export function cancellingTag() {
  return el(
    'span',
    { class: 'tag-cancelling', 'data-cancelling': '', title: 'Cancelled with compensation: undoing its steps, then CANCELLED' },
    'cancelling',
  );
}
/**
 * @param {number | null | undefined} n
 */
export function nf(n) {
  return Number(n || 0).toLocaleString();
}
/**
 * @param {any} message text or a node
 * @param {boolean} [isError]
 */
export function toast(message, isError) {
  var t = el('div', { class: 'toast' + (isError ? ' error' : '') }, message);
  $('toasts').appendChild(t);
  setTimeout(
    function () {
      t.remove();
    },
    isError ? 7000 : 4000,
  );
}
/**
 * @param {any} err
 */
export function fail(err) {
  if (err && (err.status === 401 || err.status === 403)) return;
  toast(err && err.message ? err.message : String(err), true);
}

/**
 * @param {string} text
 */
export function copy(text) {
  if (navigator.clipboard)
    navigator.clipboard.writeText(text).then(
      function () {
        toast('Copied');
      },
      function () {
        toast(text);
      },
    );
  else toast(text);
}

/**
 * @param {() => void} fn
 * @param {number} ms
 */
export function debounce(fn, ms) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  var t;
  return function () {
    clearTimeout(t);
    t = setTimeout(fn, ms);
  };
}
