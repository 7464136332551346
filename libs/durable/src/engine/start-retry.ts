import { setTimeout as delay } from 'node:timers/promises';
import { BACKOFF, backoffMs } from '../retry/backoff.js';
import { isConnectionError } from '../store/connection-errors.js';
import type { NewRun } from '../store/rows.js';
import { perPartition, type Store } from '../store/store.js';

/**
 * A start's insert, made outside a caller's transaction, tried once more when its connection failed:
 * a connection the server dropped (a failover's or a restart's, an idle one a proxy cut, a session
 * a server timeout ended) fails the one statement that meets it, and the pool closes it. Inserting a
 * run is idempotent by its id, so when the first try committed and only its answer was lost, the
 * second finds the run and the start returns it as 'existing'. While the database stays unreachable
 * the second try fails too, and start() throws the connection error.
 */
export async function onceMoreAfterConnectionLoss<T>(insert: () => Promise<T>): Promise<T> {
  try {
    return await insert();
  } catch (err) {
    if (!isConnectionError(err)) throw err;
    await delay(backoffMs(BACKOFF.startRetry, 1));
    return insert();
  }
}

/**
 * `insert` for each partition's runs in turn (one call on a single server), each tried once more
 * after a lost connection: in distributed mode each partition's runs commit on their own, so a
 * connection lost at a later partition does not send an earlier one's again (its runs would come
 * back 'existing', and runs inserted already claimed would wait for their lease instead of running).
 */
export async function insertEachPartition<R>(
  store: Store,
  runs: NewRun[],
  insert: (partition: Store, runs: NewRun[]) => Promise<Iterable<R>>,
): Promise<R[]> {
  return perPartition(
    store,
    runs,
    (r) => r.id,
    async (s, group) => [...(await onceMoreAfterConnectionLoss(() => insert(s, group)))],
  );
}
