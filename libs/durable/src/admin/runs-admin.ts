import { RunNotFoundError } from '../errors/index.js';
import { groupCounts } from '../store/child-groups.js';
import { COUNT_CAP, listRuns } from '../store/admin-list.js';
import { countByStatusWithin } from '../store/admin-counts.js';
import { DETAIL_LIMITS, runDetail, runSummary } from '../store/admin-detail.js';
import { RUN_STATUSES, type RunStatus } from '../store/rows.js';
import { whyNotStarted } from '../engine/flow-control.js';
import type { AdminContext } from './admin-context.js';
import { encodeCursor } from './cursor.js';
import type { ListQuery } from './params.js';
import { withWaits } from './step-waits.js';
import { zeroCounts } from './stats.js';

/** Runs: the list, one run's detail and export, and the single-run actions (cancel, resume, fork). */
export class RunsAdmin {
  constructor(private readonly c: AdminContext) {}

  async list(q: ListQuery) {
    const store = this.c.readStore;
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

  async get(id: string) {
    const store = this.c.store;
    const detail = await runDetail(store, id);
    if (!detail) throw new RunNotFoundError(id);
    const { run, messages, events, history, children, totals, dbNow } = detail;
    const steps = withWaits(run as { status: string; finishedAt: string | null }, detail.steps, history, dbNow);
    // Not started (or suspended): what holds it back, e.g. "concurrency key tenant-a: 5/5" (one more query).
    const waiting = run.status === 'PENDING' || run.status === 'WAITING';
    const startBlockers = waiting ? await whyNotStarted(store, id) : null;
    const groups = await groupCounts(store, id, null);
    return { ...run, steps, messages, events, history, children, groups, totals, limits: DETAIL_LIMITS, now: dbNow, startBlockers };
  }

  /** Why a run has not started: not due yet, its queue's limit, its concurrency key's limit. */
  async blockers(id: string) {
    const b = await whyNotStarted(this.c.store, id);
    if (!b) throw new RunNotFoundError(id);
    return b;
  }

  /** The run and its checkpoints as stored, for replay in a test (replayRun of nestjs-durable/testing). */
  async export(id: string) {
    const exported = await this.c.engine.exportRun(id);
    if (!exported) throw new RunNotFoundError(id);
    return exported;
  }

  /**
   * Cancels the run; with `compensate` it first undoes what its steps did (it stays unfinished until
   * then). `actor` (who asked: the request's user) goes into the run's history, as for resume and fork.
   */
  async cancel(id: string, opts: { compensate: boolean }, actor: string) {
    await this.c.engine.cancel(id, { ...opts, actor });
    return this.summary(id);
  }

  async resume(id: string, actor: string) {
    await this.c.engine.resume(id, { actor });
    return this.summary(id);
  }

  /** A new run of the same workflow and input that reuses the checkpoints before `fromStep`. */
  async fork(id: string, fromStep: number, actor: string) {
    const forked = await this.c.engine.fork(id, fromStep, { actor });
    return { ...forked, status: 'PENDING' as const };
  }

  private async summary(id: string) {
    const s = await runSummary(this.c.store, id);
    if (!s) throw new RunNotFoundError(id);
    return s;
  }
}
