/** Leases: claiming runs, renewing the leases this worker holds, handing runs back, and sweeping expired leases. */
import * as mysql from './mysql/leases.js';
import { statement } from './statement.js';
import { EXPIRED_LEASES, history, WAKEUP_CHANNEL } from './sql-fragments.js';
import { claimedRun, claimSql } from './claim-sql.js';
import * as partitioned from './partitioned-leases.js';
import { eachPartition, partitionStore, perPartition, type Store } from './store.js';
import type { ClaimedRun, HeldRun } from './rows.js';
export type { ClaimRequest } from './rows.js';
import type { ClaimRequest } from './rows.js';

/** How long a limited claim's transaction may sit idle: a third of the lease (what a stalled worker would hold its runs for). */
export const claimIdleLimitMs = (leaseMs: number) => Math.max(100, Math.round(leaseMs / 3));

const CLAIM = statement('claim', claimSql(''));

/**
 * CLAIM for a worker with the engine option runVersions: also $7 (text[]), the app versions whose
 * runs it claims (runs recorded without a version too). A statement of its own, so the default
 * claim keeps its text and plan; the version test filters rows the claim indexes found (no index
 * of its own: during a deploy nearly every due run passes it).
 */
const CLAIM_VERSIONS = statement('claim_versions', claimSql(' AND (app_version IS NULL OR app_version = ANY($7::text[]))'));

/**
 * Heartbeat: extend, in one statement, the leases this worker still holds. Rows are locked in id
 * order, like the batched checkpoints and run ends (INSERT_STEPS, FINISH_RUNS): no deadlock. $1 ids, $2 epochs,
 * $3 lease ms. Returns the ids still held (and whether each was asked to cancel with compensation:
 * the LISTEN hint may have been missed); a run missing from the answer was lost (swept, cancelled,
 * or claimed by another worker) and its execution must stop.
 */
const HEARTBEAT = statement(
  'heartbeat',
  `
WITH l AS (
  SELECT r.id FROM durable_runs r JOIN unnest($1::text[], $2::int[]) AS h(id, epoch) ON r.id = h.id AND r.lease_epoch = h.epoch
  -- An expired lease is not renewed: the worker counts it lost already (it stopped the run), and
  -- renewing it would hold a run nobody executes until the new lease expires too.
  WHERE r.status = 'RUNNING' AND r.lease_expires_at > now()
  ORDER BY r.id FOR NO KEY UPDATE OF r)
UPDATE durable_runs r SET lease_expires_at = now() + $3::float8 * interval '1 millisecond'
FROM l WHERE r.id = l.id
RETURNING r.id, r.cancel_requested_at IS NOT NULL AS cancelling`,
);

/**
 * Hand runs back (graceful shutdown, or a worker that stops them): claimable again at once,
 * and a wake-up per queue so another instance takes them without waiting for a poll.
 * $1 ids, $2 epochs, $3 history.
 */
const RELEASE_RUNS = statement(
  'release_runs',
  `
WITH u AS (
  UPDATE durable_runs r
  -- Claimable at once, in its old place in the queue (as SWEEP_EXPIRED_LEASES does).
  SET status = 'PENDING', lease_owner = NULL, lease_expires_at = NULL, available_at = least(r.available_at, now()), updated_at = now()
  FROM unnest($1::text[], $2::int[]) AS h(id, epoch)
  WHERE r.id = h.id AND r.lease_epoch = h.epoch AND r.status = 'RUNNING'
  RETURNING r.id, r.queue),
hist AS (${history('$3', `SELECT id, 'released', NULL::jsonb FROM u WHERE true`)})
SELECT q.queue, q.n, pg_notify('${WAKEUP_CHANNEL}', q.queue) IS NULL AS notified
FROM (SELECT queue, count(*)::int AS n FROM u GROUP BY queue) q`,
);

/**
 * Sweeper: runs whose lease expired (their worker died or froze) become claimable again (keeping
 * their place in the queue: available_at is not moved later),
 * at most $1 per statement; a wake-up per queue. Index: durable_runs_lease_idx.
 * SKIP LOCKED makes it safe on every instance at once. $2 history ('lease_expired').
 */
const SWEEP_EXPIRED_LEASES = statement(
  'sweep_expired_leases',
  `
WITH ${EXPIRED_LEASES},
hist AS (${history('$2', `SELECT id, 'lease_expired', jsonb_build_object('worker', lease_owner, 'epoch', lease_epoch) FROM u WHERE true`)})
SELECT q.queue, q.n, pg_notify('${WAKEUP_CHANNEL}', q.queue) IS NULL AS notified
FROM (SELECT queue, count(*)::int AS n FROM u GROUP BY queue) q`,
);

/**
 * Claims up to `limit` due runs of `queue` for `owner`, among the workflows it has code for (and,
 * given `versions`, among the runs those app versions started, or that carry no version).
 */
export async function claim(store: Store, request: ClaimRequest): Promise<ClaimedRun[]> {
  if (store.sql.dialect === 'mysql') return mysql.claim(store, request);
  const count = store.layout.partitions;
  if (count !== null && store.partition === undefined) return claimAcross(store, request, count);
  if (store.partition !== undefined) return partitioned.claimInPartition(store, request);
  const { queue, limit, owner, leaseMs, workflows, versions = null } = request;
  const params = [queue, limit, owner, leaseMs, workflows, store.history];
  const rows = await store.sql.query<Record<string, unknown>>(versions ? CLAIM_VERSIONS : CLAIM, versions ? [...params, versions] : params);
  return rows.map(claimedRun);
}

let nextPartition = 0;

/**
 * Distributed mode: claims from one partition after another (each claim a single-shard statement),
 * starting where the previous claim of this process left off, so that every partition is served in
 * turn, until `limit` runs are claimed or every partition was asked once.
 */
async function claimAcross(store: Store, request: ClaimRequest, count: number): Promise<ClaimedRun[]> {
  const claimed: ClaimedRun[] = [];
  const first = nextPartition++ % count;
  for (let i = 0; i < count && claimed.length < request.limit; i++) {
    claimed.push(...(await claim(partitionStore(store, (first + i) % count), { ...request, limit: request.limit - claimed.length })));
  }
  return claimed;
}

/** Extends the leases still held; returns their ids, each with whether it was asked to cancel with compensation. */
export async function leaseHeartbeat(store: Store, held: HeldRun[], leaseMs: number): Promise<Map<string, { cancelling: boolean }>> {
  if (store.sql.dialect === 'mysql') return mysql.leaseHeartbeat(store, held, leaseMs);
  const rows = await perPartition(
    store,
    held,
    (h) => h.id,
    (s, group) => s.sql.query<{ id: string; cancelling: boolean }>(HEARTBEAT, [group.map((h) => h.id), group.map((h) => h.epoch), leaseMs]),
  );
  return new Map(rows.map((r) => [r.id, { cancelling: r.cancelling === true }]));
}

/** Hands runs back (claimable at once); returns how many. */
export async function releaseRuns(store: Store, held: HeldRun[]): Promise<number> {
  if (store.sql.dialect === 'mysql') return mysql.releaseRuns(store, held);
  if (!held.length) return 0;
  const rows = await perPartition(
    store,
    held,
    (h) => h.id,
    (s, group) => s.sql.query<{ n: number }>(RELEASE_RUNS, [group.map((h) => h.id), group.map((h) => h.epoch), s.history]),
  );
  return rows.reduce((a, r) => a + Number(r.n), 0);
}

/** Makes up to `batch` runs whose lease expired claimable again; returns how many. */
export async function sweepExpiredLeases(store: Store, batch: number): Promise<number> {
  if (store.sql.dialect === 'mysql') return mysql.sweepExpiredLeases(store, batch);
  const counts = await eachPartition(store, async (s) =>
    s.partition !== undefined
      ? partitioned.sweepInPartition(s, batch)
      : (await s.sql.query<{ n: number }>(SWEEP_EXPIRED_LEASES, [batch, s.history])).reduce((a, r) => a + Number(r.n), 0),
  );
  return counts.reduce((a, n) => a + n, 0);
}
