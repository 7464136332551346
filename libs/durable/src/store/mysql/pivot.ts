/** A saga's pivot checkpoint on a MySQL-family database (see pivot.ts). */
import type { PivotWrite } from '../rows.js';
import type { StepCheckpoint } from '../rows.js';
import type { Store } from '../store.js';
import { bool, NOW } from './sql.js';

/**
 * Written only while the run is RUNNING under the step's epoch and no compensating cancel was asked;
 * the shared lock waits for a cancel holding the row, then reads what it committed.
 */
export async function insertPivotStep(store: Store, s: StepCheckpoint): Promise<PivotWrite> {
  return store.sql.transaction(async (sql) => {
    const [run] = await sql.query<{ status: string; lease_epoch: number; cancelling: unknown }>(
      'SELECT status, lease_epoch, cancel_requested_at IS NOT NULL AS cancelling FROM durable_runs WHERE id = ? LOCK IN SHARE MODE',
      [s.runId],
    );
    if (!run || run.status !== 'RUNNING' || Number(run.lease_epoch) !== s.epoch) return 'lost';
    if (bool(run.cancelling)) return 'cancelling';
    const [done] = await sql.query('SELECT 1 AS x FROM durable_steps WHERE run_id = ? AND seq = ?', [s.runId, s.seq]);
    if (done) return 'lost';
    await sql.execute(
      `INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at, compensation)
       VALUES (?, ?, ?, 'SUCCEEDED', ?, ?, ${NOW} - INTERVAL ROUND(? * 1000) MICROSECOND, ${NOW}, ?)`,
      [s.runId, s.seq, s.name, s.output, s.attempts, s.durationMs, s.compensation ?? '{"pivot":true}'],
    );
    return 'written';
  });
}
