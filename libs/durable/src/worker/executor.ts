import { errorText } from '../errors/error-text.js';
import { TooManyRecoveriesError } from '../errors/index.js';
import type { ClaimedRun } from '../store/rows.js';
import { decode, encode, errorToJson } from '../codec/codec.js';
import { retryingWrite } from '../workflow/retrying-write.js';
import type { WorkflowRegistry } from '../definitions/registry.js';
import { durableScope, ExecutionStopped, RunContext } from '../workflow/run-context.js';
import type { ExecutionServices } from '../workflow/execution-services.js';

export type ExecutionOutcome = 'SUCCEEDED' | 'FAILED' | 'stopped';

/**
 * Executes one claimed run: replays the workflow from the top inside a run context, then
 * writes its end (fenced). Never throws: database errors leave the run RUNNING and the
 * sweeper hands it to another worker when the lease expires.
 */
export async function executeRun(
  run: ClaimedRun,
  ctx: RunContext,
  registry: WorkflowRegistry,
  services: ExecutionServices,
): Promise<ExecutionOutcome> {
  const { logger, maxPayloadBytes, maxRecoveryAttempts } = services.options;
  const where = `run ${run.id} (${run.workflowName})`;
  let status: 'SUCCEEDED' | 'FAILED';
  let output: string | null = null;
  let error: string | null = null;
  try {
    if (run.attempt > maxRecoveryAttempts) {
      throw new TooManyRecoveriesError(run.id, run.attempt, maxRecoveryAttempts, where);
    }
    const def = registry.get(run.workflowName);
    // Pending durable waits end with the workflow (a statement still in flight may suspend the run).
    const result = await durableScope.run({ run: ctx }, () => def.run(decode(run.input))).finally(() => ctx.waits?.close());
    // Steps the workflow started without awaiting them end (and are checkpointed) before the run does.
    await ctx.settled();
    if (ctx.fatal) throw ctx.fatal;
    ctx.throwIfStopped();
    output = encode(result, { where: `output of ${where}`, maxBytes: maxPayloadBytes });
    status = 'SUCCEEDED';
  } catch (thrown) {
    await ctx.settled();
    const err = ctx.fatal ?? thrown;
    if (ctx.stopped || err instanceof ExecutionStopped) {
      logger.debug?.(`${where} stopped: ${ctx.stopped ?? (err as ExecutionStopped).reason}`);
      return 'stopped';
    }
    status = 'FAILED';
    error = JSON.stringify(errorToJson(err));
  }
  try {
    return await finish(run, ctx, services, status, output, error);
  } catch (writeErr) {
    logger.error(`${where}: could not record its end (${errorText(writeErr)}); another worker will replay it after the lease expires`);
    return 'stopped';
  }
}

async function finish(
  run: ClaimedRun,
  ctx: RunContext,
  services: ExecutionServices,
  status: 'SUCCEEDED' | 'FAILED',
  output: string | null,
  error: string | null,
): Promise<ExecutionOutcome> {
  const written = await ctx.releasing(() =>
    retryingWrite(ctx, () => services.writes.end({ runId: run.id, epoch: run.epoch, status, output, error })),
  );
  if (!written) {
    ctx.stop('lease-lost');
    services.options.logger.warn(`run ${run.id}: lease lost before it could be marked ${status}; its new owner decides`);
    return 'stopped';
  }
  if (status === 'FAILED') services.options.logger.warn(`run ${run.id} (${run.workflowName}) FAILED: ${JSON.parse(error!).message}`);
  return status;
}
