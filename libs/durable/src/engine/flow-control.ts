import { checkIdentifierCharacters, showIdentifier } from '../config/identifiers.js';
import { MAX_NAME_LENGTH } from '../config/limits.js';
import { FLOW_LIMIT_KEYS, flowLimitProblems } from '../config/option-checks.js';
import type { RateLimit } from '../config/options.js';
import { InvalidArgumentError } from '../errors/index.js';
import {
  deleteQueueLimits,
  keyUsage,
  listQueueLimits,
  runBlockers,
  setQueueLimits,
  syncDeclaredLimits,
  type KeyUsage,
  type QueueLimitsView,
  type QueueLimitsUsage,
  type RunBlockersRow,
  type RateLimitView,
} from '../store/flow-limits.js';
import type { Store } from '../store/store.js';
import { debouncedRuns, singletonRuns, type DebouncedRun, type SingletonRun } from '../store/keyed-runs.js';
import type { EngineContext } from './engine-context.js';

/** Cluster-wide limits of a queue (null or absent = no such limit). */
export interface QueueLimits {
  /** At most this many runs of the queue execute at once across all instances. */
  globalConcurrency?: number | null;
  /** At most this many runs of one concurrency key execute at once across all instances. */
  keyConcurrency?: number | null;
  /** At most `limit` runs of the queue start in any `periodMs` (sliding window), across all instances. */
  rateLimit?: RateLimit | null;
  /** At most `limit` runs of one concurrency key start in any `periodMs`. */
  keyRateLimit?: RateLimit | null;
}

export type { QueueLimitsView, QueueLimitsUsage, KeyUsage, RateLimitView, DebouncedRun, SingletonRun };

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
  /** When the queue's rate window has room again, if it is full now (else null). */
  rateLimitedUntil: string | null;
  /** When the run's concurrency key's rate window has room again, if it is full now (else null). */
  keyRateLimitedUntil: string | null;
  /** Debounce: the key of a run that has not started (later starts with it push its start, up to debounceUntil). */
  debounceKey: string | null;
  debounceUntil: string | null;
}

const API = 'setQueueLimits';

function checkQueue(api: string, queue: unknown): string {
  if (typeof queue !== 'string' || !queue || queue.length > MAX_NAME_LENGTH) {
    throw new InvalidArgumentError(
      `${api}: the queue must be a non-empty string of at most ${MAX_NAME_LENGTH} characters (got ${showIdentifier(queue)}).`,
      'queue',
    );
  }
  return checkIdentifierCharacters(api, 'queue', queue);
}

/** The limits of a QueueLimits (or queue options), absent ones null. */
function limitValues(l: QueueLimits) {
  const rate = (r: RateLimit | null | undefined) => (r ? { limit: r.limit, periodMs: r.periodMs } : null);
  return {
    globalConcurrency: l.globalConcurrency ?? null,
    keyConcurrency: l.keyConcurrency ?? null,
    rateLimit: rate(l.rateLimit),
    keyRateLimit: rate(l.keyRateLimit),
  };
}

/** Sets a queue's limits at runtime (kept across restarts until reset); every instance follows at once. */
export async function setLimits(e: EngineContext, queue: string, limits: QueueLimits): Promise<QueueLimitsView> {
  checkQueue(API, queue);
  if (!limits || typeof limits !== 'object' || Array.isArray(limits)) {
    throw new InvalidArgumentError(`${API}: the limits must be an object { ${FLOW_LIMIT_KEYS.map((k) => `${k}?`).join(', ')} }.`, 'limits');
  }
  const unknown = Object.keys(limits).filter((k) => !FLOW_LIMIT_KEYS.includes(k));
  const problems = [
    ...unknown.map((k) => `"${k}" is not a limit (a queue has ${FLOW_LIMIT_KEYS.join(', ')})`),
    ...flowLimitProblems('limits', limits as Record<string, unknown>),
  ];
  if (problems.length) throw new InvalidArgumentError(`${API}(${JSON.stringify(queue)}): ${problems.join('; ')}.`, 'limits');
  const view = await setQueueLimits(e.store, queue, limitValues(limits));
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
    .map(([queue, q]) => ({ queue, ...limitValues(q) }))
    .filter((l) => l.globalConcurrency !== null || l.keyConcurrency !== null || l.rateLimit || l.keyRateLimit);
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

/** Why run `runId` has not started: not due yet (debounced), its queue's limits, its concurrency key's limits; null if there is no such run. */
export async function whyNotStarted(store: Store, runId: string): Promise<StartBlockers | null> {
  const b = await runBlockers(store, runId);
  if (!b) return null;
  const waiting = b.status === 'PENDING' || b.status === 'WAITING';
  const reasons = waiting ? blockerReasons(b) : [];
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
    rateLimitedUntil: b.rateLimit ? (b.rateFreeAt?.toISOString() ?? null) : null,
    keyRateLimitedUntil: b.keyRateLimit && b.concurrencyKey !== null ? (b.keyRateFreeAt?.toISOString() ?? null) : null,
    debounceKey: b.debounceKey,
    debounceUntil: b.debounceKey ? (b.debounceUntil?.toISOString() ?? null) : null,
  };
}

const per = (r: { limit: number; periodMs: number }) =>
  `${r.limit} starts per ${r.periodMs % 1000 ? `${r.periodMs} ms` : `${r.periodMs / 1000} s`}`;

/** The reasons of a PENDING or WAITING run, in words. */
function blockerReasons(b: RunBlockersRow): string[] {
  const reasons: string[] = [];
  if (!b.due && b.availableAt) {
    const s = Math.ceil((b.availableAt.getTime() - b.dbNow.getTime()) / 1000);
    const until = `until ${b.availableAt.toISOString()} (in ${s} s)`;
    if (b.debounceKey) {
      const max = b.debounceUntil ? `, at the latest ${b.debounceUntil.toISOString()}` : '';
      reasons.push(`debounced (key ${b.debounceKey}): starts ${until} unless another start with the key pushes it${max}`);
    } else reasons.push(`${b.status === 'WAITING' ? 'waiting (sleep, message or child)' : 'not due'} ${until}`);
  }
  if (b.globalConcurrency !== null && b.queueRunning >= b.globalConcurrency) {
    reasons.push(`queue ${b.queue}: ${b.queueRunning}/${b.globalConcurrency} running across all instances`);
  }
  if (b.concurrencyKey !== null && b.keyConcurrency !== null && b.keyRunning >= b.keyConcurrency) {
    reasons.push(`concurrency key ${b.concurrencyKey}: ${b.keyRunning}/${b.keyConcurrency}`);
  }
  if (b.rateLimit && b.rateFreeAt) reasons.push(`rate limited until ${b.rateFreeAt.toISOString()} (queue ${b.queue}: ${per(b.rateLimit)})`);
  if (b.keyRateLimit && b.concurrencyKey !== null && b.keyRateFreeAt) {
    reasons.push(`rate limited until ${b.keyRateFreeAt.toISOString()} (concurrency key ${b.concurrencyKey}: ${per(b.keyRateLimit)})`);
  }
  return reasons;
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

  /** Runs waiting out a debounce (soonest first) and active runs holding a dedupe key (newest first), at most `limit` (default 50) of each. */
  async keyedRuns(opts: { limit?: number } = {}): Promise<{ debounced: DebouncedRun[]; singletons: SingletonRun[] }> {
    const limit = opts.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      throw new InvalidArgumentError(`keyedRuns: limit must be an integer between 1 and 1000 (got ${JSON.stringify(limit)}).`, 'limit');
    }
    const { store } = this.context();
    const [debounced, singletons] = await Promise.all([debouncedRuns(store, limit), singletonRuns(store, limit)]);
    return { debounced, singletons };
  }

  /** Why a run has not started ("concurrency key tenant-a: 5/5", "not due until …"). */
  whyNotStarted(runId: string): Promise<StartBlockers | null> {
    return whyNotStarted(this.context().store, runId);
  }
}
