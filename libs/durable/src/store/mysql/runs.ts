/** Runs on a MySQL-family database: starting them (one, many, or many already claimed) and reading them. */
import { HAS_LIMIT } from '../flow-limits.js';
import type { SqlClient } from '../sql-client.js';
import type { Store } from '../store.js';
import type { ClaimedRun, NewRun, RunRow, RunStatus } from '../rows.js';
import { wakeQueues } from './checkpoints.js';
import { date, insertHistory, insertTags, isDuplicateKey, json, marks, NOW, NOW_PLUS_MS, utc } from './sql.js';

/** When a run is first due: its run-at (else now) plus its delay. Parameters: run-at, delay ms. */
const FIRST_DUE = `(coalesce(?, ${NOW}) + INTERVAL ROUND(coalesce(?, 0) * 1000) MICROSECOND)`;
/** The deadline of a run with a timeout (null: none). Parameter: timeout ms. */
const DEADLINE = `(${NOW} + INTERVAL ROUND(?  * 1000) MICROSECOND)`;

const INSERT_COLUMNS = `id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, parent_id, app_version,
  concurrency_key, traceparent, context, tags, lease_owner, lease_epoch, lease_expires_at, attempt, started_at, created_at, updated_at`;

/** One run's VALUES row for INSERT_COLUMNS; `lease`: inserted RUNNING, already claimed by its owner. */
function valuesRow(r: NewRun, appVersion: string | null, lease: { owner: string; ms: number } | null): { sql: string; params: unknown[] } {
  const runAt = utc(r.runAt);
  const tags = r.tags.length ? JSON.stringify(r.tags) : null;
  const timeout = r.timeoutMs == null ? 'NULL' : DEADLINE;
  const sql = lease
    ? `(?, ?, ?, 'RUNNING', ?, ?, ${NOW}, ${NOW}, ${timeout}, ?, ?, ?, ?, ?, ?, ?, 1, ${NOW_PLUS_MS}, 1, ${NOW}, ${NOW}, ${NOW})`
    : `(?, ?, ?, 'PENDING', ?, ?, ${FIRST_DUE}, ${FIRST_DUE}, ${timeout}, ?, ?, ?, ?, ?, ?, NULL, 0, NULL, 0, NULL, ${NOW}, ${NOW})`;
  const params: unknown[] = [r.id, r.workflowName, r.queue, r.input, r.priority];
  if (!lease) params.push(runAt, r.delayMs, runAt, r.delayMs);
  if (r.timeoutMs != null) params.push(r.timeoutMs);
  params.push(r.parentId, appVersion ?? r.appVersion, r.concurrencyKey, r.traceparent ?? null, r.context ?? null, tags);
  if (lease) params.push(lease.owner, lease.ms);
  return { sql, params };
}

/**
 * Inserts the runs whose ids do not exist yet; returns those ids. Existing ids are read first, the
 * rest inserted in one statement; a concurrent start of one of the same ids makes it fail with a
 * duplicate key (nothing of it written; MySQL rolls back the statement, not the transaction): then
 * the whole is tried again, and that id is found existing.
 */
async function insertNew(sql: SqlClient, runs: NewRun[], row: (r: NewRun) => { sql: string; params: unknown[] }): Promise<NewRun[]> {
  for (let again = false; ; again = true) {
    // After a duplicate, a locking read: in the app's transaction (REPEATABLE READ, MariaDB's default)
    // a plain read keeps the snapshot that did not have the other start's row, and would never see it.
    const existing = await sql.query<{ id: string }>(
      `SELECT id FROM durable_runs WHERE id IN (${marks(runs.length)})${again ? ' LOCK IN SHARE MODE' : ''}`,
      runs.map((r) => r.id),
    );
    const taken = new Set(existing.map((e) => e.id));
    const fresh = runs.filter((r) => !taken.has(r.id));
    if (!fresh.length) return [];
    const rows = fresh.map(row);
    try {
      await sql.execute(
        `INSERT INTO durable_runs (${INSERT_COLUMNS}) VALUES ${rows.map((x) => x.sql).join(', ')}`,
        rows.flatMap((x) => x.params),
      );
      await insertTags(sql, fresh);
      return fresh;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
  }
}

/** A run due at once (no delay, no run-at in the future): its queue gets a wake-up. */
const dueNow = (r: NewRun) => !r.delayMs && (!r.runAt || r.runAt.getTime() <= Date.now());

const created = (r: NewRun): [string, string, Record<string, unknown>] => [r.id, 'created', { workflow: r.workflowName, queue: r.queue }];

export async function insertRun(store: Store, r: NewRun): Promise<boolean> {
  return store.sql.transaction(async (sql) => {
    const inserted = await insertNew(sql, [r], (x) => valuesRow(x, null, null));
    await insertHistory(sql, store.history, inserted.map(created));
    wakeQueues(sql, inserted.filter(dueNow));
    return inserted.length === 1;
  });
}

export async function insertRuns(store: Store, runs: NewRun[], appVersion: string | null): Promise<Set<string>> {
  if (!runs.length) return new Set();
  return store.sql.transaction(async (sql) => {
    const inserted = await insertNew(sql, runs, (x) => valuesRow(x, appVersion, null));
    await insertHistory(sql, store.history, inserted.map(created));
    wakeQueues(sql, inserted.filter(dueNow));
    return new Set(inserted.map((r) => r.id));
  });
}

/**
 * Inserts runs already leased to `lease.owner` (RUNNING, epoch 1), except those of a queue with
 * cluster-wide limits, inserted PENDING ('queued'): they go through the limited claim.
 */
export async function insertRunsClaimed(
  store: Store,
  runs: NewRun[],
  lease: { owner: string; ms: number },
  appVersion: string | null,
): Promise<Map<string, ClaimedRun | 'queued'>> {
  if (!runs.length) return new Map();
  return store.sql.transaction(async (sql) => {
    const queues = [...new Set(runs.map((r) => r.queue))];
    const limited = new Set(
      (
        await sql.query<{ queue: string }>(
          `SELECT queue FROM durable_queue_limits WHERE queue IN (${marks(queues.length)}) AND ${HAS_LIMIT}`,
          queues,
        )
      ).map((l) => l.queue),
    );
    const inserted = await insertNew(sql, runs, (r) => valuesRow(r, appVersion, limited.has(r.queue) ? null : lease));
    if (!inserted.length) return new Map();
    const read = await sql.query<{ id: string; deadline_at: unknown; available_at: unknown }>(
      `SELECT id, deadline_at, available_at FROM durable_runs WHERE id IN (${marks(inserted.length)})`,
      inserted.map((r) => r.id),
    );
    const times = new Map(read.map((t) => [t.id, t]));
    const history: Array<[string, string, Record<string, unknown>]> = [];
    const result = new Map<string, ClaimedRun | 'queued'>();
    for (const r of inserted) {
      history.push(created(r));
      if (limited.has(r.queue)) {
        result.set(r.id, 'queued');
        continue;
      }
      history.push([r.id, 'claimed', { worker: lease.owner, epoch: 1, attempt: 1 }]);
      const t = times.get(r.id);
      result.set(r.id, {
        id: r.id,
        workflowName: r.workflowName,
        input: JSON.parse(r.input),
        epoch: 1,
        attempt: 1,
        parentId: r.parentId,
        deadlineAt: date(t?.deadline_at),
        availableAt: date(t?.available_at),
        traceparent: r.traceparent ?? null,
        context: r.context ? JSON.parse(r.context) : null,
        steps: [],
      });
    }
    await insertHistory(sql, store.history, history);
    wakeQueues(
      sql,
      inserted.filter((r) => limited.has(r.queue)),
    );
    return result;
  });
}

export async function runIdentities(store: Store, ids: string[]): Promise<Map<string, { workflowName: string; status: RunStatus }>> {
  if (!ids.length) return new Map();
  const rows = await store.sql.query<{ id: string; workflow_name: string; status: RunStatus }>(
    `SELECT id, workflow_name, status FROM durable_runs WHERE id IN (${marks(ids.length)})`,
    ids,
  );
  return new Map(rows.map((r) => [r.id, { workflowName: r.workflow_name, status: r.status }]));
}

const RUN_COLUMNS = `id, workflow_name, queue, status, input, output, error, priority, available_at, lease_owner,
  lease_expires_at, lease_epoch, attempt, parent_id, app_version, deadline_at, created_at, started_at, finished_at, updated_at,
  cancel_requested_at, progress, concurrency_key, traceparent, context`;

export async function getRun(store: Store, id: string): Promise<RunRow | null> {
  const [row] = await store.sql.query<Record<string, unknown>>(`SELECT ${RUN_COLUMNS} FROM durable_runs WHERE id = ?`, [id]);
  if (!row) return null;
  const steps = await store.sql.query<Record<string, unknown>>(
    `SELECT seq, name, status, output, error, attempts, started_at, finished_at, compensation, compensates
     FROM durable_steps WHERE run_id = ? ORDER BY seq`,
    [id],
  );
  return {
    ...(row as unknown as RunRow),
    lease_epoch: Number(row.lease_epoch),
    attempt: Number(row.attempt),
    priority: Number(row.priority),
    input: json(row.input),
    output: json(row.output),
    error: json(row.error),
    progress: json(row.progress),
    context: json(row.context),
    available_at: date(row.available_at)!,
    lease_expires_at: date(row.lease_expires_at),
    deadline_at: date(row.deadline_at),
    created_at: date(row.created_at)!,
    started_at: date(row.started_at),
    finished_at: date(row.finished_at),
    updated_at: date(row.updated_at)!,
    cancel_requested_at: date(row.cancel_requested_at),
    steps: steps.map((s) => ({
      seq: Number(s.seq),
      name: s.name as string,
      status: s.status as RunRow['steps'][number]['status'],
      output: json(s.output),
      error: json(s.error),
      attempts: Number(s.attempts),
      startedAt: s.started_at == null ? null : date(s.started_at)!.toISOString(),
      finishedAt: date(s.finished_at)!.toISOString(),
      compensation: json(s.compensation),
      compensates: s.compensates == null ? null : Number(s.compensates),
    })),
  };
}

export async function getResult(store: Store, id: string): Promise<{ status: RunStatus; output: unknown; error: unknown } | null> {
  const [row] = await store.sql.query<{ status: RunStatus; output: unknown; error: unknown }>(
    'SELECT status, output, error FROM durable_runs WHERE id = ?',
    [id],
  );
  return row ? { status: row.status, output: json(row.output), error: json(row.error) } : null;
}

export async function runStatus(store: Store, id: string): Promise<RunStatus | null> {
  const [row] = await store.sql.query<{ status: RunStatus }>('SELECT status FROM durable_runs WHERE id = ?', [id]);
  return row?.status ?? null;
}
