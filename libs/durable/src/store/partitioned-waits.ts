/**
 * Waits, stream chunks, messages and events of one partition (distributed mode, store/partitions.ts):
 * RESOLVE_WAITS (waits.ts), WRITE_CHUNK (streams.ts), SEND_MESSAGE and SEND_FROM_RUN (messages.ts)
 * and SET_EVENT (events.ts) as statements Citus sends whole to the partition's node. The
 * single-server statements insert rows in CTEs (steps, chunks, messages, history) and call pg_notify
 * in CTEs, which makes Citus run a statement in parts; here a first statement locks the run and reads
 * (or decides) what to write, and the rows follow as top-level INSERT … VALUES statements in the same
 * transaction, under the lock the first one took: what is written, and when, is what the
 * single-server statement writes.
 */
import { statement } from './statement.js';
import { HELD_RUN, notifySignalled, SIGNAL_CHANNEL, signalledRuns, STREAM_CHANNEL, WAKEUP_CHANNEL } from './sql-fragments.js';
import { insertValues, notifyAll } from './row-values.js';
import { nextWake, waitResults } from './wait-sql.js';
import { toDate, type Store } from './store.js';
import type { ChunkWrite, ResolveResult, WaitSpec } from './rows.js';

/**
 * RESOLVE_WAITS of one partition without its writes but the groups' wake_at: $1 run, $2 epoch, $3
 * token, $4 may suspend, $5 re-check ms, $6..$13 the waits' arrays (RESOLVE_WAITS' $7..$14). The run
 * is locked as there; a row per step to write (`res`, none: one row of nulls) with `may_suspend` (the
 * run is held, $4, and its available_at is still the token) and `next_at`, as the column stores it.
 * Outputs as text, so that they are written back exactly as read (a jsonb number may not fit a JS one).
 */
const RESOLVE_IN_PARTITION = statement(
  'resolve_waits_in_partition',
  `
WITH ${HELD_RUN},
${waitResults(6)},
${nextWake('$5')}
SELECT (SELECT count(*) FROM run)::int AS held, (SELECT available_at FROM run) AS token,
       (SELECT $4::boolean AND available_at = $3::timestamptz FROM run) AS may_suspend,
       (SELECT at FROM nxt)::timestamptz(3) AS next_at,
       res.seq, res.name, res.status, res.output::text AS output, res.resolves, got.msg_id::text AS message_id, got.traceparent
FROM (SELECT 1) one LEFT JOIN (res LEFT JOIN got USING (seq)) ON true`,
);

interface ResolveRow {
  held: number;
  token: Date | string | null;
  may_suspend: boolean | null;
  next_at: Date | null;
  seq: number | null;
  name: string;
  status: 'SUCCEEDED' | 'WAITING';
  output: string | null;
  resolves: boolean;
  message_id: string | null;
  traceparent: string | null;
}

/** RESOLVE_WAITS' `used`: the messages $1 taken by the recv steps $2 (seq) that were written. */
const CONSUME_MESSAGES = statement(
  'consume_messages',
  `
UPDATE durable_messages m SET consumed_seq = u.seq, consumed_at = now()
FROM unnest($1::bigint[], $2::int[]) AS u(id, seq) WHERE m.id = u.id`,
);

/** RESOLVE_WAITS' `sus`: run $1, held under epoch $2 (and locked), suspended until $3. */
const SUSPEND_RUN = statement(
  'suspend_run',
  `
UPDATE durable_runs SET status = 'WAITING', available_at = $3::timestamptz, lease_owner = NULL, lease_expires_at = NULL,
  attempt = 0, updated_at = now()
WHERE id = $1 AND lease_epoch = $2 AND status = 'RUNNING'
RETURNING queue, available_at`,
);

/** RESOLVE_WAITS' `hist`: run $1 suspended until $2, waiting for $3 (jsonb: seq, kind and key of each wait, in seq order). */
const SUSPENDED_HISTORY = statement(
  'suspended_history',
  `INSERT INTO durable_run_events (run_id, kind, detail) VALUES ($1, 'suspended', jsonb_build_object('until', $2::timestamptz, 'waits', $3::jsonb))`,
);

/** Resolves the waits of a run of `store`'s partition and suspends it when nothing can progress, as resolveWaits() (waits.ts). */
export async function resolveWaitsInPartition(
  store: Store,
  a: { runId: string; epoch: number; token: Date | null; maySuspend: boolean; recheckMs: number; waits: WaitSpec[] },
  waitColumns: unknown[],
): Promise<ResolveResult> {
  return store.sql.transaction(async (sql) => {
    const rows = await sql.query<ResolveRow>(RESOLVE_IN_PARTITION, [
      a.runId,
      a.epoch,
      a.token,
      a.maySuspend && a.token !== null,
      a.recheckMs,
      ...waitColumns,
    ]);
    const [first] = rows;
    const res = rows.filter((r) => r.seq !== null);
    const bySeq = new Map(res.map((r) => [Number(r.seq), r]));
    // The steps, written (or a WAITING one updated) after the statement's lock: as `ins`.
    const written = res.length
      ? await insertValues<{ seq: number; status: 'SUCCEEDED' | 'WAITING'; output: unknown }>(
          sql,
          'INSERT INTO durable_steps AS s (run_id, seq, name, status, output, attempts, started_at, finished_at)',
          ['?', '?::int', '?', '?', '?::jsonb', '1', 'now()', 'now()'],
          res.map((r) => [a.runId, r.seq, r.name, r.status, r.output]),
          `ON CONFLICT (run_id, seq) DO UPDATE SET status = excluded.status, output = excluded.output, finished_at = excluded.finished_at
  WHERE s.status = 'WAITING' RETURNING s.seq, s.status, s.output`,
        )
      : [];
    const taken = written.flatMap((w) => {
      const m = bySeq.get(Number(w.seq))?.message_id;
      return m == null ? [] : [[m, Number(w.seq)] as const];
    });
    if (taken.length) await sql.query(CONSUME_MESSAGES, [taken.map((t) => t[0]), taken.map((t) => t[1])]);
    const progress = written.filter((w) => bySeq.get(Number(w.seq))?.resolves === true).length;
    let suspended: ResolveResult['suspended'] = null;
    if (first.may_suspend === true && progress === 0) {
      const [sus] = await sql.query<{ queue: string; available_at: Date | string }>(SUSPEND_RUN, [a.runId, a.epoch, first.next_at]);
      if (sus) {
        suspended = { until: toDate(sus.available_at)!, queue: String(sus.queue) };
        if (store.history) await sql.query(SUSPENDED_HISTORY, [a.runId, sus.available_at, waitsDetail(a.waits)]);
      }
    }
    return {
      held: Number(first.held) === 1,
      token: toDate(first.token),
      suspended,
      steps: written.map((w) => {
        const r = bySeq.get(Number(w.seq));
        return { seq: w.seq, status: w.status, output: w.output, message: r?.message_id != null, traceparent: r?.traceparent ?? null };
      }),
    };
  });
}

/** The waits of a `suspended` history row, as RESOLVE_WAITS' jsonb_agg: seq, kind and key, in seq order (null: none). */
function waitsDetail(waits: WaitSpec[]): string | null {
  if (!waits.length) return null;
  return JSON.stringify([...waits].sort((x, y) => x.seq - y.seq).map((x) => ({ seq: x.seq, kind: x.kind, key: x.key ?? null })));
}

/** WRITE_CHUNK's `run` (streams.ts): run $1 held under epoch $2, locked FOR SHARE, and the next position of its stream $3. */
const LOCK_CHUNK_RUN = statement(
  'lock_chunk_run',
  `
SELECT r.id, (SELECT coalesce(max(c.position) + 1, 0) FROM durable_stream_chunks c WHERE c.run_id = r.id AND c.stream = $3) AS pos
FROM durable_runs r WHERE r.id = $1 AND r.lease_epoch = $2 AND r.status = 'RUNNING' FOR SHARE OF r`,
);

/** A step recorded SUCCEEDED without output (a send, a stream write, an event): $1 run, $2 seq, $3 name; the seq when it is new. */
const INSERT_DONE_STEP = statement(
  'insert_done_step',
  `
INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)
VALUES ($1, $2::int, $3, 'SUCCEEDED', NULL, 1, now(), now())
ON CONFLICT (run_id, seq) DO NOTHING
RETURNING seq`,
);

/** WRITE_CHUNK's `chunk`: $1 run, $2 stream, $3 position, $4 origin, $5 value, $6 end marker; a row when it is new. */
const INSERT_CHUNK = statement(
  'insert_stream_chunk',
  `
INSERT INTO durable_stream_chunks (run_id, stream, position, origin, value, is_end)
VALUES ($1, $2, $3, $4, $5::jsonb, $6::boolean)
ON CONFLICT (run_id, origin) DO NOTHING
RETURNING run_id`,
);

/**
 * Appends a chunk to a run's stream of `store`'s partition, as writeChunk() (streams.ts). The readers'
 * hint is sent by the coordinator (notifyAll): Citus allows no pg_notify in an INSERT's RETURNING.
 */
export async function writeChunkInPartition(store: Store, c: ChunkWrite): Promise<boolean> {
  return store.sql.transaction(async (sql) => {
    const [run] = await sql.query<{ pos: number }>(LOCK_CHUNK_RUN, [c.runId, c.epoch, c.stream]);
    if (!run) return false;
    if (c.step) await sql.query(INSERT_DONE_STEP, [c.runId, c.step.seq, c.step.name]);
    const written = await sql.query(INSERT_CHUNK, [c.runId, c.stream, run.pos, c.origin, c.value, c.isEnd]);
    if (written.length) await notifyAll(sql, [[STREAM_CHANNEL, c.runId]]);
    return true;
  });
}

/** SEND_MESSAGE's `r` (messages.ts): run $1, locked FOR KEY SHARE; with $2 (active only), only if it has not ended. */
const LOCK_TARGET = statement(
  'lock_message_target',
  `SELECT id FROM durable_runs WHERE id = $1 AND ($2::boolean IS NOT TRUE OR status NOT IN ('SUCCEEDED','FAILED','CANCELLED')) FOR KEY SHARE`,
);

/** SEND_MESSAGE's `ins`: $1 run, $2 topic, $3 payload, $4 idempotency key, $5 traceparent; a row when it is new. */
const INSERT_MESSAGE = statement(
  'insert_message',
  `
INSERT INTO durable_messages (run_id, topic, payload, idempotency_key, traceparent)
VALUES ($1, $2, $3::jsonb, $4, $5)
ON CONFLICT (run_id, idempotency_key) DO NOTHING
RETURNING run_id`,
);

/** SEND_MESSAGE's signal of run $1 (signalRuns in sql-fragments.ts), its notification sent by the final SELECT (on the partition's node). */
const SIGNAL_RUN = statement(
  'signal_run',
  `
WITH ${signalledRuns('sig', 'SELECT $1::text')}
${notifySignalled('sig')}`,
);

/** SIGNAL_RUN without its notification: the run signalled (none: it is neither RUNNING nor WAITING). */
const SIGNAL_RUN_QUIETLY = statement(
  'signal_run_quietly',
  `
WITH ${signalledRuns('sig', 'SELECT $1::text')}
SELECT id, queue, status FROM sig`,
);

/**
 * Stores a message for run `a.runId` of `store`'s partition and signals it, as sendMessage()
 * (messages.ts). It may be part of a transaction over several nodes (the app's, or a send across
 * partitions), which Citus commits with two-phase commit, and a node cannot prepare a transaction that
 * notified: the signal's notification is sent by the coordinator (notifyAll), when that commits.
 */
export async function sendMessageInPartition(
  store: Store,
  a: { runId: string; topic: string; payload: string; idempotencyKey: string | null; traceparent: string | null; activeOnly?: boolean },
): Promise<{ found: boolean; sent: boolean }> {
  return store.sql.transaction(async (sql) => {
    if (!(await sql.query(LOCK_TARGET, [a.runId, a.activeOnly === true])).length) return { found: false, sent: false };
    if (!(await sql.query(INSERT_MESSAGE, [a.runId, a.topic, a.payload, a.idempotencyKey, a.traceparent])).length)
      return { found: true, sent: false };
    const signalled = await sql.query<{ id: string; queue: string; status: string }>(SIGNAL_RUN_QUIETLY, [a.runId]);
    await notifyAll(
      sql,
      signalled.map((r): [string, string] => (r.status === 'WAITING' ? [WAKEUP_CHANNEL, r.queue] : [SIGNAL_CHANNEL, r.id])),
    );
    return { found: true, sent: true };
  });
}

/** SEND_FROM_RUN's `run` and `target` (messages.ts): sender $1 held under epoch $2 (FOR SHARE), target $3 (FOR KEY SHARE). */
const LOCK_SENDER_AND_TARGET = statement(
  'lock_sender_and_target',
  `
WITH run AS (
  SELECT id FROM durable_runs WHERE id = $1 AND lease_epoch = $2 AND status = 'RUNNING' FOR SHARE),
target AS (SELECT id FROM durable_runs WHERE id = $3 FOR KEY SHARE)
SELECT (SELECT count(*) FROM run)::int AS held, (SELECT count(*) FROM target)::int AS found`,
);

/**
 * Durable.send to a run of the sender's partition (`store`'s), as sendFromRun() (messages.ts): the
 * sender's step, then (when it is new) the message, then (when that is new) the target's signal. A
 * transaction of its own, on the partition's node alone: the signal's notification is sent there.
 */
export async function sendFromRunInPartition(
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
  return store.sql.transaction(async (sql) => {
    const [row] = await sql.query<{ held: number; found: number }>(LOCK_SENDER_AND_TARGET, [a.runId, a.epoch, a.target]);
    const held = Number(row.held) === 1;
    const found = Number(row.found) === 1;
    if (held && found && (await sql.query(INSERT_DONE_STEP, [a.runId, a.seq, a.name])).length) {
      const message = [a.target, a.topic, a.payload, `${a.runId}#${a.seq}`, a.traceparent];
      if ((await sql.query(INSERT_MESSAGE, message)).length) await sql.query(SIGNAL_RUN, [a.target]);
    }
    return { held, found };
  });
}

/** The run $1, if this execution ($2 epoch) still holds it: locked FOR SHARE until the transaction commits. */
export const HELD_SENDER = statement(
  'held_sender',
  `SELECT id FROM durable_runs WHERE id = $1 AND lease_epoch = $2 AND status = 'RUNNING' FOR SHARE`,
);

/** SET_EVENT's `ev` (events.ts): run $1's event $2 set to $3. */
const UPSERT_EVENT = statement(
  'upsert_event',
  `
INSERT INTO durable_events (run_id, key, value, updated_at)
VALUES ($1, $2, $3::jsonb, now())
ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
);

/** Durable.setEvent in `store`'s partition, as setEvent() (events.ts): the step, then (when it is new) the event. */
export async function setEventInPartition(
  store: Store,
  a: { runId: string; epoch: number; seq: number; name: string; key: string; value: string },
): Promise<boolean> {
  return store.sql.transaction(async (sql) => {
    if (!(await sql.query(HELD_SENDER, [a.runId, a.epoch])).length) return false;
    if ((await sql.query(INSERT_DONE_STEP, [a.runId, a.seq, a.name])).length) await sql.query(UPSERT_EVENT, [a.runId, a.key, a.value]);
    return true;
  });
}
