// nestjs-durable dashboard: The step timeline and the live progress of running steps.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { el, fmtDuration, fmtTime, ago, badge, nf } from './dom.js';
import { state } from './state.js';
import { renderRun, errorBox } from './run-detail.js';
import { jsonView } from './tables.js';

export function timeline(r) {
  var steps = r.steps;
  var live = r.progress && r.status === 'RUNNING' ? r.progress.steps : [];
  if (!steps.length && !live.length) return el('p', { class: 'muted', text: r.status === 'PENDING' ? 'Not started yet.' : 'No steps recorded.' });
  if (!steps.length) return el('div', null, progressTable(live, r.progress.at));
  var t0 = Infinity, t1 = -Infinity;
  steps.forEach(function (s) {
    var a = new Date(s.startedAt || s.finishedAt).getTime(), b = new Date(s.finishedAt).getTime();
    if (a < t0) t0 = a;
    if (b > t1) t1 = b;
  });
  if (r.startedAt) t0 = Math.min(t0, new Date(r.startedAt).getTime());
  var span = Math.max(1, t1 - t0);
  // A step stands out when it took at least half as long as the longest and twice the median.
  var durations = steps.map(function (s) { return s.durationMs || 0; }).sort(function (x, y) { return x - y; });
  var slowFrom = Math.max(durations[durations.length - 1] * 0.5, durations[Math.floor(durations.length / 2)] * 2, 1);
  var table = el('table', { class: 'timeline', id: 'steps' }, el('thead', null, el('tr', null,
    el('th', { class: 'num', text: '#' }), el('th', { text: 'Step' }), el('th', { text: 'Status' }), el('th', { class: 'num', text: 'Tries' }),
    el('th', { class: 'bar-cell', text: 'Timeline (' + fmtDuration(span) + ')' }), el('th', { class: 'num', text: 'Duration' }))));
  var tb = el('tbody');
  steps.forEach(function (s) {
    var a = new Date(s.startedAt || s.finishedAt).getTime(), b = new Date(s.finishedAt).getTime();
    var bar = el('div', { class: 'bar ' + s.status, title: s.name + ': ' + fmtDuration(s.durationMs) });
    bar.style.left = ((a - t0) / span * 100).toFixed(3) + '%';
    bar.style.width = (Math.max(0, b - a) / span * 100).toFixed(3) + '%';
    var open = !!state.openSteps[s.seq];
    var slow = s.durationMs != null && steps.length > 1 && s.durationMs >= slowFrom;
    if (s.compensates != null) bar.className += ' comp';
    tb.appendChild(el('tr', {
      class: 'step' + (open ? ' open' : '') + (s.compensates != null ? ' compensation' : ''), 'data-seq': s.seq,
      onclick: function () { state.openSteps[s.seq] = !open; renderRun(state.run); },
    },
    el('td', { class: 'num', text: s.seq }),
    el('td', { class: 'mono' }, s.name, stepNote(s)),
    el('td', null, badge(s.status)),
    el('td', { class: 'num', text: s.attempts }),
    el('td', { class: 'bar-cell' }, el('div', { class: 'track' }, bar)),
    el('td', { class: 'num' }, el('span', { class: 'dur' + (slow ? ' slow' : ''), text: fmtDuration(s.durationMs) }))));
    if (open) {
      tb.appendChild(el('tr', { class: 'step-body' }, el('td', { colspan: 6 },
        s.error ? el('div', { class: 'step-error' }, el('h3', { text: 'Error' }), errorBox(s.error, null)) : null,
        el('h3', { text: 'Output' }), jsonView(s.output),
        s.compensation ? el('div', null, el('h3', { text: 'Undone by ' + s.compensation.by + (s.compensation.args ? ' (step arguments, then its output)' : ' (its output)') }),
          s.compensation.args ? jsonView(s.compensation.args) : null) : null,
        el('p', { class: 'muted', text: 'started ' + fmtTime(s.startedAt) + ' · finished ' + fmtTime(s.finishedAt) }))));
    }
  });
  table.appendChild(tb);
  var more = r.totals.steps > steps.length ? el('p', { class: 'muted', text: 'Showing the first ' + steps.length + ' of ' + nf(r.totals.steps) + ' steps.' }) : null;
  return el('div', null, live.length ? progressTable(live, r.progress.at) : null, table, more);
}

/** What the step name cell says besides the name: what undoes it, or what it undoes. */
export function stepNote(s) {
  if (s.compensates != null) return el('span', { class: 'step-note comp', 'data-compensates': s.compensates, text: ' ↩ undoes #' + s.compensates });
  if (s.compensation) return el('span', { class: 'step-note', 'data-compensation': s.compensation.by, title: 'Recorded with the step: undone by ' + s.compensation.by + ' if the run fails or is cancelled with compensation', text: ' ↺ ' + s.compensation.by });
  return null;
}

/** Steps executing now, with the latest value they passed to Durable.progress(). */
export function progressTable(live, at) {
  var tb = el('tbody');
  live.forEach(function (p) {
    var frac = progressFraction(p.value);
    var bar = el('div', { class: 'bar RUNNING' });
    bar.style.left = '0';
    bar.style.width = frac == null ? '100%' : (Math.max(0, Math.min(1, frac)) * 100).toFixed(1) + '%';
    if (frac == null) bar.className += ' indeterminate';
    tb.appendChild(el('tr', { class: 'progress-row', 'data-seq': p.seq },
      el('td', { class: 'num', text: p.seq }),
      el('td', { class: 'mono', text: p.step }),
      el('td', null, badge('RUNNING')),
      el('td', { class: 'bar-cell' }, el('div', { class: 'track' }, bar)),
      el('td', { class: 'progress-text', text: progressText(p.value) })));
  });
  return el('div', { class: 'live-progress', id: 'live-progress' },
    el('h3', null, 'Running now', el('span', { class: 'muted', text: at ? 'progress reported ' + ago(at) : '' })),
    el('table', { class: 'timeline' }, tb));
}
/** 0..1 for a number in [0, 1], { done, total }, or { percent } (0..100); null if the value says no fraction. */
export function progressFraction(v) {
  if (typeof v === 'number' && isFinite(v) && v >= 0 && v <= 1) return v;
  if (v && typeof v === 'object') {
    if (typeof v.done === 'number' && typeof v.total === 'number' && v.total > 0) return v.done / v.total;
    if (typeof v.percent === 'number') return v.percent / 100;
  }
  return null;
}
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
