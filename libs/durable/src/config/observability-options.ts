/** Options of the engine's telemetry, lifecycle hooks and log level, with their defaults and checks. */

/** The `telemetry` engine option. */
export interface TelemetryOptions {
  /** Spans for run executions and steps, and the start's trace context stored with each run. Default true. */
  traces?: boolean;
  /** Counters, histograms and gauges on the global MeterProvider. Default true. */
  metrics?: boolean;
  /**
   * The gauges' figures (queue depth and lag, overdue schedules) come from one query per collection;
   * readers collecting more often than this share the last answer. Default 1 000 ms.
   */
  figuresMinIntervalMs?: number;
}

/** The `hooks` engine option: how lifecycle hooks (onEvent, @OnDurableEvent) are read and delivered. */
export interface HooksOptions {
  /** How often each consumer looks for new events. Default 1 000 ms. */
  pollIntervalMs?: number;
  /** Events read per statement. Default 100. */
  batchSize?: number;
  /**
   * Events younger than this are left for the next look: an event written by a transaction that
   * commits later than one with a higher id is not skipped. Default 1 000 ms.
   */
  settleMs?: number;
  /** One instance delivers to a consumer at a time, under a lease this long (renewed each look). Default 30 000 ms. */
  leaseMs?: number;
}

/** The library's log level: messages below it are dropped. */
export type DurableLogLevel = 'debug' | 'log' | 'warn' | 'error' | 'silent';
export const LOG_LEVELS: readonly DurableLogLevel[] = ['debug', 'log', 'warn', 'error', 'silent'];

export function resolveTelemetryOptions(o: TelemetryOptions | undefined): Required<TelemetryOptions> {
  return { traces: o?.traces ?? true, metrics: o?.metrics ?? true, figuresMinIntervalMs: o?.figuresMinIntervalMs ?? 1_000 };
}

export function resolveHooksOptions(o: HooksOptions | undefined): Required<HooksOptions> {
  return {
    pollIntervalMs: o?.pollIntervalMs ?? 1_000,
    batchSize: o?.batchSize ?? 100,
    settleMs: o?.settleMs ?? 1_000,
    leaseMs: o?.leaseMs ?? 30_000,
  };
}

/** Problems of an object option: not an object, or unknown keys. */
function objectProblems(name: string, o: unknown, keys: readonly string[]): string[] {
  if (o === undefined) return [];
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return [`${name} must be an object with some of: ${keys.join(', ')}`];
  return Object.keys(o)
    .filter((k) => !keys.includes(k))
    .map((k) => `${name}.${k} is not an option (${keys.join(', ')})`);
}

const intProblem = (name: string, v: unknown, min: number): string[] =>
  v === undefined || (typeof v === 'number' && Number.isInteger(v) && v >= min)
    ? []
    : [`${name} must be an integer of ${min} or more (got ${JSON.stringify(v)})`];

/** Every problem of the telemetry, hooks and logLevel options (config/options.ts reports them all at once). */
export function observabilityProblems(o: { telemetry?: unknown; hooks?: unknown; logLevel?: unknown }): string[] {
  const problems = objectProblems('telemetry', o.telemetry, ['traces', 'metrics', 'figuresMinIntervalMs']);
  const t = (o.telemetry ?? {}) as Record<string, unknown>;
  for (const k of ['traces', 'metrics'])
    if (t[k] !== undefined && typeof t[k] !== 'boolean') problems.push(`telemetry.${k} must be true or false`);
  problems.push(...intProblem('telemetry.figuresMinIntervalMs', t.figuresMinIntervalMs, 0));
  problems.push(...objectProblems('hooks', o.hooks, ['pollIntervalMs', 'batchSize', 'settleMs', 'leaseMs']));
  const h = (o.hooks ?? {}) as Record<string, unknown>;
  problems.push(...intProblem('hooks.pollIntervalMs', h.pollIntervalMs, 10), ...intProblem('hooks.batchSize', h.batchSize, 1));
  problems.push(...intProblem('hooks.settleMs', h.settleMs, 0), ...intProblem('hooks.leaseMs', h.leaseMs, 100));
  if (o.logLevel !== undefined && !LOG_LEVELS.includes(o.logLevel as DurableLogLevel)) {
    problems.push(`logLevel must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(o.logLevel)})`);
  }
  return problems;
}

/** The logger with messages below `level` dropped. */
export function leveledLogger<L extends { log(m: string): void; warn(m: string): void; error(m: string): void; debug?(m: string): void }>(
  logger: L,
  level: DurableLogLevel,
): L {
  const rank = LOG_LEVELS.indexOf(level);
  if (rank <= 0) return logger;
  const off = () => {};
  return {
    ...logger,
    debug: off,
    log: rank <= 1 ? (m: string) => logger.log(m) : off,
    warn: rank <= 2 ? (m: string) => logger.warn(m) : off,
    error: rank <= 3 ? (m: string) => logger.error(m) : off,
  };
}
