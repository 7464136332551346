/** What a fork must not reuse: the steps of its source whose effects were undone, or are being undone. */
import * as mysql from './mysql/children.js';
import { statement } from './statement.js';
import { runStore, type Store } from './store.js';
export type { UndoneRow } from './rows.js';
import type { UndoneRow } from './rows.js';

/**
 * The undone steps of run $1, in seq order: a step a compensation step (`compensates`) undid, and,
 * while the run is asked to cancel with compensation (cancel_requested_at), every step that records
 * a compensation not run yet (it is about to be undone). Index: durable_steps_pkey.
 */
const SELECT_UNDONE_STEPS = statement(
  'select_undone_steps',
  `
SELECT u.seq, u.name, c.seq AS by_seq, c.name AS by_name
FROM durable_steps u
LEFT JOIN durable_steps c ON c.run_id = u.run_id AND c.compensates = u.seq
WHERE u.run_id = $1 AND u.compensates IS NULL
  AND (c.seq IS NOT NULL
       OR ((u.compensation -> 'by') IS NOT NULL AND u.status = 'SUCCEEDED'
           AND EXISTS (SELECT 1 FROM durable_runs r WHERE r.id = $1 AND r.cancel_requested_at IS NOT NULL)))
ORDER BY u.seq`,
);

/** SQL condition (on run $1, fork point $3): no step before the fork point is undone (see SELECT_UNDONE_STEPS). */
export const NOTHING_UNDONE_BEFORE = `NOT EXISTS (
  SELECT 1 FROM durable_steps u
  LEFT JOIN durable_steps c ON c.run_id = u.run_id AND c.compensates = u.seq
  WHERE u.run_id = $1 AND u.seq < $3::int AND u.compensates IS NULL
    AND (c.seq IS NOT NULL
         OR ((u.compensation -> 'by') IS NOT NULL AND u.status = 'SUCCEEDED' AND src0.cancel_requested_at IS NOT NULL)))`;

/** The undone steps of a run (see SELECT_UNDONE_STEPS). */
export async function undoneSteps(store: Store, runId: string): Promise<UndoneRow[]> {
  if (store.sql.dialect === 'mysql') return mysql.undoneSteps(store, runId);
  store = runStore(store, runId);
  const rows = await store.sql.query<{ seq: number; name: string; by_seq: number | null; by_name: string | null }>(SELECT_UNDONE_STEPS, [
    runId,
  ]);
  return rows.map((r) => ({
    seq: Number(r.seq),
    step: r.name,
    undoneBy: r.by_seq === null || r.by_seq === undefined ? null : { seq: Number(r.by_seq), step: String(r.by_name) },
  }));
}
