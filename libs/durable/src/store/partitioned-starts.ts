/**
 * Starting runs in one partition (distributed mode, store/partitions.ts): INSERT_RUN, INSERT_RUNS and
 * INSERT_RUNS_CLAIMED (runs.ts) as statements Citus sends whole to the partition's node. A
 * single-server start inserts the run, its history and its wake-up in one statement; here the run is
 * a top-level INSERT … VALUES (Citus routes no INSERT that has a CTE), its history rows a second one
 * (row-values.ts), in the same transaction (the app's, for a start inside it), and the wake-up a
 * statement without tables, which the coordinator sends when that transaction commits.
 */
import { statement } from './statement.js';
import { DUE_BY, WAKEUP_CHANNEL } from './sql-fragments.js';
import { HAS_LIMIT } from './flow-limits.js';
import { insertHistoryRows, insertValues, notifyAll, type HistoryRow } from './row-values.js';
import type { Store } from './store.js';
import type { NewRun } from './rows.js';

/** INSERT_RUN's parameters (runs.ts) but $11 history: $11 concurrency key, $12 traceparent, $13 tags, $14 context. */
const INSERT_RUN_IN_PARTITION = statement(
  'insert_run_in_partition',
  `
INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, parent_id, app_version,
                          concurrency_key, traceparent, tags, context)
VALUES ($1, $2, $3, 'PENDING', $4::jsonb, $5, coalesce($6::timestamptz, now()) + coalesce($7::float8, 0) * interval '1 millisecond',
        coalesce($6::timestamptz, now()) + coalesce($7::float8, 0) * interval '1 millisecond',
        now() + $8::float8 * interval '1 millisecond', $9, $10, $11, $12, $13::text[], $14::jsonb)
ON CONFLICT (id) DO NOTHING
RETURNING id, queue, available_at`,
);

/** The wake-up of queue $1 when a run first due at $2 is due now (a statement without tables: Citus runs it on the coordinator). */
const WAKE_IF_DUE = statement(
  'wake_if_due',
  `SELECT pg_notify('${WAKEUP_CHANNEL}', $1) IS NULL AS notified WHERE $2::timestamptz <= ${DUE_BY}`,
);

/** Inserts a PENDING run in `store`'s partition; false when the id already existed. */
export async function insertRunInPartition(store: Store, r: NewRun): Promise<boolean> {
  return store.sql.transaction(async (sql) => {
    const [row] = await sql.query<{ id: string; queue: string; available_at: Date }>(INSERT_RUN_IN_PARTITION, [
      r.id,
      r.workflowName,
      r.queue,
      r.input,
      r.priority,
      r.runAt,
      r.delayMs,
      r.timeoutMs,
      r.parentId,
      r.appVersion,
      r.concurrencyKey,
      r.traceparent ?? null,
      r.tags,
      r.context ?? null,
    ]);
    if (!row) return false;
    await insertHistoryRows(sql, store.history, [[r.id, 'created', { workflow: r.workflowName, queue: row.queue }]]);
    await sql.query(WAKE_IF_DUE, [row.queue, row.available_at]);
    return true;
  });
}

const RUNS_HEAD = `INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, parent_id,
  app_version, concurrency_key, traceparent, tags, context)`;

/** Inserts many PENDING runs in `store`'s partition (as INSERT_RUNS); returns the ids that were new. */
export async function insertRunsInPartition(store: Store, runs: NewRun[], appVersion: string | null): Promise<Set<string>> {
  return store.sql.transaction(async (sql) => {
    const rows = await insertValues<{ id: string; workflow_name: string; queue: string }>(
      sql,
      RUNS_HEAD,
      [
        '?',
        '?',
        '?',
        `'PENDING'`,
        '?::jsonb',
        '?::int',
        'coalesce(?::timestamptz, now())',
        'coalesce(?::timestamptz, now())',
        `now() + ?::float8 * interval '1 millisecond'`,
        '?',
        '?',
        '?',
        '?',
        '?::text[]',
        '?::jsonb',
      ],
      runs.map((r) => {
        const at = r.runAt ? r.runAt.toISOString() : r.delayMs ? new Date(Date.now() + r.delayMs).toISOString() : null;
        const { id, workflowName, queue, input, priority, timeoutMs, parentId, concurrencyKey, tags } = r;
        return [
          id,
          workflowName,
          queue,
          input,
          priority,
          at,
          at,
          timeoutMs,
          parentId,
          appVersion,
          concurrencyKey,
          r.traceparent ?? null,
          tags,
          r.context ?? null,
        ];
      }),
      'ON CONFLICT (id) DO NOTHING RETURNING id, workflow_name, queue',
    );
    await insertHistoryRows(
      sql,
      store.history,
      rows.map((r): HistoryRow => [r.id, 'created', { workflow: r.workflow_name, queue: r.queue }]),
    );
    await notifyAll(
      sql,
      [...new Set(rows.map((r) => r.queue))].map((q) => [WAKEUP_CHANNEL, q]),
    );
    return new Set(rows.map((r) => r.id));
  });
}

/** Of the queues $1, those with cluster-wide limits (durable_queue_limits, a reference table: read where the coordinator has it). */
const LIMITED_QUEUES = statement('limited_queues', `SELECT queue FROM durable_queue_limits WHERE queue = ANY($1::text[]) AND ${HAS_LIMIT}`);

/** A row INSERT_RUNS_CLAIMED returns (runs.ts reads it). */
export interface ClaimedInsertRow {
  id: string;
  claimed: boolean;
  lease_epoch: number;
  attempt: number;
  deadline_at: unknown;
  available_at: unknown;
}

/**
 * Inserts runs already leased to `lease.owner` in `store`'s partition (as INSERT_RUNS_CLAIMED): a run
 * of a queue with limits is inserted PENDING and unclaimed, with a wake-up for its queue.
 */
export async function insertRunsClaimedInPartition(
  store: Store,
  runs: NewRun[],
  lease: { owner: string; ms: number },
  appVersion: string | null,
): Promise<ClaimedInsertRow[]> {
  return store.sql.transaction(async (sql) => {
    const limited = new Set(
      (await sql.query<{ queue: string }>(LIMITED_QUEUES, [[...new Set(runs.map((r) => r.queue))]])).map((r) => r.queue),
    );
    const rows = await insertValues<ClaimedInsertRow & { workflow_name: string; queue: string; status: string }>(
      sql,
      `INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, deadline_at, parent_id, app_version,
  lease_owner, lease_epoch, lease_expires_at, attempt, started_at, concurrency_key, traceparent, tags, context)`,
      [
        '?',
        '?',
        '?',
        '?',
        '?::jsonb',
        '?::int',
        'now()',
        `now() + ?::float8 * interval '1 millisecond'`,
        '?',
        '?',
        '?',
        '?::int',
        `now() + ?::float8 * interval '1 millisecond'`,
        '?::int',
        'CASE WHEN ?::boolean THEN now() END',
        '?',
        '?',
        '?::text[]',
        '?::jsonb',
      ],
      runs.map((r) => {
        const claimed = !limited.has(r.queue);
        const { id, workflowName, queue, input, priority, timeoutMs, parentId, concurrencyKey, tags } = r;
        return [
          id,
          workflowName,
          queue,
          claimed ? 'RUNNING' : 'PENDING',
          input,
          priority,
          timeoutMs,
          parentId,
          appVersion,
          claimed ? lease.owner : null,
          claimed ? 1 : 0,
          claimed ? lease.ms : null,
          claimed ? 1 : 0,
          claimed,
          concurrencyKey,
          r.traceparent ?? null,
          tags,
          r.context ?? null,
        ];
      }),
      'ON CONFLICT (id) DO NOTHING RETURNING id, workflow_name, queue, status, lease_epoch, attempt, deadline_at, available_at',
    );
    await insertHistoryRows(
      sql,
      store.history,
      rows.flatMap((r): HistoryRow[] => [
        [r.id, 'created', { workflow: r.workflow_name, queue: r.queue }],
        ...(r.status === 'RUNNING' ? [[r.id, 'claimed', { worker: lease.owner, epoch: 1, attempt: 1 }] as HistoryRow] : []),
      ]),
    );
    await notifyAll(
      sql,
      [...new Set(rows.filter((r) => r.status === 'PENDING').map((r) => r.queue))].map((q) => [WAKEUP_CHANNEL, q]),
    );
    return rows.map((r) => ({ ...r, claimed: r.status === 'RUNNING' }));
  });
}
