import { readMysqlSchemaState, readServer, serverError } from './mysql/schema.js';
import { SchemaMissingError, SchemaOutdatedError, SchemaTooNewError, type DurableError } from '../errors/index.js';
export type { SchemaQueryClient } from './rows.js';
import type { SchemaQueryClient } from './rows.js';
export type { SchemaState } from './rows.js';
import type { SchemaState } from './rows.js';

/**
 * The version of the durable_* tables this library reads and writes. It is also the DEFAULT of
 * `durable_schema.version` in prisma/durable.prisma, prisma/schema.sql and the newest file of
 * prisma/upgrades/ (a test keeps them equal). Raise it with every change to durable.prisma.
 */
export const SCHEMA_VERSION = 7;

/** The objects the engine cannot start without, by the column SCHEMA_STATE reports them in. */
const REQUIRED = {
  runs: 'table durable_runs',
  steps: 'table durable_steps',
  messages: 'table durable_messages',
  events: 'table durable_events',
  run_events: 'table durable_run_events',
  claim_idx: 'index durable_runs_claim_idx',
  wake_idx: 'index durable_runs_wake_idx',
  version_table: 'table durable_schema',
  schedules: 'table durable_schedules',
  queue_limits: 'table durable_queue_limits',
  running_idx: 'index durable_runs_running_idx',
  hook_cursors: 'table durable_hook_cursors',
  rate_windows: 'table durable_rate_windows',
  dedupe_idx: 'index durable_runs_dedupe_idx',
  debounce_idx: 'index durable_runs_debounce_idx',
} as const;
type Required = keyof typeof REQUIRED;

/**
 * One statement at startup: which of the library's objects exist (resolved through the
 * search_path, like every other statement), and the version recorded as the column DEFAULT of
 * durable_schema.version. A Prisma migration carries DDL and no rows, so the version is DDL too:
 * `prisma migrate dev` turns a changed `@default(n)` into `ALTER COLUMN "version" SET DEFAULT n`.
 */
export const SCHEMA_STATE = `
SELECT to_regclass('durable_runs') IS NOT NULL AS runs, to_regclass('durable_steps') IS NOT NULL AS steps,
       to_regclass('durable_messages') IS NOT NULL AS messages, to_regclass('durable_events') IS NOT NULL AS events,
       to_regclass('durable_run_events') IS NOT NULL AS run_events,
       to_regclass('durable_runs_claim_idx') IS NOT NULL AS claim_idx,
       to_regclass('durable_runs_wake_idx') IS NOT NULL AS wake_idx,
       to_regclass('durable_schema') IS NOT NULL AS version_table,
       to_regclass('durable_schedules') IS NOT NULL AS schedules,
       to_regclass('durable_queue_limits') IS NOT NULL AS queue_limits,
       to_regclass('durable_runs_running_idx') IS NOT NULL AS running_idx,
       to_regclass('durable_hook_cursors') IS NOT NULL AS hook_cursors,
       to_regclass('durable_rate_windows') IS NOT NULL AS rate_windows,
       to_regclass('durable_runs_dedupe_idx') IS NOT NULL AS dedupe_idx,
       to_regclass('durable_runs_debounce_idx') IS NOT NULL AS debounce_idx,
       (SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d
          JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
         WHERE d.adrelid = to_regclass('durable_schema') AND a.attname = 'version') AS version_default`;

type StateRow = Record<Required, boolean> & { version_default: string | null };

/** Reads the state of the durable_* tables (one query). Never throws for a missing or foreign schema. */
export async function readSchemaState(sql: SchemaQueryClient, expected = SCHEMA_VERSION): Promise<SchemaState> {
  if ((sql as { dialect?: string }).dialect === 'mysql') return readMysqlSchemaState(sql, expected);
  const [row] = await sql.query<StateRow>(SCHEMA_STATE);
  const version = row.version_table ? parseVersion(row.version_default) : row.runs ? 1 : null;
  if (version !== null && version > expected) return { status: 'newer', version, expected };
  if (version !== null && version < expected) return { status: 'older', version, expected };
  const missing: string[] = (Object.keys(REQUIRED) as Required[]).filter((k) => !row[k]).map((k) => REQUIRED[k]);
  if (row.version_table && version === null) missing.push('the DEFAULT of durable_schema.version');
  if (missing.length || version === null) return { status: 'missing', version, missing };
  return { status: 'current', version };
}

/** `2` from the DEFAULT expression Postgres reports (`2`, or `'2'::integer` when written that way). */
function parseVersion(expr: string | null): number | null {
  const m = /^'?(\d+)'?(?:::integer)?$/.exec(expr?.trim() ?? '');
  return m ? Number(m[1]) : null;
}

/**
 * The SQL files (paths inside the package) that bring the tables from version `from` to `to`, in order:
 * prisma/upgrades/ for PostgreSQL, prisma/upgrades/mysql/ for MySQL-family databases (whose tables
 * begin at version 4).
 */
export function upgradeSqlFiles(from: number, to = SCHEMA_VERSION, dialect: 'postgres' | 'mysql' = 'postgres'): string[] {
  const files: string[] = [];
  const dir = dialect === 'mysql' ? 'prisma/upgrades/mysql' : 'prisma/upgrades';
  for (let v = from; v < to; v++) files.push(`${dir}/${v}-to-${v + 1}.sql`);
  return files;
}

/** The error that says what to run, or null when the tables are current. */
export function schemaStateError(state: SchemaState): DurableError | null {
  switch (state.status) {
    case 'current':
      return null;
    case 'missing':
      return new SchemaMissingError(state.missing);
    case 'older':
      return new SchemaOutdatedError(state.version, state.expected, upgradeSqlFiles(state.version, state.expected, state.dialect));
    case 'newer':
      return new SchemaTooNewError(state.version, state.expected);
  }
}

/**
 * The startup check: resolves with the version when the tables are current, rejects with
 * SchemaMissingError, SchemaOutdatedError or SchemaTooNewError (each says what to run) otherwise.
 */
export async function checkSchemaVersion(sql: SchemaQueryClient, expected = SCHEMA_VERSION): Promise<number> {
  const state = await readSchemaState(sql, expected);
  const error = schemaStateError(state);
  if (error) throw error;
  return expected;
}

/**
 * Refuses a database server the engine does not support (on MySQL-family servers: MariaDB before
 * 10.6, or MySQL unless `allowUntestedMysql`); resolves with a warning to log, or null.
 */
export async function checkServer(sql: SchemaQueryClient & { dialect?: string }, allowUntestedMysql: boolean): Promise<string | null> {
  if (sql.dialect !== 'mysql') return null;
  const server = await readServer(sql);
  const refused = serverError(server, allowUntestedMysql);
  if (refused) throw refused;
  return server.product === 'MySQL'
    ? `running on MySQL ${server.version}, which nestjs-durable does not test (allowUntestedMysql: true)`
    : null;
}
