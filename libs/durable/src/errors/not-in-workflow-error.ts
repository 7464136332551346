import { DurableError } from './durable-error.js';

/** A durable API (Durable.sleep, Durable.tx, …) was used outside a running workflow or step. */
export class NotInWorkflowError extends DurableError {
  constructor(api: string, where = 'a running workflow') {
    super('NOT_IN_WORKFLOW', `${api} can only be called inside ${where}.`);
  }
}
