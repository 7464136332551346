import { randomUUID } from 'node:crypto';
import { InvalidArgumentError } from '../errors/index.js';
import { CENTURY_MS, MAX_ID_LENGTH, MAX_PRIORITY, MAX_TAG_LENGTH, MAX_TAGS } from '../config/limits.js';
import { errorText } from '../errors/error-text.js';
import type { NewRun } from '../store/rows.js';
import type { PrismaLike } from '../store/sql-client.js';
import { encode } from '../codec/codec.js';
import type { ResolvedEngineOptions } from '../config/options.js';
import type { WorkflowRegistry } from '../definitions/registry.js';
import type { WorkflowDefinition } from '../definitions/definitions.js';
import { keyedStart } from './keyed-start.js';

/** Options of start(). */
export interface StartOptions {
  /** A Prisma interactive-transaction client: the run exists if and only if that transaction commits. */
  tx?: PrismaLike;
  /** Idempotency key: starting an existing id returns the existing run. Default: a random UUID. */
  id?: string;
  /** Overrides the workflow's queue. */
  queue?: string;
  /** Not before this time. */
  runAt?: Date;
  /** Not before this many ms from now. */
  delayMs?: number;
  /** Overrides the workflow's priority (lower runs first). */
  priority?: number;
  /** Overrides the workflow's timeoutMs (deadline from now); null = no deadline. */
  timeoutMs?: number | null;
  /**
   * Flow control: the run's concurrency key (overrides the workflow's `concurrencyKey(input)`; null =
   * none). At most the queue's keyConcurrency runs of one key execute at once across all instances.
   */
  concurrencyKey?: string | null;
  /**
   * Labels to find the run by (admin API and CLI filter `tag`, dashboard search): up to 20 distinct
   * strings of 1–100 characters without NUL, e.g. `['customer:acme', 'batch:2026-12']`. Stored in
   * durable_runs.tags (indexed). A child run (Durable.startChild) carries its parent's tags unless
   * it is started with its own.
   */
  tags?: readonly string[];
  /**
   * Singleton: at most one active (PENDING, RUNNING or WAITING) run of this workflow has this key,
   * across all instances. A start whose key an active run holds creates nothing and returns that run
   * (`handle.outcome === 'deduplicated'`); once it has ended, the next start creates a new run.
   */
  dedupeKey?: string;
  /**
   * Debounce: starts of this workflow with the same `debounce.key` collapse into one run that starts
   * `periodMs` after the last of them (at the latest `maxDelayMs` after the first). Later starts return
   * that run (`handle.outcome === 'debounced'`).
   */
  debounce?: DebounceOptions;
}

/** The start option `debounce`. */
export interface DebounceOptions {
  /** Starts with the same key (per workflow) collapse into one run; a non-empty string of at most 256 characters. */
  key: string;
  /** The run starts this long after the latest start with its key (1 ms … 1 day). */
  periodMs: number;
  /** …but never later than this long after the first start (≥ periodMs; default: no maximum — a steady stream of starts would postpone it forever). */
  maxDelayMs?: number;
  /** Which start's input the run gets: 'last' (default) or 'first'. */
  input?: 'first' | 'last';
}

/** How a start ended: a new run, an existing one by id, the active run of its dedupe key, or the pending run of its debounce key. */
export type StartOutcome = 'started' | 'existing' | 'deduplicated' | 'debounced';

/**
 * Validates a start request and builds the row to insert: the workflow must be registered, ids,
 * numbers and dates in range, the input storable (lossless JSON within maxPayloadBytes).
 */
export function buildNewRun(
  registry: WorkflowRegistry,
  options: ResolvedEngineOptions,
  workflowName: string,
  input: unknown,
  opts: StartOptions,
): NewRun {
  if (typeof workflowName !== 'string') throw new InvalidArgumentError('The workflow name must be a string.');
  const def = registry.get(workflowName);
  const id = opts.id ?? randomUUID();
  if (typeof id !== 'string' || !id.length || id.length > MAX_ID_LENGTH) {
    throw new InvalidArgumentError(
      `Run id must be a non-empty string of at most ${MAX_ID_LENGTH} characters (got ${JSON.stringify(id)?.slice(0, 80)}).`,
    );
  }
  const timeoutMs = opts.timeoutMs === undefined ? (def.options.timeoutMs ?? null) : opts.timeoutMs;
  // Beyond a century the database cannot store some of the times (or they make no sense).
  checkNumber('timeoutMs', timeoutMs, 1, CENTURY_MS);
  checkNumber('delayMs', opts.delayMs ?? null, 0, CENTURY_MS);
  const priority = opts.priority ?? def.options.priority ?? 0;
  if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < -MAX_PRIORITY || priority > MAX_PRIORITY) {
    throw new InvalidArgumentError(
      `priority must be an integer between -${MAX_PRIORITY} and ${MAX_PRIORITY} (lower runs first; got ${JSON.stringify(priority)}).`,
    );
  }
  if (opts.runAt !== undefined && !(opts.runAt instanceof Date && Math.abs(opts.runAt.getTime() - Date.now()) <= CENTURY_MS)) {
    throw new InvalidArgumentError(`runAt must be a valid Date within a century of now (got ${String(opts.runAt)}).`);
  }
  if (opts.queue !== undefined && (typeof opts.queue !== 'string' || !opts.queue)) {
    throw new InvalidArgumentError('queue must be a non-empty string.');
  }
  return {
    id,
    concurrencyKey: concurrencyKeyOf(def, input, opts),
    workflowName: def.name,
    queue: opts.queue ?? def.queue,
    input: encode(input, { where: `input of workflow "${def.name}"`, maxBytes: options.maxPayloadBytes }),
    priority,
    runAt: opts.runAt ?? null,
    delayMs: opts.delayMs ?? null,
    timeoutMs,
    parentId: null,
    appVersion: options.appVersion,
    tags: checkTags(opts.tags),
    ...keyedStart(opts),
  };
}
/** The start option, else the workflow's concurrencyKey(input); a non-empty string of at most MAX_ID_LENGTH, or null. */
function concurrencyKeyOf(def: WorkflowDefinition, input: unknown, opts: StartOptions): string | null {
  let key: unknown = opts.concurrencyKey;
  let from = 'the start option concurrencyKey';
  if (key === undefined && def.options.concurrencyKey) {
    from = `concurrencyKey(input) of workflow "${def.name}"`;
    try {
      key = def.options.concurrencyKey(input);
    } catch (err) {
      throw new InvalidArgumentError(`${from} threw: ${errorText(err)}. It must return a string (or null for no key).`, 'concurrencyKey');
    }
  }
  if (key === undefined || key === null) return null;
  if (typeof key !== 'string' || !key || key.length > MAX_ID_LENGTH) {
    throw new InvalidArgumentError(
      `${from} must be a non-empty string of at most ${MAX_ID_LENGTH} characters, or null for no key (got ${JSON.stringify(key)?.slice(0, 80) ?? String(key)}).`,
      'concurrencyKey',
    );
  }
  return key;
}

/**

/** The start option `tags`: at most MAX_TAGS distinct non-empty strings without NUL, each at most MAX_TAG_LENGTH long. */
export function checkTags(tags: unknown): string[] {
  if (tags === undefined || tags === null) return [];
  const bad = (why: string) =>
    new InvalidArgumentError(
      `tags ${why}: pass an array of at most ${MAX_TAGS} strings of 1 to ${MAX_TAG_LENGTH} characters, e.g. { tags: ['customer:acme'] } (got ${JSON.stringify(tags)?.slice(0, 80)}).`,
      'tags',
    );
  if (!Array.isArray(tags)) throw bad('must be an array');
  if (tags.length > MAX_TAGS) throw bad(`has ${tags.length} entries`);
  for (const t of tags) {
    if (typeof t !== 'string' || !t.length || t.length > MAX_TAG_LENGTH) throw bad('has an entry that is not a string of the right length');
    if (t.includes('\u0000')) throw bad('has an entry with a NUL character');
  }
  return [...new Set(tags as string[])];
}
function checkNumber(name: string, v: number | null, min: number, max = Number.MAX_SAFE_INTEGER): void {
  if (v === null) return;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw new InvalidArgumentError(`${name} must be a number between ${min} and ${max} (got ${JSON.stringify(v)}).`);
  }
}
