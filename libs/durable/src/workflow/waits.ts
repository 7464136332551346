import { setTimeout as delay } from 'node:timers/promises';
import { checkKey, checkMs } from '../config/limits.js';
import { decode } from '../codec/codec.js';
import { durableOperation } from './durable-operation.js';
import { currentScope } from './run-context.js';
import { WaitSet } from './wait-set.js';

/** Step names of durable waits (what getRun() shows; replay checks them). */
export const SLEEP_STEP = 'durable.sleep';
export const recvStepName = (topic: string) => `durable.recv:${topic}`;

/** Durable.sleep — see durable-api.ts. */
export function durableSleep(ms: number): Promise<void> {
  try {
    checkMs('Durable.sleep()', 'ms', ms);
  } catch (err) {
    return Promise.reject(err);
  }
  const scope = currentScope();
  if (scope?.step) {
    // Inside a step: a plain (non-durable) pause that ends early if the run must stop, or the step's
    // attempt is over (its timeout, a cancel with compensation): it throws the signal's reason then.
    const signal = scope.step.signal ?? scope.run.abort.signal;
    return delay(ms, undefined, { signal }).catch((err: unknown) => {
      scope.run.throwIfStopped();
      throw signal.aborted ? signal.reason : err;
    });
  }
  return durableOperation('Durable.sleep()', SLEEP_STEP, async ({ ctx, seq, name, recorded }) => {
    const due = recorded ? (decode(recorded.output) as Date) : null;
    if (due && due.getTime() <= ctx.services.clock.now()) return;
    await WaitSet.of(ctx).wait({ seq, kind: 'sleep', name, key: null, ms: recorded ? null : ms, due }, () => undefined);
  });
}

/** Durable.recv — see durable-api.ts. */
export function durableRecv<T>(topic: string, opts: { timeoutMs?: number } = {}): Promise<T | null> {
  let timeoutMs: number | null;
  try {
    checkKey('Durable.recv()', 'topic', topic);
    timeoutMs = opts?.timeoutMs === undefined || opts.timeoutMs === null ? null : checkMs('Durable.recv()', 'timeoutMs', opts.timeoutMs);
  } catch (err) {
    return Promise.reject(err);
  }
  return durableOperation('Durable.recv()', recvStepName(topic), ({ ctx, seq, name, recorded }) => {
    if (recorded?.status === 'SUCCEEDED') return decode(recorded.output) as T | null;
    const due = recorded?.status === 'WAITING' ? (decode(recorded.output) as { deadline: Date }).deadline : null;
    return WaitSet.of(ctx).wait({ seq, kind: 'recv', name, key: topic, ms: recorded ? null : timeoutMs, due }, (out) => out as T | null);
  });
}
