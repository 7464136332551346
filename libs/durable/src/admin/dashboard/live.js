// @ts-check
// nestjs-durable dashboard: live updates over Server-Sent Events (GET {path}/live), read with
// fetch() so that the bearer token goes along (EventSource cannot send headers). Every open tab
// shares the server's one query per second. If no event arrives soon after connecting (a proxy that
// buffers responses) or the stream fails, the page falls back to polling (dashboard.js's timers).
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { $, input, debounce } from './dom.js';
import { authHeaders, BASE_URL } from './api.js';
import { state } from './state.js';
import { nav } from './nav.js';
import { renderStats } from './stats.js';

/** No `hello` within this long after connecting: the response is being buffered; poll instead. */
var HELLO_TIMEOUT_MS = 4000;
/** A stream that worked and then ended is reopened after this long. */
var RECONNECT_MS = 3000;

/**
 * `buffered`: the stream never said hello (a proxy holds it): the page polls from then on.
 * `refused`: the admin API refused the stream (401/403, no credentials yet): polled until liveRetry().
 * @type {{ mode: string, run: string | null, abort: AbortController | null, buffered: boolean, refused: boolean }}
 */
var live = { mode: 'off', run: null, abort: null, buffered: false, refused: false };

/** A refusal of the stream (401/403): not a buffering proxy; the stream is tried again with new credentials. */
var REFUSED = 'refused';

/** 'sse' while events arrive; 'poll' when the page polls instead (no stream, or it is buffered); 'off'. */
export function liveMode() {
  return live.mode;
}

/**
 * @param {string} mode 'sse', 'poll' or 'off'
 */
function setMode(mode) {
  live.mode = mode;
  var tag = $('live-mode');
  if (tag) {
    tag.setAttribute('data-live', mode);
    tag.textContent = mode === 'sse' ? 'streaming' : mode === 'poll' ? 'polling' : '';
    tag.title =
      mode === 'sse'
        ? 'Updates arrive as they happen (Server-Sent Events)'
        : mode === 'poll'
          ? 'Refreshing every 5 s (no event stream: a proxy may buffer it)'
          : '';
  }
}

var reloadList = debounce(function () {
  nav.loadList();
}, 400);

/**
 * @param {string} type
 * @param {any} data
 */
function onEvent(type, data) {
  if (type === 'hello') setMode('sse');
  else if (type === 'changes') {
    reloadList();
    if (state.runId && (data.many || data.ids.indexOf(state.runId) >= 0)) nav.loadRun(false);
  } else if (type === 'run') {
    if (data.id === state.runId) nav.loadRun(false);
  } else if (type === 'stats') renderStats(data);
}

/** (Re)connects the stream for the page's current open run; call it when the open run changes. */
export function liveFollow() {
  if (!input('live').checked || live.buffered || live.refused) {
    stop();
    setMode(input('live').checked ? 'poll' : 'off');
    return;
  }
  if (live.abort && live.run === state.runId) return;
  stop();
  connect();
}

function stop() {
  if (live.abort) live.abort.abort();
  live.abort = null;
}

function connect() {
  var ctrl = new AbortController();
  live.abort = ctrl;
  live.run = state.runId;
  var gotHello = false;
  var helloTimer = setTimeout(function () {
    if (gotHello || ctrl.signal.aborted) return;
    live.buffered = true; // no event: something between us buffers the stream; polling from now on
    ctrl.abort();
    setMode('poll');
  }, HELLO_TIMEOUT_MS);
  var url = BASE_URL + 'live?stats=true' + (state.runId ? '&run=' + encodeURIComponent(state.runId) : '');
  var headers = authHeaders();
  headers.Accept = 'text/event-stream';
  fetch(url, { headers: headers, credentials: 'same-origin', signal: ctrl.signal, cache: 'no-store' })
    .then(function (res) {
      if (res.status === 401 || res.status === 403) throw new Error(REFUSED);
      if (!res.ok || !res.body || (res.headers.get('content-type') || '').indexOf('text/event-stream') < 0)
        throw new Error('no stream (' + res.status + ')');
      var reader = res.body.getReader();
      var decoder = new TextDecoder();
      var buf = '';
      /** @returns {Promise<void>} */
      function pump() {
        return reader.read().then(function (r) {
          if (r.done) throw new Error('stream ended');
          buf += decoder.decode(r.value, { stream: true }).replace(/\r\n/g, '\n');
          var cut;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            var block = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            var type = 'message',
              data = '';
            block.split('\n').forEach(function (line) {
              if (line.indexOf('event:') === 0) type = line.slice(6).trim();
              else if (line.indexOf('data:') === 0) data += line.slice(5).replace(/^ /, '');
            });
            if (!data) continue;
            if (type === 'hello') gotHello = true;
            try {
              onEvent(type, JSON.parse(data));
            } catch {
              /* a malformed event is ignored */
            }
          }
          return pump();
        });
      }
      return pump();
    })
    .catch(function (err) {
      clearTimeout(helloTimer);
      if (ctrl.signal.aborted) return;
      live.abort = null;
      setMode('poll');
      if (err && err.message === REFUSED) live.refused = true;
      else if (gotHello)
        setTimeout(liveFollow, RECONNECT_MS); // it worked: try again; never worked: keep polling
      else live.buffered = true;
    });
}

/** New credentials (a token entered): a stream refused for want of them is tried again at once. */
export function liveRetry() {
  if (!live.refused) return;
  live.refused = false;
  stop();
  liveFollow();
}
