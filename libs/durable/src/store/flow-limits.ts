/** Flow control: the queue limits table (set at runtime, synced from the options at boot) and what the admin API shows of it. */
import * as mysql from './mysql/flow-limits.js';
import { statement } from './statement.js';
import { DUE_BY, FLOW_LIMITS_CHANNEL } from './sql-fragments.js';
import { iso, rowsOfEach, runStore, type Store } from './store.js';
export type { RateLimitView, QueueLimitsView, QueueLimitsUsage, KeyUsage } from './admin-rows.js';
import { limitValues, toLimits, type KeyUsage, type QueueLimitsUsage, type QueueLimitsView } from './admin-rows.js';
export { limitValues, toLimits } from './admin-rows.js';
export type { LimitValues } from './admin-rows.js';
import type { LimitValues } from './admin-rows.js';
export type { RunBlockersRow } from './admin-rows.js';
import type { RunBlockersRow } from './admin-rows.js';

/** A limit that is not null: the row makes the queue a limited one (the plain claim leaves it alone). */
export const HAS_LIMIT = `(global_concurrency IS NOT NULL OR key_concurrency IS NOT NULL OR rate_limit IS NOT NULL OR key_rate_limit IS NOT NULL)`;

/**
 * Rate limits' sliding windows (durable_rate_windows, key '' for the queue's own): how many starts of
 * (queue, key) the `period` ms up to `at` hold (the admin views: now; the claim: its own clock, see
 * CLAIM_CLOCK in flow-claim.ts). Read at the precision starts are stored at (ms), so a start admitted
 * at t is at least `period` after every start the window still counted.
 */
export const startsInWindow = (
  queue: string,
  key: string,
  period: string,
  at = 'now()::timestamptz(3)',
) => `(SELECT count(*) FROM durable_rate_windows rw, unnest(rw.starts) s
  WHERE rw.queue = ${queue} AND rw.key = ${key} AND s > ${at} - ${period} * interval '1 millisecond')::int`;

/** When the window of (queue, key) has room for the next start: its `limit`-th most recent start + period; null while it has room. */
export const rateFreeAt = (queue: string, key: string, limit: string, period: string) =>
  `(SELECT (array_agg(s ORDER BY s DESC))[${limit}] + ${period} * interval '1 millisecond' FROM durable_rate_windows rw, unnest(rw.starts) s
  WHERE rw.queue = ${queue} AND rw.key = ${key} AND s > now()::timestamptz(3) - ${period} * interval '1 millisecond')`;

/** The limit columns, in the order the statements take them. */
const LIMIT_COLUMNS = `global_concurrency, key_concurrency, rate_limit, rate_period_ms, key_rate_limit, key_rate_period_ms`;

/**
 * Sets a queue's limits at runtime ($1 queue, $2 globalConcurrency, $3 keyConcurrency, $4 rate limit,
 * $5 its period ms, $6 key rate limit, $7 its period ms; null = no such limit): source 'runtime', kept across restarts (the boot sync leaves it alone) until reset. Waits
 * for a claim in progress on the queue (row lock). Notifies every instance (FLOW_LIMITS_CHANNEL) so
 * each switches its claim path at once. Index: durable_queue_limits_pkey. The clock is read in the
 * VALUES only (excluded.updated_at): Citus refuses a function that is not IMMUTABLE in DO UPDATE SET.
 */
const SET_QUEUE_LIMITS = statement(
  'set_queue_limits',
  `
WITH s AS (
  INSERT INTO durable_queue_limits (queue, ${LIMIT_COLUMNS}, source, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, 'runtime', now())
  ON CONFLICT (queue) DO UPDATE SET global_concurrency = $2, key_concurrency = $3, rate_limit = $4, rate_period_ms = $5,
                                    key_rate_limit = $6, key_rate_period_ms = $7, source = 'runtime', updated_at = excluded.updated_at
  RETURNING queue, ${LIMIT_COLUMNS}, source, updated_at)
SELECT s.*, pg_notify('${FLOW_LIMITS_CHANNEL}', s.queue) IS NULL AS notified FROM s`,
);

/**
 * Boot: the limits declared in this process's options ($1 queues, $2 globalConcurrency, $3
 * keyConcurrency, $5 rate limit, $6 its period ms, $7 key rate limit, $8 its period ms; arrays) become
 * the rows of those queues, unless a runtime limit is set there (source 'runtime' wins until reset);
 * declared rows of queues in $4 (the queues this process declares options for) that no longer
 * declare a limit are deleted. Returns the queues changed;
 * notifies every instance of each.
 */
const SYNC_DECLARED_LIMITS = statement(
  'sync_declared_limits',
  `
WITH d AS (SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $5::int[], $6::int[], $7::int[], $8::int[]) AS d(queue, g, k, r, rp, kr, krp)),
up AS (
  INSERT INTO durable_queue_limits AS l (queue, ${LIMIT_COLUMNS}, source, updated_at)
  SELECT queue, g, k, r, rp, kr, krp, 'declared', now() FROM d
  ON CONFLICT (queue) DO UPDATE SET global_concurrency = excluded.global_concurrency, key_concurrency = excluded.key_concurrency,
                                    rate_limit = excluded.rate_limit, rate_period_ms = excluded.rate_period_ms,
                                    key_rate_limit = excluded.key_rate_limit, key_rate_period_ms = excluded.key_rate_period_ms,
                                    updated_at = excluded.updated_at
  WHERE l.source = 'declared' AND (l.${LIMIT_COLUMNS.replaceAll(', ', ', l.')}) IS DISTINCT FROM (excluded.${LIMIT_COLUMNS.replaceAll(', ', ', excluded.')})
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
 * Every limits row with what the queue is doing: runs executing (index durable_runs_running_idx),
 * due runs waiting to be claimed (durable_runs_claim_idx; counted up to 100,000 per queue), and its
 * rate window: starts in it now, and when it next has room (null: it has room now).
 */
const SELECT_QUEUE_LIMITS = statement(
  'select_queue_limits',
  `
SELECT l.queue, l.${LIMIT_COLUMNS.replaceAll(', ', ', l.')}, l.source, l.updated_at,
  (SELECT count(*) FROM durable_runs r WHERE r.queue = l.queue AND r.status = 'RUNNING')::int AS running,
  ${startsInWindow('l.queue', `''`, 'l.rate_period_ms')} AS rate_used,
  ${rateFreeAt('l.queue', `''`, 'l.rate_limit', 'l.rate_period_ms')} AS rate_free_at,
  (SELECT count(*) FROM (SELECT 1 FROM durable_runs r WHERE r.queue = l.queue AND r.status = 'PENDING'
     AND r.available_at <= ${DUE_BY} LIMIT 100000) x)::int AS due
FROM durable_queue_limits l ORDER BY l.queue`,
);

/**
 * The busiest concurrency keys of queue $1: runs executing and due runs waiting, per key, at most $2
 * keys, most executing first; with the queue's keyRateLimit, each key's starts in its window and when it next has room. Reads the queue's unfinished runs (PENDING through durable_runs_claim_idx,
 * RUNNING through durable_runs_running_idx); due runs are counted up to 100,000.
 */
const SELECT_KEY_USAGE = statement(
  'select_key_usage',
  `
SELECT u.*, ${startsInWindow('$1', 'u.key', 'l.key_rate_period_ms')} AS rate_used,
  ${rateFreeAt('$1', 'u.key', 'l.key_rate_limit', 'l.key_rate_period_ms')} AS rate_free_at
FROM (
SELECT k AS key, sum(running)::int AS running, sum(due)::int AS due FROM (
  SELECT concurrency_key AS k, count(*) AS running, 0 AS due FROM durable_runs
  WHERE queue = $1 AND status = 'RUNNING' AND concurrency_key IS NOT NULL GROUP BY concurrency_key
  UNION ALL
  SELECT k, 0, count(*) FROM (SELECT concurrency_key AS k FROM durable_runs
    WHERE queue = $1 AND status = 'PENDING' AND available_at <= ${DUE_BY} AND concurrency_key IS NOT NULL LIMIT 100000) p GROUP BY k) x
GROUP BY k ORDER BY 2 DESC, 3 DESC, 1 LIMIT $2) u LEFT JOIN durable_queue_limits l ON l.queue = $1
ORDER BY u.running DESC, u.due DESC, u.key`,
);

/**
 * Why run $1 has not started: its state, the database clock, its queue's limits, how many runs of
 * the queue and of its key execute now, when their rate windows have room, and its debounce. Indexes: durable_runs_pkey, durable_queue_limits_pkey,
 * durable_runs_running_idx.
 */
const SELECT_RUN_BLOCKERS = statement(
  'select_run_blockers',
  `
SELECT r.status, r.queue, r.concurrency_key, r.available_at, now() AS db_now, r.available_at <= ${DUE_BY} AS due,
  l.${LIMIT_COLUMNS.replaceAll(', ', ', l.')}, r.debounce_key, r.debounce_until, r.started_at IS NULL AS never_started,
  ${rateFreeAt('r.queue', `''`, 'l.rate_limit', 'l.rate_period_ms')} AS rate_free_at,
  ${rateFreeAt('r.queue', 'r.concurrency_key', 'l.key_rate_limit', 'l.key_rate_period_ms')} AS key_rate_free_at,
  (SELECT count(*) FROM durable_runs x WHERE x.queue = r.queue AND x.status = 'RUNNING')::int AS queue_running,
  (SELECT count(*) FROM durable_runs x WHERE x.queue = r.queue AND x.status = 'RUNNING'
     AND x.concurrency_key = r.concurrency_key)::int AS key_running
FROM durable_runs r LEFT JOIN durable_queue_limits l ON l.queue = r.queue
WHERE r.id = $1`,
);

/** Runs of queue $1 executing now, and of those with concurrency key $2 (one partition's, in distributed mode). Index: durable_runs_running_idx. */
const SELECT_RUNNING_COUNTS = statement(
  'select_running_counts',
  `SELECT count(*)::int AS queue_running, count(*) FILTER (WHERE concurrency_key = $2)::int AS key_running
   FROM durable_runs WHERE queue = $1 AND status = 'RUNNING'`,
);

const dateOrNull = (v: unknown): Date | null => (v == null ? null : new Date(v as string));

export async function setQueueLimits(store: Store, queue: string, limits: LimitValues): Promise<QueueLimitsView> {
  if (store.sql.dialect === 'mysql') return mysql.setQueueLimits(store, queue, limits);
  const [row] = await store.sql.query<Record<string, unknown>>(SET_QUEUE_LIMITS, [queue, ...limitValues(limits)]);
  return toLimits(row);
}

export async function syncDeclaredLimits(
  store: Store,
  declared: Array<{ queue: string } & LimitValues>,
  queues: string[],
): Promise<string[]> {
  if (store.sql.dialect === 'mysql') return mysql.syncDeclaredLimits(store, declared, queues);
  const columns = declared.map(limitValues);
  const column = (i: number) => columns.map((c) => c[i]);
  const rows = await store.sql.query<{ queue: string }>(SYNC_DECLARED_LIMITS, [
    declared.map((d) => d.queue),
    column(0),
    column(1),
    queues,
    column(2),
    column(3),
    column(4),
    column(5),
  ]);
  return rows.map((r) => r.queue);
}

export async function deleteQueueLimits(store: Store, queue: string): Promise<boolean> {
  if (store.sql.dialect === 'mysql') return mysql.deleteQueueLimits(store, queue);
  return (await store.sql.query(DELETE_QUEUE_LIMITS, [queue])).length > 0;
}

export async function limitedQueues(store: Store): Promise<Set<string>> {
  return new Set((await store.sql.query<{ queue: string }>(SELECT_LIMITED_QUEUES)).map((r) => r.queue));
}

/** Rows of one statement from every partition, merged by `id`: the `sum` columns added up, the others from the first partition. */
function mergedRows(rows: Record<string, unknown>[], id: string, sum: string[]): Record<string, unknown>[] {
  const merged = new Map<unknown, Record<string, unknown>>();
  for (const r of rows) {
    const m = merged.get(r[id]);
    if (!m) merged.set(r[id], { ...r });
    else for (const c of sum) m[c] = Number(m[c]) + Number(r[c]);
  }
  return [...merged.values()];
}

export async function listQueueLimits(store: Store): Promise<QueueLimitsUsage[]> {
  if (store.sql.dialect === 'mysql') return mysql.listQueueLimits(store);
  // Distributed mode: each partition counts its runs (the limits and windows are shared), added up per queue.
  const rows = mergedRows(await rowsOfEach<Record<string, unknown>>(store, SELECT_QUEUE_LIMITS), 'queue', ['running', 'due']);
  return rows.map((r) => ({
    ...toLimits(r),
    running: Number(r.running),
    due: Number(r.due),
    rateUsed: Number(r.rate_used),
    rateLimitedUntil: iso(r.rate_free_at),
  }));
}

export async function keyUsage(store: Store, queue: string, limit: number): Promise<KeyUsage[]> {
  if (store.sql.dialect === 'mysql') return mysql.keyUsage(store, queue, limit);
  const each = await rowsOfEach<Record<string, unknown>>(store, SELECT_KEY_USAGE, [queue, limit]);
  // Distributed mode: each partition's busiest keys, added up per key (a key's runs in a partition where it is not among the busiest are left out).
  const rows =
    store.layout.partitions === null
      ? each
      : mergedRows(each, 'key', ['running', 'due'])
          .sort(
            (a, b) => Number(b.running) - Number(a.running) || Number(b.due) - Number(a.due) || (String(a.key) < String(b.key) ? -1 : 1),
          )
          .slice(0, limit);
  return rows.map((r) => ({
    key: r.key as string,
    running: Number(r.running),
    due: Number(r.due),
    rateUsed: Number(r.rate_used),
    rateLimitedUntil: iso(r.rate_free_at),
  }));
}

export async function runBlockers(store: Store, id: string): Promise<RunBlockersRow | null> {
  if (store.sql.dialect === 'mysql') return mysql.runBlockers(store, id);
  const [r] = await runStore(store, id).sql.query<Record<string, unknown>>(SELECT_RUN_BLOCKERS, [id]);
  if (!r) return null;
  if (store.layout.partitions !== null) {
    // Distributed mode: the run was read in its partition; its queue's and key's running runs are counted in every partition.
    const each = await rowsOfEach<{ queue_running: number; key_running: number }>(store, SELECT_RUNNING_COUNTS, [
      r.queue,
      r.concurrency_key,
    ]);
    r.queue_running = each.reduce((n, c) => n + Number(c.queue_running), 0);
    r.key_running = each.reduce((n, c) => n + Number(c.key_running), 0);
  }
  const { globalConcurrency, keyConcurrency, rateLimit, keyRateLimit } = toLimits(r);
  return {
    status: r.status as string,
    queue: r.queue as string,
    concurrencyKey: (r.concurrency_key as string | null) ?? null,
    availableAt: dateOrNull(r.available_at),
    dbNow: new Date(r.db_now as string),
    due: r.due === true,
    globalConcurrency,
    keyConcurrency,
    rateLimit,
    keyRateLimit,
    queueRunning: Number(r.queue_running),
    keyRunning: Number(r.key_running),
    rateFreeAt: dateOrNull(r.rate_free_at),
    keyRateFreeAt: dateOrNull(r.key_rate_free_at),
    debounceKey: r.never_started === true && r.status === 'PENDING' ? ((r.debounce_key as string | null) ?? null) : null,
    debounceUntil: dateOrNull(r.debounce_until),
  };
}
