/**
 * What a schedule is: a cron expression read in a time zone, and the policies for slots missed
 * while no scheduler ran (catchUp) and for slots that come while the previous run is still active
 * (overlap). The next-fire computation is the `cron` package's (the parser @nestjs/schedule builds
 * on), so an expression means here what it means in @Cron(), across DST included.
 */
import cron from 'cron';
import { InvalidScheduleError } from '../errors/index.js';
import { DAY_MS, MAX_NAME_LENGTH } from '../config/limits.js';

/** Slots missed while no scheduler ran (downtime): skip them, run the latest of them once, or run them all (within catchUpWindowMs). */
export type CatchUpPolicy = 'skip' | 'latest' | 'all';
/** A slot that comes while the schedule's previous run is still active: skip it, start it anyway, or start it when the active run ends (at most one waits). */
export type OverlapPolicy = 'skip' | 'allow' | 'bufferOne';

export const CATCH_UP_POLICIES: readonly CatchUpPolicy[] = ['skip', 'latest', 'all'];
export const OVERLAP_POLICIES: readonly OverlapPolicy[] = ['skip', 'allow', 'bufferOne'];

/** Policies of a schedule (declared or created at runtime). Every field has a default. */
export interface SchedulePolicy {
  /** IANA time zone the expression is read in (e.g. "Europe/Paris"). Default "UTC", the same on every instance. */
  timeZone?: string;
  /** Slots missed during downtime (more than the engine option scheduleMisfireMs late). Default "latest". */
  catchUp?: CatchUpPolicy;
  /** catchUp "all": missed slots at most this old run; older ones are skipped. Default one day. */
  catchUpWindowMs?: number;
  /** A slot while the previous run of the schedule is active (PENDING, RUNNING or WAITING). Default "skip". */
  overlap?: OverlapPolicy;
  /** Each run becomes claimable at a random moment up to this long after its slot (spreads a herd). Default 0. */
  jitterMs?: number;
}

/**
 * A schedule declared on a workflow: `@Workflow({ schedule: { cron: '0 3 * * *', timeZone: 'Europe/Paris' } })`
 * (or `@DurableCron('0 3 * * *', { timeZone: 'Europe/Paris' })`). Each slot starts one run across all
 * instances; its id is `sched:<workflow>:<slot ISO>` and its input a ScheduledInput.
 */
export interface WorkflowScheduleOptions extends SchedulePolicy {
  /** 5 fields (minute first) or 6 (seconds first), presets (@daily) and names (MON, JAN): what @Cron() accepts. */
  cron: string;
  /** Passed to every run as `input` (next to scheduleId and scheduledAt). */
  input?: unknown;
}

/** The input of a run started by a schedule. */
export interface ScheduledInput<T = unknown> {
  /** The schedule's id (for a declared schedule: the workflow's name). */
  scheduleId: string;
  /** The slot: when the run was due (for a manual trigger: when it was triggered). */
  scheduledAt: Date;
  /** The schedule's input, if it has one. */
  input?: T;
  /** true for a run started by trigger() rather than by a slot. */
  manual: boolean;
}

/** A schedule's expression and policies with every default applied (checked). */
export interface ScheduleSpec {
  cron: string;
  timeZone: string;
  catchUp: CatchUpPolicy;
  catchUpWindowMs: number;
  overlap: OverlapPolicy;
  jitterMs: number;
}

export const SCHEDULE_DEFAULTS = { timeZone: 'UTC', catchUp: 'latest', catchUpWindowMs: DAY_MS, overlap: 'skip', jitterMs: 0 } as const;
/** The keys a schedule accepts (declared: also `cron` and `input`). */
export const POLICY_KEYS = ['timeZone', 'catchUp', 'catchUpWindowMs', 'overlap', 'jitterMs'] as const;
const MAX_CRON_LENGTH = MAX_NAME_LENGTH;
const MAX_WINDOW_MS = 366 * DAY_MS;

const show = (v: unknown) => (typeof v === 'function' ? 'a function' : (JSON.stringify(v) ?? String(v)).slice(0, 120));

/**
 * Checks a schedule's expression and policies and applies the defaults. `where` names it in the
 * error: `workflow "nightly" (Jobs.nightly())` or `schedule "tenant-1"`. InvalidScheduleError names
 * the field and the value; an expression is also rejected when it never fires.
 */
export function resolveScheduleSpec(
  where: string,
  o: Partial<ScheduleSpec> & Record<string, unknown>,
  extraKeys: readonly string[] = [],
): ScheduleSpec {
  for (const k of Object.keys(o)) {
    if (k !== 'cron' && !(POLICY_KEYS as readonly string[]).includes(k) && !extraKeys.includes(k)) {
      throw new InvalidScheduleError(
        where,
        'option',
        `"${k.slice(0, 60)}"`,
        `is unknown; a schedule has cron, ${[...POLICY_KEYS, ...extraKeys].join(', ')}`,
      );
    }
  }
  const expr = o.cron;
  if (typeof expr !== 'string' || !expr.trim() || expr.length > MAX_CRON_LENGTH) {
    throw new InvalidScheduleError(
      where,
      'cron',
      show(expr),
      `must be a cron expression (a non-empty string of at most ${MAX_CRON_LENGTH} characters)`,
    );
  }
  const timeZone = o.timeZone ?? SCHEDULE_DEFAULTS.timeZone;
  if (typeof timeZone !== 'string' || !timeZone || timeZone.length > 100) {
    throw new InvalidScheduleError(where, 'timeZone', show(timeZone), 'must be an IANA time zone name such as "Europe/Paris" or "UTC"');
  }
  const catchUp = o.catchUp ?? SCHEDULE_DEFAULTS.catchUp;
  if (!CATCH_UP_POLICIES.includes(catchUp)) {
    throw new InvalidScheduleError(where, 'catchUp', show(catchUp), `must be one of ${CATCH_UP_POLICIES.join(', ')}`);
  }
  const overlap = o.overlap ?? SCHEDULE_DEFAULTS.overlap;
  if (!OVERLAP_POLICIES.includes(overlap)) {
    throw new InvalidScheduleError(where, 'overlap', show(overlap), `must be one of ${OVERLAP_POLICIES.join(', ')}`);
  }
  const catchUpWindowMs = o.catchUpWindowMs ?? SCHEDULE_DEFAULTS.catchUpWindowMs;
  if (typeof catchUpWindowMs !== 'number' || !Number.isInteger(catchUpWindowMs) || catchUpWindowMs < 1 || catchUpWindowMs > MAX_WINDOW_MS) {
    throw new InvalidScheduleError(
      where,
      'catchUpWindowMs',
      show(catchUpWindowMs),
      `must be a whole number of ms between 1 and ${MAX_WINDOW_MS} (a year)`,
    );
  }
  const jitterMs = o.jitterMs ?? SCHEDULE_DEFAULTS.jitterMs;
  if (typeof jitterMs !== 'number' || !Number.isInteger(jitterMs) || jitterMs < 0 || jitterMs > DAY_MS) {
    throw new InvalidScheduleError(where, 'jitterMs', show(jitterMs), `must be a whole number of ms between 0 and ${DAY_MS} (a day)`);
  }
  // An expression that matches no date (e.g. "0 0 31 2 *") is rejected here, not at its first fire.
  compileCron(where, expr, timeZone);
  return { cron: expr, timeZone, catchUp, catchUpWindowMs, overlap, jitterMs };
}

/**
 * A compiled expression in its time zone: next-fire computations, memoized (the scheduler asks
 * the same question for every schedule sharing an expression and a slot).
 */
export class CronClock {
  private readonly memo = new Map<number, number>();

  private constructor(
    readonly expression: string,
    readonly timeZone: string,
    private readonly time: InstanceType<typeof cron.CronTime>,
  ) {}

  /** The first slot strictly after `afterMs` (slots are whole seconds). Throws when there is none within 8 years. */
  next(afterMs: number): number {
    const sec = Math.floor(afterMs / 1000);
    const known = this.memo.get(sec);
    if (known !== undefined) return known;
    const n = this.time.getNextDateFrom(new Date(sec * 1000), this.timeZone).toMillis();
    if (this.memo.size >= MEMO_SIZE) this.memo.clear();
    this.memo.set(sec, n);
    return n;
  }

  /** The first slot at or after `ms`. */
  atOrAfter(ms: number): number {
    return this.next(ms - 1);
  }

  /**
   * The last slot before `boundaryMs`, knowing that `fromSlot` is a slot before it. Walks forward a
   * little, then bisects (whole seconds), so it costs O(log gap) computations however long the gap.
   */
  lastBefore(boundaryMs: number, fromSlot: number): number {
    let cur = fromSlot;
    for (let i = 0; i < 32; i++) {
      const n = this.next(cur);
      if (n >= boundaryMs) return cur;
      cur = n;
    }
    // next(lo) < boundary; next(hi) >= boundary. Find the smallest such hi (in seconds).
    let lo = Math.floor(cur / 1000);
    let hi = Math.ceil(boundaryMs / 1000);
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.next(mid * 1000) >= boundaryMs) hi = mid;
      else lo = mid;
    }
    return this.next(lo * 1000);
  }

  private static readonly cache = new Map<string, CronClock>();

  /** The compiled expression (cached); throws the cron package's error for a bad expression or zone. */
  static of(expr: string, timeZone: string): CronClock {
    const key = `${timeZone}\u0000${expr}`;
    let c = CronClock.cache.get(key);
    if (!c) {
      c = new CronClock(expr, timeZone, new cron.CronTime(expr, timeZone));
      if (CronClock.cache.size >= CLOCK_CACHE_SIZE) CronClock.cache.clear();
      CronClock.cache.set(key, c);
    }
    return c;
  }
}

const MEMO_SIZE = 10_000;
const CLOCK_CACHE_SIZE = 10_000;

/** Compiles an expression, turning the cron package's errors into InvalidScheduleError naming the value. */
export function compileCron(where: string, expr: string, timeZone: string): CronClock {
  let clock: CronClock;
  try {
    clock = CronClock.of(expr, timeZone);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    if (/time ?zone/i.test(msg)) {
      throw new InvalidScheduleError(
        where,
        'timeZone',
        show(timeZone),
        'is not a time zone the cron library knows (use an IANA name such as "Europe/Paris")',
      );
    }
    throw new InvalidScheduleError(where, 'cron', show(expr), `is not a valid cron expression (${msg.split('\n')[0].trim()})`);
  }
  try {
    clock.next(Date.now());
  } catch {
    throw new InvalidScheduleError(where, 'cron', show(expr), 'never fires (no matching date within 8 years)');
  }
  return clock;
}

/** The id of the run a schedule starts for a slot: the same on every instance, so a slot runs once. */
export function scheduleRunId(scheduleId: string, slotMs: number, manual = false): string {
  return `sched:${scheduleId}:${new Date(slotMs).toISOString()}${manual ? ':manual' : ''}`;
}
