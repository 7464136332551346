import { CronClock } from '../definitions/schedule.js';
import { ScheduleNotFoundError } from '../errors/index.js';
import { getSchedule, listSchedules, scheduleRuns, type ScheduleRow } from '../store/schedules.js';
import { iso, type AdminContext } from './admin-context.js';
import type { ScheduleListQuery } from './params.js';

/** Schedules: the list, one schedule with its runs and next slots, pause, resume and trigger. */
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
