/**
 * Durable.backfill: a keyset walk over a table, one transactional step per batch — the batch's
 * writes and the cursor (the step's checkpoint) commit together, so every row is processed exactly
 * once across crashes and deploys. Built on steps, recv (pause/resume) and setEvent (progress).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { InvalidArgumentError, NotInWorkflowError } from '../errors/index.js';
import { BACKFILL_CONTROL_TOPIC, BACKFILL_PROGRESS_KEY, pendingMessage } from '../store/backfills.js';
import { storeWithin } from '../store/store.js';
import type { PrismaLike } from '../store/sql-client.js';
import type { RetryPolicy } from '../config/retry-policy.js';
import type { StepOptions } from '../definitions/definitions.js';
import { currentScope } from './run-context.js';
import { invokeStep } from './step-runner.js';
import { durableRecv } from './waits.js';
import { setEvent } from './events.js';

/** What a backfill walks and does: the code of the workflow that runs it. */
export interface BackfillSpec<Row, Key, Tx = any> {
  /**
   * The next rows after `after` (null: from the start) in the order of their key, at most `limit`,
   * read through `tx` (the batch's transaction), e.g.
   * `tx.order.findMany({ where: { id: { gt: after ?? '' } }, orderBy: { id: 'asc' }, take: limit })`.
   */
  read(after: Key | null, limit: number, tx: Tx): Promise<Row[]>;
  /** A row's key: unique and increasing in read's order (stored as the cursor: a string, number, bigint or Date). */
  key(row: Row): Key;
  /** Does the batch's work, writing through `tx`: those writes commit with the cursor, exactly once. */
  process(rows: Row[], tx: Tx): Promise<void>;
  /** How many rows there are to do (progress and ETA); read once, at the start. */
  estimate?(): Promise<number>;
  /** Rows per batch (per transaction). Default 500. */
  batchSize?: number;
  /** Rows per second at most (null: as fast as it goes). The run's input may lower or raise it. */
  rowsPerSecond?: number | null;
  /** Retries of a failed batch (its transaction rolled back). Default: the engine's stepRetries. */
  retries?: number | RetryPolicy;
  /** Options of each batch's transaction (timeout, maxWait, isolationLevel), as on @Step(). */
  transaction?: StepOptions['transaction'];
}

/** The input of a backfill's run (what the starter may choose), all optional. */
export interface BackfillInput {
  /** Read every row, process none: the result's `rows` is how many there are. */
  dryRun?: boolean;
  /** Overrides the spec's rowsPerSecond for this run. */
  rowsPerSecond?: number | null;
  /** Overrides the spec's batchSize for this run. */
  batchSize?: number;
}

/** What a backfill's run returns. */
export interface BackfillResult<Key = unknown> {
  rows: number;
  batches: number;
  dryRun: boolean;
  /** The key of the last row done (null when there was none). */
  after: Key | null;
}

/** The progress event of a backfill (WorkflowClient.getEvent(runId, 'durable.backfill'), the admin API). */
export interface BackfillProgress {
  done: number;
  estimated: number | null;
  batches: number;
  dryRun: boolean;
  paused: boolean;
  finished: boolean;
  /** When the backfill began and when this was reported (epoch ms, recorded). */
  startedAt: number;
  at: number;
}

interface Batch<Key> {
  rows: number;
  after: Key | null;
  /** When the batch began and ended (epoch ms). */
  began: number;
  at: number;
  /** A pause or resume was waiting when the batch committed. */
  control: boolean;
  /** The batch size it read with: a batch with fewer rows was the last (recorded, so a deploy that changes batchSize cannot end a replay early). */
  limit: number;
}

const REPORT_EVERY_MS = 1_000;

/** Durable.backfill — see durable-api.ts. */
export async function backfill<Row, Key>(
  input: BackfillInput | null | undefined,
  spec: BackfillSpec<Row, Key>,
): Promise<BackfillResult<Key>> {
  if (!currentScope()) throw new NotInWorkflowError('Durable.backfill()');
  const o = settings(input, spec);
  const startedAt = (await invokeStep({ name: 'backfill:start', options: { retries: 0 } }, () => Date.now())) as number;
  const estimated = spec.estimate
    ? ((await invokeStep({ name: 'backfill:estimate', options: {} }, async () => Math.max(0, Number(await spec.estimate!())))) as number)
    : null;
  const progress: BackfillProgress = {
    done: 0,
    estimated,
    batches: 0,
    dryRun: o.dryRun,
    paused: false,
    finished: false,
    startedAt,
    at: startedAt,
  };
  await setEvent(BACKFILL_PROGRESS_KEY, progress);
  let after: Key | null = null;
  let lastAt = startedAt;
  for (;;) {
    const from = after;
    const batch = (await invokeStep(
      { name: 'backfill:batch', options: { transactional: true, retries: spec.retries, transaction: spec.transaction } },
      async (): Promise<Batch<Key>> => {
        const scope = currentScope()!;
        const tx = scope.step!.tx as PrismaLike;
        const began = Date.now();
        const rows = await spec.read(from, o.batchSize, tx);
        if (!Array.isArray(rows))
          throw new InvalidArgumentError(`the backfill's read() must return an array of rows (got ${typeof rows}).`);
        if (rows.length > o.batchSize) {
          throw new InvalidArgumentError(
            `the backfill's read() returned ${rows.length} rows for a limit of ${o.batchSize}: take the limit.`,
          );
        }
        if (rows.length && !o.dryRun) await spec.process(rows, tx);
        const control = await pendingMessage(storeWithin(scope.run.services.store, tx), scope.run.runId, BACKFILL_CONTROL_TOPIC);
        const after = rows.length ? spec.key(rows[rows.length - 1]) : from;
        if (rows.length && (after === null || after === undefined)) {
          throw new InvalidArgumentError("the backfill's key() returned nothing for a row: every row needs a key (its cursor).", 'key');
        }
        return { rows: rows.length, after, began, at: Date.now(), control, limit: o.batchSize };
      },
    )) as Batch<Key>;
    after = batch.after;
    lastAt = batch.at;
    progress.done += batch.rows;
    progress.batches++;
    const last = batch.rows < (batch.limit ?? o.batchSize);
    if (batch.control) await obeyControl(progress, batch.at);
    else if (!last && batch.at - progress.at >= REPORT_EVERY_MS) await report(progress, batch.at);
    if (last) break;
    await throttle(o.rowsPerSecond, batch, currentScope()!.run.abort.signal);
  }
  progress.finished = true;
  progress.paused = false;
  await report(progress, lastAt);
  return { rows: progress.done, batches: progress.batches, dryRun: o.dryRun, after };
}

async function report(progress: BackfillProgress, at: number): Promise<void> {
  progress.at = Math.max(progress.at, at);
  await setEvent(BACKFILL_PROGRESS_KEY, progress);
}

/** A pause waits (the run suspends: no slot, no connection) for a resume; a resume alone is passed over. */
async function obeyControl(progress: BackfillProgress, at: number): Promise<void> {
  let m = await durableRecv<{ action?: string }>(BACKFILL_CONTROL_TOPIC, {});
  while (m?.action === 'pause') {
    if (!progress.paused) {
      progress.paused = true;
      await report(progress, at);
    }
    m = await durableRecv<{ action?: string }>(BACKFILL_CONTROL_TOPIC, {});
  }
  if (progress.paused) {
    progress.paused = false;
    await report(progress, at);
  }
}

/**
 * Holds the rate: waits until the batch's rows fit in rowsPerSecond. Only for a batch done just now
 * (a replay of recorded batches does not wait again): a plain timer, which no durable decision reads.
 */
async function throttle(rowsPerSecond: number | null, batch: Batch<unknown>, signal: AbortSignal): Promise<void> {
  if (!rowsPerSecond || !batch.rows) return;
  const now = Date.now();
  if (now - batch.at > 5_000) return;
  const wait = (batch.rows / rowsPerSecond) * 1000 - (now - batch.began);
  // Cut short when the execution stops (cancel, deadline, lease lost, shutdown): the loop's next step then stops it.
  if (wait > 0) await delay(wait, undefined, { signal }).catch(() => undefined);
}

function settings(input: BackfillInput | null | undefined, spec: BackfillSpec<unknown, unknown>) {
  const i = input ?? {};
  const batchSize = i.batchSize ?? spec.batchSize ?? 500;
  const rowsPerSecond = i.rowsPerSecond !== undefined ? i.rowsPerSecond : (spec.rowsPerSecond ?? null);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 100_000) {
    throw new InvalidArgumentError(
      `a backfill's batchSize must be an integer from 1 to 100000 (got ${JSON.stringify(batchSize)}).`,
      'batchSize',
    );
  }
  if (rowsPerSecond !== null && !(typeof rowsPerSecond === 'number' && rowsPerSecond > 0 && Number.isFinite(rowsPerSecond))) {
    throw new InvalidArgumentError(
      `a backfill's rowsPerSecond must be a positive number or null (got ${JSON.stringify(rowsPerSecond)}).`,
      'rowsPerSecond',
    );
  }
  if (i.dryRun !== undefined && typeof i.dryRun !== 'boolean')
    throw new InvalidArgumentError("a backfill's dryRun must be true or false.", 'dryRun');
  for (const fn of ['read', 'key', 'process'] as const) {
    if (typeof spec?.[fn] !== 'function') throw new InvalidArgumentError(`Durable.backfill() needs ${fn}() in its spec.`, fn);
  }
  return { batchSize, rowsPerSecond, dryRun: i.dryRun === true };
}
