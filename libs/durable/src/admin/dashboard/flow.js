// nestjs-durable dashboard: the flow-control panel (cluster-wide limits per queue with what each
// queue is doing, its busiest concurrency keys; set or reset a limit) and, in a run's detail, why
// the run has not started. Plain browser JavaScript on the helpers dashboard.js exposes.
// User data is only ever inserted as text, never as HTML.
(function () {
  'use strict';

  var state = { queues: [], open: null, keys: null, loaded: false, adding: false };

  function d() { return window.DurableDashboard; }
  function $(id) { return document.getElementById(id); }
  function q(name) { return 'flow/queues/' + encodeURIComponent(name); }
  function limitText(n) { return n === null || n === undefined ? '—' : String(n); }

  function load() {
    var D = d();
    return D.api('flow').then(function (res) {
      state.queues = res.queues;
      state.loaded = true;
      if (state.open) return loadKeys(state.open);
    }).then(render, D.fail);
  }

  function loadKeys(queue) {
    return d().api(q(queue) + '/keys' + d().qs({ limit: 20 })).then(function (res) { state.keys = res.keys; });
  }

  /** Limits from the form: an empty field is no limit (null). */
  function save(queue, form) {
    var D = d();
    var num = function (name) { var v = form.elements[name].value.trim(); return v === '' ? null : Number(v); };
    return D.api(q(queue) + '/limits', 'POST', { globalConcurrency: num('globalConcurrency'), keyConcurrency: num('keyConcurrency') })
      .then(function () { D.toast('Limits of ' + queue + ' saved; every instance follows at once'); return load(); }, D.fail);
  }

  function reset(queue) {
    var D = d();
    return D.api(q(queue) + '/reset', 'POST').then(function (res) {
      D.toast(res.limits ? 'Limits of ' + queue + ' back to the declared ones' : queue + ' has no limits now');
      return load();
    }, D.fail);
  }

  /** A form of the two limits; `queue` names the queue when it is submitted (a function: the add form reads an input). */
  function limitForm(queue, g, k) {
    var el = d().el;
    var form = el('form', { class: 'flow-form', onsubmit: function (e) { e.preventDefault(); var name = queue(); if (name) save(name, form); } },
      el('label', null, 'Queue-wide ', el('input', { name: 'globalConcurrency', type: 'number', min: '1', placeholder: 'none', value: g === null || g === undefined ? '' : String(g) })),
      el('label', null, ' Per key ', el('input', { name: 'keyConcurrency', type: 'number', min: '1', placeholder: 'none', value: k === null || k === undefined ? '' : String(k) })),
      el('button', { type: 'submit', 'data-action': 'save-limits' }, 'Save'));
    return form;
  }

  function render() {
    var D = d();
    var el = D.el;
    $('flow-count').textContent = state.loaded ? '(' + state.queues.length + ')' : '';
    var box = D.clear($('flow-body'));
    if (!state.queues.length) {
      box.appendChild(el('div', { class: 'empty muted' }, 'No queue has cluster-wide limits. Declare them in the queues option ({ globalConcurrency, keyConcurrency }) or set one here.'));
    } else {
      var rows = [];
      state.queues.forEach(function (l) {
        var full = l.globalConcurrency !== null && l.running >= l.globalConcurrency;
        rows.push(el('tr', { class: 'flow-row' + (l.queue === state.open ? ' selected' : ''), 'data-queue': l.queue, onclick: function () { toggle(l.queue); } },
          el('td', { class: 'mono' }, l.queue, l.source === 'declared' ? el('span', { class: 'muted', title: 'Declared in the queues option' }, ' · options') : el('span', { class: 'muted', title: 'Set at runtime; kept until reset' }, ' · runtime')),
          el('td', { class: full ? 'flow-full' : null, text: l.running + ' / ' + limitText(l.globalConcurrency) }),
          el('td', { text: limitText(l.keyConcurrency) }),
          el('td', { text: String(l.due) }),
          el('td', { class: 'actions', onclick: function (e) { e.stopPropagation(); } },
            el('button', { type: 'button', class: 'ghost', 'data-action': 'reset', title: 'Drop a runtime limit: back to the declared ones', onclick: function () { reset(l.queue); } }, 'Reset'))));
        if (l.queue === state.open) rows.push(detailRow(l));
      });
      box.appendChild(el('table', { class: 'runs flow', id: 'flow-table' },
        el('thead', null, el('tr', null, ['Queue', 'Running / limit', 'Per key', 'Due, waiting', ''].map(function (h) { return el('th', { text: h }); }))),
        el('tbody', null, rows)));
    }
    var add = el('details', { class: 'flow-add' }, el('summary', null, 'Set limits of a queue'));
    add.open = state.adding;
    add.addEventListener('toggle', function () { state.adding = add.open; });
    var name = el('input', { placeholder: 'queue', spellcheck: 'false', id: 'flow-new-queue' });
    var form = limitForm(function () { return name.value.trim(); }, null, null);
    form.insertBefore(name, form.firstChild);
    add.appendChild(form);
    box.appendChild(add);
  }

  function detailRow(l) {
    var el = d().el;
    var keys = state.keys && state.keys.length
      ? el('table', { class: 'flow-keys' },
          el('thead', null, el('tr', null, ['Concurrency key', 'Running', 'Due, waiting'].map(function (h) { return el('th', { text: h }); }))),
          el('tbody', null, state.keys.map(function (k) {
            var full = l.keyConcurrency !== null && k.running >= l.keyConcurrency;
            return el('tr', null, el('td', { class: 'mono', text: k.key }), el('td', { class: full ? 'flow-full' : null, text: k.running + ' / ' + limitText(l.keyConcurrency) }), el('td', { text: String(k.due) }));
          })))
      : el('div', { class: 'muted', text: 'No run of this queue has a concurrency key now.' });
    return el('tr', { class: 'flow-detail', 'data-detail': l.queue },
      el('td', { colspan: 5 }, limitForm(function () { return l.queue; }, l.globalConcurrency, l.keyConcurrency), el('div', null, el('b', null, 'Busiest keys')), keys));
  }

  function toggle(queue) {
    if (state.open === queue) {
      state.open = null;
      state.keys = null;
      render();
      return;
    }
    state.open = queue;
    loadKeys(queue).then(render, d().fail);
  }

  /** In a run's detail: its concurrency key and, while it waits, what holds it back. */
  function blockers(r) {
    var el = d().el;
    var b = r.startBlockers;
    if (!b && !r.concurrencyKey) return null;
    var lines = [];
    if (r.concurrencyKey) lines.push(el('div', null, el('b', null, 'Concurrency key: '), el('span', { class: 'mono', text: r.concurrencyKey })));
    // Its time (a delay, a timer, a safety re-check) is told by the Waiting box: here only the limits that hold it back.
    var notDue = b && b.availableAt && new Date(b.availableAt).getTime() > new Date(r.now || Date.now()).getTime();
    var limits = b ? (notDue ? b.reasons.slice(1) : b.reasons) : [];
    if (limits.length) lines.push(el('div', null, el('b', null, 'Held back by flow control: '), limits.join(' · ')));
    if (!lines.length) return null;
    return el('div', { class: 'flow-why', id: 'run-blockers' }, lines);
  }

  function init() {
    if (!$('flow') || !d()) return;
    d().runExtras.push(blockers);
    // Not while someone types a limit (a refresh would redraw the form), nor under a confirmation.
    d().whileOpen('flow', load, function () {
      var typing = document.activeElement && $('flow-body').contains(document.activeElement);
      return typing || ($('confirm') && $('confirm').open);
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
