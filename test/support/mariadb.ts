import { readFileSync } from 'node:fs';
import { createConnection } from 'mariadb';
import type { TestDatabase } from './db.js';

/** The MariaDB server of the tests (CI starts it; root may connect over TCP from 127.0.0.1 without a password). */
export const MARIADB_SERVER = process.env.DURABLE_TEST_MARIADB_URL ?? 'mysql://root@127.0.0.1:3306';

const SCHEMA = readFileSync(new URL('../../libs/durable/prisma/schema.mysql.sql', import.meta.url), 'utf8');

/** The tests' own tables (as global-setup.ts's TEST_TABLES on Postgres): execution counters and a ledger without unique constraints. */
const TEST_TABLES = `
CREATE TABLE test_step_executions (run_id VARCHAR(256) NOT NULL, step VARCHAR(200) NOT NULL, pid INT,
  at DATETIME(3) DEFAULT (UTC_TIMESTAMP(3)), INDEX (run_id, step)) COLLATE utf8mb4_bin;
CREATE TABLE test_ledger (run_id VARCHAR(256) NOT NULL, step VARCHAR(200) NOT NULL, amount INT NOT NULL DEFAULT 1, pid INT,
  at DATETIME(3) DEFAULT (UTC_TIMESTAMP(3)), INDEX (run_id, step)) COLLATE utf8mb4_bin;`;

export async function onServer<T>(fn: (c: Awaited<ReturnType<typeof createConnection>>) => Promise<T>, database?: string): Promise<T> {
  const u = new URL(MARIADB_SERVER);
  const c = await createConnection({
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username) || 'root',
    password: u.password ? decodeURIComponent(u.password) : undefined,
    database,
    multipleStatements: true,
  });
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A fresh MariaDB database for one test file: the durable_* tables of schema.mysql.sql and the tests' own tables (and `extraSql`). */
export async function createMariaTestDatabase(label: string, extraSql = ''): Promise<TestDatabase> {
  const name = `durable_test_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${process.pid}_${Math.floor(Math.random() * 1e6)}`;
  await onServer((c) => c.query(`CREATE DATABASE \`${name}\``));
  await onServer((c) => c.query(SCHEMA + TEST_TABLES + extraSql), name);
  const url = `${MARIADB_SERVER.replace(/\/$/, '')}/${name}`;
  return { name, url, drop: () => onServer((c) => c.query(`DROP DATABASE IF EXISTS \`${name}\``)).then(() => {}) };
}

/** Runs SQL on a test database (assertions read the tables directly). */
export async function mariaQuery<T = Record<string, unknown>>(database: string, sql: string, params: unknown[] = []): Promise<T[]> {
  return onServer(async (c) => (await c.query({ sql, timezone: 'Z' } as never, params)) as T[], database);
}
