import { NonRetryableError } from '../errors/index.js';
import type { StepAttemptHooks } from '../config/clock.js';

/** Which attempts of a step fail, and how. */
export interface StepFaultOptions {
  /** The attempts that fail (counting from 1): a number, a list, or 'all'. Default 1 (the first). */
  attempts?: number | number[] | 'all';
  /** The error thrown (or a function of the attempt making it). Default: an Error naming the step and attempt. */
  error?: unknown | ((attempt: number) => unknown);
  /** Throw a NonRetryableError (no retry: the step fails at once, the workflow sees it). */
  nonRetryable?: boolean;
  /** Only this run's attempts (default: every run's). */
  runId?: string;
}

/** An injected fault: how many attempts it failed so far. */
export interface StepFault {
  readonly step: string;
  /** Attempts this fault made fail. */
  readonly hits: number;
  /** Stops injecting it. */
  remove(): void;
}

interface Rule extends StepFault {
  matches(a: { runId: string; step: string; attempt: number }): boolean;
  fail(attempt: number): never;
  hits: number;
}

/** The faults of one testing module, hooked into the engine's step attempts. */
export class StepFaults {
  private readonly rules = new Set<Rule>();

  /** The hook the engine calls inside each step attempt, before the step's code. */
  readonly hook: NonNullable<StepAttemptHooks['beforeAttempt']> = (a) => {
    for (const r of this.rules) {
      if (!r.matches(a)) continue;
      r.hits++;
      r.fail(a.attempt);
    }
  };

  add(step: string, opts: StepFaultOptions = {}): StepFault {
    const attempts = opts.attempts ?? 1;
    const which = attempts === 'all' ? null : new Set(Array.isArray(attempts) ? attempts : [attempts]);
    const rules = this.rules;
    const rule: Rule = {
      step,
      hits: 0,
      matches: (a) => a.step === step && (opts.runId === undefined || a.runId === opts.runId) && (which === null || which.has(a.attempt)),
      fail(attempt) {
        const message = `fault injected by nestjs-durable/testing: step "${step}", attempt ${attempt}`;
        if (opts.nonRetryable) {
          const given = typeof opts.error === 'function' ? (opts.error as (n: number) => unknown)(attempt) : opts.error;
          throw new NonRetryableError(given instanceof Error ? given.message : given === undefined ? message : String(given));
        }
        if (opts.error === undefined) throw new Error(message);
        throw typeof opts.error === 'function' ? (opts.error as (n: number) => unknown)(attempt) : opts.error;
      },
      remove: () => void rules.delete(rule),
    };
    this.rules.add(rule);
    return rule;
  }

  clear(): void {
    this.rules.clear();
  }
}
