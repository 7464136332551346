/** The sweeper's upkeep and bulk deletes on a MySQL-family database (see maintenance.ts, bulk.ts, queue-figures.ts). */
import type { QueueFiguresRow } from '../rows.js';
import type { Store } from '../store.js';
import { signalRuns, wakeQueues } from './checkpoints.js';
import { countGroupEnds } from './child-groups.js';
import { anyRow, date, deleteRuns, insertHistory, marks, NOW, runsWithUndo } from './sql.js';

/** See sweepDeadlines() in maintenance.ts: runs past their deadline fail, or compensate first when a step recorded how to undo it. */
export async function sweepDeadlines(store: Store, batch: number): Promise<{ failed: string[]; compensating: string[] }> {
  const probe = `SELECT 1 FROM durable_runs WHERE deadline_at < ${NOW} AND status IN ('PENDING', 'RUNNING', 'WAITING') LIMIT 1`;
  if (!(await anyRow(store.sql, probe))) return { failed: [], compensating: [] };
  return store.sql.transaction(async (sql) => {
    const rows = await sql.query<{
      id: string;
      queue: string;
      parent_id: string | null;
      group_seq: number | null;
      group_index: number | null;
      deadline_at: unknown;
    }>(
      `SELECT id, queue, parent_id, group_seq, group_index, deadline_at FROM durable_runs
       WHERE deadline_at < ${NOW} AND status IN ('PENDING', 'RUNNING', 'WAITING')
       ORDER BY deadline_at LIMIT ? FOR UPDATE SKIP LOCKED`,
      [batch],
    );
    if (!rows.length) return { failed: [], compensating: [] };
    const ids = rows.map((r) => r.id);
    const undo = await runsWithUndo(sql, ids);
    const errors = new Map<string, string>();
    for (const r of rows) {
      const deadline = date(r.deadline_at)!.toISOString();
      const error = JSON.stringify({
        name: 'DeadlineExceededError',
        code: 'DEADLINE_EXCEEDED',
        message: `The run exceeded its deadline (${deadline}); raise the workflow option timeoutMs or the start option timeoutMs.`,
      });
      errors.set(r.id, error);
      await sql.execute(
        undo.has(r.id)
          ? `UPDATE durable_runs SET status = 'PENDING', available_at = least(available_at, ${NOW}), deadline_at = NULL, error = ?,
               updated_at = ${NOW}, lease_owner = NULL, lease_expires_at = NULL WHERE id = ?`
          : `UPDATE durable_runs SET status = 'FAILED', finished_at = ${NOW}, error = ?,
               updated_at = ${NOW}, lease_owner = NULL, lease_expires_at = NULL WHERE id = ?`,
        [error, r.id],
      );
    }
    await insertHistory(
      sql,
      store.history,
      rows.map((r) => [
        r.id,
        undo.has(r.id) ? 'deadline_exceeded' : 'failed',
        { reason: 'deadline', deadline: date(r.deadline_at)!.toISOString(), ...(undo.has(r.id) ? { compensate: true } : {}) },
      ]),
    );
    const failed = rows.filter((r) => !undo.has(r.id));
    const crossed = await countGroupEnds(
      sql,
      failed.map((r) => ({ ...r, status: 'FAILED', error: errors.get(r.id) })),
      new Set(ids),
    );
    await signalRuns(sql, [
      ...new Set([...failed.filter((r) => r.parent_id !== null && r.group_seq == null).map((r) => r.parent_id!), ...crossed]),
    ]);
    wakeQueues(
      sql,
      rows.filter((r) => undo.has(r.id)),
    );
    return { failed: ids.filter((id) => !undo.has(id)), compensating: ids.filter((id) => undo.has(id)) };
  });
}

/** See sweepRetention() in maintenance.ts. Index: durable_runs_finished_idx. */
export async function sweepRetention(store: Store, olderThanMs: number, batch: number): Promise<number> {
  const probe = `SELECT 1 FROM durable_runs WHERE finished_at < ${NOW} - INTERVAL ROUND(? * 1000) MICROSECOND LIMIT 1`;
  if (!(await anyRow(store.sql, probe, [olderThanMs]))) return 0;
  return store.sql.transaction(async (sql) => {
    const rows = await sql.query<{ id: string }>(
      `SELECT id FROM durable_runs WHERE finished_at < ${NOW} - INTERVAL ROUND(? * 1000) MICROSECOND
       ORDER BY finished_at LIMIT ? FOR UPDATE SKIP LOCKED`,
      [olderThanMs, batch],
    );
    return (
      await deleteRuns(
        sql,
        rows.map((r) => r.id),
      )
    ).length;
  });
}

/** See sweepRateWindows() in maintenance.ts. */
export async function sweepRateWindows(store: Store, batch: number): Promise<void> {
  await store.sql.execute(`DELETE FROM durable_rate_windows WHERE last_start_at < ${NOW} - INTERVAL 1 DAY LIMIT ?`, [batch]);
}

/** See deleteFinishedRuns() in bulk.ts. */
export async function deleteFinishedRuns(store: Store, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  return store.sql.transaction(async (sql) => {
    const rows = await sql.query<{ id: string }>(
      `SELECT id FROM durable_runs WHERE id IN (${marks(ids.length)}) AND status IN ('SUCCEEDED', 'FAILED', 'CANCELLED') FOR UPDATE SKIP LOCKED`,
      ids,
    );
    return deleteRuns(
      sql,
      rows.map((r) => r.id),
    );
  });
}

/** See queueFigures() in queue-figures.ts (no schedules run on MySQL-family databases yet: none overdue). */
export async function queueFigures(store: Store): Promise<QueueFiguresRow> {
  const rows = await store.sql.query<{ queue: string; state: QueueFiguresRow['queues'][number]['state']; n: unknown; oldest_ms: unknown }>(
    `SELECT queue, state, count(*) AS n, TIMESTAMPDIFF(MICROSECOND, min(available_at), ${NOW}) / 1000 AS oldest_ms FROM (
       SELECT queue, CASE WHEN status = 'RUNNING' THEN 'running' WHEN available_at <= ${NOW} THEN 'due'
                          WHEN status = 'PENDING' THEN 'delayed' ELSE 'waiting' END AS state, available_at
       FROM durable_runs WHERE status IN ('PENDING', 'WAITING', 'RUNNING')) r
     GROUP BY queue, state`,
  );
  return {
    queues: rows.map((r) => ({
      queue: r.queue,
      state: r.state,
      count: Number(r.n),
      oldestDueSeconds: r.state === 'due' ? Number(r.oldest_ms) / 1000 : null,
    })),
    schedulesOverdue: 0,
    scheduleLagSeconds: 0,
  };
}
