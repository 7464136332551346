// @ts-check
// nestjs-durable dashboard: The step timeline and the live progress of running steps.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { el, fmtDuration, fmtTime, ago, badge, nf } from './dom.js';
import { state } from './state.js';
import { nav } from './nav.js';
import { jsonView, errorBox } from './tables.js';

/**
 * @param {import('./api.js').ApiObject} r
 */
export function timeline(r) {
  var steps = r.steps;
  var live = r.progress && r.status === 'RUNNING' ? r.progress.steps : [];
  if (!steps.length && !live.length)
    return el('p', { class: 'muted', text: r.status === 'PENDING' ? 'Not started yet.' : 'No steps recorded.' });
  if (!steps.length) return el('div', null, progressTable(live, r.progress.at));
  var now = new Date(r.now || Date.now()).getTime();
  var spans = layout(steps, now);
  var t0 = Infinity,
    t1 = -Infinity;
  spans.forEach(function (x) {
    t0 = Math.min(t0, x.a);
    t1 = Math.max(t1, x.b, x.until || -Infinity);
  });
  if (r.startedAt) t0 = Math.min(t0, new Date(r.startedAt).getTime());
  var span = Math.max(1, t1 - t0);
  var pct = function (/** @type {number} */ t) {
    return (((t - t0) / span) * 100).toFixed(3) + '%';
  };
  // A step stands out when it took at least half as long as the longest and twice the median.
  var durations = steps
    .map(function (/** @type {import('./api.js').ApiObject} */ s) {
      return s.durationMs || 0;
    })
    .sort(function (/** @type {number} */ x, /** @type {number} */ y) {
      return x - y;
    });
  var slowFrom = Math.max(durations[durations.length - 1] * 0.5, durations[Math.floor(durations.length / 2)] * 2, 1);
  var table = el(
    'table',
    { class: 'timeline', id: 'steps' },
    el(
      'thead',
      null,
      el(
        'tr',
        null,
        el('th', { class: 'num', text: '#' }),
        el('th', { text: 'Step' }),
        el('th', { text: 'Status' }),
        el('th', { class: 'num', text: 'Tries' }),
        el('th', { class: 'bar-cell', text: 'Timeline (' + fmtDuration(span) + ')' }),
        el('th', { class: 'num', text: 'Duration' }),
      ),
    ),
  );
  var tb = el('tbody');
  steps.forEach(function (/** @type {import('./api.js').ApiObject} */ s, /** @type {number} */ i) {
    var x = spans[i];
    var track = el('div', { class: 'track' });
    var bar = el('div', {
      class: 'bar ' + s.status,
      title: s.name + ': ' + (s.status === 'WAITING' ? 'waiting' : fmtDuration(s.durationMs)),
    });
    bar.style.left = pct(x.a);
    bar.style.width = (((x.b - x.a) / span) * 100).toFixed(3) + '%';
    if (s.compensates != null) bar.className += ' comp';
    track.appendChild(bar);
    if (x.until && x.until > x.b) {
      // A sleep not over yet: the rest of it, up to its wake time.
      var rest = el('div', { class: 'bar planned', title: 'wakes at ' + fmtTime(s.wait.until) });
      rest.style.left = pct(x.b);
      rest.style.width = (((x.until - x.b) / span) * 100).toFixed(3) + '%';
      track.appendChild(rest);
    }
    var open = !!state.openSteps[s.seq];
    var slow = s.durationMs != null && steps.length > 1 && s.durationMs >= slowFrom;
    tb.appendChild(
      el(
        'tr',
        {
          class: 'step' + (open ? ' open' : '') + (s.compensates != null ? ' compensation' : '') + (s.derived ? ' derived' : ''),
          'data-seq': s.seq,
          onclick: function () {
            state.openSteps[s.seq] = !open;
            nav.rerenderRun();
          },
        },
        el('td', { class: 'num', text: s.seq }),
        el('td', { class: 'mono step-name' }, s.name, stepNote(s)),
        el('td', null, badge(s.status)),
        el('td', { class: 'num', text: s.attempts }),
        el('td', { class: 'bar-cell' }, track),
        el(
          'td',
          { class: 'num' },
          el('span', {
            class: 'dur' + (slow ? ' slow' : ''),
            text: s.status === 'WAITING' ? waitingText(s, now) : fmtDuration(s.durationMs),
          }),
        ),
      ),
    );
    if (open) tb.appendChild(stepBody(s));
  });
  table.appendChild(tb);
  var more =
    r.totals.steps > steps.length
      ? el('p', { class: 'muted', text: 'Showing the first ' + steps.length + ' of ' + nf(r.totals.steps) + ' steps.' })
      : null;
  return el('div', null, live.length ? progressTable(live, r.progress.at) : null, table, more);
}

/**
 * Where each step's bar goes (ms): its recorded start and end; a wait not over yet ends now (a sleep
 * also has its wake time). A checkpoint is written a little after its step returned (a batch, a
 * transaction), so the recorded times of steps that ran one after another may overlap by that
 * delay: a step that starts inside the previous bar, ends after it and overlaps it by less than
 * half its own length is drawn from the previous end, with its own length. Parallel steps (a
 * Promise.all: overlapping most of their length) keep their recorded times.
 * @param {import('./api.js').ApiObject[]} steps
 * @param {number} now
 */
export function layout(steps, now) {
  /** @type {{ a: number, b: number, until: number | null } | null} */
  var prev = null;
  return steps.map(function (s) {
    var b = s.finishedAt ? new Date(s.finishedAt).getTime() : now;
    var a = s.startedAt ? new Date(s.startedAt).getTime() : b;
    // A sleep's wake time is drawn ahead (dashed); a recv's timeout may be days away: not drawn.
    var until = s.status === 'WAITING' && s.wait && s.wait.kind === 'sleep' && s.wait.until ? new Date(s.wait.until).getTime() : null;
    if (prev && a < prev.b && b > prev.b && prev.b - a < (b - a) / 2) {
      var len = b - a;
      a = prev.b;
      b = s.finishedAt ? a + len : Math.max(a, now);
    }
    var x = { a: a, b: Math.max(a, b), until: until };
    prev = x;
    return x;
  });
}

/**
 * The duration cell of a wait not over yet (its wake time or timeout is in the name cell).
 * @param {import('./api.js').ApiObject} s
 * @param {number} now
 */
function waitingText(s, now) {
  return s.startedAt ? 'waiting ' + fmtDuration(now - new Date(s.startedAt).getTime()) : 'waiting';
}

/**
 * @param {import('./api.js').ApiObject} s
 */
function stepBody(s) {
  return el(
    'tr',
    { class: 'step-body' },
    el(
      'td',
      { colspan: 6 },
      s.derived
        ? el('p', {
            class: 'muted',
            text: 'Nothing is recorded for this wait until it ends: shown from the run history (its latest suspension).',
          })
        : null,
      s.error ? el('div', { class: 'step-error' }, el('h3', { text: 'Error' }), errorBox(s.error, null)) : null,
      s.wait ? null : el('h3', { text: 'Output' }),
      s.wait ? null : jsonView(s.output),
      s.compensation
        ? el(
            'div',
            null,
            el('h3', {
              text: 'Undone by ' + s.compensation.by + (s.compensation.args ? ' (step arguments, then its output)' : ' (its output)'),
            }),
            s.compensation.args ? jsonView(s.compensation.args) : null,
          )
        : null,
      s.wait && s.status !== 'WAITING' && s.wait.kind !== 'sleep'
        ? el('div', null, el('h3', { text: 'Received' }), jsonView(s.output))
        : null,
      el('p', {
        class: 'muted',
        text:
          'started ' +
          fmtTime(s.startedAt) +
          ' · ' +
          (s.finishedAt ? 'finished ' + fmtTime(s.finishedAt) : 'not over yet') +
          (s.wait && s.wait.until ? ' · ' + (s.wait.kind === 'sleep' ? 'wakes at ' : 'times out at ') + fmtTime(s.wait.until) : ''),
      }),
    ),
  );
}

/**
 * What the step name cell says besides the name: what undoes it, or what it undoes.
 * @param {import('./api.js').ApiObject} s
 */
export function stepNote(s) {
  var w = s.wait;
  if (w && w.kind === 'sleep')
    return el('span', {
      class: 'step-note',
      'data-wait': 'sleep',
      text: (s.status === 'WAITING' ? ' sleeps until ' : ' slept until ') + fmtTime(w.until),
    });
  if (w && w.kind === 'recv')
    return el(
      'span',
      { class: 'step-note', 'data-wait': 'recv', text: ' message on ' },
      el('b', { text: w.topic }),
      w.until ? ' (timeout ' + fmtTime(w.until) + ')' : s.status === 'WAITING' ? ' (no timeout)' : '',
    );
  if (w && w.kind === 'child') return el('span', { class: 'step-note', 'data-wait': 'child', text: ' result of a child run' });
  if (w && w.kind === 'group')
    return el('span', { class: 'step-note', 'data-wait': 'group', text: ' children of the group started at step ' + w.group });
  if (s.compensates != null)
    return el('span', { class: 'step-note comp', 'data-compensates': s.compensates, text: ' ↩ undoes #' + s.compensates });
  if (s.compensation)
    return el('span', {
      class: 'step-note',
      'data-compensation': s.compensation.by,
      title: 'Recorded with the step: undone by ' + s.compensation.by + ' if the run fails or is cancelled with compensation',
      text: ' ↺ ' + s.compensation.by,
    });
  return null;
}

/**
 * Steps executing now, with the latest value they passed to Durable.progress().
 * @param {import('./api.js').ApiObject[]} live
 * @param {string | null} at
 */
export function progressTable(live, at) {
  var tb = el('tbody');
  live.forEach(function (p) {
    var frac = progressFraction(p.value);
    var bar = el('div', { class: 'bar RUNNING' });
    bar.style.left = '0';
    bar.style.width = frac == null ? '100%' : (Math.max(0, Math.min(1, frac)) * 100).toFixed(1) + '%';
    if (frac == null) bar.className += ' indeterminate';
    tb.appendChild(
      el(
        'tr',
        { class: 'progress-row', 'data-seq': p.seq },
        el('td', { class: 'num', text: p.seq }),
        el('td', { class: 'mono', text: p.step }),
        el('td', null, badge('RUNNING')),
        el('td', { class: 'bar-cell' }, el('div', { class: 'track' }, bar)),
        el('td', { class: 'progress-text', text: progressText(p.value) }),
      ),
    );
  });
  return el(
    'div',
    { class: 'live-progress', id: 'live-progress' },
    el('h3', null, 'Running now', el('span', { class: 'muted', text: at ? 'progress reported ' + ago(at) : '' })),
    el('table', { class: 'timeline' }, tb),
  );
}
/**
 * 0..1 for a number in [0, 1], { done, total }, or { percent } (0..100); null if the value says no fraction.
 * @param {any} v
 */
export function progressFraction(v) {
  if (typeof v === 'number' && isFinite(v) && v >= 0 && v <= 1) return v;
  if (v && typeof v === 'object') {
    if (typeof v.done === 'number' && typeof v.total === 'number' && v.total > 0) return v.done / v.total;
    if (typeof v.percent === 'number') return v.percent / 100;
  }
  return null;
}
/**
 * @param {any} v
 */
export function progressText(v) {
  var frac = progressFraction(v);
  var parts = [];
  if (v && typeof v === 'object' && typeof v.done === 'number' && typeof v.total === 'number') parts.push(nf(v.done) + ' / ' + nf(v.total));
  if (frac != null) parts.push(Math.round(frac * 100) + ' %');
  if (v && typeof v === 'object' && typeof v.message === 'string') parts.push(v.message);
  if (!parts.length) {
    var text = typeof v === 'string' ? v : JSON.stringify(v);
    parts.push(text && text.length > 120 ? text.slice(0, 119) + '…' : String(text));
  }
  return parts.join(' · ');
}
