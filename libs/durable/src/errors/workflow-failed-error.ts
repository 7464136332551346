import { DurableError } from './durable-error.js';

/** `WorkflowHandle.result()` of a run that ended FAILED; `runError` holds the stored error. */
export class WorkflowFailedError extends DurableError {
  constructor(
    readonly runId: string,
    readonly runError: unknown,
  ) {
    const msg = (runError as { message?: string } | null)?.message ?? String(runError);
    super('WORKFLOW_FAILED', `Run ${runId} failed: ${msg}`);
  }
}
