import { readPartitions } from '../store/distribution.js';
import type { Store } from '../store/store.js';

/** Reads whether the database is distributed into the store's layout: for an engine that is not started (the command line's). */
export async function readLayout(store: Store): Promise<void> {
  store.layout.partitions = await readPartitions(store.sql);
}
