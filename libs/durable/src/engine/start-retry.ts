import { isConnectionError } from '../store/connection-errors.js';

/** How long a start waits before its one more try (the pool has dropped the failed connection by then). */
export const START_RETRY_DELAY_MS = 200;

/**
 * A start's insert, made outside a caller's transaction, tried once more when its connection was
 * lost: a connection the server dropped (a failover's or a restart's, an idle one a proxy cut, a
 * session ended by a server timeout) fails the one statement that meets it, and the pool replaces
 * it. Inserting a run is idempotent by its id, so when the first try committed and only its reply
 * was lost, the second finds the run and the start returns it as 'existing'. While the database stays
 * unreachable the second try fails too, and start() throws the connection error.
 */
export async function onceMoreAfterConnectionLoss<T>(insert: () => Promise<T>): Promise<T> {
  try {
    return await insert();
  } catch (err) {
    if (!isConnectionError(err)) throw err;
    await new Promise((resolve) => setTimeout(resolve, START_RETRY_DELAY_MS));
    return insert();
  }
}
