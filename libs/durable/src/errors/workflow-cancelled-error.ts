import { DurableError } from './durable-error.js';

/**
 * `WorkflowHandle.result()` of a run that was cancelled. Also thrown into the workflow code of a
 * run being cancelled with `{ compensate: true }`, by every durable operation it has not done yet:
 * the workflow unwinds, then its compensations run.
 */
export class WorkflowCancelledError extends DurableError {
  constructor(
    readonly runId: string,
    message = `Run ${runId} was cancelled. Resume it with WorkflowClient.resume("${runId}").`,
  ) {
    super('WORKFLOW_CANCELLED', message);
  }
}
