/**
 * Flow control in distributed mode (Citus, see partitions.ts): the claim of a limited queue when its
 * runs are spread over partitions. Queue-wide limits stay cluster-wide and exact, as on a single
 * server (flow-claim.ts), by the same short transaction split into statements Citus runs:
 * 1. LOCK_LIMITS_ALL_NODES: the queue's limits row (a reference table) is locked by an UPDATE that
 *    changes nothing. A modification of a reference table goes to its copy on every node, so the
 *    lock is taken on every node, and it is granted on a node only once the previous holder's
 *    transaction has committed there (with two-phase commit, each node commits on its own): the
 *    runs that claim made RUNNING in a partition are committed on that partition's node when this
 *    claim gets the lock there. (A SELECT … FOR UPDATE locks one copy only, the coordinator's,
 *    which commits first: a count could then miss the previous claim's runs.)
 * 2. The queue's RUNNING runs per concurrency key, counted over every partition in one statement
 *    (UNION ALL of the partitions' tables, no locks), with snapshots taken after the lock: exact.
 * 3. CLAIM_CLOCK_AND_RATE: the claim's clock (as CLAIM_CLOCK in flow-claim.ts) and the starts in
 *    the queue's rate window at it. Read after the count (as CLAIM_LIMITED reads its clock after its
 *    snapshot): a run that ended between the two would otherwise end after the start of the run
 *    that took its place, by the runs' recorded times.
 * 4. scanKeys: the keys to serve in turn, from the cursor on, over every partition (no locks; no
 *    recursive CTE, which Citus refuses: per partition the first keys after the cursor and, wrapping
 *    around, the first up to it, each a DISTINCT over durable_runs_key_idx that stops at its LIMIT).
 * 5. Per partition, those holding the first keys not at their limit first (then the others in turn,
 *    as in claimAcross), at most MAX_PARTITIONS_PER_CLAIM, while room is left, each offered the keys
 *    up to the room-th one not at its limit, one run per key first, then what the keys' limits allow
 *    (so no partition asked first takes a key's second turn before another key's first): PARTITION_PICK_LIMITED
 *    picks and locks the runs with the counts and keys as parameters, CLAIM_PICKED claims them, and
 *    APPEND_RATE_STARTS appends their starts to the rate windows (reference tables).
 * 6. SET_RR_KEY moves the round-robin cursor (shared by every partition) to the last key served, or
 *    to just before the first key a partition not asked held.
 * Statements 2 and 4 read every partition, so a limited claim costs more than a plain one; a queue
 * without limits never takes this path.
 */
import { DUE_BY } from './sql-fragments.js';
import { startsInWindow } from './flow-limits.js';
import { claim, claimIdleLimitMs, type ClaimRequest } from './leases.js';
import { claimedRun, claimedValues, PARTITION_CLAIM_END, QUEUE_ORDER } from './claim-sql.js';
import { insertClaimHistory } from './partitioned-leases.js';
import { partitionSchema } from './partitions.js';
import { statement } from './statement.js';
import { partitionStore, type Store } from './store.js';
import type { ClaimedRun } from './rows.js';

/** The same statement as flow-claim.ts's (one prepared name): the transaction ends if it sits idle longer than $1 ms. */
const CLAIM_IDLE_LIMIT = statement('claim_idle_limit', `SELECT set_config('idle_in_transaction_session_timeout', $1, true) AS v`);

/** The limits row of queue $1, locked on every node until the claim's transaction ends (see 1. above). */
const LOCK_LIMITS_ALL_NODES = statement(
  'lock_queue_limits_all_nodes',
  `UPDATE durable_queue_limits SET rr_key = rr_key WHERE queue = $1
   RETURNING global_concurrency, key_concurrency, rr_key, rate_limit, rate_period_ms, key_rate_limit, key_rate_period_ms`,
);

/** The claim's clock (never before the queue window's last start), and the starts in queue $1's window of $2 ms at it. */
const CLAIM_CLOCK_AND_RATE = statement(
  'claim_clock_and_rate',
  `SELECT c.t, ${startsInWindow('$1', `''`, '$2::int', 'c.t')} AS used
   FROM (SELECT greatest(clock_timestamp()::timestamptz(3),
                         (SELECT last_start_at FROM durable_rate_windows WHERE queue = $1 AND key = '')) AS t) c`,
);

/** How many runs past the free room the claim reads from the head of the queue (as WINDOW in flow-claim.ts). */
const WINDOW = 4;
/** The most partitions one claim asks (holding the queue's lock); the next claim starts after them. */
const MAX_PARTITIONS_PER_CLAIM = 4;

const AT = '$8::timestamptz';

/**
 * The runs a limited claim takes in one partition, picked and locked (FOR UPDATE SKIP LOCKED) inside
 * the transaction above: $1 queue, $2 the room (what the worker's free slots, the queue-wide limit
 * and its rate window leave; > 0), $3 workflows, $4 the queue's RUNNING runs per concurrency key over
 * every partition (jsonb { key: n }), $5 keyConcurrency, $6 the keys to serve in turn, read over every
 * partition from the cursor on (jsonb [{ k, pos }], see scanKeys), $7 versions, $8 the claim's clock,
 * $9 keyRateLimit, $10 its period ms (null = no such limit), $11 the most runs per key (null = as
 * its limit allows: see claimLimitedAcross' two rounds). The choice is CLAIM_LIMITED's (heads per
 * key in scan order, runs without a key and woken runs from the head of the queue, round by round).
 * One row per run: c of claimUpdate, with its key and its key's place in the scan (pos).
 */
const PARTITION_PICK_LIMITED = statement(
  'pick_limited_partition',
  `
WITH running AS (SELECT key AS k, value::int AS n FROM jsonb_each_text(coalesce($4::jsonb, '{}'::jsonb))),
full_keys AS (SELECT k FROM running WHERE n >= $5::int),
scanned AS (SELECT k, pos FROM jsonb_to_recordset(coalesce($6::jsonb, '[]'::jsonb)) AS s(k text, pos int)),
heads AS (
  SELECT h.*, s.pos FROM scanned s CROSS JOIN LATERAL (
    SELECT r.id, r.status AS prev, r.priority, r.order_at, r.available_at, r.concurrency_key, ${claimedValues(AT, 'r.')} FROM durable_runs r
    WHERE r.queue = $1 AND r.status = 'PENDING' AND r.concurrency_key = s.k AND r.available_at <= ${DUE_BY}
      AND r.workflow_name = ANY($3::text[])
      AND ($7::text[] IS NULL OR r.app_version IS NULL OR r.app_version = ANY($7::text[]))
    ORDER BY r.priority, r.order_at, r.available_at
    LIMIT greatest(0, least($2::int, coalesce($5::int - coalesce((SELECT n FROM running WHERE running.k = s.k), 0), $2::int)))
    FOR UPDATE SKIP LOCKED) h
  WHERE s.k NOT IN (SELECT k FROM full_keys)),
p AS (
  SELECT x.*, 0 AS pos FROM (
    SELECT id, status AS prev, priority, order_at, available_at, concurrency_key, ${claimedValues(AT)} FROM durable_runs
    WHERE queue = $1 AND status = 'PENDING' AND available_at <= ${DUE_BY} AND workflow_name = ANY($3::text[])
      AND ($7::text[] IS NULL OR app_version IS NULL OR app_version = ANY($7::text[]))
    ORDER BY ${QUEUE_ORDER}
    LIMIT $2::int * ${WINDOW}
    FOR UPDATE SKIP LOCKED) x
  WHERE x.concurrency_key IS NULL),
w AS (
  SELECT id, status AS prev, priority, order_at, available_at, concurrency_key, ${claimedValues(AT)}, 0 AS pos FROM durable_runs
  WHERE queue = $1 AND status = 'WAITING' AND available_at <= ${DUE_BY} AND workflow_name = ANY($3::text[])
    AND ($7::text[] IS NULL OR app_version IS NULL OR app_version = ANY($7::text[]))
    AND (concurrency_key IS NULL OR concurrency_key NOT IN (SELECT k FROM full_keys))
  ORDER BY available_at
  LIMIT $2::int * ${WINDOW}
  FOR UPDATE SKIP LOCKED),
ranked AS (
  SELECT d.*, row_number() OVER (PARTITION BY d.concurrency_key ORDER BY d.prev DESC, d.priority, d.order_at, d.available_at) AS rn
  FROM (SELECT * FROM heads UNION ALL SELECT * FROM p UNION ALL SELECT * FROM w) d),
c AS (
  SELECT ranked.id, ranked.prev, ranked.next_order, ranked.next_started, ranked.concurrency_key, ranked.pos FROM ranked
  LEFT JOIN running ON running.k = ranked.concurrency_key
  WHERE (ranked.concurrency_key IS NULL OR $5::int IS NULL OR ranked.rn <= $5::int - coalesce(running.n, 0))
    AND (ranked.concurrency_key IS NULL OR $11::int IS NULL OR ranked.rn <= $11::int)
    AND (ranked.concurrency_key IS NULL OR $9::int IS NULL
         OR ranked.rn <= $9::int - ${startsInWindow('$1', 'ranked.concurrency_key', '$10::int', AT)})
  ORDER BY ranked.priority, ranked.rn, ranked.pos
  LIMIT $2::int)
SELECT id, prev, next_order, next_started, concurrency_key, pos FROM c`,
);

/**
 * Claims the runs PARTITION_PICK_LIMITED picked and locked, in their partition (PARTITION_CLAIM_END: the
 * claim's update, routed whole; the history rows follow): $1 a jsonb array of { id, prev, next_order,
 * next_started }, $2 worker, $3 lease ms. A statement of its own: with the picking and the UPDATE in one
 * statement, Citus plans the CTEs apart and the window function over the candidates (ranked) came out
 * empty, so nothing was claimed.
 */
const CLAIM_PICKED = statement(
  'claim_picked',
  `
WITH c AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS c(id text, prev text, next_order timestamptz, next_started timestamptz)),
${PARTITION_CLAIM_END.replace(/\$(\d+)/g, (_, n: string) => `$${{ 3: 2, 4: 3 }[n] ?? 'unexpected'}`)}`,
);

/**
 * Appends a claim's starts to the rate windows of queue $1 (under its lock): $2 keys ('' the queue's
 * own), $3 starts per key, $4 each window's limit, $5 its period ms, $6 the claim's clock. Each window
 * keeps its newest `limit` starts within its period (as RATE_WINDOWS in flow-claim.ts).
 */
const APPEND_RATE_STARTS = statement(
  'append_rate_starts',
  `
INSERT INTO durable_rate_windows AS win (queue, key, starts, last_start_at)
SELECT $1, t.key, (SELECT array_agg(s ORDER BY s) FROM (
         SELECT s FROM unnest(coalesce(old.starts, '{}'::timestamptz(3)[]) || array_fill($6::timestamptz, ARRAY[t.n])) s
         WHERE s > $6::timestamptz - t.per * interval '1 millisecond' ORDER BY s DESC LIMIT t.lim) x), $6::timestamptz
FROM unnest($2::text[], $3::int[], $4::int[], $5::int[]) AS t(key, n, lim, per)
LEFT JOIN durable_rate_windows old ON old.queue = $1 AND old.key = t.key
ON CONFLICT (queue, key) DO UPDATE SET starts = excluded.starts, last_start_at = excluded.last_start_at`,
);

/** The round-robin cursor of queue $1 moves to $2. */
const SET_RR_KEY = statement('set_rr_key', `UPDATE durable_queue_limits SET rr_key = $2 WHERE queue = $1`);

/**
 * The keys with PENDING runs of queue $1 in key order after the cursor $2, then wrapping around up to
 * it, at most $3, over every partition in one statement (no locks): each key with the partitions that
 * hold it. Each part is a DISTINCT over durable_runs_key_idx that stops at its LIMIT.
 */
const scanText = new Map<number, string>();
function scanKeys(count: number): string {
  let text = scanText.get(count);
  if (!text) {
    const keys = (k: number, wrap: number, cond: string) =>
      `SELECT * FROM (SELECT DISTINCT concurrency_key AS k, ${wrap} AS wrap, ${k} AS part FROM ${partitionSchema(k)}.durable_runs
       WHERE queue = $1 AND status = 'PENDING' AND concurrency_key IS NOT NULL AND ${cond} ORDER BY 1 LIMIT $3) s${wrap}_${k}`;
    const each = Array.from({ length: count }, (_, k) => [
      keys(k, 0, `concurrency_key > coalesce($2::text, '')`),
      keys(k, 1, `concurrency_key <= $2::text`),
    ]).flat();
    text = `SELECT k, array_agg(part ORDER BY part) AS parts FROM (${each.join(' UNION ALL ')}) s GROUP BY k, wrap ORDER BY wrap, k LIMIT $3`;
    scanText.set(count, text);
  }
  return text;
}

/** The queue's ($1) RUNNING runs per concurrency key, over every partition in one statement (no locks). */
const runningText = new Map<number, string>();
function runningPerKey(count: number): string {
  let text = runningText.get(count);
  if (!text) {
    const each = Array.from(
      { length: count },
      (_, k) => `SELECT concurrency_key AS k FROM ${partitionSchema(k)}.durable_runs WHERE queue = $1 AND status = 'RUNNING'`,
    );
    runningText.set(count, (text = `SELECT k, count(*)::int AS n FROM (${each.join(' UNION ALL ')}) r GROUP BY k`));
  }
  return text;
}

type LimitsRow = Record<
  'global_concurrency' | 'key_concurrency' | 'rate_limit' | 'rate_period_ms' | 'key_rate_limit' | 'key_rate_period_ms',
  number | null
> & { rr_key: string | null };

let nextPartition = 0;

/** claimLimited (flow-claim.ts) in distributed mode: see the top of this file. */
export async function claimLimitedAcross(
  store: Store,
  request: ClaimRequest,
  count: number,
): Promise<{ runs: ClaimedRun[]; limited: boolean }> {
  const { queue, limit, owner, leaseMs, workflows, versions = null } = request;
  return store.sql.transaction(async (sql) => {
    const tx: Store = { ...store, sql };
    await sql.query(CLAIM_IDLE_LIMIT, [String(claimIdleLimitMs(leaseMs))]);
    const [row] = await sql.query<LimitsRow>(LOCK_LIMITS_ALL_NODES, [queue]);
    if (
      !row ||
      (row.global_concurrency === null && row.key_concurrency === null && row.rate_limit === null && row.key_rate_limit === null)
    ) {
      return { runs: await claim(tx, request), limited: false };
    }
    const running = new Map<string | null, number>();
    for (const r of await sql.query<{ k: string | null; n: number }>(runningPerKey(count), [queue])) running.set(r.k, Number(r.n));
    // The clock after the count: a run the count saw end has its finished_at before the started_at of the runs this claim starts in its place.
    const [clock] = await sql.query<{ t: Date | string; used: number }>(CLAIM_CLOCK_AND_RATE, [queue, row.rate_period_ms]);
    const at = clock.t instanceof Date ? clock.t.toISOString() : clock.t;
    let room = limit;
    if (row.global_concurrency !== null) room = Math.min(room, row.global_concurrency - [...running.values()].reduce((a, n) => a + n, 0));
    if (row.rate_limit !== null) room = Math.min(room, row.rate_limit - Number(clock.used));
    const runs: ClaimedRun[] = [];
    if (room <= 0) return { runs, limited: true };
    // The keys to serve in turn, read over every partition; the partitions asked: those holding the first keys first.
    const full = row.key_concurrency === null ? 0 : [...running].filter(([k, n]) => k !== null && n >= row.key_concurrency!).length;
    const scanned = (await sql.query<{ k: string; parts: number[] }>(scanKeys(count), [queue, row.rr_key, room + full + 1])).map(
      (r, i) => ({ k: r.k, pos: i + 1, parts: r.parts.map(Number) }),
    );
    const open = (k: string) => row.key_concurrency === null || (running.get(k) ?? 0) < row.key_concurrency;
    // The keys this claim offers: those up to the room-th key not at its limit. A partition asked
    // first would otherwise fill the room with keys further on that it holds, and the cursor would
    // then pass over a key between them that another partition holds (it would lose its turn).
    const openKeys = scanned.filter((s) => open(s.k));
    const offered = openKeys.length > room ? scanned.filter((s) => s.pos <= openKeys[room - 1].pos) : scanned;
    const first = nextPartition++ % count;
    const order = [
      ...new Set([
        ...offered.filter((s) => open(s.k)).flatMap((s) => s.parts),
        ...Array.from({ length: count }, (_, i) => (first + i) % count),
      ]),
    ].slice(0, Math.min(count, MAX_PARTITIONS_PER_CLAIM));
    const keyScan = JSON.stringify(offered.map(({ k, pos }) => ({ k, pos })));
    let lastServed = 0;
    const asked = new Set<number>();
    const served = new Set<string>();
    // The partitions are asked for at most one run per key first, so the first one asked cannot fill
    // the room with its keys' second runs while a key elsewhere waits for its first; then (keys
    // allowed more than one run at once) those that gave runs are asked again for what room is left.
    const asks: Array<[partition: number, perKeyCap: number | null]> = order.map((k) => [k, 1]);
    for (const [k, perKeyCap] of asks) {
      if (room <= 0) break;
      asked.add(k);
      const part = partitionStore(tx, k);
      const picked = await part.sql.query<Record<string, unknown>>(PARTITION_PICK_LIMITED, [
        queue,
        room,
        workflows,
        JSON.stringify(Object.fromEntries([...running].filter((e) => e[0] !== null))),
        row.key_concurrency,
        keyScan,
        versions,
        at,
        row.key_rate_limit,
        row.key_rate_period_ms,
        perKeyCap,
      ]);
      if (!picked.length) continue;
      const claimed = await part.sql.query<Record<string, unknown>>(CLAIM_PICKED, [
        JSON.stringify(picked.map(({ id, prev, next_order, next_started }) => ({ id, prev, next_order, next_started }))),
        owner,
        leaseMs,
      ]);
      await insertClaimHistory(part.sql, store.history, owner, claimed);
      const pickedById = new Map(picked.map((r) => [r.id as string, r]));
      const perKey = new Map<string, number>();
      for (const r of claimed) {
        const p = pickedById.get(r.id as string);
        const key = (p?.concurrency_key as string | null | undefined) ?? null;
        running.set(key, (running.get(key) ?? 0) + 1);
        if (key !== null) {
          perKey.set(key, (perKey.get(key) ?? 0) + 1);
          served.add(key);
          lastServed = Math.max(lastServed, Number(p?.pos ?? 0));
        }
        runs.push(claimedRun(r));
      }
      room -= claimed.length;
      await appendRateStarts(tx, queue, row, claimed.length, perKey, at);
      if (perKeyCap !== null && row.key_concurrency !== 1) asks.push([k, null]);
    }
    // As CLAIM_LIMITED: the cursor moves to the last key served, or to the last key offered if the room
    // was not filled; but never past an open key that got nothing because a partition holding it was
    // not asked (the room filled first, or more partitions hold the offered keys than a claim asks).
    const reached = room > 0 ? offered.length : lastServed;
    const waiting = offered.find((s) => s.pos <= reached && openKeys.includes(s) && !served.has(s.k) && s.parts.some((p) => !asked.has(p)));
    const cursor = waiting ? (waiting.pos > 1 ? scanned[waiting.pos - 2].k : row.rr_key) : (scanned[reached - 1]?.k ?? row.rr_key);
    if (cursor !== row.rr_key) await sql.query(SET_RR_KEY, [queue, cursor]);
    return { runs, limited: true };
  });
}

/** The starts of one partition's claim, appended to the queue's window and its keys' (those with a rate limit). */
async function appendRateStarts(tx: Store, queue: string, row: LimitsRow, n: number, perKey: Map<string, number>, at: string) {
  const windows: Array<[string, number, number, number]> = [];
  if (n > 0 && row.rate_limit !== null) windows.push(['', n, row.rate_limit, row.rate_period_ms!]);
  if (row.key_rate_limit !== null) for (const [key, k] of perKey) windows.push([key, k, row.key_rate_limit, row.key_rate_period_ms!]);
  if (!windows.length) return;
  const column = (i: number) => windows.map((w) => w[i]);
  await tx.sql.query(APPEND_RATE_STARTS, [queue, column(0), column(1), column(2), column(3), at]);
}
