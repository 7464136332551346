/**
 * Test databases (test-only SQL): one per test file, copied from a template that holds the schema
 * (the package's schema.sql or the app's migrations, plus the app's SQL) and the virtual clock. The
 * template is built once per schema (its name carries a hash of the schema) and kept, so later test
 * files and runs only copy it (CREATE DATABASE … TEMPLATE, tens of ms). Administrative SQL on the
 * server's `postgres` database. Used by the testing kit and the repository's own test support.
 */
import pg from 'pg';
import { installVirtualClock, useVirtualClock } from './virtual-clock.js';

/** Serializes template builds and copies among processes (the test files of one Jest run). */
const TEMPLATE_LOCK = 'SELECT pg_advisory_lock(hashtext($1))';
const TEMPLATE_UNLOCK = 'SELECT pg_advisory_unlock(hashtext($1))';
const LOCK_KEY = 'nestjs-durable testing templates';

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** A Postgres URL with another database name. */
export function databaseUrl(serverUrl: string, database: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${database}`;
  return u.toString();
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url, application_name: 'nestjs-durable testing' });
  c.on('error', () => {}); // a server stopped under the client: the query in flight reports it
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => {});
  }
}

/**
 * Creates `database` as a copy of the template `template`, building the template first if it does
 * not exist (`build` given the URL of the database being built, then the virtual clock), and points
 * its `now()` at the virtual clock. `adminUrl`: any database of the server (e.g. postgres).
 */
export async function createDatabaseFromTemplate(
  adminUrl: string,
  template: string,
  database: string,
  build: (url: string) => Promise<void>,
): Promise<void> {
  await withClient(databaseUrl(adminUrl, 'postgres'), async (admin) => {
    await admin.query(TEMPLATE_LOCK, [LOCK_KEY]);
    try {
      const { rows } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [template]);
      if (!rows.length) {
        // Built under another name and renamed when complete: a build that died half-way is never used.
        const building = `${template}_build`;
        await admin.query(`DROP DATABASE IF EXISTS ${ident(building)} WITH (FORCE)`);
        await admin.query(`CREATE DATABASE ${ident(building)}`);
        try {
          await build(databaseUrl(adminUrl, building));
          await withClient(databaseUrl(adminUrl, building), installVirtualClock);
        } catch (err) {
          await admin.query(`DROP DATABASE IF EXISTS ${ident(building)} WITH (FORCE)`).catch(() => {});
          throw err;
        }
        await admin.query(`ALTER DATABASE ${ident(building)} RENAME TO ${ident(template)}`);
        await pruneTemplates(admin, template);
      }
      await admin.query(`CREATE DATABASE ${ident(database)} TEMPLATE ${ident(template)}`);
      await useVirtualClock(admin, database);
      // A test database need not survive a server crash: commits do not wait for the disk (what
      // makes a loaded CI machine slow), everything else behaves as on any database.
      await admin.query(`ALTER DATABASE ${ident(database)} SET synchronous_commit = off`);
      // Nor do its statements gain from JIT compilation: the fresh tables have no statistics, so
      // the planner's default guesses can put a one-row statement over jit_above_cost and spend
      // 100-500 ms compiling it (seen on the virtual clock's move, the first time per connection).
      await admin.query(`ALTER DATABASE ${ident(database)} SET jit = off`);
    } finally {
      await admin.query(TEMPLATE_UNLOCK, [LOCK_KEY]).catch(() => {});
    }
  });
}

/** Templates kept per server: a schema that changes (new migrations) leaves its older templates behind; the newest few stay. */
const TEMPLATES_KEPT = 4;

/** Drops the older templates of the same family (`<prefix>tpl_<hash>`), beyond the newest TEMPLATES_KEPT (by oid). Under the template lock: nobody copies them meanwhile. */
async function pruneTemplates(admin: pg.Client, template: string): Promise<void> {
  const family = template.replace(/[0-9a-f]+$/, '');
  const { rows } = await admin.query<{ datname: string }>(
    `SELECT datname FROM pg_database WHERE starts_with(datname, $1) AND datname <> $2 AND NOT datname LIKE '%\\_build' ORDER BY oid DESC OFFSET $3`,
    [family, template, TEMPLATES_KEPT - 1],
  );
  for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${ident(datname)}`).catch(() => {});
}

/**
 * Drops a test database once its sessions are gone, then forces out any left. `pool.end()`
 * resolves before the server has closed the pool's connections; terminating them (WITH FORCE) in
 * that gap makes the ended pool emit an 'error' nobody listens to, which jest reports against
 * whichever test runs next. So the drop waits (up to 5 s) for the sessions to leave first.
 */
export async function dropDatabase(adminUrl: string, database: string): Promise<void> {
  await withClient(databaseUrl(adminUrl, 'postgres'), async (admin) => {
    for (const until = Date.now() + 5_000; Date.now() < until;) {
      const { rows } = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [database]);
      if (rows[0].n === 0) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await admin.query(`DROP DATABASE IF EXISTS ${ident(database)} WITH (FORCE)`);
  });
}

/** Test databases named `<prefix><pid>_…` whose process is gone (killed before cleaning up): dropped. */
export async function dropAbandonedDatabases(adminUrl: string, prefix: string, alive: (pid: number) => boolean): Promise<string[]> {
  return withClient(databaseUrl(adminUrl, 'postgres'), async (admin) => {
    const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [prefix]);
    const dropped: string[] = [];
    for (const { datname } of rows) {
      const pid = Number(datname.slice(prefix.length).split('_')[0]);
      if (!Number.isInteger(pid) || alive(pid)) continue;
      await admin.query(`DROP DATABASE IF EXISTS ${ident(datname)} WITH (FORCE)`);
      dropped.push(datname);
    }
    return dropped;
  });
}
