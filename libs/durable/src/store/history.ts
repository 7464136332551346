/**
 * Run history (durable_run_events). Statements that change a run's state write its history row
 * themselves (see `history` in sql-fragments.ts); these two write one row on its own (rare paths)
 * and read a run's history.
 */
import * as mysql from './mysql/history.js';
import { statement } from './statement.js';
import { runStore, type Store } from './store.js';
export type { RunEvent } from './rows.js';
import type { RunEvent } from './rows.js';

/** History of one run, oldest first (WorkflowClient.getRunEvents). Index: durable_run_events_run_idx. */
const SELECT_RUN_EVENTS = statement(
  'select_run_events',
  `
SELECT e.id::text AS id, e.kind, e.detail, e.at FROM durable_run_events e WHERE e.run_id = $1 ORDER BY e.id LIMIT $2`,
);

/**
 * One history row written on its own (rare paths only: a step retried, a lease found lost), for a
 * run that exists: a worker that wakes after its run was taken over and deleted (not kept) leaves
 * no row behind. FOR KEY SHARE orders it with an end that deletes the run, as for messages
 * (messages.ts). Index: the runs' primary key.
 */
const INSERT_RUN_EVENT = statement(
  'insert_run_event',
  `
WITH r AS (SELECT id FROM durable_runs WHERE id = $1 FOR KEY SHARE),
-- the INSERT in a CTE of its own: Citus plans an INSERT … SELECT from a locking CTE no other way
i AS (INSERT INTO durable_run_events (run_id, kind, detail) SELECT id, $2, $3::jsonb FROM r RETURNING id)
SELECT id FROM i`,
);

/** Writes one history row (unless history is off). */
export async function insertRunEvent(store: Store, runId: string, kind: string, detail: Record<string, unknown>): Promise<void> {
  if (store.sql.dialect === 'mysql') return mysql.insertRunEvent(store, runId, kind, detail);
  store = runStore(store, runId);
  if (store.history) await store.sql.query(INSERT_RUN_EVENT, [runId, kind, JSON.stringify(detail)]);
}

/** The history of a run, oldest first (at most `limit` rows). */
export async function getRunEvents(store: Store, runId: string, limit: number): Promise<RunEvent[]> {
  if (store.sql.dialect === 'mysql') return mysql.getRunEvents(store, runId, limit);
  store = runStore(store, runId);
  const rows = await store.sql.query<{ id: string; kind: string; detail: unknown; at: Date | string }>(SELECT_RUN_EVENTS, [runId, limit]);
  return rows.map((r) => ({
    id: Number(r.id),
    kind: r.kind,
    detail: (typeof r.detail === 'string' ? JSON.parse(r.detail) : r.detail) as Record<string, unknown> | null,
    at: r.at instanceof Date ? r.at : new Date(r.at),
  }));
}
