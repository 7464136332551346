/** Live progress of the steps a run is executing (Durable.progress), shown by getRun and the dashboard. */
import * as mysql from './mysql/history.js';
import { statement } from './statement.js';
import { runStore, type Store } from './store.js';

/**
 * Record the latest progress of the steps run $1 is executing, fenced by its epoch $2 (a zombie
 * writes nothing): $3 their values by step seq (json text, `{ "3": { "step": …, "value": … } }`),
 * stamped with the database clock. No index column changes (a HOT update); updated_at is left
 * alone: progress is not a change of the run's state. Throttled by the caller (ProgressReporter).
 */
const SET_PROGRESS = statement(
  'set_progress',
  `
UPDATE durable_runs SET progress = jsonb_build_object('at', now(), 'steps', $3::jsonb)
WHERE id = $1 AND lease_epoch = $2 AND status = 'RUNNING'`,
);

/** Writes the progress of run `runId` (if this execution still holds it). */
export async function setProgress(store: Store, runId: string, epoch: number, steps: string): Promise<void> {
  if (store.sql.dialect === 'mysql') return mysql.setProgress(store, runId, epoch, steps);
  store = runStore(store, runId);
  await store.sql.query(SET_PROGRESS, [runId, epoch, steps]);
}
