import { UnsupportedDatabaseError } from '../errors/index.js';
import { readPartitions } from '../store/distribution.js';
import type { Store } from '../store/store.js';

/**
 * Distributed mode (Citus, store/partitions.ts) runs the engine, its admin API and its commands. The
 * feature that calls this (bulk actions) reads and changes runs of several partitions in ways not
 * rebuilt for partitions yet: it is refused here with a typed error instead of failing on a Citus
 * message.
 */
export function refuseInDistributedMode(store: Store, feature: string, what: string): void {
  if (store.layout.partitions === null) return;
  throw new UnsupportedDatabaseError(
    feature,
    `${what} is not available in distributed mode (Citus) yet. Run this app on a single PostgreSQL server to use it, ` +
      'or leave it out: the rest of the engine works on Citus. See docs/scaling-out.md.',
  );
}

/** Reads whether the database is distributed into the store's layout: for an engine that is not started (the command line's). */
export async function readLayout(store: Store): Promise<void> {
  store.layout.partitions = await readPartitions(store.sql);
}
