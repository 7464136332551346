/** Run history and progress on a MySQL-family database (see history.ts and progress.ts). */
import type { RunEvent } from '../rows.js';
import type { Store } from '../store.js';
import { date, insertHistory, json, NOW } from './sql.js';

export async function insertRunEvent(store: Store, runId: string, kind: string, detail: Record<string, unknown>): Promise<void> {
  await insertHistory(store.sql, store.history, [[runId, kind, detail]]);
}

export async function getRunEvents(store: Store, runId: string, limit: number): Promise<RunEvent[]> {
  const rows = await store.sql.query<{ id: bigint | number | string; kind: string; detail: unknown; at: unknown }>(
    'SELECT id, kind, detail, at FROM durable_run_events WHERE run_id = ? ORDER BY id LIMIT ?',
    [runId, limit],
  );
  return rows.map((r) => ({ id: Number(r.id), kind: r.kind, detail: json<Record<string, unknown>>(r.detail), at: date(r.at)! }));
}

/** See setProgress() in progress.ts: fenced by the epoch, stamped with the database clock. */
export async function setProgress(store: Store, runId: string, epoch: number, steps: string): Promise<void> {
  await store.sql.execute(
    `UPDATE durable_runs SET progress = JSON_OBJECT('at', DATE_FORMAT(${NOW}, '%Y-%m-%dT%H:%i:%s.%fZ'), 'steps', JSON_EXTRACT(?, '$'))
     WHERE id = ? AND lease_epoch = ? AND status = 'RUNNING'`,
    [steps, runId, epoch],
  );
}
