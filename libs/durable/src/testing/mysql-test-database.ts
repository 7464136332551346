/**
 * Test databases on a MariaDB server (test-only SQL): one per test file, named with the process id
 * like the PostgreSQL ones (so the databases of killed test processes on this machine are dropped),
 * made from the package's schema.mysql.sql or the app's Prisma migrations (applied in name order),
 * the extra SQL, and the virtual clock's table. MariaDB has no CREATE DATABASE … TEMPLATE: each is
 * built directly (a few hundred ms for the durable tables).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { readMigrations } from '../embedded-postgres/migrations.js';
import { InvalidOptionsError } from '../errors/index.js';
import { mysqlPoolConfig } from '../store/mysql-client.js';
import { CREATE_VIRTUAL_CLOCK } from './virtual-clock-mysql.js';
import type { DurableTestDatabase, TestSchemaOptions } from './test-database-options.js';

/** libs/durable/prisma/schema.mysql.sql: two folders up from src/testing (sources) and dist/testing (build) alike. */
const PACKAGED_MYSQL_SCHEMA = fileURLToPath(new URL('../../prisma/schema.mysql.sql', import.meta.url));

interface Conn {
  query(sql: string, values?: unknown[]): Promise<unknown>;
  end(): Promise<void>;
}

async function connect(url: string, database: string | null): Promise<Conn> {
  const mariadb = await import('mariadb').catch((err: Error) => {
    throw new InvalidOptionsError(`testing: a mysql:// test database needs the mariadb driver: npm install -D mariadb (${err.message}).`);
  });
  const config = { ...mysqlPoolConfig(url, 1), database: database ?? undefined, multipleStatements: true };
  return (await mariadb.createConnection(config as never)) as unknown as Conn;
}

const ident = (name: string) => `\`${name.replace(/`/g, '``')}\``;

/** The server URL with another database. */
function withDatabase(serverUrl: string, database: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function openMysqlTestDatabase(
  serverUrl: string,
  prefix: string,
  schema: TestSchemaOptions,
  alive: (pid: number) => boolean,
): Promise<{ db: DurableTestDatabase; close: () => Promise<void> }> {
  const parts = schema.migrations ? readMigrations(schema.migrations).map((m) => m.sql) : [readFileSync(PACKAGED_MYSQL_SCHEMA, 'utf8')];
  parts.push(...(schema.sql ?? []), CREATE_VIRTUAL_CLOCK);
  const name = `${prefix}${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = await connect(serverUrl, null);
  try {
    if (['127.0.0.1', 'localhost', '[::1]'].includes(new URL(serverUrl).hostname)) {
      const rows = (await admin.query('SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ?', [
        `${prefix}%`,
      ])) as Array<{ name: string }>;
      for (const { name: old } of rows) {
        const pid = Number(old.slice(prefix.length).split('_')[0]);
        if (Number.isInteger(pid) && !alive(pid)) await admin.query(`DROP DATABASE IF EXISTS ${ident(old)}`).catch(() => {});
      }
    }
    await admin.query(`CREATE DATABASE ${ident(name)} CHARACTER SET utf8mb4`);
  } finally {
    await admin.end().catch(() => {});
  }
  const drop = async () => {
    const c = await connect(serverUrl, null);
    try {
      await c.query(`DROP DATABASE IF EXISTS ${ident(name)}`);
    } finally {
      await c.end().catch(() => {});
    }
  };
  try {
    const c = await connect(serverUrl, name);
    try {
      for (const sql of parts) await c.query(sql);
    } finally {
      await c.end().catch(() => {});
    }
  } catch (err) {
    await drop().catch(() => {});
    throw err;
  }
  return { db: { name, url: withDatabase(serverUrl, name), kind: 'url' }, close: drop };
}
