import { DurableError } from './durable-error.js';

/** `start()` with an id that already belongs to a run of another workflow. */
export class IdempotencyConflictError extends DurableError {
  constructor(
    readonly runId: string,
    readonly existingWorkflow: string,
    readonly requestedWorkflow: string,
  ) {
    super(
      'IDEMPOTENCY_CONFLICT',
      `Run id "${runId}" already belongs to workflow "${existingWorkflow}", not "${requestedWorkflow}". ` +
        `Use a different id (ids are unique across all workflows).`,
    );
  }
}
