import {
  IllegalTransitionError,
  InvalidArgumentError,
  KeyConflictError,
  keyConflictOf,
  PivotPassedError,
  RunNotFoundError,
  UnknownWorkflowError,
} from '../errors/index.js';
import { cancelTree, cancelTreeCompensating, forkRun, forkSource, resumeRun, type CompensatingCancel } from '../store/control.js';
import { runStatus } from '../store/runs.js';
import { idBeside } from '../store/store.js';
import type { EngineContext } from './engine-context.js';
import { checkForkPoint } from './fork-plan.js';

/** What fork() created. */
export interface ForkResult {
  id: string;
  forkedFrom: string;
  fromStep: number;
  copiedSteps: number;
  workflowName: string;
}

/** Options of resume() and fork(), and part of cancel()'s. */
export interface ControlOptions {
  /**
   * Who asks (a user id, "support:jane", "deploy-script"): recorded in the run's history with the
   * action (the admin API passes the request's user). At most 200 characters.
   */
  actor?: string;
}

/** Options of cancel(). */
export interface CancelOptions extends ControlOptions {
  /**
   * Undo what the run did before it ends: the compensations of its completed steps run (newest
   * first, as durable steps with their retries), then the run ends CANCELLED. Until then it stays
   * unfinished (getRun shows cancelRequestedAt). Its unfinished children (option cancelChildren)
   * are cancelled the same way. Default false: the run ends CANCELLED at once, nothing is undone.
   */
  compensate?: boolean;
  /**
   * With `compensate: true`, what to do with a run that has passed its pivot (a step marked
   * `@Step({ pivot: true })` whose checkpoint committed): 'refuse' (default) throws a
   * PivotPassedError and changes nothing; 'stop' cancels it without undoing anything (like a cancel
   * without compensate). Decided under the run's lock, atomically with the pivot's checkpoint.
   */
  afterPivot?: 'refuse' | 'stop';
}

/**
 * Cancels an unfinished run (idempotent for a CANCELLED one, or one already cancelling), and its
 * unfinished child runs unless the option cancelChildren is false. An executing run stops at its
 * next step boundary; its running step sees Durable.signal() abort. With `compensate: true` the
 * run (and each child) first runs the compensations of its completed steps (see CancelOptions).
 */
export async function cancel(e: EngineContext, id: string, opts: CancelOptions = {}): Promise<void> {
  if (!opts || typeof opts !== 'object' || (opts.compensate !== undefined && typeof opts.compensate !== 'boolean')) {
    throw new InvalidArgumentError(
      `cancel(): the options must be an object { compensate?: boolean, afterPivot?: 'refuse' | 'stop', actor?: string } (got ${JSON.stringify(opts)?.slice(0, 80)}).`,
      'compensate',
    );
  }
  if (opts.afterPivot !== undefined && opts.afterPivot !== 'refuse' && opts.afterPivot !== 'stop') {
    throw new InvalidArgumentError(
      `cancel(): option "afterPivot" must be 'refuse' (the default: a run past its pivot is not cancelled) or 'stop' (it is cancelled without compensating) (got ${JSON.stringify(opts.afterPivot)?.slice(0, 80)}).`,
      'afterPivot',
    );
  }
  const actor = actorOf('cancel', opts);
  const cascade = e.options.cancelChildren;
  const once = opts.compensate
    ? async () => refusedAtPivot(id, await cancelTreeCompensating(e.store, id, cascade, actor, opts.afterPivot ?? 'refuse'))
    : async () => (await cancelTree(e.store, id, cascade, actor)).map((c) => ({ id: c, outcome: 'cancelled' as const }));
  const runs = await retryingDeadlocks(once);
  if (cascade && runs.some((r) => r.id === id)) {
    // Children whose creation committed while the first statement waited for the parent's row
    // were not in its snapshot; a second pass (a new snapshot) cancels them too.
    runs.push(...(await retryingDeadlocks(once)));
  }
  for (const r of runs) {
    if (r.outcome === 'cancelling') e.worker.cancelRequested(r.id);
    else {
      e.worker.cancelled(r.id);
      e.local.resolve(r.id);
    }
  }
  if (runs.some((r) => r.id === id)) return;
  const status = await runStatus(e.store, id);
  if (!status) throw new RunNotFoundError(id);
  if (status !== 'CANCELLED') throw new IllegalTransitionError(id, status, 'cancel', ['PENDING', 'RUNNING', 'WAITING']);
}

/** The runs a compensating cancel changed; throws PivotPassedError (nothing changed) when it was refused at a pivot. */
function refusedAtPivot(id: string, runs: CompensatingCancel[]): Array<{ id: string; outcome: 'cancelled' | 'cancelling' }> {
  const refused = runs.find((r) => r.outcome === 'refused');
  if (refused) throw new PivotPassedError(id, refused.id, refused.pivot?.step ?? '?', refused.pivot?.seq ?? -1);
  return runs.map((r) => ({ id: r.id, outcome: r.outcome === 'cancelling' ? 'cancelling' : 'cancelled' }));
}

/** Resumes a CANCELLED or FAILED run from its last checkpoint (a failed final step runs again). */
export async function resume(e: EngineContext, id: string, opts: ControlOptions = {}): Promise<void> {
  const resumed = await resumeRun(e.store, id, e.options.cancelChildren, actorOf('resume', opts)).catch((err: unknown) => {
    const conflict = keyConflictOf(err);
    throw conflict ? new KeyConflictError(id, conflict.index, conflict.detail) : err;
  });
  if (resumed) return;
  const status = await runStatus(e.store, id);
  if (!status) throw new RunNotFoundError(id);
  throw new IllegalTransitionError(id, status, 'resume', ['CANCELLED', 'FAILED']);
}

/**
 * A new run of the same workflow and input that reuses the source's checkpoints before
 * `fromStep` (0 = run everything again): every step from there on runs again. A step before
 * `fromStep` whose effect was undone by its compensation makes it an UndoneStepsError (nothing
 * is created; fork from the first undone step or earlier). With
 * `requireRegistered` false (the CLI, which has no workflows) the copy is made even though nothing
 * in this process could execute it: the app's instances will.
 */
export async function fork(
  e: EngineContext,
  id: string,
  fromStep: number,
  opts: ControlOptions = {},
  requireRegistered = true,
): Promise<ForkResult> {
  const actor = actorOf('fork', opts);
  const source = await forkSource(e.store, id);
  if (!source) throw new RunNotFoundError(id);
  if (!Number.isInteger(fromStep) || fromStep < 0 || fromStep > source.nextSeq) {
    throw new InvalidArgumentError(
      `Invalid parameter "fromStep": must be between 0 and ${source.nextSeq}: run "${id}" has ${source.nextSeq} recorded step(s)`,
      'fromStep',
    );
  }
  if (requireRegistered && !e.registry.has(source.workflowName)) {
    throw new UnknownWorkflowError(
      source.workflowName,
      e.registry.names(),
      `Cannot fork run "${id}": its workflow "${source.workflowName}" is not registered in this app instance, so nothing here could execute the copy. Fork it from an instance that has the workflow.`,
    );
  }
  await checkForkPoint(e, id, fromStep);
  const forked = await forkRun(e.store, id, idBeside(e.store, id), fromStep, e.options.appVersion, actor);
  if (!forked) {
    await checkForkPoint(e, id, fromStep); // a compensation recorded meanwhile
    throw new RunNotFoundError(id);
  }
  return { id: forked.id, forkedFrom: id, fromStep, copiedSteps: forked.copiedSteps, workflowName: source.workflowName };
}

const MAX_ACTOR = 200;

/** The checked `actor` option (null when not given). */
export function actorOf(action: string, opts: ControlOptions): string | null {
  if (!opts || typeof opts !== 'object') {
    throw new InvalidArgumentError(`${action}(): the options must be an object { actor?: string }.`, 'options');
  }
  const { actor } = opts;
  if (actor === undefined || actor === null) return null;
  if (typeof actor !== 'string' || !actor.trim() || actor.length > MAX_ACTOR) {
    throw new InvalidArgumentError(
      `${action}(): option "actor" must be a non-empty string of at most ${MAX_ACTOR} characters naming who asks (got ${JSON.stringify(actor)?.slice(0, 80)}).`,
      'actor',
    );
  }
  return actor;
}

/**
 * A cancel cascading over a tree of runs locks parents before children, a child finishing locks
 * itself then its parent: Postgres may abort one of the two as a deadlock (40P01). Try again.
 */
async function retryingDeadlocks<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if ((err as { code?: string }).code !== '40P01' || attempt >= 3) throw err;
    }
  }
}
