/**
 * One attempt of a step: what it is (StepAttempt), its Durable.signal() with the step's timeout, and
 * waiting out the code of an attempt that timed out before the next one starts.
 */
import { StepTimeoutError } from '../errors/index.js';
import { TIMED_OUT_STEP_WARN_MS } from '../config/limits.js';
import type { StepDefinition } from '../definitions/definitions.js';
import type { EngineSpan } from '../telemetry/tracing.js';
import type { RunContext } from './run-context.js';

/** One attempt of a step's execution. */
export interface StepAttempt {
  ctx: RunContext;
  def: StepDefinition;
  seq: number;
  call: () => unknown;
  attempt: number;
  /** When the step's first attempt started (performance.now()). */
  started: number;
  /** "step "name" (#seq) of run id", for messages. */
  where: string;
  /** What undoes the step (JSON text), recorded with its checkpoint; null if nothing. */
  compensation: string | null;
  /** A compensation step: the seq of the step it undoes. */
  compensates: number | null;
  /** The attempt's span (telemetry), active while the step's code runs; null without tracing. */
  span: EngineSpan | null;
}

/**
 * The attempt's Durable.signal(): the run stopping (and, for the workflow's own steps, a cancel with
 * compensation), plus the step's timeout if it has one. `timedOut` rejects when the time is up.
 * Without a timeout `signal` is null: the step follows the run's signal (runSignal), looked up only
 * when its code asks for it (the run makes it on first use).
 */
export function attemptSignal(a: StepAttempt): { signal: AbortSignal | null; timedOut: Promise<never> | null; done(): void } {
  const timeoutMs = a.def.options.timeoutMs;
  if (!timeoutMs) return NO_TIMEOUT;
  const base = runSignal(a);
  const ac = new AbortController();
  const follow = () => ac.abort(base.reason);
  if (base.aborted) follow();
  else base.addEventListener('abort', follow, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new StepTimeoutError(a.def.name, timeoutMs, a.attempt);
      ac.abort(err);
      reject(err);
    }, timeoutMs);
  });
  timedOut.catch(() => {});
  return {
    signal: ac.signal,
    timedOut,
    done: () => {
      clearTimeout(timer);
      base.removeEventListener('abort', follow);
    },
  };
}

/** The run's signal a step's attempt follows: the workflow's own steps stop on a cancel with compensation too, compensation steps only when the execution stops. */
export const runSignal = (a: StepAttempt): AbortSignal => (a.compensates === null ? a.ctx.forward.signal : a.ctx.abort.signal);

const NO_TIMEOUT = { signal: null, timedOut: null, done: () => {} };

/** The step in scope while a plain step's code runs (DurableScope.step). */
export class StepScope {
  readonly name: string;
  readonly seq: number;
  constructor(
    private readonly a: StepAttempt,
    private readonly own: AbortSignal | null,
  ) {
    this.name = a.def.name;
    this.seq = a.seq;
  }

  /** Durable.signal() inside the step: the attempt's own (with a timeout), else the run's. */
  get signal(): AbortSignal {
    return this.own ?? runSignal(this.a);
  }
}

/**
 * A timed-out attempt's code has seen its signal abort; the next attempt must not start while it
 * still runs (one run never executes a step twice at the same time): wait for it to settle, or for
 * the execution to stop. Code that ignores the signal holds the step (and its run) until it ends.
 */
export async function settled(a: StepAttempt, running: Promise<unknown>): Promise<void> {
  const { ctx } = a;
  const warn = setTimeout(() => {
    ctx.services.options.logger.warn(
      `${a.where} timed out ${TIMED_OUT_STEP_WARN_MS} ms ago and its code is still running (it does not stop on ` +
        `Durable.signal()); its next attempt waits until it ends`,
    );
  }, TIMED_OUT_STEP_WARN_MS);
  warn.unref?.();
  const stop = ctx.abort.signal;
  let onStop: (() => void) | undefined;
  try {
    await new Promise<void>((resolve) => {
      if (stop.aborted) return resolve();
      onStop = resolve;
      stop.addEventListener('abort', onStop, { once: true });
      running.then(
        () => resolve(),
        () => resolve(),
      );
    });
  } finally {
    clearTimeout(warn);
    if (onStop) stop.removeEventListener('abort', onStop);
  }
  ctx.throwIfStopped();
}
