// @ts-check
// nestjs-durable dashboard: the form that creates and changes runtime schedules (POST schedules,
// PATCH schedules/:id). A schedule declared in code changes in code; this form edits runtime ones.
import { $, dialog, el, clear, toast } from './dom.js';
import { api } from './api.js';
import { ask } from './actions.js';
/** @typedef {import('./api.js').ApiObject} ApiObject */

/** @param {string} id */
function field(id) {
  return /** @type {HTMLInputElement} */ ($(id));
}

/**
 * The body the form describes: for a new schedule everything, for an existing one only what changed.
 * @param {ApiObject | null} existing
 * @returns {ApiObject}
 */
function bodyOf(existing) {
  /** @type {ApiObject} */
  var body = {
    workflow: field('sched-workflow').value.trim(),
    cron: field('sched-cron').value.trim(),
    timeZone: field('sched-time-zone').value.trim() || 'UTC',
    overlap: field('sched-overlap').value,
    catchUp: field('sched-catch-up').value,
    jitterMs: Number(field('sched-jitter').value || 0),
  };
  var input = field('sched-input').value.trim();
  if (input) body.input = JSON.parse(input);
  if (!existing) return Object.assign({ id: field('sched-id').value.trim() }, body);
  /** @type {ApiObject} */
  var changes = {};
  Object.keys(body).forEach(function (k) {
    if (JSON.stringify(body[k]) !== JSON.stringify(existing[k === 'workflow' ? 'workflowName' : k])) changes[k] = body[k];
  });
  return changes;
}

/**
 * @param {ApiObject | null} existing
 * @param {string[]} workflows names offered for the workflow field
 */
function fill(existing, workflows) {
  $('schedule-editor-title').textContent = existing ? 'Change schedule ' + existing.id : 'New schedule';
  field('sched-id').value = existing ? existing.id : '';
  field('sched-id').disabled = !!existing;
  field('sched-workflow').value = existing ? existing.workflowName : '';
  field('sched-cron').value = existing ? existing.cron : '';
  field('sched-time-zone').value = existing ? existing.timeZone : 'UTC';
  field('sched-overlap').value = existing ? existing.overlap : 'skip';
  field('sched-catch-up').value = existing ? existing.catchUp : 'latest';
  field('sched-jitter').value = String(existing ? existing.jitterMs : 0);
  field('sched-input').value = existing && existing.input !== undefined && existing.input !== null ? JSON.stringify(existing.input) : '';
  var list = clear($('sched-workflows'));
  workflows.forEach(function (w) {
    list.appendChild(el('option', { value: w }));
  });
  $('schedule-editor-error').hidden = true;
}

/**
 * Opens the form; resolves with the saved schedule, or null when the user goes back. A refusal of
 * the API (a bad cron, an unknown workflow) is shown in the form, which stays open.
 * @param {ApiObject | null} existing the schedule to change, or null for a new one
 * @param {string[]} workflows
 * @returns {Promise<ApiObject | null>}
 */
export function editSchedule(existing, workflows) {
  var dlg = dialog('schedule-editor');
  fill(existing, workflows);
  return new Promise(function (resolve) {
    /** @param {string} message */
    var problem = function (message) {
      var box = $('schedule-editor-error');
      box.textContent = message;
      box.hidden = false;
    };
    /** @param {Event} e */
    var save = function (e) {
      e.preventDefault();
      var body;
      try {
        body = bodyOf(existing);
      } catch {
        problem('Input must be JSON, e.g. {"tenant": 7}');
        return;
      }
      var request = existing ? api('schedules/' + encodeURIComponent(existing.id), 'PATCH', body) : api('schedules', 'POST', body);
      request.then(
        function (/** @type {ApiObject} */ saved) {
          done(saved);
        },
        function (/** @type {{ message?: string }} */ err) {
          problem(err && err.message ? err.message : String(err));
        },
      );
    };
    /** @param {ApiObject | null} result */
    var done = function (result) {
      $('schedule-editor-save').removeEventListener('click', save);
      dlg.onclose = null;
      if (dlg.open) dlg.close();
      resolve(result);
    };
    $('schedule-editor-save').addEventListener('click', save);
    dlg.onclose = function () {
      done(null);
    };
    dlg.showModal();
  });
}

/**
 * Deletes a runtime schedule (its runs stay), after asking; resolves true once deleted.
 * @param {ApiObject} s
 * @returns {Promise<boolean>}
 */
export function deleteSchedule(s) {
  return ask({
    title: 'Delete this schedule?',
    text: 'Schedule ' + s.id + ' (' + s.workflowName + ', ' + s.cron + ') fires no more slots. The runs it started stay.',
    yes: 'Delete schedule',
    danger: true,
  }).then(function (ok) {
    if (!ok) return false;
    return api('schedules/' + encodeURIComponent(s.id), 'DELETE').then(function () {
      toast('Deleted ' + s.id);
      return true;
    });
  });
}
