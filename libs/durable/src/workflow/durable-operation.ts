import { DeterminismError, NotInWorkflowError } from '../errors/index.js';
import type { RecordedStep } from '../store/rows.js';
import { currentScope, type RunContext } from './run-context.js';
import { retryingWrite } from './retrying-write.js';

/**
 * One durable operation of a workflow, as its helper sees it: the execution, the position the
 * operation takes in the run (its step sequence number), and what was recorded there by an
 * earlier execution of the run, if anything.
 */
export interface Operation {
  ctx: RunContext;
  seq: number;
  name: string;
  /** The checkpoint at this position (same name; a different name is a determinism error). */
  recorded: RecordedStep | undefined;
}

/**
 * The primitive every durable helper is built on (@Step methods, sleep, recv, send, setEvent,
 * startChild, now/random/uuid): take the operation's position in the run — synchronously, at call
 * time, so parallel calls (Promise.all) get the same positions on every replay — matching it to the
 * run's checkpoints (step-matcher.ts: removed steps are skipped, changed or reordered ones are a
 * DeterminismError), and hand the operation to `body`, which replays
 * the recorded result or does the work and records it. Outside workflow code (no run in scope, or
 * inside a step, which may run more than once) it throws NotInWorkflowError naming `api`.
 * While the run is being cancelled with compensation, an operation of the workflow (`kind`
 * 'forward') that is not recorded as done throws WorkflowCancelledError instead (the same happens
 * on every replay, so the workflow unwinds at the same place); compensations ('compensation') run.
 * Synchronous throws come back as a rejected promise (safe inside Promise.all).
 */
export function durableOperation<T>(
  api: string,
  name: string,
  body: (op: Operation) => T | Promise<T>,
  kind: 'forward' | 'compensation' = 'forward',
): Promise<T> {
  try {
    const ctx = workflowContext(api);
    const { seq, recorded } = matched(ctx, name);
    ctx.throwIfStopped();
    if (kind === 'forward' && ctx.cancelling && (!recorded || recorded.status === 'WAITING')) throw ctx.cancelledError();
    // Replay only: an operation the run has not completed is where the replay ends.
    if (ctx.replayOnly && (!recorded || recorded.status === 'WAITING')) return ctx.reachFrontier<T>(seq, name);
    const op = { ctx, seq, name, recorded };
    // A step completed just before and its checkpoint is not written yet: it is, before this operation does anything.
    if (ctx.checkpoints.pending)
      return ctx.checkpoints.flush().then(() => {
        ctx.throwIfStopped();
        return body(op);
      });
    return Promise.resolve(body(op));
  } catch (err) {
    return Promise.reject(err);
  }
}

/** The run context of workflow code; inside a step (which may run more than once) a durable operation cannot be recorded. */
export function workflowContext(api: string): RunContext {
  const scope = currentScope();
  if (!scope) throw new NotInWorkflowError(api);
  if (scope.step) {
    throw new NotInWorkflowError(
      api,
      `workflow code, not inside a step (step "${scope.step.name}" may run more than once, so it cannot record a durable operation)`,
    );
  }
  return scope.run;
}

/** The operation's position and checkpoint; a determinism error fails the run even if the workflow catches it. */
function matched(ctx: RunContext, name: string): { seq: number; recorded: RecordedStep | undefined } {
  try {
    return ctx.match(name);
  } catch (err) {
    if (err instanceof DeterminismError) ctx.fatal ??= err;
    throw err;
  }
}

/**
 * Runs an operation's fenced statement (one that records the operation and does its effect
 * together): counted as work in flight (the run does not suspend meanwhile), a dropped
 * connection retried, and a statement that no longer finds the run held by this execution
 * (`held: false`) stops the execution.
 */
export async function fencedWrite<R extends { held: boolean }>(ctx: RunContext, write: () => Promise<R>): Promise<R> {
  const done = ctx.enterWork();
  try {
    const r = await retryingWrite(ctx, write);
    if (!r.held) throw ctx.leaseLost();
    ctx.throwIfStopped();
    return r;
  } finally {
    done();
  }
}
