import { setTimeout as delay } from 'node:timers/promises';
import { decode } from '../codec/codec.js';
import { MAX_SCHEDULE_RUNS, MAX_SCHEDULES_PER_PAGE } from '../config/limits.js';
import { compileCron, resolveScheduleSpec, scheduleRunId } from '../definitions/schedule.js';
import { InvalidArgumentError, ScheduleConflictError, ScheduleNotFoundError } from '../errors/index.js';
import { fireSchedules } from '../store/schedule-firing.js';
import {
  dbNow,
  deleteSchedule as deleteRow,
  getSchedule,
  insertSchedule,
  listSchedules,
  pauseSchedule as pauseRow,
  scheduleRuns,
  updateSchedule as updateRow,
  type ScheduleRow,
  type ScheduleRunRow,
} from '../store/schedules.js';
import type { EngineContext } from './engine-context.js';
import { placementOf, workflowName, type RunPlacement } from './unregistered-workflow.js';
import type { ListSchedulesOptions, ScheduleChanges, ScheduleDefinition, ScheduleView, TriggerResult } from './schedule-types.js';
import { checkId, checkObject, sameDefinition, specOf, toScheduleView, valuesOf } from './schedule-values.js';

const CONFLICT_RETRIES = 8;

/** The row, or ScheduleNotFoundError. */
async function mustGet(e: EngineContext, id: string): Promise<{ row: ScheduleRow; now: number }> {
  const { row, dbNow: now } = await getSchedule(e.store, checkId(id));
  if (!row) throw new ScheduleNotFoundError(id);
  return { row, now: now! };
}

/**
 * Creates a runtime schedule; its first slot is the first after now (database clock). Creating an
 * id that exists with the same definition returns it (idempotent); with another one it is a
 * ScheduleConflictError. The workflow must be registered in this process.
 */
export async function createSchedule(e: EngineContext, def: ScheduleDefinition, requireRegistered = true): Promise<ScheduleView> {
  const d = checkObject('schedules.create()', def);
  const id = checkId(d.id);
  const where = `schedule "${id}"`;
  if (typeof d.workflow !== 'string')
    throw new InvalidArgumentError(`${where}: workflow must be the name of a registered workflow.`, 'workflow');
  const workflow = workflowName(e, d.workflow, requireRegistered);
  if (d.paused !== undefined && typeof d.paused !== 'boolean')
    throw new InvalidArgumentError(`${where}: paused must be true or false.`, 'paused');
  const { id: _id, workflow: _w, input, paused, ...rest } = d;
  const spec = resolveScheduleSpec(where, rest as never);
  const now = await dbNow(e.store);
  const values = valuesOf(
    e,
    where,
    { workflow, input, paused: paused as boolean | undefined, source: 'runtime' },
    spec,
    compileCron(where, spec.cron, spec.timeZone).next(now),
  );
  if (!(await insertSchedule(e.store, id, values))) {
    const { row } = await mustGet(e, id);
    if (row.source !== 'runtime' || !sameDefinition(row, values)) {
      throw new ScheduleConflictError(
        id,
        `A schedule "${id}" exists already (${row.source}, workflow "${row.workflowName}", cron "${row.cron}" in ${row.timeZone}) with another definition; update() or delete() it.`,
      );
    }
    return toScheduleView(row);
  }
  e.scheduler?.wake();
  return toScheduleView((await mustGet(e, id)).row);
}

/**
 * Changes a runtime schedule (workflow, cron, timeZone, input, policies). A new cron or time zone
 * starts from the first slot after now; other changes keep the next fire. Schedules declared in
 * code change in code (ScheduleConflictError).
 */
export async function updateSchedule(e: EngineContext, id: string, changes: ScheduleChanges, registered = true): Promise<ScheduleView> {
  const c = checkObject('schedules.update()', changes);
  for (let attempt = 0; attempt < CONFLICT_RETRIES; attempt++) {
    const { row, now } = await mustGet(e, id);
    if (row.source === 'declared') {
      throw new ScheduleConflictError(
        id,
        `Schedule "${id}" is declared on workflow "${row.workflowName}" in code: change it there (the next boot syncs it); pause(), resume() and trigger() work on it.`,
      );
    }
    const where = `schedule "${id}"`;
    if ('id' in c || 'paused' in c)
      throw new InvalidArgumentError(
        `${where}: update() cannot change ${'id' in c ? 'the id' : 'paused (use pause() and resume())'}.`,
        'id' in c ? 'id' : 'paused',
      );
    const workflow =
      c.workflow === undefined ? row.workflowName : typeof c.workflow === 'string' ? workflowName(e, c.workflow, registered) : null;
    if (workflow === null) throw new InvalidArgumentError(`${where}: workflow must be the name of a registered workflow.`, 'workflow');
    const { workflow: _w, input, ...rest } = c;
    const spec = resolveScheduleSpec(where, {
      cron: row.cron,
      timeZone: row.timeZone,
      catchUp: row.catchUp,
      catchUpWindowMs: row.catchUpWindowMs,
      overlap: row.overlap,
      jitterMs: row.jitterMs,
      ...rest,
    } as never);
    const retimed = spec.cron !== row.cron || spec.timeZone !== row.timeZone;
    const next = retimed ? compileCron(where, spec.cron, spec.timeZone).next(now) : row.nextFireAt.getTime();
    const values = valuesOf(
      e,
      where,
      { workflow, input: 'input' in c ? input : row.input === null ? undefined : decode(row.input), paused: row.paused, source: 'runtime' },
      spec,
      next,
    );
    if (await updateRow(e.store, id, row.revision, values)) {
      e.scheduler?.wake();
      return toScheduleView((await mustGet(e, id)).row);
    }
    await delay(5 * (attempt + 1));
  }
  throw new ScheduleConflictError(id, `Schedule "${id}" kept changing while it was updated (${CONFLICT_RETRIES} attempts); try again.`);
}

/** Deletes a schedule (its runs stay); false if there was none. A declared one comes back at the next boot while its workflow declares it. */
export async function deleteSchedule(e: EngineContext, id: string): Promise<boolean> {
  return deleteRow(e.store, checkId(id));
}

/** Pauses a schedule: no slot fires until resume() (trigger() still works). Kept across restarts and boot-time syncs. */
export async function pauseSchedule(e: EngineContext, id: string): Promise<ScheduleView> {
  if (!(await pauseRow(e.store, checkId(id)))) throw new ScheduleNotFoundError(id);
  return toScheduleView((await mustGet(e, id)).row);
}

/** Resumes a paused schedule from the first slot after now: slots of the pause do not run. */
export async function resumeSchedule(e: EngineContext, id: string): Promise<ScheduleView> {
  for (let attempt = 0; attempt < CONFLICT_RETRIES; attempt++) {
    const { row, now } = await mustGet(e, id);
    if (!row.paused) return toScheduleView(row);
    const where = `schedule "${id}"`;
    const spec = specOf(row);
    const values = valuesOf(
      e,
      where,
      { workflow: row.workflowName, input: row.input === null ? undefined : decode(row.input), paused: false, source: row.source },
      spec,
      compileCron(where, spec.cron, spec.timeZone).next(now),
    );
    if (await updateRow(e.store, id, row.revision, values)) {
      e.scheduler?.wake();
      return toScheduleView((await mustGet(e, id)).row);
    }
    await delay(5 * (attempt + 1));
  }
  throw new ScheduleConflictError(id, `Schedule "${id}" kept changing while it was resumed (${CONFLICT_RETRIES} attempts); try again.`);
}

/**
 * Starts a run of the schedule now (also while paused), under the schedule's overlap policy: with
 * a run still active, "skip" starts nothing and "bufferOne" starts it when that run ends. The run's
 * id is `sched:<id>:<now ISO>:manual`, its input has `manual: true`. The next fire does not move.
 */
export async function triggerSchedule(e: EngineContext, id: string, unregistered?: RunPlacement): Promise<TriggerResult> {
  for (let attempt = 0; attempt < CONFLICT_RETRIES; attempt++) {
    const { row, now } = await mustGet(e, id);
    const def = placementOf(e, row.workflowName, unregistered);
    const runId = scheduleRunId(id, now, true);
    const candidates = [{ slot: now, runId, manual: true }];
    if (row.bufferedSlot)
      candidates.unshift({ slot: row.bufferedSlot.getTime(), runId: scheduleRunId(id, row.bufferedSlot.getTime()), manual: false });
    const result = await fireSchedules(
      e.store,
      [
        {
          id,
          revision: row.revision,
          nextFireAt: row.nextFireAt.getTime(),
          fireAt: now,
          queue: def.queue,
          priority: def.options.priority ?? 0,
          timeoutMs: def.options.timeoutMs ?? null,
          candidates,
        },
      ],
      e.options.appVersion,
    );
    const fates = result.get(id);
    if (fates) {
      const fate = fates.find((f) => f.runId === runId)?.fate ?? 'skip';
      return { runId, outcome: fate === 'run' ? 'started' : fate === 'buffer' ? 'buffered' : 'skipped' };
    }
    await delay(5 * (attempt + 1));
  }
  throw new ScheduleConflictError(id, `Schedule "${id}" kept changing while it was triggered (${CONFLICT_RETRIES} attempts); try again.`);
}

/** One schedule, or null. */
export async function getScheduleView(e: EngineContext, id: string): Promise<ScheduleView | null> {
  const { row } = await getSchedule(e.store, checkId(id));
  return row ? toScheduleView(row) : null;
}

/** Schedules by id. */
export async function listScheduleViews(e: EngineContext, o: ListSchedulesOptions = {}): Promise<ScheduleView[]> {
  const q = checkObject('schedules.list()', o ?? {});
  const limit = q.limit ?? 100;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_SCHEDULES_PER_PAGE) {
    throw new InvalidArgumentError(`schedules.list(): limit must be a whole number between 1 and ${MAX_SCHEDULES_PER_PAGE}.`, 'limit');
  }
  if (q.workflow !== undefined && typeof q.workflow !== 'string')
    throw new InvalidArgumentError('schedules.list(): workflow must be a string.', 'workflow');
  if (q.paused !== undefined && typeof q.paused !== 'boolean')
    throw new InvalidArgumentError('schedules.list(): paused must be true or false.', 'paused');
  if (q.after !== undefined && typeof q.after !== 'string')
    throw new InvalidArgumentError('schedules.list(): after must be a schedule id.', 'after');
  const rows = await listSchedules(e.store, {
    after: (q.after as string | undefined) ?? '',
    workflow: (q.workflow as string | undefined) ?? null,
    paused: (q.paused as boolean | undefined) ?? null,
    limit,
  });
  return rows.map(toScheduleView);
}

/** The latest runs a schedule started, newest first. */
export async function listScheduleRuns(e: EngineContext, id: string, limit = 20): Promise<ScheduleRunRow[]> {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SCHEDULE_RUNS) {
    throw new InvalidArgumentError(`limit must be a whole number between 1 and ${MAX_SCHEDULE_RUNS}.`, 'limit');
  }
  return scheduleRuns(e.store, checkId(id), limit);
}
