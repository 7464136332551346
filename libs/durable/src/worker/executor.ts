import { callUserCode } from '../errors/describe-thrown.js';
import { errorText } from '../errors/error-text.js';
import { DeadlineExceededError, DeterminismError, TooManyRecoveriesError } from '../errors/index.js';
import type { EndResult } from '../store/checkpoints.js';
import type { ClaimedRun } from '../store/rows.js';
import { decode, encode, errorToJson } from '../codec/codec.js';
import { retryingWrite } from '../workflow/retrying-write.js';
import type { WorkflowRegistry } from '../definitions/registry.js';
import { runCompensations } from '../workflow/compensation.js';
import { durableScope, ExecutionStopped, RunContext } from '../workflow/run-context.js';
import type { ExecutionServices } from '../workflow/execution-services.js';
import { ATTR } from '../telemetry/tracing.js';
import { withinAppContext } from '../workflow/app-context.js';

export type ExecutionOutcome = 'SUCCEEDED' | 'FAILED' | 'CANCELLED' | 'stopped';

type EndStatus = 'SUCCEEDED' | 'FAILED' | 'CANCELLED';

/**
 * Executes one claimed run: replays the workflow from the top inside a run context, runs the
 * compensations of its completed steps if it failed or is being cancelled with compensation, then
 * writes its end (fenced). Never throws: database errors leave the run RUNNING and the sweeper
 * hands it to another worker when the lease expires.
 */
export async function executeRun(
  run: ClaimedRun,
  ctx: RunContext,
  registry: WorkflowRegistry,
  services: ExecutionServices,
  queue = '',
): Promise<ExecutionOutcome> {
  const { tracing, metrics } = services.telemetry;
  // One span per execution, continuing the trace the run was started in; the workflow runs inside it.
  const span = tracing.startRun(run, queue, services.options.workerId);
  ctx.span = span;
  // With a context (engine option `context`), the whole execution runs inside the app's restore.
  let outcome: ExecutionOutcome;
  try {
    if (run.context != null) ctx.appContext = decode(run.context);
    outcome = await tracing.withinRun(span, () => withinAppContext(ctx, () => execute(run, ctx, registry, services)));
  } catch (err) {
    // Only the context's decoding or the option's restore can throw here (execute never does): the run is tried again after its lease, like a crash.
    services.options.logger.error(`run ${run.id} (${run.workflowName}): the context option's restore failed: ${errorText(err)}`);
    outcome = 'stopped';
  }
  if (outcome === 'stopped') tracing.end(span, ctx.suspended ? 'suspended' : (ctx.stopped ?? 'stopped'));
  else {
    if (outcome === 'FAILED') tracing.failed(span, ctx.failure, ATTR.outcome, outcome);
    else tracing.ok(span, outcome);
    metrics.runFinished(run.workflowName, outcome);
  }
  return outcome;
}

async function execute(
  run: ClaimedRun,
  ctx: RunContext,
  registry: WorkflowRegistry,
  services: ExecutionServices,
): Promise<ExecutionOutcome> {
  const { logger, maxPayloadBytes, maxRecoveryAttempts } = services.options;
  const where = `run ${run.id} (${run.workflowName})`;
  // cancel(id, { compensate: true }): the workflow replays up to what it had done, then unwinds.
  // A run past its deadline with compensations to run unwinds the same way, then ends FAILED.
  if (run.cancelRequested) ctx.requestCancel();
  else if (run.failing) ctx.requestFail(new DeadlineExceededError(run.id, run.failing.message));
  let status: EndStatus;
  let output: string | null = null;
  let failure: unknown = null;
  try {
    if (run.attempt > maxRecoveryAttempts) {
      throw new TooManyRecoveriesError(run.id, run.attempt, maxRecoveryAttempts, where);
    }
    const def = registry.get(run.workflowName);
    // Pending durable waits end with the workflow (a statement still in flight may suspend the run).
    const result = await durableScope
      .run({ run: ctx }, () => callUserCode(() => def.run(decode(run.input))))
      .finally(() => ctx.waits?.close());
    // Steps the workflow started without awaiting them end (and are checkpointed) before the run does.
    await ctx.settled();
    if (ctx.fatal) throw ctx.fatal;
    ctx.throwIfStopped();
    if (ctx.failing) {
      status = 'FAILED';
      failure = ctx.failing;
    } else if (ctx.cancelling) status = 'CANCELLED';
    else {
      output = encode(result, { where: `output of ${where}`, maxBytes: maxPayloadBytes });
      status = 'SUCCEEDED';
    }
  } catch (thrown) {
    await ctx.settled();
    const err = ctx.fatal ?? thrown;
    if (ctx.stopped || err instanceof ExecutionStopped) return stopped(ctx, where, err);
    if (ctx.cancelling && !ctx.fatal && !ctx.failing) status = 'CANCELLED';
    else {
      status = 'FAILED';
      failure = ctx.fatal ? err : (ctx.failing ?? err);
    }
  }
  try {
    for (;;) {
      // A failed or cancelled run undoes what its steps did (not a non-deterministic one: its replay
      // does not match the code, so neither would the compensations; fix the code and resume it).
      if (status !== 'SUCCEEDED' && !(ctx.fatal instanceof DeterminismError)) {
        try {
          await durableScope.run({ run: ctx }, () => runCompensations(ctx, status === 'CANCELLED' ? 'cancelled' : 'failed'));
        } catch (err) {
          if (ctx.stopped || err instanceof ExecutionStopped) return stopped(ctx, where, err);
          status = 'FAILED';
          failure = err;
        }
      }
      const error = status === 'FAILED' ? JSON.stringify(errorToJson(failure)) : null;
      if (status === 'FAILED') ctx.failure = failure;
      // A workflow whose runs are not kept: a top-level run that succeeds is deleted by its end (a child is kept: its parent reads its result from its row).
      const notKept =
        status === 'SUCCEEDED' &&
        run.parentId === null &&
        registry.has(run.workflowName) &&
        registry.get(run.workflowName).options.deleteOnSuccess === true;
      const end = await finish(run, ctx, services, status, output, error, notKept);
      if (end !== 'cancelling') return end;
      // Cancelled with compensation before its end could be recorded: compensate, then end CANCELLED.
      ctx.slot?.resumed();
      ctx.requestCancel();
      status = 'CANCELLED';
      output = null;
    }
  } catch (writeErr) {
    if (ctx.stopped || writeErr instanceof ExecutionStopped) return stopped(ctx, where, writeErr);
    logger.error(`${where}: could not record its end (${errorText(writeErr)}); another worker will replay it after the lease expires`);
    return 'stopped';
  } finally {
    ctx.progress?.close();
  }
}

function stopped(ctx: RunContext, where: string, err: unknown): 'stopped' {
  ctx.progress?.close();
  ctx.services.options.logger.debug?.(`${where} stopped: ${ctx.stopped ?? (err as ExecutionStopped).reason}`);
  return 'stopped';
}

async function finish(
  run: ClaimedRun,
  ctx: RunContext,
  services: ExecutionServices,
  status: EndStatus,
  output: string | null,
  error: string | null,
  notKept: boolean,
): Promise<ExecutionOutcome | 'cancelling'> {
  // The last steps' checkpoints not written yet go with the end, in its statement; those in flight are written first.
  const carried = ctx.checkpoints.take();
  let end: EndResult;
  // The code is done: the next run may have the slot while the end is written.
  ctx.slot?.ending();
  try {
    if (ctx.checkpoints.pending) await ctx.checkpoints.flush();
    // A history row still on its way (a retried step's) is written before the end's: the run's history ends with
    // its end, in the order hooks deliver it, and a row written after an end that deletes the run would outlive it.
    const history = ctx.historyInFlight;
    if (history) await history;
    if (notKept) {
      // This process's handles find the output before the row is gone (the end commits before its answer arrives).
      services.runDeleted?.(run.id, output!);
    }
    end = await ctx.releasing(() =>
      retryingWrite(ctx, () =>
        services.writes.end({
          runId: run.id,
          epoch: run.epoch,
          status,
          output,
          error,
          steps: carried.steps,
          parentId: run.parentId,
          delete: notKept,
        }),
      ),
    );
  } catch (err) {
    carried.fail(err);
    throw err;
  }
  carried.settle(end !== 'lost');
  if (end === 'cancelling') return 'cancelling';
  if (end === 'lost') {
    ctx.stop('lease-lost');
    services.options.logger.warn(
      `run ${run.id} (${run.workflowName}): lease lost before it could be marked ${status}; its new owner decides`,
    );
    return 'stopped';
  }
  services.runEnded?.(run.id, { status, output, error });
  if (status === 'FAILED') services.options.logger.warn(`run ${run.id} (${run.workflowName}) FAILED: ${JSON.parse(error!).message}`);
  return status;
}
