// @ts-check
// nestjs-durable dashboard: throughput and failure charts over 1 h, 24 h or 7 d (GET charts), as SVG
// bars drawn here (no chart library, nothing inline: the strict CSP holds).
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { $, details, el, clear, nf, fail, fmtTime } from './dom.js';
import { api } from './api.js';

var SVG = 'http://www.w3.org/2000/svg';
var chartState = { range: '24h', loaded: false };

/**
 * @param {string} tag
 * @param {Record<string, string | number>} attrs
 */
function svg(tag, attrs) {
  var n = document.createElementNS(SVG, tag);
  for (var k in attrs) n.setAttribute(k, String(attrs[k]));
  return n;
}

/**
 * Stacked bars: one column per bucket, one band per series (drawn bottom up), with a title per column.
 * @param {import('./api.js').ApiObject[]} buckets
 * @param {{ key: string, label: string }[]} series
 * @param {string} label
 */
function bars(buckets, series, label) {
  var w = 600,
    h = 120,
    gap = 1;
  var max = Math.max.apply(
    null,
    buckets
      .map(function (b) {
        return series.reduce(function (a, s) {
          return a + b[s.key];
        }, 0);
      })
      .concat([1]),
  );
  var bw = w / buckets.length;
  var s = svg('svg', { viewBox: '0 0 ' + w + ' ' + h, class: 'chart', role: 'img', 'aria-label': label, preserveAspectRatio: 'none' });
  buckets.forEach(function (b, i) {
    var y = h;
    var g = svg('g', {});
    var title = svg('title', {});
    title.textContent =
      fmtTime(b.at) +
      ': ' +
      series
        .map(function (x) {
          return nf(b[x.key]) + ' ' + x.label;
        })
        .join(', ');
    g.appendChild(title);
    series.forEach(function (x) {
      var bh = (b[x.key] / max) * (h - 4);
      if (bh <= 0) return;
      y -= bh;
      g.appendChild(
        svg('rect', {
          x: (i * bw + gap / 2).toFixed(2),
          y: y.toFixed(2),
          width: Math.max(0.5, bw - gap).toFixed(2),
          height: bh.toFixed(2),
          class: 'bar-' + x.key,
        }),
      );
    });
    s.appendChild(g);
  });
  return s;
}

/**
 * @param {{ key: string, label: string }[]} series
 * @param {Record<string, number>} totals
 */
function legend(series, totals) {
  return el(
    'div',
    { class: 'chart-legend' },
    series.map(function (x) {
      return el('span', { class: 'legend-' + x.key }, el('i'), x.label + ' ' + nf(totals[x.key]));
    }),
  );
}

/**
 * @param {import('./api.js').ApiObject} data GET charts
 */
function render(data) {
  var body = clear($('charts-body'));
  /** @type {Record<string, number>} */
  var totals = { started: 0, succeeded: 0, failed: 0, cancelled: 0 };
  data.buckets.forEach(function (/** @type {import('./api.js').ApiObject} */ b) {
    for (var k in totals) totals[k] += b[k];
  });
  var finished = totals.succeeded + totals.failed + totals.cancelled;
  var through = [
    { key: 'succeeded', label: 'succeeded' },
    { key: 'failed', label: 'failed' },
    { key: 'cancelled', label: 'cancelled' },
  ];
  body.appendChild(
    el(
      'div',
      { class: 'chart-box', id: 'chart-throughput', 'data-range': data.range },
      el('h3', { text: 'Throughput: finished runs per ' + step(data.bucketMs) + ' (' + nf(totals.started) + ' started)' }),
      bars(data.buckets, through, 'finished runs'),
      legend(through, totals),
    ),
  );
  var fail = [{ key: 'failed', label: 'failed' }];
  body.appendChild(
    el(
      'div',
      { class: 'chart-box', id: 'chart-failures', 'data-range': data.range },
      el('h3', {
        text:
          'Failures per ' +
          step(data.bucketMs) +
          (finished ? ' (' + ((100 * totals.failed) / finished).toFixed(1) + ' % of finished runs)' : ''),
      }),
      bars(data.buckets, fail, 'failed runs'),
      legend(fail, totals),
    ),
  );
}

/**
 * @param {number} ms
 */
function step(ms) {
  return ms >= 3600000 ? ms / 3600000 + ' h' : ms / 60000 + ' min';
}

export function loadCharts() {
  document.querySelectorAll('#charts [data-range]').forEach(function (b) {
    b.setAttribute('aria-pressed', String(b.getAttribute('data-range') === chartState.range));
  });
  return api('charts?range=' + chartState.range).then(function (d) {
    chartState.loaded = true;
    render(d);
  }, fail);
}

export function initCharts() {
  var panel = details('charts');
  if (!panel) return;
  panel.addEventListener('toggle', function () {
    if (panel.open) loadCharts();
  });
  document.querySelectorAll('#charts button[data-range]').forEach(function (b) {
    // The buttons sit in the panel's summary: a click must choose a range, not fold the panel.
    b.addEventListener('click', function (e) {
      e.preventDefault();
      chartState.range = String(b.getAttribute('data-range'));
      if (panel.open) loadCharts();
      else panel.open = true;
    });
  });
}

/** Called on live updates and timer refreshes: only while the panel is open. */
export function refreshCharts() {
  if ($('charts') && details('charts').open) loadCharts();
}
