/**
 * The startup checks on a MySQL-family server: which server it is (MariaDB 10.6+; MySQL only when
 * the user opted in), and the state of the durable_* tables (schema.mysql.sql), read from
 * information_schema in one statement.
 */
import { UnsupportedDatabaseError } from '../../errors/index.js';
import type { SchemaQueryClient, SchemaState } from '../rows.js';

/** Objects the engine cannot start without, by the column MYSQL_SCHEMA_STATE reports them in. */
const REQUIRED = {
  runs: ['TABLES', 'durable_runs', 'table durable_runs'],
  steps: ['TABLES', 'durable_steps', 'table durable_steps'],
  messages: ['TABLES', 'durable_messages', 'table durable_messages'],
  events: ['TABLES', 'durable_events', 'table durable_events'],
  run_events: ['TABLES', 'durable_run_events', 'table durable_run_events'],
  run_tags: ['TABLES', 'durable_run_tags', 'table durable_run_tags'],
  version_table: ['TABLES', 'durable_schema', 'table durable_schema'],
  schedules: ['TABLES', 'durable_schedules', 'table durable_schedules'],
  queue_limits: ['TABLES', 'durable_queue_limits', 'table durable_queue_limits'],
  hook_cursors: ['TABLES', 'durable_hook_cursors', 'table durable_hook_cursors'],
  rate_windows: ['TABLES', 'durable_rate_windows', 'table durable_rate_windows'],
  claim_idx: ['STATISTICS', 'durable_runs_claim_idx', 'index durable_runs_claim_idx'],
  wake_idx: ['STATISTICS', 'durable_runs_wake_idx', 'index durable_runs_wake_idx'],
  lease_idx: ['STATISTICS', 'durable_runs_lease_idx', 'index durable_runs_lease_idx'],
} as const;
type Required = keyof typeof REQUIRED;

const exists = ([view, name]: readonly [string, string, string]) =>
  view === 'TABLES'
    ? `EXISTS (SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '${name}')`
    : `EXISTS (SELECT 1 FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'durable_runs' AND INDEX_NAME = '${name}')`;

export const MYSQL_SCHEMA_STATE = `
SELECT ${(Object.keys(REQUIRED) as Required[]).map((k) => `${exists(REQUIRED[k])} AS ${k}`).join(',\n       ')},
       (SELECT COLUMN_DEFAULT FROM information_schema.COLUMNS
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'durable_schema' AND COLUMN_NAME = 'version') AS version_default,
       (SELECT count(*) FROM information_schema.COLUMNS
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'durable_runs' AND COLUMN_NAME IN ('dedupe_active', 'debounce_pending')
           AND IS_GENERATED = 'ALWAYS') AS generated_keys,
       EXISTS (SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'durable_virtual_clock') AS virtual_clock,
       (SELECT COLLATION_NAME FROM information_schema.COLUMNS
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'durable_runs' AND COLUMN_NAME = 'id') AS id_collation`;

const truthy = (v: unknown) => v === true || v === 1 || v === 1n || v === '1';

/** See readSchemaState() in schema-version.ts. Run ids compare byte for byte: a case-insensitive id column is reported missing its collation. */
export async function readMysqlSchemaState(sql: SchemaQueryClient, expected: number): Promise<SchemaState> {
  const [row] = await sql.query<Record<string, unknown>>(MYSQL_SCHEMA_STATE);
  const hasVersionTable = truthy(row.version_table);
  const m = /^'?(\d+)'?$/.exec(String(row.version_default ?? '').trim());
  const version = hasVersionTable && m ? Number(m[1]) : null;
  if (version !== null && version > expected) return { status: 'newer', version, expected };
  if (version !== null && version < expected) return { status: 'older', version, expected, dialect: 'mysql' };
  const missing: string[] = (Object.keys(REQUIRED) as Required[]).filter((k) => !truthy(row[k])).map((k) => REQUIRED[k][2]);
  if (hasVersionTable && version === null) missing.push('the DEFAULT of durable_schema.version');
  const collation = row.id_collation == null ? null : String(row.id_collation);
  if (collation !== null && !/_bin$/.test(collation)) {
    missing.push(
      `a binary collation on the durable_* tables (durable_runs.id is ${collation}: run ids and keys would compare case-insensitively). ` +
        `Create the tables from node_modules/nestjs-durable/prisma/schema.mysql.sql, which sets utf8mb4_bin ` +
        `(with Prisma migrations: as the SQL of the migration that adds durable.prisma; docs/databases.md shows the steps)`,
    );
  }
  if (row.runs && Number(row.generated_keys) < 2) {
    missing.push(
      `the generated columns durable_runs.dedupe_active and debounce_pending (singleton and debounced starts rest on their unique indexes; ` +
        `Prisma cannot declare a generated column, so create the tables from node_modules/nestjs-durable/prisma/schema.mysql.sql)`,
    );
  }
  if (missing.length || version === null) return { status: 'missing', version, missing };
  return truthy(row.virtual_clock) ? { status: 'current', version, virtualClock: true } : { status: 'current', version };
}

/** The server as SELECT VERSION() names it: MariaDB (with its version) or MySQL. */
export interface MysqlServer {
  product: 'MariaDB' | 'MySQL';
  version: string;
}

export async function readServer(sql: SchemaQueryClient): Promise<MysqlServer> {
  const [row] = await sql.query<{ v: string }>('SELECT VERSION() AS v');
  const text = String(row?.v ?? '');
  return { product: /mariadb/i.test(text) ? 'MariaDB' : 'MySQL', version: text };
}

/** MariaDB 10.6 is the first with SKIP LOCKED; MySQL is refused unless the user opted into running it untested. */
export function serverError(server: MysqlServer, allowUntestedMysql: boolean): UnsupportedDatabaseError | null {
  const [major, minor] = server.version.split(/[.-]/).map(Number);
  if (server.product === 'MariaDB') {
    if (major > 10 || (major === 10 && minor >= 6)) return null;
    return new UnsupportedDatabaseError(
      'server',
      `nestjs-durable needs MariaDB 10.6 or later (SKIP LOCKED); this server is ${server.version}. Upgrade the server.`,
    );
  }
  if (allowUntestedMysql && major >= 8) return null;
  return new UnsupportedDatabaseError(
    'server',
    `This server is MySQL ${server.version}. nestjs-durable is tested on MariaDB 10.6+ and PostgreSQL only; its SQL is meant to run ` +
      `on MySQL 8.0+ as well, but that is untested. To run it anyway, set the engine option allowUntestedMysql: true ` +
      `(docs/databases.md lists the known differences).`,
  );
}
