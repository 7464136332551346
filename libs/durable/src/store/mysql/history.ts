/** Run history and progress on a MySQL-family database (see history.ts and progress.ts). */
import type { RunEvent } from '../rows.js';
import type { Store } from '../store.js';
import { date, json, NOW } from './sql.js';

/** See insertRunEvent() in history.ts: only for a run that exists, read with a lock (an end that deletes the run holds it FOR UPDATE). */
export async function insertRunEvent(store: Store, runId: string, kind: string, detail: Record<string, unknown>): Promise<void> {
  if (!store.history) return;
  await store.sql.transaction(async (sql) => {
    const [run] = await sql.query('SELECT id FROM durable_runs WHERE id = ? LOCK IN SHARE MODE', [runId]);
    if (run)
      await sql.execute(`INSERT INTO durable_run_events (run_id, kind, detail, at) VALUES (?, ?, ?, ${NOW})`, [
        runId,
        kind,
        JSON.stringify(detail),
      ]);
  });
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
