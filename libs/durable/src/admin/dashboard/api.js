// @ts-check
// nestjs-durable dashboard: The admin API client: fetch with cookies and the bearer token; the sign-in banner.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { $ } from './dom.js';
import { BASE, TOKEN_KEY } from './constants.js';

/**
 * An object the admin API answered (its shapes are in the admin API's OpenAPI document).
 * @typedef {Record<string, any>} ApiObject
 */

export function token() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || '';
  } catch {
    return '';
  }
}
/**
 * @param {string} t empty: forget it
 */
export function setToken(t) {
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage off */
  }
}

/**
 * @param {number} status
 * @param {string} message
 */
export function ApiError(status, message) {
  this.status = status;
  this.message = message;
}

/** The admin API's URL prefix (this page's path). */
export var BASE_URL = BASE;

/** Headers every request to the admin API carries: JSON, and the bearer token if one is set. */
export function authHeaders() {
  /** @type {Record<string, string>} */
  var headers = { Accept: 'application/json' };
  var t = token();
  if (t) headers.Authorization = 'Bearer ' + t;
  return headers;
}

/**
 * fetch() against the admin API with the page's cookies and, if set, the bearer token.
 * @param {string} path under the admin path
 * @param {string} [method] GET when not given
 * @param {unknown} [body] sent as JSON
 */
export function api(path, method, body) {
  var headers = authHeaders();
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  return fetch(BASE + path, {
    method: method || 'GET',
    headers: headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  }).then(function (res) {
    return answerOf(res).then(function (data) {
      if (res.status === 401 || res.status === 403) {
        showAuth(res.status, data && data.message);
        throw new ApiError(res.status, 'Not authorized (' + res.status + ')');
      }
      if (!res.ok) throw new ApiError(res.status, errorMessage(data, 'HTTP ' + res.status));
      hideAuth();
      return data;
    });
  });
}

/**
 * An answer's body as JSON (null when empty or not JSON).
 * @param {Response} res
 * @returns {Promise<any>}
 */
export function answerOf(res) {
  return res.text().then(function (text) {
    try {
      return text ? JSON.parse(text) : null;
    } catch {
      return null;
    }
  });
}

/**
 * What an error answer says: its message (Nest's: a text or a list of them), else `fallback`.
 * @param {any} data
 * @param {string} fallback
 */
export function errorMessage(data, fallback) {
  return data && data.message ? (Array.isArray(data.message) ? data.message.join('; ') : data.message) : fallback;
}

// ---------------------------------------------------------------- auth
/**
 * @param {number} status
 * @param {string | undefined} message
 */
export function showAuth(status, message) {
  $('auth-banner').hidden = false;
  $('auth-title').textContent =
    (status === 401 ? 'Not signed in (401).' : 'Forbidden (403).') +
    (message && message !== 'Unauthorized' && message !== 'Forbidden resource' ? ' ' + message : '');
}
export function hideAuth() {
  $('auth-banner').hidden = true;
}
