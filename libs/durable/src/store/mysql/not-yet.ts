/**
 * Features whose statements do not exist for MySQL-family databases yet: cluster-wide queue limits,
 * singleton and debounced starts. Configuring one on such a database is refused with
 * UnsupportedDatabaseError (at start for declared ones, at the call for runtime ones); reads that
 * list them find none (no row can exist without the writes).
 */
import { UnsupportedDatabaseError } from '../../errors/index.js';
import type { Store } from '../store.js';
import { date, NOW } from './sql.js';

const refuse = (feature: string, what: string): never => {
  throw new UnsupportedDatabaseError(
    feature,
    `${what} are not available on MariaDB/MySQL yet (docs/databases.md lists what is); use PostgreSQL for them, or leave them out.`,
  );
};

export const notYet = {
  limits: () => refuse('flow-control', 'Cluster-wide queue limits (queues: { concurrency, keyConcurrency, rateLimit }, setQueueLimits)'),
  keyedStarts: () => refuse('keyed-starts', 'Singleton and debounced starts (dedupeKey, debounce)'),
};

/** The database clock in ms (a read every feature may use). */
export async function dbNow(store: Store): Promise<number> {
  const [row] = await store.sql.query<{ now: unknown }>(`SELECT ${NOW} AS now`);
  return date(row.now)!.getTime();
}
