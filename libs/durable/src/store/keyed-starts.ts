/**
 * Flow control at start: singleton runs (dedupe key) and debounce (debounce key). Both rest on a
 * unique partial index, so two starts racing from different instances (or inside two users'
 * transactions) can never both create a run: the second INSERT waits for the first to commit and
 * then conflicts (ON CONFLICT DO NOTHING: no row), and the caller reads the winner with a fresh
 * snapshot (a new statement). The plain start statements (runs.ts) are not involved. In distributed
 * mode those indexes hold per partition, so a keyed run lives in its key's partition (keyPartition):
 * every statement here goes there.
 */
import * as mysql from './mysql/keyed-starts.js';
import { statement } from './statement.js';
import { DUE_BY, history, WAKEUP_CHANNEL } from './sql-fragments.js';
import type { DebounceStart, NewRun } from './rows.js';
import { runStore, type Store } from './store.js';
import { ACTIVE } from './schedule-rows.js';
import { partitionOf } from './partitions.js';

/** Columns and values shared by both inserts: $1 id … $12 tags (see INSERT_DEDUPED), and the context (INSERT_DEDUPED's $15, DEBOUNCE_START's $18). */
const COLUMNS = `id, workflow_name, queue, status, input, priority, available_at, deadline_at, app_version, concurrency_key, traceparent, tags, context`;

/**
 * A run with dedupe key $13 (PENDING). $1 id, $2 workflow, $3 queue, $4 input jsonb, $5 priority,
 * $6 run-at (null = now), $7 delay ms (null = none), $8 timeout ms (null = none), $9 app version,
 * $10 concurrency key, $11 traceparent, $12 tags text[], $13 dedupe key, $14 history, $15 context jsonb (null: none).
 * No row when the id exists or an active run of the workflow holds the key (any unique conflict).
 */
const insertDedupedText = (distributed: boolean) => `
WITH ins AS (
  INSERT INTO durable_runs (${COLUMNS}, dedupe_key)
  VALUES ($1, $2, $3, 'PENDING', $4::jsonb, $5, coalesce($6::timestamptz, now()) + coalesce($7::float8, 0) * interval '1 millisecond',
          now() + $8::float8 * interval '1 millisecond', $9, $10, $11, $12::text[], $15::jsonb, $13)
  ON CONFLICT DO NOTHING
  RETURNING id, queue, ${distributed ? 'available_at' : `available_at <= ${DUE_BY} AS due`}),
hist AS (${history('$14', `SELECT id, 'created', jsonb_build_object('workflow', $2::text, 'queue', queue, 'dedupeKey', $13::text) FROM ins WHERE true`)})
SELECT id, CASE WHEN ${distributed ? `available_at <= ${DUE_BY}` : 'due'} THEN pg_notify('${WAKEUP_CHANNEL}', queue) END IS NULL AS notified FROM ins`;
const INSERT_DEDUPED = statement('insert_deduped', insertDedupedText(false));
/** INSERT_DEDUPED for a partition (distributed mode): Citus refuses now() in a RETURNING, so "due" is computed in the final SELECT. */
const INSERT_DEDUPED_IN_PARTITION = statement('insert_deduped_in_partition', insertDedupedText(true));

/**
 * Who holds what INSERT_DEDUPED conflicted with: run $1 itself (an idempotent start by id), else the
 * active run of workflow $2 with dedupe key $3. Indexes: durable_runs_pkey, durable_runs_dedupe_idx.
 */
const SELECT_DEDUPE_HOLDER = statement(
  'select_dedupe_holder',
  `
SELECT id, workflow_name, id = $1 AS same_id FROM durable_runs
WHERE id = $1 OR (workflow_name = $2 AND dedupe_key = $3 AND status IN ${ACTIVE})
ORDER BY id = $1 DESC LIMIT 1`,
);

/**
 * A debounced start: the run of workflow $2 with debounce key $13 that has not started yet takes
 * this start (its start moves to now + $16 ms, never past its debounce_until, and never earlier than
 * it was: now() is when this start's transaction began, so a start that began first and commits last
 * must not pull the run ahead of the start it waited for; least ignores a null debounce_until; with
 * $15 = 'last' its input becomes $4), or, if there is none, a new run is created that starts in
 * $16 ms, at the latest
 * $17 ms from now (debounce_until; null = no maximum). $1 … $12 as INSERT_DEDUPED ($1: the id of a new
 * run; $6 and $7 are null: a debounced start has no runAt or delay), $14 history. Row lock: the pending run is updated in place, so a claim taking it at
 * the same instant wins or loses cleanly (the UPDATE re-checks status after the lock; a run that
 * started is not pushed, a new run is made). No row: a concurrent start created the run first (the
 * caller runs the statement again; it then finds that run). Index: durable_runs_debounce_idx.
 */
const DEBOUNCE_START = statement(
  'debounce_start',
  `
WITH cur AS (
  UPDATE durable_runs r
  SET available_at = least(greatest(r.available_at, now() + $16::float8 * interval '1 millisecond'), r.debounce_until),
      input = CASE WHEN $15::text = 'last' THEN $4::jsonb ELSE r.input END, updated_at = now()
  WHERE r.workflow_name = $2 AND r.debounce_key = $13 AND r.status = 'PENDING' AND r.started_at IS NULL
  RETURNING r.id, r.available_at),
ins AS (
  INSERT INTO durable_runs (${COLUMNS}, debounce_key, debounce_until)
  SELECT $1, $2, $3, 'PENDING', $4::jsonb, $5, now() + least($16::float8, coalesce($17::float8, $16::float8)) * interval '1 millisecond',
         now() + $8::float8 * interval '1 millisecond', $9, $10, $11, $12::text[], $18::jsonb, $13, now() + $17::float8 * interval '1 millisecond'
  WHERE NOT EXISTS (SELECT 1 FROM cur) AND $6::timestamptz IS NULL AND $7::float8 IS NULL -- (never set with debounce)
  ON CONFLICT DO NOTHING
  RETURNING id, queue, available_at),
hist AS (${history(
    '$14',
    `SELECT id, 'created', jsonb_build_object('workflow', $2::text, 'queue', queue, 'debounceKey', $13::text) FROM ins
  UNION ALL SELECT id, 'debounced', jsonb_build_object('input', $15::text, 'startsAt', available_at) FROM cur WHERE true`,
  )})
SELECT id, available_at, false AS created FROM cur UNION ALL SELECT id, available_at, true FROM ins`,
);

const common = (r: NewRun) => [
  r.id,
  r.workflowName,
  r.queue,
  r.input,
  r.priority,
  r.runAt,
  r.delayMs,
  r.timeoutMs,
  r.appVersion,
  r.concurrencyKey,
  r.traceparent ?? null,
  r.tags,
];

/**
 * Distributed mode: the partition of dedupe or debounce key `key` of workflow `workflowName`, where
 * its runs live (the unique indexes that make a key singular are per workflow and key, and hold per
 * partition only). The text hashed ends in `"]`, so no child suffix is ever stripped from it.
 */
export function keyPartition(workflowName: string, key: string, count: number): number {
  return partitionOf(JSON.stringify([workflowName, key]), count);
}

/** The store of keyed run r: its partition's (distributed mode), which must be its key's (engine/keyed-start.ts mints the id so). */
function keyedStore(store: Store, r: NewRun, key: string): Store {
  const count = store.layout.partitions;
  if (count !== null && store.partition === undefined && partitionOf(r.id, count) !== keyPartition(r.workflowName, key, count))
    throw new Error(`run ${r.id} is not in the partition of its key ${key}`);
  return runStore(store, r.id);
}

/** Inserts a run with a dedupe key; false on a conflict (its id exists, or an active run holds the key). */
export async function insertDeduped(store: Store, r: NewRun, dedupeKey: string): Promise<boolean> {
  if (store.sql.dialect === 'mysql') return mysql.insertDeduped(store, r, dedupeKey);
  const s = keyedStore(store, r, dedupeKey);
  const text = s.partition === undefined ? INSERT_DEDUPED : INSERT_DEDUPED_IN_PARTITION;
  return (await s.sql.query(text, [...common(r), dedupeKey, store.history, r.context ?? null])).length === 1;
}

/** What a dedupe conflict was with: the run with the same id, or the active run holding the key; null if it ended meanwhile. */
export async function dedupeHolder(
  store: Store,
  r: NewRun,
  dedupeKey: string,
): Promise<{ id: string; workflowName: string; sameId: boolean } | null> {
  if (store.sql.dialect === 'mysql') return mysql.dedupeHolder(store, r, dedupeKey);
  const [row] = await keyedStore(store, r, dedupeKey).sql.query<{ id: string; workflow_name: string; same_id: boolean }>(
    SELECT_DEDUPE_HOLDER,
    [r.id, r.workflowName, dedupeKey],
  );
  return row ? { id: row.id, workflowName: row.workflow_name, sameId: row.same_id === true } : null;
}

/** A debounced start: the pending run it joined (created false) or the new run; null when a concurrent start won the race. */
export async function debounceStart(
  store: Store,
  r: NewRun,
  d: DebounceStart,
): Promise<{ id: string; created: boolean; startsAt: Date } | null> {
  if (store.sql.dialect === 'mysql') return mysql.debounceStart(store, r, d);
  const [row] = await keyedStore(store, r, d.key).sql.query<{ id: string; created: boolean; available_at: Date }>(DEBOUNCE_START, [
    ...common(r),
    d.key,
    store.history,
    d.input,
    d.periodMs,
    d.maxDelayMs,
    r.context ?? null,
  ]);
  return row ? { id: row.id, created: row.created === true, startsAt: new Date(row.available_at) } : null;
}
