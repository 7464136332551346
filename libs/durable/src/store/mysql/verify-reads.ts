/**
 * What `verify` reads on a MySQL-family database (see verify-reads.ts): a keyset page of runs with
 * their checkpoints, inside one `START TRANSACTION READ ONLY` at REPEATABLE READ (one snapshot for
 * every page; the server refuses any write in it), always ended by ROLLBACK.
 */
import type { RunStatus, VerifyRunRow } from '../rows.js';
import { lazyMysqlPool, mysqlPoolConfig, queryableClient } from '../mysql-client.js';
import { createStore, type Store } from '../store.js';
import { recordedSteps } from './leases.js';
import { json, marks, NOW } from './sql.js';

/** See VERIFY_RUNS_PAGE in verify-reads.ts; the checkpoints come with a second read of the page's runs (durable_steps' primary key). */
export async function verifyRunsPage(
  store: Store,
  after: string,
  opts: { finishedWithinMs: number | null; workflows: string[] | null; limit: number },
): Promise<VerifyRunRow[]> {
  const finished = opts.finishedWithinMs === null ? '' : ` OR r.finished_at > ${NOW} - INTERVAL ROUND(? * 1000) MICROSECOND`;
  const workflows = opts.workflows ? ` AND r.workflow_name IN (${marks(opts.workflows.length)})` : '';
  const rows = await store.sql.query<Record<string, unknown>>(
    `SELECT r.id, r.workflow_name, r.status, r.app_version, r.input, r.context FROM durable_runs r
     WHERE r.id > ? AND (r.status IN ('PENDING', 'RUNNING', 'WAITING')${finished})${workflows}
     ORDER BY r.id LIMIT ?`,
    [after, ...(opts.finishedWithinMs === null ? [] : [opts.finishedWithinMs]), ...(opts.workflows ?? []), opts.limit],
  );
  const steps = await recordedSteps(
    store.sql,
    rows.map((r) => r.id as string),
  );
  return rows.map((r) => ({
    id: r.id as string,
    workflowName: r.workflow_name as string,
    status: r.status as RunStatus,
    appVersion: (r.app_version as string | null) ?? null,
    input: json(r.input),
    context: json(r.context),
    steps: steps.get(r.id as string) ?? [],
  }));
}

/** Runs `fn` with a store on a connection of its own to `url`, inside a READ ONLY transaction ended by ROLLBACK. */
export async function withReadOnlyTransaction<T>(url: string, fn: (store: Store) => Promise<T>): Promise<T> {
  const pool = lazyMysqlPool({ ...mysqlPoolConfig(url, 1), connectionLimit: 1 });
  try {
    const conn = await (await pool.get()).getConnection();
    try {
      await conn.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
      await conn.query('START TRANSACTION READ ONLY');
      try {
        return await fn(createStore(queryableClient(conn), { history: false }));
      } finally {
        await conn.query('ROLLBACK').catch(() => {});
      }
    } finally {
      await conn.release().catch(() => {});
    }
  } finally {
    await pool.end().catch(() => {});
  }
}
