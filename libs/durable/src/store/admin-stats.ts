/**
 * The admin API's statistics: unfinished runs, finished in a window, and per minute for the last hour.
 * In distributed mode each statement's rows come from every partition; their reader (admin/stats.ts) adds them up.
 */
import * as mysql from './mysql/admin-views.js';
import { iso, rowsOfEach, type Store } from './store.js';
export type { StatsRows } from './admin-rows.js';
import type { StatsRows } from './admin-rows.js';
import { activeStatsRow, finishedStatsRow, perMinuteStatsRow } from './admin-rows.js';

/**
 * Unfinished runs per workflow, queue and status, with the oldest due claimable run and the
 * number of RUNNING runs whose lease expired (their worker is gone; the sweeper will hand
 * them back). Index: durable_runs_status_created_idx (status = ANY: a bitmap scan of the
 * unfinished rows only).
 */
export const STATS_ACTIVE = `
SELECT workflow_name, queue, status, count(*)::float8 AS n,
       min(available_at) FILTER (WHERE status IN ('PENDING','WAITING') AND available_at <= now()) AS oldest_due,
       count(*) FILTER (WHERE status = 'RUNNING' AND lease_expires_at < now())::float8 AS expired
FROM durable_runs
WHERE status = ANY(ARRAY['PENDING','RUNNING','WAITING'])
GROUP BY workflow_name, queue, status`;

/**
 * Runs that finished in the last $1 minutes per workflow, queue and status. finished_at ≤
 * updated_at always (every write that sets one sets the other), so either index bounds the
 * scan to the window's rows. Index: durable_runs_finished_idx or durable_runs_updated_idx.
 */
export const STATS_FINISHED = `
SELECT workflow_name, queue, status, count(*)::float8 AS n
FROM durable_runs
WHERE updated_at >= now() - $1::float8 * interval '1 minute'
  AND finished_at >= now() - $1::float8 * interval '1 minute'
GROUP BY workflow_name, queue, status`;

/**
 * Started and finished runs per minute over the last 60 minutes, per workflow and queue
 * (minutes with nothing are absent). started_at ≤ updated_at and finished_at ≤ updated_at
 * always, so only rows updated in the last hour are read. Index: durable_runs_updated_idx.
 */
export const STATS_PER_MINUTE = `
WITH recent AS (
  SELECT workflow_name, queue, status, started_at, finished_at FROM durable_runs
  WHERE updated_at >= date_trunc('minute', now()) - interval '59 minutes'),
ev AS (
  SELECT workflow_name, queue, date_trunc('minute', started_at) AS minute, 1 AS started, 0 AS succeeded, 0 AS failed, 0 AS cancelled
  FROM recent WHERE started_at >= date_trunc('minute', now()) - interval '59 minutes'
  UNION ALL
  SELECT workflow_name, queue, date_trunc('minute', finished_at), 0,
         (status = 'SUCCEEDED')::int, (status = 'FAILED')::int, (status = 'CANCELLED')::int
  FROM recent WHERE finished_at >= date_trunc('minute', now()) - interval '59 minutes')
SELECT workflow_name, queue, minute, sum(started)::float8 AS started, sum(succeeded)::float8 AS succeeded,
       sum(failed)::float8 AS failed, sum(cancelled)::float8 AS cancelled
FROM ev GROUP BY workflow_name, queue, minute`;

/** The database clock (stats are aligned to it, never to the app's). */
export const SELECT_NOW = `SELECT now() AS db_now, date_trunc('minute', now()) AS minute`;
export async function stats(store: Store, windowMinutes: number): Promise<StatsRows> {
  if (store.sql.dialect === 'mysql') return mysql.stats(store, windowMinutes);
  const [active, finished, perMinute, [now]] = await Promise.all([
    rowsOfEach(store, STATS_ACTIVE),
    rowsOfEach(store, STATS_FINISHED, [windowMinutes]),
    rowsOfEach(store, STATS_PER_MINUTE),
    store.sql.query<Record<string, unknown>>(SELECT_NOW),
  ]);
  return {
    dbNow: iso(now.db_now)!,
    currentMinute: iso(now.minute)!,
    active: active.map(activeStatsRow),
    finished: finished.map(finishedStatsRow),
    perMinute: perMinute.map(perMinuteStatsRow),
  };
}
