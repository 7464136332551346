import { DurableError } from './durable-error.js';

/** The code of a workflow no longer matches the steps recorded for a run (non-deterministic replay). */
export class DeterminismError extends DurableError {
  constructor(
    readonly runId: string,
    readonly seq: number,
    readonly recorded: string,
    readonly actual: string,
  ) {
    super(
      'NON_DETERMINISTIC',
      `Run ${runId}: step #${seq} was recorded as "${recorded}" but the workflow code now calls "${actual}" at that ` +
        `position. Workflow code must call the same steps in the same order on every replay: keep the old code ` +
        `path for in-flight runs (or version the workflow name), then resume or fork the run.`,
    );
  }
}
