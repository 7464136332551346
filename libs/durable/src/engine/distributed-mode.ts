import { UnsupportedDatabaseError } from '../errors/index.js';
import { readPartitions } from '../store/distribution.js';
import type { Store } from '../store/store.js';

/**
 * Distributed mode (Citus, store/partitions.ts) runs the core of the engine: starts (in the app's
 * transaction), claims, steps, transactional steps, waits, children, messages to a run, streams,
 * cancel, resume, schedules, leases and the sweeps, and the admin API. The features that call this read or change runs of several partitions in one
 * statement, which Citus refuses as written: until they are rebuilt for partitions, they are
 * refused here with a typed error instead of failing on a Citus message.
 */
export function refuseInDistributedMode(store: Store, feature: string, what: string): void {
  if (store.layout.partitions === null) return;
  throw new UnsupportedDatabaseError(
    feature,
    `${what} is not available in distributed mode (Citus) yet. Run this app on a single PostgreSQL server to use it, ` +
      'or leave it out: the core of the engine (starts, steps, transactional steps, waits, children, messages, streams, cancel, resume, schedules) works on Citus. See docs/scaling-out.md.',
  );
}

/** Reads whether the database is distributed into the store's layout: for an engine that is not started (the command line's). */
export async function readLayout(store: Store): Promise<void> {
  store.layout.partitions = await readPartitions(store.sql);
}
