import { DurableError } from './durable-error.js';

/**
 * How the code departs from a run's recorded steps: `changed` (another step where the run recorded
 * one, and that step is not among the run's later checkpoints either: a step changed, or one was
 * added where the run has already been without Durable.patched()), or `reordered` (the code skipped
 * a recorded step, as if it were removed, then called it later).
 */
export type DeterminismKind = 'changed' | 'reordered';

/** The code of a workflow no longer matches the steps recorded for a run (non-deterministic replay). */
export class DeterminismError extends DurableError {
  constructor(
    readonly runId: string,
    /** The position (step seq) where the run recorded `recorded`. */
    readonly seq: number,
    /** The step the run recorded at `seq`. */
    readonly recorded: string,
    /** The step the new code calls at that position. */
    readonly actual: string,
    readonly kind: DeterminismKind = 'changed',
  ) {
    super('NON_DETERMINISTIC', determinismMessage(runId, seq, recorded, actual, kind));
  }
}

function determinismMessage(runId: string, seq: number, recorded: string, actual: string, kind: DeterminismKind): string {
  const fix =
    'Keep the old code path for in-flight runs behind Durable.patched(id) (or version the workflow name), ' +
    'check with `npx nestjs-durable verify`, then resume or fork the run.';
  if (kind === 'reordered') {
    return (
      `Run ${runId}: step #${seq} was recorded as "${recorded}" but the workflow code now calls "${actual}" at that ` +
      `position and "${recorded}" only after it: steps were reordered, which changes what each recorded result ` +
      `answers. ${fix}`
    );
  }
  return (
    `Run ${runId}: step #${seq} was recorded as "${recorded}" but the workflow code now calls "${actual}" at that ` +
    `position (and "${actual}" is not among the run's later steps). A step added where a run has already been must be ` +
    `behind Durable.patched(id); removing a step the run has passed is safe, changing or reordering steps is not. ${fix}`
  );
}
