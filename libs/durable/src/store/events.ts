/** Events a run publishes (latest value per key) and the app reads. */
import * as mysql from './mysql/messages.js';
import { statement } from './statement.js';
import { runStore, type Store } from './store.js';
import * as partitioned from './partitioned-waits.js';
import type { RunStatus } from './rows.js';

/**
 * Durable.setEvent: checkpoint the step and upsert the event's latest value, one statement, fenced.
 * $3 seq, $4 step name, $5 key, $6 value (jsonb). Returns held (0 = lease lost).
 */
const SET_EVENT = statement(
  'set_event',
  `
WITH run AS (
  SELECT id FROM durable_runs WHERE id = $1 AND lease_epoch = $2 AND status = 'RUNNING' FOR SHARE),
step AS (
  INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)
  SELECT run.id, $3, $4, 'SUCCEEDED', NULL, 1, now(), now() FROM run
  ON CONFLICT (run_id, seq) DO NOTHING
  RETURNING run_id),
ev AS (
  INSERT INTO durable_events (run_id, key, value, updated_at)
  SELECT run_id, $5, $6::jsonb, now() FROM step
  ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
  RETURNING key)
SELECT (SELECT count(*) FROM run)::int AS held, (SELECT count(*) FROM ev)::int AS written`,
);

/** WorkflowClient.getEvent: the latest value of key $2 of run $1 (if any), and the run's status. */
const SELECT_EVENT = statement(
  'select_event',
  `
SELECT r.status, e.value, e.run_id IS NOT NULL AS found
FROM (SELECT $1::text AS id) q
LEFT JOIN durable_runs r ON r.id = q.id
LEFT JOIN durable_events e ON e.run_id = q.id AND e.key = $2`,
);

/** Records the step and upserts the event; false = the execution no longer holds the run. */
export async function setEvent(
  store: Store,
  a: { runId: string; epoch: number; seq: number; name: string; key: string; value: string },
): Promise<boolean> {
  if (store.sql.dialect === 'mysql') return mysql.setEvent(store, a);
  store = runStore(store, a.runId);
  if (store.partition !== undefined) return partitioned.setEventInPartition(store, a);
  const [row] = await store.sql.query<{ held: number }>(SET_EVENT, [a.runId, a.epoch, a.seq, a.name, a.key, a.value]);
  return Number(row.held) === 1;
}

export async function getEvent(
  store: Store,
  runId: string,
  key: string,
): Promise<{ found: boolean; value: unknown; status: RunStatus | null }> {
  if (store.sql.dialect === 'mysql') return mysql.getEvent(store, runId, key);
  store = runStore(store, runId);
  const [row] = await store.sql.query<{ found: boolean; value: unknown; status: RunStatus | null }>(SELECT_EVENT, [runId, key]);
  return { found: row.found === true, value: row.value, status: row.status ?? null };
}
