/** The statements' parts both claims share (leases.ts, flow-claim.ts and their distributed forms), and a claimed row read back. */
import { CLAIM_HISTORY_AT, DUE_BY, history, STEPS_OF_R } from './sql-fragments.js';
import { HAS_LIMIT } from './flow-limits.js';
import { parsed, toDate } from './store.js';
import type { ClaimedRun, RecordedStep, RunFailure } from './rows.js';

/**
 * The end of both claims: a CTE c (id, prev status, next_order and next_started: see claimedValues) of the runs chosen → leased to worker $3 for $4 ms
 * (epoch + 1, attempt + 1), with their recorded steps; $6 history ('claimed', or 'woken' for a WAITING run, at CLAIM_HISTORY_AT).
 * A run's first claim records `startedAt` as its started_at (the plain claim: now(); the limited claim:
 * the time its rate windows count it at) and moves its order_at 1 ms earlier (see QUEUE_ORDER).
 * The rows are found by primary key from the array of c's ids (an InitPlan): joined to c alone, a plan
 * for a table of a few ten thousand rows hashed the whole table (a sequential scan, most of the claim's
 * time), where the array reads only the rows it claims.
 */
export const claimUpdate = () => `${claimedRows(`${CLAIM_RETURNING}, ${STEPS_OF_R} AS steps`)},
hist AS (${history(
  '$6',
  `SELECT id, CASE WHEN prev = 'WAITING' THEN 'woken' ELSE 'claimed' END,
  jsonb_build_object('worker', $3::text, 'epoch', lease_epoch, 'attempt', attempt), ${CLAIM_HISTORY_AT} FROM u WHERE true`,
  true,
)})
SELECT ${CLAIMED}, steps FROM u`;

/** What a claim's update returns of each run it leased (r: the run updated; c: what the claim's CTEs computed, prev the status it had). */
export const CLAIM_RETURNING = `r.id, r.workflow_name, r.input, r.lease_epoch, r.attempt, r.parent_id, r.deadline_at, r.available_at, c.prev,
            r.cancel_requested_at IS NOT NULL AS cancelling, r.error AS failing, r.traceparent, r.context`;
/** The columns of CLAIM_RETURNING a claim returns (claimedRun reads them, and `steps`). */
export const CLAIMED =
  'id, workflow_name, input, lease_epoch, attempt, parent_id, deadline_at, available_at, cancelling, failing, traceparent, context';

/** The update of claimUpdate (CTE u), RETURNING `returning`. */
export const claimedRows = (returning: string) => `u AS (
  UPDATE durable_runs r
  SET status = 'RUNNING', lease_owner = $3, lease_epoch = r.lease_epoch + 1, attempt = r.attempt + 1,
      lease_expires_at = now() + $4::float8 * interval '1 millisecond',
      -- both computed by the claim's selecting CTEs (claimedValues)
      started_at = c.next_started, updated_at = now(), order_at = c.next_order
  FROM c WHERE r.id = c.id AND r.id = ANY(ARRAY(SELECT id FROM c))
  RETURNING ${returning})`;

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

/**
 * A queue with cluster-wide limits is claimed by CLAIM_LIMITED only (store/flow-claim.ts). This guard
 * (one primary-key probe of durable_queue_limits, a CTE evaluated once per statement, before any run
 * is read or locked) keeps an instance that has not heard of a new limit yet from claiming around it.
 */
const LIMITED = `limited AS (SELECT 1 FROM durable_queue_limits WHERE queue = $1 AND ${HAS_LIMIT})`;
const UNLIMITED = `NOT EXISTS (SELECT 1 FROM limited)`;
/** UNLIMITED in distributed mode: a CTE that reads only a reference table makes Citus run the statement in parts. */
const UNLIMITED_INLINE = `NOT EXISTS (SELECT 1 FROM durable_queue_limits WHERE queue = $1 AND ${HAS_LIMIT})`;
/**
 * claimUpdate in distributed mode: the steps read by the final SELECT (a subquery in an UPDATE's
 * RETURNING makes Citus run the statement in parts), prev returned for the history rows, which the
 * caller inserts (store/partitioned-leases.ts).
 */
export const PARTITION_CLAIM_END = `${claimedRows(CLAIM_RETURNING)}
SELECT ${CLAIMED}, prev, ${STEPS_OF_R} AS steps FROM u r`;

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
export const claimSql = (versions: string, partitioned = false) => `
WITH ${partitioned ? '' : `${LIMITED},\n`}p AS (
  SELECT id, status AS prev, priority, order_at, available_at, ${claimedValues('now()')} FROM durable_runs
  WHERE queue = $1 AND status = 'PENDING' AND available_at <= ${DUE_BY} AND workflow_name = ANY($5::text[])${versions} AND ${partitioned ? UNLIMITED_INLINE : UNLIMITED}
  ORDER BY ${QUEUE_ORDER}
  LIMIT $2
  FOR UPDATE SKIP LOCKED),
w AS (
  SELECT id, status AS prev, priority, order_at, available_at, ${claimedValues('now()')} FROM durable_runs
  WHERE queue = $1 AND status = 'WAITING' AND available_at <= ${DUE_BY} AND workflow_name = ANY($5::text[])${versions} AND ${partitioned ? UNLIMITED_INLINE : UNLIMITED}
  ORDER BY available_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED),
c AS (SELECT id, prev, next_order, next_started FROM (SELECT * FROM p UNION ALL SELECT * FROM w) due ORDER BY ${QUEUE_ORDER} LIMIT $2),
${partitioned ? PARTITION_CLAIM_END : claimUpdate()}`;
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
