/**
 * Lifecycle hooks: each consumer reads the run history (durable_run_events) from its own cursor
 * (durable_hook_cursors), under a lease so that one instance at a time delivers to it. The cursor
 * moves only after delivery: a crash in between delivers the same events again (at least once).
 * Distributed mode: one cursor per (consumer, partition), see partitioned-hooks.ts.
 */
import * as mysql from './mysql/hook-cursors.js';
import { listPartitionedHookCursors } from './partitioned-hooks.js';
import { statement } from './statement.js';
import type { Store } from './store.js';
export type { HookEventRow } from './rows.js';
import type { HookEventRow } from './rows.js';
export type { HookCursorRow } from './rows.js';
import type { HookCursorRow } from './rows.js';

/**
 * A new consumer's cursor, at the newest history row (a consumer gets what happens from its first
 * start on, not the past). $1 consumer. Existing cursor → nothing. Index: durable_run_events_pkey (max).
 */
const ENSURE_CURSOR = statement(
  'ensure_hook_cursor',
  `
INSERT INTO durable_hook_cursors (consumer, last_event_id)
SELECT $1, coalesce(max(id), 0) FROM durable_run_events
ON CONFLICT (consumer) DO NOTHING`,
);

/**
 * Takes (or renews) the consumer's lease and reads the history rows after its cursor, in one
 * statement. $1 consumer, $2 owner (worker id), $3 lease ms, $4 settle ms, $5 batch size, $6 history
 * kinds delivered. Rows are read in id order, at most $5, and the batch stops before the first row
 * younger than $4 ms: a row with a lower id whose transaction commits late is still read next
 * time (ids are taken at insert, rows become visible at commit). Returns `held` (0: another instance
 * holds the lease), `read` (rows read), `upto` (the last row read, whatever its kind: the cursor moves past the kinds
 * nobody listens to as well) and the rows of the kinds $6 with the run's workflow.
 * Locks: the cursor row (UPDATE). Index: durable_run_events_pkey (id range).
 */
const READ_HOOK_EVENTS = statement(
  'read_hook_events',
  `
WITH c AS (
  UPDATE durable_hook_cursors
  SET owner = $2, lease_expires_at = now() + $3::float8 * interval '1 millisecond', updated_at = now()
  WHERE consumer = $1 AND (owner IS NULL OR owner = $2 OR lease_expires_at < now())
  RETURNING last_event_id),
b0 AS (
  SELECT e.id, e.run_id, e.kind, e.detail, e.at FROM durable_run_events e
  WHERE e.id > (SELECT last_event_id FROM c)
  ORDER BY e.id LIMIT $5),
young AS (SELECT min(id) AS id FROM b0 WHERE at >= now() - $4::float8 * interval '1 millisecond'),
b AS (SELECT * FROM b0 WHERE (SELECT id FROM young) IS NULL OR b0.id < (SELECT id FROM young))
SELECT (SELECT count(*) FROM c)::int AS held, (SELECT max(id) FROM b)::text AS upto, (SELECT count(*) FROM b)::int AS read,
  (SELECT coalesce(json_agg(json_build_object('id', b.id::text, 'runId', b.run_id, 'kind', b.kind, 'detail', b.detail,
                                              'at', b.at, 'workflow', r.workflow_name) ORDER BY b.id), '[]'::json)
   FROM b LEFT JOIN durable_runs r ON r.id = b.run_id WHERE b.kind = ANY($6::text[])) AS events`,
);

/**
 * Moves the consumer's cursor forward after delivery, if this instance still holds its lease.
 * $1 consumer, $2 owner, $3 last delivered id. Never backwards. Locks: the cursor row.
 */
const ADVANCE_CURSOR = statement(
  'advance_hook_cursor',
  `
UPDATE durable_hook_cursors SET last_event_id = $3::bigint, updated_at = now()
WHERE consumer = $1 AND owner = $2 AND last_event_id < $3::bigint`,
);

/** Gives the consumer's lease up (shutdown): another instance delivers at once. $1 consumer, $2 owner. */
const RELEASE_CURSOR = statement(
  'release_hook_cursor',
  `
UPDATE durable_hook_cursors SET owner = NULL, lease_expires_at = NULL WHERE consumer = $1 AND owner = $2`,
);

/**
 * Every consumer with its position and how many history rows it has still to read (counted up to
 * $1). Admin API. Index: durable_run_events_pkey (id range per consumer, bounded by $1).
 */
const LIST_CURSORS = statement(
  'list_hook_cursors',
  `
SELECT c.consumer, c.last_event_id::text AS last_event_id, c.owner, c.lease_expires_at, c.updated_at,
       (SELECT count(*) FROM (SELECT 1 FROM durable_run_events e WHERE e.id > c.last_event_id LIMIT $1) x)::int AS behind
FROM durable_hook_cursors c ORDER BY c.consumer`,
);

export async function ensureHookCursor(store: Store, consumer: string): Promise<void> {
  if (store.sql.dialect === 'mysql') return mysql.ensureHookCursor(store, consumer);
  await store.sql.query(ENSURE_CURSOR, [consumer]);
}

export async function readHookEvents(
  store: Store,
  a: { consumer: string; owner: string; leaseMs: number; settleMs: number; limit: number; kinds: string[] },
): Promise<{ held: boolean; upto: string | null; read: number; events: HookEventRow[] }> {
  if (store.sql.dialect === 'mysql') return mysql.readHookEvents(store, a);
  const [row] = await store.sql.query<{ held: number; upto: string | null; read: number; events: unknown }>(READ_HOOK_EVENTS, [
    a.consumer,
    a.owner,
    a.leaseMs,
    a.settleMs,
    a.limit,
    a.kinds,
  ]);
  const events = (typeof row.events === 'string' ? JSON.parse(row.events) : row.events) as HookEventRow[];
  return { held: Number(row.held) === 1, upto: row.upto, read: Number(row.read), events };
}

export async function advanceHookCursor(store: Store, consumer: string, owner: string, lastId: string): Promise<void> {
  if (store.sql.dialect === 'mysql') return mysql.advanceHookCursor(store, consumer, owner, lastId);
  await store.sql.query(ADVANCE_CURSOR, [consumer, owner, lastId]);
}

export async function releaseHookCursor(store: Store, consumer: string, owner: string): Promise<void> {
  if (store.sql.dialect === 'mysql') return mysql.releaseHookCursor(store, consumer, owner);
  await store.sql.query(RELEASE_CURSOR, [consumer, owner]);
}

export async function listHookCursors(store: Store, behindLimit: number): Promise<HookCursorRow[]> {
  if (store.sql.dialect === 'mysql') return mysql.listHookCursors(store, behindLimit);
  if (store.layout.partitions !== null && store.partition === undefined) return listPartitionedHookCursors(store, behindLimit);
  const rows = await store.sql.query<Record<string, unknown>>(LIST_CURSORS, [behindLimit]);
  return rows.map((r) => ({
    consumer: r.consumer as string,
    lastEventId: r.last_event_id as string,
    owner: (r.owner as string | null) ?? null,
    leaseExpiresAt: r.lease_expires_at ? new Date(r.lease_expires_at as string) : null,
    updatedAt: new Date(r.updated_at as string),
    behind: Number(r.behind),
  }));
}
