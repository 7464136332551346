import { randomUUID } from 'node:crypto';
import { UnsupportedDatabaseError } from '../errors/index.js';
import { partitionOf, partitionSql } from './partitions.js';
import { prismaSqlClient, type PrismaLike, type SqlClient } from './sql-client.js';
import type { Statement } from './statement.js';

/**
 * Where the store's statements go, and the settings every statement needs: created once per
 * engine. `history` (engine option, default true): statements that change a run's state also
 * write its history row (durable_run_events) in the same statement.
 */
export interface Store {
  readonly sql: SqlClient;
  readonly history: boolean;
  /** How the runs are laid out: shared by the stores of one engine, read from the database when it starts. */
  readonly layout: Layout;
  /** Set on a store whose `sql` names one partition's tables (distributed mode). */
  readonly partition?: number;
}

/**
 * Distributed mode (store/partitions.ts): how many partitions the runs are spread over; null on a
 * single server (and until the engine has read it).
 */
export interface Layout {
  partitions: number | null;
}

/** The layout of a single server (for stores that never see a distributed database). */
export const singleServer = (): Layout => ({ partitions: null });

export function createStore(sql: SqlClient, opts: { history: boolean; layout?: Layout }): Store {
  return { sql, history: opts.history, layout: opts.layout ?? singleServer() };
}

/** The same store, sending its statements through a caller's Prisma transaction (so they commit with it). */
export function storeWithin(store: Store, tx: PrismaLike): Store {
  const sql = prismaSqlClient(tx, store.sql.dialect, store.sql.notify, true);
  return { ...store, sql: store.partition === undefined ? sql : partitionSql(sql, store.partition) };
}

/** The store of partition `k` (distributed mode). */
export function partitionStore(store: Store, k: number): Store {
  if (store.partition === k) return store;
  if (store.partition !== undefined) throw new Error(`a store of partition ${store.partition} cannot address partition ${k}`);
  return { ...store, sql: partitionSql(store.sql, k), partition: k };
}

/** The store whose statements reach run `id`'s rows: its partition's in distributed mode, else the store itself. */
export function runStore(store: Store, id: string): Store {
  return store.layout.partitions === null || store.partition !== undefined
    ? store
    : partitionStore(store, partitionOf(id, store.layout.partitions));
}

/** Runs `fn` on every partition in turn (distributed mode), or once on a single server; the results in partition order. */
export async function eachPartition<R>(store: Store, fn: (s: Store) => Promise<R>): Promise<R[]> {
  const count = store.layout.partitions;
  if (count === null || store.partition !== undefined) return [await fn(store)];
  const results: R[] = [];
  for (let k = 0; k < count; k++) results.push(await fn(partitionStore(store, k)));
  return results;
}

/** One statement's rows from every partition (distributed mode: each partition's rows in turn), or from the single server. */
export async function rowsOfEach<T = Record<string, unknown>>(
  store: Store,
  text: Statement | string,
  params: readonly unknown[] = [],
): Promise<T[]> {
  return (await eachPartition(store, (s) => s.sql.query<T>(text, params))).flat();
}

/**
 * Runs `fn` once per partition the items' runs are in (distributed mode; once with all of them on one server),
 * each time with that partition's store and items, in their order; the results in one list.
 */
export async function perPartition<I, R>(
  store: Store,
  items: readonly I[],
  runId: (item: I) => string,
  fn: (s: Store, items: I[]) => Promise<R[]>,
): Promise<R[]> {
  const count = store.layout.partitions;
  if (count === null || store.partition !== undefined) return fn(store, items as I[]);
  const groups = new Map<number, I[]>();
  for (const item of items) {
    const k = partitionOf(runId(item), count);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  // One after another: the store may be one connection (a LISTEN session, a transaction), which runs one statement at a time.
  const results: R[] = [];
  for (const [k, group] of groups) results.push(...(await fn(partitionStore(store, k), group)));
  return results;
}

/** Dates come back as Date (pg, Prisma) or as text inside json. */
export const toDate = (v: unknown): Date | null => (v == null ? null : v instanceof Date ? v : new Date(String(v)));
/** json columns may come back as text from some drivers; jsonb/json from pg and Prisma are parsed. */
export const parsed = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;
/** Dates as ISO strings (the admin API's JSON). */
export const iso = (v: unknown): string | null =>
  v == null
    ? null
    : new Date(typeof v === 'string' && /^\d{4}-\d\d-\d\d \d[\d:.]*$/.test(v) ? `${v.replace(' ', 'T')}Z` : (v as string)).toISOString();

/** A new run id (a UUID) in partition `k` of `count`: minted again until it lands there, on average `count` tries. */
export function idInPartition(k: number, count: number): string {
  let id = randomUUID();
  while (partitionOf(id, count) !== k) id = randomUUID();
  return id;
}

/** A new run id in the partition of run `beside` (distributed mode; any UUID on a single server). */
export function idBeside(store: Store, beside: string): string {
  const count = store.layout.partitions;
  return count === null ? randomUUID() : idInPartition(partitionOf(beside, count), count);
}

/**
 * Distributed mode: children are written in their parent's partition, and every later statement finds
 * a run by its own id's partition, so a child whose id lands elsewhere (an id of the caller's own, or
 * the hashed form of a child of a very long parent id) is refused before anything is written.
 */
export function sameAsParent(store: Store, parentId: string, childIds: readonly string[]): void {
  const count = store.layout.partitions;
  if (count === null) return;
  const home = partitionOf(parentId, count);
  const away = childIds.find((id) => partitionOf(id, count) !== home);
  if (away !== undefined)
    throw new UnsupportedDatabaseError(
      'child id',
      `child run ${away} would not be in the partition of its parent ${parentId}, which distributed mode (Citus) needs: ` +
        'leave the child id to the engine (no id option), and keep parent ids short enough that `<parent id>:child:<n>` fits in 256 characters. See docs/scaling-out.md.',
    );
}
