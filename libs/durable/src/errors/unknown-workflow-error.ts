import { DurableError } from './durable-error.js';

/** A workflow name (or `Class.method`) that no provider registered in this process. */
export class UnknownWorkflowError extends DurableError {
  constructor(
    readonly workflowName: string,
    readonly known: string[],
    message = `No workflow named "${workflowName}" is registered. Known workflows: ${
      known.length ? known.map((n) => `"${n}"`).join(', ') : '(none — mark a provider method with @Workflow())'
    }.`,
  ) {
    super('UNKNOWN_WORKFLOW', message);
  }
}
