/**
 * MariaDB for the bench (`npm run bench -- databases`): scratch databases made from the library's
 * schema.mysql.sql, the engine's runs read back, and the server's counters. The connections use the
 * library's own settings for a mysql:// URL (mysqlPoolConfig: UTC session, READ COMMITTED), so DATETIME
 * columns read as the engine writes them.
 */
import { readFileSync } from 'node:fs';
import { createConnection, type Connection, type ConnectionConfig } from 'mariadb';
import { scratchName } from './db.js';
import { mysqlPoolConfig } from '../../libs/durable/src/store/mysql-client.js';
import type { Timing } from './peers/ours-measure.js';

const SCHEMA = new URL('../../libs/durable/prisma/schema.mysql.sql', import.meta.url);
/** The server's own schemas: never dropped, whatever the name rules of db.ts say. */
const SYSTEM = ['mysql', 'information_schema', 'performance_schema', 'sys'];

/** A connection to `url` (its database, or none when the URL has no path), with the engine's session settings. */
export async function mariaConnect(url: string, extra: Record<string, unknown> = {}): Promise<Connection> {
  return createConnection({ ...mysqlPoolConfig(url, 1), ...extra } as ConnectionConfig);
}

/** Runs `fn` with a fresh connection to `url`, closed afterwards whatever happens. */
export async function withMaria<T>(url: string, fn: (c: Connection) => Promise<T>): Promise<T> {
  const c = await mariaConnect(url);
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => {});
  }
}

/** The server of `url` without its database. */
function serverUrl(url: string): string {
  const u = new URL(url);
  u.pathname = '/';
  return u.toString();
}

function mariaScratchName(url: string, what: string): string {
  const name = scratchName(url, what);
  if (SYSTEM.includes(name)) throw new Error(`refusing to ${what} database "${name}": a system schema`);
  return name;
}

/** Drop (if present) and create the database named in `url`, with the tables of libs/durable/prisma/schema.mysql.sql. */
export async function recreateMariaDatabase(url: string): Promise<void> {
  const name = mariaScratchName(url, 'recreate');
  await withMaria(serverUrl(url), async (c) => {
    await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await c.query(`CREATE DATABASE \`${name}\``);
  });
  const c = await mariaConnect(url, { multipleStatements: true });
  try {
    await c.query(readFileSync(SCHEMA, 'utf8'));
  } finally {
    await c.end();
  }
}

export async function dropMariaDatabase(url: string): Promise<void> {
  const name = mariaScratchName(url, 'drop');
  await withMaria(serverUrl(url), (c) => c.query(`DROP DATABASE IF EXISTS \`${name}\``));
}

/** The runs whose id starts with `prefix`, as readTimings() reads them on Postgres (database clock, epoch ms). */
export async function readMariaTimings(url: string, prefix: string): Promise<Timing[]> {
  return withMaria(url, async (c) => {
    const rows = await c.query<Array<{ status: string; c: string; s: string | null; f: string | null }>>(
      `SELECT status, UNIX_TIMESTAMP(created_at) * 1000 AS c, UNIX_TIMESTAMP(started_at) * 1000 AS s,
              UNIX_TIMESTAMP(finished_at) * 1000 AS f
         FROM durable_runs WHERE id LIKE ?`,
      [`${prefix}%`],
    );
    return rows.map((r) => ({ status: r.status, created: Number(r.c), started: Number(r.s), finished: Number(r.f) }));
  });
}

/** The runs by status and one failure's error: what a stalled phase reports (statusSummary() of stall.ts, on MariaDB). */
export async function mariaStatusSummary(url: string): Promise<string> {
  return withMaria(url, async (c) => {
    const rows = await c.query<Array<{ status: string; n: bigint }>>(
      'SELECT status, count(*) AS n FROM durable_runs GROUP BY status ORDER BY status',
    );
    const failed = await c.query<Array<{ error: string }>>(
      `SELECT LEFT(JSON_UNQUOTE(JSON_EXTRACT(error, '$.message')), 300) AS error FROM durable_runs WHERE status = 'FAILED' LIMIT 1`,
    );
    return `runs by status: ${rows.map((r) => `${r.status} ${r.n}`).join(', ')}${failed[0] ? `; a failed one: ${failed[0].error}` : ''}`;
  });
}

/** The server's `Questions` counter: statements clients sent (the statement reading it included). */
export async function questions(c: Connection): Promise<number> {
  const [row] = await c.query<Array<{ Value: string }>>("SHOW GLOBAL STATUS LIKE 'Questions'");
  return Number(row.Value);
}

/** Other clients' connections (not `ownDb`'s, not this one): what a server-wide counter also counts. */
export async function otherConnections(c: Connection, ownDb: string): Promise<string[]> {
  const rows = await c.query<Array<{ who: string }>>(
    `SELECT CONCAT(USER, '@', COALESCE(DB, '-'), ' ', COMMAND) AS who FROM information_schema.PROCESSLIST
      WHERE ID <> CONNECTION_ID() AND COALESCE(DB, '') <> ? AND COMMAND NOT IN ('Daemon', 'Binlog Dump')`,
    [ownDb],
  );
  return rows.map((r) => r.who);
}

/** Version and the settings that decide what a commit costs. */
export async function mariaServerInfo(url: string): Promise<Record<string, string>> {
  return withMaria(serverUrl(url), async (c) => {
    const rows = await c.query<Array<{ Variable_name: string; Value: string }>>(
      `SHOW GLOBAL VARIABLES WHERE Variable_name IN ('version', 'innodb_flush_log_at_trx_commit', 'sync_binlog', 'log_bin',
         'innodb_buffer_pool_size', 'max_connections', 'innodb_stats_auto_recalc')`,
    );
    return Object.fromEntries(rows.map((r) => [r.Variable_name, r.Value]));
  });
}
