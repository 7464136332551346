/** Leases: claiming runs, renewing the leases this worker holds, handing runs back, and sweeping expired leases. */
import * as mysql from './mysql/leases.js';
import { statement } from './statement.js';
import { DUE_BY, history, STEPS_OF_R, WAKEUP_CHANNEL } from './sql-fragments.js';
import { HAS_LIMIT } from './flow-limits.js';
import { eachPartition, parsed, partitionStore, perPartition, toDate, type Store } from './store.js';
import type { ClaimedRun, HeldRun, RecordedStep, RunFailure } from './rows.js';
export type { ClaimRequest } from './rows.js';
import type { ClaimRequest } from './rows.js';

/** How long a limited claim's transaction may sit idle: a third of the lease (what a stalled worker would hold its runs for). */
export const claimIdleLimitMs = (leaseMs: number) => Math.max(100, Math.round(leaseMs / 3));
/**
 * The end of both claims: a CTE c (id, prev status, next_order and next_started: see claimedValues) of the runs chosen → leased to worker $3 for $4 ms
 * (epoch + 1, attempt + 1), with their recorded steps; $6 history ('claimed', or 'woken' for a WAITING run).
 * A run's first claim records `startedAt` as its started_at (the plain claim: now(); the limited claim:
 * the time its rate windows count it at) and moves its order_at 1 ms earlier (see QUEUE_ORDER).
 * The rows are found by primary key from the array of c's ids (an InitPlan): joined to c alone, a plan
 * for a table of a few ten thousand rows hashed the whole table (a sequential scan, most of the claim's
 * time), where the array reads only the rows it claims.
 */
export const claimUpdate = () => `u AS (
  UPDATE durable_runs r
  SET status = 'RUNNING', lease_owner = $3, lease_epoch = r.lease_epoch + 1, attempt = r.attempt + 1,
      lease_expires_at = now() + $4::float8 * interval '1 millisecond',
      -- both computed by the claim's selecting CTEs (claimedValues)
      started_at = c.next_started, updated_at = now(), order_at = c.next_order
  FROM c WHERE r.id = c.id AND r.id = ANY(ARRAY(SELECT id FROM c))
  RETURNING r.id, r.workflow_name, r.input, r.lease_epoch, r.attempt, r.parent_id, r.deadline_at, r.available_at, c.prev,
            r.cancel_requested_at IS NOT NULL AS cancelling, r.error AS failing, r.traceparent, r.context, ${STEPS_OF_R} AS steps),
hist AS (${history(
  '$6',
  `SELECT id, CASE WHEN prev = 'WAITING' THEN 'woken' ELSE 'claimed' END,
  jsonb_build_object('worker', $3::text, 'epoch', lease_epoch, 'attempt', attempt) FROM u WHERE true`,
)})
SELECT id, workflow_name, input, lease_epoch, attempt, parent_id, deadline_at, available_at, cancelling, failing, traceparent, context, steps FROM u`;

/**
 * A queue with cluster-wide limits is claimed by CLAIM_LIMITED only (store/flow-claim.ts). This guard
 * (one primary-key probe of durable_queue_limits, a CTE evaluated once per statement, before any run
 * is read or locked) keeps an instance that has not heard of a new limit yet from claiming around it.
 */
/**
 * The order claims take due runs in: priority, then order_at, a run's place in its queue, then
 * available_at. order_at is when a run started from outside is first due (its start, or its run-at);
 * its first claim moves it 1 ms earlier, ahead of the runs due with it that have not started (one
 * startMany gives a whole batch the same time); its children take its order_at; and it keeps it through
 * sleeps, waits, release and recovery from a dead worker. So the work of a workflow already started
 * goes before workflows that have not: a child does not queue behind the backlog started after its
 * parent (whose slot may be waiting for it), nor does a run woken from a wait or recovered from a
 * dead worker. A PENDING run that is not due yet has order_at = available_at (a delayed start), so
 * the claim's index scan meets no run it must pass over before the due ones.
 */
export const QUEUE_ORDER = 'priority, order_at, available_at';

/**
 * A claimed run's new order_at and started_at, computed where the claim selects the run (Citus refuses
 * a clock inside CASE or coalesce, and clock arithmetic on a column, in an UPDATE): its first claim
 * moves it ahead of the runs due with it that have not started (QUEUE_ORDER) and records `clock`
 * (the claim's time) as its start; a later claim keeps both.
 */
export const claimedValues = (clock: string, r = '') =>
  `CASE WHEN ${r}started_at IS NULL THEN ${r}order_at - interval '1 millisecond' ELSE ${r}order_at END AS next_order, ` +
  `coalesce(${r}started_at, ${clock}) AS next_started`;

const LIMITED = `limited AS (SELECT 1 FROM durable_queue_limits WHERE queue = $1 AND ${HAS_LIMIT})`;
const UNLIMITED = `NOT EXISTS (SELECT 1 FROM limited)`;

/**
 * Claim up to $2 due runs of queue $1 for worker $3 with a lease of $4 ms, highest priority
 * (lowest number) first, then by place in the queue (QUEUE_ORDER: the work of workflows started
 * earlier first, children and woken or recovered runs included), among the workflows $5 this worker has code for (during a
 * rolling deploy an older instance leaves newer workflows to the instances that know them).
 * One statement: SKIP LOCKED lets every worker claim at once without waiting on each other.
 * Indexes: durable_runs_claim_idx (PENDING, in QUEUE_ORDER, available_at read from the index) and
 * durable_runs_wake_idx (WAITING, by wake-up time; the due ones then take their place by order_at), both partial, so neither finished nor sleeping runs slow the claim down. Rows locked by one
 * CTE but left out of the final LIMIT are released at commit.
 * Returns the recorded steps too, so an execution needs no other read, and available_at (the
 * token of durable waits, see waits.ts), whether the run is to compensate and end CANCELLED
 * (cancel_requested_at), the error of a run that is failing (an active run with an error: it
 * passed its deadline, see SWEEP_DEADLINES; it compensates and ends FAILED with it), and the trace
 * context it was started in (traceparent). $6 history: a 'claimed' row, or 'woken' for a WAITING run.
 * Claims nothing from a queue that has limits (UNLIMITED).
 */
const claimSql = (versions: string) => `
WITH ${LIMITED},
p AS (
  SELECT id, status AS prev, priority, order_at, available_at, ${claimedValues('now()')} FROM durable_runs
  WHERE queue = $1 AND status = 'PENDING' AND available_at <= ${DUE_BY} AND workflow_name = ANY($5::text[])${versions} AND ${UNLIMITED}
  ORDER BY ${QUEUE_ORDER}
  LIMIT $2
  FOR UPDATE SKIP LOCKED),
w AS (
  SELECT id, status AS prev, priority, order_at, available_at, ${claimedValues('now()')} FROM durable_runs
  WHERE queue = $1 AND status = 'WAITING' AND available_at <= ${DUE_BY} AND workflow_name = ANY($5::text[])${versions} AND ${UNLIMITED}
  ORDER BY available_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED),
c AS (SELECT id, prev, next_order, next_started FROM (SELECT * FROM p UNION ALL SELECT * FROM w) due ORDER BY ${QUEUE_ORDER} LIMIT $2),
${claimUpdate()}`;
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
WITH x AS (
  SELECT id, lease_owner, lease_epoch FROM durable_runs
  WHERE status = 'RUNNING' AND lease_expires_at < now()
  ORDER BY lease_expires_at LIMIT $1
  FOR UPDATE SKIP LOCKED),
u AS (
  UPDATE durable_runs r
  -- Claimable at once, in its old place in the queue: a recovered run is not sent behind the backlog.
  SET status = 'PENDING', lease_owner = NULL, lease_expires_at = NULL, available_at = least(r.available_at, now()), updated_at = now()
  FROM x WHERE r.id = x.id
  RETURNING r.id, r.queue, x.lease_owner, x.lease_epoch),
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

/** A row of CLAIM_UPDATE as a ClaimedRun. */
export function claimedRun(r: Record<string, unknown>): ClaimedRun {
  return {
    id: r.id as string,
    workflowName: r.workflow_name as string,
    input: r.input,
    epoch: Number(r.lease_epoch),
    attempt: Number(r.attempt),
    parentId: (r.parent_id as string | null) ?? null,
    deadlineAt: toDate(r.deadline_at),
    availableAt: toDate(r.available_at),
    cancelRequested: r.cancelling === true,
    failing: r.failing == null ? null : parsed<RunFailure>(r.failing),
    traceparent: (r.traceparent as string | null) ?? null,
    context: r.context == null ? null : parsed(r.context),
    steps: parsed<RecordedStep[]>(r.steps),
  };
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
  const rows = (await eachPartition(store, (s) => s.sql.query<{ n: number }>(SWEEP_EXPIRED_LEASES, [batch, s.history]))).flat();
  return rows.reduce((a, r) => a + Number(r.n), 0);
}
