/** Maintenance the sweeper runs besides expired leases: passed deadlines and retention. */
import * as mysql from './mysql/maintenance.js';
import { statement } from './statement.js';
import { deleteRunParts, groupEnds, history, signalRuns, WAKEUP_CHANNEL } from './sql-fragments.js';
import { eachPartition, type Store } from './store.js';
import * as partitioned from './partitioned-maintenance.js';
import { DEADLINE_PARENTS, DEADLINE_RUNS } from './deadline-sql.js';

/**
 * Sweeper: unfinished runs past their deadline, at most $1 per statement, even when no process is
 * executing them (a WAITING run too: a sleep or a wait does not extend a deadline). Index:
 * durable_runs_deadline_idx. $2 history.
 * - A run with nothing to undo (no step recorded a compensation) ends FAILED with a
 *   DeadlineExceededError at once ('failed', reason 'deadline'); a child signals its parent.
 * - A run whose steps recorded compensations is handed to an executor to unwind: its deadline is
 *   lifted (compensations must finish), the error is stored on the still active run (an active run
 *   with an error is failing: the claim returns it), it becomes PENDING and claimable at once, and
 *   its lease ends (a worker still executing it loses its fenced writes; the next claim moves the
 *   epoch on). That execution replays the workflow, throws the error into it, runs the
 *   compensations newest first and ends the run FAILED with it ('deadline_exceeded').
 * The CTEs d, x and u are in deadline-sql.ts (DEADLINE_RUNS): distributed mode runs them
 * in a statement of its own, and writes the history and the group end rows after it.
 */
const SWEEP_DEADLINES = statement(
  'sweep_deadlines',
  `
WITH ${DEADLINE_RUNS},
hist AS (${history(
    '$2',
    `SELECT id, CASE WHEN undo THEN 'deadline_exceeded' ELSE 'failed' END,
  jsonb_build_object('reason', 'deadline', 'deadline', deadline_at) || CASE WHEN undo THEN '{"compensate":true}'::jsonb ELSE '{}'::jsonb END
  FROM u WHERE true`,
  )}),
${groupEnds('ge', '(SELECT * FROM u WHERE NOT undo)')},
${signalRuns('par', DEADLINE_PARENTS)},
woken AS (SELECT count(pg_notify('${WAKEUP_CHANNEL}', q.queue)) AS n FROM (SELECT DISTINCT queue FROM u WHERE undo) q)
SELECT id, undo, (SELECT n FROM par_n) AS signalled, (SELECT n FROM woken) AS woken FROM u`,
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
${deleteRunParts('IN (SELECT id FROM d)')}
SELECT count(*)::int AS n FROM d`,
);

/**
 * Ends up to `batch` unfinished runs past their deadline: FAILED at once, or handed to an executor
 * to compensate first (`compensating`). Returns their ids.
 */
export async function sweepDeadlines(store: Store, batch: number): Promise<{ failed: string[]; compensating: string[] }> {
  if (store.sql.dialect === 'mysql') return mysql.sweepDeadlines(store, batch);
  const rows = (
    await eachPartition(store, (s) =>
      s.partition !== undefined
        ? partitioned.sweepDeadlinesInPartition(s, batch)
        : s.sql.query<{ id: string; undo: boolean }>(SWEEP_DEADLINES, [batch, s.history]),
    )
  ).flat();
  return { failed: rows.filter((r) => !r.undo).map((r) => r.id), compensating: rows.filter((r) => r.undo).map((r) => r.id) };
}

/** Deletes up to `batch` runs finished more than `olderThanMs` ago; returns how many. */
export async function sweepRetention(store: Store, olderThanMs: number, batch: number): Promise<number> {
  if (store.sql.dialect === 'mysql') return mysql.sweepRetention(store, olderThanMs, batch);
  const counts = await eachPartition(store, async (s) =>
    Number((await s.sql.query<{ n: number }>(SWEEP_RETENTION, [olderThanMs, batch]))[0]?.n ?? 0),
  );
  return counts.reduce((a, n) => a + n, 0);
}

/**
 * Rate windows (durable_rate_windows) idle for longer than any period (1 day): at most $1 per
 * statement. They count nothing any more; a key that starts again gets a new row. SKIP LOCKED:
 * safe on every instance at once. Index: durable_rate_windows_last_idx.
 */
const SWEEP_RATE_WINDOWS = statement(
  'sweep_rate_windows',
  `
DELETE FROM durable_rate_windows WHERE (queue, key) IN (
  SELECT queue, key FROM durable_rate_windows WHERE last_start_at < now() - interval '1 day' LIMIT $1 FOR UPDATE SKIP LOCKED)`,
);

/** Deletes up to `batch` idle rate windows. */
export async function sweepRateWindows(store: Store, batch: number): Promise<void> {
  if (store.sql.dialect === 'mysql') return mysql.sweepRateWindows(store, batch);
  await store.sql.query(SWEEP_RATE_WINDOWS, [batch]);
}
