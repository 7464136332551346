import { checkKey } from '../config/limits.js';
import { workflowContext } from './durable-operation.js';
import { recordCheckpoint } from './step-runner.js';
import { patchStepName } from './step-matcher.js';

/**
 * Durable.patched(id) — see durable-api.ts. A run that reaches the call with this code records the
 * marker `durable.patch:<id>` at that position (like a step, group-committed) and gets true, on
 * every replay too; a run that went past this point before the patch existed gets false, and the
 * marker takes no position there, so the old code path replays against what it recorded.
 */
export function patched(id: string): Promise<boolean> {
  try {
    checkKey('Durable.patched()', 'id', id);
    const ctx = workflowContext('Durable.patched()');
    const name = patchStepName(id);
    const m = ctx.matchPatch(name);
    ctx.throwIfStopped();
    if (!m) return Promise.resolve(false);
    if (m.recorded || ctx.replayOnly) return Promise.resolve(true);
    if (ctx.cancelling) throw ctx.cancelledError();
    const done = ctx.enterWork(); // the run does not suspend while its marker is being written
    return recordCheckpoint(ctx, {
      runId: ctx.runId,
      epoch: ctx.epoch,
      seq: m.seq,
      name,
      status: 'SUCCEEDED',
      output: 'true',
      error: null,
      attempts: 1,
      durationMs: 0,
      compensation: null,
      compensates: null,
    })
      .then(() => true)
      .finally(done);
  } catch (err) {
    return Promise.reject(err);
  }
}
