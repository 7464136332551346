/**
 * SQL pieces of the MySQL-family statements (MariaDB 10.6+). Rules they follow, beside those of the
 * PostgreSQL statements (fencing by lease epoch, the database clock): no RETURNING, so a change that
 * must be read back runs as a short transaction (lock with FOR UPDATE, change, read); parameters are
 * `?`, a list is expanded to one `?` per element; times are UTC DATETIME(3) from UTC_TIMESTAMP(3).
 */
import type { SqlClient } from '../sql-client.js';
import { RUN_PART_TABLES } from '../sql-fragments.js';

/** The database clock, UTC, to the millisecond. */
export const NOW = 'UTC_TIMESTAMP(3)';

/** The database clock plus a parameter of milliseconds (a float is rounded to the microsecond). */
export const NOW_PLUS_MS = `(${NOW} + INTERVAL ROUND(? * 1000) MICROSECOND)`;

/** A run is due when available_at <= DUE_BY (see DUE_BY of the PostgreSQL statements). */
export const DUE_BY = `(${NOW} + INTERVAL 1000 MICROSECOND)`;

/** `?, ?, ?` for a list of n values (n ≥ 1). */
export const marks = (n: number): string => Array.from({ length: Math.max(n, 1) }, () => '?').join(', ');

/** A JSON column read back as text (MariaDB's JSON is LONGTEXT): parsed here, so a JSON string stays a string. */
export const json = <T = unknown>(v: unknown): T | null => {
  if (v == null) return null;
  if (typeof v === 'string') return JSON.parse(v) as T;
  if (Buffer.isBuffer(v)) return JSON.parse(v.toString('utf8')) as T;
  return v as T;
};

/** A JSON column's value as JSON text, to write it into another row (the driver may hand it back as text, bytes or parsed). */
export const jsonText = (v: unknown): string | null =>
  v == null ? null : typeof v === 'string' ? v : Buffer.isBuffer(v) ? v.toString('utf8') : JSON.stringify(v);

/** A boolean expression read back (MySQL has none: 1 / 0, or a bigint through some drivers). */
export const bool = (v: unknown): boolean => v === true || v === 1 || v === 1n || v === '1';

/** A DATETIME read back (a Date from the driver, or text). */
export const date = (v: unknown): Date | null => (v == null ? null : v instanceof Date ? v : new Date(`${String(v).replace(' ', 'T')}Z`));

/** A Date as a DATETIME(3) literal parameter in UTC (drivers differ in how they send a Date). */
export const utc = (d: Date | null): string | null => (d ? d.toISOString().replace('T', ' ').replace('Z', '') : null);

/**
 * History rows (run id, kind, detail as JSON text or null) in one statement; nothing when history is
 * off or there are none. `at`: their time (a DATETIME(3) text in UTC) when it must be the time of the
 * change they record, read once for both (PostgreSQL writes both in one statement); else the clock.
 */
export async function insertHistory(
  sql: SqlClient,
  history: boolean,
  rows: Array<[runId: string, kind: string, detail: Record<string, unknown> | null]>,
  at: string | null = null,
): Promise<void> {
  if (!history || !rows.length) return;
  const time = at === null ? NOW : '?';
  await sql.execute(
    `INSERT INTO durable_run_events (run_id, kind, detail, at) VALUES ${rows.map(() => `(?, ?, ?, ${time})`).join(', ')}`,
    rows.flatMap(([id, kind, detail]) => [id, kind, detail == null ? null : JSON.stringify(detail), ...(at === null ? [] : [at])]),
  );
}

/**
 * The tag index rows (durable_run_tags) of runs just inserted, in one statement; nothing for runs
 * without tags. In the transaction that inserted the runs: the rows commit with them, and go with
 * them (ON DELETE CASCADE).
 */
export async function insertTags(sql: SqlClient, runs: Array<{ id: string; tags: readonly string[] | null }>): Promise<void> {
  const rows = runs.flatMap((r) => [...new Set(r.tags ?? [])].map((tag) => [tag, r.id]));
  if (!rows.length) return;
  await sql.execute(`INSERT INTO durable_run_tags (tag, run_id) VALUES ${rows.map(() => '(?, ?)').join(', ')}`, rows.flat());
}

/** Those of `ids` that have something to undo: a step recorded a compensation (`by`). Index: durable_steps' primary key. */
export async function runsWithUndo(sql: SqlClient, ids: string[]): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const rows = await sql.query<{ run_id: string }>(
    `SELECT DISTINCT run_id FROM durable_steps WHERE run_id IN (${marks(ids.length)}) AND JSON_EXTRACT(compensation, '$.by') IS NOT NULL`,
    ids,
  );
  return new Set(rows.map((r) => r.run_id));
}

/**
 * Whether a sweep has anything to do: one non-locking statement (`exists`: a SELECT 1 … LIMIT 1), so an
 * idle sweep costs one round trip instead of a transaction's three.
 */
export async function anyRow(sql: SqlClient, exists: string, params: unknown[] = []): Promise<boolean> {
  return (await sql.query(exists, params)).length > 0;
}

/**
 * The MySQL error number of a failed statement: the mariadb driver's `errno`, or, through Prisma's
 * adapter, the driver error's `originalCode` in the error's meta (or its cause).
 */
export function mysqlErrno(err: unknown): number | undefined {
  for (let e = err as Record<string, unknown> | null | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    if (typeof e.errno === 'number') return e.errno;
    const meta = e.meta as { driverAdapterError?: { cause?: { originalCode?: unknown } } } | undefined;
    const code = Number(meta?.driverAdapterError?.cause?.originalCode);
    if (Number.isInteger(code) && code > 0) return code;
  }
  return undefined;
}

/** MySQL's "duplicate entry" error (a unique key). */
export const isDuplicateKey = (err: unknown): boolean => mysqlErrno(err) === 1062;

/** Deletes runs `ids` (locked by the caller) with their messages, events, history and stream chunks (steps and tags by cascade); returns `ids`. */
export async function deleteRuns(sql: SqlClient, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  for (const table of RUN_PART_TABLES) {
    await sql.execute(`DELETE FROM ${table} WHERE run_id IN (${marks(ids.length)})`, ids);
  }
  await sql.execute(`DELETE FROM durable_runs WHERE id IN (${marks(ids.length)})`, ids);
  return ids;
}
