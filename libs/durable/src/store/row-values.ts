/**
 * Rows inserted by statements of their own, for distributed mode (Citus). An INSERT inside a CTE
 * makes Citus run the whole statement in parts (intermediate results sent to every node, two-phase
 * commit), so in distributed mode the rows a single-server statement inserts in a CTE (history,
 * checkpoints, group ends, runs) are inserted by these statements instead, in the same transaction:
 * a few rows as `INSERT … VALUES`, which Citus routes whole to the partition's node; many as
 * `INSERT … SELECT` from arrays, which it evaluates on the coordinator and copies to that one node.
 */
import type { SqlClient } from './sql-client.js';
import { statement } from './statement.js';

/** Parameters per VALUES statement: well below PostgreSQL's 65,535. */
const MAX_PARAMS = 20_000;
/**
 * The most rows sent as a VALUES list. Citus' coordinator spends about 0.15 ms per row of a
 * multi-row INSERT (it evaluates and routes each row), against a few ms for the whole of an
 * INSERT … SELECT from arrays (evaluated on the coordinator and copied to the one node the
 * partition is on, in bulk): VALUES is faster up to a few dozen rows, the arrays beyond.
 */
export const MAX_VALUES_ROWS = 24;

/** A parameter of a column expression: `?`, or `?::type` (untyped: text). */
const PARAM = /\?(?:::([a-z0-9_ ]+(?:\[\])?))?/g;

/**
 * `head` (`INSERT INTO t (a, b, …)`) with a row per row of `rows`, each row the `columns`
 * expressions (each `?` a parameter, taken in order from the row's values; `?::type` gives its
 * type), then `tail` (`ON CONFLICT …`, `RETURNING …`). Up to MAX_VALUES_ROWS rows: one multi-row
 * `INSERT … VALUES` (as many as keep each under MAX_PARAMS parameters), which Citus routes whole to
 * the partition's node. More: one `INSERT … SELECT … FROM unnest(…)` with an array per parameter
 * (an array-typed parameter, e.g. `?::text[]`, travels as JSON text), which Citus runs on the
 * coordinator and copies to that one node.
 */
export function valuesInserts(
  head: string,
  columns: readonly string[],
  rows: ReadonlyArray<readonly unknown[]>,
  tail = '',
): Array<{ text: string; params: unknown[] }> {
  const types = [...columns.join(',').matchAll(PARAM)].map((m) => m[1] ?? 'text');
  for (const row of rows)
    if (row.length !== types.length) throw new Error(`a row of ${head} has ${row.length} values for ${types.length} parameters`);
  if (rows.length > MAX_VALUES_ROWS) return [arraysInsert(head, columns, types, rows, tail)];
  const rowsPer = Math.max(1, Math.floor(MAX_PARAMS / Math.max(1, types.length)));
  const out: Array<{ text: string; params: unknown[] }> = [];
  for (let i = 0; i < rows.length; i += rowsPer) {
    const params: unknown[] = [];
    const tuples = rows.slice(i, i + rowsPer).map((row) => {
      let j = 0;
      const tuple = columns.map((c) =>
        c.replace(PARAM, (m) => {
          params.push(row[j++]);
          return `$${params.length}${m.slice(1)}`;
        }),
      );
      return `(${tuple.join(', ')})`;
    });
    out.push({ text: `${head} VALUES ${tuples.join(', ')}${tail ? ` ${tail}` : ''}`, params });
  }
  return out;
}

/** valuesInserts' form for many rows: the parameters as arrays, unnest()ed into a SELECT of the column expressions. */
function arraysInsert(
  head: string,
  columns: readonly string[],
  types: readonly string[],
  rows: ReadonlyArray<readonly unknown[]>,
  tail: string,
): { text: string; params: unknown[] } {
  // An array per parameter; an array-typed one as JSON text (unnest would flatten an array of arrays).
  const listed = types.map((t) => t.endsWith('[]'));
  const params = types.map((_, k) => rows.map((row) => (listed[k] && row[k] != null ? JSON.stringify(row[k]) : row[k])));
  let k = 0;
  const select = columns.map((c) =>
    c.replace(PARAM, () => {
      const i = k++;
      return listed[i]
        ? `CASE WHEN t.c${i} IS NOT NULL THEN ARRAY(SELECT jsonb_array_elements_text(t.c${i}::jsonb))::${types[i]} END`
        : `t.c${i}::${types[i]}`;
    }),
  );
  const arrays = types.map((t, i) => `$${i + 1}::${listed[i] ? 'text' : t}[]`);
  const names = types.map((_, i) => `c${i}`);
  return {
    text: `${head} SELECT ${select.join(', ')} FROM unnest(${arrays.join(', ')}) AS t(${names.join(', ')})${tail ? ` ${tail}` : ''}`,
    params,
  };
}

/** Runs valuesInserts' statements on `sql`, one after the other; their rows in one list. */
export async function insertValues<T = Record<string, unknown>>(
  sql: SqlClient,
  head: string,
  columns: readonly string[],
  rows: ReadonlyArray<readonly unknown[]>,
  tail = '',
): Promise<T[]> {
  const out: T[] = [];
  for (const s of valuesInserts(head, columns, rows, tail)) out.push(...(await sql.query<T>(s.text, s.params)));
  return out;
}

/** A history row (durable_run_events): the run, the kind, the detail (null: none). */
export type HistoryRow = readonly [runId: string, kind: string, detail: Record<string, unknown> | null];

/**
 * Writes history rows (when the engine keeps history: `history`), in as few statements as fit; at
 * the column's default time (the transaction's start), or at the expression `at` (a claim's rows:
 * CLAIM_HISTORY_AT in sql-fragments.ts).
 */
export async function insertHistoryRows(sql: SqlClient, history: boolean, rows: readonly HistoryRow[], at?: string): Promise<void> {
  if (!history || !rows.length) return;
  await insertValues(
    sql,
    `INSERT INTO durable_run_events (run_id, kind, detail${at ? ', at' : ''})`,
    ['?', '?', '?::jsonb', ...(at ? [at] : [])],
    rows.map(([id, kind, detail]) => [id, kind, detail === null ? null : JSON.stringify(detail)]),
  );
}

/** Sends notifications (channel, payload), delivered when the transaction `sql` is in commits; a statement without tables, so Citus runs it on the coordinator. */
export async function notifyAll(sql: SqlClient, notices: ReadonlyArray<readonly [channel: string, payload: string]>): Promise<void> {
  if (!notices.length) return;
  await sql.query(NOTIFY_ALL, [notices.map((n) => n[0]), notices.map((n) => n[1])]);
}

const NOTIFY_ALL = statement('notify_all', `SELECT count(pg_notify(c, p)) AS n FROM unnest($1::text[], $2::text[]) AS n(c, p)`);
