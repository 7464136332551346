import { prismaSqlClient, type PrismaLike, type SqlClient } from './sql-client.js';

/**
 * Where the store's statements go, and the settings every statement needs: created once per
 * engine. `history` (engine option, default true): statements that change a run's state also
 * write its history row (durable_run_events) in the same statement.
 */
export interface Store {
  readonly sql: SqlClient;
  readonly history: boolean;
}

export function createStore(sql: SqlClient, opts: { history: boolean }): Store {
  return { sql, history: opts.history };
}

/** The same store, sending its statements through a caller's Prisma transaction (so they commit with it). */
export function storeWithin(store: Store, tx: PrismaLike): Store {
  return { sql: prismaSqlClient(tx, store.sql.dialect, store.sql.notify), history: store.history };
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
