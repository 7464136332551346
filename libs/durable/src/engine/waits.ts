import { errorText } from './error-text.js';
import { setTimeout as delay } from 'node:timers/promises';
import { DeterminismError, DurableError, NotInWorkflowError, RunNotFoundError } from '../errors/index.js';
import type { RecordedStep } from '../store/run-store.js';
import { waitStore } from '../store/wait-store.js';
import { decode, encode } from './codec.js';
import { currentScope, ExecutionStopped, type RunContext } from './run-context.js';
import { WaitSet } from './wait-set.js';

/** Step names of the durable waits (what getRun() shows; replay checks them). */
export const SLEEP_STEP = 'durable.sleep';
export const recvStepName = (topic: string) => `durable.recv:${topic}`;

/**
 * The run context of workflow code, for a durable operation that takes a step sequence number.
 * Inside a step (which may run more than once) a durable wait cannot be recorded: that is an error.
 */
export function workflowContext(api: string): RunContext {
  const scope = currentScope();
  if (!scope) throw new NotInWorkflowError(api);
  if (scope.step) {
    throw new NotInWorkflowError(api, `workflow code, not inside a step (step "${scope.step.name}" may run more than once, so it cannot record a durable operation)`);
  }
  return scope.run;
}

/**
 * The recorded step at `seq`, if any; a recorded step of another name is a determinism error
 * that fails the run (same rule as @Step replay).
 */
export function recordedAt(ctx: RunContext, seq: number, name: string): RecordedStep | undefined {
  const r = ctx.recordedStep(seq);
  if (r && r.name !== name) {
    ctx.fatal = new DeterminismError(ctx.runId, seq, r.name, name);
    throw ctx.fatal;
  }
  return r;
}

/** Runs `fn` as a promise: synchronous throws become rejections (safe inside Promise.all). */
export function asPromise<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * Runs one idempotent statement of a durable operation, retrying a database error a few times
 * with back-off (a dropped connection must not fail the workflow); typed errors and a stopped
 * execution end it at once.
 */
export async function retrying<T>(ctx: RunContext, what: string, fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    ctx.throwIfStopped();
    try {
      return await fn();
    } catch (err) {
      if (err instanceof DurableError || attempt >= 5) throw err;
      ctx.services.options.logger.warn(`run ${ctx.runId}: could not ${what} (${errorText(err)}); retrying`);
      await delay(100 * 2 ** attempt, undefined, { signal: ctx.abort.signal }).catch(() => ctx.throwIfStopped());
    }
  }
}

/** Longest durable wait: a century (a wake-up time the database can store). */
const MAX_WAIT_MS = 100 * 365 * 24 * 3600_000;

export function checkMs(api: string, name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > MAX_WAIT_MS) {
    throw new DurableError('INVALID_ARGUMENT', `${api}: ${name} must be a finite number of milliseconds ≥ 0 and at most ${MAX_WAIT_MS} (a century; got ${JSON.stringify(v)}).`);
  }
  return v;
}

/** Durable.sleep — see durable-api.ts. */
export function durableSleep(ms: number): Promise<void> {
  return asPromise(async () => {
    checkMs('Durable.sleep()', 'ms', ms);
    const scope = currentScope();
    if (scope?.step) {
      // Inside a step: a plain (non-durable) pause that ends early if the run must stop.
      await delay(ms, undefined, { signal: scope.run.abort.signal }).catch(() => scope.run.throwIfStopped());
      return;
    }
    const ctx = workflowContext('Durable.sleep()');
    const seq = ctx.takeSeq();
    ctx.throwIfStopped();
    const rec = recordedAt(ctx, seq, SLEEP_STEP);
    const due = rec ? (decode(rec.output) as Date) : null;
    if (due && due.getTime() <= Date.now()) return;
    await WaitSet.of(ctx).wait({ seq, kind: 'sleep', name: SLEEP_STEP, key: null, ms: rec ? null : ms, due }, () => undefined);
  });
}

/** Durable.recv — see durable-api.ts. */
export function durableRecv<T>(topic: string, opts: { timeoutMs?: number } = {}): Promise<T | null> {
  return asPromise(async () => {
    if (typeof topic !== 'string' || !topic || topic.length > 256) {
      throw new DurableError('INVALID_ARGUMENT', `Durable.recv(): the topic must be a non-empty string of at most 256 characters (got ${JSON.stringify(topic)}).`);
    }
    const timeoutMs = opts?.timeoutMs === undefined || opts.timeoutMs === null ? null : checkMs('Durable.recv()', 'timeoutMs', opts.timeoutMs);
    const ctx = workflowContext('Durable.recv()');
    const name = recvStepName(topic);
    const seq = ctx.takeSeq();
    ctx.throwIfStopped();
    const rec = recordedAt(ctx, seq, name);
    if (rec?.status === 'SUCCEEDED') return decode(rec.output) as T | null;
    const due = rec?.status === 'WAITING' ? (decode(rec.output) as { deadline: Date }).deadline : null;
    return WaitSet.of(ctx).wait({ seq, kind: 'recv', name, key: topic, ms: rec ? null : timeoutMs, due }, (out) => out as T | null);
  });
}

/** Durable.send — see durable-api.ts. */
export function durableSend(runId: string, topic: string, payload: unknown): Promise<void> {
  return asPromise(async () => {
    if (typeof runId !== 'string' || !runId || runId.length > 256) throw new RunNotFoundError(String(runId));
    if (typeof topic !== 'string' || !topic || topic.length > 256) {
      throw new DurableError('INVALID_ARGUMENT', `Durable.send(): the topic must be a non-empty string of at most 256 characters (got ${JSON.stringify(topic)}).`);
    }
    const ctx = workflowContext('Durable.send()');
    const name = `durable.send:${topic}`;
    const seq = ctx.takeSeq();
    ctx.throwIfStopped();
    if (recordedAt(ctx, seq, name)) return;
    const encoded = encode(payload, { where: `message "${topic}" to run ${runId}`, maxBytes: ctx.services.options.maxPayloadBytes });
    const done = ctx.enterWork();
    try {
      const r = await retrying(ctx, `send a message to run ${runId}`, () =>
        waitStore.sendFromRun(ctx.services.sql, { runId: ctx.runId, epoch: ctx.epoch, seq, name, target: runId, topic, payload: encoded }),
      );
      if (!r.held) {
        ctx.stop('lease-lost');
        throw new ExecutionStopped('lease-lost');
      }
      if (!r.found) throw new RunNotFoundError(runId);
    } finally {
      done();
    }
  });
}
