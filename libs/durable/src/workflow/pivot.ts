import type { RunContext } from './run-context.js';

/**
 * The pivot of an execution's run (a step marked `pivot: true` that committed, or was replayed):
 * past it, a failure of the workflow no longer runs compensations (see compensation.ts).
 */
const passed = new WeakMap<RunContext, { seq: number; step: string }>();

export function pivotPassed(ctx: RunContext, seq: number, step: string): void {
  if (!passed.has(ctx)) passed.set(ctx, { seq, step });
}

/** The run's pivot, if this execution passed (or replayed) it. */
export function pivotOf(ctx: RunContext): { seq: number; step: string } | undefined {
  return passed.get(ctx);
}
