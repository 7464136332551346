// nestjs-durable dashboard: the lifecycle hooks panel (each consumer's position in the run history,
// the instance delivering to it, its backlog). Plain browser JavaScript on the helpers dashboard.js
// exposes. User data is only ever inserted as text, never as HTML.
(function () {
  'use strict';

  var state = { consumers: [], loaded: false };

  function d() { return window.DurableDashboard; }
  function $(id) { return document.getElementById(id); }

  function load() {
    var D = d();
    return D.api('hooks').then(function (res) {
      state.consumers = res.consumers;
      state.loaded = true;
    }).then(render, D.fail);
  }

  function render() {
    var D = d();
    var el = D.el;
    var behind = state.consumers.reduce(function (a, c) { return a + c.behind; }, 0);
    $('hooks-count').textContent = state.loaded ? '(' + state.consumers.length + (behind ? ', ' + behind + ' events behind' : '') + ')' : '';
    var box = D.clear($('hooks-body'));
    if (!state.consumers.length) {
      box.appendChild(el('div', { class: 'empty muted' }, 'No lifecycle hooks. Add one with @OnDurableEvent(\'run.failed\') on a provider method, or engine.onEvent().'));
      return;
    }
    box.appendChild(el('table', { class: 'runs hooks', id: 'hooks-table' },
      el('thead', null, el('tr', null, ['Consumer', 'Delivered up to', 'Behind', 'Delivering instance', 'Last move'].map(function (h) { return el('th', { text: h }); }))),
      el('tbody', null, state.consumers.map(function (c) {
        var leased = c.owner && c.leaseExpiresAt && new Date(c.leaseExpiresAt).getTime() > Date.now();
        return el('tr', { 'data-consumer': c.consumer },
          el('td', { class: 'mono', text: c.consumer }),
          el('td', { class: 'mono', text: 'event ' + c.lastEventId }),
          el('td', { 'data-behind': String(c.behind), text: c.behind >= 10000 ? '10000+' : String(c.behind) }),
          el('td', null, leased ? el('span', { class: 'mono', text: c.owner }) : el('span', { class: 'muted', text: 'none (no instance with this hook running)' })),
          el('td', null, D.fmtTime(c.updatedAt), el('div', { class: 'muted', text: D.ago(c.updatedAt) })));
      }))));
  }

  function init() {
    if (d()) d().whileOpen('hooks', load);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
