// Jest loads this file on its own (CommonJS, without its module mapping): a relative import here
// names its file without an extension, which both that loader and the test workers resolve.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { applyMigrations } from '../../libs/durable/src/embedded-postgres/migrations';

/** The machine's Postgres, used when it answers (CI tests PostgreSQL 15 there). */
const SYSTEM_URL = 'postgresql://postgres@127.0.0.1:5432';
/** Server the tests run against (set by globalSetup for the workers); each test file gets a fresh database cloned from the template. */
export const serverUrl = () => process.env.TEST_PG_URL ?? SYSTEM_URL;
/** One template per test run (several runs may share the server), named after the jest process. */
export const TEMPLATE_DB = process.env.DURABLE_TEST_TEMPLATE ?? `durable_test_tpl_${process.pid}`;
export const urlFor = (db: string) => `${serverUrl()}/${db}`;

/** Tables only the tests use: execution counters and a ledger without unique constraints. */
export const TEST_TABLES = `
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

/** Applies prisma/migrations/* in order (what `prisma migrate deploy` runs) to a new database `name`, then the test tables. */
export async function buildTemplate(name = TEMPLATE_DB): Promise<void> {
  await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await adminQuery(`CREATE DATABASE ${name}`);
  await applyMigrations(urlFor(name), join(process.cwd(), 'prisma', 'migrations'));
  const c = new pg.Client({ connectionString: urlFor(name) });
  await c.connect();
  try {
    await c.query(TEST_TABLES);
  } finally {
    await c.end();
  }
}

/** Does something accept TCP connections on 127.0.0.1:`port` (5432: Postgres)? */
function systemServerAnswers(port = 5432): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, timeout: 2_000 });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

/**
 * The server of this run: TEST_PG_URL if set; else DURABLE_TEST_PG=embedded (a server of the
 * run's own, also when 5432 answers) or =system (127.0.0.1:5432); else 127.0.0.1:5432 when it
 * answers, and an embedded one when nothing does.
 */
async function useEmbeddedServer(): Promise<boolean> {
  if (process.env.TEST_PG_URL) return false;
  const choice = process.env.DURABLE_TEST_PG ?? '';
  if (!['', 'embedded', 'system'].includes(choice)) throw new Error(`DURABLE_TEST_PG must be "embedded" or "system" (got "${choice}")`);
  return choice === 'embedded' || (choice === '' && !(await systemServerAnswers()));
}

const EMBEDDED_PREFIX = 'durable-test-pg-';
/** How global-teardown finds the embedded server of this run. */
type EmbeddedTeardown = typeof globalThis & { stopDurableTestServer?: () => void };

/** libs/durable/src/embedded-postgres/cli.ts, the example's embedded Postgres, run by tsx: this file cannot import it. */
function embeddedPg(args: string[]): string {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'libs/durable/src/embedded-postgres/cli.ts', ...args], {
    cwd: process.cwd(),
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
    timeout: 120_000,
  });
  if (r.status !== 0)
    throw new Error(`embedded Postgres for the tests: \`${args.join(' ')}\` failed (exit ${r.status ?? r.signal}):\n${r.stderr}`);
  return r.stdout;
}

/** Servers of earlier runs that were killed before their teardown: stopped, their folders removed. */
function removeAbandonedServers(): void {
  for (const name of readdirSync(tmpdir()).filter((n) => n.startsWith(EMBEDDED_PREFIX))) {
    const owner = Number(name.slice(EMBEDDED_PREFIX.length).split('-')[0]);
    if (!Number.isInteger(owner) || alive(owner)) continue;
    embeddedPg(['stop', '--dir', join(tmpdir(), name, 'data')]);
    rmSync(join(tmpdir(), name), { recursive: true, force: true });
  }
}

/** A server for this run: a fresh cluster in a temp folder, on a free port; global-teardown stops it. */
function startEmbeddedServer(): string {
  removeAbandonedServers();
  const dir = mkdtempSync(join(tmpdir(), `${EMBEDDED_PREFIX}${process.pid}-`));
  chmodSync(dir, 0o755); // run as root, the server runs as the OS user "postgres", which must get in
  // Global variables set here are what global-teardown can see (same process).
  (globalThis as EmbeddedTeardown).stopDurableTestServer = () => {
    embeddedPg(['stop', '--dir', join(dir, 'data')]);
    rmSync(dir, { recursive: true, force: true });
  };
  const { url } = JSON.parse(embeddedPg(['start', '--dir', join(dir, 'data')])) as { url: string };
  return url.replace(/\/postgres$/, '');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Once per test run: the server (see useEmbeddedServer), and a migrated template database that every test file clones. */
export default async function globalSetup(): Promise<void> {
  if (await useEmbeddedServer()) {
    const started = Date.now();
    process.env.TEST_PG_URL = startEmbeddedServer(); // inherited by the test workers
    console.log(`\nembedded Postgres for this run: ${process.env.TEST_PG_URL} (${Date.now() - started} ms)`);
  }
  process.env.DURABLE_TEST_TEMPLATE = TEMPLATE_DB; // inherited by the test workers
  await buildTemplate();
  await findMariaDb();
}

/**
 * The suites parametrised by database also run on MariaDB when one answers (DURABLE_TEST_MARIADB_URL,
 * default mysql://root@127.0.0.1:3306): DURABLE_TEST_MARIADB=1 tells the test workers. Without one
 * they run on Postgres alone, saying so; DURABLE_REQUIRE_MARIADB=1 (CI sets it) makes that an error.
 */
async function findMariaDb(): Promise<void> {
  const url = new URL(process.env.DURABLE_TEST_MARIADB_URL ?? 'mysql://root@127.0.0.1:3306');
  const answers = url.hostname === '127.0.0.1' ? await systemServerAnswers(Number(url.port || 3306)) : true;
  if (answers) process.env.DURABLE_TEST_MARIADB = '1';
  else if (process.env.DURABLE_REQUIRE_MARIADB === '1')
    throw new Error(`no MariaDB answers at ${url.host}; DURABLE_REQUIRE_MARIADB=1 requires it`);
  else
    console.log(`
no MariaDB at ${url.host}: the suites parametrised by database run on Postgres only`);
}
