/** Maintenance the sweeper runs besides expired leases: passed deadlines and retention. */
import { statement } from './statement.js';
import { history, signalRuns } from './sql-fragments.js';
import type { Store } from './store.js';

/**
 * Sweeper: unfinished runs past their deadline end FAILED with a timeout error, at most $1 per
 * statement, even when no process is executing them (a WAITING run too: a sleep or a wait does
 * not extend a deadline). Index: durable_runs_deadline_idx. A child signals its parent.
 * $2 history ('failed' with reason 'deadline').
 */
const SWEEP_DEADLINES = statement(
  'sweep_deadlines',
  `
WITH x AS (
  SELECT id FROM durable_runs
  WHERE deadline_at IS NOT NULL AND status IN ('PENDING','RUNNING','WAITING') AND deadline_at < now()
  ORDER BY deadline_at LIMIT $1
  FOR UPDATE SKIP LOCKED),
u AS (
UPDATE durable_runs r
SET status = 'FAILED', finished_at = now(), updated_at = now(), lease_owner = NULL, lease_expires_at = NULL,
    error = jsonb_build_object('name', 'DeadlineExceededError', 'code', 'DEADLINE_EXCEEDED',
      'message', 'The run exceeded its deadline (' || to_char(r.deadline_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') ||
                 '); raise the workflow option timeoutMs or the start option timeoutMs.')
FROM x WHERE r.id = x.id
RETURNING r.id, r.parent_id, r.deadline_at),
hist AS (${history('$2', `SELECT id, 'failed', jsonb_build_object('reason', 'deadline', 'deadline', deadline_at) FROM u WHERE true`)}),
${signalRuns('par', 'SELECT parent_id FROM u WHERE parent_id IS NOT NULL')}
SELECT id, (SELECT n FROM par_n) AS signalled FROM u`,
);

/**
 * Sweeper: delete finished runs older than $1 ms, at most $2 per statement, with everything
 * that belongs to them (steps by cascade). Index: durable_runs_finished_idx.
 */
const SWEEP_RETENTION = statement(
  'sweep_retention',
  `
WITH d AS (
  DELETE FROM durable_runs WHERE id IN (
    SELECT id FROM durable_runs
    WHERE finished_at IS NOT NULL AND finished_at < now() - $1::float8 * interval '1 millisecond'
    ORDER BY finished_at LIMIT $2
    FOR UPDATE SKIP LOCKED)
  RETURNING id),
m AS (DELETE FROM durable_messages WHERE run_id IN (SELECT id FROM d)),
e AS (DELETE FROM durable_events WHERE run_id IN (SELECT id FROM d)),
h AS (DELETE FROM durable_run_events WHERE run_id IN (SELECT id FROM d))
SELECT count(*)::int AS n FROM d`,
);

/** Fails up to `batch` unfinished runs past their deadline; returns their ids. */
export async function sweepDeadlines(store: Store, batch: number): Promise<string[]> {
  return (await store.sql.query<{ id: string }>(SWEEP_DEADLINES, [batch, store.history])).map((r) => r.id);
}

/** Deletes up to `batch` runs finished more than `olderThanMs` ago; returns how many. */
export async function sweepRetention(store: Store, olderThanMs: number, batch: number): Promise<number> {
  const [row] = await store.sql.query<{ n: number }>(SWEEP_RETENTION, [olderThanMs, batch]);
  return Number(row?.n ?? 0);
}
