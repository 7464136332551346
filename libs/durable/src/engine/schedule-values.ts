import { decode, encode } from '../codec/codec.js';
import { MAX_NAME_LENGTH } from '../config/limits.js';
import type { CatchUpPolicy, OverlapPolicy, ScheduleSpec } from '../definitions/schedule.js';
import { InvalidArgumentError } from '../errors/index.js';
import type { ScheduleRow, ScheduleValues } from '../store/schedules.js';
import type { EngineContext } from './engine-context.js';
import type { ScheduleView } from './schedule-types.js';

/** A stored schedule row as the API returns it. */
export const toScheduleView = (r: ScheduleRow): ScheduleView => ({
  id: r.id,
  workflowName: r.workflowName,
  source: r.source,
  cron: r.cron,
  timeZone: r.timeZone,
  input: r.input === null ? undefined : decode(r.input),
  catchUp: r.catchUp as CatchUpPolicy,
  catchUpWindowMs: r.catchUpWindowMs,
  overlap: r.overlap as OverlapPolicy,
  jitterMs: r.jitterMs,
  paused: r.paused,
  nextFireAt: r.nextFireAt,
  bufferedSlot: r.bufferedSlot,
  lastRunId: r.lastRunId,
  lastRunStatus: r.lastRunStatus,
  lastSlotAt: r.lastSlotAt,
  lastFiredAt: r.lastFiredAt,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

/** The id of a schedule, checked. */
export function checkId(id: unknown): string {
  if (typeof id !== 'string' || !id.length || id.length > MAX_NAME_LENGTH || id.includes('\u0000')) {
    throw new InvalidArgumentError(
      `A schedule id must be a non-empty string of at most ${MAX_NAME_LENGTH} characters (got ${JSON.stringify(id)?.slice(0, 80)}).`,
      'id',
    );
  }
  return id;
}

/** The argument of a schedules API call: an object. */
export function checkObject(api: string, v: unknown): Record<string, unknown> {
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw new InvalidArgumentError(`${api} expects an object (got ${JSON.stringify(v)?.slice(0, 80)}).`);
  return v as Record<string, unknown>;
}

const stableJson = (v: unknown): string =>
  JSON.stringify(v ?? null, (_k, x) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(
          Object.keys(x)
            .sort()
            .map((k) => [k, x[k]]),
        )
      : x,
  );

/** The values to store for a definition; `nextFireAt` from the database clock `now`. */
export function valuesOf(
  e: EngineContext,
  where: string,
  d: { workflow: string; input?: unknown; paused?: boolean; source: 'declared' | 'runtime' },
  spec: ScheduleSpec,
  nextFireAt: number,
): ScheduleValues {
  return {
    workflowName: d.workflow,
    source: d.source,
    cron: spec.cron,
    timeZone: spec.timeZone,
    input: d.input === undefined ? null : encode(d.input, { where: `input of ${where}`, maxBytes: e.options.maxPayloadBytes }),
    catchUp: spec.catchUp,
    catchUpWindowMs: spec.catchUpWindowMs,
    overlap: spec.overlap,
    jitterMs: spec.jitterMs,
    paused: d.paused ?? false,
    nextFireAt: new Date(nextFireAt),
  };
}

export const sameDefinition = (row: ScheduleRow, v: ScheduleValues) =>
  row.workflowName === v.workflowName &&
  row.cron === v.cron &&
  row.timeZone === v.timeZone &&
  row.catchUp === v.catchUp &&
  row.catchUpWindowMs === v.catchUpWindowMs &&
  row.overlap === v.overlap &&
  row.jitterMs === v.jitterMs &&
  stableJson(row.input) === stableJson(v.input === null ? null : JSON.parse(v.input));

/** The schedule policy a row stores. */
export const specOf = (row: ScheduleRow): ScheduleSpec => ({
  cron: row.cron,
  timeZone: row.timeZone,
  catchUp: row.catchUp as CatchUpPolicy,
  catchUpWindowMs: row.catchUpWindowMs,
  overlap: row.overlap as OverlapPolicy,
  jitterMs: row.jitterMs,
});
