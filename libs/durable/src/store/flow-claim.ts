/**
 * Flow control: the claim of a queue with cluster-wide limits (durable_queue_limits). Queues
 * without a limits row keep the plain CLAIM (store/leases.ts), which is unchanged but for a guard.
 *
 * Why a lock and a second statement: under READ COMMITTED every statement reads one snapshot, taken
 * when it starts. A claim that counted the executing runs in the same statement that waits for a
 * lock would count with a snapshot older than the lock, and miss what the previous holder claimed:
 * two instances claiming at once would both see a free slot. So the claim is one short transaction:
 * LOCK_QUEUE_LIMITS locks the queue's limits row (claims of a limited queue take turns, across all
 * instances), then CLAIM_LIMITED starts with a snapshot taken after the lock was granted, in which
 * every earlier claim of the queue has committed: its counts are exact. Runs leave RUNNING without
 * the lock (they end, suspend, are swept or released): that only frees slots, so a count can be
 * too high for an instant, never too low. No counter to keep in step: a run holds a slot exactly
 * while it is RUNNING, so a run whose worker was SIGKILLed frees its slots when the sweeper hands
 * its expired lease on.
 */
import { statement } from './statement.js';
import { DUE_BY } from './sql-fragments.js';
import { CLAIM_UPDATE, claim, claimedRun } from './leases.js';
import type { Store } from './store.js';
import type { ClaimedRun } from './rows.js';

/**
 * The limits row of queue $1, locked until the claim's transaction ends (FOR UPDATE waits: claims of
 * one limited queue take turns; a claim holds it for one statement). Index: durable_queue_limits_pkey.
 */
const LOCK_QUEUE_LIMITS = statement(
  'lock_queue_limits',
  `SELECT global_concurrency, key_concurrency FROM durable_queue_limits WHERE queue = $1 FOR UPDATE`,
);

/**
 * How many runs past the free room a claim looks at when keys are limited: runs of a key with
 * little room left are passed over for other keys within this window.
 */
const KEY_WINDOW = 4;

/**
 * Claim of a limited queue (run after LOCK_QUEUE_LIMITS, in its transaction). Parameters as CLAIM
 * ($1 queue, $2 free slots of this worker, $3 worker, $4 lease ms, $5 workflows, $6 history), plus
 * $7 globalConcurrency and $8 keyConcurrency (null = no such limit; read under the lock).
 * `running` counts the queue's RUNNING runs per concurrency key (index durable_runs_running_idx,
 * partial: only executing rows); `room` is what the queue-wide limit leaves. Keys at their limit are
 * skipped while reading the claim indexes (durable_runs_claim_idx, durable_runs_wake_idx), and of the
 * runs read, at most (limit - running) per key are taken, highest priority and oldest first.
 * Rows: candidates locked FOR UPDATE SKIP LOCKED (a sweep or cancel holding one is passed over);
 * those not taken are released at commit. Ends like CLAIM (CLAIM_UPDATE).
 */
const CLAIM_LIMITED = statement(
  'claim_limited',
  `
WITH running AS (
  SELECT concurrency_key AS k, count(*)::int AS n FROM durable_runs
  WHERE queue = $1 AND status = 'RUNNING' GROUP BY concurrency_key),
room AS (
  SELECT CASE WHEN $7::int IS NULL THEN $2::int
              ELSE greatest(0, least($2::int, $7::int - (SELECT coalesce(sum(n), 0)::int FROM running))) END AS n),
full_keys AS (SELECT k FROM running WHERE k IS NOT NULL AND n >= $8::int),
p AS (
  SELECT id, status AS prev, priority, available_at, concurrency_key FROM durable_runs
  WHERE queue = $1 AND status = 'PENDING' AND available_at <= ${DUE_BY} AND workflow_name = ANY($5::text[])
    AND (concurrency_key IS NULL OR concurrency_key NOT IN (SELECT k FROM full_keys))
  ORDER BY priority, available_at
  LIMIT (SELECT n FROM room) * (CASE WHEN $8::int IS NULL THEN 1 ELSE ${KEY_WINDOW} END)
  FOR UPDATE SKIP LOCKED),
w AS (
  SELECT id, status AS prev, priority, available_at, concurrency_key FROM durable_runs
  WHERE queue = $1 AND status = 'WAITING' AND available_at <= ${DUE_BY} AND workflow_name = ANY($5::text[])
    AND (concurrency_key IS NULL OR concurrency_key NOT IN (SELECT k FROM full_keys))
  ORDER BY available_at
  LIMIT (SELECT n FROM room) * (CASE WHEN $8::int IS NULL THEN 1 ELSE ${KEY_WINDOW} END)
  FOR UPDATE SKIP LOCKED),
ranked AS (
  SELECT d.*, row_number() OVER (PARTITION BY d.concurrency_key ORDER BY d.priority, d.available_at) AS rn
  FROM (SELECT * FROM p UNION ALL SELECT * FROM w) d),
c AS (
  SELECT ranked.id, ranked.prev FROM ranked LEFT JOIN running ON running.k = ranked.concurrency_key
  WHERE ranked.concurrency_key IS NULL OR $8::int IS NULL OR ranked.rn <= $8::int - coalesce(running.n, 0)
  ORDER BY ranked.priority, ranked.available_at
  LIMIT (SELECT n FROM room)),
${CLAIM_UPDATE}`,
);

/**
 * Claims up to `limit` due runs of a queue that has (or had) cluster-wide limits, within them. If
 * the limits were removed meanwhile, claims as the plain claim does (in the same transaction).
 */
export async function claimLimited(
  store: Store,
  queue: string,
  limit: number,
  owner: string,
  leaseMs: number,
  workflows: string[],
): Promise<{ runs: ClaimedRun[]; limited: boolean }> {
  return store.sql.transaction(async (sql) => {
    const tx: Store = { sql, history: store.history };
    const [row] = await sql.query<{ global_concurrency: number | null; key_concurrency: number | null }>(LOCK_QUEUE_LIMITS, [queue]);
    if (!row || (row.global_concurrency === null && row.key_concurrency === null)) {
      return { runs: await claim(tx, queue, limit, owner, leaseMs, workflows), limited: false };
    }
    const rows = await sql.query<Record<string, unknown>>(CLAIM_LIMITED, [
      queue,
      limit,
      owner,
      leaseMs,
      workflows,
      store.history,
      row.global_concurrency,
      row.key_concurrency,
    ]);
    return { runs: rows.map(claimedRun), limited: true };
  });
}
