import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { InvalidOptionsError } from '../errors/index.js';
import type { RetryPolicy } from './retry-policy.js';
import { contextOptionProblems, type DurableContextOptions } from './context-options.js';
import { resolveCallbackOptions, type CallbackOptions, type ResolvedCallbackOptions } from './callback-options.js';
import { isSignalDefinition, type SignalDefinition } from './signal-types.js';
import { queueProblems, retryProblems } from './option-checks.js';
import {
  leveledLogger,
  observabilityProblems,
  resolveHooksOptions,
  resolveTelemetryOptions,
  type DurableLogLevel,
  type HooksOptions,
  type TelemetryOptions,
} from './observability-options.js';

/** What the engine logs through; Nest's Logger fits, so does console. */
export interface DurableLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  debug?(message: string): void;
}

export interface QueueOptions {
  /** Runs of this queue executed at once by one process. Default: the engine's `concurrency`. */
  concurrency?: number;
  /**
   * Flow control, across all instances: at most this many runs of the queue execute at once.
   * Synced to durable_queue_limits at boot unless a limit was set at runtime (setQueueLimits).
   */
  globalConcurrency?: number | null;
  /**
   * Flow control, across all instances: at most this many runs of one concurrency key (start option
   * `concurrencyKey`, or the workflow's `concurrencyKey(input)`) execute at once. Synced like globalConcurrency.
   */
  keyConcurrency?: number | null;
  /**
   * Flow control, across all instances: at most `limit` runs of the queue start in any `periodMs`
   * (a sliding window: never more, even across a window's edge). Every claim counts (a first start, a
   * resume after a durable wait or a crash). Synced like globalConcurrency.
   */
  rateLimit?: RateLimit | null;
  /** Like rateLimit, per concurrency key: at most `limit` runs of one key start in any `periodMs`. */
  keyRateLimit?: RateLimit | null;
}

/** A rate limit: at most `limit` starts in any window of `periodMs`. */
export interface RateLimit {
  /** 1 … 10,000. */
  limit: number;
  /** 1 ms … 1 day. */
  periodMs: number;
}

/** Engine settings. Every field has a default; see resolveEngineOptions. */
export interface EngineOptions {
  /** Unique per process; shows as lease_owner. Default: `${hostname}:${pid}:${random}`. */
  workerId?: string;
  /** false: this process only starts and reads runs, never executes them. Default true. */
  worker?: boolean;
  /**
   * Runs executing code at once per queue, unless `queues` says otherwise (a run whose code is done
   * no longer counts while its end is written). Default 10.
   */
  concurrency?: number;
  /** Per-queue settings, e.g. `{ emails: { concurrency: 2 } }`. */
  queues?: Record<string, QueueOptions>;
  /** How long a claim is valid without a heartbeat. Default 30 000 ms. */
  leaseMs?: number;
  /** How often held leases are extended (one UPDATE per process). Default leaseMs / 3. */
  heartbeatMs?: number;
  /** Polling fallback when no wake-up arrives (± 20 % jitter). Default 1 000 ms. */
  pollIntervalMs?: number;
  /** How often the sweeper runs (expired leases, deadlines, retention). Default 5 000 ms. */
  sweepIntervalMs?: number;
  /** Rows per sweeper statement. Default 500. */
  sweepBatchSize?: number;
  /** On shutdown, how long in-flight runs may finish before their leases are released. Default 10 000 ms. */
  shutdownGraceMs?: number;
  /** Finished runs older than this are deleted by the sweeper; null keeps them forever. Default 14 days. */
  retentionMs?: number | null;
  /** Largest serialized input/output/step result, in bytes. Default 1 MiB. */
  maxPayloadBytes?: number;
  /**
   * The version of this build (e.g. a release tag or git sha), recorded on every run it starts
   * (app_version): the admin API and dashboard show which versions have runs in flight, and
   * `runVersions` can keep runs on the build that started them.
   */
  appVersion?: string | null;
  /**
   * Which runs this worker claims, by the app version that started them: `'any'` (default: every
   * run, whatever its version); `'own'` (only runs of this `appVersion`); or a list of versions
   * whose runs this build replays correctly (`appVersion` is always included). Runs recorded
   * without a version are claimed by every worker. For rolling deploys of workflow changes that are
   * not replay-safe: old and new builds run side by side, each finishing its own runs. Needs `appVersion`.
   */
  runVersions?: 'any' | 'own' | readonly string[];
  /** Default retry policy of steps (each @Step may override). */
  stepRetries?: RetryPolicy;
  /** A run claimed more often than this without finishing is failed (it keeps killing its worker). Default 50. */
  maxRecoveryAttempts?: number;
  /**
   * Durable waits (Durable.sleep, a recv timeout) this short or shorter stay in memory: the run
   * keeps its slot and lease (the wait is still recorded, so a replay waits only the remainder).
   * Longer waits suspend the run (WAITING, no slot, no connection). Default 5 000 ms.
   */
  inMemoryWaitMaxMs?: number;
  /**
   * A run that starts waiting for a message or a child's result stays in memory (holding its slot)
   * this long before it suspends: an answer within it costs no suspend/replay round trip.
   * Default 500 ms; 0 suspends at once.
   */
  suspendGraceMs?: number;
  /**
   * A run suspended on a wait without a timer (a message without timeout, a child's result) is
   * re-checked at least this often, as a safety net; messages and finished children wake it at
   * once anyway. Default 15 minutes.
   */
  waitRecheckMs?: number;
  /** cancel() of a run also cancels its unfinished child runs (recursively); resume() resumes them. Default true. */
  cancelChildren?: boolean;
  /**
   * Write the run history (durable_run_events: created, claimed, suspended, woken, completed, …).
   * It costs no extra statement on the normal path (rows are written by the statements that change
   * the run), about 3 rows per run. Default true.
   */
  history?: boolean;
  /**
   * Run on a MySQL server. nestjs-durable is tested on PostgreSQL and MariaDB 10.6+; its MySQL-family
   * SQL is written to run on MySQL 8.0+ too, but nothing tests it there, so a MySQL server is refused
   * at start unless this is true. Default false.
   */
  allowUntestedMysql?: boolean;
  /**
   * Run the scheduler on this instance: it syncs the schedules declared on workflows at start and
   * starts the runs of due slots (safe on every instance at once: each slot starts one run).
   * Default: the value of `worker`; `schedules: false` keeps an instance out of it.
   */
  schedules?: boolean;
  /** Runs the scheduler starts per statement at most. Default 500. */
  scheduleBatchSize?: number;
  /**
   * A slot the scheduler reaches more than this late was missed (the instances were down): the
   * schedule's catchUp policy decides whether it runs. Later but within it, a slot runs normally.
   * Default 5 000 ms.
   */
  scheduleMisfireMs?: number;
  logger?: DurableLogger;
  /** Messages of the library below this level are dropped: debug, log, warn, error or silent. Default 'log'. */
  logLevel?: DurableLogLevel;
  /**
   * OpenTelemetry traces and metrics (`@opentelemetry/api`, an optional peer dependency; nothing
   * happens without it, and next to nothing without an SDK registered). Both on by default.
   */
  telemetry?: TelemetryOptions;
  /** Lifecycle hooks (engine.onEvent, @OnDurableEvent): how they are read from the run history and delivered. */
  hooks?: HooksOptions;
  /**
   * The app's context (tenant, user…) a run keeps from its start() and gets back in every execution:
   * captured, restored around the workflow and its steps, read with Durable.context(), and applied as
   * SET LOCAL settings in transactional steps (PostgreSQL, for row-level security). See DurableContextOptions.
   */
  context?: DurableContextOptions<any>;
  /** Callback URLs (Durable.callback): the secret they are signed with, and where they point. Without it Durable.callback() throws. */
  callbacks?: CallbackOptions;
  /** The signals of the app (defineSignal): payload checks for callbacks and signals sent through the engine. */
  signals?: SignalDefinition<any>[];
}

export type ResolvedEngineOptions = Required<
  Omit<EngineOptions, 'queues' | 'retentionMs' | 'appVersion' | 'runVersions' | 'telemetry' | 'hooks' | 'context' | 'callbacks' | 'signals'>
> & {
  /** The callbacks option; null without one. */
  callbacks: ResolvedCallbackOptions | null;
  /** The app's signals by name. */
  signals: ReadonlyMap<string, SignalDefinition<any>>;
  /** The context option; null without one. */
  context: DurableContextOptions | null;
  telemetry: Required<TelemetryOptions>;
  hooks: Required<HooksOptions>;
  queues: Record<string, QueueOptions>;
  retentionMs: number | null;
  appVersion: string | null;
  /** The app versions whose runs this worker claims (runs without a version too); null: every run. */
  runVersions: string[] | null;
};

const DAY = 24 * 3600_000;

export const silentLogger: DurableLogger = { log() {}, warn() {}, error() {}, debug() {} };

/** Applies defaults and rejects impossible values with one error listing every problem. */
export function resolveEngineOptions(o: EngineOptions = {}): ResolvedEngineOptions {
  const leaseMs = o.leaseMs ?? 30_000;
  const r: ResolvedEngineOptions = {
    workerId: o.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
    worker: o.worker ?? true,
    concurrency: o.concurrency ?? 10,
    queues: o.queues ?? {},
    leaseMs,
    heartbeatMs: o.heartbeatMs ?? Math.round(leaseMs / 3),
    pollIntervalMs: o.pollIntervalMs ?? 1_000,
    sweepIntervalMs: o.sweepIntervalMs ?? 5_000,
    sweepBatchSize: o.sweepBatchSize ?? 500,
    shutdownGraceMs: o.shutdownGraceMs ?? 10_000,
    retentionMs: o.retentionMs === undefined ? 14 * DAY : o.retentionMs,
    maxPayloadBytes: o.maxPayloadBytes ?? 1024 * 1024,
    appVersion: o.appVersion ?? null,
    runVersions: null,
    stepRetries: o.stepRetries ?? {},
    maxRecoveryAttempts: o.maxRecoveryAttempts ?? 50,
    inMemoryWaitMaxMs: o.inMemoryWaitMaxMs ?? 5_000,
    suspendGraceMs: o.suspendGraceMs ?? 500,
    waitRecheckMs: o.waitRecheckMs ?? 15 * 60_000,
    cancelChildren: o.cancelChildren ?? true,
    history: o.history ?? true,
    allowUntestedMysql: o.allowUntestedMysql ?? false,
    schedules: o.schedules ?? o.worker ?? true,
    scheduleBatchSize: o.scheduleBatchSize ?? 500,
    scheduleMisfireMs: o.scheduleMisfireMs ?? 5_000,
    logLevel: o.logLevel ?? 'log',
    logger: o.logger ?? silentLogger,
    telemetry: resolveTelemetryOptions(o.telemetry),
    hooks: resolveHooksOptions(o.hooks),
    context: o.context ?? null,
    callbacks: null,
    signals: new Map(),
  };
  const problems: string[] = [];
  const int = (name: string, v: unknown, min: number, max = Number.MAX_SAFE_INTEGER) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      problems.push(`${name} must be an integer between ${min} and ${max} (got ${JSON.stringify(v)})`);
    }
  };
  int('concurrency', r.concurrency, 1, 10_000);
  int('leaseMs', r.leaseMs, 100);
  int('heartbeatMs', r.heartbeatMs, 10);
  int('pollIntervalMs', r.pollIntervalMs, 5);
  int('sweepIntervalMs', r.sweepIntervalMs, 10);
  int('sweepBatchSize', r.sweepBatchSize, 1, 100_000);
  int('shutdownGraceMs', r.shutdownGraceMs, 0);
  int('maxPayloadBytes', r.maxPayloadBytes, 1);
  int('maxRecoveryAttempts', r.maxRecoveryAttempts, 1);
  int('inMemoryWaitMaxMs', r.inMemoryWaitMaxMs, 0);
  int('suspendGraceMs', r.suspendGraceMs, 0);
  int('waitRecheckMs', r.waitRecheckMs, 100);
  problems.push(...retryProblems('stepRetries', r.stepRetries));
  r.runVersions = resolveRunVersions(o, problems);
  if (typeof r.cancelChildren !== 'boolean') problems.push('cancelChildren must be true or false');
  if (typeof r.history !== 'boolean') problems.push('history must be true or false');
  if (typeof r.schedules !== 'boolean') problems.push('schedules must be true or false');
  int('scheduleBatchSize', r.scheduleBatchSize, 1, 100_000);
  int('scheduleMisfireMs', r.scheduleMisfireMs, 0, 24 * 3600_000);
  if (r.retentionMs !== null) int('retentionMs', r.retentionMs, 1);
  if (typeof r.workerId !== 'string' || !r.workerId) problems.push('workerId must be a non-empty string');
  if (typeof r.heartbeatMs === 'number' && typeof r.leaseMs === 'number' && r.heartbeatMs >= r.leaseMs) {
    problems.push(`heartbeatMs (${r.heartbeatMs}) must be below leaseMs (${r.leaseMs}); a third of it is a good value`);
  }
  for (const [name, q] of Object.entries(r.queues)) problems.push(...queueProblems(`queues.${name}`, q));
  problems.push(...observabilityProblems(o));
  problems.push(...contextOptionProblems(o.context));
  r.callbacks = resolveCallbackOptions(o.callbacks, problems);
  r.signals = resolveSignals(o.signals, problems);
  if (problems.length) throw new InvalidOptionsError(`Invalid nestjs-durable options: ${problems.join('; ')}.`);
  // Without logLevel the logger gets every message (Nest's Logger applies the app's own levels).
  if (o.logLevel !== undefined) r.logger = leveledLogger(r.logger, r.logLevel);
  return r;
}

/** runVersions → the versions a claim accepts (null: any); problems listed in `problems`. */
function resolveRunVersions(o: EngineOptions, problems: string[]): string[] | null {
  const v = o.runVersions ?? 'any';
  if (v === 'any') return null;
  const app = o.appVersion;
  if (v !== 'own' && !(Array.isArray(v) && v.every((x) => typeof x === 'string' && x))) {
    problems.push(`runVersions must be 'any', 'own' or a list of app versions (non-empty strings), got ${JSON.stringify(v)}`);
    return null;
  }
  if (typeof app !== 'string' || !app) {
    problems.push(
      `runVersions ${JSON.stringify(v)} needs appVersion (the version of this build, e.g. process.env.APP_VERSION), got ${JSON.stringify(app)}`,
    );
    return null;
  }
  return [...new Set([app, ...(v === 'own' ? [] : v)])];
}

/** The signals option by name; a list with something else than defineSignal() results, or one name twice, is a problem. */
function resolveSignals(list: unknown, problems: string[]): Map<string, SignalDefinition<any>> {
  const byName = new Map<string, SignalDefinition<any>>();
  if (list === undefined) return byName;
  if (!Array.isArray(list)) {
    problems.push('signals must be a list of defineSignal() results');
    return byName;
  }
  for (const d of list as SignalDefinition[]) {
    if (!isSignalDefinition(d)) problems.push('signals must hold defineSignal() results only');
    else if (byName.has(d.name) && byName.get(d.name) !== d) problems.push(`signals: two signals are named "${d.name}"`);
    else byName.set(d.name, d);
  }
  return byName;
}
