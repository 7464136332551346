import type { PrismaLike } from '../store/sql-client.js';

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
   * The app's context to keep with the run (engine option `context`), instead of what its `capture`
   * returns: e.g. `{ tenantId: 'acme' }` from a script or a job that has no request. null: none.
   * Read back inside the run with Durable.context(); children inherit it.
   */
  context?: unknown;
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
