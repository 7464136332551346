import { errorText } from './error-text.js';
import { setTimeout as delay } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { DeterminismError, DurableError, NotInWorkflowError, SerializationError, PayloadTooLargeError, StepTransactionTimeoutError } from '../errors/index.js';
import { runStore } from '../store/run-store.js';
import { prismaSqlClient } from '../store/sql-client.js';
import { decode, encode, errorToJson, reviveError } from './codec.js';
import { isConnectionError, retryingWrite } from './db-errors.js';
import type { StepDefinition } from './definitions.js';
import { backoffDelay, resolveRetryPolicy, shouldRetry } from './retry.js';
import { currentScope, durableScope, ExecutionStopped, type RunContext } from './run-context.js';
import { recordRunEvent } from './run-events.js';

/**
 * Called by every @Step() method. Outside a workflow, or inside another step, the method
 * runs as a plain call. Inside a workflow: replay the recorded result, or execute with
 * retries and checkpoint the outcome (fenced by the lease epoch).
 */
export function invokeStep(def: StepDefinition, call: () => unknown): unknown {
  const scope = currentScope();
  if (!scope || scope.step) return call();
  const ctx = scope.run;
  // The sequence number is taken synchronously, before any await: parallel calls
  // (Promise.all) get the same numbers on every replay.
  const seq = ctx.takeSeq();
  const step = runStep(ctx, def, seq, call);
  ctx.track(step); // the run's end waits for it even if the workflow never awaits it
  return step;
}

async function runStep(ctx: RunContext, def: StepDefinition, seq: number, call: () => unknown): Promise<unknown> {
  ctx.throwIfStopped();
  const recorded = ctx.recordedStep(seq);
  if (recorded) {
    if (recorded.name !== def.name) {
      ctx.fatal = new DeterminismError(ctx.runId, seq, recorded.name, def.name);
      throw ctx.fatal;
    }
    if (recorded.status === 'SUCCEEDED') return decode(recorded.output);
    throw reviveError((recorded.error ?? { message: 'step failed' }) as Record<string, unknown>);
  }
  // A step executing: the run cannot suspend on its other waits meanwhile (see wait-set.ts).
  const done = ctx.enterWork();
  try {
    return await executeStep(ctx, def, seq, call);
  } finally {
    done();
  }
}

async function executeStep(ctx: RunContext, def: StepDefinition, seq: number, call: () => unknown): Promise<unknown> {
  const { options } = ctx.services;
  const policy = resolveRetryPolicy(options.stepRetries, def.options.retries);
  const where = `step "${def.name}" (#${seq}) of run ${ctx.runId}`;
  const started = performance.now();
  for (let attempt = 1; ; attempt++) {
    ctx.throwIfStopped();
    try {
      const encoded = def.options.transactional
        ? await executeTransactional(ctx, def, seq, call, attempt, started, where)
        : await executePlain(ctx, def, seq, call, attempt, started, where);
      return decode(JSON.parse(encoded));
    } catch (err) {
      if (err instanceof ExecutionStopped || ctx.stopped) throw ctx.stopped ? new ExecutionStopped(ctx.stopped) : err;
      const final = err instanceof SerializationError || err instanceof PayloadTooLargeError || !shouldRetry(policy, attempt, err);
      if (!final) {
        options.logger.warn(`${where} failed (attempt ${attempt}/${policy.maxAttempts}), retrying: ${errorText(err)}`);
        recordRunEvent(ctx.services, ctx.runId, 'step_retried', { seq, step: def.name, attempt, error: errorText(err) });
        await delay(backoffDelay(policy, attempt), undefined, { signal: ctx.abort.signal }).catch(() => ctx.throwIfStopped());
        continue;
      }
      await checkpoint(ctx, {
        seq, name: def.name, status: 'FAILED', output: null,
        error: JSON.stringify(errorToJson(err, { step: def.name, seq, attempts: attempt })),
        attempts: attempt, durationMs: performance.now() - started,
      });
      throw err;
    }
  }
}

async function executePlain(ctx: RunContext, def: StepDefinition, seq: number, call: () => unknown, attempt: number, started: number, where: string): Promise<string> {
  const output = await durableScope.run({ run: ctx, step: { name: def.name, seq } }, call);
  const encoded = encode(output, { where, maxBytes: ctx.services.options.maxPayloadBytes });
  await checkpoint(ctx, { seq, name: def.name, status: 'SUCCEEDED', output: encoded, error: null, attempts: attempt, durationMs: performance.now() - started });
  return encoded;
}

/** The step's code and its checkpoint commit together, or neither does. */
async function executeTransactional(ctx: RunContext, def: StepDefinition, seq: number, call: () => unknown, attempt: number, started: number, where: string): Promise<string> {
  const prisma = ctx.services.prisma;
  if (!prisma) {
    throw new DurableError('NO_PRISMA', `${where} is transactional but the engine has no Prisma client; pass one (DurableModule option "prisma").`);
  }
  // While the database is unreachable the transaction cannot even begin: that is retried like a
  // checkpoint write (the step's code has not run), not counted as one of the step's attempts.
  let entered = false;
  const notStarted = (err: unknown) => !entered && isConnectionError(err);
  try {
    return await retryingWrite(ctx, () => prisma.$transaction(async (tx) => {
      entered = true;
      const output = await durableScope.run({ run: ctx, step: { name: def.name, seq, tx } }, call);
      const encoded = encode(output, { where, maxBytes: ctx.services.options.maxPayloadBytes });
      const written = await runStore.insertStep(prismaSqlClient(tx), {
        runId: ctx.runId, epoch: ctx.epoch, seq, name: def.name, status: 'SUCCEEDED', output: encoded, error: null,
        attempts: attempt, durationMs: performance.now() - started,
      });
      // The lease moved on: throwing rolls the step's own writes back with the checkpoint.
      if (!written) throw leaseLost(ctx);
      return encoded;
    }, def.options.transaction), notStarted);
  } catch (err) {
    if ((err as { code?: string }).code === 'P2028') throw new StepTransactionTimeoutError(def.name, errorText(err));
    throw err;
  }
}

async function checkpoint(ctx: RunContext, s: { seq: number; name: string; status: 'SUCCEEDED' | 'FAILED'; output: string | null; error: string | null; attempts: number; durationMs: number }): Promise<void> {
  // A dropped connection retries the write, not the step's code (see retryingWrite).
  const written = await retryingWrite(ctx, () => ctx.services.writes.step({ runId: ctx.runId, epoch: ctx.epoch, ...s }));
  if (!written) throw leaseLost(ctx);
}

function leaseLost(ctx: RunContext): ExecutionStopped {
  ctx.stop('lease-lost');
  return new ExecutionStopped('lease-lost');
}

/** Durable.tx(): the Prisma transaction of the transactional step in scope. */
export function currentStepTransaction<T>(): T {
  const step = currentScope()?.step;
  if (!step?.tx) throw new NotInWorkflowError('Durable.tx()', 'a step marked @Step({ transactional: true })');
  return step.tx as T;
}
