import { DurableError } from './durable-error.js';

/**
 * cancel(id, { compensate: true }) was refused: the run (or one of its child runs) has passed its
 * pivot, the step marked `@Step({ pivot: true })` after which its work is no longer undone (an
 * order that has shipped is not refunded). Nothing was changed. To stop the run without undoing
 * anything, cancel it with `{ compensate: true, afterPivot: 'stop' }` (or without compensate).
 */
export class PivotPassedError extends DurableError {
  constructor(
    /** The run that was asked to cancel. */
    readonly runId: string,
    /** The run that passed its pivot: runId itself, or one of its child runs. */
    readonly pivotRunId: string,
    /** The pivot step's name and position. */
    readonly step: string,
    readonly seq: number,
  ) {
    super(
      'PIVOT_PASSED',
      `Cannot cancel run "${runId}" with compensation: ${pivotRunId === runId ? 'it' : `its child run "${pivotRunId}"`} has passed ` +
        `its pivot, step "${step}" (#${seq}), after which its work is not undone. Nothing was changed. To stop it without ` +
        `undoing anything, cancel with { compensate: true, afterPivot: 'stop' } (or without compensate).`,
    );
  }
}
