import { setTimeout as delay } from 'node:timers/promises';
import { InvalidArgumentError, RunNotFoundError } from '../errors/index.js';
import { checkKey, MAX_HISTORY_ROWS, MAX_ID_LENGTH } from '../config/limits.js';
import { checkIdentifierCharacters } from '../config/identifiers.js';
import { describeThrown } from '../errors/describe-thrown.js';
import { decode, encode } from '../codec/codec.js';
import { BACKOFF, backoffMs } from '../retry/backoff.js';
import { getEvent as readEvent } from '../store/events.js';
import { getRunEvents as readRunEvents, type RunEvent } from '../store/history.js';
import { sendMessage } from '../store/messages.js';
import { FINISHED_STATUSES } from '../store/rows.js';
import { getRun as readRun } from '../store/runs.js';
import type { PrismaLike } from '../store/sql-client.js';
import { storeWithin } from '../store/store.js';
import type { EngineContext } from './engine-context.js';
import { toRunView, type RunView } from './run-view.js';

/** Options of send(). */
export interface SendOptions {
  /** A Prisma interactive-transaction client: the message exists iff that transaction commits. */
  tx?: PrismaLike;
  /** Deduplication key per run: a second send with the same key is ignored. */
  idempotencyKey?: string;
}

const isRunId = (id: unknown): id is string => typeof id === 'string' && !!id && id.length <= MAX_ID_LENGTH;

/** The run with its steps, or null. */
export async function getRun(e: EngineContext, id: string): Promise<RunView | null> {
  if (!isRunId(id)) return null;
  const row = await readRun(e.store, id);
  return row ? toRunView(row) : null;
}

/**
 * Sends a message to a run: its Durable.recv(topic) receives it, exactly once, in send order per
 * topic. With `tx` the message exists iff that transaction commits; a repeated `idempotencyKey`
 * for the same run is ignored; a waiting run wakes at once. Unknown run → RunNotFoundError.
 */
export async function send(e: EngineContext, runId: string, topic: string, payload: unknown, opts: SendOptions): Promise<void> {
  if (!isRunId(runId)) throw new RunNotFoundError(describeThrown(runId));
  checkIdentifierCharacters('send()', 'runId', runId); // no run has such an id: start() refuses it
  checkKey('send()', 'topic', topic);
  const key = opts.idempotencyKey ?? null;
  if (key !== null) checkKey('send()', 'idempotencyKey', key);
  const encoded = encode(payload, { where: `message "${topic}" to run ${runId}`, maxBytes: e.options.maxPayloadBytes });
  const store = opts.tx ? storeWithin(e.store, opts.tx) : e.store;
  const traceparent = e.telemetry.tracing.activeTraceparent();
  const r = await sendMessage(store, { runId, topic, payload: encoded, idempotencyKey: key, traceparent });
  if (!r.found) throw new RunNotFoundError(runId);
}

/**
 * The latest value the run published under `key`; if there is none yet, polls until it appears
 * or `timeoutMs` passes → null. Also null at once when the run has ended without publishing it.
 */
export async function getEvent<T>(e: EngineContext, runId: string, key: string, timeoutMs: number): Promise<T | null> {
  checkKey('getEvent()', 'key', key);
  if (typeof timeoutMs !== 'number' || !(timeoutMs >= 0)) {
    throw new InvalidArgumentError(
      `getEvent(): timeoutMs must be a number of milliseconds ≥ 0 (got ${JSON.stringify(timeoutMs)}).`,
      'timeoutMs',
    );
  }
  const end = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    const r = await readEvent(e.store, runId, key);
    if (r.found) return decode(r.value) as T;
    if (r.status && FINISHED_STATUSES.has(r.status)) return null;
    const left = end - Date.now();
    if (left <= 0) return null;
    await delay(Math.min(backoffMs(BACKOFF.eventPoll, attempt), left));
  }
}

/** The run's history, oldest first (at most `limit` rows, 1 to MAX_HISTORY_ROWS). */
export function getRunEvents(e: EngineContext, runId: string, limit: number): Promise<RunEvent[]> {
  return readRunEvents(e.store, runId, Math.max(1, Math.min(limit, MAX_HISTORY_ROWS)));
}
