/** Runs: starting them (one, many, or many already claimed by this worker) and reading them. */
import * as mysql from './mysql/runs.js';
import { statement } from './statement.js';
import { HAS_LIMIT } from './flow-limits.js';
import { DUE_BY, history, WAKEUP_CHANNEL } from './sql-fragments.js';
import { parsed, perPartition, runStore, toDate, type Store } from './store.js';
import * as partitioned from './partitioned-starts.js';
import type { ClaimedRun, NewRun, RunRow, RunStatus } from './rows.js';

/** When a run started with $6 run-at (null = now) and $7 delay ms (null = none) is first due. */
const FIRST_DUE = `coalesce($6::timestamptz, now()) + coalesce($7::float8, 0) * interval '1 millisecond'`;

/**
 * Enqueue one run (PENDING). $1 id, $2 workflow, $3 queue, $4 input jsonb, $5 priority,
 * $6 run-at (null = now), $7 delay ms (null = none), $8 timeout ms (deadline from now; null = none),
 * $9 parent id, $10 app version, $11 history, $12 concurrency key, $13 traceparent (the trace context
 * of the start; null without OpenTelemetry or an active span), $14 tags text[], $15 context jsonb (null: none). Existing id → no row (idempotent start).
 * order_at (the run's place in its queue, see QUEUE_ORDER in leases.ts) = available_at: when it is first due.
 * The pg_notify is delivered when the enclosing transaction commits, never on rollback. Whether the run
 * is due is decided by the final SELECT, not in RETURNING (Citus refuses a clock there).
 */
const INSERT_RUN = statement(
  'insert_run',
  `
WITH ins AS (
  INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, parent_id, app_version,
                            concurrency_key, traceparent, tags, context)
  VALUES ($1, $2, $3, 'PENDING', $4::jsonb, $5, ${FIRST_DUE}, ${FIRST_DUE},
          now() + $8::float8 * interval '1 millisecond', $9, $10, $12, $13, $14::text[], $15::jsonb)
  ON CONFLICT (id) DO NOTHING
  RETURNING id, queue, available_at),
hist AS (${history('$11', `SELECT id, 'created', jsonb_build_object('workflow', $2::text, 'queue', queue) FROM ins WHERE true`)})
SELECT id, CASE WHEN available_at <= ${DUE_BY} THEN pg_notify('${WAKEUP_CHANNEL}', queue) END IS NULL AS notified FROM ins`,
);

/**
 * Enqueue runs already claimed by this worker (it has a free slot for each; it executes them right
 * after this statement returns, with no claim round trip and no wake-up). Concurrent starts of one
 * process go together (group commit, engine/start-batch.ts). Parameters numbered as INSERT_RUN's, arrays
 * (one element per run) where a run has its own value: $1 ids, $2 workflows, $3 queues, $4 inputs (json text),
 * $5 priorities, $6 lease owner, $7 lease ms, $8 timeout ms (null = none), $9 parent ids, $10 app version,
 * $11 history, $12 concurrency keys, $13 traceparents, $14 tags (a JSON array of strings per run, as text),
 * $15 contexts (json text or null). Only for a queue without cluster-wide limits: the worker checks its list of limited queues, and the
 * statement checks again (that list may be stale: limits set at runtime on another instance), inserting
 * a run of a queue that has limits PENDING and unclaimed (claimed: false; a wake-up for its queue), so it
 * goes through the limited claim like any other. t is MATERIALIZED so that check runs once per run:
 * inlined, each of the six CASEs on t.lim got its own copy of the subquery, which nearly doubled the
 * statement's planning time (`npm run statement-costs`), and the plan cache re-plans small batches often.
 */
const INSERT_RUNS_CLAIMED = statement(
  'insert_runs_claimed',
  `
WITH t AS MATERIALIZED (
  SELECT t.*, EXISTS (SELECT 1 FROM durable_queue_limits l WHERE l.queue = t.q AND ${HAS_LIMIT}) AS lim
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $8::float8[], $9::text[], $12::text[], $13::text[], $14::text[], $15::text[])
       AS t(id, wf, q, inp, pr, tmo, par, ck, tp, tg, cx)),
ins AS (
INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, deadline_at, parent_id,
                          app_version, lease_owner, lease_epoch, lease_expires_at, attempt, started_at, concurrency_key, traceparent, tags, context)
SELECT t.id, t.wf, t.q, CASE WHEN t.lim THEN 'PENDING' ELSE 'RUNNING' END, t.inp::jsonb, t.pr, now(),
       now() + t.tmo * interval '1 millisecond', t.par, $10,
       CASE WHEN t.lim THEN NULL ELSE $6 END, CASE WHEN t.lim THEN 0 ELSE 1 END,
       CASE WHEN t.lim THEN NULL ELSE now() + $7::float8 * interval '1 millisecond' END,
       CASE WHEN t.lim THEN 0 ELSE 1 END, CASE WHEN t.lim THEN NULL ELSE now() END,
       t.ck, t.tp, ARRAY(SELECT jsonb_array_elements_text(t.tg::jsonb)), t.cx::jsonb
FROM t
ON CONFLICT (id) DO NOTHING
RETURNING id, workflow_name, queue, status, lease_epoch, attempt, deadline_at, available_at),
hist AS (${history(
    '$11',
    `SELECT id, v.kind, v.detail FROM ins CROSS JOIN LATERAL (VALUES
  (1, 'created', jsonb_build_object('workflow', ins.workflow_name, 'queue', ins.queue)),
  (2, 'claimed', jsonb_build_object('worker', $6::text, 'epoch', 1, 'attempt', 1))) AS v(o, kind, detail) WHERE (v.o = 1 OR ins.status = 'RUNNING')`,
  )}),
woken AS (SELECT count(pg_notify('${WAKEUP_CHANNEL}', q.queue)) AS n FROM (SELECT DISTINCT queue FROM ins WHERE status = 'PENDING') q)
SELECT id, status = 'RUNNING' AS claimed, lease_epoch, attempt, deadline_at, available_at FROM ins CROSS JOIN woken`,
);

/**
 * Enqueue many runs in one statement (startMany). Arrays, one element per run: $1 ids, $2 workflows,
 * $3 queues, $4 inputs (json text), $5 priorities, $6 run-at (null = now), $7 timeout ms (null = none),
 * $8 parent ids, $9 app version (one value), $10 history, $11 concurrency keys, $12 traceparents, $13 tags (a JSON
 * array of strings per run, as text), $14 contexts (json text or null). Returns the ids actually inserted; one wake-up per queue. order_at as INSERT_RUN.
 */
const INSERT_RUNS = statement(
  'insert_runs',
  `
WITH ins AS (
  INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, parent_id, app_version,
                            concurrency_key, traceparent, tags, context)
  SELECT t.id, t.wf, t.q, 'PENDING', t.inp::jsonb, t.pr, coalesce(t.ra, now()), coalesce(t.ra, now()), now() + t.tmo * interval '1 millisecond', t.par, $9,
         t.ck, t.tp, ARRAY(SELECT jsonb_array_elements_text(t.tg::jsonb)), t.cx::jsonb
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::timestamptz[], $7::float8[], $8::text[], $11::text[],
              $12::text[], $13::text[], $14::text[])
       AS t(id, wf, q, inp, pr, ra, tmo, par, ck, tp, tg, cx)
  ON CONFLICT (id) DO NOTHING
  RETURNING id, workflow_name, queue),
hist AS (${history('$10', `SELECT id, 'created', jsonb_build_object('workflow', workflow_name, 'queue', queue) FROM ins WHERE true`)}),
woken AS (SELECT count(pg_notify('${WAKEUP_CHANNEL}', q.queue)) AS n FROM (SELECT DISTINCT queue FROM ins) q)
SELECT ins.id FROM ins CROSS JOIN woken`,
);

/** Existing runs by id: workflow name and status (idempotent start resolves conflicts with it). */
const SELECT_RUN_IDENTITY = statement(
  'select_run_identity',
  `SELECT id, workflow_name, status FROM durable_runs WHERE id = ANY($1::text[])`,
);

const RUN_COLUMNS = `id, workflow_name, queue, status, input, output, error, priority, available_at, lease_owner,
  lease_expires_at, lease_epoch, attempt, parent_id, app_version, deadline_at, created_at, started_at, finished_at, updated_at,
  cancel_requested_at, progress, concurrency_key, traceparent, context`;

/** One run with its steps (WorkflowClient.getRun). */
const SELECT_RUN = statement(
  'select_run',
  `
SELECT ${RUN_COLUMNS},
  (SELECT coalesce(json_agg(json_build_object('seq', s.seq, 'name', s.name, 'status', s.status, 'output', s.output,
     'error', s.error, 'attempts', s.attempts, 'startedAt', s.started_at, 'finishedAt', s.finished_at,
     'compensation', s.compensation, 'compensates', s.compensates) ORDER BY s.seq), '[]'::json)
   FROM durable_steps s WHERE s.run_id = r.id) AS steps
FROM durable_runs r WHERE r.id = $1`,
);

/** Status and result of one run (WorkflowHandle.result polls it). */
const SELECT_RUN_RESULT = statement('select_run_result', `SELECT status, output, error FROM durable_runs WHERE id = $1`);

/** Status of one run (to explain why cancel/resume changed nothing). */
const SELECT_RUN_STATUS = statement('select_run_status', `SELECT status FROM durable_runs WHERE id = $1`);

/** Inserts a PENDING run; false when the id already existed. */
export async function insertRun(store: Store, r: NewRun): Promise<boolean> {
  if (store.sql.dialect === 'mysql') return mysql.insertRun(store, r);
  store = runStore(store, r.id);
  if (store.partition !== undefined) return partitioned.insertRunInPartition(store, r);
  const rows = await store.sql.query(INSERT_RUN, [
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
    store.history,
    r.concurrencyKey,
    r.traceparent ?? null,
    r.tags,
    r.context ?? null,
  ]);
  return rows.length === 1;
}

/**
 * Inserts runs already leased to `lease.owner` for `lease.ms` (ids distinct), in one statement; the runs inserted by id
 * (an id that already existed is absent), 'queued' for a run inserted unclaimed because its queue has limits.
 */
export async function insertRunsClaimed(
  store: Store,
  runs: NewRun[],
  lease: { owner: string; ms: number },
  appVersion: string | null,
): Promise<Map<string, ClaimedRun | 'queued'>> {
  if (store.sql.dialect === 'mysql') return mysql.insertRunsClaimed(store, runs, lease, appVersion);
  const each = await perPartition(
    store,
    runs,
    (r) => r.id,
    async (s, group) => [...(await insertClaimedIn(s, group, lease, appVersion))],
  );
  return new Map(each);
}

async function insertClaimedIn(
  store: Store,
  runs: NewRun[],
  lease: { owner: string; ms: number },
  appVersion: string | null,
): Promise<Map<string, ClaimedRun | 'queued'>> {
  const rows =
    store.partition !== undefined
      ? await partitioned.insertRunsClaimedInPartition(store, runs, lease, appVersion)
      : await store.sql.query<partitioned.ClaimedInsertRow>(INSERT_RUNS_CLAIMED, [
          runs.map((r) => r.id),
          runs.map((r) => r.workflowName),
          runs.map((r) => r.queue),
          runs.map((r) => r.input),
          runs.map((r) => r.priority),
          lease.owner,
          lease.ms,
          runs.map((r) => r.timeoutMs),
          runs.map((r) => r.parentId),
          appVersion,
          store.history,
          runs.map((r) => r.concurrencyKey),
          runs.map((r) => r.traceparent ?? null),
          runs.map((r) => JSON.stringify(r.tags)),
          runs.map((r) => r.context ?? null),
        ]);
  const byId = new Map(runs.map((r) => [r.id, r]));
  return new Map(
    rows.map((row): [string, ClaimedRun | 'queued'] => {
      const r = byId.get(row.id)!;
      if (!row.claimed) return [r.id, 'queued'];
      const claimed: ClaimedRun = {
        id: r.id,
        workflowName: r.workflowName,
        input: JSON.parse(r.input),
        epoch: row.lease_epoch,
        attempt: row.attempt,
        parentId: r.parentId,
        deadlineAt: toDate(row.deadline_at),
        availableAt: toDate(row.available_at),
        traceparent: r.traceparent ?? null,
        context: r.context ? JSON.parse(r.context) : null,
        steps: [],
      };
      return [r.id, claimed];
    }),
  );
}

/** Inserts many PENDING runs in one statement; returns the ids that were new. */
export async function insertRuns(store: Store, runs: NewRun[], appVersion: string | null): Promise<Set<string>> {
  if (store.sql.dialect === 'mysql') return mysql.insertRuns(store, runs, appVersion);
  return new Set(
    await perPartition(
      store,
      runs,
      (r) => r.id,
      async (s, group) => [...(await insertRunsIn(s, group, appVersion))],
    ),
  );
}

async function insertRunsIn(store: Store, runs: NewRun[], appVersion: string | null): Promise<Set<string>> {
  if (store.partition !== undefined) return partitioned.insertRunsInPartition(store, runs, appVersion);
  const rows = await store.sql.query<{ id: string }>(INSERT_RUNS, [
    runs.map((r) => r.id),
    runs.map((r) => r.workflowName),
    runs.map((r) => r.queue),
    runs.map((r) => r.input),
    runs.map((r) => r.priority),
    runs.map((r) => (r.runAt ? r.runAt.toISOString() : r.delayMs ? new Date(Date.now() + r.delayMs).toISOString() : null)),
    runs.map((r) => r.timeoutMs),
    runs.map((r) => r.parentId),
    appVersion,
    store.history,
    runs.map((r) => r.concurrencyKey),
    runs.map((r) => r.traceparent ?? null),
    runs.map((r) => JSON.stringify(r.tags)),
    runs.map((r) => r.context ?? null),
  ]);
  return new Set(rows.map((r) => r.id));
}

/** Existing runs by id: workflow and status (to tell an idempotent start from a conflicting one). */
export async function runIdentities(store: Store, ids: string[]): Promise<Map<string, { workflowName: string; status: RunStatus }>> {
  if (store.sql.dialect === 'mysql') return mysql.runIdentities(store, ids);
  const rows = await perPartition(
    store,
    ids,
    (id) => id,
    (s, group) => s.sql.query<{ id: string; workflow_name: string; status: RunStatus }>(SELECT_RUN_IDENTITY, [group]),
  );
  return new Map(rows.map((r) => [r.id, { workflowName: r.workflow_name, status: r.status }]));
}

export async function getRun(store: Store, id: string): Promise<RunRow | null> {
  if (store.sql.dialect === 'mysql') return mysql.getRun(store, id);
  store = runStore(store, id);
  const [row] = await store.sql.query<RunRow>(SELECT_RUN, [id]);
  if (!row) return null;
  row.steps = parsed(row.steps);
  return row;
}

export async function getResult(store: Store, id: string): Promise<{ status: RunStatus; output: unknown; error: unknown } | null> {
  if (store.sql.dialect === 'mysql') return mysql.getResult(store, id);
  store = runStore(store, id);
  const [row] = await store.sql.query<{ status: RunStatus; output: unknown; error: unknown }>(SELECT_RUN_RESULT, [id]);
  return row ?? null;
}

/** The run's status and workflow (primary key), or null. */
const SELECT_RUN_WORKFLOW = statement('select_run_workflow', `SELECT status, workflow_name FROM durable_runs WHERE id = $1`);

export async function runWorkflow(store: Store, id: string): Promise<{ status: RunStatus; workflowName: string } | null> {
  const sql = store.sql.dialect === 'mysql' ? 'SELECT status, workflow_name FROM durable_runs WHERE id = ?' : SELECT_RUN_WORKFLOW;
  const [row] = await runStore(store, id).sql.query<{ status: RunStatus; workflow_name: string }>(sql, [id]);
  return row ? { status: row.status, workflowName: row.workflow_name } : null;
}

export async function runStatus(store: Store, id: string): Promise<RunStatus | null> {
  if (store.sql.dialect === 'mysql') return mysql.runStatus(store, id);
  store = runStore(store, id);
  const [row] = await store.sql.query<{ status: RunStatus }>(SELECT_RUN_STATUS, [id]);
  return row?.status ?? null;
}
