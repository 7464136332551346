import { UndoneStepsError } from '../errors/index.js';
import { undoneSteps } from '../store/fork-plan.js';
import type { EngineContext } from './engine-context.js';

/**
 * A fork never reuses a checkpoint whose effect was undone: when a step before `fromStep` was
 * compensated (or is about to be, the run being cancelled with compensation), UndoneStepsError
 * names those steps and the highest fork point that works (the first undone step). Compensation
 * records come after the steps they undo, so a fork point at or before the first undone step never
 * copies them either.
 */
export async function checkForkPoint(e: EngineContext, id: string, fromStep: number): Promise<void> {
  const undone = await undoneSteps(e.store, id);
  const before = undone.filter((u) => u.seq < fromStep);
  if (before.length) throw new UndoneStepsError(id, fromStep, before, undone[0].seq);
}
