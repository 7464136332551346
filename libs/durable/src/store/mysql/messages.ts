/** Messages and events on a MySQL-family database (see messages.ts and events.ts). */
import type { RunStatus } from '../rows.js';
import type { SqlClient } from '../sql-client.js';
import type { Store } from '../store.js';
import { signalRuns } from './checkpoints.js';
import { isDuplicateKey, json, NOW } from './sql.js';

/** Inserts a message unless its idempotency key was used for the run already; true when new. */
async function insertMessage(
  sql: SqlClient,
  m: { runId: string; topic: string; payload: string; idempotencyKey: string | null; traceparent: string | null },
): Promise<boolean> {
  if (m.idempotencyKey !== null) {
    const [dup] = await sql.query('SELECT 1 AS x FROM durable_messages WHERE run_id = ? AND idempotency_key = ?', [
      m.runId,
      m.idempotencyKey,
    ]);
    if (dup) return false;
  }
  try {
    await sql.execute(
      `INSERT INTO durable_messages (run_id, topic, payload, idempotency_key, traceparent, created_at) VALUES (?, ?, ?, ?, ?, ${NOW})`,
      [m.runId, m.topic, m.payload, m.idempotencyKey, m.traceparent],
    );
    return true;
  } catch (err) {
    if (isDuplicateKey(err)) return false; // a repeated idempotency key, sent at the same time
    throw err;
  }
}

/** See sendMessage() in messages.ts: the message and the signal commit together (in the caller's transaction when given one). */
export async function sendMessage(
  store: Store,
  a: { runId: string; topic: string; payload: string; idempotencyKey: string | null; traceparent: string | null; activeOnly?: boolean },
): Promise<{ found: boolean; sent: boolean }> {
  return store.sql.transaction(async (sql) => {
    // The receiver's row first, as resolveWaits locks it before its messages: a send never deadlocks with a recv.
    const [run] = await sql.query<{ status: string }>('SELECT id, status FROM durable_runs WHERE id = ? FOR UPDATE', [a.runId]);
    if (!run || (a.activeOnly && ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(run.status))) return { found: false, sent: false };
    const sent = await insertMessage(sql, a);
    if (sent) await signalRuns(sql, [a.runId]);
    return { found: true, sent };
  });
}

/** The sender's run held under `epoch` (shared lock), or false. */
export async function holds(sql: SqlClient, runId: string, epoch: number): Promise<boolean> {
  const [run] = await sql.query(`SELECT id FROM durable_runs WHERE id = ? AND lease_epoch = ? AND status = 'RUNNING' LOCK IN SHARE MODE`, [
    runId,
    epoch,
  ]);
  return run !== undefined;
}

/** Records a step with no output unless it exists; true when written. */
export async function insertEmptyStep(sql: SqlClient, runId: string, seq: number, name: string): Promise<boolean> {
  const [done] = await sql.query('SELECT 1 AS x FROM durable_steps WHERE run_id = ? AND seq = ?', [runId, seq]);
  if (done) return false;
  await sql.execute(
    `INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at) VALUES (?, ?, ?, 'SUCCEEDED', NULL, 1, ${NOW}, ${NOW})`,
    [runId, seq, name],
  );
  return true;
}

/** See sendFromRun() in messages.ts: the sender's step and the message in one fenced transaction. */
export async function sendFromRun(
  store: Store,
  a: {
    runId: string;
    epoch: number;
    seq: number;
    name: string;
    target: string;
    topic: string;
    payload: string;
    traceparent: string | null;
  },
): Promise<{ held: boolean; found: boolean }> {
  return store.sql.transaction(async (sql) => {
    if (!(await holds(sql, a.runId, a.epoch))) return { held: false, found: false };
    const [target] = await sql.query('SELECT id FROM durable_runs WHERE id = ? FOR UPDATE', [a.target]);
    if (!target) return { held: true, found: false };
    if (await insertEmptyStep(sql, a.runId, a.seq, a.name)) {
      const sent = await insertMessage(sql, {
        runId: a.target,
        topic: a.topic,
        payload: a.payload,
        idempotencyKey: `${a.runId}#${a.seq}`,
        traceparent: a.traceparent,
      });
      if (sent) await signalRuns(sql, [a.target]);
    }
    return { held: true, found: true };
  });
}

/** See setEvent() in events.ts. */
export async function setEvent(
  store: Store,
  a: { runId: string; epoch: number; seq: number; name: string; key: string; value: string },
): Promise<boolean> {
  return store.sql.transaction(async (sql) => {
    if (!(await holds(sql, a.runId, a.epoch))) return false;
    if (await insertEmptyStep(sql, a.runId, a.seq, a.name)) {
      await sql.execute(
        `INSERT INTO durable_events (run_id, \`key\`, value, updated_at) VALUES (?, ?, ?, ${NOW})
         ON DUPLICATE KEY UPDATE value = VALUES(value), updated_at = VALUES(updated_at)`,
        [a.runId, a.key, a.value],
      );
    }
    return true;
  });
}

/** See getEvent() in events.ts. */
export async function getEvent(
  store: Store,
  runId: string,
  key: string,
): Promise<{ found: boolean; value: unknown; status: RunStatus | null }> {
  const [run] = await store.sql.query<{ status: RunStatus }>('SELECT status FROM durable_runs WHERE id = ?', [runId]);
  const [ev] = await store.sql.query<{ value: unknown }>('SELECT value FROM durable_events WHERE run_id = ? AND `key` = ?', [runId, key]);
  return { found: ev !== undefined, value: ev ? json(ev.value) : null, status: run?.status ?? null };
}

/** See messageByKey() in messages.ts. */
export async function messageByKey(store: Store, runId: string, idempotencyKey: string): Promise<{ payload: unknown } | undefined> {
  const [row] = await store.sql.query<{ payload: unknown }>(
    'SELECT payload FROM durable_messages WHERE run_id = ? AND idempotency_key = ?',
    [runId, idempotencyKey],
  );
  return row ? { payload: json(row.payload) } : undefined;
}
