import { MAX_NAME_LENGTH } from '../config/limits.js';
import { flowLimitProblems } from '../config/option-checks.js';
import { InvalidArgumentError } from '../errors/index.js';
import {
  deleteQueueLimits,
  keyUsage,
  listQueueLimits,
  runBlockers,
  setQueueLimits,
  syncDeclaredLimits,
  type QueueLimitsView,
  type QueueLimitsUsage,
} from '../store/flow-limits.js';
import type { Store } from '../store/store.js';
import type { EngineContext } from './engine-context.js';

/** Cluster-wide limits of a queue (null or absent = no such limit). */
export interface QueueLimits {
  /** At most this many runs of the queue execute at once across all instances. */
  globalConcurrency?: number | null;
  /** At most this many runs of one concurrency key execute at once across all instances. */
  keyConcurrency?: number | null;
}

export type { QueueLimitsView, QueueLimitsUsage };

/** Runs of one concurrency key: executing now, and due but waiting. */
export interface KeyUsage {
  key: string;
  running: number;
  due: number;
}

/** Why a run has not started (or is not executing now): `reasons` in words, the figures behind them. */
export interface StartBlockers {
  runId: string;
  status: string;
  queue: string;
  concurrencyKey: string | null;
  /** Empty when nothing holds it back (it has started, or it is claimable now). */
  reasons: string[];
  /** true when the run is due and no limit holds it back: the next worker of its queue with a free slot takes it. */
  claimable: boolean;
  availableAt: string | null;
  queueRunning: number;
  globalConcurrency: number | null;
  keyRunning: number;
  keyConcurrency: number | null;
}

const API = 'setQueueLimits';

function checkQueue(api: string, queue: unknown): string {
  if (typeof queue !== 'string' || !queue || queue.length > MAX_NAME_LENGTH) {
    throw new InvalidArgumentError(
      `${api}: the queue must be a non-empty string of at most ${MAX_NAME_LENGTH} characters (got ${JSON.stringify(queue)?.slice(0, 80)}).`,
      'queue',
    );
  }
  return queue;
}

/** Sets a queue's limits at runtime (kept across restarts until reset); every instance follows at once. */
export async function setLimits(e: EngineContext, queue: string, limits: QueueLimits): Promise<QueueLimitsView> {
  checkQueue(API, queue);
  if (!limits || typeof limits !== 'object' || Array.isArray(limits)) {
    throw new InvalidArgumentError(`${API}: the limits must be an object { globalConcurrency?, keyConcurrency? }.`, 'limits');
  }
  const unknown = Object.keys(limits).filter((k) => k !== 'globalConcurrency' && k !== 'keyConcurrency');
  const problems = [
    ...unknown.map((k) => `"${k}" is not a limit (a queue has globalConcurrency and keyConcurrency)`),
    ...flowLimitProblems('limits', limits as Record<string, unknown>),
  ];
  if (problems.length) throw new InvalidArgumentError(`${API}(${JSON.stringify(queue)}): ${problems.join('; ')}.`, 'limits');
  const view = await setQueueLimits(e.store, queue, limits.globalConcurrency ?? null, limits.keyConcurrency ?? null);
  await e.worker.flow.refresh();
  return view;
}

/** Drops the runtime limits of a queue: back to what this process's options declare (or none). */
export async function resetLimits(e: EngineContext, queue: string): Promise<QueueLimitsView | null> {
  checkQueue('resetQueueLimits', queue);
  await deleteQueueLimits(e.store, queue);
  await syncLimits(e);
  await e.worker.flow.refresh();
  return (await listQueueLimits(e.store)).find((l) => l.queue === queue) ?? null;
}

/** Boot: the limits declared in the `queues` option become rows (a runtime limit is kept). Returns the queues changed. */
export function syncLimits(e: EngineContext): Promise<string[]> {
  const queues = Object.entries(e.options.queues);
  const declared = queues
    .filter(([, q]) => q.globalConcurrency != null || q.keyConcurrency != null)
    .map(([queue, q]) => ({ queue, globalConcurrency: q.globalConcurrency ?? null, keyConcurrency: q.keyConcurrency ?? null }));
  if (!queues.length) return Promise.resolve([]);
  return syncDeclaredLimits(
    e.store,
    declared,
    queues.map(([name]) => name),
  );
}

export function listLimits(e: EngineContext): Promise<QueueLimitsUsage[]> {
  return listQueueLimits(e.store);
}

/** The busiest concurrency keys of a queue (most executing first), at most `limit` (default 50, at most 1000). */
export async function keysOf(e: EngineContext, queue: string, limit = 50): Promise<KeyUsage[]> {
  checkQueue('keyUsage', queue);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new InvalidArgumentError(`keyUsage: limit must be an integer between 1 and 1000 (got ${JSON.stringify(limit)}).`, 'limit');
  }
  return keyUsage(e.store, queue, limit);
}

/** Why run `runId` has not started: not due yet, its queue's limit, its concurrency key's limit; null if there is no such run. */
export async function whyNotStarted(store: Store, runId: string): Promise<StartBlockers | null> {
  const b = await runBlockers(store, runId);
  if (!b) return null;
  const reasons: string[] = [];
  const waiting = b.status === 'PENDING' || b.status === 'WAITING';
  if (waiting) {
    if (!b.due && b.availableAt) {
      const s = Math.ceil((b.availableAt.getTime() - b.dbNow.getTime()) / 1000);
      reasons.push(
        `${b.status === 'WAITING' ? 'waiting (sleep, message or child)' : 'not due'} until ${b.availableAt.toISOString()} (in ${s} s)`,
      );
    }
    if (b.globalConcurrency !== null && b.queueRunning >= b.globalConcurrency) {
      reasons.push(`queue ${b.queue}: ${b.queueRunning}/${b.globalConcurrency} running across all instances`);
    }
    if (b.concurrencyKey !== null && b.keyConcurrency !== null && b.keyRunning >= b.keyConcurrency) {
      reasons.push(`concurrency key ${b.concurrencyKey}: ${b.keyRunning}/${b.keyConcurrency}`);
    }
  }
  return {
    runId,
    status: b.status,
    queue: b.queue,
    concurrencyKey: b.concurrencyKey,
    reasons,
    claimable: waiting && reasons.length === 0,
    availableAt: b.availableAt?.toISOString() ?? null,
    queueRunning: b.queueRunning,
    globalConcurrency: b.globalConcurrency,
    keyRunning: b.keyRunning,
    keyConcurrency: b.keyConcurrency,
  };
}

/**
 * Flow control at runtime: `engine.flowControl` / `WorkflowClient.flowControl`. Limits are stored in
 * durable_queue_limits and enforced by the claim on every instance.
 */
export class FlowControlClient {
  constructor(private readonly context: () => EngineContext) {}

  /** Sets a queue's cluster-wide limits (null = no such limit); kept across restarts until reset(). */
  setQueueLimits(queue: string, limits: QueueLimits): Promise<QueueLimitsView> {
    return setLimits(this.context(), queue, limits);
  }

  /** Drops a runtime limit: the queue goes back to the limits its options declare (null: none). */
  resetQueueLimits(queue: string): Promise<QueueLimitsView | null> {
    return resetLimits(this.context(), queue);
  }

  /** Every queue with limits, with its executing and due runs. */
  queueLimits(): Promise<QueueLimitsUsage[]> {
    return listLimits(this.context());
  }

  /** The busiest concurrency keys of a queue: executing and due runs per key. */
  keyUsage(queue: string, opts: { limit?: number } = {}): Promise<KeyUsage[]> {
    return keysOf(this.context(), queue, opts.limit);
  }

  /** Why a run has not started ("concurrency key tenant-a: 5/5", "not due until …"). */
  whyNotStarted(runId: string): Promise<StartBlockers | null> {
    return whyNotStarted(this.context().store, runId);
  }
}
