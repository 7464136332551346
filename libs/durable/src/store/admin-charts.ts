/** The admin API's charts: runs started, and finished by status, per time bucket over 1 h, 24 h or 7 d. */
import * as mysql from './mysql/admin-views.js';
import { iso, rowsOfEach, type Store } from './store.js';
import { dbNow } from './schedules.js';
export { CHART_RANGES } from './admin-rows.js';
import { CHART_RANGES } from './admin-rows.js';
export type { ChartRange } from './admin-rows.js';
import type { ChartRange } from './admin-rows.js';
export type { ChartBucket } from './admin-rows.js';
import type { ChartBucket } from './admin-rows.js';

/**
 * Throughput: runs created per bucket. $1 range start (timestamptz), $2 bucket width (ms). Index:
 * durable_runs_created_idx (an index range scan of the window; created_at is the only column read
 * besides the heap visibility check). date_bin keeps buckets aligned to the range start.
 */
export const CHART_STARTED = `
SELECT date_bin($2::float8 * interval '1 millisecond', created_at, $1::timestamptz) AS bucket, count(*)::float8 AS n
FROM durable_runs
WHERE created_at >= $1::timestamptz
GROUP BY 1`;

/**
 * Outcomes: runs finished per bucket and status (SUCCEEDED, FAILED, CANCELLED): the throughput and
 * the failure chart. $1 range start, $2 bucket width (ms). Index: durable_runs_finished_idx (partial:
 * finished rows only; a range scan of the window).
 */
export const CHART_FINISHED = `
SELECT date_bin($2::float8 * interval '1 millisecond', finished_at, $1::timestamptz) AS bucket, status, count(*)::float8 AS n
FROM durable_runs
WHERE finished_at IS NOT NULL AND finished_at >= $1::timestamptz
GROUP BY 1, 2`;

/** Both charts' series over `range` ending at the database clock, one bucket per step, empty ones included (each partition's rows added up). */
export async function charts(store: Store, range: ChartRange): Promise<{ range: ChartRange; bucketMs: number; buckets: ChartBucket[] }> {
  if (store.sql.dialect === 'mysql') return mysql.charts(store, range);
  const { ms, bucketMs } = CHART_RANGES[range];
  const end = await dbNow(store);
  const start = Math.floor((end - ms) / bucketMs) * bucketMs + bucketMs;
  const from = new Date(start).toISOString();
  const [started, finished] = await Promise.all([
    rowsOfEach<{ bucket: unknown; n: number }>(store, CHART_STARTED, [from, bucketMs]),
    rowsOfEach<{ bucket: unknown; status: string; n: number }>(store, CHART_FINISHED, [from, bucketMs]),
  ]);
  const buckets: ChartBucket[] = [];
  for (let t = start; t <= end; t += bucketMs)
    buckets.push({ at: new Date(t).toISOString(), started: 0, succeeded: 0, failed: 0, cancelled: 0 });
  const at = (b: unknown) => buckets[Math.round((new Date(iso(b)!).getTime() - start) / bucketMs)];
  for (const r of started) {
    const b = at(r.bucket);
    if (b) b.started += Number(r.n);
  }
  for (const r of finished) {
    const b = at(r.bucket);
    const key = r.status.toLowerCase() as 'succeeded' | 'failed' | 'cancelled';
    if (b && key in b) b[key] += Number(r.n);
  }
  return { range, bucketMs, buckets };
}
