import { isSignalDefinition } from './signal-types.js';
import { InvalidOptionsError } from '../errors/index.js';
import { forbiddenCharacter } from './identifiers.js';
import { CENTURY_MS, DAY_MS, MAX_NAME_LENGTH, MAX_PRIORITY, MAX_STEP_TIMEOUT_MS } from './limits.js';

/**
 * Checks of the options given to @Step(), @Workflow() (or WorkflowRegistry.register) and the
 * module's stepRetries: a value out of range is an InvalidOptionsError at startup naming where
 * it was given, never a silent surprise at run time (retries: -1 running once, a NaN back-off
 * retrying at once, a fractional priority rejected by Postgres).
 */
const show = (v: unknown) => (typeof v === 'function' ? 'a function' : (JSON.stringify(v) ?? String(v)));
const isInt = (v: unknown, min: number, max: number) => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
const isNum = (v: unknown, min: number, max: number) => typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max;
const isName = (v: unknown) => typeof v === 'string' && v.length > 0 && v.length <= MAX_NAME_LENGTH && !forbiddenCharacter(v);

const POLICY_KEYS = ['maxAttempts', 'initialDelayMs', 'backoffFactor', 'maxDelayMs', 'retryIf'];
const STEP_KEYS = ['name', 'retries', 'transactional', 'transaction', 'timeoutMs', 'compensate', 'pivot'];
const ISOLATION_LEVELS = ['ReadUncommitted', 'ReadCommitted', 'RepeatableRead', 'Serializable'];

/** Problems of a retry setting: a number of retries, or a RetryPolicy. [] when it is fine. */
export function retryProblems(name: string, r: unknown): string[] {
  if (r === undefined) return [];
  if (typeof r === 'number')
    return isInt(r, 0, 1000) ? [] : [`${name} must be a whole number of retries between 0 and 1000, or a RetryPolicy (got ${show(r)})`];
  if (!r || typeof r !== 'object' || Array.isArray(r))
    return [`${name} must be a number of retries or a RetryPolicy object (got ${show(r)})`];
  const p = r as Record<string, unknown>;
  const out: string[] = [];
  for (const k of Object.keys(p)) {
    if (!POLICY_KEYS.includes(k)) out.push(`${name} has no option "${k}" (a RetryPolicy has ${POLICY_KEYS.join(', ')})`);
  }
  if (p.maxAttempts !== undefined && !isInt(p.maxAttempts, 1, 1001)) {
    out.push(`${name}.maxAttempts must be a whole number between 1 and 1001: attempts including the first (got ${show(p.maxAttempts)})`);
  }
  if (p.initialDelayMs !== undefined && !isNum(p.initialDelayMs, 0, DAY_MS))
    out.push(`${name}.initialDelayMs must be between 0 and ${DAY_MS} ms (got ${show(p.initialDelayMs)})`);
  if (p.maxDelayMs !== undefined && !isNum(p.maxDelayMs, 0, DAY_MS))
    out.push(`${name}.maxDelayMs must be between 0 and ${DAY_MS} ms (got ${show(p.maxDelayMs)})`);
  if (p.backoffFactor !== undefined && !isNum(p.backoffFactor, 1, 100))
    out.push(`${name}.backoffFactor must be a number between 1 and 100 (got ${show(p.backoffFactor)})`);
  if (p.retryIf !== undefined && typeof p.retryIf !== 'function')
    out.push(`${name}.retryIf must be a function (error) => boolean (got ${show(p.retryIf)})`);
  return out;
}

/**
 * @Step() options (`form: 'decorator'`) or Durable.step() options (`'inline'`: a compensation is a
 * function there, not a method name). Throws InvalidOptionsError listing every problem.
 */
export function checkStepOptions(where: string, o: unknown, form: 'decorator' | 'inline' = 'decorator'): void {
  if (o === undefined) return;
  if (!o || typeof o !== 'object') throw new InvalidOptionsError(`${where}: the options must be an object (got ${show(o)}).`);
  const problems = stepProblems(o as Record<string, unknown>, form, '');
  if (problems.length) throw new InvalidOptionsError(`${where}: ${problems.join('; ')}.`);
}

function stepProblems(s: Record<string, unknown>, form: 'decorator' | 'inline' | 'compensation', prefix: string): string[] {
  const problems: string[] = [];
  const keys = form === 'compensation' ? ['run', ...STEP_KEYS.filter((k) => !['name', 'compensate', 'pivot'].includes(k))] : STEP_KEYS;
  for (const k of Object.keys(s)) {
    if (!keys.includes(k))
      problems.push(`${prefix}${k} is not an option (${form === 'compensation' ? 'a compensation has' : 'a step has'} ${keys.join(', ')})`);
  }
  if (s.name !== undefined && !isName(s.name))
    problems.push(`name must be a non-empty string of at most ${MAX_NAME_LENGTH} characters (got ${show(s.name)})`);
  problems.push(...retryProblems(`${prefix}retries`, s.retries));
  if (s.transactional !== undefined && typeof s.transactional !== 'boolean')
    problems.push(`${prefix}transactional must be true or false (got ${show(s.transactional)})`);
  if (s.transaction !== undefined) {
    const t = s.transaction as Record<string, unknown> | null;
    if (!t || typeof t !== 'object')
      problems.push(`${prefix}transaction must be an object { timeout?, maxWait?, isolationLevel? } (got ${show(t)})`);
    else {
      if (t.timeout !== undefined && !isInt(t.timeout, 1, DAY_MS))
        problems.push(`${prefix}transaction.timeout must be a whole number of ms ≥ 1 (got ${show(t.timeout)})`);
      if (t.maxWait !== undefined && !isInt(t.maxWait, 1, DAY_MS))
        problems.push(`${prefix}transaction.maxWait must be a whole number of ms ≥ 1 (got ${show(t.maxWait)})`);
      if (t.isolationLevel !== undefined && !ISOLATION_LEVELS.includes(t.isolationLevel as string)) {
        problems.push(`${prefix}transaction.isolationLevel must be one of ${ISOLATION_LEVELS.join(', ')} (got ${show(t.isolationLevel)})`);
      }
      if (s.transactional !== true) problems.push(`${prefix}transaction options apply only to a step marked transactional: true`);
    }
  }
  if (s.timeoutMs !== undefined) {
    if (!isNum(s.timeoutMs, 1, MAX_STEP_TIMEOUT_MS))
      problems.push(`${prefix}timeoutMs must be a number of ms between 1 and ${MAX_STEP_TIMEOUT_MS} (got ${show(s.timeoutMs)})`);
    else if (s.transactional === true)
      problems.push(
        `${prefix}timeoutMs applies to plain steps: a transactional step is bounded by transaction.timeout (its Prisma transaction rolls back when it is up)`,
      );
  }
  if (form !== 'compensation') problems.push(...pivotProblems(s, prefix));
  if (form === 'compensation') {
    if (typeof s.run !== 'function') problems.push(`compensate.run must be a function (result) => … (got ${show(s.run)})`);
  } else if (s.compensate !== undefined) problems.push(...compensateProblems(s.compensate, form));
  return problems;
}

function compensateProblems(c: unknown, form: 'decorator' | 'inline'): string[] {
  if (form === 'decorator') {
    return typeof c === 'string' && isName(c)
      ? []
      : [
          `compensate must be the name of a method of the same class, called with the step's arguments and its result to undo it (got ${show(c)})`,
        ];
  }
  if (typeof c === 'function') return [];
  if (c && typeof c === 'object' && !Array.isArray(c)) return stepProblems(c as Record<string, unknown>, 'compensation', 'compensate.');
  return [
    `compensate must be a function (result) => … that undoes the step, or { run, ...step options } (got ${show(c)}` +
      `${typeof c === 'string' ? ': a method name works on @Step() only, Durable.step() has no class to look it up in' : ''})`,
  ];
}

/** Largest cluster-wide limit of a queue or a concurrency key. */
export const MAX_FLOW_LIMIT = 1_000_000;
/** Largest rate limit: the starts of one window are kept in a row (durable_rate_windows). */
export const MAX_RATE_LIMIT = 10_000;
/** The flow-control limits of a queue (QueueLimits): what setQueueLimits takes, and the queues option next to concurrency. */
export const FLOW_LIMIT_KEYS = ['globalConcurrency', 'keyConcurrency', 'rateLimit', 'keyRateLimit'];
const QUEUE_KEYS = ['concurrency', ...FLOW_LIMIT_KEYS];

/** Problems of one entry of the `queues` option. [] when it is fine. */
export function queueProblems(name: string, q: unknown): string[] {
  if (!q || typeof q !== 'object' || Array.isArray(q))
    return [`${name} must be an object { concurrency?, globalConcurrency?, keyConcurrency?, rateLimit?, keyRateLimit? } (got ${show(q)})`];
  const o = q as Record<string, unknown>;
  const out: string[] = [];
  for (const k of Object.keys(o))
    if (!QUEUE_KEYS.includes(k)) out.push(`${name} has no option "${k}" (a queue has ${QUEUE_KEYS.join(', ')})`);
  if (o.concurrency !== undefined && !isInt(o.concurrency, 1, 10_000))
    out.push(`${name}.concurrency must be an integer between 1 and 10000: runs at once in this process (got ${show(o.concurrency)})`);
  out.push(...flowLimitProblems(name, o));
  return out;
}

/** Problems of cluster-wide limits { globalConcurrency?, keyConcurrency?, rateLimit?, keyRateLimit? } (null or undefined = no limit). */
export function flowLimitProblems(name: string, o: Record<string, unknown>): string[] {
  const out: string[] = [...rateProblems(`${name}.rateLimit`, o.rateLimit), ...rateProblems(`${name}.keyRateLimit`, o.keyRateLimit)];
  for (const k of ['globalConcurrency', 'keyConcurrency']) {
    const v = o[k];
    if (v !== undefined && v !== null && !isInt(v, 1, MAX_FLOW_LIMIT)) {
      out.push(
        `${name}.${k} must be an integer between 1 and ${MAX_FLOW_LIMIT} (runs at once across all instances${k === 'keyConcurrency' ? ' per concurrency key' : ''}), or null for no limit (got ${show(v)})`,
      );
    }
  }
  return out;
}

/** Problems of a rate limit { limit, periodMs } (null or undefined = none). */
function rateProblems(name: string, r: unknown): string[] {
  if (r === undefined || r === null) return [];
  const what = `${name} must be { limit, periodMs } — at most limit starts in any periodMs — or null for no rate limit`;
  if (typeof r !== 'object' || Array.isArray(r)) return [`${what} (got ${show(r)})`];
  const o = r as Record<string, unknown>;
  const out = Object.keys(o)
    .filter((k) => k !== 'limit' && k !== 'periodMs')
    .map((k) => `${name} has no option "${k}" (a rate limit has limit, periodMs)`);
  if (!isInt(o.limit, 1, MAX_RATE_LIMIT))
    out.push(`${name}.limit must be an integer between 1 and ${MAX_RATE_LIMIT} (got ${show(o.limit)})`);
  if (!isInt(o.periodMs, 1, DAY_MS))
    out.push(`${name}.periodMs must be a whole number of ms between 1 and ${DAY_MS} (got ${show(o.periodMs)})`);
  return out;
}

/** @Workflow() options (also checked when a workflow is registered without Nest). */
export function checkWorkflowOptions(where: string, o: unknown): void {
  if (o === undefined) return;
  if (!o || typeof o !== 'object') throw new InvalidOptionsError(`${where}: the options must be an object (got ${show(o)}).`);
  const w = o as Record<string, unknown>;
  const problems: string[] = [];
  if (w.name !== undefined && !isName(w.name))
    problems.push(`name must be a non-empty string of at most ${MAX_NAME_LENGTH} characters (got ${show(w.name)})`);
  if (w.queue !== undefined && !isName(w.queue))
    problems.push(`queue must be a non-empty string of at most ${MAX_NAME_LENGTH} characters (got ${show(w.queue)})`);
  if (w.timeoutMs !== undefined && !isNum(w.timeoutMs, 1, CENTURY_MS))
    problems.push(`timeoutMs must be a number of ms between 1 and ${CENTURY_MS} (got ${show(w.timeoutMs)})`);
  if (w.priority !== undefined && !isInt(w.priority, -MAX_PRIORITY, MAX_PRIORITY)) {
    problems.push(
      `priority must be a whole number between -${MAX_PRIORITY} and ${MAX_PRIORITY}, lower runs first (got ${show(w.priority)})`,
    );
  }
  if (w.concurrencyKey !== undefined && typeof w.concurrencyKey !== 'function') {
    problems.push(
      `concurrencyKey must be a function (input) => string | null that derives the run's concurrency key from its input (got ${show(w.concurrencyKey)}); a fixed key goes in the start option concurrencyKey`,
    );
  }
  if (w.signals !== undefined && !(Array.isArray(w.signals) && w.signals.every(isSignalDefinition)))
    problems.push(`signals must be a list of defineSignal() results, the signals its runs wait for (got ${show(w.signals)})`);
  if (w.deleteOnSuccess !== undefined && typeof w.deleteOnSuccess !== 'boolean')
    problems.push(`deleteOnSuccess must be true (a run that succeeds is deleted at its end) or false (got ${show(w.deleteOnSuccess)})`);
  if (problems.length) throw new InvalidOptionsError(`${where}: ${problems.join('; ')}.`);
}

/** The pivot option: a boolean, on a transactional step (so that its writes and its checkpoint commit together). */
function pivotProblems(s: Record<string, unknown>, prefix: string): string[] {
  if (s.pivot === undefined || s.pivot === false) return [];
  if (s.pivot !== true) return [`${prefix}pivot must be true or false (got ${show(s.pivot)})`];
  if (s.transactional === true) return [];
  return [
    `${prefix}pivot: true needs transactional: true: the pivot's writes (through Durable.tx()) commit with its checkpoint, so a ` +
      `compensating cancel either sees the pivot or rolls it back. Call other systems in a step before the pivot`,
  ];
}
