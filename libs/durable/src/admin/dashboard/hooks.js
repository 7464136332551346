// @ts-check
// nestjs-durable dashboard: the lifecycle hooks panel (each consumer's position in the run history,
// the instance delivering to it, its backlog). User data is only ever inserted as text, never as HTML.
import { $, el, tableHead, clear, fail, fmtTime, ago } from './dom.js';
/** @typedef {import('./api.js').ApiObject} ApiObject */
import { api } from './api.js';
import { whileOpen } from './panels.js';
/** @type {{ consumers: ApiObject[], loaded: boolean }} */
var state = { consumers: [], loaded: false };

function load() {
  return api('hooks')
    .then(function (res) {
      state.consumers = res.consumers;
      state.loaded = true;
    })
    .then(render, fail);
}

function render() {
  var behind = state.consumers.reduce(function (a, c) {
    return a + c.behind;
  }, 0);
  $('hooks-count').textContent = state.loaded ? '(' + state.consumers.length + (behind ? ', ' + behind + ' events behind' : '') + ')' : '';
  var box = clear($('hooks-body'));
  if (!state.consumers.length) {
    box.appendChild(
      el(
        'div',
        { class: 'empty muted' },
        "No lifecycle hooks. Add one with @OnDurableEvent('run.failed') on a provider method, or engine.onEvent().",
      ),
    );
    return;
  }
  box.appendChild(
    el(
      'table',
      { class: 'runs hooks', id: 'hooks-table' },
      tableHead(['Consumer', 'Delivered up to', 'Behind', 'Delivering instance', 'Last move']),
      el(
        'tbody',
        null,
        state.consumers.map(function (c) {
          var leased = c.owner && c.leaseExpiresAt && new Date(c.leaseExpiresAt).getTime() > Date.now();
          return el(
            'tr',
            { 'data-consumer': c.consumer },
            el('td', { class: 'mono', text: c.consumer }),
            el('td', { class: 'mono', text: 'event ' + c.lastEventId }),
            el('td', { 'data-behind': String(c.behind), text: c.behind >= 10000 ? '10000+' : String(c.behind) }),
            el(
              'td',
              null,
              leased
                ? el('span', { class: 'mono', text: c.owner })
                : el('span', { class: 'muted', text: 'none (no instance with this hook running)' }),
            ),
            el('td', null, fmtTime(c.updatedAt), el('div', { class: 'muted', text: ago(c.updatedAt) })),
          );
        }),
      ),
    ),
  );
}

export function initHooks() {
  whileOpen('hooks', load);
}
