import type { DurableEngine } from '../engine/durable-engine.js';
import { RunNotFoundError } from '../errors/index.js';
import { COUNT_CAP, listRuns, type RunFilter } from '../store/admin-list.js';
import { countByStatusWithin } from '../store/admin-counts.js';
import { DETAIL_LIMITS, runDetail, runSummary } from '../store/admin-detail.js';
import { stats, type StatsRows } from '../store/admin-stats.js';
import { versionsInFlight } from '../store/admin-versions.js';
import { assembleVersions } from './versions.js';
import { RUN_STATUSES, type RunStatus } from '../store/rows.js';
import type { SqlClient } from '../store/sql-client.js';
import type { Store } from '../store/store.js';
import { encodeCursor } from './cursor.js';
import { LiveFeed } from './live-feed.js';
import { withWaits } from './step-waits.js';
import { charts, type ChartRange } from '../store/admin-charts.js';
import type { BulkAction } from '../engine/bulk.js';
import { encodeBulkToken, type BulkToken } from './bulk-params.js';
import type { ListQuery, Query, ScheduleListQuery } from './params.js';
import { CronClock } from '../definitions/schedule.js';
import { ScheduleNotFoundError } from '../errors/index.js';
import { getSchedule, listSchedules, scheduleRuns, type ScheduleRow } from '../store/schedules.js';
import { keyUsage, listQueueLimits } from '../store/flow-limits.js';
import { whyNotStarted, type QueueLimits } from '../engine/flow-control.js';

type Counts = Record<RunStatus, number>;
const zeroCounts = (): Counts => Object.fromEntries(RUN_STATUSES.map((s) => [s, 0])) as Counts;
const MINUTE = 60_000;

/**
 * What the admin API does, on top of the engine: no HTTP here (nest/admin serves it), no Prisma
 * models. Reads go through the engine's store, optionally limited (`limit` wraps its connection,
 * e.g. at most a few admin statements at a time); cancel, resume and fork are the engine's own.
 */
export class AdminService {
  constructor(
    private readonly engineRef: () => DurableEngine,
    private readonly limit: (sql: SqlClient) => SqlClient = (sql) => sql,
  ) {}

  /** The live feed every live connection of this admin API shares (one statement per interval in all). */
  readonly live = new LiveFeed(
    () => this.store,
    () => this.stats(60),
  );

  private get engine(): DurableEngine {
    return this.engineRef();
  }

  private get store(): Store {
    const store = this.engine.storeForTools;
    return { ...store, sql: this.limit(store.sql) };
  }

  async listRuns(q: ListQuery) {
    const store = this.store;
    const [rows, counted] = await Promise.all([
      listRuns(store, q.filter, q.sort, q.order, q.cursor, q.limit + 1),
      countByStatusWithin(store, q.filter, COUNT_CAP),
    ]);
    const items = rows.slice(0, q.limit);
    const last = items[items.length - 1];
    const nextCursor =
      rows.length > q.limit && last ? encodeCursor(q.sort, q.order, q.sort === 'created' ? last.createdAt : last.updatedAt, last.id) : null;
    const counts = zeroCounts();
    const countsCapped: RunStatus[] = [];
    for (const s of RUN_STATUSES) {
      counts[s] = Math.min(counted.counts[s], COUNT_CAP);
      if (counted.counts[s] > COUNT_CAP) countsCapped.push(s);
    }
    const selected: readonly RunStatus[] = q.filter.statuses ?? RUN_STATUSES;
    return {
      items,
      nextCursor,
      limit: q.limit,
      sort: q.sort,
      order: q.order,
      counts,
      countsCapped,
      countCap: COUNT_CAP,
      countsEstimated: counted.estimated,
      total: selected.reduce((a, s) => a + counts[s], 0),
    };
  }

  async getRun(id: string) {
    const detail = await runDetail(this.store, id);
    if (!detail) throw new RunNotFoundError(id);
    const { run, messages, events, history, children, totals, dbNow } = detail;
    const steps = withWaits(run as { status: string; finishedAt: string | null }, detail.steps, history, dbNow);
    // Not started (or suspended): what holds it back, e.g. "concurrency key tenant-a: 5/5" (one more query).
    const waiting = run.status === 'PENDING' || run.status === 'WAITING';
    const startBlockers = waiting ? await whyNotStarted(this.store, id) : null;
    return { ...run, steps, messages, events, history, children, totals, limits: DETAIL_LIMITS, now: dbNow, startBlockers };
  }

  /** Why a run has not started: not due yet, its queue's limit, its concurrency key's limit. */
  async runBlockers(id: string) {
    const b = await whyNotStarted(this.store, id);
    if (!b) throw new RunNotFoundError(id);
    return b;
  }

  /** Flow control: every queue with cluster-wide limits (executing and due runs, rate window), debounced and singleton runs. */
  async flow() {
    return { queues: await listQueueLimits(this.store), ...(await this.engine.flowControl.keyedRuns()) };
  }

  /** The busiest concurrency keys of a queue: executing and due runs per key. */
  async flowKeys(queue: string, limit: number) {
    return { queue, keys: await keyUsage(this.store, queue, limit) };
  }

  /** Sets a queue's limits at runtime (every instance follows at once). */
  async setQueueLimits(queue: string, limits: QueueLimits) {
    return this.engine.flowControl.setQueueLimits(queue, limits);
  }

  /** Drops a runtime limit: back to what the options declare (limits null: none). */
  async resetQueueLimits(queue: string) {
    return { queue, limits: await this.engine.flowControl.resetQueueLimits(queue) };
  }

  /** The run and its checkpoints as stored, for replay in a test (replayRun of nestjs-durable/testing). */
  async exportRun(id: string) {
    const exported = await this.engine.exportRun(id);
    if (!exported) throw new RunNotFoundError(id);
    return exported;
  }

  /**
   * Cancels the run; with `compensate` it first undoes what its steps did (it stays unfinished until
   * then). `actor` (who asked: the request's user) goes into the run's history, as for resume and fork.
   */
  async cancel(id: string, opts: { compensate: boolean }, actor: string) {
    await this.engine.cancel(id, { ...opts, actor });
    return this.summary(id);
  }

  async resume(id: string, actor: string) {
    await this.engine.resume(id, { actor });
    return this.summary(id);
  }

  /** A new run of the same workflow and input that reuses the checkpoints before `fromStep`. */
  async fork(id: string, fromStep: number, actor: string) {
    const forked = await this.engine.fork(id, fromStep, { actor });
    return { ...forked, status: 'PENDING' as const };
  }

  /**
   * Dry run of a bulk action: how many runs it would change now, and the token that confirms it
   * (runs created after this call are never touched).
   */
  async bulkPreview(p: { action: BulkAction; query: Query; filter: RunFilter; compensate: boolean }) {
    const counted = await this.engine.bulkCount(p.action, p.filter);
    const token = encodeBulkToken({
      action: p.action,
      query: p.query,
      compensate: p.compensate,
      position: { asOf: counted.asOf, cursor: null },
      matched: counted.matched,
      done: 0,
      skipped: 0,
    });
    return {
      action: p.action,
      matched: counted.matched,
      capped: counted.capped,
      byStatus: counted.byStatus,
      asOf: counted.asOf.toISOString(),
      token,
    };
  }

  /**
   * One bounded batch of a confirmed bulk action; `token` is null in the answer when it is complete.
   * `actor` (who confirmed it) goes into each changed run's history, as for a single cancel or resume.
   */
  async bulkExecute(t: BulkToken, batchSize: number, actor: string) {
    const r = await this.engine.bulkBatch(t.action, t.filter, t.position, { limit: batchSize, compensate: t.compensate, actor });
    const done = t.done + r.done.length;
    const skipped = t.skipped + r.skipped.length;
    return {
      action: t.action,
      matched: t.matched,
      batch: { done: r.done.length, skipped: r.skipped.length },
      done,
      skipped,
      skippedRuns: r.skipped.slice(0, 20),
      complete: r.next === null,
      token: r.next ? encodeBulkToken({ ...t, position: r.next, done, skipped }) : null,
    };
  }

  /** Runs started, and finished by status, per bucket over the range (1h: 1-minute, 24h: 30-minute, 7d: 3-hour buckets). */
  async charts(range: ChartRange) {
    return charts(this.store, range);
  }

  async stats(windowMinutes: number) {
    return assembleStats(await stats(this.store, windowMinutes), windowMinutes);
  }

  /** App versions with runs in flight (to see when an old build has drained), and this instance's version and claim filter. */
  async versions() {
    return assembleVersions(await versionsInFlight(this.store), this.engine.options);
  }

  /** Lifecycle-hook consumers: where each is in the run history, who delivers to it, how far behind it is. */
  async hooks() {
    const rows = await this.engine.hookCursors();
    return {
      consumers: rows.map((c) => ({
        ...c,
        leaseExpiresAt: c.leaseExpiresAt?.toISOString() ?? null,
        updatedAt: c.updatedAt.toISOString(),
      })),
    };
  }

  workflows() {
    const { concurrency, queues } = this.engine.options;
    const concurrencyOf = (q: string) => queues[q]?.concurrency ?? concurrency;
    const workflows = this.engine.registry
      .all()
      .map((d) => ({
        name: d.name,
        queue: d.queue,
        queueConcurrency: concurrencyOf(d.queue),
        className: d.className ?? null,
        methodName: d.methodName ?? null,
        options: jsonSafe(d.options),
      }))
      .sort((a, b) => a.name.localeCompare(b.name));
    const queueNames = [...new Set([...workflows.map((w) => w.queue), ...Object.keys(queues)])].sort();
    return { workflows, queues: queueNames.map((name) => ({ name, concurrency: concurrencyOf(name) })) };
  }

  /** Schedules by id, with next and last fire, policies and paused state; `nextCursor` = the last id when there may be more. */
  async listSchedules(q: ScheduleListQuery) {
    const rows = await listSchedules(this.store, { ...q, limit: q.limit + 1 });
    const items = rows.slice(0, q.limit).map((r) => this.scheduleJson(r));
    return { items, nextCursor: rows.length > q.limit ? items[items.length - 1].id : null, limit: q.limit };
  }

  /** One schedule with its latest runs and its next slots. */
  async getSchedule(id: string, runs: number) {
    const { row, dbNow } = await getSchedule(this.store, id);
    if (!row) throw new ScheduleNotFoundError(id);
    const recent = await scheduleRuns(this.store, id, runs);
    return {
      ...this.scheduleJson(row),
      upcoming: row.paused ? [] : upcoming(row, 5),
      runs: recent.map((r) => ({ ...r, createdAt: r.createdAt.toISOString(), startedAt: iso(r.startedAt), finishedAt: iso(r.finishedAt) })),
      now: new Date(dbNow!).toISOString(),
    };
  }

  async pauseSchedule(id: string) {
    return this.scheduleJson(await this.scheduleRow(this.engine.schedules.pause(id).then(() => id)));
  }

  async resumeSchedule(id: string) {
    return this.scheduleJson(await this.scheduleRow(this.engine.schedules.resume(id).then(() => id)));
  }

  /** Starts a run now under the schedule's overlap policy. */
  async triggerSchedule(id: string) {
    return this.engine.schedules.trigger(id);
  }

  private async scheduleRow(done: Promise<string>): Promise<ScheduleRow> {
    const id = await done;
    const { row } = await getSchedule(this.store, id);
    if (!row) throw new ScheduleNotFoundError(id);
    return row;
  }

  private scheduleJson(r: ScheduleRow) {
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
      registered: this.engine.registry.has(r.workflowName),
    };
  }

  private async summary(id: string) {
    const s = await runSummary(this.store, id);
    if (!s) throw new RunNotFoundError(id);
    return s;
  }
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

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

/** Decorator options as JSON (functions dropped, bigint as text), never a serialization crash. */
function jsonSafe(v: unknown): unknown {
  try {
    return JSON.parse(JSON.stringify(v ?? {}, (_k, x) => (typeof x === 'bigint' ? x.toString() : x)));
  } catch {
    return {};
  }
}

export interface Series {
  minute: string;
  started: number;
  succeeded: number;
  failed: number;
  cancelled: number;
}

/** Rows of the stats statements → per workflow/queue blocks with a 60-minute series each. */
function assembleStats(rows: StatsRows, windowMinutes: number) {
  const now = Date.parse(rows.dbNow);
  const first = Date.parse(rows.currentMinute) - 59 * MINUTE;
  const emptySeries = (): Series[] =>
    Array.from({ length: 60 }, (_, i) => ({
      minute: new Date(first + i * MINUTE).toISOString(),
      started: 0,
      succeeded: 0,
      failed: 0,
      cancelled: 0,
    }));
  const block = () => ({ counts: zeroCounts(), expiredLeases: 0, oldestDue: null as number | null, perMinute: emptySeries() });
  const groups = new Map<string, { workflow: string; queue: string } & ReturnType<typeof block>>();
  const total = block();
  const group = (workflow: string, queue: string) => {
    const key = JSON.stringify([workflow, queue]);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { workflow, queue, ...block() }));
    return g;
  };
  for (const r of rows.active) {
    for (const b of [group(r.workflow, r.queue), total]) {
      b.counts[r.status] += r.n;
      b.expiredLeases += r.expired;
      const due = r.oldestDue ? Date.parse(r.oldestDue) : null;
      if (due !== null && (b.oldestDue === null || due < b.oldestDue)) b.oldestDue = due;
    }
  }
  for (const r of rows.finished) for (const b of [group(r.workflow, r.queue), total]) b.counts[r.status] += r.n;
  for (const r of rows.perMinute) {
    const i = Math.round((Date.parse(r.minute) - first) / MINUTE);
    if (i < 0 || i >= 60) continue;
    for (const b of [group(r.workflow, r.queue), total]) {
      const m = b.perMinute[i];
      m.started += r.started;
      m.succeeded += r.succeeded;
      m.failed += r.failed;
      m.cancelled += r.cancelled;
    }
  }
  const out = ({ oldestDue, ...b }: ReturnType<typeof block>) => ({
    ...b,
    oldestClaimableAgeMs: oldestDue === null ? null : Math.max(0, now - oldestDue),
  });
  return {
    generatedAt: rows.dbNow,
    windowMinutes,
    totals: out(total),
    groups: [...groups.values()]
      .sort((a, b) => a.workflow.localeCompare(b.workflow) || a.queue.localeCompare(b.queue))
      .map(({ workflow, queue, ...b }) => ({ workflow, queue, ...out(b) })),
  };
}
