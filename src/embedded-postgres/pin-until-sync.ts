import type { PGlite } from '@electric-sql/pglite';
import type { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/** The parts of pglite-socket 0.2.17's private query queue that this patch replaces. */
interface QueueJob {
  handlerId: number;
  message: Uint8Array;
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (err: unknown) => void;
}
interface QueryQueue {
  queue: QueueJob[];
  processing: boolean;
  lastHandlerId: number | null;
  db: PGlite;
  processQueue(): Promise<void>;
  clearTransactionIfNeeded(handlerId: number): Promise<void>;
}

const SYNC = new Uint8Array([0x53, 0, 0, 0, 4]);
/** Extended-protocol messages after which the client's batch is still open (until Sync). */
const BATCH_OPENERS = new Set(['P', 'B', 'D', 'E', 'H', 'C'].map((c) => c.charCodeAt(0)));

/**
 * Works around electric-sql/pglite#1046. PGlite is a single Postgres backend shared by every
 * socket; pglite-socket 0.2.17 keeps serving one socket only while a transaction is open. A
 * pg client sends Parse/Bind/Execute/Sync as separate messages, so two connections' batches
 * interleave on the one backend and the unnamed statement of one is bound with the other's
 * parameters ("unnamed prepared statement does not exist", or silently wrong results).
 *
 * This replaces the queue's loop so that a socket stays pinned from its first extended-protocol
 * message until its Sync (or simple Query), and for as long as its transaction is open. A socket
 * that closes while pinned is released: its batch is ended with a Sync, its transaction rolled back.
 */
export function pinUntilSync(server: PGLiteSocketServer): void {
  const q = (server as unknown as { queryQueue: QueryQueue }).queryQueue;
  if (!q || !Array.isArray(q.queue) || typeof q.processQueue !== 'function') {
    throw new Error('pglite-socket internals changed: the pinUntilSync patch was written for @electric-sql/pglite-socket 0.2.17');
  }
  const db = q.db;
  let open = false; // the pinned socket's last message left an extended-protocol batch open
  let inFlight: number | null = null;
  const closed = new Set<number>();
  const run = (message: Uint8Array, onData: (d: Uint8Array) => void) =>
    db.runExclusive(() => db.execProtocolRawStream(message, { onRawData: onData }));

  async function releaseDeadPin(): Promise<void> {
    const id = q.lastHandlerId;
    if (id === null || !closed.has(id)) return;
    closed.delete(id);
    if (open) await run(SYNC, () => {}).catch(() => {});
    if (db.isInTransaction()) await db.exec('ROLLBACK').catch(() => {});
    open = false;
    q.lastHandlerId = null;
  }

  q.processQueue = async function processQueue(this: QueryQueue) {
    if (q.processing) return;
    q.processing = true;
    try {
      await releaseDeadPin();
      while (q.queue.length > 0) {
        let index = 0;
        if (q.lastHandlerId !== null && (open || db.isInTransaction())) {
          index = q.queue.findIndex((job) => job.handlerId === q.lastHandlerId);
          if (index === -1) break; // wait for the pinned socket's next message
        }
        const job = q.queue.splice(index, 1)[0];
        let bytes = 0;
        inFlight = job.handlerId;
        try {
          await run(job.message, (d) => {
            bytes += d.length;
            job.onData(d);
          });
        } catch (err) {
          open = false;
          q.lastHandlerId = null;
          job.reject(err);
          continue;
        } finally {
          inFlight = null;
        }
        q.lastHandlerId = job.handlerId;
        // A startup message begins with its length (first byte 0); Sync, Query and Terminate close the batch.
        open = BATCH_OPENERS.has(job.message[0]);
        job.resolve(bytes);
        await releaseDeadPin();
      }
    } finally {
      q.processing = false;
    }
  };

  q.clearTransactionIfNeeded = async (handlerId: number) => {
    if (q.lastHandlerId === handlerId || inFlight === handlerId) closed.add(handlerId);
    await q.processQueue();
  };
}
