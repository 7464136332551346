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
import * as mysql from './mysql/flow-claim.js';
import { claimLimitedAcross } from './partitioned-flow-claim.js';
import { statement } from './statement.js';
import { DUE_BY } from './sql-fragments.js';
import { startsInWindow } from './flow-limits.js';
import { claim, claimIdleLimitMs, type ClaimRequest } from './leases.js';
import { claimedRun, claimedValues, claimUpdate, QUEUE_ORDER } from './claim-sql.js';
import type { Store } from './store.js';
import type { ClaimedRun } from './rows.js';

/**
 * The limits row of queue $1, locked until the claim's transaction ends (FOR UPDATE waits: claims of
 * one limited queue take turns; a claim holds it for one statement). Index: durable_queue_limits_pkey.
 */
const LOCK_QUEUE_LIMITS = statement(
  'lock_queue_limits',
  `SELECT global_concurrency, key_concurrency, rr_key, rate_limit, rate_period_ms, key_rate_limit, key_rate_period_ms
   FROM durable_queue_limits WHERE queue = $1 FOR UPDATE`,
);

/**
 * First statement of a limited claim's transaction: the session is ended by Postgres if it sits idle
 * in the transaction longer than $1 ms. The transaction holds its queue's limits row, which every
 * limited claim of the queue waits for; a process that stops between two of its statements (a long
 * pause, SIGSTOP, a frozen VM) would otherwise hold up the queue on every instance until it came
 * back. The statements themselves follow each other at once, so only a stalled process meets it.
 */
const CLAIM_IDLE_LIMIT = statement('claim_idle_limit', `SELECT set_config('idle_in_transaction_session_timeout', $1, true) AS v`);

export { claimIdleLimitMs } from './leases.js';

/**
 * How many runs past the free room the claim reads from the head of the queue (runs without a key,
 * and woken runs), and so how many rows it may lock and release.
 */
const WINDOW = 4;

/** The next key after `after` that has PENDING runs in queue $1 (one probe of durable_runs_key_idx). */
const nextKey = (after: string, upTo = '') => `(SELECT concurrency_key FROM durable_runs
    WHERE queue = $1 AND status = 'PENDING' AND concurrency_key IS NOT NULL AND concurrency_key > ${after}${upTo}
    ORDER BY concurrency_key LIMIT 1)`;

/**
 * The time this claim's starts count at, in its rate windows and as the runs' started_at: the
 * database's clock read in CLAIM_LIMITED, so after the limits row was locked — not now(), the time
 * the claim's transaction began. Claims of a queue hold that lock in turn, so their clocks follow the
 * order they count and append in: each sees every start before its own, and trims from its windows
 * only starts no later claim can count. With now(), a claim that began, waited (a busy worker between
 * its BEGIN and its turn, or the lock), then claimed after a later one, counted at its older time in a
 * window the later claim had already trimmed: 119 starts in one 10-s window under a limit of 100
 * across three processes (test/flow/rate-window-clock.spec.ts). Never earlier than the queue
 * window's last start, should the clock step back.
 */
const CLAIM_CLOCK = `clock AS (
  SELECT greatest(clock_timestamp()::timestamptz(3), (SELECT last_start_at FROM durable_rate_windows WHERE queue = $1 AND key = '')) AS t)`;
const AT = '(SELECT t FROM clock)';

/**
 * Rate limits, in CLAIM_LIMITED ($11 rateLimit, $12 its period ms, $13 keyRateLimit, $14 its period ms;
 * null = none). Every claim of a run counts as a start (a first start, a resume after a durable wait or
 * a crash). The queue's window caps the room (slots: what the concurrency limits and the worker leave).
 */
const RATE_ROOM = `room AS (
  SELECT CASE WHEN $11::int IS NULL THEN n ELSE greatest(0, least(n, $11::int - ${startsInWindow('$1', `''`, '$12::int', AT)})) END AS n
  FROM slots)`;

/** A candidate of a key is taken only while its key's window has room (rn: its rank within its key). */
const KEY_RATE_ROOM = `(ranked.concurrency_key IS NULL OR $13::int IS NULL
         OR ranked.rn <= $13::int - ${startsInWindow('$1', 'ranked.concurrency_key', '$14::int', AT)})`;

/**
 * The starts of this claim appended to the windows (the queue's, key '', and each key's), each kept to
 * its newest `limit` starts within its period (both at the claim's clock). Under the limits row lock: the next claim of the queue,
 * on any instance, reads them (its snapshot is taken after the lock).
 */
const window = (limit: string, period: string) => `starts = (SELECT array_agg(s ORDER BY s) FROM (
      SELECT s FROM unnest(win.starts || excluded.starts) s WHERE s > ${AT} - ${period}::int * interval '1 millisecond'
      ORDER BY s DESC LIMIT ${limit}::int) t), last_start_at = excluded.last_start_at`;
const RATE_WINDOWS = `rate_q AS (
  INSERT INTO durable_rate_windows AS win (queue, key, starts, last_start_at)
  SELECT $1, '', array_fill(${AT}, ARRAY[count(*)::int]), ${AT} FROM c HAVING $11::int IS NOT NULL AND count(*) > 0
  ON CONFLICT (queue, key) DO UPDATE SET ${window('$11', '$12')}),
rate_k AS (
  INSERT INTO durable_rate_windows AS win (queue, key, starts, last_start_at)
  SELECT $1, c.concurrency_key, array_fill(${AT}, ARRAY[count(*)::int]), ${AT} FROM c
  WHERE $13::int IS NOT NULL AND c.concurrency_key IS NOT NULL GROUP BY c.concurrency_key
  ON CONFLICT (queue, key) DO UPDATE SET ${window('$13', '$14')})`;

/**
 * Claim of a limited queue (run after LOCK_QUEUE_LIMITS, in its transaction). Parameters as CLAIM
 * ($1 queue, $2 free slots of this worker, $3 worker, $4 lease ms, $5 workflows, $6 history), plus
 * $7 globalConcurrency and $8 keyConcurrency (null = no such limit) and $9 the round-robin cursor,
 * all read under the lock, $10 the app versions whose runs this worker claims (engine option
 * runVersions; null = any, as CLAIM_VERSIONS), and $11 … $14 the rate limits (RATE_ROOM).
 * - running: the queue's RUNNING runs per concurrency key (durable_runs_running_idx, partial: only
 *   executing rows); room: what the queue-wide limit and the worker's free slots leave.
 * - Keys take turns (fairness): the keys with PENDING runs are read in key order starting after the
 *   cursor and wrapping around (a loose index scan of durable_runs_key_idx: one probe per key), at
 *   most room + (keys at their limit) + 1 of them; each key not at its limit offers its first due
 *   runs in QUEUE_ORDER (see leases.ts), up to its free slots. The runs are taken by priority, then round by round (every key's
 *   first run, then every key's second, …), keys in scan order. Runs without a key are one more
 *   "key", read from the head of the queue (durable_runs_claim_idx); woken WAITING runs go first
 *   within their key (durable_runs_wake_idx). The cursor moves to the last key served (or the last
 *   key read, if the room was not filled), so a queue with more keys than room serves them all in turn.
 * Rows: candidates are locked FOR UPDATE SKIP LOCKED (a sweep or cancel holding one is passed over);
 * those not taken are released at commit. Ends like CLAIM (claimUpdate), the runs' started_at at its clock.
 */
const CLAIM_LIMITED = statement(
  'claim_limited',
  `
WITH RECURSIVE ${CLAIM_CLOCK},
running AS (
  SELECT concurrency_key AS k, count(*)::int AS n FROM durable_runs
  WHERE queue = $1 AND status = 'RUNNING' GROUP BY concurrency_key),
slots AS (
  SELECT CASE WHEN $7::int IS NULL THEN $2::int
              ELSE greatest(0, least($2::int, $7::int - (SELECT coalesce(sum(n), 0)::int FROM running))) END AS n),
${RATE_ROOM},
full_keys AS (SELECT k FROM running WHERE k IS NOT NULL AND n >= $8::int),
budget AS (SELECT (SELECT n FROM room) + (SELECT count(*) FROM full_keys)::int + 1 AS n),
after_cur(k, pos) AS (
  SELECT ${nextKey(`coalesce($9::text, '')`)}, 1 WHERE (SELECT n FROM room) > 0
  UNION ALL
  SELECT ${nextKey('a.k')}, a.pos + 1 FROM after_cur a WHERE a.k IS NOT NULL AND a.pos < (SELECT n FROM budget)),
wrapped(k, pos) AS (
  SELECT ${nextKey(`''`, ' AND concurrency_key <= $9::text')}, (SELECT count(k) FROM after_cur)::int + 1
  WHERE $9::text IS NOT NULL AND (SELECT n FROM room) > 0 AND (SELECT count(k) FROM after_cur) < (SELECT n FROM budget)
  UNION ALL
  SELECT ${nextKey('w.k', ' AND concurrency_key <= $9::text')}, w.pos + 1
  FROM wrapped w WHERE w.k IS NOT NULL AND w.pos < (SELECT n FROM budget)),
scanned AS (SELECT k, pos FROM after_cur WHERE k IS NOT NULL UNION ALL SELECT k, pos FROM wrapped WHERE k IS NOT NULL),
heads AS (
  SELECT h.*, s.pos FROM scanned s CROSS JOIN LATERAL (
    SELECT r.id, r.status AS prev, r.priority, r.order_at, r.available_at, r.concurrency_key, ${claimedValues(AT, 'r.')} FROM durable_runs r
    WHERE r.queue = $1 AND r.status = 'PENDING' AND r.concurrency_key = s.k AND r.available_at <= ${DUE_BY}
      AND r.workflow_name = ANY($5::text[])
      AND ($10::text[] IS NULL OR r.app_version IS NULL OR r.app_version = ANY($10::text[]))
    ORDER BY r.priority, r.order_at, r.available_at
    -- its free slots (never negative: a limit lowered below what runs leaves none)
    LIMIT greatest(0, least((SELECT n FROM room),
                            coalesce($8::int - coalesce((SELECT n FROM running WHERE running.k = s.k), 0), (SELECT n FROM room))))
    FOR UPDATE SKIP LOCKED) h
  WHERE s.k NOT IN (SELECT k FROM full_keys)),
p AS (
  SELECT x.*, 0 AS pos FROM (
    SELECT id, status AS prev, priority, order_at, available_at, concurrency_key, ${claimedValues(AT)} FROM durable_runs
    WHERE queue = $1 AND status = 'PENDING' AND available_at <= ${DUE_BY} AND workflow_name = ANY($5::text[])
      AND ($10::text[] IS NULL OR app_version IS NULL OR app_version = ANY($10::text[]))
    ORDER BY ${QUEUE_ORDER}
    LIMIT (SELECT n FROM room) * ${WINDOW}
    FOR UPDATE SKIP LOCKED) x
  WHERE x.concurrency_key IS NULL),
w AS (
  SELECT id, status AS prev, priority, order_at, available_at, concurrency_key, ${claimedValues(AT)}, 0 AS pos FROM durable_runs
  WHERE queue = $1 AND status = 'WAITING' AND available_at <= ${DUE_BY} AND workflow_name = ANY($5::text[])
    AND ($10::text[] IS NULL OR app_version IS NULL OR app_version = ANY($10::text[]))
    AND (concurrency_key IS NULL OR concurrency_key NOT IN (SELECT k FROM full_keys))
  ORDER BY available_at
  LIMIT (SELECT n FROM room) * ${WINDOW}
  FOR UPDATE SKIP LOCKED),
ranked AS (
  SELECT d.*, row_number() OVER (PARTITION BY d.concurrency_key ORDER BY d.prev DESC, d.priority, d.order_at, d.available_at) AS rn
  FROM (SELECT * FROM heads UNION ALL SELECT * FROM p UNION ALL SELECT * FROM w) d),
c AS (
  SELECT ranked.id, ranked.prev, ranked.next_order, ranked.next_started, ranked.concurrency_key, ranked.pos FROM ranked LEFT JOIN running ON running.k = ranked.concurrency_key
  WHERE (ranked.concurrency_key IS NULL OR $8::int IS NULL OR ranked.rn <= $8::int - coalesce(running.n, 0))
    AND ${KEY_RATE_ROOM}
  ORDER BY ranked.priority, ranked.rn, ranked.pos
  LIMIT (SELECT n FROM room)),
cur AS (
  UPDATE durable_queue_limits SET rr_key = coalesce(
    CASE WHEN (SELECT count(*) FROM c) < (SELECT n FROM room) THEN (SELECT k FROM scanned ORDER BY pos DESC LIMIT 1)
         ELSE (SELECT concurrency_key FROM c WHERE concurrency_key IS NOT NULL ORDER BY pos DESC LIMIT 1) END, rr_key)
  WHERE queue = $1),
${RATE_WINDOWS},
${claimUpdate()}`,
);

type LimitsRow = Record<
  'global_concurrency' | 'key_concurrency' | 'rate_limit' | 'rate_period_ms' | 'key_rate_limit' | 'key_rate_period_ms',
  number | null
> & {
  rr_key: string | null;
};

/**
 * Claims up to `limit` due runs of a queue that has (or had) cluster-wide limits, within them. If
 * the limits were removed meanwhile, claims as the plain claim does (in the same transaction).
 */
export async function claimLimited(store: Store, request: ClaimRequest): Promise<{ runs: ClaimedRun[]; limited: boolean }> {
  if (store.sql.dialect === 'mysql') return mysql.claimLimited(store, request);
  const count = store.layout.partitions;
  if (count !== null && store.partition === undefined) return claimLimitedAcross(store, request, count); // distributed mode
  const { queue, limit, owner, leaseMs, workflows, versions = null } = request;
  return store.sql.transaction(async (sql) => {
    const tx: Store = { ...store, sql };
    await sql.query(CLAIM_IDLE_LIMIT, [String(claimIdleLimitMs(leaseMs))]);
    const [row] = await sql.query<LimitsRow>(LOCK_QUEUE_LIMITS, [queue]);
    if (
      !row ||
      (row.global_concurrency === null && row.key_concurrency === null && row.rate_limit === null && row.key_rate_limit === null)
    ) {
      return { runs: await claim(tx, request), limited: false };
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
      row.rr_key,
      versions,
      row.rate_limit,
      row.rate_period_ms,
      row.key_rate_limit,
      row.key_rate_period_ms,
    ]);
    return { runs: rows.map(claimedRun), limited: true };
  });
}
