/**
 * Flow control at start, as the admin API shows it: runs waiting out a debounce, and active singleton
 * runs. Distributed mode: each partition's first `limit` rows, merged in the same order and cut to `limit`.
 */
import * as mysql from './mysql/keyed-starts.js';
import { statement } from './statement.js';
import { ACTIVE } from './schedule-rows.js';
import { iso, rowsOfEach, toDate, type Store } from './store.js';

/**
 * Debounced runs that have not started, soonest first, at most $1: what later starts with their key
 * would join. Index: durable_runs_debounce_idx (its predicate is this WHERE).
 */
const SELECT_DEBOUNCED = statement(
  'select_debounced',
  `
SELECT workflow_name, debounce_key, id, available_at, debounce_until FROM durable_runs
WHERE debounce_key IS NOT NULL AND status = 'PENDING' AND started_at IS NULL
ORDER BY available_at LIMIT $1`,
);

/** Active runs holding a dedupe key, newest first, at most $1. Index: durable_runs_dedupe_idx (its predicate is this WHERE). */
const SELECT_SINGLETONS = statement(
  'select_singletons',
  `
SELECT workflow_name, dedupe_key, id, status, created_at FROM durable_runs
WHERE dedupe_key IS NOT NULL AND status IN ${ACTIVE}
ORDER BY created_at DESC LIMIT $1`,
);

/** A run waiting out its debounce window. */
export interface DebouncedRun {
  workflow: string;
  key: string;
  runId: string;
  /** When it starts unless another start with its key pushes it. */
  startsAt: string;
  /** The latest it can be pushed to (maxDelayMs); null: no maximum. */
  latestStart: string | null;
}

/** An active run holding a dedupe key: starts with that key return it. */
export interface SingletonRun {
  workflow: string;
  key: string;
  runId: string;
  status: string;
  createdAt: string;
}

/** The first `limit` rows by time column `by` (1: soonest first, -1: latest first): the merge of several partitions' pages. */
function firstOf(rows: Record<string, unknown>[], by: string, dir: 1 | -1, limit: number): Record<string, unknown>[] {
  return rows.sort((a, b) => dir * (toDate(a[by])!.getTime() - toDate(b[by])!.getTime())).slice(0, limit); // stable: one server's order stays
}

export async function debouncedRuns(store: Store, limit: number): Promise<DebouncedRun[]> {
  const rows =
    store.sql.dialect === 'mysql'
      ? await mysql.debouncedRows(store, limit)
      : firstOf(await rowsOfEach(store, SELECT_DEBOUNCED, [limit]), 'available_at', 1, limit);
  return rows.map((r) => ({
    workflow: r.workflow_name as string,
    key: r.debounce_key as string,
    runId: r.id as string,
    startsAt: iso(r.available_at)!,
    latestStart: iso(r.debounce_until),
  }));
}

export async function singletonRuns(store: Store, limit: number): Promise<SingletonRun[]> {
  const rows =
    store.sql.dialect === 'mysql'
      ? await mysql.singletonRows(store, limit)
      : firstOf(await rowsOfEach(store, SELECT_SINGLETONS, [limit]), 'created_at', -1, limit);
  return rows.map((r) => ({
    workflow: r.workflow_name as string,
    key: r.dedupe_key as string,
    runId: r.id as string,
    status: r.status as string,
    createdAt: iso(r.created_at)!,
  }));
}
