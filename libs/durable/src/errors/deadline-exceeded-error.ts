import { DurableError } from './durable-error.js';

/**
 * A run passed its deadline (the workflow's `timeoutMs` or the start option). A run with nothing to
 * undo ends FAILED with it at once. A run whose steps recorded compensations gets it thrown into
 * its workflow code by every durable operation not done yet: the workflow unwinds, the
 * compensations run (with no deadline: they must finish), then the run ends FAILED with it.
 */
export class DeadlineExceededError extends DurableError {
  constructor(
    readonly runId: string,
    message = `Run ${runId} exceeded its deadline; raise the workflow option timeoutMs or the start option timeoutMs.`,
  ) {
    super('DEADLINE_EXCEEDED', message);
  }
}
