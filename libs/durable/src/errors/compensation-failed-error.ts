import { describeThrown, readSafely } from './describe-thrown.js';
import { DurableError } from './durable-error.js';

/**
 * A compensation (the undo of a completed step) failed after its retries. Compensation stops
 * there: the compensations of older steps have not run. The run ends FAILED with this error;
 * `resume(runId)` runs the failed compensation again and continues with the older ones.
 */
export class CompensationFailedError extends DurableError {
  constructor(
    readonly runId: string,
    /** The step whose effect could not be undone, and its seq. */
    readonly step: string,
    readonly seq: number,
    /** The compensation's error (as stored). */
    readonly causeError: unknown,
  ) {
    super(
      'COMPENSATION_FAILED',
      `Run ${runId}: the compensation of step "${step}" (#${seq}) failed: ${messageOf(causeError)}. Older steps were not ` +
        `compensated. Fix the cause, then resume("${runId}") to run that compensation again and finish compensating.`,
    );
  }
}

function messageOf(e: unknown): string {
  const m = readSafely(e, 'message');
  return typeof m === 'string' ? m : describeThrown(e);
}
