import { DurableError } from './durable-error.js';

/** Two workflows registered under one name. */
export class DuplicateWorkflowError extends DurableError {
  constructor(
    readonly workflowName: string,
    first: string,
    second: string,
  ) {
    super(
      'DUPLICATE_WORKFLOW',
      `Two workflows are named "${workflowName}": ${first} and ${second}. Give one of them a unique name with @Workflow({ name: '…' }).`,
    );
  }
}
