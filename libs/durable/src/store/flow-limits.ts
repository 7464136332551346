/** Flow control: the queue limits table (set at runtime, synced from the options at boot) and what the admin API shows of it. */
import { statement } from './statement.js';
import { DUE_BY, FLOW_LIMITS_CHANNEL } from './sql-fragments.js';
import { iso, type Store } from './store.js';

/** A queue's cluster-wide limits as stored: declared in the options (synced at boot) or set at runtime. */
export interface QueueLimitsView {
  queue: string;
  globalConcurrency: number | null;
  keyConcurrency: number | null;
  source: 'declared' | 'runtime';
  updatedAt: string | null;
}

/** A limit that is not null: the row makes the queue a limited one (the plain claim leaves it alone). */
export const HAS_LIMIT = `(global_concurrency IS NOT NULL OR key_concurrency IS NOT NULL)`;

/**
 * Sets a queue's limits at runtime ($1 queue, $2 globalConcurrency, $3 keyConcurrency; null = no such
 * limit): source 'runtime', kept across restarts (the boot sync leaves it alone) until reset. Waits
 * for a claim in progress on the queue (row lock). Notifies every instance (FLOW_LIMITS_CHANNEL) so
 * each switches its claim path at once. Index: durable_queue_limits_pkey.
 */
const SET_QUEUE_LIMITS = statement(
  'set_queue_limits',
  `
WITH s AS (
  INSERT INTO durable_queue_limits (queue, global_concurrency, key_concurrency, source, updated_at)
  VALUES ($1, $2, $3, 'runtime', now())
  ON CONFLICT (queue) DO UPDATE SET global_concurrency = $2, key_concurrency = $3, source = 'runtime', updated_at = now()
  RETURNING queue, global_concurrency, key_concurrency, source, updated_at)
SELECT s.*, pg_notify('${FLOW_LIMITS_CHANNEL}', s.queue) IS NULL AS notified FROM s`,
);

/**
 * Boot: the limits declared in this process's options ($1 queues, $2 globalConcurrency, $3
 * keyConcurrency; arrays) become the rows of those queues, unless a runtime limit is set there
 * (source 'runtime' wins until reset); declared rows of queues in $4 (the queues this process
 * declares options for) that no longer declare a limit are deleted. Returns the queues changed;
 * notifies every instance of each.
 */
const SYNC_DECLARED_LIMITS = statement(
  'sync_declared_limits',
  `
WITH d AS (SELECT * FROM unnest($1::text[], $2::int[], $3::int[]) AS d(queue, g, k)),
up AS (
  INSERT INTO durable_queue_limits AS l (queue, global_concurrency, key_concurrency, source, updated_at)
  SELECT queue, g, k, 'declared', now() FROM d
  ON CONFLICT (queue) DO UPDATE SET global_concurrency = excluded.global_concurrency, key_concurrency = excluded.key_concurrency,
                                    updated_at = now()
  WHERE l.source = 'declared' AND (l.global_concurrency IS DISTINCT FROM excluded.global_concurrency
                                   OR l.key_concurrency IS DISTINCT FROM excluded.key_concurrency)
  RETURNING queue),
del AS (
  DELETE FROM durable_queue_limits l
  WHERE l.source = 'declared' AND l.queue = ANY($4::text[]) AND l.queue NOT IN (SELECT queue FROM d)
  RETURNING queue),
ch AS (SELECT queue FROM up UNION SELECT queue FROM del)
SELECT queue, pg_notify('${FLOW_LIMITS_CHANNEL}', queue) IS NULL AS notified FROM ch`,
);

/** Removes a queue's row (reset to what is declared: the caller re-syncs its declared limits). $1 queue. */
const DELETE_QUEUE_LIMITS = statement(
  'delete_queue_limits',
  `
WITH d AS (DELETE FROM durable_queue_limits WHERE queue = $1 RETURNING queue)
SELECT queue, pg_notify('${FLOW_LIMITS_CHANNEL}', queue) IS NULL AS notified FROM d`,
);

/** Queues that have a limit (the worker claims them with CLAIM_LIMITED). Small table, read whole. */
const SELECT_LIMITED_QUEUES = statement('select_limited_queues', `SELECT queue FROM durable_queue_limits WHERE ${HAS_LIMIT}`);

/**
 * Every limits row with what the queue is doing: runs executing (index durable_runs_running_idx), and
 * due runs waiting to be claimed (durable_runs_claim_idx; counted up to 100,000 per queue).
 */
const SELECT_QUEUE_LIMITS = statement(
  'select_queue_limits',
  `
SELECT l.queue, l.global_concurrency, l.key_concurrency, l.source, l.updated_at,
  (SELECT count(*) FROM durable_runs r WHERE r.queue = l.queue AND r.status = 'RUNNING')::int AS running,
  (SELECT count(*) FROM (SELECT 1 FROM durable_runs r WHERE r.queue = l.queue AND r.status = 'PENDING'
     AND r.available_at <= ${DUE_BY} LIMIT 100000) x)::int AS due
FROM durable_queue_limits l ORDER BY l.queue`,
);

/**
 * The busiest concurrency keys of queue $1: runs executing and due runs waiting, per key, at most $2
 * keys, most executing first. Reads the queue's unfinished runs (PENDING through durable_runs_claim_idx,
 * RUNNING through durable_runs_running_idx); due runs are counted up to 100,000.
 */
const SELECT_KEY_USAGE = statement(
  'select_key_usage',
  `
SELECT k AS key, sum(running)::int AS running, sum(due)::int AS due FROM (
  SELECT concurrency_key AS k, count(*) AS running, 0 AS due FROM durable_runs
  WHERE queue = $1 AND status = 'RUNNING' AND concurrency_key IS NOT NULL GROUP BY concurrency_key
  UNION ALL
  SELECT k, 0, count(*) FROM (SELECT concurrency_key AS k FROM durable_runs
    WHERE queue = $1 AND status = 'PENDING' AND available_at <= ${DUE_BY} AND concurrency_key IS NOT NULL LIMIT 100000) p GROUP BY k) x
GROUP BY k ORDER BY 2 DESC, 3 DESC, 1 LIMIT $2`,
);

/**
 * Why run $1 has not started: its state, the database clock, its queue's limits and how many runs
 * of the queue and of its key execute now. Indexes: durable_runs_pkey, durable_queue_limits_pkey,
 * durable_runs_running_idx.
 */
const SELECT_RUN_BLOCKERS = statement(
  'select_run_blockers',
  `
SELECT r.status, r.queue, r.concurrency_key, r.available_at, now() AS db_now, r.available_at <= ${DUE_BY} AS due,
  l.global_concurrency, l.key_concurrency,
  (SELECT count(*) FROM durable_runs x WHERE x.queue = r.queue AND x.status = 'RUNNING')::int AS queue_running,
  (SELECT count(*) FROM durable_runs x WHERE x.queue = r.queue AND x.status = 'RUNNING'
     AND x.concurrency_key = r.concurrency_key)::int AS key_running
FROM durable_runs r LEFT JOIN durable_queue_limits l ON l.queue = r.queue
WHERE r.id = $1`,
);

const toLimits = (r: Record<string, unknown>): QueueLimitsView => ({
  queue: r.queue as string,
  globalConcurrency: (r.global_concurrency as number | null) ?? null,
  keyConcurrency: (r.key_concurrency as number | null) ?? null,
  source: r.source as 'declared' | 'runtime',
  updatedAt: iso(r.updated_at),
});

export async function setQueueLimits(store: Store, queue: string, g: number | null, k: number | null): Promise<QueueLimitsView> {
  const [row] = await store.sql.query<Record<string, unknown>>(SET_QUEUE_LIMITS, [queue, g, k]);
  return toLimits(row);
}

export async function syncDeclaredLimits(
  store: Store,
  declared: Array<{ queue: string; globalConcurrency: number | null; keyConcurrency: number | null }>,
  queues: string[],
): Promise<string[]> {
  const rows = await store.sql.query<{ queue: string }>(SYNC_DECLARED_LIMITS, [
    declared.map((d) => d.queue),
    declared.map((d) => d.globalConcurrency),
    declared.map((d) => d.keyConcurrency),
    queues,
  ]);
  return rows.map((r) => r.queue);
}

export async function deleteQueueLimits(store: Store, queue: string): Promise<boolean> {
  return (await store.sql.query(DELETE_QUEUE_LIMITS, [queue])).length > 0;
}

export async function limitedQueues(store: Store): Promise<Set<string>> {
  return new Set((await store.sql.query<{ queue: string }>(SELECT_LIMITED_QUEUES)).map((r) => r.queue));
}

/** A queue's limits with its runs executing now and its due runs waiting to be claimed. */
export interface QueueLimitsUsage extends QueueLimitsView {
  running: number;
  due: number;
}

export async function listQueueLimits(store: Store): Promise<QueueLimitsUsage[]> {
  const rows = await store.sql.query<Record<string, unknown>>(SELECT_QUEUE_LIMITS);
  return rows.map((r) => ({ ...toLimits(r), running: Number(r.running), due: Number(r.due) }));
}

export async function keyUsage(store: Store, queue: string, limit: number): Promise<Array<{ key: string; running: number; due: number }>> {
  return store.sql.query(SELECT_KEY_USAGE, [queue, limit]);
}

/** What SELECT_RUN_BLOCKERS reads about one run. */
export interface RunBlockersRow {
  status: string;
  queue: string;
  concurrencyKey: string | null;
  availableAt: Date | null;
  dbNow: Date;
  due: boolean;
  globalConcurrency: number | null;
  keyConcurrency: number | null;
  queueRunning: number;
  keyRunning: number;
}

export async function runBlockers(store: Store, id: string): Promise<RunBlockersRow | null> {
  const [r] = await store.sql.query<Record<string, unknown>>(SELECT_RUN_BLOCKERS, [id]);
  if (!r) return null;
  return {
    status: r.status as string,
    queue: r.queue as string,
    concurrencyKey: (r.concurrency_key as string | null) ?? null,
    availableAt: r.available_at == null ? null : new Date(r.available_at as string),
    dbNow: new Date(r.db_now as string),
    due: r.due === true,
    globalConcurrency: (r.global_concurrency as number | null) ?? null,
    keyConcurrency: (r.key_concurrency as number | null) ?? null,
    queueRunning: Number(r.queue_running),
    keyRunning: Number(r.key_running),
  };
}
