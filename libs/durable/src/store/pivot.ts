/**
 * A saga's pivot (a step marked `pivot: true`): its checkpoint and a compensating cancel exclude
 * each other, under the run row's lock. The pivot is recorded in the step's compensation record
 * (`"pivot": true`), so no column is needed: a step with a pivot but nothing to undo has
 * `{"pivot": true}` without `by`.
 */
import * as mysql from './mysql/pivot.js';
import { statement } from './statement.js';
import { runStore, type Store } from './store.js';
import type { StepCheckpoint } from './rows.js';
export type { PivotWrite } from './rows.js';
import type { PivotWrite } from './rows.js';

/** SQL: the first committed pivot of run `run` (an expression), as `seq` and `name` (NULLs when none). */
export const PIVOT_OF = (run: string) =>
  `(SELECT s.seq FROM durable_steps s WHERE s.run_id = ${run} AND s.status = 'SUCCEEDED' AND (s.compensation -> 'pivot') IS NOT NULL ORDER BY s.seq LIMIT 1)`;

/**
 * The checkpoint of a pivot step (in the step's own transaction): written only while the run is
 * RUNNING under the epoch $2 and no compensating cancel was requested. FOR SHARE waits for a cancel
 * holding the row and then reads its latest version, so a cancel that committed first is seen (the
 * pivot is refused: 'cancelling', the step's transaction rolls back); a cancel that comes after waits
 * for this transaction and sees the pivot (see CANCEL_RUN_COMPENSATING). $1 run, $3 seq, $4 name,
 * $5 output, $6 attempts, $7 duration ms, $8 the compensation record (with "pivot": true).
 */
const INSERT_PIVOT_STEP = statement(
  'insert_pivot_step',
  `
WITH lk AS MATERIALIZED (
  SELECT r.id, r.lease_epoch, r.status, r.cancel_requested_at FROM durable_runs r WHERE r.id = $1 FOR SHARE),
l AS (SELECT id FROM lk WHERE status = 'RUNNING' AND lease_epoch = $2::int AND cancel_requested_at IS NULL),
s AS (
  INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at, compensation)
  SELECT l.id, $3::int, $4, 'SUCCEEDED', $5::jsonb, $6::int, now() - $7::float8 * interval '1 millisecond', now(), $8::jsonb
  FROM l
  ON CONFLICT (run_id, seq) DO NOTHING
  RETURNING seq)
SELECT CASE WHEN EXISTS (SELECT 1 FROM s) THEN 'written'
            WHEN EXISTS (SELECT 1 FROM lk WHERE status = 'RUNNING' AND lease_epoch = $2::int AND cancel_requested_at IS NOT NULL)
            THEN 'cancelling' ELSE 'lost' END AS outcome`,
);

/** Writes a pivot step's checkpoint through `store` (the step's transaction); see INSERT_PIVOT_STEP. */
export async function insertPivotStep(store: Store, s: StepCheckpoint): Promise<PivotWrite> {
  if (store.sql.dialect === 'mysql') return mysql.insertPivotStep(store, s);
  store = runStore(store, s.runId);
  const [r] = await store.sql.query<{ outcome: PivotWrite }>(INSERT_PIVOT_STEP, [
    s.runId,
    s.epoch,
    s.seq,
    s.name,
    s.output,
    s.attempts,
    s.durationMs,
    s.compensation ?? '{"pivot":true}',
  ]);
  return r?.outcome ?? 'lost';
}
