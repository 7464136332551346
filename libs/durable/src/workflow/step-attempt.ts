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
 */
export function attemptSignal(a: StepAttempt): { signal: AbortSignal; timedOut: Promise<never> | null; done(): void } {
  const base = a.compensates === null ? a.ctx.forward.signal : a.ctx.abort.signal;
  const timeoutMs = a.def.options.timeoutMs;
  if (!timeoutMs) return { signal: base, timedOut: null, done: () => {} };
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
