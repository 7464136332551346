// @ts-check
// nestjs-durable dashboard: a run's streams (Durable.stream), each with its newest chunks.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { el, clear, nf, fmtTime } from './dom.js';
import { api } from './api.js';
import { simpleTable } from './tables.js';

/** How many of a stream's newest chunks the tab shows. */
var SHOWN = 50;

/**
 * The Streams tab: filled once the run's streams are read.
 * @param {import('./api.js').ApiObject} r
 */
export function streamsTab(r) {
  var box = el('div', { id: 'run-streams' }, el('p', { class: 'muted', text: 'Reading streams…' }));
  load(r.id).then(
    function (streams) {
      render(box, streams);
    },
    function (/** @type {Error} */ err) {
      clear(box);
      box.appendChild(el('p', { class: 'muted', text: 'Could not read the streams: ' + err.message }));
    },
  );
  return box;
}

/**
 * @param {string} id
 * @returns {Promise<{ summary: import('./api.js').ApiObject, page: import('./api.js').ApiObject }[]>}
 */
function load(id) {
  var base = 'runs/' + encodeURIComponent(id) + '/streams';
  return api(base).then(function (list) {
    return Promise.all(
      list.streams.map(function (/** @type {import('./api.js').ApiObject} */ s) {
        var from = Math.max(0, s.chunks - SHOWN);
        return api(base + '/' + encodeURIComponent(s.stream) + '?from=' + from + '&limit=' + SHOWN).then(function (page) {
          return { summary: s, page: page };
        });
      }),
    );
  });
}

/**
 * @param {HTMLElement} box
 * @param {{ summary: import('./api.js').ApiObject, page: import('./api.js').ApiObject }[]} streams
 */
function render(box, streams) {
  clear(box);
  if (!streams.length) {
    box.appendChild(el('p', { class: 'muted', text: 'This run wrote to no stream (Durable.stream).' }));
    return;
  }
  streams.forEach(function (d) {
    var s = d.summary;
    var about =
      nf(s.chunks) + (s.chunks === 1 ? ' chunk' : ' chunks') + (s.ended ? ', closed' : d.page.ended ? ', ended with the run' : ', open');
    box.appendChild(
      el(
        'div',
        { class: 'section', 'data-stream': s.stream },
        el('b', { class: 'mono', text: s.stream }),
        el('span', { class: 'muted', text: ' · ' + about + ' · last write ' + fmtTime(s.lastWrittenAt) }),
        simpleTable(d.page.chunks, ['position', 'value'], s.chunks),
      ),
    );
  });
}
