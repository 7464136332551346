import type { ScheduleChanges, ScheduleDefinition } from '../engine/schedule-types.js';
import { AdminParamError } from './param-error.js';
import { scheduleId } from './params.js';

const POLICY_FIELDS = ['timeZone', 'catchUp', 'catchUpWindowMs', 'overlap', 'jitterMs'] as const;
const CREATE_FIELDS = ['id', 'workflow', 'cron', 'input', 'paused', ...POLICY_FIELDS] as const;
const UPDATE_FIELDS = ['workflow', 'cron', 'input', ...POLICY_FIELDS] as const;

const CREATE_SHAPE =
  '{ "id": "<unique, 1..200 characters>", "workflow": "<registered workflow>", "cron": "0 3 * * *", "timeZone"?: "Europe/Paris", ' +
  '"input"?: <JSON>, "catchUp"?: "skip|latest|all", "catchUpWindowMs"?: <ms>, "overlap"?: "skip|allow|bufferOne", "jitterMs"?: <ms>, "paused"?: false }';
const UPDATE_SHAPE =
  '{ "workflow"?, "cron"?, "timeZone"?, "input"?, "catchUp"?, "catchUpWindowMs"?, "overlap"?, "jitterMs"? } (absent: unchanged; ' +
  'pause and resume have their own routes)';

function object(raw: unknown, known: readonly string[], shape: string): Record<string, unknown> {
  if (raw === undefined || raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new AdminParamError('body', `must be a JSON object ${shape} (Content-Type: application/json)`);
  }
  for (const key of Object.keys(raw)) {
    if (!known.includes(key)) throw new AdminParamError(key.slice(0, 64), `unknown field; the body is ${shape}`);
  }
  return raw as Record<string, unknown>;
}

/** A schedule id given in a body: also without control characters (it is shown in lists and run ids). */
function newScheduleId(v: unknown): string {
  const id = scheduleId(v);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(id)) throw new AdminParamError('id', 'must not contain control characters (CR, LF, ESC, …)');
  return id;
}

function requiredText(b: Record<string, unknown>, name: string, shape: string): string {
  if (typeof b[name] !== 'string' || !(b[name] as string).trim())
    throw new AdminParamError(name, `required (a string); the body is ${shape}`);
  return b[name] as string;
}

/** POST schedules: a runtime schedule's definition. Values are checked by the engine (a 400 naming the field). */
export function parseScheduleCreateBody(raw: unknown): ScheduleDefinition {
  const b = object(raw, CREATE_FIELDS, CREATE_SHAPE);
  if (b.id === undefined) throw new AdminParamError('id', `required; the body is ${CREATE_SHAPE}`);
  const id = newScheduleId(b.id);
  const workflow = requiredText(b, 'workflow', CREATE_SHAPE);
  const cron = requiredText(b, 'cron', CREATE_SHAPE);
  if (b.paused !== undefined && typeof b.paused !== 'boolean') throw new AdminParamError('paused', 'must be true or false');
  return { ...(b as Partial<ScheduleDefinition>), id, workflow, cron };
}

/** PATCH schedules/:id: the fields to change (at least one). */
export function parseScheduleUpdateBody(raw: unknown): ScheduleChanges {
  const b = object(raw, UPDATE_FIELDS, UPDATE_SHAPE);
  if (!Object.keys(b).length) throw new AdminParamError('body', `names nothing to change; send ${UPDATE_SHAPE}`);
  for (const name of ['workflow', 'cron'] as const) {
    if (name in b && (typeof b[name] !== 'string' || !(b[name] as string).trim()))
      throw new AdminParamError(name, 'must be a non-empty string');
  }
  return b as ScheduleChanges;
}
