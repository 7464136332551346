import { CronClock } from '../definitions/schedule.js';
import type { ScheduleChanges, ScheduleDefinition } from '../engine/schedule-types.js';
import { InvalidScheduleError, ScheduleConflictError, ScheduleNotFoundError, UnknownWorkflowError } from '../errors/index.js';
import { getSchedule, listSchedules, scheduleRuns, type ScheduleRow } from '../store/schedules.js';
import { iso, type AdminContext } from './admin-context.js';
import { AdminParamError } from './param-error.js';
import type { ScheduleListQuery } from './params.js';

/** Schedules: the list, one schedule with its runs and next slots; create, update, delete, pause, resume and trigger. */
export class SchedulesAdmin {
  constructor(private readonly c: AdminContext) {}

  /** Schedules by id, with next and last fire, policies and paused state; `nextCursor` = the last id when there may be more. */
  async list(q: ScheduleListQuery) {
    const rows = await listSchedules(this.c.store, { ...q, limit: q.limit + 1 });
    const items = rows.slice(0, q.limit).map((r) => this.json(r));
    return { items, nextCursor: rows.length > q.limit ? items[items.length - 1].id : null, limit: q.limit };
  }

  /** One schedule with its latest runs and its next slots. */
  async get(id: string, runs: number) {
    const { row, dbNow } = await getSchedule(this.c.store, id);
    if (!row) throw new ScheduleNotFoundError(id);
    const recent = await scheduleRuns(this.c.store, id, runs);
    return {
      ...this.json(row),
      upcoming: row.paused ? [] : upcoming(row, 5),
      runs: recent.map((r) => ({ ...r, createdAt: r.createdAt.toISOString(), startedAt: iso(r.startedAt), finishedAt: iso(r.finishedAt) })),
      now: new Date(dbNow!).toISOString(),
    };
  }

  async pause(id: string) {
    await this.c.engine.schedules.pause(id);
    return this.json(await this.row(id));
  }

  async resume(id: string) {
    await this.c.engine.schedules.resume(id);
    return this.json(await this.row(id));
  }

  /**
   * Creates a runtime schedule of a workflow registered in this instance (idempotent for the same
   * definition; another definition under the same id is a ScheduleConflictError). A bad cron, time
   * zone or policy, or an unknown workflow, is an AdminParamError naming the field.
   */
  async create(definition: ScheduleDefinition) {
    const view = await asParamError(() => this.c.engine.schedules.create(definition));
    return this.json(await this.row(view.id));
  }

  /** Changes a runtime schedule (only the fields given); a new cron or time zone starts from the first slot after now. */
  async update(id: string, changes: ScheduleChanges) {
    await asParamError(() => this.c.engine.schedules.update(id, changes));
    return this.json(await this.row(id));
  }

  /**
   * Deletes a schedule (its runs stay). A schedule declared in code is refused unless `force`:
   * the instances that declare it would create it again at their next boot.
   */
  async delete(id: string, force = false) {
    const row = await this.row(id);
    if (row.source === 'declared' && !force) {
      throw new ScheduleConflictError(
        id,
        `Schedule "${id}" is declared on workflow "${row.workflowName}" in code: remove it there, or pause it; ` +
          'add ?force=true to delete it anyway (an instance that still declares it creates it again at its next boot).',
      );
    }
    if (!(await this.c.engine.schedules.delete(id))) throw new ScheduleNotFoundError(id);
    return { id, deleted: true as const };
  }

  /** Starts a run now under the schedule's overlap policy. */
  async trigger(id: string) {
    return this.c.engine.schedules.trigger(id);
  }

  protected async row(id: string): Promise<ScheduleRow> {
    const { row } = await getSchedule(this.c.store, id);
    if (!row) throw new ScheduleNotFoundError(id);
    return row;
  }

  protected json(r: ScheduleRow) {
    return {
      id: r.id,
      workflowName: r.workflowName,
      source: r.source,
      cron: r.cron,
      timeZone: r.timeZone,
      input: r.input,
      catchUp: r.catchUp,
      catchUpWindowMs: r.catchUpWindowMs,
      overlap: r.overlap,
      jitterMs: r.jitterMs,
      paused: r.paused,
      nextFireAt: r.nextFireAt.toISOString(),
      bufferedSlot: iso(r.bufferedSlot),
      lastRunId: r.lastRunId,
      lastRunStatus: r.lastRunStatus,
      lastSlotAt: iso(r.lastSlotAt),
      lastFiredAt: iso(r.lastFiredAt),
      createdAt: r.createdAt.toISOString(),
      updatedAt: r.updatedAt.toISOString(),
      /** Whether this instance has the workflow (only instances that have it fire the schedule). */
      registered: this.c.engine.registry.has(r.workflowName),
    };
  }
}

/** The schedule's next `n` slots from its next fire (none if its expression cannot be read here). */
function upcoming(r: ScheduleRow, n: number): string[] {
  try {
    const clock = CronClock.of(r.cron, r.timeZone);
    const out = [r.nextFireAt.getTime()];
    while (out.length < n) out.push(clock.next(out[out.length - 1]));
    return out.map((t) => new Date(t).toISOString());
  } catch {
    return [];
  }
}

/** The engine's refusals of a definition, as a 400 naming the field (the engine's own words). */
async function asParamError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof InvalidScheduleError) throw new AdminParamError(err.field === 'option' ? 'body' : err.field, err.message);
    if (err instanceof UnknownWorkflowError) throw new AdminParamError('workflow', err.message);
    throw err;
  }
}
