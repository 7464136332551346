/** Backfills on a MySQL-family database: see ../backfills.ts. */
import type { Store } from '../store.js';
import { bool, date } from './sql.js';

export async function pendingMessage(store: Store, runId: string, topic: string): Promise<boolean> {
  const [row] = await store.sql.query<{ pending: unknown }>(
    `SELECT EXISTS (SELECT 1 FROM durable_messages WHERE run_id = ? AND topic = ? AND consumed_seq IS NULL) AS pending`,
    [runId, topic],
  );
  return bool(row?.pending);
}

export async function listBackfills(store: Store, key: string, limit: number): Promise<Array<Record<string, unknown>>> {
  const rows = await store.sql.query<Record<string, unknown>>(
    `SELECT r.id, r.workflow_name, r.status, r.created_at, r.finished_at, e.value AS progress, e.updated_at
     FROM durable_events e JOIN durable_runs r ON r.id = e.run_id
     WHERE e.\`key\` = ?
     ORDER BY r.created_at DESC, r.id
     LIMIT ?`,
    [key, limit],
  );
  return rows.map((r) => ({ ...r, created_at: date(r.created_at), finished_at: date(r.finished_at), updated_at: date(r.updated_at) }));
}
