/** What `verify` reads: runs with their checkpoints, a page at a time, inside one READ ONLY transaction. */
import { isMysqlUrl } from './dialect.js';
import * as mysql from './mysql/verify-reads.js';
import pg from 'pg';
import { statement } from './statement.js';
import { STEPS_OF_R } from './sql-fragments.js';
import { pgConfigFromUrl } from './pool.js';
import { pgSqlClient } from './sql-client.js';
import { createStore, parsed, type Store } from './store.js';
import type { RecordedStep, RunStatus, VerifyRunRow } from './rows.js';
export type { VerifyRunRow } from './rows.js';

/**
 * A keyset page of runs to verify, after id $1, at most $4: unfinished runs (PENDING, RUNNING,
 * WAITING), and when $2 (ms) is given also runs that finished within the last $2 ms; $3 (text[])
 * keeps only these workflows (null: all). Each row carries the run's checkpoints (STEPS_OF_R).
 * Index: the primary key, walked in id order from $1 (one pass over the table across all pages;
 * no index of its own, so the hot paths pay nothing for it). Locks: none (a plain read, in the
 * caller's READ ONLY snapshot).
 */
const VERIFY_RUNS_PAGE = statement(
  'verify_runs_page',
  `
SELECT r.id, r.workflow_name, r.status, r.app_version, r.input, r.context, ${STEPS_OF_R} AS steps
FROM durable_runs r
WHERE r.id > $1
  AND (r.status IN ('PENDING','RUNNING','WAITING')
       OR ($2::float8 IS NOT NULL AND r.finished_at > now() - $2::float8 * interval '1 millisecond'))
  AND ($3::text[] IS NULL OR r.workflow_name = ANY($3::text[]))
ORDER BY r.id
LIMIT $4`,
);

/** The next page of runs to verify after `after` (keyset on id). */
export async function verifyRunsPage(
  store: Store,
  after: string,
  opts: { finishedWithinMs: number | null; workflows: string[] | null; limit: number },
): Promise<VerifyRunRow[]> {
  if (store.sql.dialect === 'mysql') return mysql.verifyRunsPage(store, after, opts);
  const rows = await store.sql.query<Record<string, unknown>>(VERIFY_RUNS_PAGE, [after, opts.finishedWithinMs, opts.workflows, opts.limit]);
  return rows.map((r) => ({
    id: r.id as string,
    workflowName: r.workflow_name as string,
    status: r.status as RunStatus,
    appVersion: (r.app_version as string | null) ?? null,
    input: r.input,
    context: r.context ?? null,
    steps: parsed<RecordedStep[]>(r.steps),
  }));
}

/**
 * Runs `fn` with a store on one connection inside `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`
 * (one snapshot for every page; Postgres refuses any write in it), always ended by ROLLBACK: the
 * transaction commits nothing. `connection`: a Postgres URL (a connection of its own, closed after)
 * or a pg Pool (a client checked out and returned); a mysql:// URL reads MariaDB the same way.
 */
export async function withReadOnlyTransaction<T>(connection: string | pg.Pool, fn: (store: Store) => Promise<T>): Promise<T> {
  if (typeof connection === 'string' && isMysqlUrl(connection)) return mysql.withReadOnlyTransaction(connection, fn);
  const config = typeof connection === 'string' ? pgConfigFromUrl(connection) : null;
  const own = config ? new config.Client({ ...config, application_name: 'nestjs-durable verify' }) : null;
  const client = own ?? (await (connection as pg.Pool).connect());
  // A connection lost between two reads emits 'error' on the client: handled here (the next read fails).
  let broken: Error | undefined;
  const onError = (e: Error) => (broken = e);
  client.on('error', onError);
  try {
    if (own) await own.connect();
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    try {
      return await fn(createStore(pgSqlClient(client, { prepared: false }), { history: false }));
    } finally {
      await client.query('ROLLBACK').catch(() => {});
    }
  } finally {
    client.removeListener('error', onError);
    if (own) await own.end().catch(() => {});
    else (client as pg.PoolClient).release(broken);
  }
}
