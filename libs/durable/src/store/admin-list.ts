/**
 * The admin API's runs list: filter, keyset pages, per-status counts. Every statement is
 * parameterized; the only values spliced into the text are constants chosen from fixed sets
 * (sort column and direction). Each names the index it relies on.
 *
 * Optional filters use `($n IS NULL OR …)`: node-postgres and Prisma send unnamed statements,
 * which Postgres plans with the actual values, so an absent filter folds away and the
 * remaining conditions can use their index.
 *
 * Indexes (libs/durable/prisma/durable.prisma):
 *   durable_runs_created_idx (created_at)              list sorted by created, no other selective filter
 *   durable_runs_updated_idx (updated_at)              list sorted by updated; stats of the last window
 *   durable_runs_status_created_idx (status, created_at)       status filter; per-status counts; active runs
 *   durable_runs_workflow_created_idx (workflow_name, created_at) workflow filter
 *   durable_runs_id_pattern_idx (id text_pattern_ops)  id prefix (LIKE 'abc%'), any collation
 *   durable_runs_parent_idx (parent_id)                parentId filter, children of a run
 *   durable_runs_pkey (id)                             id filter (a selection of runs)
 *   durable_runs_finished_idx (finished_at) partial    finished time range
 *   durable_runs_claim_idx (queue, …) partial          queue filter on claimable runs (other rows: a filter
 *                                                      on the ordered index; apps have few queues)
 *   durable_runs_tags_idx GIN (tags) partial           tag filter (tags @> …), tagged runs only
 *   (none) input containment (input @> …)              a filter on whichever index orders or narrows the scan:
 *                                                      cheap when matches are common or other filters narrow,
 *                                                      a long scan for a rare value (docs/operations.md: "Search")
 *   durable_steps_pkey (run_id, seq), durable_events_pkey (run_id, key),
 *   durable_messages_idempotency_key (run_id, …), durable_run_events_run_idx (run_id, id)   run detail
 */
import * as mysql from './mysql/admin-list.js';
import { RUN_STATUSES, type RunStatus } from './rows.js';
import { rowsOfEach, type Store } from './store.js';
export type { RunFilter } from './admin-rows.js';
import type { RunFilter } from './admin-rows.js';
export type { RunListItem } from './admin-rows.js';
import type { RunListItem } from './admin-rows.js';
export type { SortKey } from './admin-rows.js';
import type { SortKey } from './admin-rows.js';
export type { SortOrder } from './admin-rows.js';
import type { SortOrder } from './admin-rows.js';
import { runListItem } from './admin-rows.js';

/** Per-status counts of the runs list stop at this many rows per status (index-only, bounded). */
export const COUNT_CAP = 10_000;

/**
 * The runs-list filter, parameters numbered from $1: statuses text[] (only when withStatus),
 * workflows text[], queues text[], created from/to, finished from/to (timestamptz; from
 * inclusive, to exclusive), id LIKE pattern (escaped, ends with %), parent id, tags text[] (all of
 * them), input jsonb (containment), ids text[]. Null = no filter.
 */
export function runFilter(withStatus: boolean): { sql: string; next: number } {
  let n = 0;
  const p = () => `$${++n}`;
  const parts: string[] = [];
  if (withStatus) {
    const s = p();
    parts.push(`(${s}::text[] IS NULL OR r.status = ANY(${s}::text[]))`);
  }
  const wf = p(),
    q = p(),
    cf = p(),
    ct = p(),
    ff = p(),
    ft = p(),
    id = p(),
    par = p(),
    tg = p(),
    inp = p(),
    ids = p();
  parts.push(
    `(${wf}::text[] IS NULL OR r.workflow_name = ANY(${wf}::text[]))`,
    `(${q}::text[] IS NULL OR r.queue = ANY(${q}::text[]))`,
    `(${cf}::timestamptz IS NULL OR r.created_at >= ${cf}::timestamptz)`,
    `(${ct}::timestamptz IS NULL OR r.created_at < ${ct}::timestamptz)`,
    `(${ff}::timestamptz IS NULL OR r.finished_at >= ${ff}::timestamptz)`,
    `(${ft}::timestamptz IS NULL OR r.finished_at < ${ft}::timestamptz)`,
    `(${id}::text IS NULL OR r.id LIKE ${id}::text)`,
    `(${par}::text IS NULL OR r.parent_id = ${par}::text)`,
    // The tags <> '{}' term lets the planner use the partial GIN index (it holds tagged runs only).
    `(${tg}::text[] IS NULL OR (r.tags @> ${tg}::text[] AND r.tags <> '{}'))`,
    `(${inp}::jsonb IS NULL OR r.input @> ${inp}::jsonb)`,
    `(${ids}::text[] IS NULL OR r.id = ANY(${ids}::text[]))`,
  );
  return { sql: parts.join('\n  AND '), next: n + 1 };
}

/** A list shows the start of a small output (its business outcome at a glance); a big one only by its size. */
const OUTPUT_SUMMARY_MAX_BYTES = 2048;
const OUTPUT_SUMMARY_CHARS = 160;

/**
 * Columns of a run in lists (no input, a summary of the output: a list stays small), and for a
 * WAITING run what it waits for: the waits of its latest suspension (durable_run_events_run_idx,
 * backwards from its newest row).
 */
const LIST_COLUMNS = `r.id, r.workflow_name, r.queue, r.status, r.priority, r.attempt, r.parent_id, r.app_version,
  r.lease_owner, r.created_at, r.started_at, r.finished_at, r.updated_at, r.available_at, r.deadline_at,
  r.cancel_requested_at, r.tags, r.error->>'message' AS error_message,
  CASE WHEN r.output IS NULL THEN NULL WHEN pg_column_size(r.output) <= ${OUTPUT_SUMMARY_MAX_BYTES} THEN left(r.output::text, ${OUTPUT_SUMMARY_CHARS})
       ELSE '(' || pg_column_size(r.output) || ' bytes)' END AS output_summary,
  (SELECT count(*) FROM durable_steps s WHERE s.run_id = r.id)::int AS step_count,
  CASE WHEN r.status = 'WAITING' THEN (
    SELECT h.detail->'waits' FROM durable_run_events h WHERE h.run_id = r.id AND h.kind = 'suspended' ORDER BY h.id DESC LIMIT 1) END AS waits`;

function listRunsSql(sort: SortKey, order: SortOrder): string {
  const col = sort === 'created' ? 'r.created_at' : 'r.updated_at';
  const f = runFilter(true);
  const ts = `$${f.next}`,
    id = `$${f.next + 1}`,
    limit = `$${f.next + 2}`;
  const cmp = order === 'desc' ? '<' : '>';
  const dir = order === 'desc' ? 'DESC' : 'ASC';
  return `
SELECT ${LIST_COLUMNS}
FROM durable_runs r
WHERE ${f.sql}
  AND (${ts}::timestamptz IS NULL OR (${col} ${cmp}= ${ts}::timestamptz AND (${col} ${cmp} ${ts}::timestamptz OR r.id ${cmp} ${id}::text)))
ORDER BY ${col} ${dir}, r.id ${dir}
LIMIT ${limit}`;
}

/**
 * One page of runs, keyset-paginated on (created_at, id) or (updated_at, id): stable under
 * inserts (a new run never shifts a page). Parameters: the filter ($1–$12), then cursor
 * timestamp, cursor id (both null on the first page), limit. Indexes: see the file comment
 * (the chosen order's index scanned backward/forward, or the filter's own index).
 */
export const LIST_RUNS: Record<`${SortKey}_${SortOrder}`, string> = {
  created_desc: listRunsSql('created', 'desc'),
  created_asc: listRunsSql('created', 'asc'),
  updated_desc: listRunsSql('updated', 'desc'),
  updated_asc: listRunsSql('updated', 'asc'),
};

/**
 * Runs per status for the list's filter (status itself excepted, so the numbers can label
 * status tabs), each count stopping at $12 + 1 rows. Parameters: the filter without status
 * ($1–$11), then the cap. One bounded scan per status, each with its status as a constant so
 * the planner picks per status: durable_runs_status_created_idx for the rare ones (index-only),
 * a scan that stops after cap rows for the common one; a selective filter's own index otherwise.
 */
export const COUNT_RUNS_BY_STATUS = (() => {
  const f = runFilter(false);
  const one = (s: string) => `(SELECT count(*) FROM (
    SELECT 1 FROM durable_runs r WHERE r.status = '${s}' AND ${f.sql}
    LIMIT $${f.next}::int + 1) x)::int AS "${s}"`;
  return `SELECT ${RUN_STATUSES.map(one).join(',\n  ')}`;
})();

/** `abc` → `abc%` with LIKE's wildcards and escape character taken literally. */
export const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export function filterParams(f: RunFilter, withStatus: boolean): unknown[] {
  const d = (x: Date | null) => (x ? x.toISOString() : null);
  const p: unknown[] = withStatus ? [f.statuses] : [];
  p.push(
    f.workflows,
    f.queues,
    d(f.createdFrom),
    d(f.createdTo),
    d(f.finishedFrom),
    d(f.finishedTo),
    f.idPrefix === null ? null : likePrefix(f.idPrefix),
    f.parentId,
    f.tags,
    f.input === null || f.input === undefined ? null : JSON.stringify(f.input),
    f.ids,
  );
  return p;
}

export async function listRuns(
  store: Store,
  f: RunFilter,
  sort: SortKey,
  order: SortOrder,
  after: { at: Date; id: string } | null,
  limit: number,
): Promise<RunListItem[]> {
  if (store.sql.dialect === 'mysql') return mysql.listRuns(store, f, sort, order, after, limit);
  const rows = await rowsOfEach(store, LIST_RUNS[`${sort}_${order}`], [
    ...filterParams(f, true),
    after ? after.at.toISOString() : null,
    after ? after.id : null,
    limit,
  ]);
  const items = rows.map((r) => runListItem(r, (v) => v));
  // Distributed mode: each partition's page after the same keyset, then the first `limit` of them in the list's order.
  return store.layout.partitions === null ? items : mergedPage(items, sort, order, limit);
}

/** The first `limit` items in the order (sort key, then id) of the list. */
function mergedPage(items: RunListItem[], sort: SortKey, order: SortOrder, limit: number): RunListItem[] {
  const key = (r: RunListItem) => new Date(sort === 'created' ? r.createdAt : r.updatedAt).getTime();
  const sign = order === 'asc' ? 1 : -1;
  return items.sort((a, b) => sign * (key(a) - key(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))).slice(0, limit);
}

/** Runs per status for the filter (its status part ignored), each capped at `cap` + 1. */
export async function countByStatus(store: Store, f: RunFilter, cap: number): Promise<Record<RunStatus, number>> {
  if (store.sql.dialect === 'mysql') return mysql.countByStatus(store, f, cap);
  // Distributed mode: every partition's counts added up (each capped at cap + 1, so the sum stays above cap when one is).
  const rows = await rowsOfEach<Record<RunStatus, number>>(store, COUNT_RUNS_BY_STATUS, [...filterParams(f, false), cap]);
  return Object.fromEntries(RUN_STATUSES.map((s) => [s, rows.reduce((n, row) => n + Number(row?.[s] ?? 0), 0)])) as Record<
    RunStatus,
    number
  >;
}
