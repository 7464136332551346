/** Messages between runs and from the app: stored once, signalled to the receiver. */
import * as mysql from './mysql/messages.js';
import { statement } from './statement.js';
import { signalRuns } from './sql-fragments.js';
import { partitionOf } from './partitions.js';
import { runStore, type Store } from './store.js';
import * as partitioned from './partitioned-waits.js';
import { HELD_SENDER } from './partitioned-waits.js';

/**
 * WorkflowClient.send: store a message for run $1 on topic $2 ($3 payload jsonb, $4 idempotency key
 * or null, $5 the sender's traceparent or null) and signal the run (a WAITING run becomes due and its queue is woken; a RUNNING one is
 * told through SIGNAL_CHANNEL). Inside the caller's transaction, the message and the signal exist
 * iff it commits. A repeated idempotency key for the same run inserts nothing. With $6 (active
 * only) a run that has ended counts as not found: nothing is stored for it (signals, callbacks).
 * FOR KEY SHARE: an end that deletes the run (not kept) waits for this statement's commit, or this
 * one for that end's and then finds no run; either way no message outlives its run (the end's
 * leftovers statement removes one that committed first: see finishRuns).
 * Returns found (the run exists), sent (1 = new message).
 */
const SEND_MESSAGE = statement(
  'send_message',
  `
WITH r AS (SELECT id FROM durable_runs WHERE id = $1 AND ($6::boolean IS NOT TRUE OR status NOT IN ('SUCCEEDED','FAILED','CANCELLED')) FOR KEY SHARE),
ins AS (
  INSERT INTO durable_messages (run_id, topic, payload, idempotency_key, traceparent)
  SELECT id, $2, $3::jsonb, $4, $5 FROM r
  ON CONFLICT (run_id, idempotency_key) DO NOTHING
  RETURNING run_id),
${signalRuns('sig', 'SELECT run_id FROM ins')}
SELECT (SELECT count(*) FROM r)::int AS found, (SELECT count(*) FROM ins)::int AS sent, (SELECT n FROM sig_n) AS signalled`,
);

/**
 * Durable.send (from workflow code): checkpoint the sender's step and store the message in one
 * statement, fenced by the sender's epoch — sent exactly once, however often the sender replays.
 * $1 sender run, $2 epoch, $3 seq, $4 step name, $5 target run, $6 topic, $7 payload (jsonb),
 * $8 idempotency key (sender run + seq), $9 the sender's traceparent or null. Returns held (0 = lease lost) and found (target exists).
 */
const SEND_FROM_RUN = statement(
  'send_from_run',
  `
WITH run AS (
  SELECT id FROM durable_runs WHERE id = $1 AND lease_epoch = $2 AND status = 'RUNNING' FOR SHARE),
target AS (SELECT id FROM durable_runs WHERE id = $5 FOR KEY SHARE),
step AS (
  INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)
  SELECT run.id, $3, $4, 'SUCCEEDED', NULL, 1, now(), now() FROM run, target
  ON CONFLICT (run_id, seq) DO NOTHING
  RETURNING seq),
ins AS (
  INSERT INTO durable_messages (run_id, topic, payload, idempotency_key, traceparent)
  SELECT $5, $6, $7::jsonb, $8, $9 FROM step
  ON CONFLICT (run_id, idempotency_key) DO NOTHING
  RETURNING run_id),
${signalRuns('sig', 'SELECT run_id FROM ins')}
SELECT (SELECT count(*) FROM run)::int AS held, (SELECT count(*) FROM target)::int AS found, (SELECT n FROM sig_n) AS signalled`,
);

/** Stores a message and signals the run; found = the run exists (and, with activeOnly, has not ended), sent = a new message (not a duplicate key). */
export async function sendMessage(
  store: Store,
  a: { runId: string; topic: string; payload: string; idempotencyKey: string | null; traceparent: string | null; activeOnly?: boolean },
): Promise<{ found: boolean; sent: boolean }> {
  if (store.sql.dialect === 'mysql') return mysql.sendMessage(store, a);
  store = runStore(store, a.runId);
  if (store.partition !== undefined) return partitioned.sendMessageInPartition(store, a);
  const [row] = await store.sql.query<{ found: number; sent: number }>(SEND_MESSAGE, [
    a.runId,
    a.topic,
    a.payload,
    a.idempotencyKey,
    a.traceparent,
    a.activeOnly === true,
  ]);
  return { found: Number(row.found) === 1, sent: Number(row.sent) === 1 };
}

/** Durable.send: the sender's step and the message in one fenced statement. */
export async function sendFromRun(
  store: Store,
  a: {
    runId: string;
    epoch: number;
    seq: number;
    name: string;
    target: string;
    topic: string;
    payload: string;
    traceparent: string | null;
  },
): Promise<{ held: boolean; found: boolean }> {
  if (store.sql.dialect === 'mysql') return mysql.sendFromRun(store, a);
  const count = store.layout.partitions;
  if (count !== null && partitionOf(a.target, count) !== partitionOf(a.runId, count)) return sendAcrossPartitions(store, a);
  store = runStore(store, a.runId);
  if (store.partition !== undefined) return partitioned.sendFromRunInPartition(store, a);
  const [row] = await store.sql.query<{ held: number; found: number }>(SEND_FROM_RUN, [
    a.runId,
    a.epoch,
    a.seq,
    a.name,
    a.target,
    a.topic,
    a.payload,
    `${a.runId}#${a.seq}`,
    a.traceparent,
  ]);
  return { held: Number(row.held) === 1, found: Number(row.found) === 1 };
}

/** The sender's step of a Durable.send (as SEND_FROM_RUN's): $1 run, $2 seq, $3 step name. */
const INSERT_SEND_STEP = statement(
  'insert_send_step',
  `INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)
   VALUES ($1, $2, $3, 'SUCCEEDED', NULL, 1, now(), now())
   ON CONFLICT (run_id, seq) DO NOTHING`,
);

/**
 * Durable.send to a run in another partition (distributed mode): SEND_FROM_RUN's work as one
 * transaction over the two partitions (two-phase commit when they are on two nodes): the sender held
 * and locked, the message stored for the target (sendMessage, its idempotency key the sender's run
 * and seq), the sender's step recorded. Nothing is written when the sender lost its lease or the
 * target does not exist.
 */
async function sendAcrossPartitions(store: Store, a: Parameters<typeof sendFromRun>[1]): Promise<{ held: boolean; found: boolean }> {
  return store.sql.transaction(async (sql) => {
    const tx: Store = { ...store, sql };
    const sender = runStore(tx, a.runId);
    if (!(await sender.sql.query(HELD_SENDER, [a.runId, a.epoch])).length) return { held: false, found: true };
    const { found } = await sendMessage(tx, {
      runId: a.target,
      topic: a.topic,
      payload: a.payload,
      idempotencyKey: `${a.runId}#${a.seq}`,
      traceparent: a.traceparent,
    });
    // No target: nothing was stored for it, and the step is not recorded (as SEND_FROM_RUN).
    if (!found) return { held: true, found: false };
    await sender.sql.query(INSERT_SEND_STEP, [a.runId, a.seq, a.name]);
    return { held: true, found: true };
  });
}

/** The payload of run $1's message with idempotency key $2 (durable_messages_idempotency_key), as stored. */
const MESSAGE_BY_KEY = statement('message_by_key', `SELECT payload FROM durable_messages WHERE run_id = $1 AND idempotency_key = $2`);

/** The stored payload of the message sent to `runId` with `idempotencyKey`; undefined when there is none. */
export async function messageByKey(store: Store, runId: string, idempotencyKey: string): Promise<{ payload: unknown } | undefined> {
  if (store.sql.dialect === 'mysql') return mysql.messageByKey(store, runId, idempotencyKey);
  store = runStore(store, runId);
  const [row] = await store.sql.query<{ payload: unknown }>(MESSAGE_BY_KEY, [runId, idempotencyKey]);
  return row;
}
