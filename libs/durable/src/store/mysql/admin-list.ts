/**
 * The admin API's runs list on a MySQL-family database (see admin-list.ts): the same filters, keyset
 * pages and capped per-status counts. The statement text holds only the conditions of the filters
 * given (fixed fragments); every value is a parameter. A tag is looked up in durable_run_tags (its
 * primary key leads with the tag: the tagged runs are read, not every run); input containment is
 * JSON_CONTAINS (no index: a filter on whichever index orders or narrows the scan).
 */
import type { RunFilter, RunListItem, SortKey, SortOrder, StatusCounts } from '../admin-rows.js';
import { RUN_STATUSES, type RunStatus } from '../rows.js';
import type { Store } from '../store.js';
import { json, marks } from './sql.js';
import { runListItem } from '../admin-rows.js';

/**
 * `abc` → `abc%` with LIKE's wildcards and its escape character taken literally. The escape is `!`,
 * not `\`: a backslash in the statement's text would mean something else under NO_BACKSLASH_ESCAPES.
 * Under the binary collation, `r.id LIKE 'abc%'` is a range of the primary key.
 */
const likePrefix = (prefix: string) => `${prefix.replace(/[!%_]/g, (c) => `!${c}`)}%`;
const utcText = (d: Date) => d.toISOString().replace('T', ' ').replace('Z', '');

/** The WHERE conditions of a filter and their parameters (statuses only when `withStatus`). */
export function mysqlFilter(f: RunFilter, withStatus: boolean): { sql: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, ...values: unknown[]) => {
    parts.push(sql);
    params.push(...values);
  };
  const list = (col: string, values: string[] | null) => {
    if (values) add(values.length ? `${col} IN (${marks(values.length)})` : 'FALSE', ...values);
  };
  if (withStatus) list('r.status', f.statuses);
  list('r.workflow_name', f.workflows);
  list('r.queue', f.queues);
  if (f.createdFrom) add('r.created_at >= ?', utcText(f.createdFrom));
  if (f.createdTo) add('r.created_at < ?', utcText(f.createdTo));
  if (f.finishedFrom) add('r.finished_at >= ?', utcText(f.finishedFrom));
  if (f.finishedTo) add('r.finished_at < ?', utcText(f.finishedTo));
  if (f.idPrefix !== null) add("r.id LIKE ? ESCAPE '!'", likePrefix(f.idPrefix));
  if (f.parentId !== null) add('r.parent_id = ?', f.parentId);
  for (const tag of f.tags ?? []) add('r.id IN (SELECT t.run_id FROM durable_run_tags t WHERE t.tag = ?)', tag);
  if (f.input !== null && f.input !== undefined) add('JSON_CONTAINS(r.input, ?)', JSON.stringify(f.input));
  list('r.id', f.ids);
  return { sql: parts.length ? parts.join(' AND ') : 'TRUE', params };
}

const OUTPUT_SUMMARY_MAX_BYTES = 2048;
const OUTPUT_SUMMARY_CHARS = 160;

const LIST_COLUMNS = `r.id, r.workflow_name, r.queue, r.status, r.priority, r.attempt, r.parent_id, r.app_version,
  r.lease_owner, r.created_at, r.started_at, r.finished_at, r.updated_at, r.available_at, r.deadline_at,
  r.cancel_requested_at, r.tags, JSON_UNQUOTE(JSON_EXTRACT(r.error, '$.message')) AS error_message,
  CASE WHEN r.output IS NULL THEN NULL WHEN octet_length(r.output) <= ${OUTPUT_SUMMARY_MAX_BYTES} THEN left(r.output, ${OUTPUT_SUMMARY_CHARS})
       ELSE concat('(', octet_length(r.output), ' bytes)') END AS output_summary,
  (SELECT count(*) FROM durable_steps s WHERE s.run_id = r.id) AS step_count,
  CASE WHEN r.status = 'WAITING' THEN (
    SELECT JSON_EXTRACT(h.detail, '$.waits') FROM durable_run_events h WHERE h.run_id = r.id AND h.kind = 'suspended' ORDER BY h.id DESC LIMIT 1) END AS waits`;

/**
 * See listRuns() in admin-list.ts; the same indexes, but for the tag filter (durable_run_tags instead
 * of a GIN index). The keyset condition is one range
 * of the (created_at) or (updated_at) index: InnoDB keeps the primary key in it, so (time, id) order.
 */
export async function listRuns(
  store: Store,
  f: RunFilter,
  sort: SortKey,
  order: SortOrder,
  after: { at: Date; id: string } | null,
  limit: number,
): Promise<RunListItem[]> {
  const col = sort === 'created' ? 'r.created_at' : 'r.updated_at';
  const cmp = order === 'desc' ? '<' : '>';
  const dir = order === 'desc' ? 'DESC' : 'ASC';
  const where = mysqlFilter(f, true);
  const keyset = after ? ` AND (${col} ${cmp} ? OR (${col} = ? AND r.id ${cmp} ?))` : '';
  const rows = await store.sql.query<Record<string, unknown>>(
    `SELECT ${LIST_COLUMNS} FROM durable_runs r WHERE ${where.sql}${keyset} ORDER BY ${col} ${dir}, r.id ${dir} LIMIT ?`,
    [...where.params, ...(after ? [utcText(after.at), utcText(after.at), after.id] : []), limit],
  );
  return rows.map((r) => runListItem(r, json));
}

/** The per-status counts as one statement: one bounded scan per status, each with its status as a constant. */
function countStatement(f: RunFilter, cap: number): { sql: string; params: unknown[] } {
  const where = mysqlFilter(f, false);
  const one = (s: RunStatus) =>
    `(SELECT count(*) FROM (SELECT 1 FROM durable_runs r WHERE r.status = '${s}' AND ${where.sql} LIMIT ?) x) AS ${s}`;
  return { sql: `SELECT ${RUN_STATUSES.map(one).join(', ')}`, params: RUN_STATUSES.flatMap(() => [...where.params, cap + 1]) };
}

const countsOf = (row: Record<string, unknown> | undefined) =>
  Object.fromEntries(RUN_STATUSES.map((s) => [s, Number(row?.[s] ?? 0)])) as Record<RunStatus, number>;

/**
 * See countByStatus() in admin-list.ts. Index per status: durable_runs_status_created_idx (status
 * leads it), or the filter's own (workflow, queue, id prefix, parent) when the optimizer finds it narrower.
 */
export async function countByStatus(store: Store, f: RunFilter, cap: number): Promise<Record<RunStatus, number>> {
  const count = countStatement(f, cap);
  const [row] = await store.sql.query<Record<string, unknown>>(count.sql, count.params);
  return countsOf(row);
}

/**
 * MariaDB's ER_STATEMENT_TIMEOUT (1969), as the mariadb driver reports it (errno) or Prisma's raw-query
 * error carries it (meta.driverAdapterError.cause.originalCode, and in its message).
 */
function isStatementTimeout(err: unknown): boolean {
  const e = err as { errno?: unknown; meta?: { driverAdapterError?: { cause?: { originalCode?: unknown } } }; message?: unknown } | null;
  return (
    e?.errno === 1969 ||
    e?.meta?.driverAdapterError?.cause?.originalCode === '1969' ||
    (typeof e?.message === 'string' && /max_statement_time exceeded/i.test(e.message))
  );
}

/**
 * The optimizer's estimate of a statement's matches from its EXPLAIN EXTENDED row: the rows its
 * access path reads times the share its other conditions are expected to keep (filtered, %). An
 * impossible condition has no rows: 0. Rougher than PostgreSQL's: InnoDB caps an index range's
 * estimate at half the table, and without histograms (ANALYZE TABLE … PERSISTENT FOR ALL) the share
 * of a condition is a guess; an estimate gives the magnitude. (Not EXPLAIN FORMAT=JSON: MariaDB writes
 * the condition's string literals into it unescaped, so a JSON parameter makes it unreadable.)
 */
function estimateOf(plan: { rows?: unknown; filtered?: unknown } | undefined): number {
  if (plan?.rows == null) return 0;
  return Math.round(Number(plan.rows) * (plan.filtered == null ? 1 : Number(plan.filtered) / 100));
}

/**
 * See countByStatusWithin() in admin-counts.ts. The budget is MariaDB's max_statement_time (seconds,
 * for this one statement: SET STATEMENT … FOR, so no transaction and nothing left on the pooled
 * connection). Past it, the optimizer's estimate per status (EXPLAIN, no scan) stands in, marked
 * estimated. SET STATEMENT, max_statement_time and EXPLAIN EXTENDED are MariaDB's; MySQL would need
 * the MAX_EXECUTION_TIME hint.
 */
export async function countByStatusWithin(store: Store, f: RunFilter, cap: number, budgetMs: number): Promise<StatusCounts> {
  const seconds = Math.max(0.001, budgetMs / 1000).toFixed(3);
  const count = countStatement(f, cap);
  try {
    const [row] = await store.sql.query<Record<string, unknown>>(
      `SET STATEMENT max_statement_time = ${seconds} FOR ${count.sql}`,
      count.params,
    );
    return { counts: countsOf(row), estimated: false };
  } catch (err) {
    if (!isStatementTimeout(err)) throw err;
  }
  const where = mysqlFilter(f, false);
  const counts = {} as Record<RunStatus, number>;
  for (const s of RUN_STATUSES) {
    const [plan] = await store.sql.query<{ rows?: unknown; filtered?: unknown }>(
      `EXPLAIN EXTENDED SELECT 1 FROM durable_runs r WHERE r.status = '${s}' AND ${where.sql}`,
      where.params,
    );
    counts[s] = estimateOf(plan);
  }
  return { counts, estimated: true };
}
