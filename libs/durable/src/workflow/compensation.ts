import { CompensationFailedError, NotInWorkflowError } from '../errors/index.js';
import { errorToJson } from '../codec/codec.js';
import { insertRunEvent } from '../store/history.js';
import { errorText } from '../errors/error-text.js';
import { currentScope, ExecutionStopped, type RunContext } from './run-context.js';
import { invokeCompensation } from './step-runner.js';
import { pivotOf } from './pivot.js';

/** Why compensations run: the workflow failed, the run is cancelled with compensation, or the workflow asked (Durable.compensate()). */
export type CompensationReason = 'failed' | 'cancelled' | 'requested';

/**
 * Runs the compensations of the steps completed so far that have not been compensated yet, newest
 * step first (reverse step order), each as a durable step of the run (`compensate:<step>`, appended
 * after the last position; its own retries, timeout, transaction). A replay replays the ones
 * recorded, so each transactional compensation commits once. The first compensation that fails
 * stops the others (older steps stay as they are) and throws CompensationFailedError. Returns how
 * many ran (or were replayed).
 */
export async function runCompensations(ctx: RunContext, reason: CompensationReason): Promise<number> {
  if (ctx.compensationFailed) return 0;
  await ctx.settled(); // steps still running may complete (and bring a compensation)
  await ctx.checkpoints.flush(); // completed steps are recorded before what undoes them
  // Past its pivot a run is finished forward, never undone (only the workflow's own Durable.compensate() still undoes).
  if (reason !== 'requested' && pivotOf(ctx)) return 0;
  const missing = unreachable(ctx);
  const pending = [...ctx.compensations.values()].sort((a, b) => b.seq - a.seq);
  if (!pending.length && !missing) return 0;
  let announced = false;
  let count = 0;
  for (const c of pending) {
    if (missing && missing.seq > c.seq) break;
    ctx.compensations.delete(c.seq);
    if (!announced && !ctx.recordedStep(ctx.position)) {
      // The first compensation this execution does (not a replay of a recorded one).
      announced = true;
      await history(ctx, 'compensating', { reason, steps: pending.map((p) => p.seq) });
    }
    try {
      await invokeCompensation(c);
      count++;
    } catch (err) {
      if (err instanceof ExecutionStopped || ctx.stopped) throw ctx.stopped ? new ExecutionStopped(ctx.stopped) : err;
      ctx.compensationFailed = true;
      throw new CompensationFailedError(ctx.runId, c.step, c.seq, errorToJson(err));
    }
  }
  if (missing && !ctx.compensationFailed) {
    ctx.compensationFailed = true;
    throw new CompensationFailedError(ctx.runId, missing.name, missing.seq, {
      message:
        'the workflow did not reach this step when it was replayed, so its compensation could not be found (did the workflow code change?)',
    });
  }
  if (announced) await history(ctx, 'compensated', { reason, count });
  return count;
}

/**
 * A step recorded with a compensation that this execution neither registered (by replaying the
 * step) nor compensated: the replay did not reach it. The newest such step, or null.
 */
function unreachable(ctx: RunContext): { seq: number; name: string } | null {
  const undone = new Set(ctx.compensated);
  for (const s of ctx.recordedSteps()) if (s.compensates != null) undone.add(s.compensates);
  let found: { seq: number; name: string } | null = null;
  for (const s of ctx.recordedSteps()) {
    if (s.compensation?.by && s.status === 'SUCCEEDED' && !undone.has(s.seq) && !ctx.compensations.has(s.seq))
      found = { seq: s.seq, name: s.name };
  }
  return found;
}

/** Durable.compensate() — see durable-api.ts. */
export function compensateNow(): Promise<number> {
  const scope = currentScope();
  if (!scope) return Promise.reject(new NotInWorkflowError('Durable.compensate()'));
  if (scope.step) {
    return Promise.reject(
      new NotInWorkflowError('Durable.compensate()', `workflow code, not inside a step (step "${scope.step.name}" may run more than once)`),
    );
  }
  return runCompensations(scope.run, 'requested');
}

/** History rows of a compensation (a rare path: one statement each); never fails the run. */
async function history(ctx: RunContext, kind: string, detail: Record<string, unknown>): Promise<void> {
  if (ctx.replayOnly) return; // a replay writes nothing
  await insertRunEvent(ctx.services.store, ctx.runId, kind, detail).catch((err: Error) => {
    ctx.services.options.logger.debug?.(`run ${ctx.runId}: could not record history event "${kind}" (${errorText(err)})`);
  });
}
