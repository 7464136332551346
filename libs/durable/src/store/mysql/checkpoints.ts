/**
 * Checkpoints on a MySQL-family database: finished steps and run ends, fenced by (run, epoch) and
 * batched. Each call is one transaction that locks the runs first, in id order (as the heartbeat
 * does): a batch never deadlocks with another path that locks the same runs.
 */
import type { SqlClient } from '../sql-client.js';
import type { Store } from '../store.js';
import type { EndResult } from '../rows.js';
import type { RunEnd, StepCheckpoint } from '../rows.js';
import { SIGNAL_CHANNEL, WAKEUP_CHANNEL } from '../sql-fragments.js';
import { bool, deleteRuns, insertHistory, marks, NOW } from './sql.js';
import { countGroupEnds } from './child-groups.js';

/** The runs among `ids` locked in id order, with what a fenced write needs to know of them. */
async function lockRuns(sql: SqlClient, ids: string[], mode: 'FOR UPDATE' | 'LOCK IN SHARE MODE') {
  const rows = await sql.query<{
    id: string;
    lease_epoch: number;
    status: string;
    cancelling: unknown;
    parent_id: string | null;
    group_seq: number | null;
    group_index: number | null;
  }>(
    `SELECT id, lease_epoch, status, cancel_requested_at IS NOT NULL AS cancelling, parent_id, group_seq, group_index FROM durable_runs
     WHERE id IN (${marks(ids.length)}) ORDER BY id ${mode}`,
    ids,
  );
  return new Map(rows.map((r) => [r.id, { ...r, lease_epoch: Number(r.lease_epoch), cancelling: bool(r.cancelling) }]));
}

const errorMessage = (error: string | null): unknown => {
  if (!error) return null;
  const e = JSON.parse(error) as { message?: unknown } | null;
  return e && typeof e === 'object' ? (e.message ?? null) : null;
};

/**
 * Writes the checkpoints of `steps` whose run is `held` (RUNNING under the step's epoch, locked by the
 * caller); a step already recorded is left alone. Returns the `${runId}:${seq}` keys written.
 */
async function writeSteps(
  sql: SqlClient,
  history: boolean,
  steps: StepCheckpoint[],
  held: (s: StepCheckpoint) => boolean,
): Promise<Set<string>> {
  const candidates = steps.filter(held);
  if (!candidates.length) return new Set();
  const existing = await sql.query<{ run_id: string; seq: number }>(
    `SELECT run_id, seq FROM durable_steps WHERE (run_id, seq) IN (${candidates.map(() => '(?, ?)').join(', ')})`,
    candidates.flatMap((s) => [s.runId, s.seq]),
  );
  const taken = new Set(existing.map((e) => `${e.run_id}:${e.seq}`));
  const fresh = candidates.filter((s) => !taken.has(`${s.runId}:${s.seq}`));
  if (!fresh.length) return new Set();
  await sql.execute(
    `INSERT INTO durable_steps (run_id, seq, name, status, output, error, attempts, started_at, finished_at, compensation, compensates)
     VALUES ${fresh.map(() => `(?, ?, ?, ?, ?, ?, ?, ${NOW} - INTERVAL ROUND(? * 1000) MICROSECOND, ${NOW}, ?, ?)`).join(', ')}`,
    fresh.flatMap((s) => [
      s.runId,
      s.seq,
      s.name,
      s.status,
      s.output,
      s.error,
      s.attempts,
      s.durationMs,
      s.compensation ?? null,
      s.compensates ?? null,
    ]),
  );
  await insertHistory(
    sql,
    history,
    fresh
      .filter((s) => s.status === 'FAILED')
      .map((s) => [s.runId, 'step_failed', { seq: s.seq, step: s.name, attempts: s.attempts, error: errorMessage(s.error) }]),
  );
  return new Set(fresh.map((s) => `${s.runId}:${s.seq}`));
}

/** See insertSteps() in checkpoints.ts. */
export async function insertSteps(store: Store, steps: StepCheckpoint[]): Promise<Set<string>> {
  if (!steps.length) return new Set();
  return store.sql.transaction(async (sql) => {
    const runs = await lockRuns(sql, [...new Set(steps.map((s) => s.runId))], 'LOCK IN SHARE MODE');
    return writeSteps(sql, store.history, steps, (s) => {
      const r = runs.get(s.runId);
      return r !== undefined && r.status === 'RUNNING' && r.lease_epoch === s.epoch;
    });
  });
}

/** See insertStep() in checkpoints.ts. */
export async function insertStep(store: Store, step: StepCheckpoint): Promise<boolean> {
  return (await insertSteps(store, [step])).size === 1;
}

const END_KIND = { SUCCEEDED: 'completed', FAILED: 'failed', CANCELLED: 'cancelled' } as const;

/** See finishRuns() in checkpoints.ts. */
export async function finishRuns(store: Store, ends: RunEnd[]): Promise<Map<string, EndResult>> {
  if (!ends.length) return new Map();
  return store.sql.transaction(async (sql) => {
    const ids = new Set<string>();
    for (const e of ends) {
      ids.add(e.runId);
      if (e.parentId !== null) ids.add(e.parentId);
    }
    const runs = await lockRuns(sql, [...ids], 'FOR UPDATE');
    const held = ends.filter((e) => {
      const r = runs.get(e.runId);
      return r !== undefined && r.status === 'RUNNING' && r.lease_epoch === e.epoch;
    });
    const heldIds = new Set(held.map((e) => e.runId));
    const refused = held.filter((e) => e.status === 'SUCCEEDED' && runs.get(e.runId)!.cancelling);
    // Runs that are not kept and succeeded: deleted with what belongs to them, their last checkpoints not written.
    const gone = held.filter((e) => e.delete === true && e.status === 'SUCCEEDED' && !refused.includes(e));
    const ending = held.filter((e) => !refused.includes(e) && !gone.includes(e));
    const epochOf = new Map([...ending, ...refused].map((e) => [e.runId, e.epoch]));
    await writeSteps(
      sql,
      store.history,
      held.flatMap((e) => e.steps ?? []),
      (s) => epochOf.get(s.runId) === s.epoch,
    );
    await deleteRuns(
      sql,
      gone.map((e) => e.runId),
    );
    for (const e of ending) {
      await sql.execute(
        `UPDATE durable_runs SET status = ?, output = ?, error = ?, finished_at = ${NOW}, updated_at = ${NOW},
           lease_owner = NULL, lease_expires_at = NULL WHERE id = ?`,
        [e.status, e.output, e.error, e.runId],
      );
    }
    const cancelled = ending.filter((e) => e.status === 'CANCELLED').map((e) => e.runId);
    if (cancelled.length) {
      await sql.execute(
        `UPDATE durable_steps SET status = 'CANCELLED' WHERE run_id IN (${marks(cancelled.length)}) AND status = 'WAITING'`,
        cancelled,
      );
    }
    const actors = await cancelActors(sql, cancelled);
    await insertHistory(
      sql,
      store.history,
      ending.map((e) => [
        e.runId,
        END_KIND[e.status],
        e.status === 'FAILED'
          ? { error: errorMessage(e.error) }
          : e.status === 'CANCELLED'
            ? { compensated: true, ...(actors.has(e.runId) ? { actor: actors.get(e.runId) } : {}) }
            : null,
      ]),
    );
    // A child of a group counts on its group's row and signals its parent only when that completes the parent's wait.
    const endedRows = ending.map((e) => ({ ...runs.get(e.runId)!, status: e.status, error: e.error }));
    const crossed = await countGroupEnds(sql, endedRows, heldIds);
    const parents = [
      ...new Set([
        ...endedRows
          .filter((r) => r.group_seq == null)
          .map((r) => r.parent_id)
          .filter((p): p is string => p !== null && !heldIds.has(p)),
        ...crossed,
      ]),
    ];
    await signalRuns(sql, parents);
    return new Map<string, EndResult>([
      ...[...ending, ...gone].map((e): [string, EndResult] => [e.runId, 'ended']),
      ...refused.map((e): [string, EndResult] => [e.runId, 'cancelling']),
    ]);
  });
}

/** Who asked for the cancel of each run (its latest cancel_requested history row with an actor). */
async function cancelActors(sql: SqlClient, ids: string[]): Promise<Map<string, unknown>> {
  const actors = new Map<string, unknown>();
  for (const id of ids) {
    const [row] = await sql.query<{ actor: string | null }>(
      `SELECT JSON_EXTRACT(detail, '$.actor') AS actor FROM durable_run_events
       WHERE run_id = ? AND kind = 'cancel_requested' AND JSON_EXTRACT(detail, '$.actor') IS NOT NULL ORDER BY id DESC LIMIT 1`,
      [id],
    );
    if (row?.actor != null) actors.set(id, JSON.parse(row.actor));
  }
  return actors;
}

/**
 * Signals runs that something they may wait for arrived (see signalRuns in sql-fragments.ts): a
 * WAITING run becomes due at once; a RUNNING run's available_at moves forward (its executor's token).
 */
export async function signalRuns(sql: SqlClient, ids: string[]): Promise<number> {
  if (!ids.length) return 0;
  const runs = await sql.query<{ id: string; status: string; queue: string }>(
    `SELECT id, status, queue FROM durable_runs WHERE id IN (${marks(ids.length)}) AND status IN ('RUNNING', 'WAITING') ORDER BY id FOR UPDATE`,
    ids,
  );
  if (!runs.length) return 0;
  await sql.execute(
    `UPDATE durable_runs
     SET available_at = CASE WHEN status = 'WAITING' THEN least(available_at, ${NOW})
                             ELSE greatest(${NOW}, available_at + INTERVAL 1000 MICROSECOND) END
     WHERE id IN (${marks(runs.length)})`,
    runs.map((r) => r.id),
  );
  for (const r of runs) {
    if (r.status === 'WAITING') sql.notify?.(WAKEUP_CHANNEL, r.queue);
    else sql.notify?.(SIGNAL_CHANNEL, r.id);
  }
  return runs.length;
}

/** Wake-up hints for the queues of `runs` (one per queue). */
export function wakeQueues(sql: SqlClient, runs: Array<{ queue: string }>): void {
  for (const q of new Set(runs.map((r) => r.queue))) sql.notify?.(WAKEUP_CHANNEL, q);
}
