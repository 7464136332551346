// nestjs-durable dashboard: plain browser JavaScript, no build step, no dependencies.
// Talks only to the admin API next to this page ({path}/runs, /stats, ...). User data (inputs,
// outputs, errors, names) is only ever inserted as text, never as HTML.
/* global document, window, location, history, navigator, sessionStorage, fetch, setTimeout, clearTimeout, setInterval */
(function () {
  'use strict';

  var BASE = location.pathname.replace(/\/+$/, '') + '/';
  var STATUSES = ['PENDING', 'RUNNING', 'WAITING', 'SUCCEEDED', 'FAILED', 'CANCELLED'];
  var ACTIVE = ['PENDING', 'RUNNING', 'WAITING'];
  var TOKEN_KEY = 'nestjs-durable.token';
  var REFRESH_MS = 5000;
  /** An open run that is still going is refreshed this often (live progress, compensation). */
  var RUN_REFRESH_MS = 1500;

  var state = {
    statuses: [],
    workflow: '',
    queue: '',
    idPrefix: '',
    parentId: '',
    from: '',
    to: '',
    sort: 'created',
    order: 'desc',
    limit: 50,
    cursor: null,
    cursors: [],
    nextCursor: null,
    runId: null,
    run: null,
    tab: 'steps',
    openSteps: {},
    list: null,
  };

  // ---------------------------------------------------------------- helpers
  function $(id) {
    return document.getElementById(id);
  }
  function el(tag, attrs) {
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
  function append(node, child) {
    if (child == null || child === false) return;
    if (Array.isArray(child))
      child.forEach(function (c) {
        append(node, c);
      });
    else node.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  function token() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || '';
    } catch {
      return '';
    }
  }
  function setToken(t) {
    try {
      if (t) sessionStorage.setItem(TOKEN_KEY, t);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch {
      /* storage off */
    }
  }

  function ApiError(status, message) {
    this.status = status;
    this.message = message;
  }

  /** fetch() against the admin API with the page's cookies and, if set, the bearer token. */
  function api(path, method, body) {
    var headers = { Accept: 'application/json' };
    var t = token();
    if (t) headers.Authorization = 'Bearer ' + t;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    return fetch(BASE + path, {
      method: method || 'GET',
      headers: headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(function (res) {
      return res.text().then(function (text) {
        var data = null;
        try {
          data = text ? JSON.parse(text) : null;
        } catch {
          data = null;
        }
        if (res.status === 401 || res.status === 403) {
          showAuth(res.status, data && data.message);
          throw new ApiError(res.status, 'Not authorized (' + res.status + ')');
        }
        if (!res.ok) {
          var msg = data && data.message ? (Array.isArray(data.message) ? data.message.join('; ') : data.message) : 'HTTP ' + res.status;
          throw new ApiError(res.status, msg);
        }
        hideAuth();
        return data;
      });
    });
  }

  function qs(params) {
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

  function fmtDuration(ms) {
    if (ms == null || !isFinite(ms)) return '—';
    if (ms < 1) return ms.toFixed(2) + ' ms';
    if (ms < 1000) return Math.round(ms) + ' ms';
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
    var s = Math.round(ms / 1000);
    if (s < 3600) return Math.floor(s / 60) + 'm ' + pad(s % 60) + 's';
    if (s < 86400) return Math.floor(s / 3600) + 'h ' + pad(Math.floor(s / 60) % 60) + 'm';
    return Math.floor(s / 86400) + 'd ' + (Math.floor(s / 3600) % 24) + 'h';
  }
  function pad(n) {
    return (n < 10 ? '0' : '') + n;
  }
  function fmtTime(iso) {
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
  function ago(iso) {
    if (!iso) return '—';
    var ms = Date.now() - new Date(iso).getTime();
    if (ms < 0) return 'in ' + fmtDuration(-ms);
    if (ms < 5000) return 'just now';
    return fmtDuration(ms).replace(/\.\d+ s$/, ' s') + ' ago';
  }
  function runDuration(r) {
    if (!r.startedAt) return null;
    var end = r.finishedAt ? new Date(r.finishedAt).getTime() : Date.now();
    return end - new Date(r.startedAt).getTime();
  }
  function badge(status) {
    return el('span', { class: 'badge ' + status, 'data-status': status }, el('span', { class: 'dot' }), status);
  }
  /** A run asked to cancel with compensation that has not ended yet: it is undoing its steps. */
  function cancelling(r) {
    return !!r.cancelRequestedAt && ACTIVE.indexOf(r.status) >= 0;
  }
  function cancellingTag() {
    return el(
      'span',
      { class: 'tag-cancelling', 'data-cancelling': '', title: 'Cancelled with compensation: undoing its steps, then CANCELLED' },
      'cancelling',
    );
  }
  function nf(n) {
    return Number(n || 0).toLocaleString();
  }

  function toast(message, isError) {
    var t = el('div', { class: 'toast' + (isError ? ' error' : '') }, message);
    $('toasts').appendChild(t);
    setTimeout(
      function () {
        t.remove();
      },
      isError ? 7000 : 4000,
    );
  }
  function fail(err) {
    if (err && (err.status === 401 || err.status === 403)) return;
    toast(err && err.message ? err.message : String(err), true);
  }

  // ---------------------------------------------------------------- auth
  function showAuth(status, message) {
    $('auth-banner').hidden = false;
    $('auth-title').textContent =
      (status === 401 ? 'Not signed in (401).' : 'Forbidden (403).') +
      (message && message !== 'Unauthorized' && message !== 'Forbidden resource' ? ' ' + message : '');
  }
  function hideAuth() {
    $('auth-banner').hidden = true;
  }

  // ---------------------------------------------------------------- URL state
  function saveHash() {
    var p = {};
    if (state.statuses.length) p.status = state.statuses.join(',');
    ['workflow', 'queue', 'idPrefix', 'parentId', 'from', 'to'].forEach(function (k) {
      if (state[k]) p[k] = state[k];
    });
    if (state.sort !== 'created') p.sort = state.sort;
    if (state.order !== 'desc') p.order = state.order;
    if (state.limit !== 50) p.limit = state.limit;
    if (state.runId) p.run = state.runId;
    var h = qs(p).slice(1);
    history.replaceState(null, '', h ? '#' + h : location.pathname + location.search);
  }
  function loadHash() {
    var h = location.hash.replace(/^#/, '');
    var p = {};
    h.split('&').forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf('=');
      try {
        p[decodeURIComponent(i < 0 ? kv : kv.slice(0, i))] = i < 0 ? '' : decodeURIComponent(kv.slice(i + 1));
      } catch {
        /* ignore bad pair */
      }
    });
    state.statuses = (p.status || '').split(',').filter(function (s) {
      return STATUSES.indexOf(s) >= 0;
    });
    ['workflow', 'queue', 'idPrefix', 'parentId', 'from', 'to'].forEach(function (k) {
      state[k] = p[k] || '';
    });
    state.sort = p.sort === 'updated' ? 'updated' : 'created';
    state.order = p.order === 'asc' ? 'asc' : 'desc';
    state.limit = [25, 50, 100, 200].indexOf(Number(p.limit)) >= 0 ? Number(p.limit) : 50;
    state.runId = p.run || null;
  }
  function syncForm() {
    $('f-workflow').value = state.workflow;
    if ($('f-workflow').value !== state.workflow && state.workflow) {
      $('f-workflow').appendChild(el('option', { value: state.workflow, text: state.workflow }));
      $('f-workflow').value = state.workflow;
    }
    $('f-queue').value = state.queue;
    $('f-id').value = state.idPrefix;
    $('f-parent').value = state.parentId;
    $('f-from').value = state.from;
    $('f-to').value = state.to;
    $('f-sort').value = state.sort;
    $('f-order').value = state.order;
    $('f-limit').value = String(state.limit);
  }

  // ---------------------------------------------------------------- stats header
  function loadStats() {
    return api('stats').then(renderStats, fail);
  }
  function renderStats(s) {
    var t = s.totals;
    var box = clear($('stats'));
    function stat(label, value, status, warn, title) {
      box.appendChild(
        el(
          'div',
          { class: 'stat' + (warn ? ' warn' : ''), title: title || null, 'data-stat': label },
          el('b', null, status ? el('span', { class: 'dot', style: null, 'data-color': status }) : null, value),
          el('span', { text: label }),
        ),
      );
    }
    stat('Pending', nf(t.counts.PENDING), 'PENDING');
    stat('Running', nf(t.counts.RUNNING), 'RUNNING');
    stat('Waiting', nf(t.counts.WAITING), 'WAITING');
    stat(
      'Succeeded · ' + s.windowMinutes + ' min',
      nf(t.counts.SUCCEEDED),
      'SUCCEEDED',
      false,
      'Succeeded in the last ' + s.windowMinutes + ' minutes',
    );
    stat(
      'Failed · ' + s.windowMinutes + ' min',
      nf(t.counts.FAILED),
      'FAILED',
      t.counts.FAILED > 0,
      'Failed in the last ' + s.windowMinutes + ' minutes',
    );
    stat(
      'Oldest due',
      t.oldestClaimableAgeMs == null ? '—' : fmtDuration(t.oldestClaimableAgeMs),
      null,
      t.oldestClaimableAgeMs > 60000,
      'Age of the oldest run waiting for a worker',
    );
    stat('Lost leases', nf(t.expiredLeases), null, t.expiredLeases > 0, 'RUNNING runs whose worker stopped heartbeating');
    box.querySelectorAll('.dot[data-color]').forEach(function (d) {
      d.style.background = 'var(--' + d.getAttribute('data-color') + ')';
    });
    renderSpark(t.perMinute);
    renderGroups(s.groups, s.windowMinutes);
  }

  var SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs) {
    var n = document.createElementNS(SVG, tag);
    for (var k in attrs) n.setAttribute(k, String(attrs[k]));
    return n;
  }
  function renderSpark(series) {
    var w = 180,
      h = 34,
      box = clear($('spark'));
    var started = series.map(function (m) {
      return m.started;
    });
    var done = series.map(function (m) {
      return m.succeeded + m.failed + m.cancelled;
    });
    var max = Math.max.apply(null, started.concat(done).concat([1]));
    function line(values, color) {
      var pts = values
        .map(function (v, i) {
          return ((i * (w - 4)) / (values.length - 1) + 2).toFixed(1) + ',' + (h - 3 - (v / max) * (h - 6)).toFixed(1);
        })
        .join(' ');
      return svg('polyline', { points: pts, fill: 'none', stroke: color, 'stroke-width': 1.6, 'stroke-linejoin': 'round' });
    }
    var s = svg('svg', { width: w, height: h, viewBox: '0 0 ' + w + ' ' + h, role: 'img', 'aria-label': 'runs per minute' });
    s.appendChild(line(started, '#5b8cff'));
    s.appendChild(line(done, '#33c28a'));
    var last = series[series.length - 1] || { started: 0, succeeded: 0, failed: 0, cancelled: 0 };
    append(box, [
      s,
      el(
        'div',
        null,
        el('div', { text: 'started ' + last.started + '/min' }),
        el('div', { text: 'finished ' + (last.succeeded + last.failed + last.cancelled) + '/min' }),
      ),
    ]);
  }
  function renderGroups(groups, windowMinutes) {
    var body = clear($('groups-body'));
    var heads = ['Workflow', 'Queue', 'Pending', 'Running', 'Waiting'];
    ['Succeeded', 'Failed', 'Cancelled'].forEach(function (h) {
      heads.push(h + ' (' + windowMinutes + ' min)');
    });
    var table = el(
      'table',
      { class: 'list-table' },
      el(
        'thead',
        null,
        el(
          'tr',
          null,
          heads.concat(['Oldest due', 'Lost leases', 'Started (1 h)', 'Finished (1 h)']).map(function (h) {
            return el('th', { text: h });
          }),
        ),
      ),
    );
    var tb = el('tbody');
    groups.forEach(function (g) {
      var st = 0,
        fin = 0;
      g.perMinute.forEach(function (m) {
        st += m.started;
        fin += m.succeeded + m.failed + m.cancelled;
      });
      tb.appendChild(
        el(
          'tr',
          null,
          el(
            'td',
            null,
            el(
              'a',
              {
                onclick: function () {
                  setFilter({ workflow: g.workflow });
                },
              },
              g.workflow,
            ),
          ),
          el('td', { text: g.queue }),
          STATUSES.map(function (s) {
            return el('td', { class: 'num', text: nf(g.counts[s]) });
          }),
          el('td', { class: 'num', text: g.oldestClaimableAgeMs == null ? '—' : fmtDuration(g.oldestClaimableAgeMs) }),
          el('td', { class: 'num', text: nf(g.expiredLeases) }),
          el('td', { class: 'num', text: nf(st) }),
          el('td', { class: 'num', text: nf(fin) }),
        ),
      );
    });
    table.appendChild(tb);
    body.appendChild(groups.length ? table : el('p', { class: 'muted', text: 'No runs yet.' }));
  }

  function loadWorkflows() {
    return api('workflows').then(function (w) {
      var sel = $('f-workflow');
      var have = {};
      Array.prototype.forEach.call(sel.options, function (o) {
        have[o.value] = true;
      });
      w.workflows.forEach(function (wf) {
        if (!have[wf.name]) sel.appendChild(el('option', { value: wf.name, text: wf.name }));
      });
      sel.value = state.workflow;
      var dl = clear($('queue-list'));
      w.queues.forEach(function (q) {
        dl.appendChild(el('option', { value: q.name }));
      });
    }, fail);
  }

  // ---------------------------------------------------------------- runs list
  function listParams() {
    return {
      status: state.statuses.length ? state.statuses.join(',') : null,
      workflow: state.workflow,
      queue: state.queue,
      idPrefix: state.idPrefix,
      parentId: state.parentId,
      createdFrom: state.from ? new Date(state.from).toISOString() : null,
      createdTo: state.to ? new Date(state.to).toISOString() : null,
      sort: state.sort,
      order: state.order,
      limit: state.limit,
      cursor: state.cursor,
    };
  }
  var listSeq = 0;
  function loadList() {
    var seq = ++listSeq;
    return api('runs' + qs(listParams())).then(function (data) {
      if (seq !== listSeq) return;
      state.list = data;
      state.nextCursor = data.nextCursor;
      renderList(data);
    }, fail);
  }
  function renderChips(counts, capped) {
    var box = clear($('status-chips'));
    var allOn = state.statuses.length === 0;
    box.appendChild(
      el(
        'button',
        {
          type: 'button',
          class: 'chip',
          'aria-pressed': String(allOn),
          'data-chip': 'ALL',
          onclick: function () {
            setFilter({ statuses: [] });
          },
        },
        'All',
      ),
    );
    STATUSES.forEach(function (s) {
      var on = state.statuses.indexOf(s) >= 0;
      var n = counts ? nf(counts[s]) + (capped && capped.indexOf(s) >= 0 ? '+' : '') : '';
      var dot = el('span', { class: 'dot' });
      dot.style.background = 'var(--' + s + ')';
      box.appendChild(
        el(
          'button',
          {
            type: 'button',
            class: 'chip',
            'aria-pressed': String(on),
            'data-chip': s,
            title: 'Click: only ' + s + '. Shift/Ctrl-click: add or remove.',
            onclick: function (ev) {
              var next;
              if (ev.shiftKey || ev.ctrlKey || ev.metaKey)
                next = on
                  ? state.statuses.filter(function (x) {
                      return x !== s;
                    })
                  : state.statuses.concat([s]);
              else next = on && state.statuses.length === 1 ? [] : [s];
              setFilter({ statuses: next });
            },
          },
          dot,
          s.charAt(0) + s.slice(1).toLowerCase(),
          el('span', { class: 'n', text: n }),
        ),
      );
    });
  }
  function renderList(data) {
    renderChips(data.counts, data.countsCapped);
    var tb = clear($('runs-body'));
    data.items.forEach(function (r) {
      var tr = el(
        'tr',
        {
          'data-run': r.id,
          class: r.id === state.runId ? 'selected' : null,
          onclick: function () {
            openRun(r.id);
          },
        },
        el('td', { class: 'id mono', title: r.id, text: r.id }),
        el('td', { text: r.workflowName }),
        el('td', { class: 'c-queue', text: r.queue }),
        el('td', null, badge(r.status), cancelling(r) ? cancellingTag() : null),
        el('td', { class: 'num', text: r.stepCount }),
        el('td', { title: fmtTime(r.createdAt), text: ago(r.createdAt) }),
        el('td', { class: 'num', text: fmtDuration(runDuration(r)) }),
        el('td', { class: 'c-error', title: r.errorMessage || '', text: r.errorMessage || '' }),
      );
      tb.appendChild(tr);
    });
    $('runs-empty').hidden = data.items.length > 0;
    var page = state.cursors.length + 1;
    var more = data.countsCapped.some(function (s) {
      return !state.statuses.length || state.statuses.indexOf(s) >= 0;
    })
      ? '+'
      : '';
    $('page-info').textContent = 'Page ' + page + ' · ' + nf(data.total) + more + (data.total === 1 && !more ? ' run' : ' runs');
    $('prev').disabled = state.cursors.length === 0;
    $('next').disabled = !data.nextCursor;
  }
  /** Text typed into the filter inputs counts even if its debounce has not fired yet. */
  function readTyped() {
    state.queue = $('f-queue').value.trim();
    state.idPrefix = $('f-id').value.trim();
    state.parentId = $('f-parent').value.trim();
  }
  function setFilter(patch) {
    readTyped();
    for (var k in patch) state[k] = patch[k];
    state.cursor = null;
    state.cursors = [];
    syncForm();
    saveHash();
    renderChips(state.list && state.list.counts, state.list && state.list.countsCapped);
    loadList();
  }

  // ---------------------------------------------------------------- run detail
  function openRun(id) {
    state.runId = id;
    state.openSteps = {};
    state.tab = 'steps';
    saveHash();
    document.querySelectorAll('#runs-body tr').forEach(function (tr) {
      tr.classList.toggle('selected', tr.getAttribute('data-run') === id);
    });
    return loadRun(true);
  }
  function closeRun() {
    state.runId = null;
    state.run = null;
    $('detail-view').hidden = true;
    $('main').classList.remove('with-detail');
    document.querySelectorAll('#runs-body tr.selected').forEach(function (tr) {
      tr.classList.remove('selected');
    });
    saveHash();
  }
  function loadRun(first) {
    var id = state.runId;
    if (!id) return Promise.resolve();
    return api('runs/' + encodeURIComponent(id)).then(
      function (run) {
        if (state.runId !== id) return;
        state.run = run;
        renderRun(run, first);
      },
      function (err) {
        if (err && err.status === 404 && state.runId === id) {
          closeRun();
          toast('Run ' + id + ' does not exist (any more).', true);
        } else fail(err);
      },
    );
  }

  function renderRun(r, first) {
    var pane = $('detail-view');
    var scroll = pane.scrollTop;
    clear(pane);
    pane.hidden = false;
    $('main').classList.add('with-detail');
    var canCancel = ACTIVE.indexOf(r.status) >= 0;
    var canResume = r.status === 'FAILED' || r.status === 'CANCELLED';
    append(pane, [
      el(
        'div',
        { class: 'detail-head' },
        el('button', { type: 'button', class: 'ghost', onclick: closeRun, title: 'Close' }, '✕'),
        el('h2', { id: 'run-id', text: r.id }),
        el('span', { id: 'run-status' }, badge(r.status), cancelling(r) ? cancellingTag() : null),
      ),
      el(
        'div',
        { class: 'detail-actions' },
        el(
          'button',
          {
            type: 'button',
            id: 'btn-cancel',
            class: 'danger',
            disabled: !canCancel,
            onclick: function () {
              confirmAction('cancel', r);
            },
          },
          'Cancel run',
        ),
        el(
          'button',
          {
            type: 'button',
            id: 'btn-resume',
            disabled: !canResume,
            onclick: function () {
              confirmAction('resume', r);
            },
          },
          'Resume',
        ),
        el(
          'button',
          {
            type: 'button',
            id: 'btn-fork',
            class: 'ghost',
            onclick: function () {
              confirmAction('fork', r);
            },
          },
          'Fork…',
        ),
        el(
          'button',
          {
            type: 'button',
            id: 'btn-export',
            class: 'ghost',
            title: 'Download the run and its checkpoints, to replay in a test',
            onclick: function () {
              window.DurableRunExport.download(r.id);
            },
          },
          'Export JSON',
        ),
        el(
          'button',
          {
            type: 'button',
            class: 'ghost',
            onclick: function () {
              copy(r.id);
            },
          },
          'Copy id',
        ),
      ),
      facts(r),
      runExtras.map(function (render) { return render(r); }),
      r.error ? errorBox(r.error) : null,
      tabs(r),
    ]);
    if (!first) pane.scrollTop = scroll;
    else if (window.matchMedia && window.matchMedia('(max-width: 1100px)').matches)
      pane.scrollIntoView({ behavior: 'smooth', block: 'start' });
  }

  /** Renderers other panels add to a run's detail (flow.js: why it has not started). */
  var runExtras = [];

  function facts(r) {
    var dl = el('dl', { class: 'facts' });
    function f(label, value, title) {
      dl.appendChild(
        el('div', null, el('dt', { text: label }), el('dd', { title: title || (typeof value === 'string' ? value : null) }, value)),
      );
    }
    f('Workflow', r.workflowName);
    f('Queue', r.queue);
    f('Created', fmtTime(r.createdAt), r.createdAt);
    f('Started', fmtTime(r.startedAt), r.startedAt);
    f('Finished', fmtTime(r.finishedAt), r.finishedAt);
    f('Duration', fmtDuration(runDuration(r)));
    f('Attempt / epoch', r.attempt + ' / ' + r.leaseEpoch);
    f('Priority', String(r.priority));
    if (r.leaseOwner) f('Lease owner', r.leaseOwner);
    if (r.leaseExpiresAt) f('Lease expires', fmtTime(r.leaseExpiresAt), r.leaseExpiresAt);
    if (r.deadlineAt) f('Deadline', fmtTime(r.deadlineAt), r.deadlineAt);
    if (r.cancelRequestedAt) f('Cancelled with compensation', fmtTime(r.cancelRequestedAt), r.cancelRequestedAt);
    if (r.status === 'PENDING' || r.status === 'WAITING') f('Available at', fmtTime(r.availableAt), r.availableAt);
    if (r.parentId)
      f(
        'Parent',
        el(
          'a',
          {
            class: 'mono',
            onclick: function () {
              openRun(r.parentId);
            },
          },
          r.parentId,
        ),
        r.parentId,
      );
    if (r.appVersion) f('App version', r.appVersion);
    if (r.traceId) f('Trace id', el('span', { class: 'mono', text: r.traceId }), r.traceparent);
    return dl;
  }

  function errorBox(error) {
    var msg =
      error && typeof error === 'object' ? (error.name ? error.name + ': ' : '') + (error.message || JSON.stringify(error)) : String(error);
    return el(
      'div',
      { class: 'error-box', id: 'run-error' },
      el('strong', { text: msg }),
      error && error.stack ? el('pre', { class: 'mono', text: error.stack }) : null,
    );
  }

  function tabs(r) {
    var defs = [
      ['steps', 'Steps', r.totals.steps],
      ['input', 'Input', null],
      ['output', 'Output', null],
      ['messages', 'Messages', r.totals.messages],
      ['events', 'Events', r.totals.events],
      ['history', 'History', r.totals.history],
      ['children', 'Children', r.totals.children],
    ];
    var bar = el('div', { class: 'tabs', role: 'tablist' });
    var body = el('div', { class: 'section', id: 'tab-body' });
    defs.forEach(function (d) {
      bar.appendChild(
        el(
          'button',
          {
            type: 'button',
            class: 'tab',
            role: 'tab',
            'data-tab': d[0],
            'aria-selected': String(state.tab === d[0]),
            onclick: function () {
              state.tab = d[0];
              renderRun(state.run);
            },
          },
          d[1] + (d[2] != null ? ' (' + nf(d[2]) + ')' : ''),
        ),
      );
    });
    var t = state.tab;
    if (t === 'steps') body.appendChild(timeline(r));
    else if (t === 'input') body.appendChild(jsonView(r.input));
    else if (t === 'output') body.appendChild(jsonView(r.output));
    else if (t === 'messages')
      body.appendChild(simpleTable(r.messages, ['id', 'topic', 'payload', 'createdAt', 'consumedSeq'], r.totals.messages));
    else if (t === 'events') body.appendChild(simpleTable(r.events, ['key', 'value', 'updatedAt'], r.totals.events));
    else if (t === 'history') body.appendChild(simpleTable(r.history, ['at', 'kind', 'detail'], r.totals.history));
    else if (t === 'children') body.appendChild(childrenTable(r.children, r.totals.children));
    return el('div', null, bar, body);
  }

  /** Steps as a Gantt-like timeline: where each step sat in the run, and how long it took. */
  function timeline(r) {
    var steps = r.steps;
    var live = r.progress && r.status === 'RUNNING' ? r.progress.steps : [];
    if (!steps.length && !live.length)
      return el('p', { class: 'muted', text: r.status === 'PENDING' ? 'Not started yet.' : 'No steps recorded.' });
    if (!steps.length) return el('div', null, progressTable(live, r.progress.at));
    var t0 = Infinity,
      t1 = -Infinity;
    steps.forEach(function (s) {
      var a = new Date(s.startedAt || s.finishedAt).getTime(),
        b = new Date(s.finishedAt).getTime();
      if (a < t0) t0 = a;
      if (b > t1) t1 = b;
    });
    if (r.startedAt) t0 = Math.min(t0, new Date(r.startedAt).getTime());
    var span = Math.max(1, t1 - t0);
    // A step stands out when it took at least half as long as the longest and twice the median.
    var durations = steps
      .map(function (s) {
        return s.durationMs || 0;
      })
      .sort(function (x, y) {
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
    steps.forEach(function (s) {
      var a = new Date(s.startedAt || s.finishedAt).getTime(),
        b = new Date(s.finishedAt).getTime();
      var bar = el('div', { class: 'bar ' + s.status, title: s.name + ': ' + fmtDuration(s.durationMs) });
      bar.style.left = (((a - t0) / span) * 100).toFixed(3) + '%';
      bar.style.width = ((Math.max(0, b - a) / span) * 100).toFixed(3) + '%';
      var open = !!state.openSteps[s.seq];
      var slow = s.durationMs != null && steps.length > 1 && s.durationMs >= slowFrom;
      if (s.compensates != null) bar.className += ' comp';
      tb.appendChild(
        el(
          'tr',
          {
            class: 'step' + (open ? ' open' : '') + (s.compensates != null ? ' compensation' : ''),
            'data-seq': s.seq,
            onclick: function () {
              state.openSteps[s.seq] = !open;
              renderRun(state.run);
            },
          },
          el('td', { class: 'num', text: s.seq }),
          el('td', { class: 'mono' }, s.name, stepNote(s)),
          el('td', null, badge(s.status)),
          el('td', { class: 'num', text: s.attempts }),
          el('td', { class: 'bar-cell' }, el('div', { class: 'track' }, bar)),
          el('td', { class: 'num' }, el('span', { class: 'dur' + (slow ? ' slow' : ''), text: fmtDuration(s.durationMs) })),
        ),
      );
      if (open) {
        tb.appendChild(
          el(
            'tr',
            { class: 'step-body' },
            el(
              'td',
              { colspan: 6 },
              s.error ? el('div', null, el('h3', { text: 'Error' }), jsonView(s.error)) : null,
              el('h3', { text: 'Output' }),
              jsonView(s.output),
              s.compensation
                ? el(
                    'div',
                    null,
                    el('h3', {
                      text:
                        'Undone by ' + s.compensation.by + (s.compensation.args ? ' (step arguments, then its output)' : ' (its output)'),
                    }),
                    s.compensation.args ? jsonView(s.compensation.args) : null,
                  )
                : null,
              el('p', { class: 'muted', text: 'started ' + fmtTime(s.startedAt) + ' · finished ' + fmtTime(s.finishedAt) }),
            ),
          ),
        );
      }
    });
    table.appendChild(tb);
    var more =
      r.totals.steps > steps.length
        ? el('p', { class: 'muted', text: 'Showing the first ' + steps.length + ' of ' + nf(r.totals.steps) + ' steps.' })
        : null;
    return el('div', null, live.length ? progressTable(live, r.progress.at) : null, table, more);
  }

  /** What the step name cell says besides the name: what undoes it, or what it undoes. */
  function stepNote(s) {
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

  /** Steps executing now, with the latest value they passed to Durable.progress(). */
  function progressTable(live, at) {
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
  /** 0..1 for a number in [0, 1], { done, total }, or { percent } (0..100); null if the value says no fraction. */
  function progressFraction(v) {
    if (typeof v === 'number' && isFinite(v) && v >= 0 && v <= 1) return v;
    if (v && typeof v === 'object') {
      if (typeof v.done === 'number' && typeof v.total === 'number' && v.total > 0) return v.done / v.total;
      if (typeof v.percent === 'number') return v.percent / 100;
    }
    return null;
  }
  function progressText(v) {
    var frac = progressFraction(v);
    var parts = [];
    if (v && typeof v === 'object' && typeof v.done === 'number' && typeof v.total === 'number')
      parts.push(nf(v.done) + ' / ' + nf(v.total));
    if (frac != null) parts.push(Math.round(frac * 100) + ' %');
    if (v && typeof v === 'object' && typeof v.message === 'string') parts.push(v.message);
    if (!parts.length) {
      var text = typeof v === 'string' ? v : JSON.stringify(v);
      parts.push(text && text.length > 120 ? text.slice(0, 119) + '…' : String(text));
    }
    return parts.join(' · ');
  }

  function simpleTable(rows, cols, total) {
    if (!rows.length) return el('p', { class: 'muted', text: 'None.' });
    var table = el(
      'table',
      { class: 'list-table' },
      el(
        'thead',
        null,
        el(
          'tr',
          null,
          cols.map(function (c) {
            return el('th', { text: c });
          }),
        ),
      ),
    );
    var tb = el('tbody');
    rows.forEach(function (row) {
      tb.appendChild(
        el(
          'tr',
          null,
          cols.map(function (c) {
            var v = row[c];
            if (v !== null && typeof v === 'object') return el('td', null, jsonView(v, 1));
            return el('td', { class: /At$/.test(c) ? '' : 'mono', text: /At$|^at$/.test(c) ? fmtTime(v) : v == null ? '—' : v });
          }),
        ),
      );
    });
    table.appendChild(tb);
    return el(
      'div',
      null,
      table,
      total > rows.length ? el('p', { class: 'muted', text: rows.length + ' of ' + nf(total) + ' shown.' }) : null,
    );
  }

  function childrenTable(rows, total) {
    if (!rows.length) return el('p', { class: 'muted', text: 'No child runs.' });
    var tb = el('tbody');
    rows.forEach(function (c) {
      tb.appendChild(
        el(
          'tr',
          null,
          el(
            'td',
            null,
            el(
              'a',
              {
                class: 'mono',
                onclick: function () {
                  openRun(c.id);
                },
              },
              c.id,
            ),
          ),
          el('td', { text: c.workflowName }),
          el('td', null, badge(c.status)),
          el('td', { text: fmtTime(c.createdAt) }),
        ),
      );
    });
    return el(
      'div',
      null,
      el(
        'table',
        { class: 'list-table' },
        el(
          'thead',
          null,
          el(
            'tr',
            null,
            el('th', { text: 'Run' }),
            el('th', { text: 'Workflow' }),
            el('th', { text: 'Status' }),
            el('th', { text: 'Created' }),
          ),
        ),
        tb,
      ),
      total > rows.length ? el('p', { class: 'muted', text: rows.length + ' of ' + nf(total) + ' shown.' }) : null,
    );
  }

  // ---------------------------------------------------------------- JSON viewer
  function jsonView(value, openDepth) {
    var box = el('div', { class: 'json' });
    box.appendChild(jsonNode(value, openDepth == null ? 2 : openDepth, 0));
    return box;
  }
  function jsonNode(v, openDepth, depth) {
    if (v === null || v === undefined) return el('span', { class: 'z', text: 'null' });
    if (typeof v === 'string') return el('span', { class: 's', text: JSON.stringify(v) });
    if (typeof v === 'number') return el('span', { class: 'n', text: String(v) });
    if (typeof v === 'boolean') return el('span', { class: 'b', text: String(v) });
    var isArr = Array.isArray(v);
    var keys = isArr
      ? v.map(function (_, i) {
          return i;
        })
      : Object.keys(v);
    if (!isArr && typeof v.$durable === 'string' && keys.length <= 2) {
      // A value the codec tagged (Date, BigInt, undefined, Map, Set, …): show it as what it is.
      return el('span', null, el('span', { class: 'tag', text: v.$durable + ' ' }), 'v' in v ? jsonNode(v.v, openDepth, depth + 1) : '');
    }
    if (!keys.length) return el('span', { text: isArr ? '[]' : '{}' });
    var d = el('details', depth < openDepth ? { open: true } : null);
    d.appendChild(
      el('summary', { text: (isArr ? '[' : '{') + (depth < openDepth ? '' : ' … ' + keys.length + (isArr ? ' items ]' : ' keys }')) }),
    );
    var kids = el('div', { class: 'kids' });
    keys.slice(0, 1000).forEach(function (k, i) {
      kids.appendChild(
        el(
          'div',
          null,
          isArr ? null : el('span', { class: 'k', text: JSON.stringify(String(k)) }),
          isArr ? null : ': ',
          jsonNode(v[k], openDepth, depth + 1),
          i < keys.length - 1 ? ',' : '',
        ),
      );
    });
    if (keys.length > 1000) kids.appendChild(el('div', { class: 'z', text: '… ' + (keys.length - 1000) + ' more' }));
    d.appendChild(kids);
    d.appendChild(el('span', { text: isArr ? ']' : '}' }));
    return d;
  }

  function copy(text) {
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

  // ---------------------------------------------------------------- actions
  function confirmAction(kind, r) {
    var dlg = $('confirm');
    var stepInput = $('confirm-step');
    var compensate = $('confirm-compensate');
    $('confirm-step-label').hidden = kind !== 'fork';
    $('confirm-compensate-label').hidden = kind !== 'cancel';
    if (kind === 'cancel') {
      var undoable = r.steps.filter(function (s) {
        return s.compensation;
      }).length;
      compensate.checked = undoable > 0;
      $('confirm-title').textContent = 'Cancel this run?';
      $('confirm-text').textContent =
        'Run ' +
        r.id +
        ' (' +
        r.workflowName +
        ', ' +
        r.status +
        ') stops at its next step boundary. ' +
        (undoable ? undoable + ' completed step(s) declare how to undo them. ' : '') +
        'Without compensation you can resume it later.';
    } else if (kind === 'resume') {
      $('confirm-title').textContent = 'Resume this run?';
      $('confirm-text').textContent = r.cancelRequestedAt
        ? 'Run ' +
          r.id +
          ' (' +
          r.status +
          ') was cancelled with compensation: resuming it finishes its compensations (a failed one runs again) and ends it CANCELLED; it does not run the workflow again (fork it for that).'
        : 'Run ' + r.id + ' (' + r.status + ') continues from its last checkpoint; a failed last step runs again.';
    } else {
      var failed = r.steps.filter(function (s) {
        return s.status === 'FAILED';
      })[0];
      stepInput.max = String(r.totals.steps);
      stepInput.value = String(failed ? failed.seq : r.totals.steps);
      $('confirm-title').textContent = 'Fork this run?';
      $('confirm-text').textContent =
        'A new run of ' +
        r.workflowName +
        ' with the same input reuses the results of the steps before the one you choose, and executes from there on.';
    }
    $('confirm-yes').textContent = kind === 'cancel' ? 'Cancel run' : kind === 'resume' ? 'Resume run' : 'Fork run';
    $('confirm-yes').className = kind === 'cancel' ? 'danger' : '';
    dlg.returnValue = '';
    dlg.onclose = function () {
      if (dlg.returnValue !== 'ok') return;
      var p =
        kind === 'fork'
          ? api('runs/' + encodeURIComponent(r.id) + '/fork', 'POST', { fromStep: Number(stepInput.value) })
          : api('runs/' + encodeURIComponent(r.id) + '/' + kind, 'POST', kind === 'cancel' ? { compensate: compensate.checked } : {});
      p.then(function (res) {
        if (kind === 'fork') {
          toast('Forked as ' + res.id + ' (' + res.copiedSteps + ' step results reused)');
          refreshAll().then(function () {
            openRun(res.id);
          });
        } else {
          toast(
            kind === 'cancel' && res.cancelRequestedAt && ACTIVE.indexOf(res.status) >= 0
              ? 'Run cancelling: it undoes its completed steps, then ends CANCELLED'
              : 'Run ' + (kind === 'cancel' ? 'cancelled' : 'resumed') + ': now ' + res.status,
          );
          refreshAll();
        }
      }, fail);
    };
    if (typeof dlg.showModal === 'function') dlg.showModal();
    else if (window.confirm($('confirm-text').textContent)) {
      dlg.returnValue = 'ok';
      dlg.onclose();
    }
  }

  // ---------------------------------------------------------------- wiring
  var busy = false;
  /** Stats, list and open run; a timer tick is skipped while one is in flight, a user action never. */
  function refreshAll(fromTimer) {
    if (busy && fromTimer === true) return Promise.resolve();
    busy = true;
    return Promise.all([loadStats(), loadList(), loadRun(false)]).then(
      function () {
        busy = false;
      },
      function () {
        busy = false;
      },
    );
  }

  function debounce(fn, ms) {
    var t = null;
    return function () {
      clearTimeout(t);
      t = setTimeout(fn, ms);
    };
  }

  function init() {
    loadHash();
    syncForm();
    renderChips(null, null);
    $('f-workflow').addEventListener('change', function () {
      setFilter({ workflow: this.value });
    });
    $('f-sort').addEventListener('change', function () {
      setFilter({ sort: this.value });
    });
    $('f-order').addEventListener('change', function () {
      setFilter({ order: this.value });
    });
    $('f-limit').addEventListener('change', function () {
      setFilter({ limit: Number(this.value) });
    });
    $('f-from').addEventListener('change', function () {
      setFilter({ from: this.value });
    });
    $('f-to').addEventListener('change', function () {
      setFilter({ to: this.value });
    });
    var typed = debounce(function () {
      setFilter({});
    }, 350);
    ['f-queue', 'f-id', 'f-parent'].forEach(function (id) {
      $(id).addEventListener('input', typed);
    });
    $('filters').addEventListener('submit', function (e) {
      e.preventDefault();
    });
    $('f-reset').addEventListener('click', function () {
      setFilter({
        statuses: [],
        workflow: '',
        queue: '',
        idPrefix: '',
        parentId: '',
        from: '',
        to: '',
        sort: 'created',
        order: 'desc',
        limit: 50,
      });
    });
    $('next').addEventListener('click', function () {
      if (!state.nextCursor) return;
      state.cursors.push(state.cursor);
      state.cursor = state.nextCursor;
      loadList();
    });
    $('prev').addEventListener('click', function () {
      if (!state.cursors.length) return;
      state.cursor = state.cursors.pop();
      loadList();
    });
    $('refresh').addEventListener('click', function () {
      refreshAll();
    });
    $('token-btn').addEventListener('click', function () {
      $('auth-banner').hidden = !$('auth-banner').hidden;
      $('auth-title').textContent = token() ? 'A token is set for this tab.' : 'No token set.';
      $('token-input').focus();
    });
    $('token-form').addEventListener('submit', function (e) {
      e.preventDefault();
      setToken(
        $('token-input')
          .value.trim()
          .replace(/^Bearer\s+/i, ''),
      );
      $('token-input').value = '';
      hideAuth();
      loadWorkflows();
      refreshAll();
    });
    $('token-clear').addEventListener('click', function () {
      setToken('');
      toast('Token forgotten');
    });
    window.addEventListener('hashchange', function () {
      var before = state.runId;
      loadHash();
      syncForm();
      state.cursor = null;
      state.cursors = [];
      loadList();
      if (state.runId && state.runId !== before) openRun(state.runId);
      else if (!state.runId && before) closeRun();
    });
    setInterval(function () {
      if ($('live').checked && !document.hidden && !$('confirm').open) refreshAll(true);
    }, REFRESH_MS);
    var runBusy = false;
    setInterval(function () {
      if (runBusy || busy || !$('live').checked || document.hidden || $('confirm').open) return;
      if (!state.run || ACTIVE.indexOf(state.run.status) < 0) return;
      runBusy = true;
      loadRun(false).then(
        function () {
          runBusy = false;
        },
        function () {
          runBusy = false;
        },
      );
    }, RUN_REFRESH_MS);
    loadWorkflows();
    refreshAll();
  }

  // The helpers other views of the page (schedules.js) build on.
  window.DurableDashboard = {
    api: api,
    el: el,
    clear: clear,
    qs: qs,
    badge: badge,
    toast: toast,
    fail: fail,
    fmtTime: fmtTime,
    ago: ago,
    openRun: openRun,
    runExtras: runExtras,
  };

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
