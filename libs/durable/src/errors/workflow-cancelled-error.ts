import { DurableError } from './durable-error.js';

/** `WorkflowHandle.result()` of a run that was cancelled. */
export class WorkflowCancelledError extends DurableError {
  constructor(readonly runId: string) {
    super('WORKFLOW_CANCELLED', `Run ${runId} was cancelled. Resume it with WorkflowClient.resume("${runId}").`);
  }
}
