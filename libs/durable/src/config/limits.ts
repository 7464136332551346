import { InvalidArgumentError } from '../errors/index.js';
import { checkIdentifierCharacters, showIdentifier } from './identifiers.js';

/** Limits the library enforces, in one place. */
export const DAY_MS = 24 * 3600_000;
/** Longest delay, timeout, durable wait or distance of runAt from now: a century (a time the database can store). */
export const CENTURY_MS = 100 * 365 * DAY_MS;
/** Longest run id, idempotency key, message topic or event key. */
export const MAX_ID_LENGTH = 256;
/** Longest workflow, step or queue name. */
export const MAX_NAME_LENGTH = 200;
/** Priorities range over ±this (lower runs first). */
export const MAX_PRIORITY = 1_000_000;
/** Most tags a run may carry (start option `tags`), and the longest tag. */
export const MAX_TAGS = 20;
export const MAX_TAG_LENGTH = 100;
/** Most rows of a run's history one getRunEvents call returns. */
export const MAX_HISTORY_ROWS = 10_000;

/** A run id, topic or key: a non-empty string of at most MAX_ID_LENGTH characters; InvalidArgumentError otherwise. */
export function checkKey(api: string, what: string, v: unknown): string {
  if (typeof v !== 'string' || !v || v.length > MAX_ID_LENGTH) {
    throw new InvalidArgumentError(
      `${api}: the ${what} must be a non-empty string of at most ${MAX_ID_LENGTH} characters (got ${showIdentifier(v)}).`,
      what,
    );
  }
  return checkIdentifierCharacters(api, what, v);
}

/** A duration in ms: finite, ≥ 0, at most a century; InvalidArgumentError otherwise. */
export function checkMs(api: string, name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > CENTURY_MS) {
    throw new InvalidArgumentError(
      `${api}: ${name} must be a finite number of milliseconds ≥ 0 and at most ${CENTURY_MS} (a century; got ${showIdentifier(v)}).`,
      name,
    );
  }
  return v;
}

/** The longest timer Node.js keeps (2^31 - 1 ms, about 24.8 days): it runs one set for longer at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
/** Longest @Step({ timeoutMs }): the longest timer Node.js keeps. */
export const MAX_STEP_TIMEOUT_MS = MAX_TIMER_MS;
/** A timed-out step whose code has not settled this long after its timeout is logged (it ignores Durable.signal()). */
export const TIMED_OUT_STEP_WARN_MS = 5_000;
/** Durable.progress(): at most one write per run this often (the latest value wins). */
export const PROGRESS_INTERVAL_MS = 1_000;
/** Largest serialized Durable.progress() value. */
export const MAX_PROGRESS_BYTES = 4 * 1024;
/** Largest encoded context a run keeps (engine option `context`): it is read with every claim of the run. */
export const MAX_CONTEXT_BYTES = 16 * 1024;
/** The scheduler reads schedules due within this long ahead, so that it fires them on their slot (not a read later). */
export const SCHEDULE_LOOKAHEAD_MS = 2_000;
/** Schedules the scheduler reads and plans in one round at most (pages of scheduleBatchSize). */
export const SCHEDULE_MAX_PER_ROUND = 50_000;
/** Slots of one schedule started in one round at most (catch-up goes on in the next round). */
export const SCHEDULE_SLOTS_PER_ROUND = 100;
/** Fire statements one instance runs at once (each on its own connection). */
export const SCHEDULE_FIRE_CONCURRENCY = 2;
/** Schedules listed per call at most (client API and admin API). */
export const MAX_SCHEDULES_PER_PAGE = 500;
/** Most recent runs of a schedule shown (admin API). */
export const MAX_SCHEDULE_RUNS = 100;

/**
 * Set (to "1") while `npx nestjs-durable verify` or verifyApp() boots the app: DurableModule then
 * registers the workflows and starts nothing (no worker, scheduler, schedule sync or sweeper).
 * App code with its own boot-time writes can check it too.
 */
export const VERIFY_MODE_ENV = 'NESTJS_DURABLE_VERIFY';
/** True while the app is booted by `verify` (see VERIFY_MODE_ENV). */
export const isVerifyMode = (): boolean => process.env[VERIFY_MODE_ENV] === '1';
