import { DurableError } from './durable-error.js';

/** The run does not exist. */
export class RunNotFoundError extends DurableError {
  constructor(readonly runId: string) {
    super(
      'RUN_NOT_FOUND',
      `No run with id "${runId}" (never started, or deleted: by retention, or at its end if its workflow has deleteOnSuccess).`,
    );
  }
}
