/** Bulk actions' own statement: deleting finished runs by id (cancel, resume and retry reuse control.ts). */
import * as mysql from './mysql/maintenance.js';
import { deleteRunParts } from './sql-fragments.js';
import { statement } from './statement.js';
import { perPartition, type Store } from './store.js';

/**
 * Deletes the finished runs among $1 (ids, one batch of a bulk delete) with their messages, events
 * and history (steps by cascade), like the retention sweep. A run that is not finished any more
 * (resumed meanwhile) is kept. Index: durable_runs_pkey. Rows are locked by the DELETE itself;
 * SKIP LOCKED leaves a row another statement holds to the next attempt. Returns the deleted ids.
 */
const DELETE_FINISHED_RUNS = statement(
  'delete_finished_runs',
  `
WITH d AS (
  DELETE FROM durable_runs WHERE id IN (
    SELECT id FROM durable_runs
    WHERE id = ANY($1::text[]) AND status IN ('SUCCEEDED','FAILED','CANCELLED')
    FOR UPDATE SKIP LOCKED)
  RETURNING id),
${deleteRunParts('IN (SELECT id FROM d)')}
SELECT id FROM d`,
);

/** Deletes the finished runs among `ids`; returns the ids deleted. */
export async function deleteFinishedRuns(store: Store, ids: string[]): Promise<string[]> {
  if (store.sql.dialect === 'mysql') return mysql.deleteFinishedRuns(store, ids);
  const rows = await perPartition(
    store,
    ids,
    (id) => id,
    (s, part) => s.sql.query<{ id: string }>(DELETE_FINISHED_RUNS, [part]),
  );
  return rows.map((r) => r.id);
}
