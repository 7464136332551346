/** Database housekeeping for the bench: recreate a scratch database, read pg_stat_database. */
import pg from 'pg';

const PROTECTED = [/^test$/, /^postgres$/, /^durable_dev$/, /^durable_test/, /^template[01]$/];

let prefix = 'bench';

/**
 * `--db-prefix P` (default "bench"): every database the bench creates or drops is named `P_<what>`, so two
 * benches on one server never drop each other's. Taken out of `argv` (in place) before any sub-command parses it.
 */
export function takeDbPrefix(argv: string[]): void {
  const i = argv.findIndex((x) => x === '--db-prefix' || x.startsWith('--db-prefix='));
  if (i < 0) return;
  const inline = argv[i].startsWith('--db-prefix=');
  const value = inline ? argv[i].slice('--db-prefix='.length) : argv[i + 1];
  if (!value || !/^[a-z_][a-z0-9_]*$/.test(value)) throw new Error(`--db-prefix must match [a-z_][a-z0-9_]*, got ${value}`);
  argv.splice(i, inline ? 1 : 2);
  prefix = value;
}

/** The URL of the bench's scratch database `<prefix>_<what>` on the server at `pgUrl`. */
export function benchDbUrl(pgUrl: string, what: string): string {
  return `${pgUrl.replace(/\/+$/, '')}/${prefix}_${what}`;
}

export function databaseName(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  if (!name) throw new Error(`no database name in ${url}`);
  return name;
}

function maintenanceUrl(url: string): string {
  const u = new URL(url);
  u.pathname = '/postgres';
  return u.toString();
}

/** The database name of `url`, refused when protected or unusual (every database the bench drops goes through here). */
export function scratchName(url: string, what: string): string {
  const name = databaseName(url);
  if (PROTECTED.some((re) => re.test(name)) || !/^[a-z_][a-z0-9_]*$/.test(name)) {
    throw new Error(`refusing to ${what} database "${name}": protected or unusual name`);
  }
  return name;
}

/** Runs `fn` with a fresh connection to `url`, closed afterwards whatever happens. */
export async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Drop (if present) and create the database named in `url`. Refuses protected names. */
export async function recreateDatabase(url: string): Promise<void> {
  const name = scratchName(url, 'recreate');
  await withClient(maintenanceUrl(url), async (client) => {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await client.query(`CREATE DATABASE "${name}"`);
  });
}

/** Drop the database named in `url` if present. Refuses protected names. */
export async function dropDatabase(url: string): Promise<void> {
  const name = scratchName(url, 'drop');
  await withClient(maintenanceUrl(url), (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

export interface DbStats {
  xactCommit: number;
  tupWritten: number;
}

/**
 * pg_stat_database counters for `dbName`, read over a connection to the
 * maintenance database so the read itself does not count against `dbName`.
 * Backends flush their counters at most once a second and on exit, so read
 * "after" once the peer's connections are closed.
 */
export async function readDbStats(url: string, dbName = databaseName(url)): Promise<DbStats> {
  return withClient(maintenanceUrl(url), async (client) => {
    const { rows } = await client.query(
      `SELECT xact_commit::bigint AS c, (tup_inserted + tup_updated + tup_deleted)::bigint AS w
         FROM pg_stat_database WHERE datname = $1`,
      [dbName],
    );
    if (rows.length === 0) throw new Error(`no pg_stat_database row for ${dbName}`);
    return { xactCommit: Number(rows[0].c), tupWritten: Number(rows[0].w) };
  });
}

export async function serverVersion(url: string): Promise<string> {
  return withClient(maintenanceUrl(url), async (client) => {
    const { rows } = await client.query('SHOW server_version');
    return rows[0].server_version as string;
  });
}
