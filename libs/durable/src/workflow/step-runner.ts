import { callUserCode } from '../errors/describe-thrown.js';
import { setTimeout as delay } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { errorText } from '../errors/error-text.js';
import {
  InvalidDefinitionError,
  InvalidOptionsError,
  NotInWorkflowError,
  PayloadTooLargeError,
  SerializationError,
  StepTimeoutError,
  StepTransactionTimeoutError,
} from '../errors/index.js';
import { insertStep } from '../store/checkpoints.js';
import { isConnectionError } from '../store/connection-errors.js';
import type { RecordedStep, StepCheckpoint, StepCompensation } from '../store/rows.js';
import { storeWithin, type Store } from '../store/store.js';
import { insertPivotStep } from '../store/pivot.js';
import { setLocal } from '../store/session-settings.js';
import { decode, encode, errorToJson, reviveError } from '../codec/codec.js';
import type { StepAttemptHooks } from '../config/clock.js';
import { resolveRetryPolicy } from '../config/retry-policy.js';
import type { StepDefinition } from '../definitions/definitions.js';
import { stepMethod } from '../definitions/step-methods.js';
import { shouldRetry, stepRetryDelay } from '../retry/step-retries.js';
import { durableOperation, type Operation } from './durable-operation.js';
import { retryingWrite } from './retrying-write.js';
import { currentScope, durableScope, ExecutionStopped, type PendingCompensation, type RunContext } from './run-context.js';
import { recordRunEvent } from './run-history.js';
import { pivotPassed } from './pivot.js';
import { transactionSettings } from './app-context.js';
import { attemptSignal, runSignal, settled, StepScope, type StepAttempt } from './step-attempt.js';

/** How a @Step() method was called: its instance and arguments (a compensation named by the step needs them). */
export interface StepBinding {
  self: unknown;
  args: unknown[];
  /** Parameters the method declares: arguments left out are recorded as undefined, so the result always comes after them. */
  arity?: number;
}

/**
 * Called by every @Step() method (and Durable.step). Outside a workflow, or inside another step,
 * the method runs as a plain call. Inside a workflow it is a durable operation: the recorded
 * result is replayed, or the code runs with retries and its outcome is checkpointed (fenced by
 * the lease epoch). A step that declares a compensation records it with its checkpoint, and the
 * run keeps it (see compensation.ts).
 */
export function invokeStep(def: StepDefinition, call: () => unknown, binding?: StepBinding): unknown {
  const scope = currentScope();
  if (!scope || scope.step) return call();
  const step = durableOperation('a step', def.name, (op) =>
    op.recorded ? replayStep(op, def, op.recorded, binding) : runStep(op, def, () => callUserCode(call), binding, null),
  );
  scope.run.track(step); // the run's end waits for it even if the workflow never awaits it
  return step;
}

/** Runs a compensation as one durable step of the run (replayed if recorded); see compensation.ts. */
export function invokeCompensation(c: PendingCompensation): Promise<unknown> {
  const step = durableOperation(
    'a compensation',
    c.def.name,
    (op) => {
      if (!op.recorded) return runStep(op, c.def, () => callUserCode(c.call), undefined, c.seq);
      op.ctx.compensated.add(c.seq);
      return replayStep(op, c.def, op.recorded, undefined);
    },
    'compensation',
  );
  currentScope()?.run.track(step);
  return step;
}

function replayStep(op: Operation, def: StepDefinition, recorded: RecordedStep, binding: StepBinding | undefined): unknown {
  if (recorded.status === 'SUCCEEDED') {
    const value = decode(recorded.output);
    const rec = recorded.compensation;
    if (rec?.by) registerCompensation(op.ctx, op.seq, def, binding, { ...rec, by: rec.by }, value);
    if (rec?.pivot) pivotPassed(op.ctx, op.seq, def.name);
    return value;
  }
  throw reviveError((recorded.error ?? { message: 'step failed' }) as Record<string, unknown>);
}

async function runStep(
  op: Operation,
  def: StepDefinition,
  call: () => unknown,
  binding: StepBinding | undefined,
  compensates: number | null,
): Promise<unknown> {
  // A step executing: the run cannot suspend on its other waits meanwhile (see wait-set.ts).
  const done = op.ctx.enterWork();
  try {
    const r = await executeStep(op.ctx, def, op.seq, call, { binding, compensates });
    const rec = r.compensation ? (JSON.parse(r.compensation) as StepCompensation) : null;
    if (rec?.by) registerCompensation(op.ctx, op.seq, def, binding, { ...rec, by: rec.by }, r.value);
    if (rec?.pivot) pivotPassed(op.ctx, op.seq, def.name);
    if (compensates !== null) op.ctx.compensated.add(compensates);
    return r.value;
  } finally {
    op.ctx.progress?.stepEnded(op.seq);
    done();
  }
}

/** The checkpoint of an attempt's outcome (output/error as JSON text). */
const checkpointOf = (a: StepAttempt, status: StepCheckpoint['status'], output: string | null, error: string | null): StepCheckpoint => ({
  runId: a.ctx.runId,
  epoch: a.ctx.epoch,
  seq: a.seq,
  name: a.def.name,
  status,
  output,
  error,
  attempts: a.attempt,
  durationMs: performance.now() - a.started,
  compensation: status === 'SUCCEEDED' ? a.compensation : null,
  compensates: a.compensates,
});

async function executeStep(
  ctx: RunContext,
  def: StepDefinition,
  seq: number,
  call: () => unknown,
  extra: { binding: StepBinding | undefined; compensates: number | null },
): Promise<{ value: unknown; compensation: string | null }> {
  const { options } = ctx.services;
  const policy = resolveRetryPolicy(options.stepRetries, def.options.retries);
  const where = `step "${def.name}" (#${seq}) of run ${ctx.runId} (${ctx.workflowName})`;
  const { tracing, metrics } = ctx.services.telemetry;
  const spanOf = (attempt: number) => tracing.startStep(ctx.span, ctx.workflowName, ctx.runId, def.name, seq, attempt);
  const finished = (status: 'SUCCEEDED' | 'FAILED') =>
    metrics.stepFinished(ctx.workflowName, def.name, status, (performance.now() - started) / 1000);
  const started = performance.now();
  // A compensation step finishes even while the run is being cancelled; the workflow's own steps do not.
  const forward = extra.compensates === null;
  let compensation: string | null | undefined;
  for (let attempt = 1; ; attempt++) {
    ctx.throwIfStopped();
    if (forward && ctx.cancelling) throw ctx.cancelledError();
    const span = spanOf(attempt);
    const a: StepAttempt = { ctx, def, seq, call, attempt, started, where, compensation: null, compensates: extra.compensates, span };
    try {
      // Before the step's code runs: arguments a compensation needs must be storable.
      a.compensation = compensation ??= forward ? compensationRecord(ctx, def, seq, extra.binding) : null;
      const hook = ctx.services.stepHooks.beforeAttempt;
      if (hook) a.call = hooked(a, hook, call);
      const { encoded, durable } = def.options.transactional
        ? { encoded: await executeTransactional(a), durable: null }
        : await executePlain(a);
      // The span and the metric of a completed step come once its checkpoint is written.
      const recorded = () => {
        tracing.ok(span);
        finished('SUCCEEDED');
      };
      if (durable) durable.then(recorded, () => tracing.end(span, ctx.stopped ?? 'stopped'));
      else recorded();
      return { value: decode(JSON.parse(encoded)), compensation: a.compensation };
    } catch (err) {
      if (err instanceof ExecutionStopped || ctx.stopped) {
        tracing.end(span, ctx.stopped ?? (err as ExecutionStopped).reason);
        throw ctx.stopped ? new ExecutionStopped(ctx.stopped) : err;
      }
      // Cancelled with compensation meanwhile: no retry, and no FAILED checkpoint (a replay sees the cancel too).
      if (forward && ctx.cancelling) {
        tracing.end(span, 'cancelling');
        throw ctx.cancelledError();
      }
      const final = err instanceof SerializationError || err instanceof PayloadTooLargeError || !shouldRetry(policy, attempt, err);
      tracing.failed(span, err, 'durable.retrying', !final);
      if (!final) {
        metrics.stepRetried(ctx.workflowName, def.name);
        options.logger.warn(`${where} failed (attempt ${attempt}/${policy.maxAttempts}), retrying: ${errorText(err)}`);
        ctx.historyWritten(() =>
          recordRunEvent(ctx.services, ctx.runId, 'step_retried', { seq, step: def.name, attempt, error: errorText(err) }),
        );
        const signal = runSignal(a);
        const backoff = stepRetryDelay(policy, attempt);
        await delay(ctx.services.stepHooks.retryDelayMs?.(backoff) ?? backoff, undefined, { signal }).catch(() => {
          ctx.throwIfStopped();
          if (forward && ctx.cancelling) throw ctx.cancelledError();
        });
        continue;
      }
      finished('FAILED');
      await recordCheckpoint(
        ctx,
        checkpointOf(a, 'FAILED', null, JSON.stringify(errorToJson(err, { step: def.name, seq, attempts: attempt }))),
      );
      throw err;
    }
  }
}

/** The step's code behind the testing kit's hook (which may throw to fail the attempt). */
function hooked(a: StepAttempt, hook: NonNullable<StepAttemptHooks['beforeAttempt']>, call: () => unknown): () => unknown {
  return () => {
    hook({ runId: a.ctx.runId, step: a.def.name, seq: a.seq, attempt: a.attempt });
    return call();
  };
}

/**
 * The step's code, then its checkpoint handed to the run's deferred checkpoints (`durable` settles
 * once it is written): the workflow gets the result at once, and what it does durably next waits
 * for the checkpoint (see deferred-checkpoints.ts).
 */
async function executePlain(a: StepAttempt): Promise<{ encoded: string; durable: Promise<void> }> {
  const { ctx } = a;
  const s = attemptSignal(a);
  // The step's code, started now; a synchronous throw is a rejection like any other.
  const running = (async () =>
    durableScope.run({ run: ctx, step: new StepScope(a, s.signal) }, () => ctx.services.telemetry.tracing.within(a.span, a.call)))();
  running.catch(() => {}); // settled below, or abandoned because the run stopped
  let output: unknown;
  try {
    output = s.timedOut ? await Promise.race([running, s.timedOut]) : await running;
  } catch (err) {
    if (err instanceof StepTimeoutError) await settled(a, running);
    throw err;
  } finally {
    s.done();
  }
  const encoded = encode(output, { where: a.where, maxBytes: ctx.services.options.maxPayloadBytes });
  const durable = ctx.checkpoints.defer(checkpointOf(a, 'SUCCEEDED', encoded, null));
  durable.catch(() => {}); // a failed write has stopped the execution
  return { encoded, durable };
}

/** The step's code and its checkpoint commit together, or neither does. */
async function executeTransactional(a: StepAttempt): Promise<string> {
  const { ctx, def } = a;
  const prisma = ctx.services.prisma;
  if (!prisma)
    throw new InvalidOptionsError(
      `${a.where} is transactional but the engine has no Prisma client; pass one (DurableModule option "prisma").`,
    );
  const signal = runSignal(a);
  // While the database is unreachable the transaction cannot even begin: that is retried like a
  // checkpoint write (the step's code has not run), not counted as one of the step's attempts.
  let entered = false;
  const notStarted = (err: unknown) => !entered && isConnectionError(err);
  try {
    return await retryingWrite(
      ctx,
      () =>
        prisma.$transaction(async (tx) => {
          entered = true;
          const settings = transactionSettings(ctx);
          if (settings) await setLocal(storeWithin(ctx.services.store, tx), settings);
          const output = await durableScope.run({ run: ctx, step: { name: def.name, seq: a.seq, tx, signal } }, () =>
            ctx.services.telemetry.tracing.within(a.span, a.call),
          );
          const encoded = encode(output, { where: a.where, maxBytes: ctx.services.options.maxPayloadBytes });
          // The lease moved on: throwing rolls the step's own writes back with the checkpoint (and its compensation).
          const within = storeWithin(ctx.services.store, tx);
          if (def.options.pivot && a.compensates === null) await writePivot(a, within, encoded);
          else if (!(await insertStep(within, checkpointOf(a, 'SUCCEEDED', encoded, null)))) throw ctx.leaseLost();
          return encoded;
        }, def.options.transaction),
      notStarted,
    );
  } catch (err) {
    if ((err as { code?: string }).code === 'P2028') throw new StepTransactionTimeoutError(def.name, errorText(err));
    throw err;
  }
}

/**
 * A pivot's checkpoint (see store/pivot.ts): refused when a compensating cancel committed first —
 * the run learns of the cancel now, and throwing rolls the pivot's writes back.
 */
async function writePivot(a: StepAttempt, store: Store, encoded: string): Promise<void> {
  const outcome = await insertPivotStep(store, checkpointOf(a, 'SUCCEEDED', encoded, null));
  if (outcome === 'written') return;
  if (outcome === 'lost') throw a.ctx.leaseLost();
  a.ctx.requestCancel();
  throw a.ctx.cancelledError();
}

/** A finished attempt's checkpoint, batched with other executions' (group commit); a dropped connection retries the write, not the step. */
export async function recordCheckpoint(ctx: RunContext, s: StepCheckpoint): Promise<void> {
  const written = await retryingWrite(ctx, () => ctx.services.writes.step(s));
  if (!written) throw ctx.leaseLost();
}

/**
 * What undoes the step, as stored with its checkpoint (JSON text): the compensation's name and, for
 * a method, the step's arguments (encoded now, before the step runs: arguments that cannot be stored
 * fail the step before it does anything). null when the step declares no compensation.
 */
function compensationRecord(ctx: RunContext, def: StepDefinition, seq: number, binding: StepBinding | undefined): string | null {
  const c = def.options.compensate;
  const pivot = def.options.pivot === true ? ',"pivot":true' : '';
  if (c === undefined) return pivot ? '{"pivot":true}' : null;
  if (typeof c === 'string') {
    const given = binding?.args ?? [];
    const missing = Math.max(0, (binding?.arity ?? 0) - given.length);
    const args = encode(missing ? [...given, ...new Array<undefined>(missing).fill(undefined)] : given, {
      where: `the arguments of step "${def.name}" (#${seq}) of run ${ctx.runId}, kept for its compensation "${c}"`,
      maxBytes: ctx.services.options.maxPayloadBytes,
    });
    return `{"by":${JSON.stringify(c)},"args":${args}${pivot}}`;
  }
  const fn = typeof c === 'function' ? c : c.run;
  return JSON.stringify({ by: fn.name || 'compensate', ...(pivot ? { pivot: true } : {}) });
}

/**
 * A completed step with a recorded compensation: the run keeps the compensation, ready to run. Its
 * code comes from the step's options (an inline function), or from the method the record names on
 * the step's instance (its own @Step options apply), called with the recorded arguments and the
 * step's result — the same values on the first execution and on every replay.
 */
function registerCompensation(
  ctx: RunContext,
  seq: number,
  def: StepDefinition,
  binding: StepBinding | undefined,
  rec: StepCompensation & { by: string },
  result: unknown,
): void {
  const name = `compensate:${def.name}`;
  const c = def.options.compensate;
  let compensation: Pick<PendingCompensation, 'def' | 'call'>;
  if (typeof c === 'function') compensation = { def: { name, options: {} }, call: () => c(result as never) };
  else if (c && typeof c === 'object') {
    const { run, ...options } = c;
    compensation = { def: { name, options }, call: () => run(result as never) };
  } else {
    const self = binding?.self as Record<string, unknown> | undefined;
    const target = self?.[rec.by];
    if (typeof target !== 'function') {
      compensation = {
        def: { name, options: { retries: 0 } },
        call: () => {
          throw new InvalidDefinitionError(
            `The compensation "${rec.by}" of step "${def.name}" (#${seq}) of run ${ctx.runId} is no longer in the code: ` +
              `restore it (a method of the step's class), or fork the run.`,
          );
        },
      };
    } else {
      const method = stepMethod(target);
      const args = decode(rec.args);
      const fn = method?.original ?? (target as (...a: unknown[]) => unknown);
      compensation = {
        def: { name, options: { ...(method?.def.options ?? {}), name: undefined, compensate: undefined } },
        call: () => fn.apply(self, [...(Array.isArray(args) ? args : []), result]),
      };
    }
  }
  ctx.compensations.set(seq, { seq, step: def.name, by: rec.by, ...compensation });
}

/** Durable.tx(): the Prisma transaction of the transactional step in scope. */
export function currentStepTransaction<T>(): T {
  const step = currentScope()?.step;
  if (!step?.tx) throw new NotInWorkflowError('Durable.tx()', 'a step marked @Step({ transactional: true })');
  return step.tx as T;
}
