import { setTimeout as delay } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { errorText } from '../errors/error-text.js';
import {
  InvalidOptionsError,
  NotInWorkflowError,
  PayloadTooLargeError,
  SerializationError,
  StepTransactionTimeoutError,
} from '../errors/index.js';
import { insertStep } from '../store/checkpoints.js';
import { isConnectionError } from '../store/connection-errors.js';
import type { RecordedStep, StepCheckpoint } from '../store/rows.js';
import { storeWithin } from '../store/store.js';
import { decode, encode, errorToJson, reviveError } from '../codec/codec.js';
import { resolveRetryPolicy } from '../config/retry-policy.js';
import type { StepDefinition } from '../definitions/definitions.js';
import { shouldRetry, stepRetryDelay } from '../retry/step-retries.js';
import { durableOperation, type Operation } from './durable-operation.js';
import { retryingWrite } from './retrying-write.js';
import { currentScope, durableScope, ExecutionStopped, type RunContext } from './run-context.js';
import { recordRunEvent } from './run-history.js';

/**
 * Called by every @Step() method (and Durable.step). Outside a workflow, or inside another step,
 * the method runs as a plain call. Inside a workflow it is a durable operation: the recorded
 * result is replayed, or the code runs with retries and its outcome is checkpointed (fenced by
 * the lease epoch).
 */
export function invokeStep(def: StepDefinition, call: () => unknown): unknown {
  const scope = currentScope();
  if (!scope || scope.step) return call();
  const step = durableOperation('a step', def.name, (op) => (op.recorded ? replayStep(op.recorded) : runStep(op, def, call)));
  scope.run.track(step); // the run's end waits for it even if the workflow never awaits it
  return step;
}

function replayStep(recorded: RecordedStep): unknown {
  if (recorded.status === 'SUCCEEDED') return decode(recorded.output);
  throw reviveError((recorded.error ?? { message: 'step failed' }) as Record<string, unknown>);
}

async function runStep(op: Operation, def: StepDefinition, call: () => unknown): Promise<unknown> {
  // A step executing: the run cannot suspend on its other waits meanwhile (see wait-set.ts).
  const done = op.ctx.enterWork();
  try {
    return await executeStep(op.ctx, def, op.seq, call);
  } finally {
    done();
  }
}

/** One attempt of a step's execution. */
interface StepAttempt {
  ctx: RunContext;
  def: StepDefinition;
  seq: number;
  call: () => unknown;
  attempt: number;
  /** When the step's first attempt started (performance.now()). */
  started: number;
  /** "step "name" (#seq) of run id", for messages. */
  where: string;
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
});

async function executeStep(ctx: RunContext, def: StepDefinition, seq: number, call: () => unknown): Promise<unknown> {
  const { options } = ctx.services;
  const policy = resolveRetryPolicy(options.stepRetries, def.options.retries);
  const where = `step "${def.name}" (#${seq}) of run ${ctx.runId}`;
  const started = performance.now();
  for (let attempt = 1; ; attempt++) {
    ctx.throwIfStopped();
    const a: StepAttempt = { ctx, def, seq, call, attempt, started, where };
    try {
      const encoded = def.options.transactional ? await executeTransactional(a) : await executePlain(a);
      return decode(JSON.parse(encoded));
    } catch (err) {
      if (err instanceof ExecutionStopped || ctx.stopped) throw ctx.stopped ? new ExecutionStopped(ctx.stopped) : err;
      const final = err instanceof SerializationError || err instanceof PayloadTooLargeError || !shouldRetry(policy, attempt, err);
      if (!final) {
        options.logger.warn(`${where} failed (attempt ${attempt}/${policy.maxAttempts}), retrying: ${errorText(err)}`);
        recordRunEvent(ctx.services, ctx.runId, 'step_retried', { seq, step: def.name, attempt, error: errorText(err) });
        await delay(stepRetryDelay(policy, attempt), undefined, { signal: ctx.abort.signal }).catch(() => ctx.throwIfStopped());
        continue;
      }
      await checkpoint(ctx, checkpointOf(a, 'FAILED', null, JSON.stringify(errorToJson(err, { step: def.name, seq, attempts: attempt }))));
      throw err;
    }
  }
}

async function executePlain(a: StepAttempt): Promise<string> {
  const output = await durableScope.run({ run: a.ctx, step: { name: a.def.name, seq: a.seq } }, a.call);
  const encoded = encode(output, { where: a.where, maxBytes: a.ctx.services.options.maxPayloadBytes });
  await checkpoint(a.ctx, checkpointOf(a, 'SUCCEEDED', encoded, null));
  return encoded;
}

/** The step's code and its checkpoint commit together, or neither does. */
async function executeTransactional(a: StepAttempt): Promise<string> {
  const { ctx, def } = a;
  const prisma = ctx.services.prisma;
  if (!prisma)
    throw new InvalidOptionsError(
      `${a.where} is transactional but the engine has no Prisma client; pass one (DurableModule option "prisma").`,
    );
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
          const output = await durableScope.run({ run: ctx, step: { name: def.name, seq: a.seq, tx } }, a.call);
          const encoded = encode(output, { where: a.where, maxBytes: ctx.services.options.maxPayloadBytes });
          // The lease moved on: throwing rolls the step's own writes back with the checkpoint.
          if (!(await insertStep(storeWithin(ctx.services.store, tx), checkpointOf(a, 'SUCCEEDED', encoded, null)))) throw ctx.leaseLost();
          return encoded;
        }, def.options.transaction),
      notStarted,
    );
  } catch (err) {
    if ((err as { code?: string }).code === 'P2028') throw new StepTransactionTimeoutError(def.name, errorText(err));
    throw err;
  }
}

/** A finished attempt's checkpoint, batched with other executions' (group commit); a dropped connection retries the write, not the step. */
async function checkpoint(ctx: RunContext, s: StepCheckpoint): Promise<void> {
  const written = await retryingWrite(ctx, () => ctx.services.writes.step(s));
  if (!written) throw ctx.leaseLost();
}

/** Durable.tx(): the Prisma transaction of the transactional step in scope. */
export function currentStepTransaction<T>(): T {
  const step = currentScope()?.step;
  if (!step?.tx) throw new NotInWorkflowError('Durable.tx()', 'a step marked @Step({ transactional: true })');
  return step.tx as T;
}
