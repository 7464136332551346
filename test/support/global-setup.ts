// Jest loads this file on its own (CommonJS, no module mapping): keep it free of relative imports.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

/** Server the tests run against; each test file gets a fresh database cloned from the template. */
export const SERVER_URL = process.env.TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432';
/** One template per test run (several runs may share the server), named after the jest process. */
export const TEMPLATE_DB = process.env.DURABLE_TEST_TEMPLATE ?? `durable_test_tpl_${process.pid}`;
export const urlFor = (db: string) => `${SERVER_URL}/${db}`;

/** Tables only the tests use: execution counters and a ledger without unique constraints. */
const TEST_TABLES = `
CREATE TABLE test_step_executions (run_id text NOT NULL, step text NOT NULL, pid int, at timestamptz DEFAULT clock_timestamp());
CREATE INDEX ON test_step_executions (run_id, step);
CREATE TABLE test_ledger (run_id text NOT NULL, step text NOT NULL, amount int NOT NULL DEFAULT 1, pid int, at timestamptz DEFAULT clock_timestamp());
CREATE INDEX ON test_ledger (run_id, step);
`;

export async function adminQuery(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: urlFor('postgres') });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** Applies prisma/migrations/* in order (what `prisma migrate deploy` runs), then the test tables. */
export async function buildTemplate(): Promise<void> {
  await adminQuery(`DROP DATABASE IF EXISTS ${TEMPLATE_DB} WITH (FORCE)`);
  await adminQuery(`CREATE DATABASE ${TEMPLATE_DB}`);
  const dir = join(process.cwd(), 'prisma', 'migrations');
  const c = new pg.Client({ connectionString: urlFor(TEMPLATE_DB) });
  await c.connect();
  try {
    for (const m of readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort()) {
      await c.query(readFileSync(join(dir, m, 'migration.sql'), 'utf8'));
    }
    await c.query(TEST_TABLES);
  } finally {
    await c.end();
  }
}

/** Once per test run: a migrated template database that every test file clones. */
export default async function globalSetup(): Promise<void> {
  process.env.DURABLE_TEST_TEMPLATE = TEMPLATE_DB; // inherited by the test workers
  await buildTemplate();
}
