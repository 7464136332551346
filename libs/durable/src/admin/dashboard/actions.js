// @ts-check
// nestjs-durable dashboard: Cancel, resume and fork, each after a confirmation dialog.
// Plain browser ES module, no build step. User data is only ever inserted as text, never as HTML.
import { $, dialog, input, toast, fail } from './dom.js';
import { api } from './api.js';
import { ACTIVE } from './constants.js';
import { nav } from './nav.js';

// ---------------------------------------------------------------- actions
/**
 * Fork runs every step from `from` on again: name them, so that nobody releases stock or charges a card twice by surprise.
 * @param {import('./api.js').ApiObject} r the run
 * @param {number} from the step it would run again from
 */
function forkWarning(r, from) {
  var again = r.steps.filter(function (/** @type {import('./api.js').ApiObject} */ s) {
    return s.seq >= from && s.compensates == null;
  });
  var names =
    again
      .slice(0, 6)
      .map(function (/** @type {import('./api.js').ApiObject} */ s) {
        return '#' + s.seq + ' ' + s.name;
      })
      .join(', ') + (again.length > 6 ? ', …' : '');
  $('confirm-warning').textContent = again.length
    ? 'Every step from #' +
      from +
      ' on runs again (' +
      names +
      '): what they did outside the database (a payment, an email, a stock release) happens a second time unless those steps are idempotent.'
    : 'No recorded step runs again; the workflow continues after step #' + (from - 1) + '.';
}

/**
 * Steps that record how to undo them (a pivot alone records no undo).
 * @param {import('./api.js').ApiObject} s
 */
function undoes(s) {
  return !!s.compensation && (s.compensation.by != null || s.compensation.$truncated === true);
}

/**
 * The first step whose effect was undone (a compensation step names it), or is about to be (the run
 * is being cancelled with compensation): a fork must start there or earlier (the API refuses a later
 * one). null when nothing was undone.
 * @param {import('./api.js').ApiObject} r
 * @returns {number | null}
 */
function firstUndone(r) {
  /** @type {import('./api.js').ApiObject[]} */
  var steps = r.steps;
  var seqs = steps.filter((s) => s.compensates != null).map((s) => Number(s.compensates));
  if (r.cancelRequestedAt)
    seqs = seqs.concat(steps.filter((s) => s.compensates == null && s.status === 'SUCCEEDED' && undoes(s)).map((s) => Number(s.seq)));
  return seqs.length ? Math.min.apply(null, seqs) : null;
}

/**
 * @param {'cancel' | 'resume' | 'fork'} kind
 * @param {import('./api.js').ApiObject} r the open run
 */
export function confirmAction(kind, r) {
  var dlg = dialog('confirm');
  var stepInput = input('confirm-step');
  var compensate = input('confirm-compensate');
  $('confirm-step-label').hidden = kind !== 'fork';
  $('confirm-compensate-label').hidden = kind !== 'cancel';
  if (kind === 'cancel') {
    var undoable = r.steps.filter(undoes).length;
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
    var failed = r.steps.filter(function (/** @type {import('./api.js').ApiObject} */ s) {
      return s.status === 'FAILED';
    })[0];
    var undone = firstUndone(r);
    var latest = undone == null ? r.totals.steps : undone;
    stepInput.max = String(latest);
    stepInput.value = String(Math.min(failed ? failed.seq : r.totals.steps, latest));
    $('confirm-title').textContent = 'Fork this run?';
    $('confirm-text').textContent =
      'A new run of ' +
      r.workflowName +
      ' with the same input reuses the results of the steps before the one you choose, and executes from there on.';
    var warn = function () {
      forkWarning(r, Number(stepInput.value));
    };
    stepInput.oninput = warn;
    warn();
  }
  $('confirm-warning').hidden = kind !== 'fork';
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
        nav.refreshAll().then(function () {
          return nav.openRun(res.id);
        });
      } else {
        toast(
          kind === 'cancel' && res.cancelRequestedAt && ACTIVE.indexOf(res.status) >= 0
            ? 'Run cancelling: it undoes its completed steps, then ends CANCELLED'
            : 'Run ' + (kind === 'cancel' ? 'cancelled' : 'resumed') + ': now ' + res.status,
        );
        nav.refreshAll();
      }
    }, fail);
  };
  dlg.showModal();
}

/**
 * The confirmation dialog for an action that is not a run's (a schedule's "Run now"): resolves true
 * when confirmed, false on Back or Escape.
 * @param {{ title: string, text: string, yes: string, danger?: boolean }} what
 * @returns {Promise<boolean>}
 */
export function ask(what) {
  var dlg = dialog('confirm');
  $('confirm-step-label').hidden = true;
  $('confirm-compensate-label').hidden = true;
  $('confirm-warning').hidden = true;
  $('confirm-title').textContent = what.title;
  $('confirm-text').textContent = what.text;
  $('confirm-yes').textContent = what.yes;
  $('confirm-yes').className = what.danger ? 'danger' : '';
  dlg.returnValue = '';
  return new Promise(function (resolve) {
    dlg.onclose = function () {
      resolve(dlg.returnValue === 'ok');
    };
    dlg.showModal();
  });
}
