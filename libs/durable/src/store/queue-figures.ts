/** The figures behind the metrics' gauges: queue depth and lag, overdue schedules — one statement per collection. */
import * as mysql from './mysql/maintenance.js';
import { statement } from './statement.js';
import { eachPartition, type Store } from './store.js';
export type { QueueFiguresRow } from './rows.js';
import type { QueueFiguresRow } from './rows.js';

/**
 * Unfinished runs per queue and state, how long the oldest due one has waited, and the active
 * schedules past their fire time. No parameters; read-only, no locks. It reads only unfinished rows
 * through the partial indexes (durable_runs_claim_idx for PENDING, durable_runs_wake_idx for
 * WAITING, durable_runs_lease_idx for RUNNING) and durable_schedules_due_idx: finished runs,
 * however many, cost it nothing. Its cost grows with the backlog (a count), once per collection
 * interval per instance — never per run.
 */
const QUEUE_FIGURES = statement(
  'queue_figures',
  `
WITH r AS (
  -- One branch per partial index (each predicate matches its index's exactly).
  SELECT queue, 'PENDING' AS status, available_at FROM durable_runs WHERE status = 'PENDING'
  UNION ALL SELECT queue, 'WAITING', available_at FROM durable_runs WHERE status = 'WAITING'
  UNION ALL SELECT queue, 'RUNNING', available_at FROM durable_runs WHERE status = 'RUNNING'),
q AS (
  SELECT queue,
         CASE WHEN status = 'RUNNING' THEN 'running' WHEN available_at <= now() THEN 'due'
              WHEN status = 'PENDING' THEN 'delayed' ELSE 'waiting' END AS state,
         count(*)::int AS n,
         extract(epoch FROM now() - min(available_at))::float8 AS oldest_s
  FROM r GROUP BY 1, 2),
s AS (
  SELECT count(*)::int AS overdue, coalesce(extract(epoch FROM now() - min(next_fire_at)), 0)::float8 AS lag_s
  FROM durable_schedules WHERE NOT paused AND next_fire_at <= now())
SELECT (SELECT coalesce(json_agg(json_build_object('queue', queue, 'state', state, 'count', n,
                                                   'oldestDueSeconds', CASE WHEN state = 'due' THEN oldest_s END)), '[]'::json) FROM q) AS queues,
       s.overdue, s.lag_s
FROM s`,
);

/** The gauges' figures, in one statement. */
export async function queueFigures(store: Store): Promise<QueueFiguresRow> {
  if (store.sql.dialect === 'mysql') return mysql.queueFigures(store);
  const rows = await eachPartition(
    store,
    async (s) => (await s.sql.query<{ queues: unknown; overdue: number; lag_s: number }>(QUEUE_FIGURES, []))[0],
  );
  const byState = new Map<string, QueueFiguresRow['queues'][number]>();
  // Distributed mode: one row per partition, the same queue and state in several.
  for (const row of rows) {
    for (const q of (typeof row.queues === 'string' ? JSON.parse(row.queues) : row.queues) as QueueFiguresRow['queues']) {
      const key = JSON.stringify([q.queue, q.state]);
      const seen = byState.get(key);
      if (!seen) byState.set(key, { ...q });
      else {
        seen.count += q.count;
        if (q.oldestDueSeconds != null) seen.oldestDueSeconds = Math.max(seen.oldestDueSeconds ?? 0, q.oldestDueSeconds);
      }
    }
  }
  return { queues: [...byState.values()], schedulesOverdue: Number(rows[0].overdue), scheduleLagSeconds: Number(rows[0].lag_s) };
}
