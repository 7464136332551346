import { DurableError } from './durable-error.js';

/** An operation is not allowed in the run's current status (e.g. resume a SUCCEEDED run). */
export class IllegalTransitionError extends DurableError {
  constructor(
    readonly runId: string,
    readonly status: string,
    action: string,
    allowed: string[],
  ) {
    super(
      'ILLEGAL_TRANSITION',
      `Cannot ${action} run "${runId}": it is ${status}; ${action} applies to runs that are ${allowed.join(' or ')}.`,
    );
  }
}
