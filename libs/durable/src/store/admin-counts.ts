/**
 * The runs list's per-status counts within a time budget. Counting is bounded per status (at most
 * COUNT_CAP + 1 rows), but a filter that leaves a status few matches reads every candidate row to
 * find that out: with millions of finished runs a rare queue, tag or input takes seconds. Past the budget
 * the list answers with the planner's estimate per status (EXPLAIN, no scan), marked estimated, so
 * a dashboard page never waits on a count.
 */
import * as mysql from './mysql/admin-list.js';
import { COUNT_RUNS_BY_STATUS, filterParams, runFilter, type RunFilter } from './admin-list.js';
import { RUN_STATUSES, type RunStatus } from './rows.js';
import { eachPartition, partitionStore, type Store } from './store.js';
export type { StatusCounts } from './admin-rows.js';
import type { StatusCounts } from './admin-rows.js';

/** How long the exact counts of one list request may take (ms) before estimates replace them. */
export const COUNT_BUDGET_MS = 1_000;

/** One EXPLAIN per status: the filter's estimated matches (parameters as COUNT_RUNS_BY_STATUS's, without the cap). */
const ESTIMATE_RUNS_OF_STATUS = (() => {
  const f = runFilter(false);
  return RUN_STATUSES.map((s) => [s, `EXPLAIN (FORMAT JSON) SELECT 1 FROM durable_runs r WHERE r.status = '${s}' AND ${f.sql}`] as const);
})();

/** Postgres' query_canceled: what a statement_timeout raises (pg's code; Prisma's raw-query error carries it in meta). */
function isStatementTimeout(err: unknown): boolean {
  const e = err as { code?: unknown; meta?: { code?: unknown }; message?: unknown } | null;
  return e?.code === '57014' || e?.meta?.code === '57014' || (typeof e?.message === 'string' && /statement timeout/i.test(e.message));
}

/** Runs per status for the filter (its status part ignored), each capped at `cap` + 1; estimates past `budgetMs`. */
export async function countByStatusWithin(store: Store, f: RunFilter, cap: number, budgetMs = COUNT_BUDGET_MS): Promise<StatusCounts> {
  if (store.sql.dialect === 'mysql') return mysql.countByStatusWithin(store, f, cap, budgetMs);
  if (store.layout.partitions !== null && store.partition === undefined) return countAcross(store, f, cap, budgetMs);
  const params = filterParams(f, false);
  try {
    const row = await store.sql.transaction(async (tx) => {
      await tx.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(budgetMs))}`);
      return (await tx.query<Record<RunStatus, number>>(COUNT_RUNS_BY_STATUS, [...params, cap]))[0];
    });
    return {
      counts: Object.fromEntries(RUN_STATUSES.map((s) => [s, Number(row?.[s] ?? 0)])) as Record<RunStatus, number>,
      estimated: false,
    };
  } catch (err) {
    if (!isStatementTimeout(err)) throw err;
  }
  const counts = {} as Record<RunStatus, number>;
  for (const [status, sql] of ESTIMATE_RUNS_OF_STATUS) {
    const [row] = await store.sql.query<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }>(sql, params);
    counts[status] = Math.round(row['QUERY PLAN'][0].Plan['Plan Rows']);
  }
  return { counts, estimated: true };
}

/**
 * Distributed mode: the partitions counted in turn, each within an even share of the budget still
 * left (what a quick partition leaves goes to the next ones); then the partitions that ran out of
 * time are counted again with what is left, if anything. The counts are added up (estimated if any
 * partition's still is).
 */
async function countAcross(store: Store, f: RunFilter, cap: number, budgetMs: number): Promise<StatusCounts> {
  const deadline = Date.now() + budgetMs;
  const shareOf = (uncounted: number) => Math.max(1, (deadline - Date.now()) / uncounted);
  let uncounted = store.layout.partitions!;
  const each = await eachPartition(store, (s) => countByStatusWithin(s, f, cap, shareOf(uncounted--)));
  const estimated = each.flatMap((c, k) => (c.estimated ? [k] : []));
  uncounted = estimated.length;
  for (const k of estimated) {
    if (deadline - Date.now() < 1) break;
    each[k] = await countByStatusWithin(partitionStore(store, k), f, cap, shareOf(uncounted--));
  }
  const counts = Object.fromEntries(RUN_STATUSES.map((st) => [st, each.reduce((n, c) => n + c.counts[st], 0)])) as Record<
    RunStatus,
    number
  >;
  return { counts, estimated: each.some((c) => c.estimated) };
}
