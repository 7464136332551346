/**
 * Control of runs from outside on a MySQL-family database (see control.ts): cancel (with its
 * children, with or without compensation), resume, fork. Each is one transaction that locks the
 * runs it changes in id order first. The executing worker learns of a cancel from its next
 * heartbeat (no LISTEN here): the run is missing from the answer, or reported cancelling.
 */
import type { CompensatingCancel } from '../rows.js';
import type { SqlClient } from '../sql-client.js';
import type { Store } from '../store.js';
import { CANCEL_CHANNEL, COMPENSATE_CHANNEL } from '../sql-fragments.js';
import { countGroupEnds } from './child-groups.js';
import { signalRuns, wakeQueues } from './checkpoints.js';
import { bool, date, insertHistory, jsonText, marks, NOW, runsWithUndo } from './sql.js';

const ACTIVE = `('PENDING', 'RUNNING', 'WAITING')`;

/** Run `id` and, with `cascade`, its descendants (through parent_id; index durable_runs_parent_idx). */
async function tree(sql: SqlClient, id: string, cascade: boolean): Promise<string[]> {
  if (!cascade) return [id];
  const rows = await sql.query<{ id: string }>(
    `WITH RECURSIVE tree AS (
       SELECT id FROM durable_runs WHERE id = ?
       UNION
       SELECT c.id FROM durable_runs c JOIN tree t ON c.parent_id = t.id)
     SELECT id FROM tree`,
    [id],
  );
  return rows.map((r) => r.id);
}

/** The unfinished runs among `ids`, locked in id order. */
async function lockActive(sql: SqlClient, ids: string[]) {
  if (!ids.length) return [];
  return sql.query<{
    id: string;
    parent_id: string | null;
    group_seq: number | null;
    group_index: number | null;
    status: string;
    queue: string;
    already: unknown;
  }>(
    `SELECT id, parent_id, group_seq, group_index, status, queue, cancel_requested_at IS NOT NULL AS already FROM durable_runs
     WHERE id IN (${marks(ids.length)}) AND status IN ${ACTIVE} ORDER BY id FOR UPDATE`,
    ids,
  );
}

/** Ends `ids` CANCELLED, with their durable waits (see END_WAITS). */
async function endCancelled(sql: SqlClient, ids: string[]): Promise<void> {
  if (!ids.length) return;
  await sql.execute(
    `UPDATE durable_runs SET status = 'CANCELLED', finished_at = ${NOW}, updated_at = ${NOW}, lease_owner = NULL, lease_expires_at = NULL
     WHERE id IN (${marks(ids.length)})`,
    ids,
  );
  await sql.execute(`UPDATE durable_steps SET status = 'CANCELLED' WHERE run_id IN (${marks(ids.length)}) AND status = 'WAITING'`, ids);
}

/** History detail of a run cancelled as part of `root`'s tree, and who asked. */
const byWhom = (id: string, root: string, actor: string | null): Record<string, unknown> => ({
  ...(id !== root ? { by: 'ancestor', root } : {}),
  ...(actor !== null ? { actor } : {}),
});

/**
 * The parent of the root waits for it: signalled when the root ends. Children of a group (the
 * cancelled runs `rows`) count on their group's row; its parent is signalled when that completes its wait.
 */
async function signalParentOf(
  sql: SqlClient,
  rows: Array<{ id: string; parent_id: string | null; group_seq: number | null; group_index: number | null }>,
  root: string,
): Promise<void> {
  const crossed = await countGroupEnds(
    sql,
    rows.map((r) => ({ ...r, status: 'CANCELLED' })),
    new Set(rows.map((r) => r.id)),
  );
  const rootRow = rows.find((r) => r.id === root);
  const parent = rootRow?.group_seq == null ? rootRow?.parent_id : null;
  await signalRuns(sql, [...new Set([...(parent ? [parent] : []), ...crossed])]);
}

/** See cancelTree() in control.ts. */
export async function cancelTree(store: Store, id: string, cascade: boolean, actor: string | null): Promise<string[]> {
  return store.sql.transaction(async (sql) => {
    const runs = await lockActive(sql, await tree(sql, id, cascade));
    const ids = runs.map((r) => r.id);
    await endCancelled(sql, ids);
    await insertHistory(
      sql,
      store.history,
      ids.map((r) => {
        const detail = byWhom(r, id, actor);
        return [r, 'cancelled', Object.keys(detail).length ? detail : null];
      }),
    );
    await signalParentOf(sql, runs, id);
    for (const r of ids) sql.notify?.(CANCEL_CHANNEL, r);
    return ids;
  });
}

/** See cancelTreeCompensating() in control.ts. */
export async function cancelTreeCompensating(
  store: Store,
  id: string,
  cascade: boolean,
  actor: string | null,
  afterPivot: 'refuse' | 'stop' = 'refuse',
): Promise<CompensatingCancel[]> {
  return store.sql.transaction(async (sql) => {
    const runs = await lockActive(sql, await tree(sql, id, cascade));
    if (!runs.length) return [];
    const ids = runs.map((r) => r.id);
    const undo = await runsWithUndo(sql, ids);
    const pivots = new Map<string, { seq: number; step: string }>();
    for (const p of await sql.query<{ run_id: string; seq: number; name: string }>(
      `SELECT run_id, seq, name FROM durable_steps WHERE run_id IN (${marks(ids.length)}) AND status = 'SUCCEEDED'
         AND JSON_EXTRACT(compensation, '$.pivot') IS NOT NULL ORDER BY run_id, seq`,
      ids,
    )) {
      if (!pivots.has(p.run_id)) pivots.set(p.run_id, { seq: Number(p.seq), step: p.name });
    }
    if (afterPivot === 'refuse' && pivots.size) {
      return [...pivots].map(([run, pivot]): CompensatingCancel => ({ id: run, outcome: 'refused', pivot }));
    }
    const done = runs.filter((r) => (r.status !== 'RUNNING' && !undo.has(r.id)) || pivots.has(r.id));
    const req = runs.filter((r) => !done.includes(r));
    await endCancelled(
      sql,
      done.map((r) => r.id),
    );
    if (req.length) {
      await sql.execute(
        `UPDATE durable_runs
         SET available_at = CASE WHEN status = 'RUNNING' THEN greatest(${NOW}, available_at + INTERVAL 1000 MICROSECOND) ELSE least(available_at, ${NOW}) END,
             cancel_requested_at = coalesce(cancel_requested_at, ${NOW}), updated_at = ${NOW}
         WHERE id IN (${marks(req.length)})`,
        req.map((r) => r.id),
      );
    }
    await insertHistory(sql, store.history, [
      ...done.map((r): [string, string, Record<string, unknown>] => {
        const pivot = pivots.get(r.id);
        return [
          r.id,
          'cancelled',
          {
            ...(pivot ? { compensate: true, afterPivot: 'stop', pivot } : { compensate: true, compensations: 0 }),
            ...byWhom(r.id, id, actor),
          },
        ];
      }),
      ...req
        .filter((r) => !bool(r.already))
        .map((r): [string, string, Record<string, unknown>] => [
          r.id,
          'cancel_requested',
          { compensate: true, ...byWhom(r.id, id, actor) },
        ]),
    ]);
    await signalParentOf(sql, done, id);
    for (const r of done) sql.notify?.(CANCEL_CHANNEL, r.id);
    for (const r of req) if (r.status === 'RUNNING') sql.notify?.(COMPENSATE_CHANNEL, r.id);
    wakeQueues(
      sql,
      req.filter((r) => r.status !== 'RUNNING'),
    );
    return [
      ...done.map((r): CompensatingCancel => ({ id: r.id, outcome: 'cancelled', pivot: pivots.get(r.id) ?? null })),
      ...req.map((r): CompensatingCancel => ({ id: r.id, outcome: 'cancelling', pivot: null })),
    ];
  });
}

/** See resumeRun() in control.ts. */
export async function resumeRun(store: Store, id: string, cascade: boolean, actor: string | null): Promise<boolean> {
  return store.sql.transaction(async (sql) => {
    const [root] = await sql.query<{ finished_at: unknown }>(
      `SELECT finished_at FROM durable_runs WHERE id = ? AND status IN ('CANCELLED', 'FAILED') FOR UPDATE`,
      [id],
    );
    if (!root) return false;
    const ids = cascade
      ? (
          await sql.query<{ id: string }>(
            `WITH RECURSIVE tree AS (
               SELECT id FROM durable_runs WHERE id = ?
               UNION
               SELECT c.id FROM durable_runs c JOIN tree t ON c.parent_id = t.id WHERE c.status = 'CANCELLED' AND c.finished_at >= ?)
             SELECT id FROM tree`,
            [id, date(root.finished_at)!.toISOString().replace('T', ' ').replace('Z', '')],
          )
        ).map((r) => r.id)
      : [id];
    const lockedRows = await sql.query<{ id: string; queue: string; parent_id: string | null; group_seq: number | null; status: string }>(
      `SELECT id, queue, parent_id, group_seq, status FROM durable_runs WHERE id IN (${marks(ids.length)}) AND status IN ('CANCELLED', 'FAILED')
       ORDER BY id FOR UPDATE`,
      ids,
    );
    const locked = lockedRows.map((r) => r.id);
    if (!locked.length) return false;
    // A resumed child of a group no longer counts as ended on its group's row.
    for (const r of lockedRows) {
      if (r.group_seq == null || r.parent_id === null) continue;
      await sql.execute(
        `UPDATE durable_child_groups SET ended = ended - 1, failed = failed - ?, cancelled = cancelled - ? WHERE run_id = ? AND seq = ?`,
        [r.status === 'FAILED' ? 1 : 0, r.status === 'CANCELLED' ? 1 : 0, r.parent_id, Number(r.group_seq)],
      );
    }
    await sql.execute(
      `UPDATE durable_runs
       SET status = 'PENDING', available_at = ${NOW}, updated_at = ${NOW}, finished_at = NULL, error = NULL,
           deadline_at = CASE WHEN deadline_at < ${NOW} THEN NULL ELSE deadline_at END
       WHERE id IN (${marks(locked.length)})`,
      locked,
    );
    await sql.execute(
      `UPDATE durable_steps SET status = 'WAITING' WHERE run_id IN (${marks(locked.length)}) AND status = 'CANCELLED'`,
      locked,
    );
    const last = await sql.query<{ run_id: string; seq: number }>(
      `SELECT run_id, max(seq) AS seq FROM durable_steps WHERE run_id IN (${marks(locked.length)}) GROUP BY run_id`,
      locked,
    );
    for (const l of last) {
      await sql.execute(`DELETE FROM durable_steps WHERE run_id = ? AND seq = ? AND status = 'FAILED'`, [l.run_id, l.seq]);
    }
    await insertHistory(
      sql,
      store.history,
      locked.map((r) => [r, 'resumed', actor !== null ? { actor } : null]),
    );
    wakeQueues(sql, lockedRows);
    return locked.includes(id);
  });
}

/** See forkSource() in control.ts. */
export async function forkSource(store: Store, id: string): Promise<{ workflowName: string; queue: string; nextSeq: number } | null> {
  const [r] = await store.sql.query<Record<string, unknown>>(
    `SELECT r.workflow_name, r.queue, (SELECT coalesce(max(s.seq) + 1, 0) FROM durable_steps s WHERE s.run_id = r.id) AS next_seq
     FROM durable_runs r WHERE r.id = ?`,
    [id],
  );
  return r ? { workflowName: r.workflow_name as string, queue: r.queue as string, nextSeq: Number(r.next_seq) } : null;
}

/** See forkRun() in control.ts: nothing is created when a step before `fromStep` was undone. */
export async function forkRun(
  store: Store,
  sourceId: string,
  newId: string,
  fromStep: number,
  appVersion: string | null,
  actor: string | null,
): Promise<{ id: string; copiedSteps: number } | null> {
  return store.sql.transaction(async (sql) => {
    const [src] = await sql.query<Record<string, unknown>>(
      'SELECT workflow_name, queue, input, priority, concurrency_key, context, deadline_at, created_at, cancel_requested_at FROM durable_runs WHERE id = ? LOCK IN SHARE MODE',
      [sourceId],
    );
    if (!src) return null;
    const [undone] = await sql.query(
      `SELECT 1 AS x FROM durable_steps u
       LEFT JOIN durable_steps c ON c.run_id = u.run_id AND c.compensates = u.seq
       WHERE u.run_id = ? AND u.seq < ? AND u.compensates IS NULL
         AND (c.seq IS NOT NULL OR (JSON_EXTRACT(u.compensation, '$.by') IS NOT NULL AND u.status = 'SUCCEEDED' AND ?))
       LIMIT 1`,
      [sourceId, fromStep, src.cancel_requested_at != null],
    );
    if (undone) return null;
    const deadline = date(src.deadline_at);
    const timeoutMs = deadline ? deadline.getTime() - date(src.created_at)!.getTime() : null;
    await sql.execute(
      `INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, app_version,
                                 concurrency_key, context, created_at, updated_at)
       VALUES (?, ?, ?, 'PENDING', ?, ?, ${NOW}, ${NOW}, ${timeoutMs === null ? 'NULL' : `${NOW} + INTERVAL ? MICROSECOND`}, ?, ?, ?, ${NOW}, ${NOW})`,
      [
        newId,
        src.workflow_name,
        src.queue,
        src.input,
        src.priority,
        ...(timeoutMs === null ? [] : [timeoutMs * 1000]),
        appVersion,
        src.concurrency_key,
        jsonText(src.context),
      ],
    );
    const copied = await sql.execute(
      `INSERT INTO durable_steps (run_id, seq, name, status, output, error, attempts, started_at, finished_at, compensation, compensates)
       SELECT ?, seq, name, CASE status WHEN 'CANCELLED' THEN 'WAITING' ELSE status END, output, error, attempts, started_at, finished_at,
              compensation, compensates
       FROM durable_steps WHERE run_id = ? AND seq < ?`,
      [newId, sourceId, fromStep],
    );
    await insertHistory(sql, store.history, [[newId, 'forked', { from: sourceId, fromStep, ...(actor !== null ? { actor } : {}) }]]);
    wakeQueues(sql, [{ queue: String(src.queue) }]);
    return { id: newId, copiedSteps: copied };
  });
}
