/**
 * Leases on a MySQL-family database: claiming runs, renewing the leases this worker holds, handing
 * runs back, and sweeping expired leases. Each is one short transaction: lock the rows
 * (`FOR UPDATE SKIP LOCKED` where any instance may compete, id order where a worker locks its own),
 * change them, read them back. The claim reads durable_runs_claim_idx / durable_runs_wake_idx
 * (queue, status, …): under READ COMMITTED it locks only the rows it returns.
 */
import { HAS_LIMIT } from '../flow-limits.js';
import type { SqlClient } from '../sql-client.js';
import type { Store } from '../store.js';
import type { ClaimRequest } from '../rows.js';
import type { ClaimedRun, HeldRun, RecordedStep, RunFailure } from '../rows.js';
import { wakeQueues } from './checkpoints.js';
import { anyRow, bool, date, DUE_BY, insertHistory, json, marks, NOW, NOW_PLUS_MS } from './sql.js';

interface Due {
  id: string;
  status: 'PENDING' | 'WAITING';
  priority: number;
  order_at: Date;
  available_at: Date;
}

/** QUEUE_ORDER (see leases.ts): priority, then place in the queue, then due time. */
const inQueueOrder = (a: Due, b: Due) =>
  Number(a.priority) - Number(b.priority) ||
  date(a.order_at)!.getTime() - date(b.order_at)!.getTime() ||
  date(a.available_at)!.getTime() - date(b.available_at)!.getTime();

/** The recorded steps of runs, by run id (one statement; index: durable_steps' primary key). */
export async function recordedSteps(sql: SqlClient, ids: string[]): Promise<Map<string, RecordedStep[]>> {
  const steps = new Map<string, RecordedStep[]>(ids.map((id) => [id, []]));
  if (!ids.length) return steps;
  const rows = await sql.query<Record<string, unknown>>(
    `SELECT run_id, seq, name, status, output, error, compensation, compensates FROM durable_steps
     WHERE run_id IN (${marks(ids.length)}) ORDER BY run_id, seq`,
    ids,
  );
  for (const s of rows) {
    steps.get(s.run_id as string)?.push({
      seq: Number(s.seq),
      name: s.name as string,
      status: s.status as RecordedStep['status'],
      output: json(s.output),
      error: json(s.error),
      compensation: json(s.compensation),
      compensates: s.compensates == null ? null : Number(s.compensates),
    });
  }
  return steps;
}

/**
 * Leases the runs `chosen` (locked by the caller's transaction) to `owner`: epoch and attempt + 1, a
 * first claim records started_at and moves order_at 1 ms earlier (order_at is set before started_at:
 * MySQL applies SET assignments left to right). Returns them as claimed, with their recorded steps.
 */
export async function leaseChosen(
  sql: SqlClient,
  history: boolean,
  chosen: Array<{ id: string; status: string }>,
  owner: string,
  leaseMs: number,
  /** A first start's time (DATETIME(3) text, UTC): the limited claim's clock, which its rate windows count; else the clock. */
  startedAt: string | null = null,
): Promise<ClaimedRun[]> {
  if (!chosen.length) return [];
  const ids = chosen.map((c) => c.id);
  await sql.execute(
    `UPDATE durable_runs
     SET order_at = CASE WHEN started_at IS NULL THEN order_at - INTERVAL 1000 MICROSECOND ELSE order_at END,
         status = 'RUNNING', lease_owner = ?, lease_epoch = lease_epoch + 1, attempt = attempt + 1,
         lease_expires_at = ${NOW_PLUS_MS}, started_at = coalesce(started_at, ${startedAt === null ? NOW : '?'}), updated_at = ${NOW}
     WHERE id IN (${marks(ids.length)}) AND status IN ('PENDING', 'WAITING') AND available_at <= ${DUE_BY}`,
    [owner, leaseMs, ...(startedAt === null ? [] : [startedAt]), ...ids],
  );
  // Only the rows the UPDATE took: it checks due-ness again on the rows as they are now (a locking
  // read through a secondary index can return a row that a transaction it waited for has changed,
  // e.g. a debounced start that moved the run's start later).
  const rows = await sql.query<Record<string, unknown>>(
    `SELECT id, workflow_name, input, lease_epoch, attempt, parent_id, deadline_at, available_at,
            cancel_requested_at IS NOT NULL AS cancelling, error AS failing, traceparent, context
     FROM durable_runs WHERE id IN (${marks(ids.length)}) AND status = 'RUNNING' AND lease_owner = ?`,
    [...ids, owner],
  );
  const steps = await recordedSteps(sql, ids);
  const prev = new Map(chosen.map((c) => [c.id, c.status]));
  const byId = new Map(
    rows.map((r): [string, ClaimedRun] => [
      r.id as string,
      {
        id: r.id as string,
        workflowName: r.workflow_name as string,
        input: json(r.input),
        epoch: Number(r.lease_epoch),
        attempt: Number(r.attempt),
        parentId: (r.parent_id as string | null) ?? null,
        deadlineAt: date(r.deadline_at),
        availableAt: date(r.available_at),
        cancelRequested: bool(r.cancelling),
        failing: json<RunFailure>(r.failing),
        traceparent: (r.traceparent as string | null) ?? null,
        context: json(r.context) ?? null,
        steps: steps.get(r.id as string) ?? [],
      },
    ]),
  );
  const claimed = ids.map((id) => byId.get(id)!).filter(Boolean);
  await insertHistory(
    sql,
    history,
    claimed.map((c) => [c.id, prev.get(c.id) === 'WAITING' ? 'woken' : 'claimed', { worker: owner, epoch: c.epoch, attempt: c.attempt }]),
  );
  return claimed;
}

/**
 * The claim's indexes, named: led by (queue, status), they return due rows in claim order, so the
 * LIMIT stops the scan (and the locking) at the rows taken. Left to itself, the optimizer may pick a
 * (status, …) index and sort every pending row, locking them all.
 */
const USE = { PENDING: 'FORCE INDEX (durable_runs_claim_idx)', WAITING: 'FORCE INDEX (durable_runs_wake_idx)' } as const;

/**
 * See claim() in leases.ts. Claims nothing from a queue that has cluster-wide limits. One statement
 * first asks, without locking, whether anything is due (the limits test included): an idle worker's
 * poll costs that one statement; only then does the claim's transaction lock and lease runs.
 */
export async function claim(store: Store, request: ClaimRequest): Promise<ClaimedRun[]> {
  const { queue, limit, owner, leaseMs, workflows, versions = null } = request;
  if (!workflows.length || limit < 1) return [];
  const versionTest = versions ? ` AND (app_version IS NULL OR app_version IN (${marks(versions.length)}))` : '';
  const filter = [queue, ...workflows, ...(versions ?? [])];
  const dueWhere = (status: 'PENDING' | 'WAITING') =>
    `queue = ? AND status = '${status}' AND available_at <= ${DUE_BY} AND workflow_name IN (${marks(workflows.length)})${versionTest}`;
  const [probe] = await store.sql.query<{ due: unknown }>(
    `SELECT NOT EXISTS (SELECT 1 FROM durable_queue_limits WHERE queue = ? AND ${HAS_LIMIT})
        AND (EXISTS (SELECT 1 FROM durable_runs ${USE.PENDING} WHERE ${dueWhere('PENDING')}) OR EXISTS (SELECT 1 FROM durable_runs ${USE.WAITING} WHERE ${dueWhere('WAITING')})) AS due`,
    [queue, ...filter, ...filter],
  );
  if (!bool(probe?.due)) return [];
  return store.sql.transaction(async (sql) => {
    const [limited] = await sql.query(`SELECT 1 AS x FROM durable_queue_limits WHERE queue = ? AND ${HAS_LIMIT}`, [queue]);
    if (limited) return [];
    const due = (status: 'PENDING' | 'WAITING', order: string) =>
      sql.query<Due>(
        `SELECT id, status, priority, order_at, available_at FROM durable_runs ${USE[status]} WHERE ${dueWhere(status)}
         ORDER BY ${order} LIMIT ? FOR UPDATE SKIP LOCKED`,
        [...filter, limit],
      );
    const pending = await due('PENDING', 'priority, order_at, available_at');
    const waiting = await due('WAITING', 'available_at');
    const chosen = [...pending, ...waiting].sort(inQueueOrder).slice(0, limit);
    return leaseChosen(sql, store.history, chosen, owner, leaseMs);
  });
}

/** The held runs among `held` (RUNNING under their epoch), locked in id order; `live`: only unexpired leases. */
async function lockHeld(sql: SqlClient, held: HeldRun[], live: boolean): Promise<Array<{ id: string; queue: string }>> {
  const rows = await sql.query<{ id: string; queue: string; lease_epoch: number }>(
    `SELECT id, queue, lease_epoch FROM durable_runs
     WHERE id IN (${marks(held.length)}) AND status = 'RUNNING'${live ? ` AND lease_expires_at > ${NOW}` : ''}
     ORDER BY id FOR UPDATE`,
    held.map((h) => h.id),
  );
  const epochs = new Map(held.map((h) => [h.id, h.epoch]));
  return rows.filter((r) => Number(r.lease_epoch) === epochs.get(r.id));
}

/** See leaseHeartbeat() in leases.ts. */
export async function leaseHeartbeat(store: Store, held: HeldRun[], leaseMs: number): Promise<Map<string, { cancelling: boolean }>> {
  if (!held.length) return new Map();
  return store.sql.transaction(async (sql) => {
    const kept = (await lockHeld(sql, held, true)).map((r) => r.id);
    if (!kept.length) return new Map();
    await sql.execute(`UPDATE durable_runs SET lease_expires_at = ${NOW_PLUS_MS} WHERE id IN (${marks(kept.length)})`, [leaseMs, ...kept]);
    const rows = await sql.query<{ id: string; cancelling: unknown }>(
      `SELECT id, cancel_requested_at IS NOT NULL AS cancelling FROM durable_runs WHERE id IN (${marks(kept.length)})`,
      kept,
    );
    return new Map(rows.map((r) => [r.id, { cancelling: bool(r.cancelling) }]));
  });
}

/** Makes `ids` claimable at once, in their old place in the queue. */
const MAKE_PENDING = (n: number) => `
UPDATE durable_runs SET status = 'PENDING', lease_owner = NULL, lease_expires_at = NULL,
  available_at = least(available_at, ${NOW}), updated_at = ${NOW}
WHERE id IN (${marks(n)})`;

/** See releaseRuns() in leases.ts. */
export async function releaseRuns(store: Store, held: HeldRun[]): Promise<number> {
  if (!held.length) return 0;
  return store.sql.transaction(async (sql) => {
    const locked = await lockHeld(sql, held, false);
    const kept = locked.map((r) => r.id);
    if (!kept.length) return 0;
    await sql.execute(MAKE_PENDING(kept.length), kept);
    await insertHistory(
      sql,
      store.history,
      kept.map((id) => [id, 'released', null]),
    );
    wakeQueues(sql, locked);
    return kept.length;
  });
}

/** See sweepExpiredLeases() in leases.ts. Index: durable_runs_lease_idx (status, lease_expires_at). */
export async function sweepExpiredLeases(store: Store, batch: number): Promise<number> {
  if (!(await anyRow(store.sql, `SELECT 1 FROM durable_runs WHERE status = 'RUNNING' AND lease_expires_at < ${NOW} LIMIT 1`))) return 0;
  return store.sql.transaction(async (sql) => {
    const expired = await sql.query<{ id: string; queue: string; lease_owner: string | null; lease_epoch: number }>(
      `SELECT id, queue, lease_owner, lease_epoch FROM durable_runs WHERE status = 'RUNNING' AND lease_expires_at < ${NOW}
       ORDER BY lease_expires_at LIMIT ? FOR UPDATE SKIP LOCKED`,
      [batch],
    );
    if (!expired.length) return 0;
    await sql.execute(
      MAKE_PENDING(expired.length),
      expired.map((x) => x.id),
    );
    await insertHistory(
      sql,
      store.history,
      expired.map((x) => [x.id, 'lease_expired', { worker: x.lease_owner, epoch: Number(x.lease_epoch) }]),
    );
    wakeQueues(sql, expired);
    return expired.length;
  });
}
